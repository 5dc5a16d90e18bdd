//! failures: what a CSV's status says when its install cannot go on for a reason the
//! state machine does not observe by itself. The rule: **no failure stays in the log only,
//! and a half-applied install is never `Succeeded`.**
//!
//! - **An object of the install strategy the API server refused** (a Deployment, the RBAC
//!   of a target namespace, the member annotations) fails the CSV `InstallComponentFailed`
//!   "install strategy failed: ...", as upstream's `transitionCSVState` does when
//!   `installer.Install` fails, with a message naming the object, the API server's sentence
//!   and the fix ([`apply_failed`]). A target namespace of the OperatorGroup that does not
//!   exist is one such failure (upstream has no reason of its own for it: its copied CSVs
//!   and RBAC fail in the log only; olm-rs says it on the CSV). The shell retries through the
//!   usual `Failed` → `Pending` `NeedsReinstall` → `InstallReady` loop and does not rewrite
//!   the status (nor repeat the Event) while the same failure repeats ([`repeats_failure`]).
//! - **The InstallPlan that created the CSV failed** (say a `PrometheusRule` step whose API
//!   the cluster lacks): the CSV stays (or goes back to) `Pending` `RequirementsNotMet`
//!   with a message naming the plan and its failed step, never `Succeeded`. Upstream gets
//!   there because its plan stops at the failed step before the ServiceAccounts the CSV
//!   requires; olm-rs applies independent steps concurrently, so it says so explicitly.
//!   While the plan is still retrying a failed step, the CSV waits in `Installing`
//!   `InstallWaiting` rather than report a success the plan may take back
//!   ([`own_plan_state`]).

#[allow(
    clippy::wildcard_imports,
    reason = "the parent module's observed types and imports"
)]
use super::*;
use crate::api::v1alpha1::{InstallPlan, InstallPlanPhase};

/// An apply (or delete) of one object of the install strategy that the API server refused,
/// as the shell read it from the error.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyFailure {
    /// `Kind namespace/name` of the object.
    pub object: String,
    /// The HTTP code (0 when the API server was not reached).
    pub code: u16,
    /// The API server's readable sentence ([`crate::k8s::message::describe`]).
    pub detail: String,
    /// The namespace the API server says does not exist, when that is the cause (a
    /// `NotFound` whose details name a `namespaces` object).
    pub missing_namespace: Option<String>,
}

/// The CSV's decision when applying an object of its install strategy failed: `Failed`
/// `InstallComponentFailed`, naming the object, the API server's answer and the fix.
/// `operator_group` is the namespace's OperatorGroup (named in the fix for a missing target).
pub fn apply_failed(failure: &ApplyFailure, operator_group: Option<&str>) -> CsvDecision {
    let fix = match (&failure.missing_namespace, failure.code) {
        (Some(ns), _) => format!(
            "namespace {ns} does not exist: create it, or remove it from the target namespaces \
             of OperatorGroup {}",
            operator_group.unwrap_or("of this namespace")
        ),
        (None, 404) => "the API server does not serve this object's kind: install the CRD that \
                        provides it"
            .to_owned(),
        (None, 401 | 403) => "olm-rs is not allowed to write it: grant olm-rs's ServiceAccount \
                              that permission"
            .to_owned(),
        (None, 400 | 422) => "the object is invalid: fix the bundle's install strategy, or the \
                              Subscription's spec.config if it sets this field"
            .to_owned(),
        (None, 409) => "another writer changed it meanwhile: it is retried".to_owned(),
        _ => "it is retried automatically".to_owned(),
    };
    CsvDecision::to(
        CsvPhase::Failed,
        CsvReason::InstallComponentFailed,
        format!(
            "install strategy failed: could not apply {}: {}; {fix}",
            failure.object, failure.detail
        ),
    )
    .requeue(APPLY_RETRY)
}

/// How soon an install whose objects were refused is tried again.
pub const APPLY_RETRY: Duration = Duration::from_secs(30);

