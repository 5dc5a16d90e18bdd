//! serve: `olm-controller run --serve-grpc NAMESPACE/NAME=ADDR --serve-http ADDR` exposes the
//! catalogs the controller has loaded (its [`cache`](super::cache)) on the wire, with the servers
//! of `kubectl-olm catalog serve` ([`crate::grpc::server`], [`crate::catalogd::server`]), so one
//! process replaces a registry pod per catalog. Imperative shell: it only looks catalogs up.
//!
//! # What is served where
//!
//! - **gRPC**, one CatalogSource per port (`--serve-grpc NAMESPACE/NAME=ADDR`, repeatable): the
//!   registry API has no catalog selector in its requests, and upstream's clients (OLM's
//!   catalog-operator reading a CatalogSource `spec.address`, `opm`, `grpcurl`) expect one catalog
//!   behind an address, as one registry pod serves one. The health service answers `SERVING`;
//!   the registry answers `UNAVAILABLE` (naming the CatalogSource) while the catalog is not loaded.
//! - **HTTP**, every CatalogSource on one port (`--serve-http ADDR`): catalogd serves many
//!   catalogs on one port under `/catalogs/NAME/api/v1/...`, so a CatalogSource is at
//!   `/catalogs/NAMESPACE/NAME/api/v1/{all,metas}`, and one of the global catalog namespace also at
//!   `/catalogs/NAME/api/v1/...` ([`crate::catalogd::route::route_catalogs`]). Unknown or refused
//!   catalogs are `404`.
//!
//! Every request is answered from the catalog cached at that moment: a reloaded catalog is
//! served from the next request on. The gRPC index shares the cached model; the HTTP body is
//! written from the model ([`crate::catalog::Model::to_config`], so blobs of other schemas are not
//! served) on the first request after a (re)load, then kept until the catalog changes; that
//! build runs on the blocking pool (as every HTTP request is routed, see
//! [`crate::catalogd::server::Routes`]) and holds only its own catalog's slot, so requests for
//! other catalogs are not held up. A catalog
//! whose channels cannot be indexed (no single head) is served without them, with a warning
//! naming them, as resolution ignores them.
//!
//! The servers start with the controllers (so only on the leader with `--leader-elect`) and stop
//! with them: on shutdown they stop accepting and drain the requests in flight.

use std::{
    collections::HashMap,
    net::SocketAddr,
    str::FromStr,
    sync::{Arc, Mutex},
    time::SystemTime,
};

use crate::{
    catalog::load::LoadedCatalog,
    catalogd::{self, Content, route::Catalogs},
    grpc::{self, Registry},
};

use super::{cache::CatalogCache, lock};

/// One `--serve-grpc NAMESPACE/NAME=ADDR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcTarget {
    /// The CatalogSource's namespace.
    pub namespace: String,
    /// The CatalogSource's name.
    pub name: String,
    /// Where to listen.
    pub addr: SocketAddr,
}

impl FromStr for GrpcTarget {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let usage = || {
            format!(
                "{text:?}: expected NAMESPACE/NAME=ADDR, the CatalogSource and the address to serve it on, e.g. olm/operatorhub=0.0.0.0:50051"
            )
        };
        let (source, addr) = text.split_once('=').ok_or_else(usage)?;
        let (namespace, name) = source.split_once('/').ok_or_else(usage)?;
        if namespace.is_empty() || name.is_empty() || name.contains('/') {
            return Err(usage());
        }
        let addr = addr
            .parse()
            .map_err(|e| format!("{text:?}: address {addr:?} is not IP:PORT ({e}), e.g. 0.0.0.0:50051"))?;
        Ok(Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            addr,
        })
    }
}

/// What was built from one cached catalog, kept until the cache holds another one.
type Built<T> = (Arc<LoadedCatalog>, Arc<T>);

/// Where one catalog's HTTP body is kept.
type BodySlot = Mutex<Option<Built<Content>>>;

/// The built value for `catalog`, from `slot` when it was built from this very catalog.
fn memoized<T>(
    slot: &mut Option<Built<T>>,
    catalog: Arc<LoadedCatalog>,
    build: impl FnOnce(&Arc<LoadedCatalog>) -> T,
) -> Arc<T> {
    if let Some((from, built)) = slot.as_ref()
        && Arc::ptr_eq(from, &catalog)
    {
        return Arc::clone(built);
    }
    let built = Arc::new(build(&catalog));
    *slot = Some((catalog, Arc::clone(&built)));
    built
}

/// One CatalogSource on the registry gRPC API.
pub struct CachedRegistry {
    cache: Arc<CatalogCache>,
    namespace: String,
    name: String,
    built: Mutex<Option<Built<Registry>>>,
}

impl CachedRegistry {
    /// Serves CatalogSource `namespace/name` of `cache`.
    #[must_use]
    pub fn new(cache: Arc<CatalogCache>, namespace: &str, name: &str) -> Self {
        Self {
            cache,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            built: Mutex::default(),
        }
    }
}

impl grpc::Source for CachedRegistry {
    fn registry(&self) -> Result<Arc<Registry>, String> {
        let (ns, name) = (&self.namespace, &self.name);
        let Some(catalog) = self.cache.get(ns, name) else {
            return Err(format!(
                "CatalogSource {ns}/{name} has no catalog loaded; see its status (kubectl get catalogsource -n {ns} {name} -o yaml)"
            ));
        };
        Ok(memoized(&mut lock(&self.built), catalog, |catalog| {
            let (registry, skipped) = Registry::shared(Arc::clone(catalog));
            for problem in &skipped {
                tracing::warn!(catalogsource = %format!("{ns}/{name}"), "serving over gRPC without a broken part: {problem}");
            }
            registry
        }))
    }
}

