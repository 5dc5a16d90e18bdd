//! `kubectl-olm`: browse, validate and render OLM catalogs; drive installs on a cluster.
//!
//! Parses the command line, runs it, prints failures as `error: ...` on stderr and maps them to the
//! exit code (1 failed check or lookup, 2 bad usage). A closed stdout (`kubectl-olm ... | head`)
//! ends the process quietly with success.

use std::{
    io::{self, Write},
    process::ExitCode,
};

use clap::Parser;
use olm_rs::cli::{self, Cli, output::Streams};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            // --help and --version land here too, with exit code 0 and output for stdout.
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
        }
    };
    init_logging(cli.verbose);

    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut err = io::stderr().lock();
    let result = {
        let mut streams = Streams {
            out: &mut out,
            err: &mut err,
        };
        cli::run(&cli, &mut streams)
    };
    let result = result.and_then(|()| out.flush().map_err(cli::CliError::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            // The buffered results printed before the failure still go out, then the error.
            let _ = out.flush();
            let _ = writeln!(err, "error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn init_logging(verbose: u8) {
    let level = match verbose {
        // kube's client logs every failed request at ERROR, the TLS verifier every untrusted
        // certificate; the verbs report both as `error: ...`.
        0 => "warn,kube_client=off,rustls_platform_verifier=off",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .without_time()
        .try_init();
}
