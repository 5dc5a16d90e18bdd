//! The shared catalog cache (imperative shell: it only stores): the loaded catalog
//! ([`LoadedCatalog`]) of every healthy CatalogSource, keyed by (namespace, name) and tagged with
//! its origin ([`crate::catalog::load::CatalogOrigin`]: the ConfigMap `resourceVersion`, image
//! digest, registry or catalogd read), plus the built-in catalog.
//!
//! A catalog is loaded once per origin (the built-in catalog once per process) by the CatalogSource controller through the one catalog loader
//! ([`crate::catalog::load`], which also says what refuses a catalog), and shared by `Arc`: the
//! Subscription controller borrows the model for resolution ([`crate::resolve`]) and for planning
//! (a bundle's inlined objects stay base64 inside the model until
//! [`crate::catalog::model::Bundle::objects`] decodes the ones of the bundle being installed), and
//! never re-parses. A broken catalog is simply absent from the cache (its CatalogSource status
//! says why); it never hides another catalog.
//!
//! The built-in catalog is the repository's `catalog/` directory, embedded at build time
//! ([`EMBEDDED_BUILTIN`], chosen by `build.rs` with the same `.indexignore` rules as
//! [`crate::source`]), or the directory given with `--builtin-catalog`, read by
//! [`crate::source`].

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, RwLock},
};

pub use crate::catalog::load::LoadedCatalog;
use crate::{
    catalog::load::{self, LoadProblem, Refused},
    source,
};

pub use crate::catalog::load::{EMBEDDED_BUILTIN, embedded_builtin};

/// Why the `--builtin-catalog` directory could not be read (a catalog that is read but refused
/// is not an error here: [`CatalogCache::builtin`] reports it on every builtin CatalogSource).
#[derive(Debug, thiserror::Error)]
pub enum BuiltinDirError {
    /// The directory does not exist.
    #[error(
        "--builtin-catalog {} does not exist; pass the directory holding the catalog, or leave the flag out to serve the catalog embedded at build time",
        .path.display()
    )]
    NotFound {
        /// The directory given.
        path: std::path::PathBuf,
    },
    /// A file or directory under it could not be read.
    #[error(transparent)]
    Read(source::Error),
}

impl From<source::Error> for BuiltinDirError {
    fn from(err: source::Error) -> Self {
        match err {
            source::Error::NotFound { path } => BuiltinDirError::NotFound { path },
            other => BuiltinDirError::Read(other),
        }
    }
}

/// Loads a catalog directory as the built-in catalog, the way `kubectl-olm catalog validate`
/// reads it ([`source::load_path`]: `.indexignore` honoured, every file decoded).
///
/// # Errors
/// [`BuiltinDirError`] when the directory cannot be read; the inner [`Refused`] when its files do
/// not make a servable catalog.
pub fn builtin_from_dir(dir: &Path) -> Result<Result<LoadedCatalog, Refused>, BuiltinDirError> {
    let loaded = source::load_path(dir)?;
    let problems = loaded.problems.into_iter().map(LoadProblem::from).collect();
    Ok(load::link(loaded.config, problems, load::CatalogOrigin::Builtin))
}

/// Parsed catalogs by CatalogSource.
pub struct CatalogCache {
    entries: RwLock<HashMap<(String, String), Arc<LoadedCatalog>>>,
    builtin: Result<Arc<LoadedCatalog>, Refused>,
    /// `(namespace, name)` of every catalog stored ([`CatalogCache::loads`]).
    loads: tokio::sync::broadcast::Sender<(String, String)>,
}

/// How many announced loads a slow listener may fall behind before it misses some.
const LOAD_ANNOUNCEMENTS: usize = 256;

impl CatalogCache {
    /// A cache whose built-in catalog is the embedded one, or the files of `dir` when given.
    ///
    /// # Errors
    /// [`BuiltinDirError`] when `dir` cannot be read (a catalog that is refused is not an error
    /// here: [`CatalogCache::builtin`] reports it).
    pub fn new(dir: Option<&Path>) -> Result<Self, BuiltinDirError> {
        let builtin = match dir {
            Some(dir) => builtin_from_dir(dir)?,
            None => embedded_builtin(),
        };
        Ok(Self {
            entries: RwLock::default(),
            builtin: builtin.map(Arc::new),
            loads: tokio::sync::broadcast::channel(LOAD_ANNOUNCEMENTS).0,
        })
    }

