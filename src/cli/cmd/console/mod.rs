//! `kubectl-olm console`: serves the web console ([`olm_console`]) on a loopback address, reading
//! and approving as the user (their kubeconfig), until Ctrl-C.
//!
//! The rule: the console acts with the user's credentials, so only the user may reach it. It binds
//! `127.0.0.1` by default and refuses any other address unless `--allow-remote` is given (and then
//! only a specific address, never `0.0.0.0`, so the `Host` check of [`olm_console::server`] knows
//! the one name it answers to). The pages, the Host and CSRF checks and the graph drawing live in
//! `crates/console`; this module is the data source over olm-rs ([`source`]) and the pure
//! conversions from olm-rs values to the console's views ([`view`]).

pub mod source;

use std::{net::SocketAddr, path::PathBuf};

use clap::Args;

use crate::cli::{Cli, CliError, cluster::Cluster, output::Streams, registry::RegistryArgs};

/// Arguments of `console`.
#[derive(Debug, Clone, Args)]
pub struct ConsoleArgs {
    /// Where to listen (port 0: any free port; the URL is printed).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8422")]
    pub address: SocketAddr,
    /// Allow a non-loopback --address. Anyone who reaches it acts with your credentials.
    #[arg(long)]
    pub allow_remote: bool,
    /// Open the console in the desktop's browser (`xdg-open`).
    #[arg(long)]
    pub open: bool,
    /// Also browse this catalog (a directory, an image, grpc://HOST:PORT or a catalogd URL),
    /// read once at start; without a cluster, the console shows only these.
    #[arg(long = "catalog", value_name = "DIR|IMAGE")]
    pub catalogs: Vec<PathBuf>,
    /// How to reach registries for catalog images.
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Why `address` may not be served, or `None`.
pub fn refuse_address(address: SocketAddr, allow_remote: bool) -> Option<String> {
    if address.ip().is_loopback() {
        return None;
    }
    if address.ip().is_unspecified() {
        return Some(format!(
            "--address {address} listens on every interface; the console acts with your credentials, so bind 127.0.0.1 (reach it from elsewhere through `ssh -L`), or one specific address with --allow-remote"
        ));
    }
    (!allow_remote).then(|| {
        format!(
            "--address {address} is not a loopback address; the console acts with your credentials, so anyone who reaches it acts as you. Bind 127.0.0.1, or pass --allow-remote if every client of that network may"
        )
    })
}

/// Runs `console` until Ctrl-C or SIGTERM.
///
/// # Errors
/// A refused address, a kubeconfig that cannot be read (without `--catalog`), a catalog that
/// cannot be read, a port that cannot be bound.
pub fn run(cli: &Cli, args: &ConsoleArgs, streams: &mut Streams<'_>) -> Result<(), CliError> {
    if cli.output != crate::cli::OutputFormat::Table {
        return Err(CliError::Usage(
            "console prints only its URL; -o/--output does not apply to it".to_string(),
        ));
    }
    if let Some(why) = refuse_address(args.address, args.allow_remote) {
        return Err(CliError::Usage(why));
    }
    let mut local = Vec::new();
    for path in &args.catalogs {
        local.push(source::read_catalog(path, &args.registry).map_err(CliError::Refused)?);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::Refused(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let cluster = match Cluster::connect(&cli.cluster).await {
            Ok(c) => Some(c),
            Err(e) if !local.is_empty() => {
                writeln!(streams.err, "warning: {e}; showing only the --catalog catalogs")?;
                None
            }
            Err(e) => return Err(e),
        };
        let listener = tokio::net::TcpListener::bind(args.address)
            .await
            .map_err(|e| CliError::Refused(format!("cannot listen on {}: {e}", args.address)))?;
        let bound = listener
            .local_addr()
            .map_err(|e| CliError::Refused(format!("cannot read the listening address: {e}")))?;
        let token = olm_console::new_token().map_err(|e| CliError::Refused(e.to_string()))?;
        let source = source::ClusterSource::new(cluster.clone(), local, args.registry.clone());
        source.watch();
        let app = olm_console::router(source, olm_console::Options::for_address(bound, token));
        let url = format!("http://{bound}/");
        writeln!(streams.out, "olm-rs console: {url}")?;
        match &cluster {
            Some(c) => writeln!(
                streams.out,
                "reading and approving as the user of {} ({}); Ctrl-C to stop",
                c.source, c.server
            )?,
            None => writeln!(
                streams.out,
                "no cluster: the --catalog catalogs only; Ctrl-C to stop"
            )?,
        }
        streams.out.flush()?;
        if args.open
            && let Err(e) = std::process::Command::new("xdg-open").arg(&url).spawn()
        {
            writeln!(
                streams.err,
                "warning: cannot open a browser (xdg-open: {e}); open {url}"
            )?;
        }
        olm_console::serve(listener, app, operator_runtime::shutdown::signal())
            .await
            .map_err(|e| CliError::Refused(format!("the console stopped: {e}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_served_unless_allowed_and_never_every_interface() {
        assert_eq!(refuse_address("127.0.0.1:0".parse().unwrap(), false), None);
        assert_eq!(refuse_address("[::1]:8422".parse().unwrap(), false), None);
        let remote = refuse_address("10.0.0.5:8422".parse().unwrap(), false).unwrap();
        assert!(remote.contains("--allow-remote"), "{remote}");
        assert_eq!(refuse_address("10.0.0.5:8422".parse().unwrap(), true), None);
        let any = refuse_address("0.0.0.0:8422".parse().unwrap(), true).unwrap();
        assert!(any.contains("every interface"), "{any}");
    }
}
