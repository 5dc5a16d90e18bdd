//! status: condition bookkeeping shared by every controller, and the rule that decides
//! whether a status write is needed at all.
//!
//! # The rule
//!
//! A condition records an *observation* (type, status, reason, message) and two kinds of
//! time: when the status last *flipped* (`lastTransitionTime`) and when the controller last
//! *said something new* about it (`lastHeartbeatTime` on Subscriptions, `lastUpdateTime` on
//! InstallPlans). Readers use `lastTransitionTime` to answer "how long has this been
//! failing?", so it must survive every reconcile that does not flip the status. This module
//! enforces that, the way Stackable's `compute_conditions`/`update_timestamps` does, except
//! that the clock is a parameter (`now`) instead of a call to `Timestamp::now()`:
//!
//! - a condition of a type not present before is added with both times set to `now`;
//! - a condition whose type, status, reason and message are all unchanged is left exactly as
//!   it was — timestamps included — so the status as a whole stays byte-for-byte equal;
//! - a condition whose reason or message changed but whose status did not keeps its
//!   `lastTransitionTime` and gets `now` as its update/heartbeat time;
//! - a condition whose status flipped (`True` ↔ `False` ↔ `Unknown`) gets `now` for both.
//!
//! Equality "ignoring timestamps" (upstream's `SubscriptionCondition.Equals` compares type,
//! status, reason and message only) is what lets the shell skip a write that changes
//! nothing: compute the desired status from the old one with [`set_condition`] /
//! [`remove_condition`], then ask [`status_unchanged`] before patching. Because unchanged
//! conditions keep their old timestamps, the typical steady-state reconcile produces a status
//! equal to the stored one and no API request at all (the issue's benchmark target "no
//! status write that changes nothing").
//!
//! # Where we differ from upstream, and why
//!
//! Upstream OLM stamps `lastHeartbeatTime`/`lastUpdateTime` with the current time on every
//! sync, which turns every reconcile into a status write (and a watch event for everyone
//! watching Subscriptions). Here those times only move when the observation changes, so
//! they mean "last time this condition said something new". Clients that read them as a
//! liveness signal should use the controller's `/healthz` instead.
//!
//! # The shapes covered
//!
//! OLM uses three condition shapes, all implementing [`ConditionLike`]:
//!
//! | kind | type | times |
//! |---|---|---|
//! | Subscription | [`SubscriptionCondition`] | `lastHeartbeatTime`, `lastTransitionTime` |
//! | InstallPlan | [`InstallPlanCondition`] | `lastUpdateTime`, `lastTransitionTime` |
//! | OperatorGroup, CatalogSource | metav1 [`Condition`] | `lastTransitionTime` (required), `observedGeneration` |
//!
//! The CSV's `status.conditions` is not a set of conditions but a phase *history*; its
//! bookkeeping (append on phase-or-reason change, trim to 20, `lastTransitionTime` moves
//! only with the phase) is [`set_csv_phase`], following upstream's
//! `ClusterServiceVersion.SetPhase` (`api:pkg/operators/v1alpha1/clusterserviceversion.go`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde::Serialize;

use crate::api::{
    ConditionStatus,
    v1alpha1::{
        CSV_CONDITIONS_LENGTH_LIMIT, ClusterServiceVersionCondition, ClusterServiceVersionStatus, CsvPhase,
        CsvReason, InstallPlanCondition, SubscriptionCondition,
    },
};

/// A condition shape OLM uses: enough access to merge it by type and compare it without
/// timestamps.
pub trait ConditionLike: Clone {
    /// The condition type as its wire spelling (`ResolutionFailed`, `Installed`, …); the key
    /// conditions are merged by.
    fn type_str(&self) -> &str;
    /// The status as its wire spelling (`True`, `False`, `Unknown`, or `""` when absent).
    fn status_str(&self) -> &str;
    /// The reason as its wire spelling (`""` when absent).
    fn reason_str(&self) -> &str;
    /// The message (`""` when absent).
    fn message_str(&self) -> &str;
    /// When the status last flipped.
    fn last_transition_time(&self) -> Option<&Time>;
    /// Sets when the status last flipped.
    fn set_last_transition_time(&mut self, time: Time);
    /// Sets the "last said something new" time (heartbeat or update time); shapes without one
    /// ignore it.
    fn set_last_update_time(&mut self, time: Time);

