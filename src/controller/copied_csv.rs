//! Copied CSVs, the shell: a controller of its own, keyed by original CSV, that observes where
//! copies exist, lets [`crate::plan::copied_csv::decide`] say which copies to write and delete,
//! and acts with server-side apply under its own field manager `olm-rs/copied-csv` (metadata and
//! spec, then the `/status` subresource).
//!
//! **Off the install path.** Writing a copy into every namespace of an AllNamespaces group is
//! hundreds of writes; none of them happens inside a CSV reconcile (whose slot would be held
//! meanwhile). The CSV controller only asks for a sync ([`request`]: a key sent to this
//! controller's queue, no I/O), and so do the triggers [`run`] watches: a copy changed or
//! deleted ([`original_of`]), a namespace created (the originals of AllNamespaces groups), and
//! this controller's own schedules (a retry after a failure, a resync every
//! [`RESYNC`]). The queue ([`queue`]) holds each original once however many triggers arrive,
//! syncs it in one worker at a time, [`ORIGINALS_AT_ONCE`] originals at once, and each sync
//! writes up to [`WRITES_AT_ONCE`] copies at once. An original that is gone (or being deleted)
//! has its copies deleted by the same queue (upstream `removeDanglingChildCSVs`): the CSV
//! finalizer only asks for it.
//!
//! Copies are never reconciled as installed operators: the CSV reflector (and so the CSV
//! controller, resolution and the OperatorGroup controller) excludes `olm.copiedFrom`, and
//! [`is_copy`] guards the CSV controller against copies without the label. A copy never keeps
//! the CSV cleanup finalizer (the copy guards nothing; an own CSV overwritten by an older
//! olm-rs's copy carried it, and held its namespace in `Terminating`): [`strip_finalizer`]
//! removes it from any copy this controller lists, and the CSV controller from any copy it sees.
//!
//! Whether copies are disabled is [`super::olm_config::copies_disabled`]: `--disable-copied-csvs`
//! or the OLMConfig `cluster`, read only for AllNamespaces groups. When they are enabled again
//! the original's `DisabledCopiedCSVs` Warnings are deleted, as upstream does.
//!
//! Efficiency: one metadata list (label `olm.copiedFrom`, field `metadata.name`) per sync;
//! the namespace list only for AllNamespaces groups; a copy is re-applied only when its content
//! differs from what this process applied last (a fingerprint kept in [`Copies`], in the shared
//! context, as upstream keeps spec and status hashes of the copies it wrote).

mod queue;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Resource, ResourceExt, api::ListParams, core::PartialObjectMeta, runtime::reflector::ObjectRef,
};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::{Context, Error, EventNote, Result, lock};
use crate::{
    api::{
        labels,
        v1alpha1::{ClusterServiceVersion, CsvReason},
    },
    k8s::apply,
    plan::copied_csv::{self as plan, Observed},
};

pub use plan::is_copy;

/// The field manager of copies.
pub const MANAGER: &str = "olm-rs/copied-csv";

/// Originals synced at once.
pub const ORIGINALS_AT_ONCE: usize = 4;

/// Copy writes (and deletes) in flight per original.
pub const WRITES_AT_ONCE: usize = 8;

/// How often an original's copies are checked without a trigger.
pub const RESYNC: Duration = Duration::from_secs(300);

/// An original CSV: (namespace, name).
type Key = (String, String);

/// A copy as this process last wrote it: its fingerprint, the fingerprint of its metadata and
/// spec, and the resourceVersion it was left at.
type Written = (u64, u64, Option<String>);

/// What the copied-CSV controller remembers between syncs.
#[derive(Default)]
struct Memory {
    /// (namespace, name) of each copy → what this process applied (a later resourceVersion means
    /// someone else changed the copy).
    applied: HashMap<Key, Written>,
    /// Originals whose `DisabledCopiedCSVs` Event this process recorded.
    disabled_noted: HashSet<Key>,
    /// Originals of AllNamespaces groups whose `DisabledCopiedCSVs` Events were deleted since
    /// copies were last disabled for them.
    events_cleared: HashSet<Key>,
    /// Originals of OwnNamespace groups known to have no copies.
    verified_own_only: HashSet<Key>,
}

