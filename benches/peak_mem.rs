//! Peak memory of loading and validating each real corpus catalog, each in a fresh process (this
//! bench re-runs itself with `--child NAME` so that the kernel's high-water mark, `VmHWM` in
//! `/proc/self/status`, belongs to that one catalog). Target of issue 2: the largest real catalog
//! loads and validates with under 300 MiB peak memory.
//!
//! Run: `cargo bench --bench peak_mem`.

use std::{process::Command, time::Instant};

#[path = "support.rs"]
mod support;

const TARGET_MIB: f64 = 300.0;

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn child(name: &str) {
    let Some(dir) = support::corpus_dir(name) else {
        println!("skipping {name}: corpus not present");
        return;
    };
    let before = vm_hwm_kib().unwrap_or(0);
    let start = Instant::now();
    let loaded = match olm_rs::source::load_path(&dir) {
        Ok(loaded) => loaded,
        Err(e) => {
            println!("{name}: failed to load: {e}");
            return;
        }
    };
    let (model, report) = loaded.validate();
    let elapsed = start.elapsed();
    let peak = vm_hwm_kib().unwrap_or(0);
    println!(
        "peak memory {name}: {:.1} MiB after load+validate ({} packages, {} problems) in {:.3} s; \
         process baseline {:.1} MiB (target for the largest real catalog: < {TARGET_MIB} MiB)",
        peak as f64 / 1024.0,
        model.len(),
        report.len(),
        elapsed.as_secs_f64(),
        before as f64 / 1024.0,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        if let Some(name) = args.get(i + 1) {
            child(name);
        }
        return;
    }
    // `cargo bench` passes `--bench`; anything else (a filter) is ignored.
    let Ok(me) = std::env::current_exe() else {
        println!("cannot find the bench executable; skipping");
        return;
    };
    for name in ["v4.20", "v4.16", "large-fbc"] {
        match Command::new(&me).args(["--child", name]).output() {
            Ok(out) => print!("{}", String::from_utf8_lossy(&out.stdout)),
            Err(e) => println!("{name}: failed to run the measurement: {e}"),
        }
    }
}