    /// Equal ignoring timestamps: same type, status, reason and message.
    fn same_observation(&self, other: &Self) -> bool {
        self.type_str() == other.type_str()
            && self.status_str() == other.status_str()
            && self.reason_str() == other.reason_str()
            && self.message_str() == other.message_str()
    }
}

impl ConditionLike for SubscriptionCondition {
    fn type_str(&self) -> &str {
        self.type_.as_str()
    }
    fn status_str(&self) -> &str {
        self.status.as_str()
    }
    fn reason_str(&self) -> &str {
        self.reason.as_deref().unwrap_or_default()
    }
    fn message_str(&self) -> &str {
        self.message.as_deref().unwrap_or_default()
    }
    fn last_transition_time(&self) -> Option<&Time> {
        self.last_transition_time.as_ref()
    }
    fn set_last_transition_time(&mut self, time: Time) {
        self.last_transition_time = Some(time);
    }
    fn set_last_update_time(&mut self, time: Time) {
        self.last_heartbeat_time = Some(time);
    }
}

impl ConditionLike for InstallPlanCondition {
    fn type_str(&self) -> &str {
        self.type_.as_ref().map(|t| t.as_str()).unwrap_or_default()
    }
    fn status_str(&self) -> &str {
        self.status.as_ref().map(|s| s.as_str()).unwrap_or_default()
    }
    fn reason_str(&self) -> &str {
        self.reason.as_ref().map(|r| r.as_str()).unwrap_or_default()
    }
    fn message_str(&self) -> &str {
        self.message.as_deref().unwrap_or_default()
    }
    fn last_transition_time(&self) -> Option<&Time> {
        self.last_transition_time.as_ref()
    }
    fn set_last_transition_time(&mut self, time: Time) {
        self.last_transition_time = Some(time);
    }
    fn set_last_update_time(&mut self, time: Time) {
        self.last_update_time = Some(time);
    }
}

impl ConditionLike for Condition {
    fn type_str(&self) -> &str {
        &self.type_
    }
    fn status_str(&self) -> &str {
        &self.status
    }
    fn reason_str(&self) -> &str {
        &self.reason
    }
    fn message_str(&self) -> &str {
        &self.message
    }
    fn last_transition_time(&self) -> Option<&Time> {
        Some(&self.last_transition_time)
    }
    fn set_last_transition_time(&mut self, time: Time) {
        self.last_transition_time = time;
    }
    fn set_last_update_time(&mut self, _time: Time) {}

    /// metav1 conditions also carry `observedGeneration`; a condition observed at another
    /// generation is a different observation (so the shell rewrites it).
    fn same_observation(&self, other: &Self) -> bool {
        self.type_ == other.type_
            && self.status == other.status
            && self.reason == other.reason
            && self.message == other.message
            && self.observed_generation == other.observed_generation
    }
}

/// What [`set_condition`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionChange {
    /// A condition of a new type was added.
    Added,
    /// The status flipped; both times are `now`.
    Transitioned,
    /// Reason or message changed with the same status; `lastTransitionTime` kept.
    Updated,
    /// Nothing but (possibly) timestamps differed; the stored condition was kept as it was.
    Unchanged,
}

/// Sets `condition` in `conditions`, replacing the one of the same type, with the timestamp
/// rules of the module doc. The timestamps carried by `condition` itself are ignored.
pub fn set_condition<C: ConditionLike>(
    conditions: &mut Vec<C>,
    mut condition: C,
    now: &Time,
) -> ConditionChange {
    let Some(slot) = conditions
        .iter_mut()
        .find(|c| c.type_str() == condition.type_str())
    else {
        condition.set_last_transition_time(now.clone());
        condition.set_last_update_time(now.clone());
        conditions.push(condition);
        return ConditionChange::Added;
    };
    if slot.same_observation(&condition) {
        return ConditionChange::Unchanged;
    }
    let change = if slot.status_str() == condition.status_str() {
        let kept = slot
            .last_transition_time()
            .cloned()
            .unwrap_or_else(|| now.clone());
        condition.set_last_transition_time(kept);
        ConditionChange::Updated
    } else {
        condition.set_last_transition_time(now.clone());
        ConditionChange::Transitioned
    };
    condition.set_last_update_time(now.clone());
    *slot = condition;
    change
}

