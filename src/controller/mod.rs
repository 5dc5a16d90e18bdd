//! controller: the OLM controllers on kube-runtime, and `run()` which wires them together.
//!
//! Five controllers, one per kind, each a pipeline `observe → decide → act → report`:
//! - [`catalog_source`]: loads ConfigMap and built-in catalogs into the shared [`cache`];
//! - [`operator_group`]: target namespaces and the one-group-per-namespace rule;
//! - [`subscription`]: resolution and the InstallPlan of each Subscription;
//! - [`install_plan`]: the approval gate and step execution;
//! - [`csv`]: the ClusterServiceVersion state machine and its Deployments.
//!
//! Every controller reads the other kinds from shared reflector stores ([`Stores`]) rather than
//! the API, writes with server-side apply under its own field manager (`olm-rs/<controller>`),
//! and only writes a status that changed. Only the replica holding the leader Lease runs them.
//!
//! Every reflector is built here ([`reflected`]) so that its first complete list can be
//! observed: `/readyz` turns ready once all stores have synced (a standby replica, waiting for
//! the lease, counts as ready; see [`crate::k8s::http`]), and reconciles wait for that too.
//! Watches on other kinds that only need a name and namespace use metadata-only watches, which
//! keeps ConfigMaps and CRDs out of memory.

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, ServiceAccount},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    core::{ApiResource, GroupVersionKind, PartialObjectMeta},
    discovery::ApiCapabilities,
    runtime::{
        Controller, WatchStreamExt,
        controller::{Action, Config as ControllerConfig},
        reflector,
        reflector::Store,
        watcher,
    },
};

use crate::{
    api::{
        v1::OperatorGroup,
        v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
    },
    k8s::{
        events::Events,
        http::{Readiness, ReadyState},
    },
    metrics::Metrics,
};

pub mod cache;
pub mod catalog_source;
pub mod csv;
pub mod error;
pub mod install_plan;
pub mod mappers;
pub mod operator_group;
pub mod subscription;

pub use error::{Error, Result};

/// Settings of `olm-controller run`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The global catalog namespace (CatalogSources there serve every namespace).
    pub global_namespace: String,
    /// Where `/metrics`, `/healthz` and `/readyz` listen.
    pub metrics_bind: SocketAddr,
    /// Take a Lease before running the controllers.
    pub leader_elect: bool,
    /// Namespace of the leader Lease.
    pub lease_namespace: String,
    /// A directory that replaces the embedded built-in catalog.
    pub builtin_catalog: Option<PathBuf>,
    /// How long transient InstallPlan step errors are retried before the plan fails.
    pub install_plan_retry_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            global_namespace: "olm".into(),
            metrics_bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            leader_elect: false,
            lease_namespace: "olm".into(),
            builtin_catalog: None,
            install_plan_retry_timeout: Duration::from_secs(60),
        }
    }
}

/// The reflector stores every controller reads from.
#[derive(Clone)]
pub struct Stores {
    /// CatalogSources (all namespaces).
    pub catalog_sources: Store<CatalogSource>,
    /// Subscriptions.
    pub subscriptions: Store<Subscription>,
    /// InstallPlans.
    pub install_plans: Store<InstallPlan>,
    /// ClusterServiceVersions.
    pub csvs: Store<ClusterServiceVersion>,
    /// OperatorGroups.
    pub operator_groups: Store<OperatorGroup>,
    /// Deployments labelled `olm.owner.kind=ClusterServiceVersion` (the install strategies').
    pub deployments: Store<Deployment>,
    /// ServiceAccounts, metadata only (owners and uids for the CSV requirement check).
    pub service_accounts: Store<PartialObjectMeta<ServiceAccount>>,
}

/// The rule of [`Shared::repeats_last_status_write`] for one object's `last` write.
fn repeats(last: Option<&StatusWrite>, resource_version: Option<&str>, status: &serde_json::Value) -> bool {
    let Some(resource_version) = resource_version else {
        return false;
    };
    last.is_some_and(|last| {
        last.before.iter().any(|rv| rv == resource_version)
            && crate::k8s::apply::same_ignoring_time(&last.status, status)
    })
}

