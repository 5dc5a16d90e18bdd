//! Shared helpers for the integration test suites of every package in the workspace (the root's
//! `tests/it/` reaches it as `crate::support`, the Redis operator's `redis-operator/tests/it/` as
//! `olm_test_support`).
//!
//! The rule it enforces: a test that needs something outside the process (a tool, the local
//! cluster, another package's binary) finds it or says exactly what is missing; under `CI=true` a
//! missing piece fails the test instead of skipping it.

pub mod browser;
pub mod cluster;
pub mod https;
pub mod image;
pub mod pod_net;
pub mod registry;
pub mod suite_gate;

/// Whether `program` (a Debian package's command, installed by `.ci/run`) answers `--version`.
/// Without it a test skips with a message naming the package to install, except under `CI=true`,
/// where a missing tool fails the test instead of passing it silently.
pub fn tool_available(program: &str, package: &str) -> bool {
    tool_answers(program, &["--version"], package)
}

/// [`tool_available`] for a program that answers other arguments than `--version` with success
/// (`openssl version`, `htpasswd -nb u p`).
pub fn tool_answers(program: &str, args: &[&str], package: &str) -> bool {
    let found = std::process::Command::new(program)
        .args(args)
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

/// A peer binary built by `tests/peers/opm/build` (`opm`, `registry-client`), in
/// `$OLMRS_PEERS_BIN` or `<repo>/target/peers/bin`; `None` (skip, with a message) when it is
/// missing, a failure under `CI=true`.
pub fn peer_bin(name: &str) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("OLMRS_PEERS_BIN").map_or_else(
        || cluster::repo_root().join("target/peers/bin"),
        std::path::PathBuf::from,
    );
    let path = dir.join(name);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is required under CI=true: run tests/peers/opm/build",
        path.display()
    );
    eprintln!(
        "skipping: {} not built (run tests/peers/opm/build)",
        path.display()
    );
    None
}

/// A binary of another package of the workspace (`olm-controller` for the Redis operator's
/// end-to-end suite), from the target directory this test was built in. `cargo test --workspace`
/// (what `make test` runs) builds every package's binaries before any test runs; cargo exposes
/// `CARGO_BIN_EXE_*` only for the test's own package, hence this look-up.
///
/// # Panics
/// When the binary is missing, with the command that builds it.
pub fn workspace_bin(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    // target/<profile>/deps/<test>-<hash>  ->  target/<profile>/<name>
    let dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("the test runs from target/<profile>/deps");
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: build it with `cargo build --bin {name}` (or run `cargo test --workspace`)",
        bin.display()
    );
    bin
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
