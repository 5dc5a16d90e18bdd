//! controller: the reconcile loop (shell): observe → decide ([`desired`], [`status`]) → apply → report.
//!
//! One kube `Controller` per watched namespace (OLM's `olm.targetNamespaces`; empty means a single
//! cluster-wide watch), so the operator works with only namespaced permissions. The RedisCluster
//! stream passes through `predicates::generation`, so the operator's own status writes do not
//! trigger reconciles; owned StatefulSets, Services, ConfigMaps and PodDisruptionBudgets and the
//! Redis pods (mapped back through the `app.kubernetes.io/instance` label) do. Successful reconciles
//! requeue after five minutes to catch drift; failures back off exponentially per object.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use futures::{StreamExt, future::join_all};
use k8s_openapi::{
    api::{
        apps::v1::StatefulSet,
        core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service},
        policy::v1::PodDisruptionBudget,
    },
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams},
    core::PartialObjectMeta,
    runtime::{
        Controller, WatchStreamExt,
        controller::Action,
        events::{Event, EventType, Recorder, Reporter},
        predicates, reflector,
        reflector::ObjectRef,
        watcher,
    },
};
use operator_runtime::{
    backoff::{PerObject, Policy},
    http::{Readiness, ReadyState},
    watch::WatchHealth,
};
use serde::{Serialize, de::DeserializeOwned};

use super::{
    cluster_mode::{self, Node},
    config::REDIS_PORT,
    crd::{Mode, RedisCluster, selector_labels},
    desired,
    metrics::Metrics,
    status::{self, Drain, ObservedPod, Outcome},
};

/// Field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "redis-operator";
/// Finalizer that deletes claims when `storage.deleteClaimOnDelete` is set.
pub const FINALIZER: &str = "cache.example.com/cleanup";
/// Requeue interval of a healthy object.
pub const RESYNC: Duration = Duration::from_secs(300);
/// Requeue interval while a cluster-mode shrink waits for, or retries, its drain.
pub const DRAIN_RETRY: Duration = Duration::from_secs(15);

/// Errors of one reconcile, one variant per pipeline stage.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading pods or the StatefulSet failed.
    #[error("failed to observe the pods or the StatefulSet of {name}")]
    Observe {
        /// namespace/name.
        name: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Server-side apply of an owned object failed.
    #[error("failed to apply {kind} {name}")]
    Apply {
        /// Kind.
        kind: &'static str,
        /// Name.
        name: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Writing status failed.
    #[error("failed to update the status of {name}")]
    UpdateStatus {
        /// namespace/name.
        name: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Deleting claims failed.
    #[error("failed to delete the claims of {name}")]
    Cleanup {
        /// namespace/name.
        name: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Adding or removing the cleanup finalizer failed.
    #[error("failed to {action} the finalizer {FINALIZER} on {name}")]
    Finalizer {
        /// `add` or `remove`.
        action: &'static str,
        /// namespace/name.
        name: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// Short label for the errors metric.
    #[must_use]
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Observe { .. } => "observe",
            Self::Apply { .. } => "apply",
            Self::UpdateStatus { .. } => "update_status",
            Self::Cleanup { .. } => "cleanup",
            Self::Finalizer { .. } => "finalizer",
        }
    }
}

/// Shared state of the reconcilers.
pub struct Context {
    client: Client,
    recorder: Recorder,
    metrics: Arc<Metrics>,
    failures: PerObject<ObjectRef<RedisCluster>>,
}

/// The backoff after consecutive failures: 5 s doubling up to the resync interval (5 minutes).
pub const BACKOFF: Policy = Policy {
    first: Duration::from_secs(5),
    max: RESYNC,
};

/// Parses `WATCH_NAMESPACE` (comma list; empty means all namespaces).
#[must_use]
pub fn parse_namespaces(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Counts the watched scopes whose RedisCluster store has not finished its initial list; the
/// last one to finish makes the operator ready (`/readyz`), so a rollout never counts a pod whose
/// caches are still cold.
struct SyncGate {
    pending: AtomicUsize,
    ready: Arc<Readiness>,
}

impl SyncGate {
    fn synced(&self) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.ready.set(ReadyState::Ready);
            tracing::info!("every RedisCluster store is synced: ready");
        }
    }
}

/// Runs the controllers until a termination signal; `ready` goes from `Syncing` to `Ready` once
/// every watched scope's store has its initial list.
pub async fn run(
    client: Client,
    namespaces: Vec<String>,
    metrics: Arc<Metrics>,
    pod_name: Option<String>,
    ready: Arc<Readiness>,
) {
    let reporter = Reporter {
        controller: FIELD_MANAGER.into(),
        instance: pod_name,
    };
    let ctx = Arc::new(Context {
        recorder: Recorder::new(client.clone(), reporter),
        client: client.clone(),
        metrics,
        failures: PerObject::new(BACKOFF),
    });
    let scopes: Vec<Option<String>> = if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.into_iter().map(Some).collect()
    };
    ready.set(ReadyState::Syncing);
    // Every watch is supervised: re-listed when silent, named in /readyz when stale.
    let health = Arc::new(WatchHealth::default());
    let supervisor = tokio::spawn(operator_runtime::watch::supervise(
        Arc::clone(&health),
        client.clone(),
        Arc::clone(&ready),
        {
            let metrics = Arc::clone(&ctx.metrics);
            move |ages| metrics.record_watch_ages(ages)
        },
    ));
    let gate = Arc::new(SyncGate {
        pending: AtomicUsize::new(scopes.len()),
        ready,
    });
    join_all(
        scopes
            .into_iter()
            .map(|ns| run_one(client.clone(), ns, ctx.clone(), gate.clone(), &health)),
    )
    .await;
    supervisor.abort();
}

