//! load: the one catalog loader, from texts (files, ConfigMap keys, the embedded catalog) to a
//! linked [`Model`] that may be served, or the reasons it may not.
//!
//! # The rule
//!
//! Every way a catalog reaches the controller goes through here: the files of a directory (read
//! by [`crate::source`], which applies `.indexignore` the same way for `kubectl-olm`, for
//! `olm-controller run --builtin-catalog DIR` and for the catalog embedded at build time), and the
//! data of a ConfigMap (FBC keys, plus upstream's legacy `packages` / `clusterServiceVersions` /
//! `customResourceDefinitions` keys converted by [`super::legacy`]). Texts are decoded by
//! [`DeclarativeConfig::decode_str`], the decoder `kubectl-olm catalog validate` uses, so a
//! catalog loads the same in the CLI and in the controller.
//!
//! What refuses a catalog is deliberately narrow: a document that is not JSON/YAML, a document
//! that is not a catalog blob (no `schema`, a field of the wrong type), a legacy key that cannot
//! be converted, or a catalog without any `olm.package` ([`LoadProblem`], collected in
//! [`Refused`]). Referential problems the model builder meets (a channel entry without its
//! bundle, ...) leave that corner out of the model but do not refuse the whole catalog, so one bad
//! package never blocks the others; they are kept with the catalog ([`LoadedCatalog::problems`])
//! for the CatalogSource's status. The full `opm validate` rule set is [`validate`](mod@super::validate)'s job.
//!
//! Everything here is pure: no file system, no clock, no client.

use std::{collections::BTreeMap, fmt};

use serde_json::Value;

use super::{
    DeclarativeConfig, Model,
    declcfg::{DecodeError, Origin},
    legacy,
};

/// One loaded catalog: its linked model and the version it was built from.
#[derive(Debug, Clone)]
pub struct LoadedCatalog {
    /// Where the catalog was read from, and which version of it.
    pub origin: CatalogOrigin,
    /// The linked catalog (packages → channels → bundles).
    pub model: Model,
    /// What the model builder had to leave out (a channel entry without its bundle, ...), one
    /// line each naming the package, channel or bundle: shown on the CatalogSource's status so a
    /// partly broken catalog is never served silently.
    pub problems: Vec<String>,
}

/// Where a loaded catalog came from and which version of it: what decides whether the catalog
/// cached for a CatalogSource is still the one to serve, and when it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogOrigin {
    /// The catalog built into the controller (or its `--builtin-catalog` directory).
    Builtin,
    /// A ConfigMap, at this resourceVersion.
    ConfigMap {
        /// The ConfigMap's resourceVersion.
        resource_version: String,
    },
    /// A catalog image, at this manifest digest.
    Image {
        /// `sha256:...`.
        digest: String,
    },
    /// A registry gRPC API at `address`, read at `read_at` (Unix seconds).
    Registry {
        /// `HOST:PORT`.
        address: String,
        /// When it was read.
        read_at: i64,
    },
    /// A catalogd HTTP API at `url`, read at `read_at` (Unix seconds), with the server's
    /// `Last-Modified`.
    Http {
        /// The base URL.
        url: String,
        /// When it was read.
        read_at: i64,
        /// The server's `Last-Modified`, sent back as `If-Modified-Since`.
        last_modified: Option<String>,
    },
}

impl CatalogOrigin {
    /// When the catalog was read from the registry at `address` (`None`: not from there).
    pub fn registry_read_at(&self, address: &str) -> Option<i64> {
        match self {
            Self::Registry { address: a, read_at } if a == address => Some(*read_at),
            _ => None,
        }
    }

    /// When the catalog was read from the catalogd server at `url`, and its `Last-Modified`
    /// (`None`: not from there).
    pub fn http_read(&self, url: &str) -> Option<(i64, Option<&str>)> {
        match self {
            Self::Http {
                url: u,
                read_at,
                last_modified,
            } if u == url => Some((*read_at, last_modified.as_deref())),
            _ => None,
        }
    }
}

/// One reason a catalog is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadProblem {
    /// A file or ConfigMap key is not YAML/JSON, or one of its documents is not a catalog blob.
    #[error("{}", blob_message(.0))]
    Decode(#[from] DecodeError),
    /// A legacy ConfigMap key is not YAML/JSON.
    #[error("{key}: {message}")]
    LegacyDecode {
        /// The ConfigMap data key.
        key: String,
        /// The decoder's message, with the position.
        message: String,
    },
    /// The legacy keys could not be converted to FBC ([`legacy::convert`]).
    #[error("{0}")]
    LegacyConvert(String),
    /// Nothing to serve.
    #[error("the catalog has no olm.package document")]
    NoPackage,
}

/// Syntax errors are prefixed with the file or key they stopped decoding (the decoder's message
/// names the position); the other decode problems name their document already.
fn blob_message(err: &DecodeError) -> String {
    match err {
        DecodeError::Syntax { origin, message } => format!("{}: {message}", origin.path),
        other => other.to_string(),
    }
}