    /// The built-in catalog, or why it cannot be served.
    pub fn builtin(&self) -> Result<Arc<LoadedCatalog>, Refused> {
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

    /// Stores (or replaces) a CatalogSource's catalog, and announces it ([`CatalogCache::loads`]).
    pub fn insert(&self, namespace: &str, name: &str, catalog: Arc<LoadedCatalog>) {
        let key = (namespace.to_owned(), name.to_owned());
        {
            let mut map = match self.entries.write() {
                Ok(m) => m,
                Err(p) => p.into_inner(),
            };
            map.insert(key.clone(), catalog);
        }
        // Nobody listening (tests, the CLI) is fine.
        let _ = self.loads.send(key);
    }

    /// `(namespace, name)` of each catalog stored from now on. A load does not always change
    /// the CatalogSource's status (after a restart or a leader change the cache starts empty
    /// while the CatalogSource already says `READY`), so the Subscriptions that wait for a
    /// catalog are woken by this, not by the CatalogSource's watch. A listener more than
    /// [`LOAD_ANNOUNCEMENTS`] behind skips the oldest; their Subscriptions are retried by their
    /// own requeue.
    pub fn loads(&self) -> impl futures::Stream<Item = (String, String)> + Send + 'static {
        futures::stream::unfold(self.loads.subscribe(), |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(key) => return Some((key, rx)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_catalog_stored_is_announced_to_each_listener_from_then_on() {
        use futures::StreamExt;
        let cache = CatalogCache::new(None).unwrap();
        let builtin = cache.builtin().unwrap();
        cache.insert("olm", "before", Arc::clone(&builtin));
        let (mut first, mut second) = (Box::pin(cache.loads()), Box::pin(cache.loads()));
        cache.insert("olm", "ops", Arc::clone(&builtin));
        cache.insert("team-a", "mine", builtin);
        for loads in [&mut first, &mut second] {
            assert_eq!(loads.next().await, Some(("olm".to_owned(), "ops".to_owned())));
            assert_eq!(loads.next().await, Some(("team-a".to_owned(), "mine".to_owned())));
        }
    }

    #[test]
    fn the_embedded_builtin_catalog_is_the_shipped_one_with_redis_operator_and_its_channels() {
        assert!(!EMBEDDED_BUILTIN.is_empty());
        let cache = CatalogCache::new(None).unwrap();
        let builtin = cache.builtin().unwrap();
        assert_eq!(builtin.origin, load::CatalogOrigin::Builtin);
        assert!(builtin.problems.is_empty(), "{:?}", builtin.problems);
        let package = builtin
            .model
            .package("redis-operator")
            .expect("redis-operator package");
        let mut channels: Vec<&str> = package.channels().iter().map(|c| c.name.as_str()).collect();
        channels.sort_unstable();
        assert_eq!(channels, ["alpha", "candidate", "stable"]);
        let stable = package.default_channel().expect("a default channel");
        assert_eq!(stable.name, "stable");
        let head = stable.head().expect("a head");
        assert!(package.bundles().iter().any(|b| b.name == head), "{head}");
    }

    #[test]
    fn the_embedded_files_are_the_ones_the_walker_lists_in_catalog() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog");
        let listed: Vec<String> = source::walk::list_files(&root)
            .unwrap()
            .into_iter()
            .map(|rel| format!("catalog/{rel}"))
            .collect();
        let embedded: Vec<&str> = EMBEDDED_BUILTIN.iter().map(|(path, _)| *path).collect();
        assert_eq!(embedded, listed);
        for (path, text) in EMBEDDED_BUILTIN {
            let on_disk = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
            assert_eq!(*text, on_disk, "{path}");
        }
    }

    /// A package: its name, its channels with their entries, its bundle names.
    type Served = (String, Vec<(String, Vec<String>)>, Vec<String>);

    /// What a catalog serves, whatever the paths its blobs were read from.
    fn served(model: &crate::catalog::Model) -> Vec<Served> {
        model
            .packages()
            .map(|p| {
                let channels = p
                    .channels()
                    .iter()
                    .map(|c| (c.name.clone(), c.entries.iter().map(|e| e.name.clone()).collect()))
                    .collect();
                let bundles = p.bundles().iter().map(|b| b.name.clone()).collect();
                (p.name.clone(), channels, bundles)
            })
            .collect()
    }

    #[test]
    fn a_catalog_directory_with_indexignored_files_loads_the_same_in_the_cli_the_controller_and_the_embedding()
     {
        // README.md, scratch/broken.yaml and etcd/bundles/drafts.json are .indexignore'd; the
        // last two would refuse the catalog if they were read.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/catalogs/valid/mixed-files-with-indexignore");
        // `kubectl-olm catalog validate DIR`.
        let (cli, report) = source::load_path(&dir).unwrap().validate();
        assert!(report.passed(), "{report}");
        // `olm-controller run --builtin-catalog DIR`.
        let controller = CatalogCache::new(Some(&dir)).unwrap().builtin().unwrap();
        assert!(controller.problems.is_empty(), "{:?}", controller.problems);
        // The embedding: build.rs lists the files with the same walker and embeds their texts.
        let files: Vec<(String, String)> = source::walk::list_files(&dir)
            .unwrap()
            .into_iter()
            .map(|rel| {
                let text = std::fs::read_to_string(dir.join(&rel)).unwrap();
                (rel, text)
            })
            .collect();
        assert!(
            files
                .iter()
                .all(|(rel, _)| !rel.contains("drafts") && !rel.contains("scratch"))
        );
        let embedded = load::load_texts(
            files.iter().map(|(p, t)| (p.as_str(), t.as_str())),
            load::CatalogOrigin::Builtin,
        )
        .unwrap();
        assert!(!served(&cli).is_empty());
        assert_eq!(served(&controller.model), served(&cli));
        assert_eq!(served(&embedded.model), served(&cli));
    }

    #[test]
    fn a_missing_builtin_directory_is_an_error_naming_it() {
        let Err(err) = CatalogCache::new(Some(Path::new("/nonexistent/catalog"))) else {
            panic!("a missing directory must fail")
        };
        assert!(
            err.to_string()
                .starts_with("--builtin-catalog /nonexistent/catalog does not exist"),
            "{err}"
        );
    }
}
