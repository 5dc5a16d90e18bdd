//! Copied CSVs, the shell: called by the CSV controller after each reconcile of an original
//! CSV (and from its finalizer), it observes where copies exist, lets
//! [`crate::plan::copied_csv::decide`] say which copies to write and delete, and acts with
//! server-side apply under its own field manager `olm-rs/copied-csv` (metadata and spec, then
//! the `/status` subresource).
//!
//! Copies are never reconciled as installed operators: the CSV reflector (and so the CSV
//! controller, resolution and the OperatorGroup controller) excludes `olm.copiedFrom`, and
//! [`is_copy`] guards the CSV controller against copies without the label. A change to a copy
//! (a user deleting it) triggers its original through [`original_of`].
//!
//! Whether copies are disabled is [`super::olm_config::copies_disabled`]: `--disable-copied-csvs`
//! or the OLMConfig `cluster`, read only for AllNamespaces groups. When they are enabled again
//! the original's `DisabledCopiedCSVs` Warnings are deleted, as upstream does.
//!
//! Efficiency: one metadata list (label `olm.copiedFrom`, field `metadata.name`) per reconcile;
//! the namespace list only for AllNamespaces groups; a copy is re-applied only when its content
//! differs from what this process applied last (a process-local fingerprint, as upstream keeps
//! spec and status hashes of the copies it wrote).

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::{LazyLock, Mutex},
};

use kube::{Api, Resource, ResourceExt, api::ListParams, runtime::reflector::ObjectRef};

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

/// What this process applied: (namespace, name) → fingerprint of the copy, and the copy's
/// resourceVersion after that write (a later one means someone else changed the copy).
static APPLIED: LazyLock<Mutex<HashMap<(String, String), Written>>> = LazyLock::new(Default::default);

/// A copy as this process last wrote it: its fingerprint and the resourceVersion it was left at.
type Written = (u64, Option<String>);

/// Originals whose `DisabledCopiedCSVs` Event this process recorded: (namespace, name).
static DISABLED_NOTED: LazyLock<Mutex<HashSet<(String, String)>>> = LazyLock::new(Default::default);

/// Originals of AllNamespaces groups whose `DisabledCopiedCSVs` Events were deleted since
/// copies were last disabled for them: (namespace, name).
static EVENTS_CLEARED: LazyLock<Mutex<HashSet<(String, String)>>> = LazyLock::new(Default::default);

/// Originals of OwnNamespace groups known to have no copies: (namespace, name).
static VERIFIED_OWN_ONLY: LazyLock<Mutex<HashSet<(String, String)>>> = LazyLock::new(Default::default);

/// The original of a copy, to reconcile when the copy changes or goes.
pub fn original_of(csv: &ClusterServiceVersion) -> Option<ObjectRef<ClusterServiceVersion>> {
    csv.labels()
        .get(labels::COPIED_FROM)
        .map(|from| ObjectRef::new(&csv.name_any()).within(from))
}

/// Namespaces holding a copy of `csv` (label `olm.copiedFrom=<ns>`, same name), with the
/// copy's resourceVersion.
async fn existing_copies(csv: &ClusterServiceVersion, ctx: &Context) -> Result<BTreeMap<String, String>> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
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
        .iter()
        .filter_map(|c| Some((c.namespace()?, c.resource_version().unwrap_or_default())))
        .collect())
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