/// The copied-CSV controller's state in the shared context: its memory and its queue's inlet.
pub struct Copies {
    memory: Mutex<Memory>,
    requests: UnboundedSender<Key>,
    inlet: Mutex<Option<UnboundedReceiver<Key>>>,
}

impl Default for Copies {
    fn default() -> Self {
        let (requests, inlet) = unbounded_channel();
        Self {
            memory: Mutex::default(),
            requests,
            inlet: Mutex::new(Some(inlet)),
        }
    }
}

impl Copies {
    /// Asks for a sync of the copies of the original `namespace`/`name` (no I/O).
    pub fn request(&self, namespace: &str, name: &str) {
        // The controller stopped: nothing left to sync.
        let _ = self.requests.send((namespace.to_owned(), name.to_owned()));
    }
}

/// Asks the copied-CSV controller to sync the copies of `csv` (nothing for a copy).
pub fn request(csv: &ClusterServiceVersion, ctx: &Context) {
    if is_copy(csv) {
        return;
    }
    ctx.shared
        .copies
        .request(&csv.namespace().unwrap_or_default(), &csv.name_any());
}

/// The original of a copy, to sync when the copy changes or goes.
pub fn original_of(csv: &impl Resource) -> Option<ObjectRef<ClusterServiceVersion>> {
    csv.meta()
        .labels
        .as_ref()?
        .get(labels::COPIED_FROM)
        .map(|from| ObjectRef::new(&csv.meta().name.clone().unwrap_or_default()).within(from))
}

/// A copy as listed: its resourceVersion and finalizers.
struct Listed {
    resource_version: String,
    finalizers: Vec<String>,
}

/// The copies of the original `ns`/`name` (label `olm.copiedFrom=<ns>`, same name), by namespace.
async fn existing_copies(ns: &str, name: &str, ctx: &Context) -> Result<BTreeMap<String, Listed>> {
    let lp = ListParams::default()
        .labels(&format!("{}={ns}", labels::COPIED_FROM))
        .fields(&format!("metadata.name={name}"));
    let all: Api<ClusterServiceVersion> = Api::all(ctx.client());
    let found = all
        .list_metadata(&lp)
        .await
        .map_err(Error::observe(format!("copies of CSV {ns}/{name}")))?;
    Ok(found
        .items
        .into_iter()
        .filter_map(|c| {
            Some((
                c.namespace()?,
                Listed {
                    resource_version: c.resource_version().unwrap_or_default(),
                    finalizers: c.finalizers().to_vec(),
                },
            ))
        })
        .collect())
}

/// Removes the CSV cleanup finalizer from the copy `namespace`/`name` when it carries it (module
/// doc: a copy guards nothing, and must never hold its namespace in `Terminating`).
pub(super) async fn strip_finalizer(
    ctx: &Context,
    namespace: &str,
    name: &str,
    resource_version: Option<&str>,
    finalizers: &[String],
) -> Result<()> {
    if !finalizers.iter().any(|f| f == labels::CSV_CLEANUP_FINALIZER) {
        return Ok(());
    }
    tracing::info!(%namespace, csv = %name, "removing the cleanup finalizer from a copied CSV");
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), namespace);
    apply::remove_finalizer(
        &api,
        name,
        resource_version,
        finalizers,
        labels::CSV_CLEANUP_FINALIZER,
    )
    .await
    .map_err(Error::apply(format!(
        "finalizers of copied CSV {namespace}/{name}"
    )))
}

