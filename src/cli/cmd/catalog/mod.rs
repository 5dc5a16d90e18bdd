//! `kubectl-olm catalog ...`: the verbs that read a catalog (a directory, a file, stdin or an
//! image), one file per verb, and `push`, which makes a catalog image; they need no cluster.

pub mod bundles;
pub mod channels;
pub mod describe;
pub mod graph;
pub mod packages;
pub mod push;
pub mod remote;
pub mod render;
pub mod serve;
pub mod shared;
pub mod upgrade_path;
pub mod validate;

use crate::cli::{
    CatalogArgs, CatalogVerb, CliError,
    output::{OutputFormat, Streams},
};

/// Runs a catalog verb.
///
/// # Errors
/// The [`CliError`] to print as `error: ...`, carrying the exit code.
pub fn run(args: &CatalogArgs, format: OutputFormat, streams: &mut Streams<'_>) -> Result<(), CliError> {
    let verb = &args.verb;
    match verb {
        CatalogVerb::Render { bundles } => return render::run(bundles, format, streams),
        CatalogVerb::Validate { dir } => {
            let dir = dir.as_deref().unwrap_or(&args.catalog);
            return validate::run(dir, &args.registry, format, streams);
        }
        CatalogVerb::Serve(serve_args) => {
            return serve::run(
                serve_args.dir.as_deref().unwrap_or(&args.catalog),
                serve_args,
                &args.registry,
                streams,
            );
        }
        CatalogVerb::Push { dir, image } => return push::run(dir, image, &args.registry, format, streams),
        _ => {}
    }
    let catalog = shared::load(&args.catalog, &args.registry, streams.err)?;
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
        CatalogVerb::Validate { .. }
        | CatalogVerb::Render { .. }
        | CatalogVerb::Serve(_)
        | CatalogVerb::Push { .. } => Ok(()),
    }
}
