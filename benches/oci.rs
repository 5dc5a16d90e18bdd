//! Catalog images (issue 11 item 7): the largest public catalog (`large-fbc`, 782 packages) pushed
//! as a catalog image to a real registry (Debian's `docker-registry` on loopback), then browsed
//! with `kubectl-olm catalog packages --catalog IMAGE`: cold (empty cache: resolve, pull, verify,
//! unpack, load) and warm (a new process, the digest checked and the unpacked catalog reused),
//! each with the process's wall time and peak RSS (`/usr/bin/time`). `opm render IMAGE` on the
//! same image is measured beside it when opm is built (`tests/peers/opm/build`).
//! Targets: cold under 3 s, warm under 1 s (the controller's figure of the same path; its RSS
//! while serving needs the cluster and is measured by `cargo xtask bench-image`).
//!
//! Run: `cargo bench --bench oci`.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::Instant,
};

use olm_test_support::registry::{self, Registry};

#[path = "support.rs"]
mod support;

/// Runs `command` under `/usr/bin/time -f %M`: (seconds, peak RSS MiB, success).
fn timed(program: &Path, args: &[&str]) -> (f64, f64, bool) {
    let start = Instant::now();
    let output = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(program)
        .args(args)
        .stdout(Stdio::null())
        .output();
    let seconds = start.elapsed().as_secs_f64();
    let Ok(output) = output else {
        return (seconds, 0.0, false);
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    let kib = stderr
        .lines()
        .rev()
        .find_map(|l| l.trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    if !output.status.success() {
        eprintln!("{stderr}");
    }
    (seconds, kib / 1024.0, output.status.success())
}

fn main() {
    let Some(dir) = support::corpus_dir("large-fbc") else {
        println!("skipping: corpus catalog large-fbc not present");
        return;
    };
    if !registry::available() {
        println!("skipping: docker-registry not installed");
        return;
    }
    let registry = Registry::plain();
    let image = registry.image("bench/large-fbc:v1");
    let ours = Path::new(env!("CARGO_BIN_EXE_kubectl-olm"));
    let insecure = ["--insecure-registry", registry.addr.as_str()];

    let t = Instant::now();
    let pushed = Command::new(ours)
        .args(["catalog", "push"])
        .arg(&dir)
        .arg(&image)
        .args(insecure)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !pushed {
        println!("kubectl-olm catalog push {image} failed");
        return;
    }
    println!("push large-fbc as {image}: {:.2} s", t.elapsed().as_secs_f64());

    let scratch = registry.dir.path().join("bench-cache");
    let cache = scratch.to_string_lossy().into_owned();
    let browse = [
        "catalog",
        "packages",
        "--catalog",
        image.as_str(),
        "--cache-dir",
        cache.as_str(),
        insecure[0],
        insecure[1],
    ];
    let (cold, cold_rss, ok) = timed(ours, &browse);
    println!(
        "kubectl-olm browse, cold (pull + verify + unpack + load): {cold:.2} s, peak RSS {cold_rss:.0} MiB   [target < 3 s]{}",
        if ok { "" } else { "  FAILED" }
    );
    let (warm, warm_rss, ok) = timed(ours, &browse);
    println!(
        "kubectl-olm browse, warm (digest checked, cache reused):   {warm:.2} s, peak RSS {warm_rss:.0} MiB   [target < 1 s]{}",
        if ok { "" } else { "  FAILED" }
    );

    let opm = support::repo_root().join("target/peers/bin/opm");
    if !opm.is_file() {
        println!("opm not built (tests/peers/opm/build): no comparison");
        return;
    }
    let (secs, rss, ok) = timed(&opm, &["render", image.as_str(), "--use-http", "-o", "json"]);
    if ok {
        println!(
            "opm render (pull + unpack + render, no cache):            {secs:.2} s, peak RSS {rss:.0} MiB   (ours cold {:.1}x faster, {:.2} of its RSS)",
            secs / cold,
            cold_rss / rss
        );
    } else {
        println!("opm render {image} --use-http failed (see above)");
    }
}