/// Namespaces holding a CSV named as `csv` that is not a copy of it (their own install of the
/// operator, or another namespace's copy), from the CSV store: no copy goes there.
fn occupied_namespaces(csv: &ClusterServiceVersion, ctx: &Context) -> BTreeSet<String> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    ctx.shared
        .stores
        .csvs
        .state()
        .iter()
        .filter(|other| other.name_any() == name)
        .filter(|other| other.labels().get(labels::COPIED_FROM) != Some(&ns))
        .filter_map(|other| other.namespace())
        .filter(|other_ns| *other_ns != ns)
        .collect()
}

fn memory(ctx: &Context) -> std::sync::MutexGuard<'_, Memory> {
    lock(&ctx.shared.copies.memory)
}

/// Writes and prunes the copies of the original `csv` (nothing for a copy).
async fn sync_copies(csv: &ClusterServiceVersion, ctx: &Context) -> Result<()> {
    if is_copy(csv) {
        return Ok(());
    }
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    // The CSV's OperatorGroup, from its annotations (upstream `operatorGroupFromAnnotations`).
    let annotations = csv.annotations();
    let group_targets: Option<Vec<String>> = match (
        annotations.get(labels::OPERATOR_GROUP),
        annotations.get(labels::OPERATOR_NAMESPACE),
    ) {
        (Some(group), Some(group_ns)) if *group_ns == ns => ctx
            .shared
            .stores
            .operator_groups
            .state()
            .iter()
            .find(|g| g.namespace().as_deref() == Some(ns.as_str()) && g.name_any() == *group)
            .and_then(|g| g.status.as_ref().and_then(|s| s.namespaces.clone())),
        _ => None,
    };
    let key = (ns.clone(), name.clone());
    let conflict = csv.status.as_ref().and_then(|s| s.reason.as_ref())
        == Some(&CsvReason::InterOperatorGroupOwnerConflict);
    // Nothing to copy or prune: no group yet, or a CSV upstream never copies (a new one).
    let Some(targets) = group_targets
        .as_deref()
        .filter(|_| conflict || !plan::is_uncopiable(csv))
    else {
        return Ok(());
    };
    // An OwnNamespace group's CSV has no copies: list them once per process and per change of
    // targets, not on every sync.
    let own_only = targets.len() == 1 && targets[0] == ns && !conflict;
    if own_only && memory(ctx).verified_own_only.contains(&key) {
        return Ok(());
    }
    let listed = existing_copies(&ns, &name, ctx).await?;
    for (target, copy) in &listed {
        strip_finalizer(ctx, target, &name, Some(&copy.resource_version), &copy.finalizers).await?;
    }
    let existing: BTreeMap<String, String> = listed
        .into_iter()
        .map(|(target, copy)| (target, copy.resource_version))
        .collect();
    let all_namespaces = group_targets
        .as_deref()
        .is_some_and(|t| t.len() == 1 && t[0].is_empty());
    // The switch matters only for AllNamespaces groups (the flag or the OLMConfig `cluster`).
    let disabled = all_namespaces && super::olm_config::copies_disabled(ctx).await?;
    let cluster_namespaces: Vec<String> = if all_namespaces && !disabled && !plan::is_uncopiable(csv) {
        super::operator_group::list_namespaces(ctx)
            .await?
            .iter()
            .filter(|n| n.metadata.deletion_timestamp.is_none())
            .map(ResourceExt::name_any)
            .collect()
    } else {
        Vec::new()
    };
    let (applied, recorded): (BTreeMap<String, u64>, BTreeMap<String, String>) = {
        let memo = memory(ctx);
        let mine: Vec<(String, Written)> = existing
            .keys()
            .filter_map(|target| {
                memo.applied
                    .get(&(target.clone(), name.clone()))
                    .map(|entry| (target.clone(), entry.clone()))
            })
            .collect();
        (
            mine.iter().map(|(t, (fp, _, _))| (t.clone(), *fp)).collect(),
            mine.into_iter()
                .filter_map(|(t, (_, _, rv))| Some((t, rv?)))
                .collect(),
        )
    };
    let occupied = occupied_namespaces(csv, ctx);
    let drifted = plan::changed_by_others(&existing, &recorded);
    let versions = existing;
    let existing: BTreeSet<String> = versions.keys().cloned().collect();
    let decision = plan::decide(
        csv,
        &Observed {
            group_targets: group_targets.as_deref(),
            cluster_namespaces: &cluster_namespaces,
            existing: &existing,
            occupied: &occupied,
            drifted: &drifted,
            applied: &applied,
            copies_disabled: disabled,
        },
    );
    for target in decision.apply.iter().filter_map(ResourceExt::namespace) {
        if drifted.contains(&target) {
            tracing::info!(namespace = %target, csv = %name, "restoring a copied CSV that someone else changed");
        }
    }
    // The writes, a few at once; every one is tried, and the first failure is reported.
    let applies: Vec<_> = decision
        .apply
        .iter()
        .map(|copy| {
            let listed = copy.namespace().and_then(|target| versions.get(&target).cloned());
            apply_copy(copy, listed, ctx)
        })
        .collect();
    at_most(WRITES_AT_ONCE, applies).await?;
    let deletes: Vec<_> = decision
        .delete
        .iter()
        .map(|target| delete_copy(target, &name, ctx))
        .collect();
    at_most(WRITES_AT_ONCE, deletes).await?;
    tracing::debug!(
        original = %format!("{ns}/{name}"),
        written = decision.apply.len(),
        deleted = decision.delete.len(),
        "copies synced"
    );
    if own_only {
        memory(ctx).verified_own_only.insert(key.clone());
    } else {
        memory(ctx).verified_own_only.remove(&key);
    }
    if decision.copying_disabled {
        note_disabled(csv, ctx, key).await
    } else {
        memory(ctx).disabled_noted.remove(&key);
        // Copies are on again for an AllNamespaces operator: its `DisabledCopiedCSVs` Warnings
        // go (upstream `deleteCSVCopyingDisabledEvent`), once per process and per switch.
        if all_namespaces && !memory(ctx).events_cleared.contains(&key) {
            crate::k8s::events::delete_regarding(
                ctx.client(),
                &csv.object_ref(&()),
                plan::DISABLED_EVENT_REASON,
            )
            .await
            .map_err(|source| Error::Delete {
                what: format!("DisabledCopiedCSVs Events of CSV {ns}/{name}"),
                source,
            })?;
            memory(ctx).events_cleared.insert(key);
        }
        Ok(())
    }
}

