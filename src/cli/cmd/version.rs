//! `kubectl-olm version`: the version of the binary.

use serde::Serialize;

use crate::cli::{CliError, OutputFormat, output, output::Streams};

/// The version information printed by `version`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// The name of the binary.
    pub client: &'static str,
    /// The crate version.
    pub version: &'static str,
}

/// Prints the version: `kubectl-olm 0.1.0`, or an object with `-o json|yaml`.
///
/// # Errors
/// [`CliError::Write`] when stdout is closed.
pub fn run(format: OutputFormat, streams: &mut Streams<'_>) -> Result<(), CliError> {
    let info = VersionInfo {
        client: "kubectl-olm",
        version: env!("CARGO_PKG_VERSION"),
    };
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &info)?,
        _ => writeln!(streams.out, "{} {}", info.client, info.version)?,
    }
    Ok(())
}
