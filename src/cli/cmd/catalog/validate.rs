//! `kubectl-olm catalog validate [DIR|IMAGE]`: checks a catalog with the rules `opm validate` applies
//! ([`crate::catalog::validate`]) and prints every problem as a tree grouped by package, channel and
//! bundle, each naming its file. Exit code 1 when the catalog is invalid. `-o json|yaml` prints
//! `{passed, errors: [{file, document, package, channel, bundle, message}]}` (opm's `--output json`
//! shape, with the location split into fields); `-o name` prints `catalog/DIR` when valid.

use std::path::Path;

use crate::{
    catalog::validate,
    cli::{
        CliError, OutputFormat,
        output::{self, Streams},
        registry::RegistryArgs,
    },
};

/// Validates the catalog at `dir` and prints the report.
///
/// # Errors
/// [`CliError::InvalidCatalog`] (after the report is printed) when problems were found; load
/// errors; [`CliError::Write`].
pub fn run(
    dir: &Path,
    registry: &RegistryArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let (cfg, decode_problems, name) = super::shared::read(dir, registry, streams.err)?;
    let (model, report) = validate::validate_with(cfg, decode_problems);
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &report)?,
        OutputFormat::Name => {
            if report.passed() {
                writeln!(streams.out, "catalog/{name}")?;
            }
        }
        OutputFormat::Table | OutputFormat::Wide => {
            if report.passed() {
                let channels: usize = model.packages().map(|p| p.channels().len()).sum();
                let bundles: usize = model.packages().map(|p| p.bundles().len()).sum();
                writeln!(
                    streams.out,
                    "catalog {name} is valid: {} package(s), {channels} channel(s), {bundles} bundle(s)",
                    model.len()
                )?;
            } else {
                write!(streams.out, "{report}")?;
            }
        }
    }
    if report.passed() {
        Ok(())
    } else {
        Err(CliError::InvalidCatalog {
            dir: name,
            count: report.len(),
        })
    }
}
