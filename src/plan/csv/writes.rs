//! writes: when a CSV's new status is written now and when it waits. Phase and reason
//! changes are written at once; two writes that would tell nobody anything new wait:
//! the `Pending`/`RequirementsNotMet` of a new CSV whose only missing requirements are the
//! ServiceAccounts its own InstallPlan is still applying ([`waits_only_on_own_plan`]), and a
//! rollout's progress message moments after the last write ([`progress_only`]).

#[allow(
    clippy::wildcard_imports,
    reason = "the parent module's observed types and imports"
)]
use super::*;

/// The least time between two status writes of a CSV that only update the message of a
/// rollout in progress (`Installing` / `InstallWaiting`).
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// How soon a new CSV whose InstallPlan is still applying its ServiceAccounts is looked at
/// again without an event.
pub const OWN_PLAN_REQUEUE: Duration = Duration::from_secs(2);

/// Whether `new` differs from `old` only in the message of an install waiting on its
/// Deployments (same phase `Installing`, same reason `InstallWaiting`, same conditions and
/// requirements; timestamps aside).
#[must_use]
pub fn progress_only(old: &ClusterServiceVersionStatus, new: &ClusterServiceVersionStatus) -> bool {
    let waiting = |s: &ClusterServiceVersionStatus| {
        s.phase == Some(CsvPhase::Installing) && s.reason == Some(CsvReason::InstallWaiting)
    };
    if !waiting(old) || !waiting(new) || old.message == new.message {
        return false;
    }
    let mut probe = new.clone();
    probe.message = old.message.clone();
    crate::status::status_unchanged(old, &probe)
}

/// Whether the status write of `decision` (taking the CSV from `old` to `new`) waits, and
/// for how long the shell requeues instead of writing: [`OWN_PLAN_REQUEUE`] for a new CSV
/// that would only report its own plan's ServiceAccounts missing (`own_plan_applying` is
/// asked only then: [`waits_only_on_own_plan`] over the namespace's InstallPlans), or the
/// rest of [`PROGRESS_INTERVAL`] for a progress message when the last status write of this
/// CSV was `since_last_write` ago. `None`: write now.
#[must_use]
pub fn write_waits(
    old: &ClusterServiceVersionStatus,
    new: &ClusterServiceVersionStatus,
    decision: &CsvDecision,
    own_plan_applying: impl FnOnce() -> bool,
    since_last_write: Option<Duration>,
) -> Option<Duration> {
    if old.phase.as_ref().is_none_or(|p| *p == CsvPhase::None)
        && decision.phase == CsvPhase::Pending
        && decision.reason == CsvReason::RequirementsNotMet
        && own_plan_applying()
    {
        // The plan that created this CSV applies its ServiceAccounts right after it: rather
        // than record Pending/RequirementsNotMet for the few milliseconds until they exist
        // (a status write, two Events, and a reconcile of the Subscription), wait for them;
        // their creation triggers the next reconcile. The requeue catches a plan that fails.
        return Some(OWN_PLAN_REQUEUE);
    }
    if progress_only(old, new)
        && let Some(since) = since_last_write
        && since < PROGRESS_INTERVAL
    {
        // Only the rollout's progress message moved, and the status was written moments ago:
        // report it with the next change, or after the interval, rather than one write (and
        // one watch event to every client) per Deployment status update.
        return Some(PROGRESS_INTERVAL - since);
    }
    None
}