/// Every CatalogSource on the catalogd HTTP API.
pub struct CachedContents {
    cache: Arc<CatalogCache>,
    global_namespace: String,
    /// One slot per CatalogSource, locked while its body is built (concurrent first requests
    /// wait for that one build instead of repeating it).
    built: Mutex<HashMap<(String, String), Arc<BodySlot>>>,
}

impl CachedContents {
    /// Serves every catalog of `cache`.
    #[must_use]
    pub fn new(cache: Arc<CatalogCache>, global_namespace: &str) -> Self {
        Self {
            cache,
            global_namespace: global_namespace.to_owned(),
            built: Mutex::default(),
        }
    }
}

impl Catalogs for CachedContents {
    fn global_namespace(&self) -> &str {
        &self.global_namespace
    }

    fn content(&self, namespace: &str, name: &str) -> Option<Arc<Content>> {
        let key = (namespace.to_owned(), name.to_owned());
        let Some(catalog) = self.cache.get(namespace, name) else {
            lock(&self.built).remove(&key);
            return None;
        };
        let slot = Arc::clone(lock(&self.built).entry(key).or_default());
        let mut slot = lock(&slot);
        if let Some((from, content)) = slot.as_ref()
            && Arc::ptr_eq(from, &catalog)
        {
            return Some(Arc::clone(content));
        }
        match Content::from_config(&catalog.model.to_config(), SystemTime::now()) {
            Ok(content) => {
                let content = Arc::new(content);
                *slot = Some((catalog, Arc::clone(&content)));
                Some(content)
            }
            Err(err) => {
                *slot = None;
                tracing::warn!(
                    catalogsource = %format!("{namespace}/{name}"),
                    error = %operator_runtime::error_chain(&err),
                    "cannot serve the catalog over HTTP"
                );
                None
            }
        }
    }
}

impl catalogd::server::Routes for CachedContents {
    fn route(&self, req: &catalogd::route::Request<'_>) -> catalogd::route::Response {
        catalogd::route::route_catalogs(self, req)
    }
}

/// Why the servers could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--serve-grpc` could not listen.
    #[error("--serve-grpc {namespace}/{name}={addr}: {source}")]
    Grpc {
        /// The CatalogSource's namespace.
        namespace: String,
        /// The CatalogSource's name.
        name: String,
        /// The address.
        addr: SocketAddr,
        /// The bind error.
        #[source]
        source: grpc::ServeError,
    },
    /// `--serve-http` could not listen.
    #[error("--serve-http {addr}: {source}")]
    Http {
        /// The address.
        addr: SocketAddr,
        /// The bind error.
        #[source]
        source: catalogd::ServeError,
    },
}

/// The running servers.
#[derive(Debug, Default)]
pub struct Servers {
    /// The addresses listened on (the port picked when `:0` was asked), gRPC ones first.
    pub addrs: Vec<SocketAddr>,
    /// The server tasks; each ends once stopped and drained.
    pub tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Servers {
    /// Waits for every server to end (after the stop signal).
    pub async fn drained(self) {
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Binds every address, then serves until `stop` turns true and the requests in flight are done.
/// Binding happens before this returns, so a busy port fails the start.
///
/// # Errors
/// [`ServeError`] for the first address that cannot be bound.
pub async fn start(
    cache: &Arc<CatalogCache>,
    global_namespace: &str,
    grpc_targets: &[GrpcTarget],
    http: Option<SocketAddr>,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> Result<Servers, ServeError> {
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let mut servers = Servers::default();
    for target in grpc_targets {
        let GrpcTarget {
            namespace,
            name,
            addr,
        } = target.clone();
        let listener = grpc::server::bind(addr)
            .await
            .map_err(|source| ServeError::Grpc {
                namespace: namespace.clone(),
                name: name.clone(),
                addr,
                source,
            })?;
        let local = listener.local_addr().unwrap_or(addr);
        tracing::info!(addr = %local, catalogsource = %format!("{namespace}/{name}"), "serving the catalog on the registry gRPC API");
        let source = Arc::new(CachedRegistry::new(Arc::clone(cache), &namespace, &name));
        let shutdown = stopped(stop.clone());
        servers.addrs.push(local);
        servers.tasks.push(tokio::spawn(async move {
            if let Err(err) = grpc::serve_source(source, listener, grpc::ServeOptions::default(), shutdown).await {
                tracing::error!(addr = %local, error = %operator_runtime::error_chain(&err), "the catalog gRPC server stopped");
            }
        }));
    }
    if let Some(addr) = http {
        let listener = catalogd::server::bind(addr)
            .await
            .map_err(|source| ServeError::Http { addr, source })?;
        let local = listener.local_addr().unwrap_or(addr);
        tracing::info!(addr = %local, "serving every catalog on the catalogd HTTP API at /catalogs/NAMESPACE/NAME/api/v1/all");
        let routes = Arc::new(CachedContents::new(Arc::clone(cache), global_namespace));
        let shutdown = stopped(stop.clone());
        servers.addrs.push(local);
        servers.tasks.push(tokio::spawn(catalogd::server::serve_routes(
            routes, listener, shutdown,
        )));
    }
    Ok(servers)
}

#[cfg(test)]
mod tests;