/// What every controller shares.
pub struct Shared {
    /// The API client.
    pub client: Client,
    /// Settings.
    pub config: Config,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Parsed catalogs by CatalogSource.
    pub catalogs: cache::CatalogCache,
    /// Reflector stores.
    pub stores: Stores,
    backoff: operator_runtime::backoff::PerObject<String>,
    discovery: Mutex<HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>>,
    status_writes: Mutex<HashMap<String, StatusWrite>>,
    event_permits: Arc<tokio::sync::Semaphore>,
    synced: tokio::sync::watch::Receiver<bool>,
}

/// How many reconciles' Events are published at once (see [`Context::publish`]).
const EVENT_PUBLISHERS: usize = 4;

/// One Event a reconcile emits: what it regards, Normal or Warning, its reason and its note.
#[derive(Clone, Debug)]
pub struct EventNote {
    /// The object the Event is about.
    pub regarding: k8s_openapi::api::core::v1::ObjectReference,
    /// A Warning (else Normal).
    pub warning: bool,
    /// The PascalCase reason.
    pub reason: String,
    /// The action (`Sync`, `Install`, `Resolve`).
    pub action: &'static str,
    /// The human-readable note.
    pub note: String,
}

/// How many status writes [`Shared::record_status_write`] remembers before starting over.
const MAX_REMEMBERED_STATUS_WRITES: usize = 4096;

/// How many resourceVersions of one object [`StatusWrite::before`] keeps.
const MAX_VERSIONS_BEFORE: usize = 16;

/// The last status this controller wrote for an object, with every resourceVersion of the
/// object this controller knows to be older than that write: those its reconciles started
/// from and those its own writes returned (including earlier status writes), up to the write.
/// A store showing one of them has not seen the write yet, however far behind it is.
#[derive(Clone, Debug, Default)]
struct StatusWrite {
    before: Vec<String>,
    after: Option<String>,
    status: serde_json::Value,
    at: Option<std::time::Instant>,
}

impl StatusWrite {
    /// The record after writing `status` (resourceVersion `after`) from an object seen at the
    /// versions `seen`: what was known to precede the previous write, that write's own version,
    /// and `seen`, now all precede this one.
    fn next(
        previous: Option<&Self>,
        seen: Vec<String>,
        after: Option<String>,
        status: serde_json::Value,
    ) -> Self {
        let mut before: Vec<String> = previous
            .map(|p| p.before.iter().cloned().chain(p.after.clone()).collect())
            .unwrap_or_default();
        for rv in seen {
            if !before.contains(&rv) {
                before.push(rv);
            }
        }
        if before.len() > MAX_VERSIONS_BEFORE {
            before.drain(..before.len() - MAX_VERSIONS_BEFORE);
        }
        Self {
            before,
            after,
            status,
            at: Some(std::time::Instant::now()),
        }
    }
}

impl Shared {
    /// The API resource and scope of `gvk`, discovered once and cached (API groups served by
    /// CRDs a plan installs appear later, so a miss is looked up again).
    pub async fn discover(&self, gvk: &GroupVersionKind) -> kube::Result<(ApiResource, ApiCapabilities)> {
        if let Some(found) = lock(&self.discovery).get(gvk) {
            return Ok(found.clone());
        }
        let found = kube::discovery::pinned_kind(&self.client, gvk).await?;
        lock(&self.discovery).insert(gvk.clone(), found.clone());
        Ok(found)
    }

    /// Whether writing `status` for the object `key` (a controller/namespace/name key) at
    /// `resource_version` would repeat the write this controller just made: the reflector
    /// store has not caught up with that write yet (the object still shows one of the versions
    /// it had before the write), and the new status equals what was written, timestamps aside.
    ///
    /// This cannot hide a change made by someone else: a change made after our write gives
    /// the object a version this controller has not seen before the write, so it is compared
    /// as usual once the store shows it (and its watch event triggers that reconcile).
    pub fn repeats_last_status_write(
        &self,
        key: &str,
        resource_version: Option<&str>,
        status: &serde_json::Value,
    ) -> bool {
        repeats(lock(&self.status_writes).get(key), resource_version, status)
    }

