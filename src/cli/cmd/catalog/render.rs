//! `kubectl-olm catalog render BUNDLE_DIR...`: registry+v1 bundle directories to FBC `olm.bundle`
//! documents, YAML by default (`---` separated), a JSON stream with `-o json`, `bundle/NAME` lines with
//! `-o name`.
//!
//! Reading the directories ([`crate::source::bundle::read_tree`]) is the only I/O here; parsing and
//! rendering are [`crate::bundle`].

use std::path::Path;

use serde_json::Value;

use crate::{
    bundle::Bundle,
    cli::{CliError, OutputFormat, output::Streams},
    codec,
    source::bundle::read_tree,
};

/// Renders every bundle directory, in the order given, and prints the documents.
///
/// # Errors
/// [`CliError::ReadBundle`] / [`CliError::RenderBundle`] for the first directory that cannot be
/// read or is not a valid bundle (nothing is printed then), [`CliError::Write`] when stdout is closed.
pub fn run(
    dirs: &[impl AsRef<Path>],
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let mut docs: Vec<Value> = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let dir = dir.as_ref();
        let tree = read_tree(dir).map_err(|source| CliError::ReadBundle {
            dir: dir.to_path_buf(),
            source,
        })?;
        let bundle = Bundle::parse(&tree).map_err(|source| CliError::RenderBundle {
            dir: dir.to_path_buf(),
            source,
        })?;
        docs.push(bundle.render());
    }
    let text = match format {
        OutputFormat::Json => codec::to_json_stream(&docs),
        OutputFormat::Name => Ok(docs
            .iter()
            .map(|d| format!("bundle/{}\n", d["name"].as_str().unwrap_or_default()))
            .collect()),
        _ => codec::to_yaml_documents(&docs),
    }
    .map_err(std::io::Error::other)?;
    streams.out.write_all(text.as_bytes())?;
    Ok(())
}