/// A supervised metadata-only trigger on the operator's own objects of kind `K` in `ns`.
fn owned_trigger<K>(
    health: &Arc<WatchHealth>,
    client: &Client,
    ns: Option<&str>,
) -> impl futures::Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + use<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let api: Api<PartialObjectMeta<K>> = match ns {
        Some(n) => Api::namespaced(client.clone(), n),
        None => Api::all(client.clone()),
    };
    let wc = operator_runtime::watch::config().labels(MANAGED_BY);
    let name = format!("trigger:{}{}", K::plural(&()), scope_suffix(ns));
    health
        .supervised(name, move || watcher(api.clone(), wc.clone()))
        .touched_objects()
        .predicate_filter(predicates::resource_version, Default::default())
}

/// The label selecting the objects this operator manages.
const MANAGED_BY: &str = "app.kubernetes.io/managed-by=redis-operator";

/// `@<namespace>` for a namespaced scope, nothing for all namespaces.
fn scope_suffix(ns: Option<&str>) -> String {
    ns.map(|n| format!("@{n}")).unwrap_or_default()
}

fn api<K>(client: &Client, ns: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match ns {
        Some(n) => Api::namespaced(client.clone(), n),
        None => Api::all(client.clone()),
    }
}

async fn run_one(
    client: Client,
    ns: Option<String>,
    ctx: Arc<Context>,
    gate: Arc<SyncGate>,
    health: &Arc<WatchHealth>,
) {
    tracing::info!(namespace = ns.as_deref().unwrap_or("*"), "watching RedisClusters");
    let clusters: Api<RedisCluster> = api(&client, ns.as_deref());
    let (reader, writer) = reflector::store();
    // Readiness comes from the stream's first complete list, not `Store::wait_until_ready`:
    // the store's readiness channel wakes only one waiter, and kube-runtime's runner is it.
    let mut synced = Some(gate);
    let stream = health
        .supervised(
            format!("redisclusters{}", scope_suffix(ns.as_deref())),
            move || watcher(clusters.clone(), operator_runtime::watch::config()),
        )
        .reflect(writer)
        .inspect({
            let metrics = ctx.metrics.clone();
            move |event| {
                if let Ok(watcher::Event::InitDone) = event
                    && let Some(gate) = synced.take()
                {
                    gate.synced();
                }
                // A RedisCluster without the finalizer is gone before any reconcile sees it deleted.
                if let Ok(watcher::Event::Delete(rc)) = event {
                    metrics.set_managed(
                        &format!("{}/{}", rc.namespace().unwrap_or_default(), rc.name_any()),
                        false,
                    );
                }
            }
        })
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    let scope = ns.as_deref();
    Controller::for_stream(stream, reader)
        .owns_stream(owned_trigger::<StatefulSet>(health, &client, scope))
        .owns_stream(owned_trigger::<Service>(health, &client, scope))
        .owns_stream(owned_trigger::<ConfigMap>(health, &client, scope))
        .owns_stream(owned_trigger::<PodDisruptionBudget>(health, &client, scope))
        .watches_stream(owned_trigger::<Pod>(health, &client, scope), |pod| {
            let name = pod.labels().get("app.kubernetes.io/instance")?;
            Some(ObjectRef::new(name).within(&pod.namespace()?))
        })
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|res| async move {
            if let Err(e) = res {
                tracing::debug!(error = %e, "controller event");
            }
        })
        .await;
}

