//! source: reads catalogs and bundles from disk or stdin into the core's values (imperative shell).
//!
//! This is the only part of the catalog stack that touches the file system: `kubectl-olm`, the
//! controller's `--builtin-catalog DIR` and `kubectl-olm catalog render` read through it, and
//! the architecture test (`tests/it/architecture.rs`) keeps `std::fs` out of the core. It reads
//! bytes and hands text to [`crate::catalog::declcfg::DeclarativeConfig::decode_str`]; everything
//! after that is pure ([`crate::catalog::load`] links a catalog for the controller,
//! [`catalog::validate`](mod@crate::catalog::validate) checks one for the CLI). What opm does, and what we do:
//!
//! - a directory is walked recursively in sorted order (so results and messages are
//!   deterministic), and every regular file not ignored by a `.indexignore` is decoded, whatever its
//!   extension ([`walk`] documents the ignore rules; it is also the walker `build.rs` uses to
//!   embed `catalog/` into the controller). Hidden files are *not* skipped, as opm does not skip
//!   them; list them in `.indexignore` to leave them out;
//! - a single file is decoded the same way;
//! - `-` (or any reader) is read whole and decoded as one stream, displayed as `<stdin>`;
//! - a registry+v1 bundle directory is read into an in-memory file tree ([`bundle`]) for
//!   [`crate::bundle`] to parse.
//!
//! Files that cannot be decoded do not stop loading: their problems are returned in
//! [`Loaded::problems`] and end up in the validation report, next to the problems of the rest of
//! the catalog. Only I/O failures (a missing root, an unreadable file) are errors.

pub mod bundle;
pub mod dir;
pub mod walk;

use std::{
    io::Read,
    path::{Path, PathBuf},
    sync::Arc,
};

use crate::catalog::{
    declcfg::{Bundle, DeclarativeConfig, DecodeError, Origin},
    model::{Model, ParsedProperties},
    property,
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

impl From<walk::WalkError> for Error {
    fn from(err: walk::WalkError) -> Self {
        match err {
            walk::WalkError::ReadDir { path, source } => Error::ReadDir { path, source },
            walk::WalkError::Read { path, source } => Error::Read { path, source },
        }
    }
}

/// What was read: the blobs, the decode problems, and how many files were decoded.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every blob read, in file order.
    pub config: DeclarativeConfig,
    /// Documents that could not be decoded (reported, not fatal).
    pub problems: Vec<DecodeError>,
    /// Number of files decoded.
    pub files: usize,
    /// The YAML decoder texts are decoded with (the fast one unless a comparison asks otherwise).
    pub yaml: crate::codec::YamlDecoder,
}

impl Loaded {
    /// Builds the model and the validation report, decode problems included.
    #[must_use]
    pub fn validate(mut self) -> (Model, ValidationReport) {
        let parsed = parse_properties(&mut self.config.bundles);
        validate::validate_parsed(self.config, self.problems, parsed)
    }

