//! `kubectl-olm catalog packages`: one row per package.

use serde::Serialize;

use super::shared::{Catalog, version_cell};
use crate::cli::{
    CliError, OutputFormat,
    output::{self, Row, Streams},
};

/// Longest description shown in the table; `wide` shows the whole first line.
const DESCRIPTION_WIDTH: usize = 50;

/// One package.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRow {
    /// Package name.
    pub name: String,
    /// Default channel.
    pub default_channel: String,
    /// Newest bundle version (semver order), empty when none parses.
    pub latest_version: String,
    /// Channel names, sorted.
    pub channels: Vec<String>,
    /// Number of bundles.
    pub bundles: usize,
    /// The package description.
    pub description: String,
}

impl Row for PackageRow {
    const KIND: &'static str = "package";

    fn name(&self) -> &str {
        &self.name
    }

    fn headers(wide: bool) -> Vec<&'static str> {
        let mut h = vec!["NAME", "DEFAULT CHANNEL", "LATEST VERSION", "CHANNELS"];
        if wide {
            h.push("BUNDLES");
        }
        h.push("DESCRIPTION");
        h
    }

    fn cells(&self, wide: bool) -> Vec<String> {
        let mut c = vec![
            self.name.clone(),
            self.default_channel.clone(),
            self.latest_version.clone(),
            self.channels.join(","),
        ];
        if wide {
            c.push(self.bundles.to_string());
            c.push(output::truncate(&self.description, usize::MAX));
        } else {
            c.push(output::truncate(&self.description, DESCRIPTION_WIDTH));
        }
        c
    }
}

/// The rows of `catalog packages`, sorted by name.
#[must_use]
pub fn rows(catalog: &Catalog) -> Vec<PackageRow> {
    catalog
        .model
        .packages()
        .map(|p| PackageRow {
            name: p.name.clone(),
            default_channel: p.default_channel.clone(),
            latest_version: version_cell(p.latest_version()),
            channels: p.channels().iter().map(|c| c.name.clone()).collect(),
            bundles: p.bundles().len(),
            description: p.description.trim().to_string(),
        })
        .collect()
}

/// Prints the packages.
///
/// # Errors
/// [`CliError::Write`] when output fails.
pub fn run(catalog: &Catalog, format: OutputFormat, streams: &mut Streams<'_>) -> Result<(), CliError> {
    output::print_list(streams, format, &rows(catalog))?;
    Ok(())
}
