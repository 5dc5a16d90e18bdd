//! The shared catalog cache: the parsed catalog model ([`crate::catalog::Model`]) of every
//! healthy CatalogSource, keyed by (namespace, name) and tagged with the ConfigMap
//! `resourceVersion` it was built from.
//!
//! A catalog is decoded and linked once per ConfigMap `resourceVersion` (the built-in catalog
//! once per process) by the CatalogSource controller, and shared by `Arc`: the Subscription
//! controller borrows the model for resolution ([`crate::resolve`]) and for planning (a bundle's
//! inlined objects stay base64 inside the model until [`crate::catalog::model::Bundle::objects`]
//! decodes the ones of the bundle being installed), and never re-parses. A broken catalog is
//! simply absent from the cache (its CatalogSource status says why); it never hides another
//! catalog.
//!
//! What makes a catalog broken here is deliberately narrow, as before: a document that is not
//! JSON/YAML, a document that is not a catalog blob (no `schema`, a field of the wrong type), or
//! a catalog without any `olm.package`. Referential problems the model builder meets (a channel
//! entry without its bundle, ...) leave that corner out of the model but do not refuse the whole
//! catalog, so one bad package never blocks the others; they are kept with the catalog
//! ([`LoadedCatalog::problems`]) and reported on the CatalogSource's status and in a Warning Event.

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, RwLock},
};

use serde_json::Value;

use crate::catalog::{DeclarativeConfig, Model, declcfg::Origin};

/// One loaded catalog: its linked model and the version it was built from.
#[derive(Debug, Clone)]
pub struct LoadedCatalog {
    /// The ConfigMap resourceVersion (or `builtin`) the catalog was read from.
    pub resource_version: String,
    /// The linked catalog (packages → channels → bundles).
    pub model: Model,
    /// What the model builder had to leave out (a channel entry without its bundle, ...), one
    /// line each naming the package, channel or bundle: shown on the CatalogSource's status so a
    /// partly broken catalog is never served silently.
    pub problems: Vec<String>,
}

/// The key of the built-in catalog in the cache's resource-version field.
pub const BUILTIN_VERSION: &str = "builtin";

/// The built-in catalog shipped in the repository's `catalog/` directory, embedded at build time.
pub const EMBEDDED_BUILTIN: &[(&str, &str)] = &[];

/// Parsed catalogs by CatalogSource.
pub struct CatalogCache {
    entries: RwLock<HashMap<(String, String), Arc<LoadedCatalog>>>,
    builtin: Result<Arc<LoadedCatalog>, Vec<String>>,
}

impl CatalogCache {
    /// A cache whose built-in catalog is the embedded one, or the files of `dir` when given.
    pub fn new(dir: Option<&Path>) -> std::io::Result<Self> {
        let files = match dir {
            Some(dir) => read_dir_files(dir)?,
            None => EMBEDDED_BUILTIN
                .iter()
                .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
                .collect(),
        };
        let builtin = load_files(&files, BUILTIN_VERSION);
        Ok(Self {
            entries: RwLock::default(),
            builtin: builtin.map(Arc::new),
        })
    }

    /// The built-in catalog, or why it cannot be served.
    pub fn builtin(&self) -> Result<Arc<LoadedCatalog>, Vec<String>> {
        self.builtin.clone()
    }

    /// The cached catalog of a CatalogSource.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<LoadedCatalog>> {
        let map = match self.entries.read() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        map.get(&(namespace.to_owned(), name.to_owned())).cloned()
    }

    /// Stores (or replaces) a CatalogSource's catalog.
    pub fn insert(&self, namespace: &str, name: &str, catalog: Arc<LoadedCatalog>) {
        let mut map = match self.entries.write() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        map.insert((namespace.to_owned(), name.to_owned()), catalog);
    }

    /// Drops a CatalogSource's catalog (it became invalid or was deleted).
    pub fn remove(&self, namespace: &str, name: &str) {
        let mut map = match self.entries.write() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        map.remove(&(namespace.to_owned(), name.to_owned()));
    }
}

fn read_dir_files(dir: &Path) -> std::io::Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push((path.display().to_string(), std::fs::read_to_string(&path)?));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Decodes every file (a stream of YAML or JSON documents) and builds the catalog; returns the
/// problems when any document fails or the result has no package.
pub fn load_files(files: &[(String, String)], resource_version: &str) -> Result<LoadedCatalog, Vec<String>> {
    let mut documents = Vec::new();
    let mut problems = Vec::new();
    for (path, text) in files {
        match crate::controller::catalog_source::decode_documents(path, text) {
            Ok(docs) => documents.extend(
                docs.into_iter()
                    .enumerate()
                    .map(|(i, doc)| (Origin::new(path, i + 1), doc)),
            ),
            Err(err) => problems.push(err),
        }
    }
    finish(documents, problems, resource_version)
}

/// Builds the catalog model from decoded documents (each with where it came from). A document
/// that is not a catalog blob (no `schema`, a field of the wrong type) or a catalog without any
/// `olm.package` is refused with the problems named, as are the `problems` passed in.
pub fn finish(
    documents: Vec<(Origin, Value)>,
    mut problems: Vec<String>,
    resource_version: &str,
) -> Result<LoadedCatalog, Vec<String>> {
    let mut cfg = DeclarativeConfig::default();
    for (origin, document) in documents {
        if let Err(err) = cfg.add_value(origin, document) {
            problems.push(err.to_string());
        }
    }
    if cfg.packages.is_empty() {
        problems.push("the catalog has no olm.package document".into());
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let (model, left_out) = Model::build(cfg);
    Ok(LoadedCatalog {
        resource_version: resource_version.to_owned(),
        model,
        problems: left_out.iter().map(ToString::to_string).collect(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn doc(i: usize, v: Value) -> (Origin, Value) {
        (Origin::new("catalog.json", i), v)
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
            "42",
        )
        .unwrap();
        assert_eq!(loaded.resource_version, "42");
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        let package = loaded.model.package("a").unwrap();
        assert_eq!(package.default_channel().and_then(|c| c.head()), Some("a.v1"));
    }

    #[test]
    fn a_blob_without_schema_or_a_catalog_without_package_is_refused_with_the_reason() {
        let problems = finish(vec![doc(1, json!({"name": "x"}))], Vec::new(), "1").unwrap_err();
        assert!(problems.iter().any(|p| p.contains("schema")), "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("no olm.package")),
            "{problems:?}"
        );
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
            "7",
        )
        .unwrap();
        assert!(loaded.model.package("a").is_some());
        assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
        assert!(loaded.problems[0].contains("a.v2"), "{:?}", loaded.problems);
    }

    #[test]
    fn problems_met_while_decoding_refuse_the_catalog() {
        let problems = finish(
            vec![doc(1, json!({"schema": "olm.package", "name": "a"}))],
            vec!["catalog.json: bad".to_owned()],
            "1",
        )
        .unwrap_err();
        assert_eq!(problems, ["catalog.json: bad"]);
    }
}
