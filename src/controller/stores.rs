//! stores: the reflector stores every controller reads from, and when they have synced.
//!
//! Every reflector is built here ([`reflected`]) so that its first complete list can be observed:
//! `/readyz` turns ready once all stores have synced, and reconciles wait for that too. Watches
//! on kinds that only need a name and namespace are metadata-only, which keeps ConfigMaps and
//! CRDs out of memory.
//!
//! Every watch here (stores and trigger-only watches alike) is supervised by
//! [`operator_runtime::watch`]: a 30 s server-side timeout, backoff on any error answer, and a
//! re-list when it falls silent; a re-list passes on only the objects whose resourceVersion
//! changed, so it costs a cached list and no reconcile storm.

#[allow(clippy::wildcard_imports, reason = "the controller module's shared imports")]
use super::*;

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
    /// ClusterRoles labelled `olm.managed=true` (the user roles the OperatorGroup controller
    /// keeps: applied only when they differ from what is stored; and the ClusterRoles of the
    /// CSVs' `clusterPermissions`, compared by the CSV controller).
    pub cluster_roles: Store<k8s_openapi::api::rbac::v1::ClusterRole>,
    /// Roles labelled `olm.owner.kind=ClusterServiceVersion` (the install's, in the CSV's
    /// namespace and its target namespaces), for the CSV controller's component check.
    pub roles: Store<k8s_openapi::api::rbac::v1::Role>,
    /// RoleBindings labelled `olm.owner.kind=ClusterServiceVersion`.
    pub role_bindings: Store<k8s_openapi::api::rbac::v1::RoleBinding>,
    /// ClusterRoleBindings labelled `olm.owner.kind=ClusterServiceVersion`.
    pub cluster_role_bindings: Store<k8s_openapi::api::rbac::v1::ClusterRoleBinding>,
    /// OperatorConditions (see [`super::operator_condition`]).
    pub operator_conditions: Store<crate::api::v2::OperatorCondition>,
    /// Whether the OperatorCondition store has its first list: at startup when the CRD is
    /// served (it is then a readiness gate like the others), or whenever the CRD appears later
    /// (until then the watch is optional and the store empty).
    pub operator_conditions_synced: Arc<AtomicBool>,
    /// OLMConfigs (the singleton `cluster`; empty while its optional CRD is missing).
    pub olm_configs: Store<crate::api::v1::OLMConfig>,
    /// Whether the OLMConfig store has its first list (then an OLMConfig it lacks does not
    /// exist, and is not read from the API server).
    pub olm_configs_synced: Arc<AtomicBool>,
}

/// Tracks which reflector stores have seen their initial list, and supervises every watch.
#[derive(Default)]
pub struct SyncTracker {
    flags: Mutex<Vec<(&'static str, Arc<AtomicBool>)>>,
    health: Arc<operator_runtime::watch::WatchHealth>,
}

/// A store's name, its synced flag and the supervisor it reports to (see [`SyncTracker::flag`]).
pub struct StoreFlag {
    name: &'static str,
    synced: Arc<AtomicBool>,
    health: Arc<operator_runtime::watch::WatchHealth>,
}

impl StoreFlag {
    /// The flag [`reflected`] sets once the store's first list is in.
    pub fn synced(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.synced)
    }
}

impl SyncTracker {
    /// A new flag for the store `name`, set by [`reflected`] once its first list is in.
    pub fn flag(&self, name: &'static str) -> StoreFlag {
        let flag = Arc::new(AtomicBool::new(false));
        lock(&self.flags).push((name, Arc::clone(&flag)));
        StoreFlag {
            name,
            synced: flag,
            health: Arc::clone(&self.health),
        }
    }

