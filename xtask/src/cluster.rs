//! cluster: the local control plane the benches run on (tests/cluster/up), its kubectl, a kube
//! client from its kubeconfig, and an `olm-controller run` process the bench starts and stops.
//! Every bench goes through here to reach the cluster or a process.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};

/// Where the cluster and its binaries are, as the cluster tests find them.
pub struct Cluster {
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Cluster {
    /// `$OLMRS_CLUSTER_DIR` (else target/cluster/run) and `$OLMRS_CLUSTER_BIN` (else
    /// target/cluster/bin); the kubeconfig is `$KUBECONFIG`'s first path, else the cluster's.
    pub fn find(repo: &Path) -> anyhow::Result<Self> {
        let dir = env_path("OLMRS_CLUSTER_DIR").unwrap_or_else(|| repo.join("target/cluster/run"));
        let bin = env_path("OLMRS_CLUSTER_BIN").unwrap_or_else(|| repo.join("target/cluster/bin"));
        let kubeconfig = std::env::var_os("KUBECONFIG")
            .and_then(|v| std::env::split_paths(&v).next())
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| dir.join("kubeconfig"));
        if !kubeconfig.is_file() {
            bail!(
                "no cluster: {} is missing; run tests/cluster/up first (OLMRS_CLUSTER_DIR/OLMRS_CLUSTER_BIN as there)",
                kubeconfig.display()
            );
        }
        Ok(Self { dir, bin, kubeconfig })
    }

    /// A kubectl command on this cluster.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(self.bin.join("kubectl"));
        cmd.arg("--kubeconfig").arg(&self.kubeconfig);
        cmd
    }

    /// Runs kubectl with `args`, failing with its stderr.
    pub fn kubectl_ok(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = self
            .kubectl()
            .args(args)
            .output()
            .with_context(|| format!("failed to run {}", self.bin.join("kubectl").display()))?;
        if !out.status.success() {
            bail!(
                "kubectl {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A kube client from the kubeconfig.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig)
            .with_context(|| format!("failed to read {}", self.kubeconfig.display()))?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await
                .context("failed to load the kubeconfig")?;
        kube::Client::try_from(config).context("failed to create the Kubernetes client")
    }

    /// Applies the OLM CRDs of manifests/crds and waits until the five the benches use are
    /// Established (polling: `kubectl wait` fails at once on a CRD without status).
    pub fn install_crds(&self, repo: &Path) -> anyhow::Result<()> {
        let crds = repo.join("manifests/crds");
        self.kubectl_ok(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            &crds.to_string_lossy(),
        ])?;
        for crd in [
            "subscriptions",
            "clusterserviceversions",
            "installplans",
            "operatorgroups",
            "catalogsources",
        ] {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let mut got = self.kubectl();
                got.args([
                    "get",
                    "crd",
                    &format!("{crd}.operators.coreos.com"),
                    "-o",
                    "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
                ]);
                let out = run_output(&mut got)?;
                if out.trim() == "True" {
                    break;
                }
                if Instant::now() > deadline {
                    bail!("CRD {crd}.operators.coreos.com is not Established after 60 s");
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        Ok(())
    }

    /// The cluster's processes by name, from its pids file.
    pub fn pids(&self) -> Vec<(String, u32)> {
        std::fs::read_to_string(self.dir.join("pids"))
            .map(|text| parse_pids(&text))
            .unwrap_or_default()
    }
}

fn run_output(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd.output().context("failed to run kubectl")?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `name pid` lines (others skipped: the file also holds comments).
pub fn parse_pids(text: &str) -> Vec<(String, u32)> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (name, pid) = (words.next()?, words.next()?);
            if words.next().is_some() {
                return None;
            }
            Some((name.to_owned(), pid.parse().ok()?))
        })
        .collect()
}

/// An `olm-controller run` the bench started (stopped when dropped).
pub struct Controller {
    child: Child,
    pub metrics: std::net::SocketAddr,
    pub log: PathBuf,
}

