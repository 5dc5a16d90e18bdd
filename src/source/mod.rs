//! source: reads catalogs from disk or stdin into the core's values (imperative shell).
//!
//! This is the only part of the catalog stack that touches the file system. It reads bytes and
//! hands text to [`crate::catalog::declcfg::DeclarativeConfig::decode_str`]; everything after that
//! is pure. What opm does, and what we do:
//!
//! - a directory is walked recursively in sorted order (so results and messages are
//!   deterministic), and every regular file not ignored by a `.indexignore` is decoded, whatever its
//!   extension ([`dir`] documents the ignore rules). Hidden files are *not* skipped, as opm does not
//!   skip them; list them in `.indexignore` to leave them out;
//! - a single file is decoded the same way;
//! - `-` (or any reader) is read whole and decoded as one stream, displayed as `<stdin>`.
//!
//! Files that cannot be decoded do not stop loading: their problems are returned in
//! [`Loaded::problems`] and end up in the validation report, next to the problems of the rest of
//! the catalog. Only I/O failures (a missing root, an unreadable file) are errors.

pub mod dir;

use std::{
    io::Read,
    path::{Path, PathBuf},
    sync::Arc,
};

use crate::catalog::{
    declcfg::{DeclarativeConfig, DecodeError, Origin},
    model::Model,
    validate::{self, ValidationReport},
};

/// I/O failures while reading a catalog. Every variant names the path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The catalog path does not exist.
    #[error("catalog {path} does not exist; pass an existing directory or file (e.g. --catalog ./catalog)")]
    NotFound {
        /// The path given.
        path: PathBuf,
    },
    /// A file could not be read.
    #[error("failed to read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A directory could not be listed.
    #[error("failed to list directory {path}")]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A reader (stdin) failed.
    #[error("failed to read {name}")]
    Stream {
        /// Display name of the stream.
        name: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What was read: the blobs, the decode problems, and how many files were decoded.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every blob read, in file order.
    pub config: DeclarativeConfig,
    /// Documents that could not be decoded (reported, not fatal).
    pub problems: Vec<DecodeError>,
    /// Number of files decoded.
    pub files: usize,
}

impl Loaded {
    /// Builds the model and the validation report, decode problems included.
    #[must_use]
    pub fn validate(self) -> (Model, ValidationReport) {
        validate::validate_with(self.config, self.problems)
    }

    /// Decodes one text (displayed as `name`) and adds it.
    pub fn add_text(&mut self, name: &str, text: &str) {
        let problems = self.config.decode_str(name, text);
        self.problems.extend(problems);
        self.files += 1;
    }

    /// Decodes bytes that should be UTF-8 text; bytes that are not become a decode problem.
    pub fn add_bytes(&mut self, name: &str, bytes: &[u8]) {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.add_text(name, text),
            Err(err) => {
                self.problems.push(not_utf8(name, &err));
                self.files += 1;
            }
        }
    }

    fn merge(&mut self, other: Loaded) {
        self.config.merge(other.config);
        self.problems.extend(other.problems);
        self.files += other.files;
    }
}

fn not_utf8(name: &str, err: &std::str::Utf8Error) -> DecodeError {
    DecodeError::Syntax {
        origin: Origin {
            path: Arc::from(name),
            document: 0,
            line: None,
        },
        message: format!(
            "failed to decode {name}: not UTF-8 text (invalid byte at offset {}); catalog files must be UTF-8 \
             YAML or JSON, list other files in .indexignore",
            err.valid_up_to()
        ),
    }
}

/// Loads a catalog from a directory (recursively) or a single file.
///
/// # Errors
/// [`Error::NotFound`] if `path` does not exist, and read errors naming the file.
pub fn load_path(path: &Path) -> Result<Loaded> {
    let meta = std::fs::metadata(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound {
                path: path.to_owned(),
            }
        } else {
            Error::Read {
                path: path.to_owned(),
                source,
            }
        }
    })?;
    if meta.is_dir() {
        dir::load_dir(path)
    } else {
        load_file(path)
    }
}

/// Loads a single catalog file.
///
/// # Errors
/// A read error naming the file.
pub fn load_file(path: &Path) -> Result<Loaded> {
    let bytes = std::fs::read(path).map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut loaded = Loaded::default();
    loaded.add_bytes(&path.display().to_string(), &bytes);
    Ok(loaded)
}

/// Loads a catalog from a reader (stdin), displayed as `name` in messages.
///
/// # Errors
/// [`Error::Stream`] when reading fails.
pub fn load_reader(name: &str, mut reader: impl Read) -> Result<Loaded> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).map_err(|source| Error::Stream {
        name: name.to_owned(),
        source,
    })?;
    let mut loaded = Loaded::default();
    loaded.add_bytes(name, &bytes);
    Ok(loaded)
}

/// Loads a catalog from text already in memory (tests, embedded catalogs).
#[must_use]
pub fn load_str(name: &str, text: &str) -> Loaded {
    let mut loaded = Loaded::default();
    loaded.add_text(name, text);
    loaded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_is_decoded_as_one_stream_named_as_given() {
        let text = "{\"schema\":\"olm.package\",\"name\":\"a\",\"defaultChannel\":\"s\"}\n{\"name\":\"x\"}";
        let loaded = load_reader("<stdin>", text.as_bytes()).unwrap();
        assert_eq!(loaded.config.packages.len(), 1);
        assert_eq!(loaded.problems.len(), 1);
        assert_eq!(loaded.problems[0].origin().path.as_ref(), "<stdin>");
        assert_eq!(loaded.problems[0].origin().document, 1);
    }

    #[test]
    fn bytes_that_are_not_utf8_become_a_decode_problem_naming_the_file() {
        let mut loaded = Loaded::default();
        loaded.add_bytes("logo.png", &[0x89, b'P', b'N', b'G', 0xff]);
        assert_eq!(loaded.files, 1);
        let message = loaded.problems[0].to_string();
        assert!(
            message.contains("failed to decode logo.png: not UTF-8 text"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_path_is_a_not_found_error_naming_it() {
        let err = load_path(Path::new("/nonexistent/catalog")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("catalog /nonexistent/catalog does not exist"),
            "{err}"
        );
    }
}
