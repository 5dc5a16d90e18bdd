//! stores: the reflector stores every controller reads from, and when they have synced.
//!
//! Every reflector is built here ([`reflected`]) so that its first complete list can be observed:
//! `/readyz` turns ready once all stores have synced, and reconciles wait for that too. Watches
//! on kinds that only need a name and namespace are metadata-only, which keeps ConfigMaps and
//! CRDs out of memory.

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
pub(super) fn metadata_trigger<K>(
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
