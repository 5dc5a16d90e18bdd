//! Runs a parsed [`Cli`]: one file per verb, each computing plain data and printing it through
//! [`crate::cli::output`].

pub mod completion;
pub mod render;
pub mod version;

use crate::cli::{CatalogVerb, Cli, CliError, Command, output::Streams};

/// Runs the command and writes its results to `streams`.
///
/// # Errors
/// The [`CliError`] to print as `error: ...`, carrying the exit code.
pub fn run(cli: &Cli, streams: &mut Streams<'_>) -> Result<(), CliError> {
    let format = cli.output;
    match &cli.command {
        Command::Completion { shell } => completion::run(*shell, streams),
        Command::Version => version::run(format, streams),
        Command::Catalog(args) => match &args.verb {
            CatalogVerb::Render { bundles } => render::run(bundles, format, streams),
            _ => Err(CliError::Usage("not wired yet".into())),
        },
    }
}