impl Controller {
    /// Starts `binary run --kubeconfig .. --metrics-bind <free port> extra..`, stdout and stderr
    /// appended to `log`, with `RUST_LOG=rust_log`.
    pub fn start(
        binary: &Path,
        cluster: &Cluster,
        extra: &[&str],
        log: &Path,
        rust_log: &str,
    ) -> anyhow::Result<Self> {
        if !is_executable(binary) {
            bail!(
                "no controller binary at {}: cargo build --bin olm-controller (or --release), or pass --controller",
                binary.display()
            );
        }
        let port = free_port()?;
        let metrics = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("failed to open {}", log.display()))?;
        let child = Command::new(binary)
            .arg("run")
            .arg("--kubeconfig")
            .arg(&cluster.kubeconfig)
            .arg("--metrics-bind")
            .arg(metrics.to_string())
            .args(extra)
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()
            .with_context(|| format!("failed to start {}", binary.display()))?;
        Ok(Self {
            child,
            metrics,
            log: log.to_owned(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True while the process runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The text of its `/metrics`.
    pub async fn metrics_text(&self) -> anyhow::Result<String> {
        http_get(self.metrics, "/metrics").await
    }

    /// Waits until `/readyz` answers 200 (the stores synced), up to `timeout`.
    pub async fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if http_status(self.metrics, "/readyz").await == Some(200) {
                return Ok(());
            }
            if !self.running() || Instant::now() > deadline {
                bail!("olm-controller never became ready; see {}", self.log.display());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Its peak RSS so far (VmHWM), in KiB.
    pub fn vm_hwm_kib(&self) -> u64 {
        vm_hwm_kib(self.pid())
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if !self.running() {
            return;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if !self.running() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(10));
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A free loopback port.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("failed to find a free port")?;
    Ok(listener.local_addr()?.port())
}

async fn http_raw(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<String> {
    http_raw_within(addr, path, Duration::from_secs(10)).await
}

async fn http_raw_within(addr: std::net::SocketAddr, path: &str, limit: Duration) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    let mut body = Vec::new();
    tokio::time::timeout(limit, stream.read_to_end(&mut body))
        .await
        .context("timed out")??;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

async fn http_status(addr: std::net::SocketAddr, path: &str) -> Option<u16> {
    let text = http_raw(addr, path).await.ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// GET `path` on `addr` (HTTP/1.0, no TLS): the body of a 200 answer.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<String> {
    http_get_within(addr, path, Duration::from_secs(10)).await
}

/// [`http_get`], answered within `limit`.
pub async fn http_get_within(
    addr: std::net::SocketAddr,
    path: &str,
    limit: Duration,
) -> anyhow::Result<String> {
    let text = http_raw_within(addr, path, limit)
        .await
        .with_context(|| format!("GET http://{addr}{path}"))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    if head.split_whitespace().nth(1) != Some("200") {
        bail!(
            "GET http://{addr}{path}: {}",
            head.lines().next().unwrap_or_default()
        );
    }
    Ok(body.to_owned())
}

/// VmHWM of `pid` in KiB (0 when it cannot be read).
pub fn vm_hwm_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU seconds of `pid` so far (`None` when it is gone).
pub fn cpu_seconds(pid: u32, ticks_per_second: f64) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&text).map(|t| t / ticks_per_second)
}

/// utime + stime of a /proc/<pid>/stat line, in clock ticks.
pub fn parse_cpu_ticks(stat: &str) -> Option<f64> {
    let (_, after) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Clock ticks per second (`getconf CLK_TCK`, else 100).
pub fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// CPUs and load average, as the benches print them.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    format!("{cpus} CPUs, load average {load}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pids_file_is_read_by_name() {
        assert_eq!(
            parse_pids("# comment line here\netcd 12\nkube-apiserver 34\nbad x\n"),
            vec![("etcd".to_owned(), 12), ("kube-apiserver".to_owned(), 34)]
        );
    }

    #[test]
    fn cpu_ticks_are_utime_plus_stime() {
        let stat = "42 (olm (ctl)) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1 2 3";
        assert_eq!(parse_cpu_ticks(stat), Some(300.0));
        assert_eq!(parse_cpu_ticks("garbage"), None);
    }
}
