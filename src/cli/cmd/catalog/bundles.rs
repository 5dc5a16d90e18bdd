//! `kubectl-olm catalog bundles PKG [--channel C]`: one row per bundle, newest first, with its
//! upgrade edges.
//!
//! Edges live on channel entries, and one bundle may sit in several channels with different edges.
//! With `--channel`, the rows are that channel's entries and edges. Without it, every bundle of the
//! package is listed, with the edges of its entry in the default channel, or else in the first
//! channel (by name) that lists it.

use serde::Serialize;

use super::shared::Catalog;
use crate::{
    catalog::model,
    cli::{
        CliError, OutputFormat,
        output::{self, Row, Streams},
    },
};

/// One bundle.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleRow {
    /// Bundle name.
    pub name: String,
    /// The package.
    pub package: String,
    /// Version (`olm.package` property).
    pub version: String,
    /// Channels listing it.
    pub channels: Vec<String>,
    /// The entry it replaces.
    pub replaces: String,
    /// Entries it skips.
    pub skips: Vec<String>,
    /// Versions it upgrades from directly.
    pub skip_range: String,
    /// Bundle image (empty when the objects are inlined).
    pub image: String,
}

impl Row for BundleRow {
    const KIND: &'static str = "bundle";

    fn name(&self) -> &str {
        &self.name
    }

    fn headers(wide: bool) -> Vec<&'static str> {
        let mut h = vec!["NAME", "VERSION", "CHANNELS", "REPLACES", "SKIPS", "SKIPRANGE"];
        if wide {
            h.push("IMAGE");
        }
        h
    }

    fn cells(&self, wide: bool) -> Vec<String> {
        let mut c = vec![
            self.name.clone(),
            self.version.clone(),
            self.channels.join(","),
            self.replaces.clone(),
            self.skips.join(","),
            self.skip_range.clone(),
        ];
        if wide {
            c.push(self.image.clone());
        }
        c
    }
}

/// The rows of `catalog bundles`, newest version first.
///
/// # Errors
/// [`CliError::PackageNotFound`], [`CliError::ChannelNotFound`].
pub fn rows(catalog: &Catalog, package: &str, channel: Option<&str>) -> Result<Vec<BundleRow>, CliError> {
    let pkg = catalog.package(package)?;
    let selected = channel.map(|c| catalog.channel(pkg, Some(c))).transpose()?;
    let edge_source = |b: &model::Bundle| -> Option<&model::ChannelEntry> {
        match selected {
            Some(c) => c.entry(&b.name),
            None => pkg.default_channel().and_then(|c| c.entry(&b.name)).or_else(|| {
                b.channels
                    .iter()
                    .find_map(|c| pkg.channel(c).and_then(|c| c.entry(&b.name)))
            }),
        }
    };
    Ok(pkg
        .bundles()
        .iter()
        .rev()
        .filter(|b| selected.is_none_or(|c| c.entry(&b.name).is_some()))
        .map(|b| {
            let entry = edge_source(b);
            BundleRow {
                name: b.name.clone(),
                package: b.package.clone(),
                version: b.version.to_string(),
                channels: b.channels.clone(),
                replaces: entry.map(|e| e.replaces.clone()).unwrap_or_default(),
                skips: entry.map(|e| e.skips.clone()).unwrap_or_default(),
                skip_range: entry.map(|e| e.skip_range.clone()).unwrap_or_default(),
                image: b.image.clone(),
            }
        })
        .collect())
}

/// Prints the bundles of `package`.
///
/// # Errors
/// See [`rows`]; [`CliError::Write`].
pub fn run(
    catalog: &Catalog,
    package: &str,
    channel: Option<&str>,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    output::print_list(streams, format, &rows(catalog, package, channel)?)?;
    Ok(())
}
