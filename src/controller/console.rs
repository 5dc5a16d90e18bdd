//! console: `olm-controller run --console 127.0.0.1:PORT` serves the web console's pages
//! ([`olm_console`]) **read-only**, from the controller's own reflector stores and catalog
//! cache: the catalogs, each package's upgrade graphs, the installed operators and an
//! InstallPlan's steps, RBAC grants and images. It makes no API request of its own.
//!
//! # Who can reach it
//!
//! The pages show what the controller's caches hold, which the controller may read with its
//! own, broad rights; so nobody may reach them who could not already read that:
//!
//! - It binds only a loopback address ([`refuse_address`]: `127.0.0.1` or `::1`), so nothing on
//!   the pod network reaches it.
//! - The way in is `kubectl -n NAMESPACE port-forward deploy/olm-controller PORT:PORT`. The API
//!   server authenticates that request and authorizes it as `create` on `pods/portforward` of
//!   the controller's pod. Whoever has that can, in practice, already exec into the pod and use
//!   its ServiceAccount token (the same RBAC usually grants both, and the port-forward reaches
//!   every port the pod listens on), so the pages reveal nothing more than that right already
//!   does. This is the documented `kubectl port-forward` of issue 26, not a TokenReview and
//!   SubjectAccessReview per request.
//! - Nothing is written: no Approve form, and `POST /plan/approve` is refused with the way to
//!   approve ([`olm_console::Options::read_only`]); approving stays with the user's own
//!   credentials (`kubectl olm approve`, or `kubectl olm console` on their machine).
//! - The console's own guards stay: the `Host` check against DNS rebinding (so the local port
//!   of the port-forward must be the same as the pod's), the Content-Security-Policy.
//!
//! # What differs from `kubectl olm console`
//!
//! No API reads means: a plan's steps are not compared with a dry run (the pure parts of the
//! preview, [`crate::plan::preview`]'s grants and images, are shown), and no Events are shown
//! (the controller keeps none in its caches); both pages say so. Pages follow the caches:
//! every catalog load announced by the cache, and every change of the CatalogSource,
//! Subscription, InstallPlan and CSV stores (looked at every [`POLL`]), tells open pages to
//! fetch themselves again. The console starts with the controllers, so with `--leader-elect`
//! only the leader serves it.

use std::{
    collections::HashMap,
    hash::{Hash, Hasher},
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use kube::{Resource, ResourceExt};
use olm_console::{
    Source, SourceError,
    view::{CatalogSummary, Icon, InstalledPage, Overview, PackageSummary, PackageView, PlanView},
};
use tokio::sync::broadcast;

use super::{Stores, cache::CatalogCache, lock};
use crate::{
    api::v1alpha1::{CatalogSource, Subscription},
    catalog::load::LoadedCatalog,
    console_view as view,
    plan::preview as approve,
};

/// How often the stores are looked at for a change the open pages should show.
pub const POLL: Duration = Duration::from_secs(1);

/// How long a stop waits for open pages' event streams before cutting them off.
const DRAIN: Duration = Duration::from_secs(1);

/// Why the console could not start.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// `--console` is not a loopback address.
    #[error("{0}")]
    NotLoopback(String),
    /// The address could not be bound.
    #[error("failed to listen on --console {addr}: {source}")]
    Bind {
        /// `--console`.
        addr: SocketAddr,
        /// The bind error.
        source: std::io::Error,
    },
    /// No random bytes for the console's token.
    #[error(transparent)]
    Token(#[from] olm_console::server::TokenError),
}

/// Why `address` may not be served by the controller, or `None` (a loopback address).
pub fn refuse_address(address: SocketAddr) -> Option<String> {
    (!address.ip().is_loopback()).then(|| {
        format!(
            "--console {address} is not a loopback address; the console shows what the controller's caches hold, so it must not be reachable from the pod network. Bind 127.0.0.1:PORT (or [::1]:PORT) and open it through `kubectl -n NAMESPACE port-forward deploy/olm-controller PORT:PORT`, which the API server authorizes (docs/console.md)"
        )
    })
}

/// One catalog load and the first page's packages built from it.
type Summaries = (Arc<LoadedCatalog>, Arc<[PackageSummary]>);

/// The console's data source over the controller's stores and catalog cache.
pub struct StoreSource {
    stores: Stores,
    catalogs: Arc<CatalogCache>,
    /// The first page's packages of each loaded catalog (by `NAMESPACE/NAME`), built once per
    /// load and reused while the cache holds the same load.
    summaries: Mutex<HashMap<String, Summaries>>,
    changes: broadcast::Sender<()>,
}

impl StoreSource {
    /// A source over `stores` and `catalogs`; [`StoreSource::follow`] signals its changes.
    pub fn new(stores: Stores, catalogs: Arc<CatalogCache>) -> StoreSource {
        StoreSource {
            stores,
            catalogs,
            summaries: Mutex::default(),
            changes: broadcast::channel(64).0,
        }
    }

    /// Every CatalogSource in the store, by namespace then name.
    fn catalog_sources(&self) -> Vec<Arc<CatalogSource>> {
        let mut sources = self.stores.catalog_sources.state();
        sources.sort_by_key(|cs| key_of(cs.as_ref()));
        sources
    }

    /// The cached catalog of the CatalogSource `key` (`NAMESPACE/NAME`).
    fn loaded(&self, key: &str) -> Option<Arc<LoadedCatalog>> {
        let (ns, name) = key.split_once('/')?;
        self.catalogs.get(ns, name)
    }

    /// The first page's packages of `loaded`, built once per load.
    fn summaries(&self, key: &str, loaded: &Arc<LoadedCatalog>) -> Arc<[PackageSummary]> {
        let mut memo = lock(&self.summaries);
        if let Some((seen, packages)) = memo.get(key)
            && Arc::ptr_eq(seen, loaded)
        {
            return Arc::clone(packages);
        }
        let packages: Arc<[PackageSummary]> = Arc::from(view::package_summaries(key, &loaded.model));
        memo.insert(key.to_string(), (Arc::clone(loaded), Arc::clone(&packages)));
        packages
    }

    /// Tells open pages to fetch themselves again on every catalog load and every store
    /// change, until `stop` turns true (a task beside the server's). The stores are looked at
    /// only while a page listens.
    pub fn follow(
        &self,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let stores = self.stores.clone();
        let mut loads = self.catalogs.loads().boxed();
        let changes = self.changes.clone();
        async move {
            let mut tick = tokio::time::interval(POLL);
            let mut last = store_fingerprint(&stores);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        // Only while a page is open: the digest reads every object of four stores.
                        if changes.receiver_count() == 0 {
                            continue;
                        }
                        let now = store_fingerprint(&stores);
                        if now != last {
                            last = now;
                            // The page closed meanwhile: nothing to tell.
                            let _ = changes.send(());
                        }
                    }
                    Some(_) = loads.next() => {
                        let _ = changes.send(());
                    }
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        }
    }
}

