//! A real container registry for tests: Debian's `docker-registry` (the CNCF distribution
//! registry), started on a free loopback port with its storage in a temporary directory, either
//! plain HTTP without authentication or TLS (a CA made for the test with the openssl CLI) with
//! htpasswd Basic authentication. Stopped when dropped.
//!
//! The rule it enforces: image tests talk to a registry that implements the distribution API, not
//! to a mock of our own reading of it.

use std::{
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use crate::LoggedChild;

/// The registry program, from the `docker-registry` Debian package.
pub const PROGRAM: &str = "docker-registry";

/// A running registry.
pub struct Registry {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its working directory (config, storage, certificates, log).
    pub dir: tempfile::TempDir,
    /// The CA certificate (PEM) its TLS certificate is signed by, when it speaks TLS.
    pub ca: Option<PathBuf>,
    /// The user and password it accepts, when it requires them.
    pub credentials: Option<(String, String)>,
    process: Option<LoggedChild>,
}

/// Whether the registry and the tools the TLS variant needs are installed (see
/// [`crate::tool_available`]: under `CI=true` a missing one fails the test).
pub fn available() -> bool {
    crate::tool_available(PROGRAM, "docker-registry")
        & crate::tool_answers("openssl", &["version"], "openssl")
        & crate::tool_answers("htpasswd", &["-nb", "u", "p"], "apache2-utils")
}

/// A temporary directory under `target/tmp/`: image storage and caches hold every pushed blob,
/// and `/tmp` may be small.
pub fn scratch() -> tempfile::TempDir {
    let dir = crate::cluster::repo_root().join("target").join("tmp");
    std::fs::create_dir_all(&dir).expect("target/tmp");
    tempfile::tempdir_in(dir).expect("tempdir")
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("starting {:?}: {e}", cmd.get_program()));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `openssl req` making a new unencrypted P-256 key.
fn new_key_request() -> Command {
    let mut cmd = Command::new("openssl");
    cmd.args([
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ]);
    cmd
}

/// Makes a CA and a server certificate for 127.0.0.1 / localhost signed by it; returns the CA's
/// certificate path.
fn make_certificates(dir: &Path) -> PathBuf {
    let ca_key = dir.join("ca.key");
    let ca = dir.join("ca.crt");
    run(new_key_request()
        .args(["-x509", "-days", "2", "-subj", "/CN=olm-rs test CA"])
        .args(["-addext", "basicConstraints=critical,CA:TRUE"])
        .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        .arg("-keyout")
        .arg(&ca_key)
        .arg("-out")
        .arg(&ca));
    let csr = dir.join("server.csr");
    run(new_key_request()
        .args(["-subj", "/CN=127.0.0.1"])
        .arg("-keyout")
        .arg(dir.join("server.key"))
        .arg("-out")
        .arg(&csr));
    let ext = dir.join("server.ext");
    std::fs::write(
        &ext,
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write server.ext");
    run(Command::new("openssl")
        .args(["x509", "-req", "-days", "2", "-CAcreateserial"])
        .arg("-in")
        .arg(&csr)
        .arg("-CA")
        .arg(&ca)
        .arg("-CAkey")
        .arg(&ca_key)
        .arg("-extfile")
        .arg(&ext)
        .arg("-out")
        .arg(dir.join("server.crt")));
    ca
}

impl Registry {
    /// A registry speaking plain HTTP, without authentication.
    pub fn plain() -> Self {
        Self::start(false)
    }

    /// A registry speaking TLS (certificate signed by [`Registry::ca`]) that requires Basic
    /// authentication as [`Registry::credentials`].
    pub fn tls_with_auth() -> Self {
        Self::start(true)
    }

    fn start(secure: bool) -> Self {
        let dir = scratch();
        let addr = format!("127.0.0.1:{}", free_port());
        let mut config = format!(
            "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {}\n  \
             delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            dir.path().join("storage").display()
        );
        let (mut ca, mut credentials) = (None, None);
        if secure {
            ca = Some(make_certificates(dir.path()));
            let (user, password) = ("olm".to_owned(), "s3cret-Pa55".to_owned());
            let htpasswd = dir.path().join("htpasswd");
            let out = Command::new("htpasswd")
                .args(["-Bbn", &user, &password])
                .output()
                .expect("htpasswd");
            assert!(out.status.success(), "htpasswd failed");
            std::fs::write(&htpasswd, out.stdout).expect("write htpasswd");
            config.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\nauth:\n  htpasswd:\n    realm: olm-rs-test\n    \
                 path: {}\n",
                dir.path().join("server.crt").display(),
                dir.path().join("server.key").display(),
                htpasswd.display()
            ));
            credentials = Some((user, password));
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).expect("write config.yml");
        let process = LoggedChild::spawn(
            Command::new(PROGRAM).arg("serve").arg(&config_path),
            dir.path().join("registry.log"),
        );
        let registry = Self {
            addr,
            dir,
            ca,
            credentials,
            process: Some(process),
        };
        registry.wait_ready();
        registry
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(&self.addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "{PROGRAM} did not listen on {} within 20s; log:\n{}",
                self.addr,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the registry logged so far.
    pub fn log(&self) -> String {
        self.process
            .as_ref()
            .map(LoggedChild::log_text)
            .unwrap_or_default()
    }

    /// `127.0.0.1:PORT/<path>`.
    pub fn image(&self, path: &str) -> String {
        format!("{}/{path}", self.addr)
    }

    /// Writes a docker config.json with `user` / `password` for this registry into `dir`.
    pub fn docker_config(&self, dir: &Path, user: &str, password: &str) -> PathBuf {
        let path = dir.join("config.json");
        let json = serde_json::json!({"auths": {&self.addr: {"username": user, "password": password}}});
        std::fs::write(&path, json.to_string()).expect("write config.json");
        path
    }

    /// Stops the registry (its storage stays until the value is dropped).
    pub fn stop(&mut self) {
        self.process = None;
    }
}