/// Whether `decision` repeats the failure `old` already shows (same phase `Failed`, reason
/// and message): the shell then keeps `old` as it is, without a write or an Event.
pub fn repeats_failure(old: &ClusterServiceVersionStatus, decision: &CsvDecision) -> bool {
    decision.phase == CsvPhase::Failed
        && old.phase.as_ref() == Some(&CsvPhase::Failed)
        && old.reason.as_ref() == Some(&decision.reason)
        && old.message.as_deref() == Some(decision.message.as_str())
}

/// Where the InstallPlan that created a CSV stands, when that holds the CSV back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnPlanState {
    /// The plan is still `Installing` and its last attempt failed (it retries).
    Retrying {
        /// The plan's name.
        plan: String,
        /// Its status message (the failed step).
        message: String,
    },
    /// The plan is `Failed`.
    Failed {
        /// The plan's name.
        plan: String,
        /// Its status message (the failed step).
        message: String,
    },
}

/// The state of the InstallPlans of the CSV's namespace that install `csv` (named in
/// `spec.clusterServiceVersionNames` or resolving one of its steps), when it holds the CSV
/// back: none if one of them is `Complete`; else the newest one's, if it is `Failed`, or
/// `Installing` with an error message. `None`: nothing to hold back.
pub fn own_plan_state<'a>(
    csv: &str,
    plans: impl IntoIterator<Item = &'a InstallPlan>,
) -> Option<OwnPlanState> {
    let mut own: Vec<&InstallPlan> = plans
        .into_iter()
        .filter(|p| {
            p.spec.cluster_service_version_names.iter().any(|n| n == csv)
                || p.status
                    .as_ref()
                    .is_some_and(|s| s.plan.iter().any(|step| step.resolving == csv))
        })
        .collect();
    let phase = |p: &InstallPlan| p.status.as_ref().map(|s| s.phase.clone()).unwrap_or_default();
    if own.iter().any(|p| phase(p) == InstallPlanPhase::Complete) {
        return None;
    }
    own.sort_by(|a, b| {
        (a.metadata.creation_timestamp.as_ref().map(|t| t.0), a.name_any())
            .cmp(&(b.metadata.creation_timestamp.as_ref().map(|t| t.0), b.name_any()))
    });
    let newest = own.last()?;
    let message = newest
        .status
        .as_ref()
        .and_then(|s| s.message.clone())
        .unwrap_or_default();
    let plan = newest.name_any();
    match phase(newest) {
        InstallPlanPhase::Failed => Some(OwnPlanState::Failed {
            plan,
            message: if message.is_empty() {
                "no message".to_owned()
            } else {
                message
            },
        }),
        InstallPlanPhase::Installing if !message.is_empty() => Some(OwnPlanState::Retrying { plan, message }),
        _ => None,
    }
}

/// `decision`, unless it would make the CSV `Succeeded` while its InstallPlan is not done:
/// then `Pending` `RequirementsNotMet` naming the failed plan, or `Installing`
/// `InstallWaiting` while the plan retries.
pub fn held_by_plan(decision: CsvDecision, own_plan: Option<&OwnPlanState>) -> CsvDecision {
    if decision.phase != CsvPhase::Succeeded {
        return decision;
    }
    match own_plan {
        None => decision,
        Some(failed @ OwnPlanState::Failed { .. }) => plan_failed(failed).unwrap_or(decision),
        Some(OwnPlanState::Retrying { plan, message }) => CsvDecision {
            phase: CsvPhase::Installing,
            reason: CsvReason::InstallWaiting,
            message: format!("installing: waiting for InstallPlan {plan} to finish: {message}"),
            ..decision
        }
        .requeue(WAIT_REQUEUE),
    }
}

/// The `Pending` decision for a CSV whose InstallPlan failed (`None` for any other state).
pub fn plan_failed(state: &OwnPlanState) -> Option<CsvDecision> {
    let OwnPlanState::Failed { plan, message } = state else {
        return None;
    };
    Some(CsvDecision::to(
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        format!(
            "InstallPlan {plan} that installs this CSV failed, so the install is incomplete: \
             {message}; fix the cause (e.g. install the missing API), then delete the InstallPlan \
             so that the Subscription plans the install again"
        ),
    ))
}