/// Runs `writes`, `limit` at once; every one is tried, and the first failure is returned.
async fn at_most(limit: usize, writes: Vec<impl std::future::Future<Output = Result<()>>>) -> Result<()> {
    futures::stream::iter(writes)
        .buffer_unordered(limit)
        .collect::<Vec<Result<()>>>()
        .await
        .into_iter()
        .collect()
}

/// Copies are disabled for the AllNamespaces original `csv`: its one `DisabledCopiedCSVs`
/// Warning. Once per CSV: this process remembers it gave the Warning, and after a restart the
/// Events already written say so. As upstream: exactly one stands; several (two processes raced)
/// are replaced by one.
async fn note_disabled(csv: &ClusterServiceVersion, ctx: &Context, key: Key) -> Result<()> {
    memory(ctx).events_cleared.remove(&key);
    if !memory(ctx).disabled_noted.insert(key.clone()) {
        return Ok(());
    }
    let (ns, name) = key.clone();
    let regarding = csv.object_ref(&());
    let what = || format!("DisabledCopiedCSVs Events of CSV {ns}/{name}");
    let forget = || {
        memory(ctx).disabled_noted.remove(&key);
    };
    let existing = crate::k8s::events::count_regarding(ctx.client(), &regarding, plan::DISABLED_EVENT_REASON)
        .await
        .map_err(|source| {
            forget();
            Error::Observe { what: what(), source }
        })?;
    if existing > 1 {
        crate::k8s::events::delete_regarding(ctx.client(), &regarding, plan::DISABLED_EVENT_REASON)
            .await
            .map_err(|source| {
                forget();
                Error::Delete { what: what(), source }
            })?;
    }
    if existing != 1 {
        ctx.publish(vec![EventNote {
            regarding,
            warning: true,
            reason: plan::DISABLED_EVENT_REASON.to_owned(),
            action: "Sync",
            note: plan::disabled_note(&ns, &name),
        }]);
    }
    Ok(())
}

