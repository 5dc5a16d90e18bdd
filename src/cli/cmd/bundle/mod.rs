//! `kubectl-olm bundle ...`: the verbs on registry+v1 bundle directories that need a registry.
//!
//! `bundle push BUNDLE_DIR IMAGE` pushes a bundle directory as a bundle image
//! ([`crate::oci::Registry::push_bundle`]: `manifests/` and `metadata/` in one layer, labelled
//! with every `metadata/annotations.yaml` annotation, as `operator-sdk bundle` builds it), through
//! the push `catalog push` uses ([`push`]). The bundle is parsed first; an invalid one is refused
//! before anything is uploaded.

use crate::cli::{
    BundleArgs, BundleVerb, CliError,
    cmd::catalog::push::{Kind, push},
    output::OutputFormat,
    output::Streams,
};

/// Runs a bundle verb.
///
/// # Errors
/// The [`CliError`] to print as `error: ...`, carrying the exit code.
pub fn run(args: &BundleArgs, format: OutputFormat, streams: &mut Streams<'_>) -> Result<(), CliError> {
    match &args.verb {
        BundleVerb::Push { dir, image } => push(Kind::Bundle, dir, image, &args.registry, format, streams),
    }
}
