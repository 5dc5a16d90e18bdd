//! OLMConfig: whether copied CSVs are on, and the status of the `cluster` OLMConfig, as
//! upstream OLM v0 decides them (`olm/operator.go` `copiedCSVsAreEnabled`, `syncOLMConfig`,
//! `getCopiedCSVsCondition`).
//!
//! The rules:
//! - Copied CSVs are disabled when the OLMConfig `cluster` says `spec.features.
//!   disableCopiedCSVs: true` **or** olm-controller runs with `--disable-copied-csvs` (the flag
//!   is a cluster administrator's override that the object cannot turn back on). No OLMConfig
//!   (its CRD not installed, or the object deleted) means the flag alone decides.
//! - Disabling affects only operators of AllNamespaces OperatorGroups (see
//!   [`crate::plan::copied_csv`]): their copies are removed; other groups keep theirs.
//! - The status condition `DisabledCopiedCSVs` carries upstream's reasons and messages:
//!   `CopiedCSVsEnabled` (False; "present across the cluster" or "at least one copied CSVs is
//!   missing"), `CopiedCSVsDisabled` (True when no AllNamespaces operator has a copy left,
//!   False while one does). An operator counts when its CSV is copiable and its copies are not
//!   exactly the active namespaces other than its own (enabled) or none (disabled).
//!   When the flag overrides the object, the message says so and names the fix.
//! - `spec.features.packageServerSyncInterval` tunes upstream's packageserver, which olm-rs
//!   does not run (its PackageManifest API answers from the catalogs as loaded, with nothing to
//!   resync): while it is set, the condition `PackageServerSyncIntervalIgnored` (True,
//!   reason `NoPackageServer`) says so and names the fix; it goes when the field goes.
//!
//! No I/O and no clock: the shell passes what it observed and `now`.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::{
    api::{
        ConditionStatus,
        v1::{OLMConfig, OLMConfigStatus},
    },
    status::{metav1_condition, remove_condition, set_condition},
};

/// The condition type of the copied-CSV switch (upstream `DisabledCopiedCSVsConditionType`).
pub const DISABLED_COPIED_CSVS: &str = "DisabledCopiedCSVs";
/// Reason while copied CSVs are on.
pub const REASON_ENABLED: &str = "CopiedCSVsEnabled";
/// Reason while copied CSVs are off.
pub const REASON_DISABLED: &str = "CopiedCSVsDisabled";
/// The condition type saying `packageServerSyncInterval` has no effect in olm-rs.
pub const SYNC_INTERVAL_IGNORED: &str = "PackageServerSyncIntervalIgnored";
/// Its reason.
pub const REASON_NO_PACKAGE_SERVER: &str = "NoPackageServer";

/// True when copied CSVs are off: the flag, or the OLMConfig's `disableCopiedCSVs`.
pub fn copies_disabled(flag: bool, config: Option<&OLMConfig>) -> bool {
    flag || config.is_some_and(OLMConfig::copied_csvs_disabled)
}

/// One copiable original CSV of an AllNamespaces OperatorGroup, with where its copies are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Original {
    /// The CSV's namespace.
    pub namespace: String,
    /// The CSV's name.
    pub name: String,
    /// Namespaces holding a copy (`olm.copiedFrom=<namespace>`, same name).
    pub copies: BTreeSet<String>,
}

/// What the shell observed for one reconcile of the `cluster` OLMConfig.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// The OLMConfig as stored.
    pub config: &'a OLMConfig,
    /// `--disable-copied-csvs`.
    pub flag: bool,
    /// The cluster's namespaces that are not being deleted.
    pub active_namespaces: &'a BTreeSet<String>,
    /// Copiable originals of AllNamespaces OperatorGroups.
    pub originals: &'a [Original],
}

/// The OLMConfig status to hold, and whether copies are still out of line.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The status, conditions merged with the stored ones (times kept when unchanged).
    pub status: OLMConfigStatus,
    /// True when `status` differs from the stored one (type, status, reason or message).
    pub changed: bool,
    /// Originals whose copies do not match the switch yet (`namespace/name`); the copy
    /// pipeline is working on them, so the shell looks again soon.
    pub out_of_line: Vec<String>,
}