    /// Records a status write made for `key` while the object was at one of `seen` (the
    /// version the reconcile started from, then those of its own metadata writes); the write
    /// gave it the version `after`.
    pub fn record_status_write(
        &self,
        key: &str,
        seen: Vec<String>,
        after: Option<String>,
        status: serde_json::Value,
    ) {
        let mut writes = lock(&self.status_writes);
        // Entries only save a redundant write; bound the map rather than track deletions of
        // every kind.
        if writes.len() >= MAX_REMEMBERED_STATUS_WRITES {
            writes.clear();
        }
        let next = StatusWrite::next(writes.get(key), seen, after, status);
        writes.insert(key.to_owned(), next);
    }

    /// How long ago this controller last wrote the status of `key` (`None`: not remembered).
    pub fn since_last_status_write(&self, key: &str) -> Option<Duration> {
        lock(&self.status_writes)
            .get(key)
            .and_then(|last| last.at)
            .map(|at| at.elapsed())
    }

    /// Forgets the status writes of a deleted object.
    pub fn forget_status_write(&self, key: &str) {
        lock(&self.status_writes).remove(key);
    }
}

/// The context of one controller: the shared state plus its own Event recorder.
pub struct Context {
    /// Shared state.
    pub shared: Arc<Shared>,
    /// Events as this controller.
    pub events: Events,
    /// The controller's name (`subscription`, ...), used for the field manager and metrics.
    pub name: &'static str,
    /// The field manager `olm-rs/<name>`.
    pub manager: String,
}

impl Context {
    fn new(shared: &Arc<Shared>, name: &'static str) -> Arc<Self> {
        Arc::new(Self {
            shared: Arc::clone(shared),
            events: Events::new(shared.client.clone(), name),
            name,
            manager: crate::k8s::apply::field_manager(name),
        })
    }

    /// The API client.
    pub fn client(&self) -> Client {
        self.shared.client.clone()
    }

