//! What the catalog verbs share: loading `--catalog DIR|IMAGE|grpc://...|https://...` into the
//! linked [`Model`] (an image is pulled through [`crate::oci`] into the cache first; a registry or
//! a catalogd HTTP API is read through [`super::remote`]), and finding a package and a channel
//! with errors that list what exists.
//!
//! Browsing uses [`Model::build`], which never fails: real catalogs carry problems `opm validate`
//! rejects (see `catalog validate`), and a user still wants to list and inspect them. Each verb
//! answers from what is there and leaves judging to `validate`.

use std::path::Path;

use semver::Version;

use crate::{
    catalog::{
        Model,
        declcfg::{DeclarativeConfig, DecodeError},
        model,
    },
    cli::{CliError, error::known_list, registry::RegistryArgs},
};
use operator_runtime::error_chain;

/// A loaded catalog.
pub struct Catalog {
    /// The directory, as the user wrote it (for messages).
    pub dir: String,
    /// The linked catalog.
    pub model: Model,
    /// How many documents could not be decoded (reported in full by `validate`).
    pub decode_problems: usize,
}

/// The image reference `--catalog` names, when it names one rather than a path.
#[must_use]
pub fn image_arg(dir: &Path) -> Option<&str> {
    let text = dir.to_str()?;
    crate::oci::reference::is_image_reference(text, dir.exists()).then_some(text)
}

/// Reads the catalog at `dir` (a path, or an image pulled first) into raw documents and the
/// decoding problems met, with the name to show for it.
///
/// # Errors
/// [`CliError::CatalogNotFound`] when `dir` does not exist, [`CliError::LoadCatalog`] when it
/// cannot be read, [`CliError::Registry`] when the image cannot be pulled.
pub fn read(
    dir: &Path,
    registry: &RegistryArgs,
    err: &mut dyn std::io::Write,
) -> Result<(DeclarativeConfig, Vec<DecodeError>, String), CliError> {
    if let Some(address) = super::remote::grpc_address(dir) {
        let (cfg, problems) = super::remote::read(address)?;
        return Ok((cfg, problems, address.to_owned()));
    }
    if let Some(url) = super::remote::http_url(dir) {
        let (cfg, problems) = super::remote::read_http(url, registry)?;
        return Ok((cfg, problems, url.to_owned()));
    }
    if let Some(image) = image_arg(dir) {
        let pulled = crate::cli::registry::pull_catalog(registry, image, err)?;
        let loaded = crate::source::load_path(&pulled.dir).map_err(|e| CliError::LoadCatalog {
            dir: pulled.dir.clone(),
            message: error_chain(&e),
        })?;
        return Ok((loaded.config, loaded.problems, pulled.image));
    }
    if !dir.exists() {
        return Err(CliError::CatalogNotFound {
            dir: dir.to_path_buf(),
        });
    }
    let loaded = crate::source::load_path(dir).map_err(|e| CliError::LoadCatalog {
        dir: dir.to_path_buf(),
        message: error_chain(&e),
    })?;
    Ok((loaded.config, loaded.problems, dir.display().to_string()))
}

/// Loads the catalog at `dir` (a path or an image) for browsing.
///
/// # Errors
/// See [`read`].
pub fn load(dir: &Path, registry: &RegistryArgs, err: &mut dyn std::io::Write) -> Result<Catalog, CliError> {
    let (cfg, problems, name) = read(dir, registry, err)?;
    Ok(Catalog {
        dir: name,
        model: Model::from_config(cfg),
        decode_problems: problems.len(),
    })
}

impl Catalog {
    /// The package named `name`.
    ///
    /// # Errors
    /// [`CliError::PackageNotFound`] listing the packages that exist.
    pub fn package(&self, name: &str) -> Result<&model::Package, CliError> {
        self.model.package(name).ok_or_else(|| CliError::PackageNotFound {
            package: name.to_string(),
            catalog: self.dir.clone(),
            known: known_list(self.model.packages().map(|p| p.name.as_str())),
        })
    }

    /// The channel `name` of `package`, or its default channel when `name` is `None`.
    ///
    /// # Errors
    /// [`CliError::ChannelNotFound`] listing the channels (default marked), or
    /// [`CliError::NoDefaultChannel`].
    pub fn channel<'a>(
        &self,
        package: &'a model::Package,
        name: Option<&str>,
    ) -> Result<&'a model::Channel, CliError> {
        let known = || {
            known_list(package.channels().iter().map(|c| {
                if c.name == package.default_channel {
                    format!("{} (default)", c.name)
                } else {
                    c.name.clone()
                }
            }))
        };
        let wanted = match name {
            Some(n) => n,
            None if package.default_channel.is_empty() => {
                return Err(CliError::NoDefaultChannel {
                    package: package.name.clone(),
                    known: known(),
                });
            }
            None => package.default_channel.as_str(),
        };
        package.channel(wanted).ok_or_else(|| CliError::ChannelNotFound {
            channel: wanted.to_string(),
            package: package.name.clone(),
            known: known(),
        })
    }
}

/// Writes a warning when documents could not be decoded, so browsing a partly broken catalog says so.
///
/// # Errors
/// The write error.
pub fn warn_problems(catalog: &Catalog, err: &mut dyn std::io::Write) -> std::io::Result<()> {
    if catalog.decode_problems > 0 {
        writeln!(
            err,
            "warning: {} document(s) of catalog {} could not be read and were skipped; run `kubectl-olm catalog validate {}` for details",
            catalog.decode_problems, catalog.dir, catalog.dir
        )?;
    }
    Ok(())
}

/// Version text for a table cell.
#[must_use]
pub fn version_cell(v: Option<&Version>) -> String {
    v.map(ToString::to_string).unwrap_or_default()
}
