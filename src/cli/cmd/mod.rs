//! Runs a parsed [`Cli`]: one file per verb, each computing plain data and printing it through
//! [`crate::cli::output`].

pub mod bundles;
pub mod channels;
pub mod completion;
pub mod describe;
pub mod graph;
pub mod packages;
pub mod render;
pub mod shared;
pub mod upgrade_path;
pub mod validate;
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
        Command::Catalog(args) => {
            let verb = &args.verb;
            match verb {
                CatalogVerb::Render { bundles } => return render::run(bundles, format, streams),
                CatalogVerb::Validate { dir } => {
                    return validate::run(dir.as_deref().unwrap_or(&args.catalog), format, streams);
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
                CatalogVerb::Validate { .. } | CatalogVerb::Render { .. } => Ok(()),
            }
        }
    }
}