/// What to do about the cleanup finalizer this round (pure; see [`finalizer_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalizerStep {
    /// Nothing: the finalizer is where it should be.
    Keep,
    /// Add it before creating anything that would need cleanup.
    Add,
    /// Remove it: the spec no longer asks for cleanup.
    Remove,
    /// The object is being deleted and carries the finalizer: clean up, then remove it.
    Cleanup,
    /// The object is being deleted without the finalizer: garbage collection does the rest.
    Gone,
}

/// The finalizer rule: it is present exactly while `storage.deleteClaimOnDelete` is set, because
/// claims are the only thing owner references cannot delete. Without it, a RedisCluster can be
/// deleted even when the operator is not running (nothing then blocks the namespace's deletion).
#[must_use]
pub fn finalizer_step(wants: bool, has: bool, deleting: bool) -> FinalizerStep {
    match (deleting, has, wants) {
        (true, true, _) => FinalizerStep::Cleanup,
        (true, false, _) => FinalizerStep::Gone,
        (false, false, true) => FinalizerStep::Add,
        (false, true, false) => FinalizerStep::Remove,
        (false, _, _) => FinalizerStep::Keep,
    }
}

/// Whether the spec asks for the cleanup finalizer.
#[must_use]
pub fn wants_finalizer(rc: &RedisCluster) -> bool {
    rc.spec.storage.as_ref().is_some_and(|s| s.delete_claim_on_delete)
}

/// Adds or removes [`FINALIZER`] with a JSON patch guarded by a `test` op, so a concurrent change
/// to the list makes the patch fail (and the reconcile retry) instead of clobbering it.
async fn set_finalizer(api: &Api<RedisCluster>, rc: &RedisCluster, present: bool) -> Result<(), Error> {
    let list = rc.finalizers();
    let ops = if present {
        if list.is_empty() {
            serde_json::json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
            ])
        } else {
            serde_json::json!([
                {"op": "test", "path": "/metadata/finalizers", "value": list},
                {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
            ])
        }
    } else {
        let Some(i) = list.iter().position(|f| f == FINALIZER) else {
            return Ok(());
        };
        serde_json::json!([
            {"op": "test", "path": format!("/metadata/finalizers/{i}"), "value": FINALIZER},
            {"op": "remove", "path": format!("/metadata/finalizers/{i}")},
        ])
    };
    let failed = |source| Error::Finalizer {
        action: if present { "add" } else { "remove" },
        name: format!("{}/{}", rc.namespace().unwrap_or_default(), rc.name_any()),
        source,
    };
    let patch =
        Patch::<()>::Json(serde_json::from_value(ops).map_err(|e| failed(kube::Error::SerdeError(e)))?);
    api.patch(&rc.name_any(), &PatchParams::default(), &patch)
        .await
        .map_err(failed)?;
    Ok(())
}