/// Writes and prunes the copies of the original `csv` (nothing for a copy).
pub async fn sync_copies(csv: &ClusterServiceVersion, ctx: &Context) -> Result<()> {
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
    // targets, not on every reconcile.
    let own_only = targets.len() == 1 && targets[0] == ns && !conflict;
    if own_only && lock(&VERIFIED_OWN_ONLY).contains(&key) {
        return Ok(());
    }
    let existing = existing_copies(csv, ctx).await?;
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
        let memo = lock(&APPLIED);
        let mine: Vec<(String, Written)> = existing
            .keys()
            .filter_map(|target| {
                memo.get(&(target.clone(), name.clone()))
                    .map(|entry| (target.clone(), entry.clone()))
            })
            .collect();
        (
            mine.iter().map(|(t, (fp, _))| (t.clone(), *fp)).collect(),
            mine.into_iter()
                .filter_map(|(t, (_, rv))| Some((t, rv?)))
                .collect(),
        )
    };
    let occupied = occupied_namespaces(csv, ctx);
    let drifted = plan::changed_by_others(&existing, &recorded);
    let existing: BTreeSet<String> = existing.into_keys().collect();
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
    for copy in &decision.apply {
        let target = copy.namespace().unwrap_or_default();
        if drifted.contains(&target) {
            tracing::info!(namespace = %target, csv = %name, "restoring a copied CSV that someone else changed");
        }
        apply_copy(copy, ctx).await?;
    }
    for target in &decision.delete {
        delete_copy(target, &name, ctx).await?;
    }
    if own_only {
        lock(&VERIFIED_OWN_ONLY).insert(key.clone());
    } else {
        lock(&VERIFIED_OWN_ONLY).remove(&key);
    }
    if decision.copying_disabled {
        lock(&EVENTS_CLEARED).remove(&key);
        // Once per CSV: this process remembers it gave the Warning, and after a restart the
        // Events already written say so. As upstream: exactly one stands; several (two
        // processes raced) are replaced by one.
        if lock(&DISABLED_NOTED).insert(key.clone()) {
            let regarding = csv.object_ref(&());
            let what = || format!("DisabledCopiedCSVs Events of CSV {ns}/{name}");
            let forget = || {
                lock(&DISABLED_NOTED).remove(&key);
            };
            let existing =
                crate::k8s::events::count_regarding(ctx.client(), &regarding, plan::DISABLED_EVENT_REASON)
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
        }
    } else {
        lock(&DISABLED_NOTED).remove(&key);
        // Copies are on again for an AllNamespaces operator: its `DisabledCopiedCSVs` Warnings
        // go (upstream `deleteCSVCopyingDisabledEvent`), once per process and per switch.
        if all_namespaces && !lock(&EVENTS_CLEARED).contains(&key) {
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
            lock(&EVENTS_CLEARED).insert(key);
        }
    }
    Ok(())
}

/// Applies one copy: metadata and spec, then status. A target namespace that does not exist
/// (yet) or is being deleted gets no copy; the group's next change brings it.
async fn apply_copy(copy: &ClusterServiceVersion, ctx: &Context) -> Result<()> {
    let target = copy.namespace().unwrap_or_default();
    let name = copy.name_any();
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), &target);
    let what = format!("copied CSV {target}/{name}");
    let mut object = copy.clone();
    let status = object.status.take().unwrap_or_default();
    match apply::apply(&api, &name, &object, MANAGER).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 || (s.code == 403 && s.message.contains("terminat")) => {
            return Ok(());
        }
        Err(source) => return Err(Error::apply(what)(source)),
    }
    let written = apply::apply_status(&api, &name, &status, MANAGER)
        .await
        .map_err(Error::apply(format!("status of {what}")))?;
    lock(&APPLIED).insert(
        (target, name),
        (plan::fingerprint(copy), written.resource_version()),
    );
    Ok(())
}

async fn delete_copy(target: &str, name: &str, ctx: &Context) -> Result<()> {
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), target);
    lock(&APPLIED).remove(&(target.to_owned(), name.to_owned()));
    apply::delete_if_present(&api, name)
        .await
        .map(drop)
        .map_err(|source| Error::Delete {
            what: format!("copied CSV {target}/{name}"),
            source,
        })
}

/// Deletes every copy of the original `csv` (its finalizer: the original goes).
pub async fn delete_copies(csv: &ClusterServiceVersion, ctx: &Context) -> Result<()> {
    if is_copy(csv) {
        return Ok(());
    }
    let name = csv.name_any();
    for target in existing_copies(csv, ctx).await?.into_keys() {
        delete_copy(&target, &name, ctx).await?;
    }
    let key = (csv.namespace().unwrap_or_default(), name);
    lock(&VERIFIED_OWN_ONLY).remove(&key);
    lock(&DISABLED_NOTED).remove(&key);
    lock(&EVENTS_CLEARED).remove(&key);
    Ok(())
}