/// True when `original`'s copies are not what the switch asks for.
fn out_of_line(original: &Original, enabled: bool, active: &BTreeSet<String>) -> bool {
    if !enabled {
        return !original.copies.is_empty();
    }
    let expected: BTreeSet<&str> = active
        .iter()
        .map(String::as_str)
        .filter(|ns| *ns != original.namespace)
        .collect();
    let present: BTreeSet<&str> = original.copies.iter().map(String::as_str).collect();
    expected != present
}

/// The `DisabledCopiedCSVs` condition (upstream `getCopiedCSVsCondition`, times left to the
/// merge), with the override note when the flag disables copies the object enables.
pub fn copied_csvs_condition(enabled: bool, requeued: bool, flag_overrides: bool, now: &Time) -> Condition {
    let (status, reason, mut message) = match (enabled, requeued) {
        (true, false) => (
            ConditionStatus::False,
            REASON_ENABLED,
            "Copied CSVs are enabled and present across the cluster".to_owned(),
        ),
        (true, true) => (
            ConditionStatus::False,
            REASON_ENABLED,
            "Copied CSVs are enabled and at least one copied CSVs is missing".to_owned(),
        ),
        (false, true) => (
            ConditionStatus::False,
            REASON_DISABLED,
            "Copied CSVs are disabled and at least one unexpected copied CSV was found for an operator installed in AllNamespace mode".to_owned(),
        ),
        (false, false) => (
            ConditionStatus::True,
            REASON_DISABLED,
            "Copied CSVs are disabled and no unexpected copied CSVs were found for operators installed in AllNamespace mode".to_owned(),
        ),
    };
    if flag_overrides {
        message.push_str(
            "; olm-controller runs with --disable-copied-csvs, which overrides spec.features.disableCopiedCSVs: remove the flag from its Deployment to enable them",
        );
    }
    metav1_condition(DISABLED_COPIED_CSVS, status, reason, message, None, now)
}

/// The `PackageServerSyncIntervalIgnored` condition for an interval set in the spec.
pub fn sync_interval_condition(interval: &str, now: &Time) -> Condition {
    metav1_condition(
        SYNC_INTERVAL_IGNORED,
        ConditionStatus::True,
        REASON_NO_PACKAGE_SERVER,
        format!(
            "spec.features.packageServerSyncInterval ({interval}) has no effect: olm-rs runs no packageserver \
             to resync (its PackageManifest API, olm-controller --serve-packages, answers from the catalogs \
             as loaded); CatalogSources are re-read on their spec.updateStrategy.registryPoll.interval. \
             Remove the field from OLMConfig cluster to clear this condition"
        ),
        None,
        now,
    )
}

/// Decides the OLMConfig status.
pub fn decide(observed: &Observed<'_>, now: &Time) -> Decision {
    let spec_disabled = observed.config.copied_csvs_disabled();
    let enabled = !copies_disabled(observed.flag, Some(observed.config));
    let out_of_line: Vec<String> = observed
        .originals
        .iter()
        .filter(|o| out_of_line(o, enabled, observed.active_namespaces))
        .map(|o| format!("{}/{}", o.namespace, o.name))
        .collect();
    let old = observed.config.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let mut changed = false;
    let condition = copied_csvs_condition(
        enabled,
        !out_of_line.is_empty(),
        observed.flag && !spec_disabled,
        now,
    );
    changed |=
        set_condition(&mut status.conditions, condition, now) != crate::status::ConditionChange::Unchanged;
    match observed.config.package_server_sync_interval() {
        Some(interval) => {
            let condition = sync_interval_condition(interval, now);
            changed |= set_condition(&mut status.conditions, condition, now)
                != crate::status::ConditionChange::Unchanged;
        }
        None => changed |= remove_condition(&mut status.conditions, SYNC_INTERVAL_IGNORED),
    }
    Decision {
        status,
        changed,
        out_of_line,
    }
}

#[cfg(test)]
mod tests;