async fn reconcile(rc: Arc<RedisCluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let ns = rc.namespace().unwrap_or_default();
    let key = format!("{ns}/{}", rc.name_any());
    let api: Api<RedisCluster> = Api::namespaced(ctx.client.clone(), &ns);
    let deleting = rc.metadata.deletion_timestamp.is_some();
    let step = finalizer_step(
        wants_finalizer(&rc),
        rc.finalizers().iter().any(|f| f == FINALIZER),
        deleting,
    );
    let result = match step {
        FinalizerStep::Gone => Ok(Action::await_change()),
        FinalizerStep::Cleanup => match cleanup(&rc, &ctx).await {
            Ok(None) => set_finalizer(&api, &rc, false)
                .await
                .map(|()| Action::await_change()),
            Ok(Some(wait)) => Ok(wait),
            Err(e) => Err(e),
        },
        FinalizerStep::Add | FinalizerStep::Remove => {
            match set_finalizer(&api, &rc, step == FinalizerStep::Add).await {
                Ok(()) => apply(&rc, &ctx).await,
                Err(e) => Err(e),
            }
        }
        FinalizerStep::Keep => apply(&rc, &ctx).await,
    };
    let seconds = started.elapsed().as_secs_f64();
    ctx.metrics
        .observe_reconcile(if result.is_ok() { "success" } else { "error" }, seconds);
    ctx.metrics.set_managed(&key, !deleting);
    if result.is_ok() {
        ctx.failures.reset(&ObjectRef::from_obj(&*rc));
    }
    tracing::info!(cluster = %key, seconds, ok = result.is_ok(), ?step, "reconciled");
    result
}

fn error_policy(rc: Arc<RedisCluster>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.count_error(error.metric_label());
    let (n, wait) = ctx.failures.fail(ObjectRef::from_obj(&*rc));
    tracing::warn!(cluster = %rc.name_any(), error = %error_chain(error), failures = n, "reconcile failed");
    Action::requeue(wait)
}

/// An error and its causes, joined with `: ` (the top-level messages name the step, the causes
/// carry the apiserver's answer, such as which verb was forbidden).
pub use operator_runtime::error_chain;

async fn publish(ctx: &Context, rc: &RedisCluster, type_: EventType, reason: &str, note: String) {
    // kube's Recorder folds events with the same type, reason and action into one series and keeps
    // the first note, so the generation goes into the action: a new spec gets a fresh event.
    let ev = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: format!("ReconcileGeneration{}", rc.metadata.generation.unwrap_or(0)),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&ev, &rc.object_ref(&())).await {
        tracing::warn!(error = %e, reason, "failed to publish event");
    }
}

async fn ssa<K>(client: &Client, ns: &str, obj: &K) -> Result<K, Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    Api::<K>::namespaced(client.clone(), ns)
        .patch(&name, &pp, &Patch::Apply(obj))
        .await
        .map_err(|source| Error::Apply {
            kind: kind_of::<K>(),
            name,
            source,
        })
}

fn kind_of<K: Resource<DynamicType = ()>>() -> &'static str {
    match K::kind(&()).as_ref() {
        "StatefulSet" => "StatefulSet",
        "Service" => "Service",
        "ConfigMap" => "ConfigMap",
        "PodDisruptionBudget" => "PodDisruptionBudget",
        _ => "object",
    }
}

