//! `kubectl-olm install | list | approve | uninstall`: the verbs that act on a cluster, one file
//! per verb, each run to completion on a single-threaded tokio runtime built here, with a client
//! from [`crate::cli::cluster`].

pub mod approve;
pub mod install;
pub mod list;
pub mod rollback;
pub mod shared;
pub mod uninstall;
pub mod why;

use crate::cli::{Cli, CliError, Command, cluster::Cluster, output::Streams};

/// Runs a cluster verb to completion on a fresh single-threaded runtime.
///
/// # Errors
/// The [`CliError`] to print as `error: ...`, carrying the exit code.
pub fn run(cli: &Cli, streams: &mut Streams<'_>) -> Result<(), CliError> {
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
            Command::Plan(crate::cli::PlanArgs {
                command: crate::cli::PlanCommand::Show(args),
            }) => approve::show(&cluster, args, format, streams).await,
            Command::Uninstall(args) => uninstall::run(&cluster, args, format, streams).await,
            Command::Why(args) => why::run(&cluster, args, format, streams).await,
            Command::Rollback(args) => rollback::run(&cluster, args, format, streams).await,
            _ => Ok(()),
        }
    })
}
