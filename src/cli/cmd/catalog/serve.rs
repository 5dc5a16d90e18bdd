//! `kubectl-olm catalog serve [DIR] [--grpc ADDR] [--http ADDR]`: serves one catalog on the
//! registry gRPC API (`api.Registry`, what `opm serve` offers and OLM's catalog-operator reads,
//! with the standard gRPC health service) and/or on OLM v1's catalogd HTTP API (`/api/v1/all`,
//! `/api/v1/metas`), both at once when both are asked for, until SIGINT or SIGTERM. Without
//! `--http`, gRPC listens on `0.0.0.0:50051` unless `--grpc` says otherwise; with only `--http`,
//! only HTTP is served.
//!
//! The catalog is validated first. By default a catalog with problems is served the way
//! `olm-controller` serves it: the report goes to stderr as a warning, the parts the registry
//! cannot index (a channel without a single head, a package left without its default channel)
//! are left out of the gRPC API with a warning naming each, and the rest is served (the HTTP API
//! serves the blobs as read, as catalogd does). Only what refuses a catalog in the controller
//! (a file that does not decode, no package at all) refuses it here. With `--strict`, as
//! `opm serve` does, any problem prints the report on stderr and exits 1 without listening. Once listening, one line per API on stdout gives the
//! address (with the port picked when `:0` was asked) and what is served; requests are logged at
//! debug level (`-vv`). A signal stops accepting connections, lets requests in flight finish, and
//! exits 0.

use std::{net::SocketAddr, path::Path, sync::Arc, time::SystemTime};

use clap::Args;
use tokio::sync::watch;

use crate::{
    catalog::validate,
    catalogd::{self, Content},
    cli::{CliError, output::Streams},
    grpc::{self, Registry, ServeOptions},
};

/// The gRPC address when neither `--grpc` nor `--http` is given.
pub const DEFAULT_GRPC: &str = "0.0.0.0:50051";

/// Arguments of `catalog serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Catalog directory; overrides --catalog.
    pub dir: Option<std::path::PathBuf>,
    /// Address of the registry gRPC API (port 0 picks a free port) [default: 0.0.0.0:50051 unless
    /// only --http is given].
    #[arg(long, value_name = "ADDR")]
    pub grpc: Option<SocketAddr>,
    /// Address of the catalogd HTTP API, /api/v1/all and /api/v1/metas (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Refuse a catalog with any validation problem (as opm serve does) instead of serving it
    /// without its broken parts.
    #[arg(long)]
    pub strict: bool,
}

impl ServeArgs {
    /// The gRPC address to serve on, if any.
    #[must_use]
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        match (self.grpc, self.http) {
            (Some(addr), _) => Some(addr),
            (None, Some(_)) => None,
            (None, None) => DEFAULT_GRPC.parse().ok(),
        }
    }
}

/// Loads, validates and serves the catalog at `dir` until a signal.
///
/// # Errors
/// [`CliError::InvalidCatalog`] (after the report) for an invalid catalog, load errors, and
/// [`CliError::Refused`] when an address cannot be bound or the server fails.
pub fn run(
    dir: &Path,
    args: &ServeArgs,
    registry: &crate::cli::registry::RegistryArgs,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let refused = |e: &(dyn std::error::Error + 'static)| CliError::Refused(operator_runtime::error_chain(e));
    // A directory, a catalog image (pulled first) or another registry.
    let (cfg, decode_problems, _) = super::shared::read(dir, registry, streams.err)?;
    // The HTTP API serves the blobs as read, so they are rendered before validation consumes them.
    let content = match args.http {
        Some(_) => Some(Arc::new(
            Content::from_config(&cfg, SystemTime::now()).map_err(|e| refused(&e))?,
        )),
        None => None,
    };
    // What refuses a catalog in the controller refuses it here too.
    let refuses = !decode_problems.is_empty() || cfg.packages.is_empty();
    let (model, report) = validate::validate_with(cfg, decode_problems);
    if !report.passed() {
        write!(streams.err, "{report}")?;
        if args.strict || refuses {
            return Err(CliError::InvalidCatalog {
                dir: dir.display().to_string(),
                count: report.len(),
            });
        }
        writeln!(
            streams.err,
            "warning: serving catalog {} despite its {} problem(s) above (--strict refuses it)",
            dir.display(),
            report.len()
        )?;
    }
    let grpc_addr = args.grpc_addr();
    let registry = match grpc_addr {
        Some(_) if args.strict => Some(Arc::new(Registry::new(model).map_err(|errors| {
            CliError::Refused(format!(
                "catalog {} cannot be served: {}",
                dir.display(),
                crate::catalog::load::summarise(&errors)
            ))
        })?)),
        Some(_) => {
            let (registry, skipped) = Registry::lenient(model);
            for part in &skipped {
                writeln!(streams.err, "warning: not served over gRPC: {part}")?;
            }
            Some(Arc::new(registry))
        }
        None => None,
    };
    // One thread: `kubectl-olm` holds the stderr lock on the main thread for the whole run, so
    // logging from another thread would wait on it forever.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Refused(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let grpc_listener = match (grpc_addr, &registry) {
            (Some(addr), Some(registry)) => {
                let listener = grpc::server::bind(addr).await.map_err(|e| refused(&e))?;
                let local = listener.local_addr().unwrap_or(addr);
                writeln!(
                    streams.out,
                    "serving catalog {} ({} package(s), {} channel entries) on {local} \
                     (gRPC api.Registry, grpc.health.v1.Health)",
                    dir.display(),
                    registry.model().len(),
                    registry.listed_len(),
                )?;
                Some((listener, Arc::clone(registry)))
            }
            _ => None,
        };
        let http_listener = match (args.http, &content) {
            (Some(addr), Some(content)) => {
                let listener = catalogd::server::bind(addr).await.map_err(|e| refused(&e))?;
                let local = listener.local_addr().unwrap_or(addr);
                writeln!(
                    streams.out,
                    "serving catalog {} ({} blobs) on http://{local} (catalogd HTTP API: /api/v1/all, \
                     /api/v1/metas)",
                    dir.display(),
                    content.len(),
                )?;
                Some((listener, Arc::clone(content)))
            }
            _ => None,
        };
        streams.out.flush()?;
        let (stop, stopping) = watch::channel(false);
        let stopped = |mut rx: watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        let grpc_task = async {
            let Some((listener, registry)) = grpc_listener else {
                return Ok(());
            };
            let result = grpc::serve(
                registry,
                listener,
                ServeOptions::default(),
                stopped(stopping.clone()),
            )
            .await;
            // A failed gRPC server stops the HTTP one too.
            let _ = stop.send(true);
            result
        };
        let http_task = async {
            if let Some((listener, content)) = http_listener {
                catalogd::serve(content, listener, stopped(stopping.clone())).await;
            }
        };
        let signal_task = async {
            tokio::select! {
                () = operator_runtime::shutdown::signal() => {},
                () = stopped(stopping.clone()) => {},
            }
            let _ = stop.send(true);
        };
        let (served, (), ()) = tokio::join!(grpc_task, http_task, signal_task);
        served.map_err(|e| refused(&e))?;
        writeln!(streams.err, "stopped serving catalog {}", dir.display())?;
        Ok(())
    })
}
