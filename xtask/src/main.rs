//! xtask: the benches of olm-rs, run as `cargo xtask <command>` on the local cluster
//! (tests/cluster/up) against the real `olm-controller` binary. Each prints its figures beside
//! their targets and writes them as TSV and JSON under target/<command>/; `--expect FILE`
//! replaces the built-in targets (see [`summary`]).
//!
//! The pure parts (argument parsing, metrics text, tallies, targets, tables) are modules with
//! unit tests; the cluster-driving parts live in one module per command.

mod accept;
mod args;
mod bench_controller;
mod catalog;
mod cluster;
mod copies;
mod faults;
mod image;
mod metrics_text;
mod stats;
mod summary;

use std::{path::PathBuf, process::ExitCode};

use clap::Parser as _;

use args::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("caused by: {cause}");
            }
            ExitCode::from(2)
        }
    }
}

/// The repository root (xtask's parent directory).
fn repo() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map_or(manifest.clone(), std::path::Path::to_path_buf)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Ok(true): every figure met its target; Ok(false): some missed; Err: the bench could not run.
fn run(cli: Cli) -> anyhow::Result<bool> {
    let repo = repo();
    match cli.command {
        Command::BenchFaults(a) => faults::run(&repo, usize::from(a.runs), a.expect.as_deref()),
        Command::BenchController(a) => runtime()?.block_on(bench_controller::run(&repo, a)),
        Command::BenchCopies(a) => runtime()?.block_on(copies::run(&repo, a)),
        Command::BenchImage(a) => runtime()?.block_on(image::run(&repo, a)),
        Command::Accept(a) => runtime()?.block_on(accept::run(&repo, a)),
        Command::AcceptUpstream(a) => runtime()?.block_on(accept::upstream::run(&repo, a)),
    }
}