/// Writes one copy: metadata and spec, then status. A copy that does not exist yet is created
/// (never applied: a CSV of that name created meanwhile, the namespace's own install, is left
/// alone), one that exists is applied at the resourceVersion listed (so it is never applied over
/// an own CSV that replaced it), and its status at the version that write left. A target
/// namespace that does not exist (yet) or is being deleted gets no copy; its creation (or the
/// group's next change) brings it.
async fn apply_copy(copy: &ClusterServiceVersion, listed: Option<String>, ctx: &Context) -> Result<()> {
    let target = copy.namespace().unwrap_or_default();
    let name = copy.name_any();
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), &target);
    let what = format!("copied CSV {target}/{name}");
    let mut object = copy.clone();
    let status = object.status.take().unwrap_or_default();
    let spec = plan::spec_fingerprint(copy);
    // Only the status differs from what this process wrote, and nobody changed the copy since.
    let status_only = listed.as_ref().is_some_and(|version| {
        memory(ctx)
            .applied
            .get(&(target.clone(), name.clone()))
            .is_some_and(|(_, written_spec, rv)| *written_spec == spec && rv.as_ref() == Some(version))
    });
    let written = match listed {
        Some(version) if status_only => Ok(version),
        None => {
            let params = kube::api::PostParams {
                field_manager: Some(MANAGER.to_owned()),
                ..Default::default()
            };
            api.create(&params, &object)
                .await
                .map(|c| c.resource_version().unwrap_or_default())
        }
        Some(version) => {
            object.metadata.resource_version = Some(version);
            apply::apply(&api, &name, &object, MANAGER)
                .await
                .map(|c| c.resource_version().unwrap_or_default())
        }
    };
    let version = match written {
        Ok(version) => version,
        // Gone, terminating, or taken meanwhile (created by its own install, or replaced): the
        // next sync sees what is there now.
        Err(kube::Error::Api(s))
            if s.code == 404 || s.code == 409 || (s.code == 403 && s.message.contains("terminat")) =>
        {
            return Ok(());
        }
        Err(source) => return Err(Error::apply(what)(source)),
    };
    let written = match apply::apply_status_at(&api, &name, &version, &status, MANAGER).await {
        Ok(written) => written,
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => return Ok(()),
        Err(source) => return Err(Error::apply(format!("status of {what}"))(source)),
    };
    memory(ctx).applied.insert(
        (target, name),
        (plan::fingerprint(copy), spec, written.resource_version()),
    );
    Ok(())
}