    /// Writes `status` as the status of the namespaced object `obj` (server-side apply under this
    /// controller's field manager) when `changed`, unless it repeats this controller's last write
    /// while the store still shows `obj` as it was before that write. Returns whether it wrote.
    pub async fn write_status<K>(
        &self,
        obj: &K,
        changed: bool,
        status: &impl serde::Serialize,
    ) -> Result<bool>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        self.write_status_after(obj, &[], changed, status).await
    }

    /// [`Context::write_status`] for a reconcile that already wrote `obj`'s metadata:
    /// `own_versions` are the resourceVersions those writes returned. The store may show any
    /// of them (or `obj`'s) until it sees this status write; each counts as "from before it".
    pub async fn write_status_after<K>(
        &self,
        obj: &K,
        own_versions: &[String],
        changed: bool,
        status: &impl serde::Serialize,
    ) -> Result<bool>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        if !changed {
            return Ok(false);
        }
        let value = crate::k8s::apply::to_value(status);
        let key = object_key(self.name, obj);
        let rv = obj.resource_version();
        if self.shared.repeats_last_status_write(&key, rv.as_deref(), &value) {
            tracing::debug!(object = %key, resource_version = ?rv, "status write skipped: it repeats the last one");
            return Ok(false);
        }
        tracing::debug!(object = %key, resource_version = ?rv, ?own_versions, status = %value, "writing status");
        let (ns, name) = (obj.namespace().unwrap_or_default(), obj.name_any());
        let api: Api<K> = Api::namespaced(self.client(), &ns);
        let written = crate::k8s::apply::apply_status(&api, &name, status, &self.manager)
            .await
            .map_err(Error::status(format!("{} {ns}/{name}", K::kind(&()))))?;
        let seen = rv.into_iter().chain(own_versions.iter().cloned()).collect();
        self.shared
            .record_status_write(&key, seen, written.resource_version(), value);
        Ok(true)
    }

    /// Publishes `events`, in order, in the background: an Event is a courtesy (the status is
    /// the record), so a reconcile does not wait for the round trips, and its slot goes to the
    /// next object. At most [`EVENT_PUBLISHERS`] reconciles' Events are in flight at once,
    /// taken in the order they were emitted, so a burst of installs does not flood the API
    /// server with Events ahead of the writes that make progress. A failed publish is logged.
    pub fn publish(&self, events: Vec<EventNote>) {
        if events.is_empty() {
            return;
        }
        let recorder = self.events.clone();
        let permits = Arc::clone(&self.shared.event_permits);
        tokio::spawn(async move {
            let _permit = permits.acquire_owned().await;
            for event in events {
                if event.warning {
                    recorder
                        .warning(&event.regarding, &event.reason, event.action, event.note)
                        .await;
                } else {
                    recorder
                        .normal(&event.regarding, &event.reason, event.action, event.note)
                        .await;
                }
            }
        });
    }

    /// Publishes one Normal Event in the background ([`Context::publish`]).
    pub fn normal(
        &self,
        regarding: &k8s_openapi::api::core::v1::ObjectReference,
        reason: &str,
        action: &'static str,
        note: String,
    ) {
        self.publish_one(false, regarding, reason, action, note);
    }

    /// Publishes one Warning Event in the background ([`Context::publish`]).
    pub fn warning(
        &self,
        regarding: &k8s_openapi::api::core::v1::ObjectReference,
        reason: &str,
        action: &'static str,
        note: String,
    ) {
        self.publish_one(true, regarding, reason, action, note);
    }

    fn publish_one(
        &self,
        warning: bool,
        regarding: &k8s_openapi::api::core::v1::ObjectReference,
        reason: &str,
        action: &'static str,
        note: String,
    ) {
        self.publish(vec![EventNote {
            regarding: regarding.clone(),
            warning,
            reason: reason.to_owned(),
            action,
            note,
        }]);
    }

    /// Forgets the failure count of `key` (a successful reconcile).
    pub fn reset_backoff(&self, key: &str) {
        self.shared.backoff.reset(&key.to_owned());
    }

    /// Counts one more failure of `key` and returns the delay before the next try.
    pub fn next_backoff(&self, key: &str) -> Duration {
        self.shared.backoff.fail(key.to_owned()).1
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Exponential backoff per object: 1 s, 2 s, 4 s, ... capped at 5 minutes.
pub fn backoff_delay(attempts: u32) -> Duration {
    operator_runtime::backoff::delay(attempts)
}

/// The backoff key of an object.
pub fn object_key<K: Resource<DynamicType = ()>>(controller: &str, obj: &K) -> String {
    format!(
        "{controller}/{}/{}",
        obj.namespace().unwrap_or_default(),
        obj.name_any()
    )
}

/// The shared error policy: count the error, log it, retry with per-object backoff.
pub fn error_policy<K: Resource<DynamicType = ()>>(obj: Arc<K>, err: &Error, ctx: Arc<Context>) -> Action {
    ctx.shared.metrics.count_error(ctx.name, err.metric_label());
    let key = object_key(ctx.name, obj.as_ref());
    let delay = ctx.next_backoff(&key);
    tracing::warn!(controller = ctx.name, object = %key, error = %err, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// Runs a reconcile body with metrics and backoff bookkeeping.
pub async fn instrumented<K, F>(obj: Arc<K>, ctx: Arc<Context>, body: F) -> Result<Action>
where
    K: Resource<DynamicType = ()>,
    F: std::future::Future<Output = Result<Action>>,
{
    // Every store must have its initial list before any decision, so a reconcile never
    // mistakes a cold cache for "no such object" (e.g. a Succeeded CSV whose Deployment store
    // is still empty). Free once synced.
    let mut synced = ctx.shared.synced.clone();
    let _ = synced.wait_for(|s| *s).await;
    let timer = ctx.shared.metrics.start_reconcile(ctx.name);
    let result = body.await;
    timer.finish(result.is_ok());
    if result.is_ok() {
        ctx.reset_backoff(&object_key(ctx.name, obj.as_ref()));
    }
    result
}

/// Runs the controllers until SIGTERM/SIGINT (or until the leader Lease is lost).
pub async fn run(client: Client, config: Config) -> anyhow_free::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let ready = Arc::new(Readiness::default());
    let listener = crate::k8s::http::bind(config.metrics_bind)
        .await
        .map_err(|e| anyhow_free::RunError(format!("failed to listen on {}: {e}", config.metrics_bind)))?;
    tracing::info!(addr = %config.metrics_bind, "serving /metrics, /healthz and /readyz");
    let http = tokio::spawn(crate::k8s::http::serve(
        listener,
        Arc::clone(&metrics),
        Arc::clone(&ready),
    ));

    let elector = config.leader_elect.then(|| {
        let identity =
            crate::k8s::lease::identity(std::env::var("POD_NAME").ok(), std::env::var("HOSTNAME").ok());
        crate::k8s::lease::LeaderElector::new(
            client.clone(),
            &config.lease_namespace,
            "olm-rs-controller",
            identity,
        )
    });
    if let Some(elector) = &elector {
        // A standby is ready: it is healthy and waiting to take over (see `Readiness`).
        ready.set(ReadyState::Standby);
        tracing::info!(identity = elector.identity(), "waiting for the leader lease");
        tokio::select! {
            () = elector.acquire() => tracing::info!("acquired the leader lease"),
            () = shutdown_signal() => { http.abort(); return Ok(()); }
        }
    }

    let result = {
        let controllers = run_controllers(
            client.clone(),
            config.clone(),
            Arc::clone(&metrics),
            Arc::clone(&ready),
        );
        match &elector {
            Some(elector) => tokio::select! {
                r = controllers => r,
                () = elector.keep_renewing() => Err(anyhow_free::RunError("lost the leader lease; stopping so another replica can take over".into())),
            },
            None => controllers.await,
        }
    };
    ready.set(ReadyState::Stopping);
    if let Some(elector) = &elector {
        elector.release().await;
    }
    http.abort();
    result
}

/// Errors of [`run`], kept free of `anyhow` (the binary wraps them).
pub mod anyhow_free {
    /// `run` failed to start or stopped abnormally.
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    pub struct RunError(pub String);
    /// Result of [`super::run`].
    pub type Result<T> = std::result::Result<T, RunError>;
}

async fn shutdown_signal() {
    operator_runtime::shutdown::signal().await;
}

async fn log_result<T, E: std::fmt::Display>(controller: &'static str, result: std::result::Result<T, E>) {
    if let Err(err) = result {
        tracing::debug!(controller, error = %err, "controller event");
    }
}

/// Tracks which reflector stores have seen their initial list.
#[derive(Default)]
pub struct SyncTracker {
    flags: Mutex<Vec<(&'static str, Arc<AtomicBool>)>>,
}

impl SyncTracker {
    /// A new flag for the store `name`, set by [`reflected`] once its first list is in.
    pub fn flag(&self, name: &'static str) -> Arc<AtomicBool> {
        let flag = Arc::new(AtomicBool::new(false));
        lock(&self.flags).push((name, Arc::clone(&flag)));
        flag
    }

    /// The stores still waiting for their initial list (empty: all synced).
    pub fn pending(&self) -> Vec<&'static str> {
        lock(&self.flags)
            .iter()
            .filter(|(_, f)| !f.load(Ordering::Acquire))
            .map(|(n, _)| *n)
            .collect()
    }
}

/// A reflector for `api`: the store, and the stream of applied objects feeding it (and the
/// controller that owns it). The store's `synced` flag is set on the first `InitDone`.
///
/// Readiness is tracked here rather than through `Store::wait_until_ready`: the store's
/// one-shot readiness channel keeps only one waiter's waker, and kube-runtime's own runner
/// already waits on it, so a second waiter (the old `/readyz` task) was never woken.
pub fn reflected<K>(
    api: Api<K>,
    wc: watcher::Config,
    synced: Arc<AtomicBool>,
) -> (
    Store<K>,
    impl futures::Stream<Item = std::result::Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    reflect_events(watcher(api, wc), synced)
}

/// Feeds a watcher's events into a new store, sets `synced` on the first complete list, and
/// returns the store with the stream of applied objects.
fn reflect_events<K>(
    events: impl futures::Stream<Item = std::result::Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    synced: Arc<AtomicBool>,
) -> (
    Store<K>,
    impl futures::Stream<Item = std::result::Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = events
        .default_backoff()
        .reflect(writer)
        .inspect(move |event| {
            if matches!(event, Ok(watcher::Event::InitDone)) {
                synced.store(true, Ordering::Release);
            }
        })
        .applied_objects();
    (reader, stream)
}

/// A metadata-only reflector (for kinds whose spec the controllers never read).
pub fn reflected_metadata<K>(
    client: Client,
    wc: watcher::Config,
    synced: Arc<AtomicBool>,
) -> (
    Store<PartialObjectMeta<K>>,
    impl futures::Stream<Item = std::result::Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static,
)
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    reflect_events(watcher(Api::<PartialObjectMeta<K>>::all(client), wc), synced)
}

/// A metadata-only trigger stream (no store) for `watches_stream`.
fn metadata_trigger<K>(
    client: Client,
    wc: watcher::Config,
) -> impl futures::Stream<Item = std::result::Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    watcher(Api::<PartialObjectMeta<K>>::all(client), wc)
        .default_backoff()
        .touched_objects()
}