/// Why a catalog is refused: every problem met, in the order met. Displayed as a summary (the
/// first three and a count of the rest), the form a status message shows.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", summarise(&self.problems))]
pub struct Refused {
    /// Every problem, in order.
    pub problems: Vec<LoadProblem>,
}

/// Summarises problems for a status message: the first three and a count of the rest.
pub fn summarise<T: fmt::Display>(problems: &[T]) -> String {
    let mut text = problems
        .iter()
        .take(3)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if problems.len() > 3 {
        text.push_str(&format!("; and {} more", problems.len() - 3));
    }
    text
}

/// Decodes every text (a stream of YAML or JSON documents, named by its path) and links the
/// catalog.
///
/// # Errors
/// [`Refused`] when a document fails to decode or the catalog has no package.
pub fn load_texts<'a>(
    texts: impl IntoIterator<Item = (&'a str, &'a str)>,
    origin: CatalogOrigin,
) -> Result<LoadedCatalog, Refused> {
    let mut cfg = DeclarativeConfig::default();
    let mut problems = Vec::new();
    for (path, text) in texts {
        problems.extend(cfg.decode_str(path, text).into_iter().map(LoadProblem::from));
    }
    link(cfg, problems, origin)
}

/// Links decoded blobs into a model. The catalog is refused when `problems` (met while decoding)
/// is not empty or there is no package.
///
/// # Errors
/// [`Refused`] with every problem.
pub fn link(
    cfg: DeclarativeConfig,
    mut problems: Vec<LoadProblem>,
    origin: CatalogOrigin,
) -> Result<LoadedCatalog, Refused> {
    if cfg.packages.is_empty() {
        problems.push(LoadProblem::NoPackage);
    }
    if !problems.is_empty() {
        return Err(Refused { problems });
    }
    let (model, left_out) = Model::build(cfg);
    Ok(LoadedCatalog {
        origin,
        model,
        problems: left_out.iter().map(ToString::to_string).collect(),
    })
}

/// Adds decoded documents (each with where it came from) and links the catalog; see [`link`].
///
/// # Errors
/// [`Refused`] when a document is not a catalog blob, `problems` is not empty, or there is no
/// package.
pub fn finish(
    documents: Vec<(Origin, Value)>,
    mut problems: Vec<LoadProblem>,
    origin: CatalogOrigin,
) -> Result<LoadedCatalog, Refused> {
    let mut cfg = DeclarativeConfig::default();
    for (origin, document) in documents {
        if let Err(err) = cfg.add_value(origin, document) {
            problems.push(err.into());
        }
    }
    link(cfg, problems, origin)
}

fn as_list(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        other => vec![other],
    }
}

/// Turns a ConfigMap's data into a catalog: FBC keys decoded as document streams, the legacy
/// keys converted through [`legacy`].
///
/// # Errors
/// [`Refused`] with every problem (the key and the position of a syntax error, the document of a
/// bad blob, what the legacy conversion could not convert).
pub fn catalog_from_data(
    data: &BTreeMap<String, String>,
    origin: CatalogOrigin,
) -> Result<LoadedCatalog, Refused> {
    let mut cfg = DeclarativeConfig::default();
    let mut problems = Vec::new();
    let mut legacy: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (key, text) in data {
        if legacy::is_legacy_key(key) {
            let decoded = crate::codec::decode_documents(key, text);
            match decoded.error {
                Some(err) => problems.push(LoadProblem::LegacyDecode {
                    key: key.clone(),
                    message: err.to_string(),
                }),
                None => legacy
                    .entry(key.as_str())
                    .or_default()
                    .extend(decoded.documents.into_iter().flat_map(|d| as_list(d.value))),
            }
        } else {
            problems.extend(cfg.decode_str(key, text).into_iter().map(LoadProblem::from));
        }
    }
    if !legacy.is_empty() {
        let get = |k: &str| legacy.get(k).cloned().unwrap_or_default();
        let converted = legacy::convert(
            &get(legacy::KEY_PACKAGES),
            &get(legacy::KEY_CSVS),
            &get(legacy::KEY_CRDS),
        );
        for (i, doc) in converted.blobs.into_iter().enumerate() {
            if let Err(err) = cfg.add_value(Origin::new("packages/clusterServiceVersions", i + 1), doc) {
                problems.push(err.into());
            }
        }
        problems.extend(converted.problems.into_iter().map(LoadProblem::LegacyConvert));
    }
    link(cfg, problems, origin)
}

/// The built-in catalog shipped in the repository's `catalog/` directory, embedded at build time:
/// (path relative to the repository, text) of every file `build.rs` found there, in the walker's
/// sorted order, `.indexignore`d files left out. Text compiled in, so reading it is no I/O: the
/// controller serves it, and the CLI and the console read a `builtin` CatalogSource from it.
pub const EMBEDDED_BUILTIN: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/builtin_catalog.rs"));

