//! `kubectl-olm catalog serve` against `opm serve` on the same catalog directory, in one run
//! (issue 13 item 7): the time from process start until `ListPackages` answers, the server's peak
//! RSS (`VmHWM` of its process) after every bundle was listed, and `ListBundles` throughput (best
//! of three full streams). opm is measured twice: starting from the bare directory (it builds its
//! cache first, as `opm serve DIR` does) and from a cache built beforehand (`--cache-only`, what a
//! catalog image ships). Targets: ready at least 5x sooner than opm, at most 1/4 of its RSS.
//!
//! Run: `cargo bench --bench serve [CATALOG]` (default `large-fbc` from the shared corpus; `opm`
//! from `tests/peers/opm/build`, skipped with a note when it is not built).

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use olm_rs::grpc::client::{ClientOptions, Connection};

#[path = "support.rs"]
mod support;

struct Server {
    child: Child,
    address: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Figures {
    ready: Duration,
    rss_mib: f64,
    bundles: usize,
    per_second: f64,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(50_051)
}

fn vm_hwm_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn options() -> ClientOptions {
    ClientOptions {
        timeout: Duration::from_secs(120),
        ..ClientOptions::default()
    }
}

/// Polls `ListPackages` until it answers; the time since `started`.
async fn until_ready(address: &str, started: Instant) -> Option<Duration> {
    let quick = ClientOptions {
        timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    };
    while started.elapsed() < Duration::from_secs(600) {
        if let Ok(conn) = Connection::connect(address, &quick).await
            && conn.list_packages().await.is_ok()
        {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

async fn measure(server: &Server, started: Instant) -> Option<Figures> {
    let ready = until_ready(&server.address, started).await?;
    let conn = Connection::connect(&server.address, &options()).await.ok()?;
    let mut best = f64::MAX;
    let mut bundles = 0;
    for _ in 0..3 {
        let t = Instant::now();
        bundles = conn.list_bundles().await.ok()?.len();
        best = best.min(t.elapsed().as_secs_f64());
    }
    Some(Figures {
        ready,
        rss_mib: vm_hwm_mib(server.child.id()),
        bundles,
        per_second: bundles as f64 / best,
    })
}

fn start_ours(dir: &Path) -> Option<(Server, Instant)> {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["catalog", "serve"])
        .arg(dir)
        .args(["--grpc", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let stdout = child.stdout.take()?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).ok()?;
    let address = line
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())?
        .to_owned();
    Some((Server { child, address }, started))
}

fn start_opm(opm: &Path, dir: &Path, cache: Option<&Path>, scratch: &Path) -> Option<(Server, Instant)> {
    let port = free_port();
    let mut command = Command::new(opm);
    command
        .arg("serve")
        .arg(dir)
        .args(["-p", &port.to_string(), "--pprof-addr", ""])
        .arg("-t")
        .arg(scratch.join("termination-log"))
        // With no --cache-dir opm builds its cache under $TMPDIR and leaves it there when killed.
        .env("TMPDIR", scratch);
    if let Some(cache) = cache {
        command.arg("--cache-dir").arg(cache);
    }
    let started = Instant::now();
    let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().ok()?;
    Some((
        Server {
            child,
            address: format!("127.0.0.1:{port}"),
        },
        started,
    ))
}

fn print(name: &str, f: &Figures) {
    println!(
        "{name:<28} ready {:>7.3} s   peak RSS {:>7.1} MiB   ListBundles {:>6} bundles, {:>8.0} bundles/s",
        f.ready.as_secs_f64(),
        f.rss_mib,
        f.bundles,
        f.per_second
    );
}

fn main() {
    let catalog = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| "large-fbc".into());
    let Some(dir) = support::corpus_dir(&catalog) else {
        println!("skipping: corpus catalog {catalog} not present");
        return;
    };
    let Ok(runtime) = tokio::runtime::Runtime::new() else {
        println!("cannot start a runtime; skipping");
        return;
    };
    let scratch = std::env::temp_dir().join(format!("olm-rs-bench-serve-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&scratch);

    println!("catalog {catalog} ({})", dir.display());
    let ours = start_ours(&dir).and_then(|(s, t)| runtime.block_on(measure(&s, t)));
    let Some(ours) = ours else {
        println!("kubectl-olm catalog serve did not answer");
        return;
    };
    print("kubectl-olm catalog serve", &ours);

    let opm = support::repo_root().join("target/peers/bin/opm");
    if !opm.is_file() {
        println!("opm not built (tests/peers/opm/build): no comparison");
        return;
    }
    let cold = start_opm(&opm, &dir, None, &scratch).and_then(|(s, t)| runtime.block_on(measure(&s, t)));
    let cache: PathBuf = scratch.join("opm-cache");
    let built = Command::new(&opm)
        .arg("serve")
        .arg(&dir)
        .arg("--cache-dir")
        .arg(&cache)
        .arg("--cache-only")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let warm = built
        .then(|| start_opm(&opm, &dir, Some(&cache), &scratch))
        .flatten()
        .and_then(|(s, t)| runtime.block_on(measure(&s, t)));
    for (name, figures) in [
        ("opm serve (no cache)", &cold),
        ("opm serve (pre-built cache)", &warm),
    ] {
        match figures {
            Some(f) => {
                print(name, f);
                println!(
                    "  vs ours: ready {:.1}x sooner (target >= 5x), RSS {:.2} of opm's (target <= 0.25), ListBundles {:.1}x",
                    f.ready.as_secs_f64() / ours.ready.as_secs_f64(),
                    ours.rss_mib / f.rss_mib,
                    ours.per_second / f.per_second
                );
            }
            None => println!("{name}: did not answer"),
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
