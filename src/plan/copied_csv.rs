//! Copied CSVs: which copies of an installed CSV must exist, as upstream OLM v0 writes them
//! (`operatorgroup.go` `ensureCSVsInNamespaces`, `csvCopyPrototype`, `pruneFromNamespace`;
//! `operator.go` `syncCopyCSV`, `removeDanglingChildCSVs`).
//!
//! The rule: a CSV that is not itself a copy and is copiable (its phase is set and its reason
//! is not one of upstream's uncopiable reasons) has a copy in every target namespace of its
//! OperatorGroup other than its own; an AllNamespaces group means every namespace of the
//! cluster. Each copy is the original's metadata name, labels (without the Operator component
//! labels `operators.coreos.com/*`) plus `olm.copiedFrom: <original namespace>`, annotations
//! (without `olm.targetNamespaces` and kubectl's last-applied configuration), the whole spec,
//! and the original's status with reason `Copied` and the message "The operator is running in
//! <ns> but is managing this namespace". Copies in namespaces that are no longer targets are
//! deleted; all of them when the original failed with `InterOperatorGroupOwnerConflict`.
//! A copy is never written where the namespace holds its own CSV of the same name (its own
//! install of the operator): the copy would take that CSV over, and nothing would manage its
//! operator any more. A copy someone else changed is written again.
//! With copied CSVs disabled (OLMConfig `disableCopiedCSVs` or `--disable-copied-csvs`, see
//! [`crate::plan::olm_config::copies_disabled`]) upstream stops copying only for AllNamespaces groups, deletes their copies and records a
//! `DisabledCopiedCSVs` Warning on the original; other groups keep their copies.
//!
//! No I/O: the shell (`controller::copied_csv`) passes the original, its group's target
//! namespaces, the cluster's namespaces and where copies exist.

use std::{
    collections::{BTreeMap, BTreeSet},
    hash::{DefaultHasher, Hash, Hasher},
};

use kube::{Resource, ResourceExt, api::ObjectMeta};

use crate::api::{
    labels,
    v1alpha1::{ClusterServiceVersion, CsvPhase, CsvReason},
};

/// kubectl's client-side apply annotation, never copied (upstream: "big").
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Reason of the Warning Event recorded on an original whose copies are disabled.
pub const DISABLED_EVENT_REASON: &str = "DisabledCopiedCSVs";

/// The message of every copy's status.
pub fn copied_message(original_namespace: &str) -> String {
    format!("The operator is running in {original_namespace} but is managing this namespace")
}

/// The note of the `DisabledCopiedCSVs` Event.
pub fn disabled_note(namespace: &str, name: &str) -> String {
    format!("CSV copying disabled for {namespace}/{name}")
}

/// True when `csv` is a copy (upstream `IsCopied`): reason `Copied`, the `olm.copiedFrom`
/// label, or an `olm.operatorNamespace` annotation naming another namespace. A copy is never
/// reconciled as an installed operator nor counted as installed by resolution.
pub fn is_copy(csv: &ClusterServiceVersion) -> bool {
    let reason_copied = csv
        .status
        .as_ref()
        .and_then(|s| s.reason.as_ref())
        .is_some_and(|r| *r == CsvReason::Copied);
    let foreign_group = csv
        .annotations()
        .get(labels::OPERATOR_NAMESPACE)
        .is_some_and(|ns| Some(ns.as_str()) != csv.meta().namespace.as_deref());
    reason_copied || csv.labels().contains_key(labels::COPIED_FROM) || foreign_group
}

/// True when upstream never copies `csv` (`IsUncopiable`): no phase yet, or a reason that
/// says it is a copy or its OperatorGroup is unusable.
pub fn is_uncopiable(csv: &ClusterServiceVersion) -> bool {
    let status = csv.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_ref());
    if phase.is_none_or(|p| *p == CsvPhase::None) {
        return true;
    }
    status.and_then(|s| s.reason.as_ref()).is_some_and(|r| {
        matches!(
            r,
            CsvReason::Copied
                | CsvReason::InvalidInstallModes
                | CsvReason::NoTargetNamespaces
                | CsvReason::UnsupportedOperatorGroup
                | CsvReason::NoOperatorGroup
                | CsvReason::TooManyOperatorGroups
                | CsvReason::InterOperatorGroupOwnerConflict
                | CsvReason::CannotModifyStaticOperatorGroupProvidedApis
        )
    })
}