/// Loads the embedded built-in catalog.
///
/// # Errors
/// [`Refused`] when the embedded files do not make a servable catalog.
pub fn embedded_builtin() -> Result<LoadedCatalog, Refused> {
    load_texts(EMBEDDED_BUILTIN.iter().copied(), CatalogOrigin::Builtin)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cm(version: &str) -> CatalogOrigin {
        CatalogOrigin::ConfigMap {
            resource_version: version.to_owned(),
        }
    }

    fn doc(i: usize, v: Value) -> (Origin, Value) {
        (Origin::new("catalog.json", i), v)
    }

    fn messages(refused: &Refused) -> Vec<String> {
        refused.problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn documents_become_a_linked_model_tagged_with_their_version() {
        let loaded = finish(
            vec![
                doc(1, json!({"schema": "olm.package", "name": "a", "defaultChannel": "s"})),
                doc(2, json!({"schema": "olm.channel", "package": "a", "name": "s", "entries": [{"name": "a.v1"}]})),
                doc(3, json!({"schema": "olm.bundle", "package": "a", "name": "a.v1", "image": "",
                    "properties": [{"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}]})),
            ],
            Vec::new(),
            cm("42"),
        )
        .unwrap();
        assert_eq!(loaded.origin, cm("42"));
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        let package = loaded.model.package("a").unwrap();
        assert_eq!(package.default_channel().and_then(|c| c.head()), Some("a.v1"));
    }

    #[test]
    fn a_blob_without_schema_or_a_catalog_without_package_is_refused_with_the_reason() {
        let refused = finish(vec![doc(1, json!({"name": "x"}))], Vec::new(), cm("1")).unwrap_err();
        let problems = messages(&refused);
        assert!(problems.iter().any(|p| p.contains("schema")), "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("no olm.package")),
            "{problems:?}"
        );
        assert_eq!(refused.problems.last(), Some(&LoadProblem::NoPackage));
    }

    #[test]
    fn a_channel_entry_without_its_bundle_is_left_out_and_named_but_the_rest_is_served() {
        let loaded = finish(
            vec![
                doc(1, json!({"schema": "olm.package", "name": "a", "defaultChannel": "s"})),
                doc(2, json!({"schema": "olm.channel", "package": "a", "name": "s",
                    "entries": [{"name": "a.v1"}, {"name": "a.v2", "replaces": "a.v1"}]})),
                doc(3, json!({"schema": "olm.bundle", "package": "a", "name": "a.v1", "image": "",
                    "properties": [{"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}]})),
            ],
            Vec::new(),
            cm("7"),
        )
        .unwrap();
        assert!(loaded.model.package("a").is_some());
        assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
        assert!(loaded.problems[0].contains("a.v2"), "{:?}", loaded.problems);
    }

    #[test]
    fn problems_met_while_decoding_refuse_the_catalog() {
        let refused = finish(
            vec![doc(1, json!({"schema": "olm.package", "name": "a"}))],
            vec![LoadProblem::LegacyConvert("catalog.json: bad".to_owned())],
            cm("1"),
        )
        .unwrap_err();
        assert_eq!(messages(&refused), ["catalog.json: bad"]);
    }

    #[test]
    fn a_config_map_with_fbc_and_legacy_keys_becomes_one_catalog() {
        let mut data = BTreeMap::new();
        data.insert(
            "catalog.json".to_owned(),
            r#"{"schema":"olm.package","name":"a"} {"schema":"olm.channel","package":"a","name":"s","entries":[]}"#.to_owned(),
        );
        data.insert(
            "packages".to_owned(),
            r#"[{"packageName":"b","channels":[]}]"#.to_owned(),
        );
        let catalog = catalog_from_data(&data, cm("7")).unwrap();
        assert_eq!(catalog.origin, cm("7"));
        let names: Vec<&str> = catalog.model.packages().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(catalog.model.package("a").map(|p| p.channels().len()), Some(1));
    }

    #[test]
    fn an_unparsable_config_map_names_the_key_and_the_problem() {
        for key in ["catalog.json", "packages"] {
            let mut data = BTreeMap::new();
            data.insert(key.to_owned(), "{not json".to_owned());
            let refused = catalog_from_data(&data, cm("1")).unwrap_err();
            let problems = messages(&refused);
            assert!(problems[0].starts_with(&format!("{key}:")), "{problems:?}");
            assert!(problems[0].contains("failed to parse JSON"), "{problems:?}");
            assert!(refused.to_string().contains(key));
        }
    }

    #[test]
    fn yaml_documents_are_decoded_too() {
        let loaded = load_texts(
            [(
                "c.yaml",
                "schema: olm.package\nname: a\n---\nschema: olm.package\nname: b\n",
            )],
            cm("1"),
        )
        .unwrap();
        let names: Vec<&str> = loaded.model.packages().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn long_problem_lists_are_summarised() {
        let problems: Vec<String> = (1..=5).map(|i| format!("p{i}")).collect();
        assert_eq!(summarise(&problems), "p1; p2; p3; and 2 more");
        let refused = Refused {
            problems: (1..=5)
                .map(|i| LoadProblem::LegacyConvert(format!("p{i}")))
                .collect(),
        };
        assert_eq!(refused.to_string(), "p1; p2; p3; and 2 more");
    }
}
