//! The web console's first page with a big catalog (issue 26: "the first page with large-fbc
//! loaded in under 200 ms"): the catalog is read once as `kubectl olm console --catalog DIR`
//! reads it, then `GET /` is timed over real HTTP on loopback, from the request until the last
//! byte of the page (first request, then the best of 10), with a package page of the largest
//! package after it. Printed next to the target, never asserted.
//!
//! Run: `cargo bench --bench console [CATALOG]` (default `large-fbc` from the shared corpus).

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::PathBuf,
    time::{Duration, Instant},
};

use olm_rs::cli::cmd::console::source::{ClusterSource, read_catalog};

#[path = "support.rs"]
mod support;

/// `GET path` on `addr`: the time until the last byte, and the body's length.
fn get(addr: SocketAddr, path: &str) -> (Duration, usize) {
    let start = Instant::now();
    let mut stream = TcpStream::connect(addr).expect("connecting to the console");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("sending the request");
    let mut body = Vec::new();
    stream.read_to_end(&mut body).expect("reading the page");
    let took = start.elapsed();
    assert!(
        body.starts_with(b"HTTP/1.1 200"),
        "{path}: {}",
        String::from_utf8_lossy(&body[..body.len().min(200)])
    );
    (took, body.len())
}

fn main() {
    let arg = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let dir = match arg {
        Some(path) => PathBuf::from(path),
        None => match support::corpus_dir("large-fbc") {
            Some(dir) => dir,
            None => {
                println!("console: skipped, the large-fbc corpus catalog is not available");
                return;
            }
        },
    };
    // The registry flags' defaults, as `kubectl olm console` parses them.
    let registry = match clap::Parser::try_parse_from(["kubectl-olm", "console"]) {
        Ok(olm_rs::cli::Cli {
            command: olm_rs::cli::Command::Console(args),
            ..
        }) => args.registry,
        _ => panic!("`kubectl-olm console` parses"),
    };
    let start = Instant::now();
    let loaded = read_catalog(&dir, &registry).expect("reading the catalog");
    let read = start.elapsed();
    let packages = loaded.packages.len();
    let largest = loaded
        .model
        .as_ref()
        .and_then(|m| m.packages().max_by_key(|p| p.bundles().len()))
        .map(|p| (p.name.clone(), p.bundles().len()))
        .unwrap_or_default();
    let key = loaded.summary.key.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let addr = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding a port");
        let addr = listener.local_addr().expect("the bound address");
        let source = ClusterSource::new(None, vec![loaded], registry);
        let app = olm_console::router(source, olm_console::Options::for_address(addr, "bench".into()));
        tokio::spawn(olm_console::serve(listener, app, std::future::pending()));
        addr
    });
    let (first, bytes) = get(addr, "/");
    let best = (0..10).map(|_| get(addr, "/").0).min().unwrap_or(first);
    let package_path = format!(
        "/package?catalog={}&name={}",
        olm_console::html::query_value(&key),
        olm_console::html::query_value(&largest.0)
    );
    let (package_first, package_bytes) = get(addr, &package_path);
    let package_best = (0..5)
        .map(|_| get(addr, &package_path).0)
        .min()
        .unwrap_or(package_first);
    println!(
        "console on {} ({packages} packages, read in {:.2} s):",
        dir.display(),
        read.as_secs_f64()
    );
    println!(
        "  first page GET /: first {:.1} ms, best of 10 {:.1} ms ({} KiB)   target < 200 ms",
        first.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e3,
        bytes / 1024
    );
    println!(
        "  package page of {} ({} bundles): first {:.1} ms, best of 5 {:.1} ms ({} KiB)",
        largest.0,
        largest.1,
        package_first.as_secs_f64() * 1e3,
        package_best.as_secs_f64() * 1e3,
        package_bytes / 1024
    );
    drop(runtime);
}