/// Reconciles in flight per controller. The work is mostly waiting on the API server, so
/// more than a handful pays off when many objects change at once (100 Subscriptions).
pub const CONCURRENCY: u16 = 16;

async fn run_controllers(
    client: Client,
    config: Config,
    metrics: Arc<Metrics>,
    ready: Arc<crate::k8s::http::Readiness>,
) -> anyhow_free::Result<()> {
    let wc = watcher::Config::default;
    let cfg = || ControllerConfig::default().concurrency(CONCURRENCY);
    let sync = SyncTracker::default();
    let (synced_tx, synced_rx) = tokio::sync::watch::channel(false);

    let (catalog_sources, catsrc_stream) = reflected(
        Api::<CatalogSource>::all(client.clone()),
        wc(),
        sync.flag("catalogsources"),
    );
    let (subscriptions, sub_stream) = reflected(
        Api::<Subscription>::all(client.clone()),
        wc(),
        sync.flag("subscriptions"),
    );
    let (install_plans, ip_stream) = reflected(
        Api::<InstallPlan>::all(client.clone()),
        wc(),
        sync.flag("installplans"),
    );
    let (csvs, csv_stream) = reflected(
        Api::<ClusterServiceVersion>::all(client.clone()),
        wc(),
        sync.flag("clusterserviceversions"),
    );
    let (operator_groups, og_stream) = reflected(
        Api::<OperatorGroup>::all(client.clone()),
        wc(),
        sync.flag("operatorgroups"),
    );
    let (deployments, deployment_stream) = reflected(
        Api::<Deployment>::all(client.clone()),
        wc().labels(&format!(
            "{}={}",
            crate::api::labels::OWNER_KIND,
            crate::plan::steps::CSV_KIND
        )),
        sync.flag("deployments"),
    );
    let (service_accounts, sa_stream) =
        reflected_metadata::<ServiceAccount>(client.clone(), wc(), sync.flag("serviceaccounts"));

    let stores = Stores {
        catalog_sources: catalog_sources.clone(),
        subscriptions: subscriptions.clone(),
        install_plans: install_plans.clone(),
        csvs: csvs.clone(),
        operator_groups: operator_groups.clone(),
        deployments: deployments.clone(),
        service_accounts,
    };
    let catalogs = cache::CatalogCache::new(config.builtin_catalog.as_deref())
        .map_err(|e| anyhow_free::RunError(format!("failed to load the built-in catalog: {e}")))?;
    let shared = Arc::new(Shared {
        client: client.clone(),
        config,
        metrics,
        catalogs,
        stores: stores.clone(),
        backoff: operator_runtime::backoff::PerObject::new(operator_runtime::backoff::DEFAULT),
        discovery: Mutex::default(),
        status_writes: Mutex::default(),
        event_permits: Arc::new(tokio::sync::Semaphore::new(EVENT_PUBLISHERS)),
        synced: synced_rx,
    });

    // CatalogSources: re-read when the ConfigMap they name changes.
    let catsrc_store = stores.catalog_sources.clone();
    let catsrc_ctl = Controller::for_stream(catsrc_stream, catalog_sources)
        .with_config(cfg())
        .watches_stream(metadata_trigger::<ConfigMap>(client.clone(), wc()), move |cm| {
            mappers::catalog_sources_for_config_map(&catsrc_store.state(), &cm)
        })
        .shutdown_on_signal();

    // OperatorGroups: a sibling group appearing or leaving changes TooManyOperatorGroups.
    let og_store = stores.operator_groups.clone();
    let og_ctl = Controller::for_stream(og_stream, operator_groups)
        .with_config(cfg())
        .watches_stream(
            metadata_trigger::<OperatorGroup>(client.clone(), wc()),
            move |og| mappers::siblings_in_namespace(&og_store.state(), og.namespace().as_deref()),
        )
        .shutdown_on_signal();

    // Subscriptions: their InstallPlans, CSVs, catalogs and OperatorGroups.
    let (s1, s2, s3) = (
        stores.subscriptions.clone(),
        stores.subscriptions.clone(),
        stores.subscriptions.clone(),
    );
    let global = shared.config.global_namespace.clone();
    let sub_ctl = Controller::for_stream(sub_stream, subscriptions)
        .with_config(cfg())
        .owns(Api::<InstallPlan>::all(client.clone()), wc())
        .watches_stream(
            metadata_trigger::<CatalogSource>(client.clone(), wc()),
            move |cs| mappers::subscriptions_for_catalog(&s1.state(), &cs, &global),
        )
        .watches_stream(
            metadata_trigger::<ClusterServiceVersion>(client.clone(), wc()),
            move |csv| mappers::siblings_in_namespace(&s2.state(), csv.namespace().as_deref()),
        )
        .watches_stream(
            metadata_trigger::<OperatorGroup>(client.clone(), wc()),
            move |og| mappers::siblings_in_namespace(&s3.state(), og.namespace().as_deref()),
        )
        .shutdown_on_signal();

    let ip_ctl = Controller::for_stream(ip_stream, install_plans)
        .with_config(cfg())
        .shutdown_on_signal();

    // CSVs: their Deployments and ServiceAccounts, OperatorGroups, CRDs and the CSVs that
    // replace them.
    let (c1, c2, c3) = (stores.csvs.clone(), stores.csvs.clone(), stores.csvs.clone());
    let csv_ctl = Controller::for_stream(csv_stream, csvs)
        .with_config(cfg())
        .owns_stream(deployment_stream)
        .owns_stream(sa_stream)
        .watches_stream(
            metadata_trigger::<OperatorGroup>(client.clone(), wc()),
            move |og| mappers::siblings_in_namespace(&c1.state(), og.namespace().as_deref()),
        )
        .watches(
            Api::<ClusterServiceVersion>::all(client.clone()),
            wc(),
            move |csv| mappers::csvs_related_to(&c2.state(), &csv),
        )
        .watches_stream(
            metadata_trigger::<CustomResourceDefinition>(client.clone(), wc()),
            move |crd| mappers::csvs_for_crd(&c3.state(), &crd.name_any()),
        )
        .shutdown_on_signal();

    let catsrc_ctx = Context::new(&shared, "catalogsource");
    let og_ctx = Context::new(&shared, "operatorgroup");
    let sub_ctx = Context::new(&shared, "subscription");
    let ip_ctx = Context::new(&shared, "installplan");
    let csv_ctx = Context::new(&shared, "csv");

    ready.set(ReadyState::Syncing);
    let readiness = {
        let ready = Arc::clone(&ready);
        async move {
            let mut tick = tokio::time::interval(Duration::from_millis(50));
            loop {
                tick.tick().await;
                let pending = sync.pending();
                if pending.is_empty() {
                    break;
                }
                tracing::trace!(?pending, "waiting for the caches");
            }
            let _ = synced_tx.send(true);
            ready.set(ReadyState::Ready);
            tracing::info!("caches synced; ready");
        }
    };
    let readiness = tokio::spawn(readiness);

    tokio::join!(
        catsrc_ctl
            .run(catalog_source::reconcile, error_policy, catsrc_ctx)
            .for_each(|r| log_result("catalogsource", r)),
        og_ctl
            .run(operator_group::reconcile, error_policy, og_ctx)
            .for_each(|r| log_result("operatorgroup", r)),
        sub_ctl
            .run(subscription::reconcile, error_policy, sub_ctx)
            .for_each(|r| log_result("subscription", r)),
        ip_ctl
            .run(install_plan::reconcile, error_policy, ip_ctx)
            .for_each(|r| log_result("installplan", r)),
        csv_ctl
            .run(csv::reconcile, error_policy, csv_ctx)
            .for_each(|r| log_result("csv", r)),
    );
    readiness.abort();
    tracing::info!("controllers stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(phase: &str, time: &str) -> serde_json::Value {
        serde_json::json!({"phase": phase, "lastUpdateTime": time})
    }

    fn versions(rvs: &[&str]) -> Vec<String> {
        rvs.iter().map(|rv| (*rv).to_owned()).collect()
    }

    #[test]
    fn a_status_write_repeats_only_while_the_store_shows_a_version_from_before_it() {
        // The reconcile started at version 10 and stamped annotations (version 11) before
        // writing phase Installing, which made version 12.
        let last = StatusWrite::next(
            None,
            versions(&["10", "11"]),
            Some("12".into()),
            status("Installing", "t1"),
        );
        let same = status("Installing", "t2");
        assert!(
            repeats(Some(&last), Some("10"), &same),
            "store still at the start"
        );
        assert!(
            repeats(Some(&last), Some("11"), &same),
            "store shows our own annotation write"
        );
        assert!(
            !repeats(Some(&last), Some("12"), &same),
            "the store shows the write: compare with it as usual"
        );
        assert!(
            !repeats(Some(&last), Some("13"), &same),
            "a newer version may carry someone else's status change: compare it as usual"
        );
        let other = status("Succeeded", "t2");
        assert!(
            !repeats(Some(&last), Some("10"), &other),
            "a different status is written"
        );
        assert!(!repeats(None, Some("10"), &same), "nothing written yet");
        assert!(!repeats(Some(&last), None, &same));
    }

    #[test]
    fn a_store_several_writes_behind_still_counts_as_before_the_last_write() {
        let first = StatusWrite::next(
            None,
            versions(&["10"]),
            Some("12".into()),
            status("Installing", "t1"),
        );
        let second = StatusWrite::next(
            Some(&first),
            versions(&["12"]),
            Some("15".into()),
            status("Succeeded", "t2"),
        );
        let again = status("Succeeded", "t3");
        for stale in ["10", "12"] {
            assert!(
                repeats(Some(&second), Some(stale), &again),
                "the store at {stale} has seen neither write"
            );
        }
        assert!(!repeats(Some(&second), Some("15"), &again));
        assert!(!repeats(Some(&second), Some("16"), &again));
    }

    #[test]
    fn the_versions_before_a_write_are_bounded() {
        let mut record = None;
        for rv in 0..100 {
            record = Some(StatusWrite::next(
                record.as_ref(),
                vec![rv.to_string()],
                Some((rv + 1).to_string()),
                status("Installing", "t"),
            ));
        }
        let record = record.unwrap();
        assert!(record.before.len() <= MAX_VERSIONS_BEFORE);
        assert!(record.before.contains(&"99".to_owned()));
    }

    #[test]
    fn backoff_doubles_per_failure_and_is_capped_at_five_minutes() {
        assert_eq!(backoff_delay(1), Duration::from_secs(1));
        assert_eq!(backoff_delay(2), Duration::from_secs(2));
        assert_eq!(backoff_delay(4), Duration::from_secs(8));
        assert_eq!(backoff_delay(50), Duration::from_secs(300));
    }
}
