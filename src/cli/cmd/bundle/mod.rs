//! `kubectl-olm bundle ...`: the verbs on registry+v1 bundle directories that need a registry.

pub mod push;

use crate::cli::{BundleArgs, BundleVerb, CliError, output::OutputFormat, output::Streams};

/// Runs a bundle verb.
///
/// # Errors
/// The [`CliError`] to print as `error: ...`, carrying the exit code.
pub fn run(args: &BundleArgs, format: OutputFormat, streams: &mut Streams<'_>) -> Result<(), CliError> {
    match &args.verb {
        BundleVerb::Push { dir, image } => push::run(dir, image, &args.registry, format, streams),
    }
}
