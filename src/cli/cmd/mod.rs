//! Runs a parsed [`Cli`]: the folders mirror the verbs. [`catalog`] holds `kubectl-olm catalog
//! ...` (reading catalogs, no cluster), [`cluster`] the verbs that act on a cluster (`install`,
//! `list`, `approve`, `uninstall`); each verb is one file computing plain data and printing it
//! through [`crate::cli::output`].

pub mod bundle;
pub mod catalog;
pub mod cluster;
pub mod completion;
pub mod console;
pub mod version;

use crate::cli::{Cli, CliError, Command, output::Streams};

/// Runs the command and writes its results to `streams`.
///
/// # Errors
/// The [`CliError`] to print as `error: ...`, carrying the exit code.
pub fn run(cli: &Cli, streams: &mut Streams<'_>) -> Result<(), CliError> {
    match &cli.command {
        Command::Install(_)
        | Command::List(_)
        | Command::Approve(_)
        | Command::Plan(_)
        | Command::Why(_)
        | Command::Rollback(_)
        | Command::Uninstall(_) => cluster::run(cli, streams),
        Command::Console(args) => console::run(cli, args, streams),
        Command::Completion { shell } => completion::run(*shell, streams),
        Command::Version => version::run(cli.output, streams),
        Command::Catalog(args) => catalog::run(args, cli.output, streams),
        Command::Bundle(args) => bundle::run(args, cli.output, streams),
    }
}
