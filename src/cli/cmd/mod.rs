//! Runs a parsed [`Cli`]: one file per verb, each computing plain data and printing it through
//! [`crate::cli::output`]. The cluster verbs (`install`, `list`, `approve`, `uninstall`) run on a
//! single-threaded tokio runtime built here, with a client from [`crate::cli::cluster`].

pub mod approve;
pub mod bundles;
pub mod channels;
pub mod cluster_shared;
pub mod completion;
pub mod describe;
pub mod graph;
pub mod install;
pub mod list;
pub mod packages;
pub mod remote;
pub mod render;
pub mod serve;
pub mod shared;
pub mod uninstall;
pub mod upgrade_path;
pub mod validate;
pub mod version;

use crate::cli::{CatalogVerb, Cli, CliError, Command, cluster::Cluster, output::Streams};

/// Runs the command and writes its results to `streams`.
///
/// # Errors
/// The [`CliError`] to print as `error: ...`, carrying the exit code.
pub fn run(cli: &Cli, streams: &mut Streams<'_>) -> Result<(), CliError> {
    let format = cli.output;
    match &cli.command {
        Command::Install(_) | Command::List(_) | Command::Approve(_) | Command::Uninstall(_) => {
            run_on_cluster(cli, streams)
        }
        Command::Completion { shell } => completion::run(*shell, streams),
        Command::Version => version::run(format, streams),
        Command::Catalog(args) => {
            let verb = &args.verb;
            match verb {
                CatalogVerb::Render { bundles } => return render::run(bundles, format, streams),
                CatalogVerb::Validate { dir } => {
                    return validate::run(dir.as_deref().unwrap_or(&args.catalog), format, streams);
                }
                CatalogVerb::Serve(serve_args) => {
                    return serve::run(
                        serve_args.dir.as_deref().unwrap_or(&args.catalog),
                        serve_args,
                        streams,
                    );
                }
                _ => {}
            }
            let catalog = shared::load(&args.catalog)?;
            shared::warn_problems(&catalog, streams.err)?;
            match verb {
                CatalogVerb::Packages => packages::run(&catalog, format, streams),
                CatalogVerb::Channels { package } => channels::run(&catalog, package, format, streams),
                CatalogVerb::Bundles { package, channel } => {
                    bundles::run(&catalog, package, channel.as_deref(), format, streams)
                }
                CatalogVerb::Describe { package } => describe::run(&catalog, package, format, streams),
                CatalogVerb::Graph {
                    package,
                    channel,
                    format: drawing,
                } => graph::run(&catalog, package, channel.as_deref(), *drawing, format, streams),
                CatalogVerb::UpgradePath {
                    package,
                    from,
                    channel,
                } => upgrade_path::run(&catalog, package, from, channel.as_deref(), format, streams),
                CatalogVerb::Validate { .. } | CatalogVerb::Render { .. } | CatalogVerb::Serve(_) => Ok(()),
            }
        }
    }
}

/// Runs a cluster verb to completion on a fresh single-threaded runtime.
fn run_on_cluster(cli: &Cli, streams: &mut Streams<'_>) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Refused(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let cluster = Cluster::connect(&cli.cluster).await?;
        let format = cli.output;
        match &cli.command {
            Command::Install(args) => install::run(&cluster, args, format, streams).await,
            Command::List(args) => list::run(&cluster, args, format, streams).await,
            Command::Approve(args) => approve::run(&cluster, args, format, streams).await,
            Command::Uninstall(args) => uninstall::run(&cluster, args, format, streams).await,
            _ => Ok(()),
        }
    })
}