/// The copy of `original` in `namespace` (upstream `csvCopyPrototype`), status included.
pub fn copy_of(original: &ClusterServiceVersion, namespace: &str) -> ClusterServiceVersion {
    let from = original.namespace().unwrap_or_default();
    let mut copy_labels: BTreeMap<String, String> = original
        .labels()
        .iter()
        .filter(|(k, _)| !k.starts_with(labels::COMPONENT_LABEL_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    copy_labels.insert(labels::COPIED_FROM.to_owned(), from.clone());
    let annotations: BTreeMap<String, String> = original
        .annotations()
        .iter()
        .filter(|(k, _)| k.as_str() != labels::TARGET_NAMESPACES && k.as_str() != LAST_APPLIED)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut status = original.status.clone().unwrap_or_default();
    status.reason = Some(CsvReason::Copied);
    status.message = Some(copied_message(&from));
    ClusterServiceVersion {
        metadata: ObjectMeta {
            name: Some(original.name_any()),
            namespace: Some(namespace.to_owned()),
            labels: Some(copy_labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: original.spec.clone(),
        status: Some(status),
    }
}

/// A process-local fingerprint of a copy's content (metadata, spec and status), to skip
/// re-applying a copy that was applied unchanged (upstream keeps spec and status hashes).
pub fn fingerprint(copy: &ClusterServiceVersion) -> u64 {
    let mut hasher = DefaultHasher::new();
    serde_json::to_string(copy).unwrap_or_default().hash(&mut hasher);
    hasher.finish()
}

/// The fingerprint of a copy's metadata and spec alone: when only the status differs from what
/// was applied, the copy's status alone is written again (upstream's separate spec and status
/// hashes).
pub fn spec_fingerprint(copy: &ClusterServiceVersion) -> u64 {
    fingerprint(&ClusterServiceVersion {
        status: None,
        ..copy.clone()
    })
}

/// The namespaces whose copy someone else changed since this process last wrote it: its
/// resourceVersion (`live`) is not the one our last write left (`recorded`). Such a copy is
/// written again from the original (upstream's e2e suite changes a copy's status and waits for
/// it to come back); a copy this process never wrote is left to the fingerprint rule.
pub fn changed_by_others(
    live: &BTreeMap<String, String>,
    recorded: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    recorded
        .iter()
        .filter(|(ns, rv)| live.get(*ns).is_some_and(|now| now != *rv))
        .map(|(ns, _)| ns.clone())
        .collect()
}

/// What the shell observed about one original CSV.
#[derive(Debug, Clone)]
pub struct Observed<'a> {
    /// `status.namespaces` of the CSV's OperatorGroup (`[""]` for all namespaces); `None`
    /// when the CSV has no OperatorGroup (yet) or the group has no status.
    pub group_targets: Option<&'a [String]>,
    /// Every namespace of the cluster (read only for AllNamespaces groups).
    pub cluster_namespaces: &'a [String],
    /// Namespaces holding a copy of this CSV (`olm.copiedFrom=<ns>`, same name).
    pub existing: &'a BTreeSet<String>,
    /// Namespaces holding a CSV of this name that is not a copy of this one: the namespace's
    /// own install of the same operator, or a copy of another namespace's. No copy is ever
    /// written there (a copy applied over an own CSV would take it over).
    pub occupied: &'a BTreeSet<String>,
    /// Namespaces whose copy someone else changed ([`changed_by_others`]): written again.
    pub drifted: &'a BTreeSet<String>,
    /// The fingerprint of the copy last applied by this process, per namespace.
    pub applied: &'a BTreeMap<String, u64>,
    /// `--disable-copied-csvs` or OLMConfig `disableCopiedCSVs` (read for AllNamespaces groups).
    pub copies_disabled: bool,
}

static NO_NAMESPACES: BTreeSet<String> = BTreeSet::new();
static NOTHING_APPLIED: BTreeMap<String, u64> = BTreeMap::new();

impl Default for Observed<'_> {
    fn default() -> Self {
        Self {
            group_targets: None,
            cluster_namespaces: &[],
            existing: &NO_NAMESPACES,
            occupied: &NO_NAMESPACES,
            drifted: &NO_NAMESPACES,
            applied: &NOTHING_APPLIED,
            copies_disabled: false,
        }
    }
}

/// The copies to write and to delete.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    /// Copies to server-side apply (metadata and spec, then status).
    pub apply: Vec<ClusterServiceVersion>,
    /// Namespaces whose copy is deleted.
    pub delete: Vec<String>,
    /// Copying is disabled for this CSV's AllNamespaces group: record `DisabledCopiedCSVs`.
    pub copying_disabled: bool,
}

/// Decides the copies of `original` (which must not itself be a copy: see [`is_copy`]).
pub fn decide(original: &ClusterServiceVersion, observed: &Observed<'_>) -> Decision {
    let own = original.namespace().unwrap_or_default();
    let mut decision = Decision::default();
    if is_copy(original) {
        return decision;
    }
    let reason = original.status.as_ref().and_then(|s| s.reason.as_ref());
    if reason == Some(&CsvReason::InterOperatorGroupOwnerConflict) {
        decision.delete = observed.existing.iter().cloned().collect();
        return decision;
    }
    let Some(targets) = observed.group_targets else {
        return decision;
    };
    if is_uncopiable(original) {
        return decision;
    }
    let all_namespaces = targets.len() == 1 && targets[0].is_empty();
    let desired: BTreeSet<&str> = if all_namespaces {
        if observed.copies_disabled {
            decision.copying_disabled = true;
            BTreeSet::new()
        } else {
            observed.cluster_namespaces.iter().map(String::as_str).collect()
        }
    } else {
        targets
            .iter()
            .map(String::as_str)
            .filter(|ns| !ns.is_empty())
            .collect()
    };
    for ns in desired
        .iter()
        .filter(|ns| **ns != own && !observed.occupied.contains(**ns))
    {
        let copy = copy_of(original, ns);
        let current = observed.existing.contains(*ns)
            && !observed.drifted.contains(*ns)
            && observed.applied.get(*ns) == Some(&fingerprint(&copy));
        if !current {
            decision.apply.push(copy);
        }
    }
    decision.delete = observed
        .existing
        .iter()
        .filter(|ns| !desired.contains(ns.as_str()) || **ns == own)
        .cloned()
        .collect();
    decision
}

#[cfg(test)]
mod tests;