async fn apply(rc: &RedisCluster, ctx: &Context) -> Result<Action, Error> {
    let ns = rc.namespace().unwrap_or_default();
    let name = rc.name_any();
    let now = Time(Timestamp::now());
    let pods = observe_pods(ctx, &ns, &name).await?;
    let pod_names: Vec<String> = pods
        .iter()
        .filter(|(p, _)| !p.terminating)
        .map(|(p, _)| p.name.clone())
        .collect();
    // The shrink check comes first, so a shrink below the minimum names itself rather than the size.
    let sts_replicas = observe_statefulset_replicas(ctx, &ns, &name).await?;
    let checked = desired::cluster_shrink(&rc.spec, &pod_names, sts_replicas)
        .and_then(|s| desired::build(rc).map(|d| (d, s)));
    let outcome = match checked {
        Err(e) => {
            publish(ctx, rc, EventType::Warning, e.reason(), e.to_string()).await;
            Outcome::InvalidSpec(e.reason().to_owned(), e.to_string())
        }
        Ok((mut d, shrink)) => {
            // While the leaving pods still hold hash slots, the StatefulSet keeps them.
            if let Some(s) = shrink {
                d.stateful_set.spec.replicas = Some(i32::try_from(s.from).unwrap_or(i32::MAX));
            }
            ssa(&ctx.client, &ns, &d.config_map).await?;
            ssa(&ctx.client, &ns, &d.headless_service).await?;
            ssa(&ctx.client, &ns, &d.client_service).await?;
            ssa(&ctx.client, &ns, &d.stateful_set).await?;
            ssa(&ctx.client, &ns, &d.pdb).await?;
            let previous_generation = rc.status.as_ref().and_then(|s| s.observed_generation);
            if previous_generation != rc.metadata.generation {
                publish(
                    ctx,
                    rc,
                    EventType::Normal,
                    "Applied",
                    format!(
                        "applied generation {} with size {}",
                        rc.metadata.generation.unwrap_or(0),
                        rc.spec.size
                    ),
                )
                .await;
            }
            match shrink {
                None => Outcome::Applied {
                    cluster: form_cluster(rc, ctx, &pods).await,
                },
                Some(s) => {
                    let drain = drain(rc, ctx, &pods, s).await;
                    if drain == Drain::Done {
                        d.stateful_set.spec.replicas = Some(rc.spec.size);
                        ssa(&ctx.client, &ns, &d.stateful_set).await?;
                    }
                    Outcome::Shrinking {
                        from: s.from,
                        to: s.to,
                        drain,
                    }
                }
            }
        }
    };
    let observed: Vec<ObservedPod> = pods.iter().map(|(p, _)| p.clone()).collect();
    let new_status = status::compute(rc, &observed, &outcome, &now);
    if rc
        .status
        .as_ref()
        .is_none_or(|old| status::differs(old, &new_status))
    {
        let body = serde_json::json!({
            "apiVersion": RedisCluster::api_version(&()),
            "kind": RedisCluster::kind(&()),
            "status": new_status,
        });
        Api::<RedisCluster>::namespaced(ctx.client.clone(), &ns)
            .patch_status(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
            .map_err(|source| Error::UpdateStatus {
                name: format!("{ns}/{name}"),
                source,
            })?;
    }
    Ok(match outcome {
        Outcome::InvalidSpec(..) => Action::await_change(),
        Outcome::Applied { .. } => Action::requeue(RESYNC),
        // Pod events wake a waiting drain too; the timer retries a failed one.
        Outcome::Shrinking { .. } => Action::requeue(DRAIN_RETRY),
    })
}

/// The replicas the StatefulSet currently asks for (`None` before it exists). Read with a list by
/// name: the CSV grants `list`, not `get`, on StatefulSets.
async fn observe_statefulset_replicas(ctx: &Context, ns: &str, name: &str) -> Result<Option<i32>, Error> {
    let list = Api::<StatefulSet>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default().fields(&format!("metadata.name={name}")))
        .await
        .map_err(|source| Error::Observe {
            name: format!("{ns}/{name}"),
            source,
        })?;
    Ok(list.items.first().and_then(|s| s.spec.replicas))
}

async fn observe_pods(
    ctx: &Context,
    ns: &str,
    name: &str,
) -> Result<Vec<(ObservedPod, Option<String>)>, Error> {
    let selector = selector_labels(name)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|source| Error::Observe {
            name: format!("{ns}/{name}"),
            source,
        })?;
    Ok(pods
        .items
        .iter()
        .map(|p| {
            let st = p.status.as_ref();
            let ready = st
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            let ip = st.and_then(|s| s.pod_ip.clone());
            (
                ObservedPod {
                    name: p.name_any(),
                    ready,
                    terminating: p.metadata.deletion_timestamp.is_some(),
                },
                ip,
            )
        })
        .collect())
}

/// Pods as cluster nodes, ordered by ordinal (the [`cluster_mode::NodeSource`] of a live cluster).
struct PodNodes(Vec<Node>);

impl cluster_mode::NodeSource for PodNodes {
    fn nodes(&self) -> Vec<Node> {
        self.0.clone()
    }
}