/// Removes every condition of type `type_`; true if one was removed.
pub fn remove_condition<C: ConditionLike>(conditions: &mut Vec<C>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_str() != type_);
    conditions.len() != before
}

/// A metav1 condition observed now at `generation` (for [`set_condition`]; its
/// `lastTransitionTime` is replaced by the merge anyway).
pub fn metav1_condition(
    type_: &str,
    status: ConditionStatus,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
    now: &Time,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.as_str().to_owned(),
        reason: reason.to_owned(),
        message: message.into(),
        observed_generation: generation,
        last_transition_time: now.clone(),
    }
}

/// JSON field names that only ever hold timestamps in OLM statuses; [`status_unchanged`]
/// ignores them.
pub const TIMESTAMP_FIELDS: &[&str] = &[
    "lastTransitionTime",
    "lastHeartbeatTime",
    "lastUpdateTime",
    "lastUpdated",
    "lastConnect",
    "lastProbeTime",
    "latestImageRegistryPoll",
    "certsLastUpdated",
    "startTime",
];

/// True when two statuses differ at most in timestamps (the fields in [`TIMESTAMP_FIELDS`],
/// at any depth): the shell skips the status patch then.
///
/// Works for every kind's status because it compares the serialised form, which is also
/// what would be sent. A value that fails to serialise (never happens for the API types)
/// counts as changed, so the write is not skipped by mistake.
pub fn status_unchanged<T: Serialize>(old: &T, new: &T) -> bool {
    match (serde_json::to_value(old), serde_json::to_value(new)) {
        (Ok(mut a), Ok(mut b)) => {
            strip_timestamps(&mut a);
            strip_timestamps(&mut b);
            a == b
        }
        _ => false,
    }
}

fn strip_timestamps(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| !TIMESTAMP_FIELDS.contains(&k.as_str()));
            map.values_mut().for_each(strip_timestamps);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_timestamps),
        _ => {}
    }
}

/// Moves a CSV's status to `phase` with `reason` and `message`, the way upstream's
/// `SetPhase` does, minus the write on every sync:
///
/// - `lastTransitionTime` becomes `now` only when the phase changes;
/// - `lastUpdateTime` becomes `now` when phase, reason or message changes (upstream: always);
/// - a history entry (the *new* phase, reason, message and times) is appended when the phase
///   or the reason differs from the last entry (or the history is empty), and the history is
///   trimmed to the newest [`CSV_CONDITIONS_LENGTH_LIMIT`] entries.
///
/// Returns true if anything changed.
pub fn set_csv_phase(
    status: &mut ClusterServiceVersionStatus,
    phase: CsvPhase,
    reason: CsvReason,
    message: impl Into<String>,
    now: &Time,
) -> bool {
    let message = message.into();
    let phase_changed = status.phase.as_ref() != Some(&phase);
    let changed = phase_changed
        || status.reason.as_ref() != Some(&reason)
        || status.message.as_deref() != Some(message.as_str());
    if !changed {
        return false;
    }
    if phase_changed || status.last_transition_time.is_none() {
        status.last_transition_time = Some(now.clone());
    }
    status.last_update_time = Some(now.clone());
    status.phase = Some(phase.clone());
    status.reason = Some(reason.clone());
    status.message = Some(message.clone());

    let append = status
        .conditions
        .last()
        .is_none_or(|last| last.phase.as_ref() != Some(&phase) || last.reason.as_ref() != Some(&reason));
    if append {
        status.conditions.push(ClusterServiceVersionCondition {
            phase: Some(phase),
            message: Some(message),
            reason: Some(reason),
            last_update_time: status.last_update_time.clone(),
            last_transition_time: status.last_transition_time.clone(),
        });
        let excess = status
            .conditions
            .len()
            .saturating_sub(CSV_CONDITIONS_LENGTH_LIMIT);
        status.conditions.drain(..excess);
    }
    true
}

#[cfg(test)]
mod tests;
