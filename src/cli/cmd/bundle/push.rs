//! `kubectl-olm bundle push BUNDLE_DIR IMAGE`: pushes a registry+v1 bundle directory as a bundle
//! image ([`crate::oci::Registry::push_bundle`]: `manifests/` and `metadata/` in one layer,
//! labelled with every `metadata/annotations.yaml` annotation, as `operator-sdk bundle` builds
//! it). The bundle is parsed first; an invalid one is refused before anything is uploaded.

use std::path::Path;

use crate::cli::{
    CliError, OutputFormat,
    cmd::catalog::push::{Kind, push},
    output::Streams,
    registry::RegistryArgs,
};

/// `bundle push`.
///
/// # Errors
/// As [`push`].
pub fn run(
    dir: &Path,
    image: &str,
    args: &RegistryArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    push(Kind::Bundle, dir, image, args, format, streams)
}