/// A digest of what the pages show from the stores: every CatalogSource, Subscription,
/// InstallPlan and CSV.
fn store_fingerprint(s: &Stores) -> u64 {
    let (sources, subs, plans, csvs) = (
        s.catalog_sources.state(),
        s.subscriptions.state(),
        s.install_plans.state(),
        s.csvs.state(),
    );
    fingerprint(
        sources
            .iter()
            .map(|o| o.meta())
            .chain(subs.iter().map(|o| o.meta()))
            .chain(plans.iter().map(|o| o.meta()))
            .chain(csvs.iter().map(|o| o.meta())),
    )
}

/// The objects of a store's snapshot, as the pure view builders take them.
fn owned<K: Clone>(objects: Vec<Arc<K>>) -> Vec<K> {
    objects.iter().map(|o| o.as_ref().clone()).collect()
}

/// `NAMESPACE/NAME` of `object`.
fn key_of<K: kube::Resource>(object: &K) -> String {
    format!("{}/{}", object.namespace().unwrap_or_default(), object.name_any())
}

/// A digest of objects' uids and resourceVersions, whatever their order (stores hand them out
/// in no fixed order): it changes when an object is added, removed or changed.
pub fn fingerprint<'a>(
    objects: impl Iterator<Item = &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
) -> u64 {
    let mut sum = 0u64;
    let mut count = 0u64;
    for meta in objects {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        meta.uid.hash(&mut h);
        meta.namespace.hash(&mut h);
        meta.name.hash(&mut h);
        meta.resource_version.hash(&mut h);
        sum = sum.wrapping_add(h.finish());
        count += 1;
    }
    sum ^ count.rotate_left(32)
}

/// The first page's line of CatalogSource `cs`, loaded as `loaded` (`None`: not in the cache).
pub fn catalog_summary(
    cs: &CatalogSource,
    loaded: Option<&LoadedCatalog>,
    packages: usize,
) -> CatalogSummary {
    let key = key_of(cs);
    let problem = match loaded {
        Some(l) => view::joined(&l.problems),
        None => {
            let status = cs.status.as_ref();
            let why = status
                .and_then(|s| s.message.clone())
                .filter(|m| !m.is_empty())
                .map(|m| match status.and_then(|s| s.reason.as_deref()) {
                    Some(reason) if !reason.is_empty() => format!(": {reason}: {m}"),
                    _ => format!(": {m}"),
                })
                .unwrap_or_default();
            Some(format!("not loaded by the controller yet{why}"))
        }
    };
    view::catalog_line(
        &key,
        cs.spec.display_name.as_deref().unwrap_or_default(),
        cs.spec.publisher.as_deref().unwrap_or_default(),
        packages,
        problem,
    )
}

/// What a waiting plan's step says instead of the dry-run comparison `kubectl olm console`
/// makes (a finished plan's steps say nothing: there is nothing left to compare).
pub const NOT_COMPARED: &str = "not compared here (no API request); `kubectl olm approve --dry-run` compares";

/// What the installed page says instead of the Events `kubectl olm console` lists.
pub const NO_EVENTS: &str = "Events are not shown: the in-cluster console reads only the controller's caches, which hold none; `kubectl olm console` or `kubectl get events` show them";

