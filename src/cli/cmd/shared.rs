//! What the catalog verbs share: loading `--catalog DIR`, finding a package and a channel with
//! errors that list what exists, reading bundle versions, and building a channel's graph.
//!
//! Browsing works on the raw FBC documents, not on a validated model, on purpose: real catalogs
//! carry problems `opm validate` rejects (see `catalog validate`), and a user still wants to list
//! and inspect them. Each verb therefore answers from what is there and leaves judging to
//! `validate`.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    path::Path,
};

use semver::Version;
use serde_json::Value;

use crate::{
    bundle::decode_base64,
    catalog::declcfg::{self, DeclarativeConfig},
    cli::{CliError, error::known_list},
    graph::{self, ChannelGraph},
    version_range::{self, Range},
};

/// A loaded catalog with per-package indexes.
pub struct Catalog {
    /// The directory, as the user wrote it (for messages).
    pub dir: String,
    /// The documents.
    pub cfg: DeclarativeConfig,
    /// Problems met while decoding (reported by `validate`, warned about by the other verbs).
    pub problems: Vec<String>,
    packages: BTreeMap<String, usize>,
    channels: HashMap<String, Vec<usize>>,
    bundles: HashMap<String, Vec<usize>>,
}

/// Loads the catalog at `dir`.
///
/// # Errors
/// [`CliError::CatalogNotFound`] when `dir` does not exist, [`CliError::LoadCatalog`] when it
/// cannot be read.
pub fn load(dir: &Path) -> Result<Catalog, CliError> {
    if !dir.exists() {
        return Err(CliError::CatalogNotFound {
            dir: dir.to_path_buf(),
        });
    }
    let (cfg, problems) = crate::source::load_dir(dir).map_err(|e| CliError::LoadCatalog {
        dir: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(Catalog::new(
        dir.display().to_string(),
        cfg,
        problems.iter().map(ToString::to_string).collect(),
    ))
}

impl Catalog {
    /// Indexes `cfg`.
    #[must_use]
    pub fn new(dir: String, cfg: DeclarativeConfig, problems: Vec<String>) -> Catalog {
        let mut packages = BTreeMap::new();
        for (i, p) in cfg.packages.iter().enumerate() {
            packages.entry(p.name.clone()).or_insert(i);
        }
        let mut channels: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, c) in cfg.channels.iter().enumerate() {
            channels.entry(c.package.clone()).or_default().push(i);
        }
        for list in channels.values_mut() {
            list.sort_by(|&a, &b| cfg.channels[a].name.cmp(&cfg.channels[b].name));
        }
        let mut bundles: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, b) in cfg.bundles.iter().enumerate() {
            bundles.entry(b.package.clone()).or_default().push(i);
        }
        Catalog {
            dir,
            cfg,
            problems,
            packages,
            channels,
            bundles,
        }
    }

    /// Package names, sorted.
    pub fn package_names(&self) -> impl Iterator<Item = &str> {
        self.packages.keys().map(String::as_str)
    }

    /// Every package, sorted by name.
    pub fn packages(&self) -> impl Iterator<Item = &declcfg::Package> {
        self.packages.values().map(|&i| &self.cfg.packages[i])
    }

    /// The package named `name`.
    ///
    /// # Errors
    /// [`CliError::PackageNotFound`] listing the packages that exist.
    pub fn package(&self, name: &str) -> Result<&declcfg::Package, CliError> {
        self.packages
            .get(name)
            .map(|&i| &self.cfg.packages[i])
            .ok_or_else(|| CliError::PackageNotFound {
                package: name.to_string(),
                catalog: self.dir.clone(),
                known: known_list(self.package_names()),
            })
    }

    /// The channels of a package, sorted by name.
    pub fn channels(&self, package: &str) -> Vec<&declcfg::Channel> {
        self.channels
            .get(package)
            .map(|l| l.iter().map(|&i| &self.cfg.channels[i]).collect())
            .unwrap_or_default()
    }

    /// The bundles of a package, in file order.
    pub fn bundles(&self, package: &str) -> Vec<&declcfg::Bundle> {
        self.bundles
            .get(package)
            .map(|l| l.iter().map(|&i| &self.cfg.bundles[i]).collect())
            .unwrap_or_default()
    }

    /// The channel `name` of `package`, or its default channel when `name` is `None`.
    ///
    /// # Errors
    /// [`CliError::ChannelNotFound`] listing the channels (default marked), or
    /// [`CliError::NoDefaultChannel`].
    pub fn channel<'a>(
        &'a self,
        package: &'a declcfg::Package,
        name: Option<&str>,
    ) -> Result<&'a declcfg::Channel, CliError> {
        let channels = self.channels(&package.name);
        let known = || {
            known_list(channels.iter().map(|c| {
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
        channels
            .iter()
            .find(|c| c.name == wanted)
            .copied()
            .ok_or_else(|| CliError::ChannelNotFound {
                channel: wanted.to_string(),
                package: package.name.clone(),
                known: known(),
            })
    }

    /// Version of every bundle of `package`, by bundle name.
    #[must_use]
    pub fn versions(&self, package: &str) -> HashMap<&str, Option<Version>> {
        self.bundles(package)
            .into_iter()
            .map(|b| (b.name.as_str(), bundle_version(b)))
            .collect()
    }

    /// The upgrade graph of a channel.
    #[must_use]
    pub fn graph(&self, channel: &declcfg::Channel) -> ChannelGraph {
        let versions = self.versions(&channel.package);
        let entries = channel
            .entries
            .iter()
            .map(|e| graph::Entry {
                name: e.name.clone(),
                version: versions.get(e.name.as_str()).cloned().flatten(),
                replaces: (!e.replaces.is_empty()).then(|| e.replaces.clone()),
                skips: e.skips.clone(),
                skip_range: (!e.skip_range.is_empty())
                    .then(|| Range::parse(&e.skip_range).ok())
                    .flatten(),
            })
            .collect();
        ChannelGraph::new(entries)
    }

    /// The newest version among the bundles of `package` (semver order), if any parses.
    #[must_use]
    pub fn latest_version(&self, package: &str) -> Option<Version> {
        self.bundles(package)
            .into_iter()
            .filter_map(bundle_version)
            .max_by(version_range::compare)
    }

    /// The bundle named `name` in `package`.
    #[must_use]
    pub fn bundle(&self, package: &str, name: &str) -> Option<&declcfg::Bundle> {
        self.bundles(package).into_iter().find(|b| b.name == name)
    }
}

/// The version of a bundle, from its `olm.package` property.
#[must_use]
pub fn bundle_version(bundle: &declcfg::Bundle) -> Option<Version> {
    let raw = bundle
        .properties
        .iter()
        .find(|p| p.type_ == "olm.package")
        .and_then(|p| p.value.get("version"))
        .and_then(Value::as_str)?;
    version_range::parse_version_strict(raw).ok()
}

/// The raw `olm.package` version string of a bundle (shown even when it does not parse).
#[must_use]
pub fn bundle_version_text(bundle: &declcfg::Bundle) -> String {
    bundle
        .properties
        .iter()
        .find(|p| p.type_ == "olm.package")
        .and_then(|p| p.value.get("version"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The CSV metadata of a bundle: its `olm.csv.metadata` property, or the metadata and spec of an
/// inlined `ClusterServiceVersion` object (`olm.bundle.object`), flattened into one object with
/// the CSV spec's field names. `None` when the bundle carries neither (image-only bundles).
#[must_use]
pub fn csv_metadata(bundle: &declcfg::Bundle) -> Option<Value> {
    if let Some(p) = bundle.properties.iter().find(|p| p.type_ == "olm.csv.metadata") {
        return Some(p.value.clone());
    }
    bundle
        .properties
        .iter()
        .filter(|p| p.type_ == "olm.bundle.object")
        .find_map(|p| {
            let data = p.value.get("data").and_then(Value::as_str)?;
            let object: Value = serde_json::from_slice(&decode_base64(data)?).ok()?;
            if object.get("kind").and_then(Value::as_str) != Some("ClusterServiceVersion") {
                return None;
            }
            let mut meta = object.get("spec").cloned().unwrap_or(Value::Null);
            if let (Some(map), Some(annotations)) =
                (meta.as_object_mut(), object.pointer("/metadata/annotations"))
            {
                map.insert("annotations".to_string(), annotations.clone());
            }
            Some(meta)
        })
}

/// Channels each bundle of `package` appears in, sorted.
#[must_use]
pub fn channels_by_bundle<'a>(channels: &[&'a declcfg::Channel]) -> HashMap<&'a str, BTreeSet<&'a str>> {
    let mut map: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for c in channels {
        for e in &c.entries {
            map.entry(e.name.as_str()).or_default().insert(c.name.as_str());
        }
    }
    map
}

/// Writes a warning per decoding problem, so browsing a partly broken catalog says so.
///
/// # Errors
/// The write error.
pub fn warn_problems(catalog: &Catalog, err: &mut dyn std::io::Write) -> std::io::Result<()> {
    if !catalog.problems.is_empty() {
        writeln!(
            err,
            "warning: {} document(s) of catalog {} could not be read and were skipped; run `kubectl-olm catalog validate {}` for details",
            catalog.problems.len(),
            catalog.dir,
            catalog.dir
        )?;
    }
    Ok(())
}

/// Version text for a table cell.
#[must_use]
pub fn version_cell(v: Option<&Version>) -> String {
    v.map(ToString::to_string).unwrap_or_default()
}
