//! `kubectl-olm catalog push DIR IMAGE`: pushes a file-based catalog directory as a catalog image
//! ([`crate::oci::Registry::push_catalog`]: one layer under `/configs` and the configs label, what
//! `opm generate dockerfile` and a build make, without a container engine). Prints the pushed
//! reference with its digest (`-o name`: `image/REF@DIGEST`, `-o json|yaml`: `{image, digest}`).

use std::path::Path;

use crate::{
    cli::{
        CliError, OutputFormat,
        output::{self, Streams},
        registry::{self, RegistryArgs},
    },
    oci,
};

/// What was pushed, for `-o json|yaml`.
#[derive(Debug, serde::Serialize)]
pub struct Pushed {
    /// The reference pushed to.
    pub image: String,
    /// The manifest digest.
    pub digest: String,
}

/// Which kind of image a push makes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A catalog image.
    Catalog,
    /// A bundle image.
    Bundle,
}

/// Pushes `dir` as `image` and prints the result.
///
/// # Errors
/// [`CliError::Usage`] for a bad reference, [`CliError::Registry`] when the directory is refused
/// or the push fails.
pub fn push(
    kind: Kind,
    dir: &Path,
    image: &str,
    args: &RegistryArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let image = oci::ImageRef::parse(image).map_err(|e| CliError::Usage(e.to_string()))?;
    if image.digest().is_some() {
        return Err(CliError::Usage(format!(
            "cannot push to {image}: a push needs a tag, not a digest (REGISTRY/REPO:TAG)"
        )));
    }
    let registry = registry::registry(args, streams.err)?;
    let digest = registry::run_with_progress(
        streams.err,
        &format!("pushing {} to {image}", dir.display()),
        async {
            match kind {
                Kind::Catalog => registry.push_catalog(dir, &image).await,
                Kind::Bundle => registry.push_bundle(dir, &image).await,
            }
            .map_err(|e| CliError::registry(&e))
        },
        |digest, elapsed| format!("pushed {image}@{digest} in {:.1}s", elapsed.as_secs_f64()),
    )?;
    let pushed = Pushed {
        image: image.to_string(),
        digest,
    };
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &pushed)?,
        OutputFormat::Name => writeln!(streams.out, "image/{}@{}", pushed.image, pushed.digest)?,
        OutputFormat::Table | OutputFormat::Wide => {
            writeln!(streams.out, "pushed {}@{}", pushed.image, pushed.digest)?;
        }
    }
    Ok(())
}

/// `catalog push`.
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
    push(Kind::Catalog, dir, image, args, format, streams)
}
