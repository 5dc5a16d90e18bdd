//! context: what every controller shares ([`Shared`]: stores, catalogs, metrics, discovery,
//! status-write memory, backoff) and each controller's [`Context`] (its name, field manager and
//! Events), plus the shared error policy and the reconcile instrumentation.

use super::status_writes::{MAX_REMEMBERED_STATUS_WRITES, StatusWrite, behind};
#[allow(clippy::wildcard_imports, reason = "the controller module's shared imports")]
use super::*;

/// What every controller shares.
pub struct Shared {
    /// The API client.
    pub client: Client,
    /// Settings.
    pub config: Config,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Parsed catalogs by CatalogSource.
    pub catalogs: Arc<cache::CatalogCache>,
    /// Catalog images pulled in the background.
    pub images: image_puller::ImagePuller,
    /// Bundle images pulled in the background (sharing the catalog puller's permits and
    /// registry backoff).
    pub bundles: image_puller::ImagePuller<image_puller::BundlePull>,
    /// Reflector stores.
    pub stores: Stores,
    /// The catalogd HTTP client of `sourceType: http` CatalogSources, built on first use and
    /// then shared (its connections and certificate store are reused across reconciles).
    pub catalogd: std::sync::OnceLock<reqwest::Client>,
    /// Clients acting as the ServiceAccounts scoped InstallPlans run as.
    pub scoped: Arc<crate::k8s::scoped::ScopedClients>,
    pub(super) backoff: operator_runtime::backoff::PerObject<String>,
    pub(super) discovery: Mutex<HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>>,
    pub(super) status_writes: Mutex<HashMap<String, StatusWrite>>,
    /// When the RBAC of each namespace (Roles, RoleBindings, ServiceAccounts) last changed, as
    /// its watch saw it: failed scoped InstallPlans there are retried after it.
    pub(super) rbac_changes: Mutex<HashMap<String, k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>>,
    /// The API server's `gitVersion`, read once (the CSV requirement on `minKubeVersion`).
    pub(super) server_version: tokio::sync::OnceCell<String>,
    /// Where the OLMConfig controller sends the CSVs whose copies are out of line, for the CSV
    /// controller to reconcile again.
    pub(super) csv_requeue: futures::channel::mpsc::UnboundedSender<
        kube::runtime::reflector::ObjectRef<crate::api::v1alpha1::ClusterServiceVersion>,
    >,
    /// What the OperatorCondition controller last applied per condition.
    pub(super) condition_rbac: Mutex<super::applied::AppliedRbac>,
    pub(super) event_permits: Arc<tokio::sync::Semaphore>,
    pub(super) synced: tokio::sync::watch::Receiver<bool>,
    /// The API claims of the CSVs that passed the inter-group check, taken before any of their
    /// install acts ([`crate::plan::csv::group_conflict::Claims`]).
    pub(super) api_claims: Mutex<crate::plan::csv::group_conflict::Claims>,
    /// The copied-CSV controller's memory and queue ([`copied_csv::Copies`]).
    pub(super) copies: copied_csv::Copies,
}

/// How many reconciles' Events are published at once (see [`Context::publish`]).
pub(super) const EVENT_PUBLISHERS: usize = 4;

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

    /// Whether the reflector store's view of the object `key` (a controller/namespace/name
    /// key) at `resource_version` is from before the status write this controller last made
    /// for it: a status computed from it would repeat that write or drop what it added, so it
    /// waits for the write's watch event, which reconciles the object again.
    ///
    /// This cannot hide a change made by someone else: a change made after our write gives
    /// the object a version this controller has not seen before the write, so it is compared
    /// as usual once the store shows it (and its watch event triggers that reconcile).
    pub fn behind_last_status_write(&self, key: &str, resource_version: Option<&str>) -> bool {
        behind(lock(&self.status_writes).get(key), resource_version)
    }

    /// Records a status write made for `key` while the object was at one of `seen` (the
    /// version the reconcile started from, then those of its own metadata writes); the write
    /// gave it the version `after`.
    pub fn record_status_write(&self, key: &str, seen: Vec<String>, after: Option<String>) {
        let mut writes = lock(&self.status_writes);
        // Entries only defer a write; bound the map rather than track deletions of every kind.
        if writes.len() >= MAX_REMEMBERED_STATUS_WRITES {
            writes.clear();
        }
        let next = StatusWrite::next(writes.get(key), seen, after);
        writes.insert(key.to_owned(), next);
    }

    /// How long ago this controller last wrote the status of `key` (`None`: not remembered).
    pub fn since_last_status_write(&self, key: &str) -> Option<Duration> {
        lock(&self.status_writes)
            .get(key)
            .and_then(|last| last.at)
            .map(|at| at.elapsed())
    }

    /// Records that the RBAC of namespace `ns` changed now.
    pub fn note_rbac_change(&self, ns: &str) {
        lock(&self.rbac_changes).insert(
            ns.to_owned(),
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()),
        );
    }

    /// When the RBAC of namespace `ns` last changed (`None`: not since the controller started).
    pub fn last_rbac_change(&self, ns: &str) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time> {
        lock(&self.rbac_changes).get(ns).cloned()
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
    /// This controller's reconcile slots, granted in arrival order ([`instrumented`]).
    pub slots: operator_runtime::slots::Slots,
}