/// What the approve route answers.
pub const READ_ONLY: &str = "the in-cluster console is read-only; approve with `kubectl olm approve`, or in `kubectl olm console` on your machine, which act with your own credentials";

impl Source for StoreSource {
    async fn overview(&self) -> Result<Overview, SourceError> {
        let mut catalogs = Vec::new();
        let mut packages: Vec<PackageSummary> = Vec::new();
        for cs in self.catalog_sources() {
            let key = key_of(cs.as_ref());
            let loaded = self.loaded(&key);
            let summaries = loaded.as_ref().map(|l| self.summaries(&key, l));
            catalogs.push(catalog_summary(
                &cs,
                loaded.as_deref(),
                summaries.as_ref().map_or(0, |s| s.len()),
            ));
            if let Some(s) = summaries {
                packages.extend(s.iter().cloned());
            }
        }
        Ok(Overview {
            catalogs,
            packages: Arc::from(packages),
        })
    }

    async fn package(&self, catalog: &str, name: &str) -> Result<Option<PackageView>, SourceError> {
        let Some(loaded) = self.loaded(catalog) else {
            return Ok(None);
        };
        let Some(p) = loaded.model.package(name) else {
            return Ok(None);
        };
        let subs = self.stores.subscriptions.state();
        let mine: Vec<&Subscription> = subs
            .iter()
            .map(AsRef::as_ref)
            .filter(|s| {
                s.spec.name == name && format!("{}/{}", s.spec.source_namespace, s.spec.source) == catalog
            })
            .collect();
        Ok(Some(view::package(catalog, p, &mine)))
    }

    async fn icon(&self, catalog: &str, name: &str) -> Result<Option<Icon>, SourceError> {
        Ok(self
            .loaded(catalog)
            .and_then(|l| l.model.package(name).and_then(view::icon)))
    }

    async fn installed(&self) -> Result<InstalledPage, SourceError> {
        let subs = owned(self.stores.subscriptions.state());
        let csvs = owned(self.stores.csvs.state());
        let plans = owned(self.stores.install_plans.state());
        Ok(InstalledPage {
            operators: view::installed(&subs, &csvs, &plans, &[]),
            problems: vec![NO_EVENTS.to_string()],
        })
    }

    async fn plan(&self, namespace: &str, name: &str) -> Result<Option<PlanView>, SourceError> {
        let Some(plan) = self
            .stores
            .install_plans
            .state()
            .into_iter()
            .find(|p| p.namespace().as_deref() == Some(namespace) && p.name_any() == name)
        else {
            return Ok(None);
        };
        let mut shown = approve::preview(&plan);
        let finished = plan.status.as_ref().is_some_and(|s| s.phase.is_terminal());
        if !finished {
            for step in &mut shown.steps {
                step.note = Some(NOT_COMPARED.to_string());
            }
        }
        Ok(Some(view::plan(&plan, &shown)))
    }

    async fn approve(&self, namespace: &str, name: &str) -> Result<(), SourceError> {
        Err(SourceError::Approve {
            namespace: namespace.to_string(),
            name: name.to_string(),
            message: READ_ONLY.to_string(),
        })
    }

    fn changes(&self) -> broadcast::Receiver<()> {
        self.changes.subscribe()
    }
}

/// Serves the read-only console at `addr` from `stores` and `catalogs` until `stop` turns true.
/// Bound before it returns, so a busy port fails the start.
///
/// # Errors
/// [`ConsoleError::NotLoopback`], [`ConsoleError::Bind`], [`ConsoleError::Token`].
pub async fn start(
    addr: SocketAddr,
    stores: Stores,
    catalogs: Arc<CatalogCache>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>, ConsoleError> {
    if let Some(why) = refuse_address(addr) {
        return Err(ConsoleError::NotLoopback(why));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ConsoleError::Bind { addr, source })?;
    let bound = listener.local_addr().unwrap_or(addr);
    let mut options = olm_console::Options::for_address(bound, olm_console::new_token()?);
    options.read_only = true;
    let source = StoreSource::new(stores, catalogs);
    let follow = source.follow(stop.clone());
    let app = olm_console::router(source, options);
    tracing::info!(addr = %bound, "serving the read-only web console");
    let mut stop_serving = stop.clone();
    let serve = olm_console::serve(listener, app, async move {
        let _ = stop_serving.wait_for(|s| *s).await;
    });
    // A graceful shutdown waits for every connection to end, and an open page's event stream
    // never does: those are cut off after [`DRAIN`], so the console never holds up a stop.
    let mut stop_draining = stop;
    let drain = async move {
        let _ = stop_draining.wait_for(|s| *s).await;
        tokio::time::sleep(DRAIN).await;
    };
    Ok(tokio::spawn(async move {
        tokio::select! {
            (served, ()) = async { tokio::join!(serve, follow) } => {
                if let Err(error) = served {
                    tracing::error!(%error, "the web console stopped");
                }
            }
            () = drain => tracing::info!("the web console stopped; open pages were cut off"),
        }
    }))
}

#[cfg(test)]
mod tests;
