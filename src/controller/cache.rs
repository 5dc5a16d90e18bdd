//! The shared catalog cache: the parsed content of every healthy CatalogSource, keyed by
//! (namespace, name) and tagged with the ConfigMap `resourceVersion` it was read from, so the
//! Subscription controller resolves without re-parsing and the CatalogSource controller
//! re-parses only when the ConfigMap changed. A broken catalog is simply absent from the
//! cache (its CatalogSource status says why); it never hides another catalog.

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, RwLock},
};

use serde_json::Value;

/// One loaded catalog: its FBC blobs and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedCatalog {
    /// The ConfigMap resourceVersion (or `builtin`) the blobs were read from.
    pub resource_version: String,
    /// The FBC blobs (`olm.package`, `olm.channel`, `olm.bundle`, ...).
    pub blobs: Vec<Value>,
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

/// Decodes every file (a stream of YAML or JSON documents) into blobs; returns the problems
/// when any document fails or the result has no package.
pub fn load_files(files: &[(String, String)], resource_version: &str) -> Result<LoadedCatalog, Vec<String>> {
    let mut blobs = Vec::new();
    let mut problems = Vec::new();
    for (path, text) in files {
        match crate::controller::catalog_source::decode_documents(path, text) {
            Ok(docs) => blobs.extend(docs),
            Err(err) => problems.push(err),
        }
    }
    finish(blobs, problems, resource_version)
}

/// Checks the decoded blobs; a catalog without any `olm.package` or with blobs lacking a
/// `schema` is refused with the problems named.
pub fn finish(
    blobs: Vec<Value>,
    mut problems: Vec<String>,
    resource_version: &str,
) -> Result<LoadedCatalog, Vec<String>> {
    for (i, blob) in blobs.iter().enumerate() {
        if blob.get("schema").and_then(Value::as_str).is_none() {
            problems.push(format!("document {} has no `schema` field", i + 1));
        }
    }
    if !blobs
        .iter()
        .any(|b| b.get("schema").and_then(Value::as_str) == Some("olm.package"))
    {
        problems.push("the catalog has no olm.package document".into());
    }
    if problems.is_empty() {
        Ok(LoadedCatalog {
            resource_version: resource_version.to_owned(),
            blobs,
        })
    } else {
        Err(problems)
    }
}