impl Context {
    pub(crate) fn new(shared: &Arc<Shared>, name: &'static str) -> Arc<Self> {
        Arc::new(Self {
            shared: Arc::clone(shared),
            events: Events::new(shared.client.clone()),
            name,
            manager: crate::k8s::apply::field_manager(name),
            slots: operator_runtime::slots::Slots::new(CONCURRENCY),
        })
    }

    /// The API client.
    pub fn client(&self) -> Client {
        self.shared.client.clone()
    }

    /// Writes `status` as the status of the namespaced object `obj` (server-side apply under this
    /// controller's field manager) when `changed`, unless the store still shows `obj` as it was
    /// before this controller's last status write (see [`Shared::behind_last_status_write`]).
    /// Returns whether it wrote.
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
        let key = object_key(self.name, obj);
        let rv = obj.resource_version();
        if self.shared.behind_last_status_write(&key, rv.as_deref()) {
            tracing::debug!(
                object = %key,
                resource_version = ?rv,
                "status write deferred: the store has not seen this controller's last write yet (its event reconciles again)"
            );
            return Ok(false);
        }
        // The status is serialized for the log only when debug logging is on.
        tracing::debug!(
            object = %key,
            resource_version = ?rv,
            ?own_versions,
            status = %crate::k8s::apply::to_value(status),
            "writing status"
        );
        let (ns, name) = (obj.namespace().unwrap_or_default(), obj.name_any());
        let api: Api<K> = Api::namespaced(self.client(), &ns);
        let written = crate::k8s::apply::apply_status(&api, &name, status, &self.manager)
            .await
            .map_err(Error::status(format!("{} {ns}/{name}", K::kind(&()))))?;
        let seen = rv.into_iter().chain(own_versions.iter().cloned()).collect();
        self.shared
            .record_status_write(&key, seen, written.resource_version());
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

    pub(crate) fn publish_one(
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

/// Reconciles in flight per controller (`Context::slots`). The work is mostly waiting on the
/// API server, so more than a handful pays off when many objects change at once (100
/// Subscriptions).
pub const CONCURRENCY: usize = 16;

/// A reconcile at least this long is logged as a warning ([`instrumented`]).
pub const SLOW_RECONCILE: Duration = Duration::from_secs(20);

/// Runs a reconcile body with metrics and backoff bookkeeping, in one of the controller's
/// slots ([`Context::slots`]: kube-runtime's runner is unbounded, and the slots are granted in
/// arrival order, so no object starves under load; see `operator_runtime::slots`). The object
/// is read again from `store` once the slot is granted (the wait can be long under load); when
/// the store does not have it (deleted meanwhile, or no store given) the object kube-runtime
/// gave is used, as before.
pub async fn instrumented<K, F, Fut>(
    obj: Arc<K>,
    ctx: Arc<Context>,
    store: Option<&kube::runtime::reflector::Store<K>>,
    body: F,
) -> Result<Action>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
    F: FnOnce(Arc<K>) -> Fut,
    Fut: std::future::Future<Output = Result<Action>>,
{
    // Every store must have its initial list before any decision, so a reconcile never
    // mistakes a cold cache for "no such object" (e.g. a Succeeded CSV whose Deployment store
    // is still empty). Free once synced.
    let mut synced = ctx.shared.synced.clone();
    let _ = synced.wait_for(|s| *s).await;
    let _slot = ctx.slots.acquire().await;
    let obj = store
        .and_then(|store| store.get(&kube::runtime::reflector::ObjectRef::from_obj(obj.as_ref())))
        .unwrap_or(obj);
    let timer = ctx.shared.metrics.start_reconcile(ctx.name);
    let started = std::time::Instant::now();
    let result = body(Arc::clone(&obj)).await;
    timer.finish(result.is_ok());
    // A reconcile holds one of the controller's slots, and the object's next requests wait
    // for it: one that takes long is worth a line of its own.
    let elapsed = started.elapsed();
    if elapsed >= SLOW_RECONCILE {
        tracing::warn!(
            object = %object_key(ctx.name, obj.as_ref()),
            ?elapsed,
            "a reconcile took long (its slot was held and the object's other requests waited)"
        );
    }
    if result.is_ok() {
        ctx.reset_backoff(&object_key(ctx.name, obj.as_ref()));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    pub(crate) fn backoff_doubles_per_failure_and_is_capped_at_five_minutes() {
        assert_eq!(backoff_delay(1), Duration::from_secs(1));
        assert_eq!(backoff_delay(2), Duration::from_secs(2));
        assert_eq!(backoff_delay(4), Duration::from_secs(8));
        assert_eq!(backoff_delay(50), Duration::from_secs(300));
    }
}
