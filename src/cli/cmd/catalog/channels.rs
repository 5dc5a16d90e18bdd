//! `kubectl-olm catalog channels PKG`: one row per channel of a package.

use serde::Serialize;

use super::shared::{Catalog, version_cell};
use crate::cli::{
    CliError, OutputFormat,
    output::{self, Row, Streams},
};

/// One channel.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelRow {
    /// Channel name.
    pub name: String,
    /// The package.
    pub package: String,
    /// Head entry (the one nothing replaces or skips); `None` when the graph has no single head.
    pub head: Option<String>,
    /// Version of the head.
    pub head_version: Option<String>,
    /// Number of entries.
    pub entries: usize,
    /// Whether this is the package's default channel.
    pub default: bool,
    /// What `opm validate` rejects in this channel's graph.
    pub problems: Vec<String>,
}

impl Row for ChannelRow {
    const KIND: &'static str = "channel";

    fn name(&self) -> &str {
        &self.name
    }

    fn headers(wide: bool) -> Vec<&'static str> {
        if wide {
            vec!["NAME", "HEAD", "HEAD VERSION", "ENTRIES", "DEFAULT", "PROBLEMS"]
        } else {
            vec!["NAME", "HEAD", "ENTRIES", "DEFAULT"]
        }
    }

    fn cells(&self, wide: bool) -> Vec<String> {
        let head = self.head.clone().unwrap_or_default();
        let default = if self.default { "true" } else { "false" }.to_string();
        if wide {
            vec![
                self.name.clone(),
                head,
                self.head_version.clone().unwrap_or_default(),
                self.entries.to_string(),
                default,
                self.problems.len().to_string(),
            ]
        } else {
            vec![self.name.clone(), head, self.entries.to_string(), default]
        }
    }
}

/// The rows of `catalog channels PKG`, sorted by channel name.
///
/// # Errors
/// [`CliError::PackageNotFound`].
pub fn rows(catalog: &Catalog, package: &str) -> Result<Vec<ChannelRow>, CliError> {
    let pkg = catalog.package(package)?;
    Ok(pkg
        .channels()
        .iter()
        .map(|c| {
            let graph = c.graph();
            let head = graph.head().ok();
            ChannelRow {
                name: c.name.clone(),
                package: pkg.name.clone(),
                head: head.map(|h| h.name.clone()),
                head_version: head
                    .and_then(|h| h.version.as_ref())
                    .map(|v| version_cell(Some(v))),
                entries: c.entries.len(),
                default: c.name == pkg.default_channel,
                problems: graph.problems().iter().map(ToString::to_string).collect(),
            }
        })
        .collect())
}

/// Prints the channels of `package`.
///
/// # Errors
/// [`CliError::PackageNotFound`], [`CliError::Write`].
pub fn run(
    catalog: &Catalog,
    package: &str,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    output::print_list(streams, format, &rows(catalog, package)?)?;
    Ok(())
}
