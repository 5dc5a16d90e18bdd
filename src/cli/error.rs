//! Errors of the `kubectl-olm` command line, each with the exit code it maps to.
//!
//! Exit codes follow kubectl and clap: 0 success, 1 a failed check or lookup (unknown package, invalid
//! catalog, unreadable bundle), 2 bad usage (clap's own errors, and flag combinations clap cannot
//! check). Every message names what was wrong and how to fix it; the binary prints it as `error: ...`.

use std::{io, path::PathBuf};

/// Exit code for a failed check or lookup.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code for bad usage.
pub const EXIT_USAGE: u8 = 2;

/// Why a `kubectl-olm` command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The arguments are inconsistent in a way clap cannot check.
    #[error("{0}")]
    Usage(String),

    /// The `--catalog` directory does not exist.
    #[error(
        "catalog directory {dir} not found; pass --catalog DIR pointing at a file-based catalog, \
         or run from the repository root where ./catalog lives"
    )]
    CatalogNotFound {
        /// The directory that was asked for.
        dir: PathBuf,
    },

    /// The catalog could not be read or decoded.
    #[error("failed to load catalog {dir}: {message}")]
    LoadCatalog {
        /// The catalog directory.
        dir: PathBuf,
        /// What went wrong, from the loader.
        message: String,
    },

    /// The package is not in the catalog.
    #[error("package {package:?} not found in catalog {catalog}; packages: {known}")]
    PackageNotFound {
        /// The package that was asked for.
        package: String,
        /// The catalog directory.
        catalog: String,
        /// The packages that exist, comma separated (or `none`).
        known: String,
    },

    /// The channel is not in the package.
    #[error("channel {channel:?} not found in package {package}; channels: {known}")]
    ChannelNotFound {
        /// The channel that was asked for.
        channel: String,
        /// The package.
        package: String,
        /// The channels that exist, the default one marked.
        known: String,
    },

    /// The package names no default channel and none was given.
    #[error("package {package} has no default channel; pass --channel, one of: {known}")]
    NoDefaultChannel {
        /// The package.
        package: String,
        /// The channels that exist.
        known: String,
    },

    /// The channel graph is broken in a way that stops the verb (no head, a cycle).
    #[error(
        "channel {channel} of package {package} has a broken upgrade graph: {message}; run `kubectl-olm catalog validate` for the full report"
    )]
    BrokenChannel {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The graph error.
        message: String,
    },

    /// No upgrade path exists from the given version.
    #[error("{0}")]
    NoUpgradePath(String),

    /// `validate` found problems; the report has already been printed.
    #[error("catalog {dir} is invalid: {count} problem(s) found")]
    InvalidCatalog {
        /// The catalog directory.
        dir: String,
        /// How many problems.
        count: usize,
    },

    /// A bundle directory could not be read.
    #[error(
        "failed to read bundle directory {dir}: {source}; pass a registry+v1 bundle directory holding manifests/ and metadata/"
    )]
    ReadBundle {
        /// The directory.
        dir: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },

    /// A bundle directory is not a valid registry+v1 bundle.
    #[error("failed to render bundle {dir}: {source}")]
    RenderBundle {
        /// The directory.
        dir: PathBuf,
        /// The bundle error.
        #[source]
        source: crate::bundle::BundleError,
    },

    /// Writing the output failed.
    #[error("failed to write output: {0}")]
    Write(#[from] io::Error),
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => EXIT_USAGE,
            _ => EXIT_FAILURE,
        }
    }

    /// Whether this error is a closed pipe on stdout (`kubectl-olm ... | head`), which should end the
    /// process quietly with success.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Write(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// Joins names for an error message, `none` when there are none.
pub fn known_list<I, S>(names: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let joined = names
        .into_iter()
        .map(|s| s.as_ref().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if joined.is_empty() {
        "none".to_string()
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_package_names_the_catalog_and_the_packages_that_exist() {
        let e = CliError::PackageNotFound {
            package: "redis".into(),
            catalog: "./catalog".into(),
            known: known_list(["redis-operator"]),
        };
        assert_eq!(
            e.to_string(),
            r#"package "redis" not found in catalog ./catalog; packages: redis-operator"#
        );
        assert_eq!(e.exit_code(), 1);
    }

    #[test]
    fn usage_errors_exit_with_two() {
        assert_eq!(CliError::Usage("bad".into()).exit_code(), 2);
    }

    #[test]
    fn a_closed_pipe_is_recognised() {
        let e = CliError::from(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(e.is_broken_pipe());
        assert!(!CliError::Usage("x".into()).is_broken_pipe());
    }

    #[test]
    fn an_empty_known_list_says_none() {
        assert_eq!(known_list(Vec::<String>::new()), "none");
    }
}