/// Before the install path applies its CSV `name` in `ns` (the object `object`): the namespace's
/// own CSV takes the place of a copy, never merges into it (a CSV applied over a copy stays a
/// copy, and nothing would install it). When the store does not hold the CSV, it is created
/// by `creator` (a copy written meanwhile makes that fail); a copy found in its place is deleted (at the
/// version read, so an own CSV is never deleted). `Ok(false)`: a copy was in the way, try again.
pub(super) async fn make_room_for_own(
    ctx: &Context,
    creator: kube::Client,
    ns: &str,
    name: &str,
    object: &serde_json::Value,
) -> kube::Result<bool> {
    if ctx
        .shared
        .stores
        .csvs
        .get(&ObjectRef::new(name).within(ns))
        .is_some()
    {
        return Ok(true);
    }
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), ns);
    let own: ClusterServiceVersion =
        serde_json::from_value(object.clone()).map_err(kube::Error::SerdeError)?;
    let params = kube::api::PostParams {
        field_manager: Some(ctx.manager.clone()),
        ..Default::default()
    };
    // Created by `creator` (the plan's ServiceAccount for a scoped plan, so a missing
    // permission reads as upstream's `cannot create resource`); the rest is bookkeeping.
    let created = Api::<ClusterServiceVersion>::namespaced(creator, ns)
        .create(&params, &own)
        .await;
    match created {
        Ok(_) => return Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e),
    }
    let Some(live) = api.get_opt(name).await? else {
        return Ok(false);
    };
    if !is_copy(&live) {
        return Ok(true);
    }
    tracing::info!(namespace = %ns, csv = %name, "deleting a copied CSV: the namespace installs its own");
    if live
        .finalizers()
        .iter()
        .any(|f| f == labels::CSV_CLEANUP_FINALIZER)
    {
        apply::remove_finalizer(
            &api,
            name,
            live.resource_version().as_deref(),
            live.finalizers(),
            labels::CSV_CLEANUP_FINALIZER,
        )
        .await?;
    }
    if let Some(uid) = live.uid() {
        apply::delete_observed(&api, name, &uid).await?;
    }
    memory(ctx).applied.remove(&(ns.to_owned(), name.to_owned()));
    Ok(false)
}

async fn delete_copy(target: &str, name: &str, ctx: &Context) -> Result<()> {
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), target);
    memory(ctx).applied.remove(&(target.to_owned(), name.to_owned()));
    apply::delete_if_present(&api, name)
        .await
        .map(drop)
        .map_err(|source| Error::Delete {
            what: format!("copied CSV {target}/{name}"),
            source,
        })
}

/// Deletes every copy of the original `ns`/`name` (it is gone or being deleted), finalizers
/// first, and forgets what was remembered of it.
async fn delete_copies(ns: &str, name: &str, ctx: &Context) -> Result<()> {
    let listed = existing_copies(ns, name, ctx).await?;
    for (target, copy) in &listed {
        strip_finalizer(ctx, target, name, Some(&copy.resource_version), &copy.finalizers).await?;
    }
    let deletes: Vec<_> = listed
        .keys()
        .map(|target| delete_copy(target, name, ctx))
        .collect();
    at_most(WRITES_AT_ONCE, deletes).await?;
    let key = (ns.to_owned(), name.to_owned());
    let mut memo = memory(ctx);
    memo.verified_own_only.remove(&key);
    memo.disabled_noted.remove(&key);
    memo.events_cleared.remove(&key);
    Ok(())
}

/// One sync of the original `key`: its copies written and pruned, or all deleted when the
/// original is gone, being deleted, or not an original. True when the original stays (its
/// copies are checked again after [`RESYNC`]).
async fn sync_key(key: &Key, ctx: &Context) -> Result<bool> {
    let original = ctx.shared.stores.csvs.get(&ObjectRef::new(&key.1).within(&key.0));
    match original {
        Some(csv) if !is_copy(&csv) && csv.metadata.deletion_timestamp.is_none() => {
            sync_copies(&csv, ctx).await.map(|()| true)
        }
        _ => delete_copies(&key.0, &key.1, ctx).await.map(|()| false),
    }
}

/// The originals whose copies a namespace event may change: those of AllNamespaces groups
/// (from the stores), for a namespace that is not being deleted.
fn originals_for_namespace(ns: &PartialObjectMeta<Namespace>, ctx: &Context) -> Vec<Key> {
    if ns.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let all_namespaces: BTreeSet<(String, String)> = ctx
        .shared
        .stores
        .operator_groups
        .state()
        .iter()
        .filter(|g| {
            g.status
                .as_ref()
                .and_then(|s| s.namespaces.as_deref())
                .is_some_and(|t| t.len() == 1 && t[0].is_empty())
        })
        .filter_map(|g| Some((g.namespace()?, g.name_any())))
        .collect();
    ctx.shared
        .stores
        .csvs
        .state()
        .iter()
        .filter(|c| !is_copy(c))
        .filter_map(|c| {
            let ns = c.namespace()?;
            let group = c.annotations().get(labels::OPERATOR_GROUP)?;
            all_namespaces
                .contains(&(ns.clone(), group.clone()))
                .then(|| (ns, c.name_any()))
        })
        .collect()
}