/// The ready, running pods with an address, as cluster nodes ordered by ordinal.
fn ready_nodes(pods: &[(ObservedPod, Option<String>)]) -> Vec<Node> {
    let mut nodes: Vec<(u32, Node)> = pods
        .iter()
        .filter(|(p, ip)| p.ready && !p.terminating && ip.is_some())
        .map(|(p, ip)| {
            let ordinal = p
                .name
                .rsplit('-')
                .next()
                .and_then(|o| o.parse().ok())
                .unwrap_or(u32::MAX);
            let ip = ip.clone().unwrap_or_default();
            (
                ordinal,
                Node {
                    name: p.name.clone(),
                    addr: format!("{ip}:{REDIS_PORT}"),
                },
            )
        })
        .collect();
    nodes.sort_by_key(|(o, _)| *o);
    nodes.into_iter().map(|(_, n)| n).collect()
}

async fn form_cluster(
    rc: &RedisCluster,
    ctx: &Context,
    pods: &[(ObservedPod, Option<String>)],
) -> Option<Result<(), String>> {
    if rc.spec.mode != Mode::Cluster {
        return None;
    }
    let size = usize::try_from(rc.spec.size).unwrap_or(0);
    let nodes = ready_nodes(pods);
    if nodes.len() != size {
        return None;
    }
    let source = PodNodes(nodes);
    let rpp = usize::try_from(rc.spec.replicas_per_primary_or_default()).unwrap_or(1);
    match cluster_mode::converge(&source, rpp, cluster_mode::Options::default()).await {
        Ok(o) => {
            if o.changed() {
                publish(
                    ctx,
                    rc,
                    EventType::Normal,
                    "ClusterConverged",
                    format!(
                        "{} primaries; met {} nodes, added {} slots, moved {} slots, attached {} replicas",
                        o.primaries, o.met, o.slots_added, o.slots_moved, o.replicas_attached
                    ),
                )
                .await;
            }
            Some(Ok(()))
        }
        Err(e) => {
            publish(
                ctx,
                rc,
                EventType::Warning,
                "ClusterFormationFailed",
                e.to_string(),
            )
            .await;
            Some(Err(e.to_string()))
        }
    }
}

/// Drains the pods from ordinal `s.to` on ([`cluster_mode::shrink`]) once every pod is ready.
async fn drain(
    rc: &RedisCluster,
    ctx: &Context,
    pods: &[(ObservedPod, Option<String>)],
    s: desired::Shrink,
) -> Drain {
    let nodes = ready_nodes(pods);
    let expected: Vec<String> = (0..s.from).map(|i| format!("{}-{i}", rc.name_any())).collect();
    if nodes.iter().map(|n| &n.name).ne(expected.iter()) {
        return Drain::Waiting(format!(
            "waiting for all {} pods to be ready with an address ({} are)",
            s.from,
            nodes.len()
        ));
    }
    let rpp = usize::try_from(rc.spec.replicas_per_primary_or_default()).unwrap_or(1);
    match cluster_mode::shrink(&PodNodes(nodes), s.to, rpp, cluster_mode::Options::default()).await {
        Ok(o) => {
            publish(
                ctx,
                rc,
                EventType::Normal,
                "Drained",
                format!(
                    "moved {} slots off {}, reattached {} replicas, sent {} CLUSTER FORGET and {} CLUSTER RESET; scaling the StatefulSet from {} to {}",
                    o.slots_moved,
                    o.removed.join(", "),
                    o.replicas_reattached,
                    o.forgets,
                    o.resets,
                    s.from,
                    s.to
                ),
            )
            .await;
            Drain::Done
        }
        Err(e) => {
            let message = error_chain(&e);
            publish(ctx, rc, EventType::Warning, "DrainFailed", message.clone()).await;
            Drain::Failed(message)
        }
    }
}

