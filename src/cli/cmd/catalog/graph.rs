//! `kubectl-olm catalog graph PKG [--channel C] [--format text|dot|mermaid]`: draws a channel's
//! upgrade graph with [`crate::graph::render`]. With `-o json|yaml` it prints the graph as data
//! (entries, edges, head, problems); with `-o name`, the entries in the resolver's order.

use serde::Serialize;

use super::shared::{Catalog, version_cell};
use crate::{
    cli::{CliError, GraphFormat, OutputFormat, output, output::Streams},
    graph::{self, Edge, RenderOptions},
};

/// One entry of the channel.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphEntry {
    /// Bundle name.
    pub name: String,
    /// Version.
    pub version: Option<String>,
    /// The entry it replaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Entries it skips.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// Its skipRange.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub skip_range: String,
}

/// A channel's graph as data.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphObject {
    /// The package.
    pub package: String,
    /// The channel.
    pub channel: String,
    /// Whether it is the default channel.
    pub default: bool,
    /// The head, when there is exactly one.
    pub head: Option<String>,
    /// Entries in file order.
    pub entries: Vec<GraphEntry>,
    /// Every upgrade edge (newer → older).
    pub edges: Vec<Edge>,
    /// What `opm validate` rejects in this graph.
    pub problems: Vec<String>,
}

/// Prints the graph of a channel.
///
/// # Errors
/// [`CliError::PackageNotFound`], [`CliError::ChannelNotFound`], [`CliError::Write`].
pub fn run(
    catalog: &Catalog,
    package: &str,
    channel: Option<&str>,
    drawing: GraphFormat,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let pkg = catalog.package(package)?;
    let ch = catalog.channel(pkg, channel)?;
    let g = ch.graph();
    let opts = RenderOptions {
        channel: ch.name.clone(),
        package: pkg.name.clone(),
        is_default_channel: ch.name == pkg.default_channel,
    };
    match format {
        OutputFormat::Table | OutputFormat::Wide => {
            let text = match drawing {
                GraphFormat::Text => graph::render::text(g, &opts),
                GraphFormat::Dot => graph::render::dot(g, &opts),
                GraphFormat::Mermaid => graph::render::mermaid(g, &opts),
            };
            streams.out.write_all(text.as_bytes())?;
            if !text.ends_with('\n') {
                writeln!(streams.out)?;
            }
        }
        OutputFormat::Name => {
            // The resolver's order when the graph allows one, the file order otherwise.
            let names: Vec<String> = match g.ordered() {
                Ok(order) => order.iter().map(|e| e.name.clone()).collect(),
                Err(_) => g.entries().iter().map(|e| e.name.clone()).collect(),
            };
            for n in names {
                writeln!(streams.out, "bundle/{n}")?;
            }
        }
        OutputFormat::Json | OutputFormat::Yaml => {
            let object = GraphObject {
                package: pkg.name.clone(),
                channel: ch.name.clone(),
                default: opts.is_default_channel,
                head: g.head().ok().map(|h| h.name.clone()),
                entries: g
                    .entries()
                    .iter()
                    .map(|e| GraphEntry {
                        name: e.name.clone(),
                        version: e.version.as_ref().map(|v| version_cell(Some(v))),
                        replaces: e.replaces.clone(),
                        skips: e.skips.clone(),
                        skip_range: ch
                            .entry(&e.name)
                            .map(|x| x.skip_range.clone())
                            .unwrap_or_default(),
                    })
                    .collect(),
                edges: g.edges(),
                problems: g.problems().iter().map(ToString::to_string).collect(),
            };
            output::print_object(streams.out, format, &object)?;
        }
    }
    Ok(())
}