    /// Decodes one text (displayed as `name`) and adds it.
    pub fn add_text(&mut self, name: &str, text: &str) {
        let problems = self.config.decode_str_with(self.yaml, name, text);
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

/// Types the properties of every bundle ([`property::parse`], the costliest step of building the
/// model) on all cores, in bundle order; each bundle's list is moved out.
fn parse_properties(bundles: &mut [Bundle]) -> Vec<ParsedProperties> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, 8);
    let take = |b: &mut Bundle| property::parse(std::mem::take(&mut b.properties));
    if threads == 1 || bundles.len() < 64 {
        return bundles.iter_mut().map(take).collect();
    }
    // Interleaved small chunks balance the load (bundle sizes vary by orders of magnitude).
    let chunk = 16;
    let chunks: Vec<&mut [Bundle]> = bundles.chunks_mut(chunk).collect();
    let count = chunks.len();
    let mut per_thread: Vec<Vec<(usize, &mut [Bundle])>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, c) in chunks.into_iter().enumerate() {
        if let Some(list) = per_thread.get_mut(i % threads) {
            list.push((i, c));
        }
    }
    let mut results: Vec<Option<Vec<ParsedProperties>>> = (0..count).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = per_thread
            .into_iter()
            .map(|list| {
                scope.spawn(move || {
                    list.into_iter()
                        .map(|(i, c)| (i, c.iter_mut().map(take).collect::<Vec<_>>()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            // A worker that panicked leaves its chunks unparsed; the model parses those itself.
            if let Ok(done) = handle.join() {
                for (i, parsed) in done {
                    if let Some(slot) = results.get_mut(i) {
                        *slot = Some(parsed);
                    }
                }
            }
        }
    });
    // Only a complete prefix can be handed over (a missing chunk means a worker panicked, which
    // parsing never does).
    let mut out = Vec::with_capacity(bundles.len());
    for slot in results {
        match slot {
            Some(parsed) => out.extend(parsed),
            None => break,
        }
    }
    out
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
    load_path_with(crate::codec::YamlDecoder::Fast, path)
}

/// [`load_path`] with the YAML decoder chosen (benchmarks compare the two; results are the same).
///
/// # Errors
/// As [`load_path`].
pub fn load_path_with(yaml: crate::codec::YamlDecoder, path: &Path) -> Result<Loaded> {
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
        dir::load_dir_with(yaml, path)
    } else {
        let mut loaded = Loaded {
            yaml,
            ..Loaded::default()
        };
        let bytes = std::fs::read(path).map_err(|source| Error::Read {
            path: path.to_owned(),
            source,
        })?;
        loaded.add_bytes(&path.display().to_string(), &bytes);
        Ok(loaded)
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
    fn typing_properties_on_all_cores_gives_the_same_model_and_report_as_the_serial_build() {
        let mut text = String::from("{\"schema\":\"olm.package\",\"name\":\"p\",\"defaultChannel\":\"s\"}\n");
        let names: Vec<String> = (0..150).map(|i| format!("p.v1.{i}.0")).collect();
        let entries: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, n)| match i {
                0 => format!("{{\"name\":\"{n}\"}}"),
                _ => format!("{{\"name\":\"{n}\",\"replaces\":\"{}\"}}", names[i - 1]),
            })
            .collect();
        text.push_str(&format!(
            "{{\"schema\":\"olm.channel\",\"package\":\"p\",\"name\":\"s\",\"entries\":[{}]}}\n",
            entries.join(",")
        ));
        for (i, n) in names.iter().enumerate() {
            // Every seventh bundle has a broken gvk, every eleventh a CSV metadata with a field of
            // the wrong type: their problems must be reported for the right bundle.
            let gvk = if i % 7 == 3 {
                "\"oops\""
            } else {
                "{\"group\":\"g\",\"kind\":\"K\",\"version\":\"v1\"}"
            };
            let meta = if i % 11 == 5 {
                "{\"keywords\":\"x\"}"
            } else {
                "{\"displayName\":\"P\",\"keywords\":[\"a\"]}"
            };
            text.push_str(&format!(
                "{{\"schema\":\"olm.bundle\",\"package\":\"p\",\"name\":\"{n}\",\"image\":\"quay.io/p/b:{i}\",\
                 \"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"p\",\"version\":\"1.{i}.0\"}}}},\
                 {{\"type\":\"olm.gvk\",\"value\":{gvk}}},{{\"type\":\"olm.csv.metadata\",\"value\":{meta}}}]}}\n"
            ));
        }
        let loaded = load_str("c.json", &text);
        let (serial_model, serial_report) =
            validate::validate_with(loaded.config.clone(), loaded.problems.clone());
        let (model, report) = loaded.validate();
        assert_eq!(report.to_string(), serial_report.to_string());
        let broken = (0..150).filter(|i| i % 7 == 3).count() + (0..150).filter(|i| i % 11 == 5).count();
        assert_eq!(report.len(), broken, "{report}");
        let pkg = model.package("p").unwrap();
        let serial_pkg = serial_model.package("p").unwrap();
        assert_eq!(pkg.bundles().len(), 150);
        for (a, b) in pkg.bundles().iter().zip(serial_pkg.bundles()) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.properties, b.properties, "{}", a.name);
        }
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
