//! `kubectl-olm catalog serve [DIR] --grpc ADDR`: serves one catalog on the registry gRPC API
//! (`api.Registry`, what `opm serve` offers and OLM's catalog-operator reads) with the standard
//! gRPC health service, until SIGINT or SIGTERM.
//!
//! The catalog is validated first, as `opm serve` does: an invalid catalog prints the report on
//! stderr and exits 1 without listening. Once listening, one line on stdout gives the address
//! (with the port picked when `:0` was asked) and what is served; requests are logged at debug
//! level (`-vv`). A signal stops accepting connections, lets requests in flight finish, and exits 0.

use std::{net::SocketAddr, path::Path, sync::Arc};

use clap::Args;

use crate::{
    catalog::validate,
    cli::{CliError, output::Streams},
    grpc::{self, Registry, ServeOptions},
};

/// Arguments of `catalog serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Catalog directory; overrides --catalog.
    pub dir: Option<std::path::PathBuf>,
    /// Address of the registry gRPC API (port 0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:50051")]
    pub grpc: SocketAddr,
}

/// Loads, validates and serves the catalog at `dir` until a signal.
///
/// # Errors
/// [`CliError::InvalidCatalog`] (after the report) for an invalid catalog, load errors, and
/// [`CliError::Refused`] when the address cannot be bound or the server fails.
pub fn run(
    dir: &Path,
    args: &ServeArgs,
    registry: &crate::cli::registry::RegistryArgs,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    // A directory, a catalog image (pulled first) or another registry.
    let (cfg, decode_problems, _) = super::shared::read(dir, registry, streams.err)?;
    let (model, report) = validate::validate_with(cfg, decode_problems);
    if !report.passed() {
        write!(streams.err, "{report}")?;
        return Err(CliError::InvalidCatalog {
            dir: dir.display().to_string(),
            count: report.len(),
        });
    }
    let registry = Registry::new(model).map_err(|errors| {
        CliError::Refused(format!(
            "catalog {} cannot be served: {}",
            dir.display(),
            crate::catalog::load::summarise(&errors)
        ))
    })?;
    let packages = registry.model().len();
    let messages = registry.listed_len();
    // One thread: `kubectl-olm` holds the stderr lock on the main thread for the whole run, so
    // logging from another thread would wait on it forever.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Refused(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let listener = grpc::server::bind(args.grpc)
            .await
            .map_err(|e| CliError::Refused(operator_runtime::error_chain(&e)))?;
        let local = listener.local_addr().unwrap_or(args.grpc);
        writeln!(
            streams.out,
            "serving catalog {} ({packages} package(s), {messages} channel entries) on {local} \
             (gRPC api.Registry, grpc.health.v1.Health)",
            dir.display()
        )?;
        streams.out.flush()?;
        grpc::serve(
            Arc::new(registry),
            listener,
            ServeOptions::default(),
            shutdown_signal(),
        )
        .await
        .map_err(|e| CliError::Refused(operator_runtime::error_chain(&e)))?;
        writeln!(streams.err, "stopped serving catalog {}", dir.display())?;
        Ok(())
    })
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM (what Kubernetes sends a pod).
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt => {},
                    _ = term.recv() => {},
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