/// The finalizer's cleanup. Claims are deleted only once the StatefulSet is scaled to zero and its
/// pods are gone: a StatefulSet recreates the missing claims of its pending pods, so deleting them
/// earlier could leave new claims behind. Returns `Some(action)` while waiting for the pods.
async fn cleanup(rc: &RedisCluster, ctx: &Context) -> Result<Option<Action>, Error> {
    let ns = rc.namespace().unwrap_or_default();
    let name = rc.name_any();
    let failed = |source| Error::Cleanup {
        name: format!("{ns}/{name}"),
        source,
    };
    let scale_down = serde_json::json!({"spec": {"replicas": 0}});
    match Api::<StatefulSet>::namespaced(ctx.client.clone(), &ns)
        .patch(
            &name,
            &PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&scale_down),
        )
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_not_found() => {}
        Err(e) => return Err(failed(e)),
    }
    let pods = observe_pods(ctx, &ns, &name).await?;
    if !pods.is_empty() {
        tracing::info!(cluster = %format!("{ns}/{name}"), pods = pods.len(), "waiting for the pods to stop before deleting claims");
        return Ok(Some(Action::requeue(Duration::from_secs(2))));
    }
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &ns);
    let selector = selector_labels(&name)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let list = claims
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(failed)?;
    let prefix = desired::claim_prefix(rc);
    let mut deleted = 0;
    for pvc in list.items.iter().filter(|c| c.name_any().starts_with(&prefix)) {
        match claims.delete(&pvc.name_any(), &DeleteParams::default()).await {
            Ok(_) => deleted += 1,
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => return Err(failed(e)),
        }
    }
    publish(
        ctx,
        rc,
        EventType::Normal,
        "ClaimsDeleted",
        format!("deleted {deleted} PersistentVolumeClaims"),
    )
    .await;
    ctx.metrics.set_managed(&format!("{ns}/{name}"), false);
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_five_seconds_and_stops_at_the_resync_interval() {
        let secs: Vec<u64> = (1..=9).map(|n| BACKOFF.delay(n).as_secs()).collect();
        assert_eq!(secs, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
    }

    #[test]
    fn the_finalizer_is_added_only_when_claims_must_be_deleted_and_cleaned_up_on_deletion() {
        use FinalizerStep::*;
        // (wants, has, deleting)
        assert_eq!(finalizer_step(true, false, false), Add);
        assert_eq!(finalizer_step(true, true, false), Keep);
        assert_eq!(finalizer_step(false, false, false), Keep);
        assert_eq!(finalizer_step(false, true, false), Remove);
        assert_eq!(finalizer_step(true, true, true), Cleanup);
        assert_eq!(
            finalizer_step(false, true, true),
            Cleanup,
            "a present finalizer is always honoured"
        );
        assert_eq!(
            finalizer_step(true, false, true),
            Gone,
            "never add a finalizer to a deleting object"
        );
    }

    #[test]
    fn only_storage_with_delete_claim_on_delete_wants_the_finalizer() {
        let rc =
            |spec: serde_json::Value| RedisCluster::new("r", serde_json::from_value(spec).expect("spec"));
        assert!(!wants_finalizer(&rc(serde_json::json!({"size": 1}))));
        assert!(!wants_finalizer(&rc(
            serde_json::json!({"size": 1, "storage": {"size": "1Gi"}})
        )));
        assert!(wants_finalizer(&rc(
            serde_json::json!({"size": 1, "storage": {"size": "1Gi", "deleteClaimOnDelete": true}})
        )));
    }

    #[test]
    fn an_error_chain_names_the_step_and_the_apiservers_answer() {
        let e = Error::Apply {
            kind: "ConfigMap",
            name: "r-config".into(),
            source: kube::Error::SerdeError(serde_json::from_str::<u8>("x").expect_err("bad json")),
        };
        let text = error_chain(&e);
        assert!(text.starts_with("failed to apply ConfigMap r-config: "), "{text}");
        assert!(
            text.len() > "failed to apply ConfigMap r-config: ".len(),
            "{text}"
        );
    }

    #[test]
    fn watch_namespace_is_a_comma_list_and_empty_means_all() {
        assert_eq!(parse_namespaces("a, b,,c"), ["a", "b", "c"]);
        assert!(parse_namespaces("").is_empty());
        assert!(parse_namespaces(" ").is_empty());
    }
}