/// Runs the copied-CSV controller (module doc; the caller aborts it on shutdown): its queue takes the requests
/// of [`Copies::request`], the originals of the copies `copies` reports, and those of AllNamespaces
/// groups when `namespaces` reports a namespace.
pub async fn run(
    ctx: Arc<Context>,
    copies: impl Stream<
        Item = std::result::Result<PartialObjectMeta<ClusterServiceVersion>, kube::runtime::watcher::Error>,
    > + Send
    + 'static,
    namespaces: impl Stream<
        Item = std::result::Result<PartialObjectMeta<Namespace>, kube::runtime::watcher::Error>,
    > + Send
    + 'static,
) {
    let Some(inlet) = lock(&ctx.shared.copies.inlet).take() else {
        tracing::warn!("the copied-CSV controller runs once per process");
        return;
    };
    let requests = futures::stream::unfold(
        inlet,
        |mut rx| async move { rx.recv().await.map(|k| (vec![k], rx)) },
    );
    let from_copies = copies.filter_map(|event| async move {
        let copy = event.ok()?;
        let original = original_of(&copy)?;
        Some(vec![(original.namespace.unwrap_or_default(), original.name)])
    });
    let from_namespaces = namespaces.filter_map({
        let ctx = Arc::clone(&ctx);
        move |event| {
            let keys = event.ok().map(|ns| originals_for_namespace(&ns, &ctx));
            async move { keys.filter(|k| !k.is_empty()) }
        }
    });
    let mut triggers =
        futures::stream::select_all([requests.boxed(), from_copies.boxed(), from_namespaces.boxed()]);
    // No decision before every store has its first list (an original not yet in the store must
    // not read as gone); the triggers are taken in meanwhile.
    let mut synced = ctx.shared.synced.clone();
    let mut queue = queue::WorkQueue::<Key>::default();
    let mut workers = tokio::task::JoinSet::new();
    loop {
        let ready = *synced.borrow();
        while ready
            && workers.len() < ORIGINALS_AT_ONCE
            && let Some(key) = queue.next()
        {
            let ctx = Arc::clone(&ctx);
            workers.spawn(async move {
                let timer = ctx.shared.metrics.start_reconcile(ctx.name);
                let started = Instant::now();
                let result = sync_key(&key, &ctx).await;
                timer.finish(result.is_ok());
                tracing::debug!(original = %format!("{}/{}", key.0, key.1), elapsed = ?started.elapsed(), "copied CSV sync");
                (key, result)
            });
        }
        let due = queue.next_due();
        tokio::select! {
            changed = synced.changed(), if !ready => if changed.is_err() { break },
            trigger = triggers.next() => match trigger {
                Some(keys) => keys.into_iter().for_each(|k| queue.add(k)),
                None => break,
            },
            Some(joined) = workers.join_next(), if !workers.is_empty() => {
                let Ok((key, result)) = joined else { continue };
                queue.done(&key);
                let backoff_key = format!("{}/{}/{}", ctx.name, key.0, key.1);
                let delay = match result {
                    Ok(stays) => {
                        ctx.reset_backoff(&backoff_key);
                        if !stays {
                            continue;
                        }
                        RESYNC
                    }
                    Err(err) => {
                        ctx.shared.metrics.count_error(ctx.name, err.metric_label());
                        let delay = ctx.next_backoff(&backoff_key);
                        tracing::warn!(original = %format!("{}/{}", key.0, key.1), error = %err, retry_in = ?delay, "copied CSV sync failed");
                        delay
                    }
                };
                queue.after(key, Instant::now() + delay);
            },
            () = async {
                match due {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            } => queue.add_due(Instant::now()),
        }
    }
    workers.shutdown().await;
}
