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

/// A child process whose stdout and stderr go to a log file: killed when dropped, and the last
/// lines of its log printed when the test is failing, so a failure shows what the process did.
pub struct LoggedChild {
    /// The process.
    pub child: std::process::Child,
    /// Its log file.
    pub log: std::path::PathBuf,
}

impl LoggedChild {
    /// Spawns `cmd` with stdin closed and both output streams appended to a fresh `log`.
    pub fn spawn(cmd: &mut std::process::Command, log: std::path::PathBuf) -> Self {
        let file = std::fs::File::create(&log).expect("creating the process log");
        let child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(file.try_clone().expect("log handle"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {:?}: {e}", cmd.get_program()));
        Self { child, log }
    }

    /// What the process has logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LoggedChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = self.log_text();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            eprintln!(
                "--- last lines of {} ---\n{}",
                self.log.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }
}
