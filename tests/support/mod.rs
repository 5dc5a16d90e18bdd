//! Shared helpers for the integration test suites (`mod support;` in each `tests/*.rs`).
//!
//! Each test binary compiles this module on its own and uses only part of it.
#![allow(dead_code)]

pub mod cluster;

/// Whether `program` (a Debian package's command, installed by `.ci/run`) answers `--version`.
/// Without it a test skips with a message naming the package to install, except under `CI=true`,
/// where a missing tool fails the test instead of passing it silently.
pub fn tool_available(program: &str, package: &str) -> bool {
    let found = std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{program} is required under CI=true: apt-get install -y {package}"
        );
        eprintln!("skipping: {program} not installed (apt-get install -y {package})");
    }
    found
}