    /// The supervisor of every watch made through this tracker.
    pub fn health(&self) -> Arc<operator_runtime::watch::WatchHealth> {
        Arc::clone(&self.health)
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

/// The `watcher::Config` every watch starts from ([`operator_runtime::watch::config`]).
pub fn watch_config() -> watcher::Config {
    operator_runtime::watch::config()
}

/// A kind the controllers watch: a static Kubernetes resource that decodes from the API.
pub trait Watched:
    Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static
{
}

impl<K> Watched for K where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
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
    flag: StoreFlag,
) -> (
    Store<K>,
    impl futures::Stream<Item = std::result::Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Watched,
{
    let events = flag
        .health
        .supervised(flag.name, move || watcher(api.clone(), wc.clone()));
    reflect_events(events, flag.synced)
}

/// A reflector for a kind whose CRD an install may lack (OperatorCondition, OLMConfig,
/// Operator): supervised like every watch but never a readiness gate, nor named stale in
/// `/readyz` while the CRD is missing. Also returns its `synced` flag, set once a first list is
/// in (never, while the CRD is missing).
pub fn reflected_optional<K>(
    sync: &SyncTracker,
    name: &'static str,
    api: Api<K>,
    wc: watcher::Config,
) -> (
    Store<K>,
    impl futures::Stream<Item = std::result::Result<K, watcher::Error>> + Send + 'static,
    Arc<AtomicBool>,
)
where
    K: Watched,
{
    let synced = Arc::new(AtomicBool::new(false));
    let events = sync
        .health
        .supervised_optional(name, move || watcher(api.clone(), wc.clone()));
    let (store, stream) = reflect_events(events, Arc::clone(&synced));
    (store, stream, synced)
}

/// [`reflected`], whose stream also passes on deleted objects (their last state): for the
/// objects a controller owns, whose deletion it must hear of (a deleted Deployment, Role or
/// ServiceAccount is put back).
pub fn reflected_with_deletions<K>(
    api: Api<K>,
    wc: watcher::Config,
    flag: StoreFlag,
) -> (
    Store<K>,
    impl futures::Stream<Item = std::result::Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Watched,
{
    let events = flag
        .health
        .supervised(flag.name, move || watcher(api.clone(), wc.clone()));
    let synced = flag.synced;
    let (reader, writer) = reflector::store();
    let stream = events
        .modify(|object| object.meta_mut().managed_fields = None)
        .reflect(writer)
        .inspect(move |event| {
            if matches!(event, Ok(watcher::Event::InitDone)) {
                synced.store(true, Ordering::Release);
            }
        })
        .touched_objects()
        .predicate_filter(predicates::resource_version, PredicateConfig::default());
    (reader, stream)
}

/// Feeds a (supervised) watcher's events into a new store, sets `synced` on the first complete
/// list, and returns the store with the stream of applied objects whose resourceVersion changed.
/// `metadata.managedFields` is dropped before an object is stored: no controller reads it, and
/// with server-side apply by several managers it is often the largest part of an object.
pub(super) fn reflect_events<K>(
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
        .modify(|object| object.meta_mut().managed_fields = None)
        .reflect(writer)
        .inspect(move |event| {
            if matches!(event, Ok(watcher::Event::InitDone)) {
                synced.store(true, Ordering::Release);
            }
        })
        .applied_objects()
        .predicate_filter(predicates::resource_version, PredicateConfig::default());
    (reader, stream)
}

/// A metadata-only reflector (for kinds whose spec the controllers never read).
pub fn reflected_metadata<K>(
    client: Client,
    wc: watcher::Config,
    flag: StoreFlag,
) -> (
    Store<PartialObjectMeta<K>>,
    impl futures::Stream<Item = std::result::Result<PartialObjectMeta<K>, watcher::Error>> + Send + 'static,
)
where
    K: Watched,
{
    reflected(Api::<PartialObjectMeta<K>>::all(client), wc, flag)
}

/// A metadata-only trigger stream (no store) for `watches_stream` and `owns_stream`,
/// supervised as `trigger:<plural>`.
pub(super) fn metadata_trigger<K>(
    sync: &SyncTracker,
    client: Client,
    wc: watcher::Config,
) -> impl futures::Stream<Item = std::result::Result<PartialObjectMeta<K>, watcher::Error>> + Send + use<K>
where
    K: Watched,
{
    trigger(sync, Api::<PartialObjectMeta<K>>::all(client), wc)
}

/// A full-object trigger stream (no store), for mappers that read the object's spec.
pub(super) fn trigger<K>(
    sync: &SyncTracker,
    api: Api<K>,
    wc: watcher::Config,
) -> impl futures::Stream<Item = std::result::Result<K, watcher::Error>> + Send + use<K>
where
    K: Watched,
{
    sync.health
        .supervised(format!("trigger:{}", K::plural(&())), move || {
            watcher(api.clone(), wc.clone())
        })
        .touched_objects()
        .predicate_filter(predicates::resource_version, PredicateConfig::default())
}
