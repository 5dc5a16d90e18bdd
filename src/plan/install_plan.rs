//! install_plan: the InstallPlan controller's pure rules: the approval gate, the order the
//! steps are applied in, and how a step's manifest is prepared for its apply.
//!
//! - **The gate** ([`transition`], [`group_check`]): the phase alone decides, as upstream's
//!   `transitionInstallPlanState`: `Installing` runs, `RequiresApproval` runs once
//!   `spec.approved: true`, any other phase is left alone; a plan that is not finished needs one
//!   OperatorGroup managing its namespace, else it waits with `InstallCheckFailed`.
//! - **The order** ([`execution_order`], [`concurrent_groups`]): the CSV first, then the CRDs,
//!   then the bundle's other objects, then the ServiceAccounts and RBAC, as upstream executes its
//!   plans (the CSV exists even when a CRD step fails; its uid exists for the owner references).
//! - **The object** ([`prepare_object`]): the namespace forced for namespaced kinds, the CSV
//!   created with its cleanup finalizer and the OperatorGroup member annotations, and the CSV
//!   owner reference on the namespaced objects it owns.
//!
//! - **A plan nothing resolved** ([`unresolvable`]): a hand-made InstallPlan naming CSVs, with
//!   no steps and no Subscription owning it, fails after [`UNRESOLVABLE_GRACE`] with
//!   `Installed=False` and a message naming the CSVs and the fix, instead of staying without a
//!   status.
//!
//! - **Garbage collection** ([`plans_to_collect`]): at most [`MAX_INSTALL_PLANS`] InstallPlans
//!   stay in a namespace, as upstream's `gcInstallPlans` keeps them; the oldest go first.
//!   Upstream's plans serve a whole namespace, so its newest five hold every Subscription's
//!   current one; ours are per Subscription, so a plan a Subscription references
//!   (`installPlanRef`, `installplan`) is never collected, and neither is a plan still in
//!   progress (not `Complete` or `Failed`) or any newer one, even when that leaves more than five.
//!
//! The controller (`controller::install_plan`) applies the steps and writes the status.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::ObjectReference,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::Time,
};
use kube::ResourceExt;
use serde_json::{Value, json};

use crate::{
    api::{
        ConditionStatus, labels,
        v1::OperatorGroup,
        v1alpha1::{
            InstallPlan, InstallPlanCondition, InstallPlanConditionReason, InstallPlanConditionType,
            InstallPlanPhase, InstallPlanStatus, Step,
        },
    },
    plan::{operator_group::named_service_account, steps},
};

/// How many InstallPlans a namespace keeps (upstream's `maxInstallPlanCount`).
pub const MAX_INSTALL_PLANS: usize = 5;
/// How many plans one collection deletes at most (upstream's `maxDeletesPerSweep`); the next
/// finished plan's collection goes on.
pub const MAX_DELETES_PER_SWEEP: usize = 5;

/// The InstallPlans of one namespace that go, oldest first (creation time, then
/// `spec.generation`, then name), until [`MAX_INSTALL_PLANS`] are left, at most
/// [`MAX_DELETES_PER_SWEEP`] at a time; `referenced` names the
/// plans the namespace's Subscriptions point at. A referenced plan is passed over (kept); the
/// walk stops at the first plan still in progress, so no plan newer than one in flight goes.
pub fn plans_to_collect<'a>(
    plans: impl IntoIterator<Item = &'a InstallPlan>,
    referenced: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let mut plans: Vec<&InstallPlan> = plans.into_iter().collect();
    let Some(mut excess) = plans
        .len()
        .checked_sub(MAX_INSTALL_PLANS)
        .filter(|n| *n > 0)
        .map(|n| n.min(MAX_DELETES_PER_SWEEP))
    else {
        return Vec::new();
    };
    plans.sort_by_key(|p| {
        (
            p.metadata.creation_timestamp.as_ref().map(|t| t.0),
            p.spec.generation,
            p.metadata.name.clone(),
        )
    });
    let mut out = Vec::new();
    for plan in plans {
        let Some(name) = plan.metadata.name.as_ref() else {
            continue;
        };
        if referenced.contains(name) {
            continue;
        }
        if !plan.status.as_ref().is_some_and(|s| s.phase.is_terminal()) || excess == 0 {
            break;
        }
        out.push(name.clone());
        excess -= 1;
    }
    out
}

/// The InstallPlans `subscriptions` point at (`status.installPlanRef` and `status.installplan`).
pub fn referenced_plans<'a>(
    subscriptions: impl IntoIterator<Item = &'a crate::api::v1alpha1::Subscription>,
) -> std::collections::BTreeSet<String> {
    subscriptions
        .into_iter()
        .filter_map(|s| s.status.as_ref())
        .flat_map(|st| {
            let by_ref = st.install_plan_ref.as_ref().and_then(|r| r.name.clone());
            let legacy = st.install_plan.as_ref().map(|r| r.name.clone());
            by_ref.into_iter().chain(legacy)
        })
        .collect()
}

/// What one reconcile does with a plan that has steps (upstream's `transitionInstallPlanState`):
/// the phase alone decides, never the approval strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Nothing: a terminal plan, a `RequiresApproval` plan not approved yet, or a phase the
    /// controller does not act on (empty, `Planning`, one it does not know). Upstream leaves such
    /// a plan as it is until someone sets `RequiresApproval` or `Installing`; a hand-made plan is
    /// created first and given its status by a second write, which must not conflict with ours.
    Leave,
    /// Apply the steps: the phase is `Installing`, or `RequiresApproval` with
    /// `spec.approved: true` (the plan moves to `Installing`, its message cleared).
    Execute,
}

/// The [`Transition`] of a plan (pure).
pub fn transition(ip: &InstallPlan) -> Transition {
    match ip.status.as_ref().map(|s| &s.phase) {
        Some(InstallPlanPhase::Installing) => Transition::Execute,
        Some(InstallPlanPhase::RequiresApproval) if ip.spec.approved => Transition::Execute,
        _ => Transition::Leave,
    }
}

/// Upstream's message when a plan's namespace has no OperatorGroup with resolved targets.
pub const NO_OPERATOR_GROUP: &str = "no operator group found that is managing this namespace";

/// Whether the namespace's OperatorGroups let a plan run, and as which ServiceAccount (upstream's
/// service-account querier, `queryServiceAccountFromNamespace`), checked on every plan that is
/// not terminal and has steps, whatever its phase: a group counts once its `status.namespaces`
/// is written; none gives [`NO_OPERATOR_GROUP`], more than one `more than one operator group(s)
/// are managing this namespace count=N`. A group naming a ServiceAccount
/// (`spec.serviceAccountName`) passes once its `status.serviceAccountRef` is written (the
/// account exists) and gives that reference: the plan records it as
/// `status.attenuatedServiceAccountRef` and its steps run as that account ([`run_as`]);
/// before that it gives upstream's "please make sure the service account exists. sa=NAME
/// operatorgroup=NS/GROUP". The plan keeps its phase and carries the message in its
/// `Installed` condition (`False`, `InstallCheckFailed`) until the check passes.
///
/// # Errors
/// The message of the `Installed` condition.
pub fn group_check<'a>(
    groups: impl IntoIterator<Item = &'a OperatorGroup>,
) -> Result<Option<ObjectReference>, String> {
    let managing: Vec<&OperatorGroup> = groups
        .into_iter()
        .filter(|g| {
            g.status
                .as_ref()
                .and_then(|s| s.namespaces.as_ref())
                .is_some_and(|n| !n.is_empty())
        })
        .collect();
    let group = match managing.as_slice() {
        [] => return Err(NO_OPERATOR_GROUP.to_owned()),
        [group] => *group,
        many => {
            return Err(format!(
                "more than one operator group(s) are managing this namespace count={}",
                many.len()
            ));
        }
    };
    let Some(account) = named_service_account(group) else {
        return Ok(None);
    };
    match group.status.as_ref().and_then(|s| s.service_account_ref.clone()) {
        Some(reference) => Ok(Some(reference)),
        None => Err(format!(
            "please make sure the service account exists. sa={account} operatorgroup={}/{}",
            group.namespace().unwrap_or_default(),
            group.name_any()
        )),
    }
}

/// The ServiceAccount (namespace, name) a plan's steps run as: its
/// `status.attenuatedServiceAccountRef` (written from the group by the plan controller, or by
/// the plan's author), the namespace defaulting to the plan's. `None`: the controller's own
/// rights.
pub fn run_as(status: &InstallPlanStatus, plan_namespace: &str) -> Option<(String, String)> {
    let reference = status.attenuated_service_account_ref.as_ref()?;
    let name = reference.name.as_deref().filter(|n| !n.is_empty())?;
    let namespace = reference
        .namespace
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(plan_namespace);
    Some((namespace.to_owned(), name.to_owned()))
}

/// Whether a step of a scoped plan is applied as the plan's ServiceAccount: every step but a
/// CRD, which upstream installs with its own client ("CRDs should be installed via the default
/// OLM (cluster-admin) client and not the scoped client").
pub fn applied_as_account(kind: &str) -> bool {
    kind != "CustomResourceDefinition"
}

/// Whether a change to the RBAC of a plan's namespace (a Role, RoleBinding or ServiceAccount
/// created or changed there at `changed_at`) sends the plan back to `Installing`: a `Failed`
/// plan that ran as a ServiceAccount, which may now hold what it lacked (upstream's
/// `triggerInstallPlanRetry`), when the change came after the failure (its `Installed`
/// condition's transition; a plan without one is retried).
pub fn retried_on_rbac_change(ip: &InstallPlan, changed_at: Option<&Time>) -> bool {
    let (Some(status), Some(changed_at)) = (ip.status.as_ref(), changed_at) else {
        return false;
    };
    let failed_at = status
        .conditions
        .iter()
        .find(|c| c.type_ == Some(InstallPlanConditionType::Installed))
        .and_then(|c| c.last_transition_time.as_ref().or(c.last_update_time.as_ref()));
    failed_as_account(ip) && failed_at.is_none_or(|failed| changed_at.0 > failed.0)
}

/// Whether the plan failed while running as a ServiceAccount: a change to its namespace's RBAC
/// may let it run ([`retried_on_rbac_change`]).
pub fn failed_as_account(ip: &InstallPlan) -> bool {
    ip.status
        .as_ref()
        .is_some_and(|s| s.phase == InstallPlanPhase::Failed && s.attenuated_service_account_ref.is_some())
}

/// The plan's `Installed` condition after [`group_check`] at `now`, or `None` when it stays as
/// it is: a failed check sets `False` `InstallCheckFailed` with its message; a passing check
/// clears a condition that a failed check wrote, to `False` with the reason `Unknown` and no
/// message, as upstream resets it (the plan's completion then sets `True`).
pub fn group_condition(
    status: &InstallPlanStatus,
    check: &Result<Option<ObjectReference>, String>,
    now: &Time,
) -> Option<InstallPlanCondition> {
    let current = status
        .conditions
        .iter()
        .find(|c| c.type_ == Some(InstallPlanConditionType::Installed));
    let failed_check =
        current.is_some_and(|c| c.reason == Some(InstallPlanConditionReason::InstallCheckFailed));
    let (reason, message) = match check {
        Err(message) => (
            InstallPlanConditionReason::InstallCheckFailed,
            Some(message.clone()),
        ),
        Ok(_) if failed_check => (InstallPlanConditionReason::Unknown, None),
        Ok(_) => return None,
    };
    if current.is_some_and(|c| {
        c.status == Some(ConditionStatus::False) && c.reason.as_ref() == Some(&reason) && c.message == message
    }) {
        return None;
    }
    let transition = current
        .filter(|c| c.status == Some(ConditionStatus::False))
        .and_then(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| now.clone());
    Some(InstallPlanCondition {
        type_: Some(InstallPlanConditionType::Installed),
        status: Some(ConditionStatus::False),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(transition),
        reason: Some(reason),
        message,
    })
}

/// `condition` put in place of the plan's condition of its type (or added).
pub fn set_condition(status: &mut InstallPlanStatus, condition: InstallPlanCondition) {
    match status.conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(slot) => *slot = condition,
        None => status.conditions.push(condition),
    }
}

/// Prepares a step's manifest for apply (pure): the namespace forced for namespaced kinds
/// (steps from [`crate::plan::steps::bundle_steps`] already carry it; older plans may not),
/// and the CSV owner reference on namespaced objects other than the CSV itself
/// ([`crate::plan::steps::with_owner`]). Cluster-scoped objects already carry the `olm.owner*`
/// labels from planning.
///
/// A CSV also gets `member` (the OperatorGroup member annotations,
/// [`crate::plan::operator_group::member_annotations`]) when the namespace's one group already
/// lists its targets: the CSV controller would otherwise write them right after the create.
pub fn prepare_object(
    mut object: Value,
    namespace: &str,
    namespaced: bool,
    owner: Option<(&str, &str)>,
    member: Option<&BTreeMap<String, String>>,
) -> Value {
    if !object.get("metadata").is_some_and(Value::is_object) {
        object["metadata"] = json!({});
    }
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if namespaced {
        object["metadata"]["namespace"] = json!(namespace);
    }
    if kind == steps::CSV_KIND {
        // The cleanup finalizer goes on with the CSV's creation, so the CSV controller does
        // not spend its first reconcile (and an API round trip) adding it.
        let finalizers = object["metadata"]
            .get("finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let finalizer = json!(labels::CSV_CLEANUP_FINALIZER);
        if !finalizers.contains(&finalizer) {
            let mut finalizers = finalizers;
            finalizers.push(finalizer);
            object["metadata"]["finalizers"] = Value::Array(finalizers);
        }
        if let Some(member) = member {
            if !object["metadata"]
                .get("annotations")
                .is_some_and(Value::is_object)
            {
                object["metadata"]["annotations"] = json!({});
            }
            for (key, value) in member {
                object["metadata"]["annotations"][key] = json!(value);
            }
        }
    }
    match owner {
        Some((csv_name, csv_uid)) if namespaced && steps::owned_by_csv(&kind) => {
            steps::with_owner(&object, csv_name, csv_uid)
        }
        _ => object,
    }
}

/// The order in which the plan's steps are executed: the CSV first, then the CRDs (as listed),
/// then everything else in plan order, as upstream's plans list and execute them (whatever the
/// listing: plans written by older olm-rs list the CSV after the RBAC). The CSV exists even when
/// a CRD step then fails (upstream's e2e suite looks for it), and before the namespaced objects
/// (ServiceAccounts, Roles, RoleBindings) so that its uid exists for their owner reference; it
/// waits in `Pending` until its CRDs and those objects exist.
pub fn execution_order(plan: &[Step]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..plan.len()).collect();
    order.sort_by_key(|&i| rank(&plan[i]));
    order
}

fn rank(step: &Step) -> u8 {
    match step.resource.kind.as_str() {
        steps::CSV_KIND => 0,
        "CustomResourceDefinition" => 1,
        _ => 2,
    }
}

/// [`execution_order`] split in two: the steps applied one by one (the CSV, then the CRDs), and the
/// rest, which depend on nothing but the CSV's uid and are applied concurrently, group by group
/// ([`concurrent_groups`]).
pub fn sequential_and_concurrent(plan: &[Step]) -> (Vec<usize>, Vec<usize>) {
    execution_order(plan)
        .into_iter()
        .partition(|&i| plan.get(i).is_some_and(|s| rank(s) < 2))
}

/// The concurrent steps (`rest`, in plan order) in the groups they are applied in: the bundle's
/// other objects, then the operator's ServiceAccounts and RBAC. A group starts only when the one
/// before it has applied without a failure. Upstream applies its steps one by one and stops at
/// the first failure, and its plans list the RBAC last, so a bundle object the cluster refuses
/// (a ServiceMonitor with no such CRD) leaves the operator without its ServiceAccount and RBAC:
/// its CSV stays `Pending` `RequirementsNotMet`, never `Succeeded` over a failing plan.
pub fn concurrent_groups(plan: &[Step], rest: &[usize]) -> Vec<Vec<usize>> {
    let is_rbac = |i: &usize| {
        plan.get(*i)
            .is_some_and(|s| steps::is_account_or_rbac(&s.resource.group, &s.resource.kind))
    };
    let (rbac, objects): (Vec<usize>, Vec<usize>) = rest.iter().copied().partition(is_rbac);
    [objects, rbac].into_iter().filter(|g| !g.is_empty()).collect()
}

/// Whether a CRD is served: `Established` and `NamesAccepted` both `True`.
pub fn crd_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            let is = |t: &str| cs.iter().any(|c| c.type_ == t && c.status == "True");
            is("Established") && is("NamesAccepted")
        })
}

/// The plan's `Installed` condition at `now`: `True`, or `False` with `InstallComponentFailed`
/// and the message naming the object.
pub fn installed_condition(ok: bool, message: Option<String>, now: &Time) -> InstallPlanCondition {
    InstallPlanCondition {
        type_: Some(InstallPlanConditionType::Installed),
        status: Some(ConditionStatus::from_bool(ok)),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
        reason: (!ok).then_some(InstallPlanConditionReason::InstallComponentFailed),
        message,
    }
}

/// How long a plan without steps is left alone before [`unresolvable`] fails it: whoever made it
/// by hand gives it its steps and phase with a second write right after the create (as
/// upstream's own e2e suite does), and that write must not meet a status of ours.
pub const UNRESOLVABLE_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// What [`unresolvable`] says of a plan.
#[derive(Clone, Debug, PartialEq)]
pub enum Unresolvable {
    /// The plan has steps or lookups, is terminal, or is a Subscription's: not one of these.
    No,
    /// A plan without steps younger than [`UNRESOLVABLE_GRACE`]: look again after this long.
    WaitFor(std::time::Duration),
    /// The plan's new status.
    Fail(Box<InstallPlanStatus>),
}

/// The status of a plan no Subscription made and no catalog resolved (a hand-made InstallPlan
/// with no steps, [`UNRESOLVABLE_GRACE`] after its creation): `Failed`, with `Installed=False`
/// `InstallCheckFailed` (upstream's reason for a plan that cannot be resolved) and a message
/// naming the CSVs and the fix. Upstream leaves such a plan without a status for ever; olm-rs
/// says why nothing happens. A plan owned by a Subscription whose status is not written yet is
/// not one of these: its Subscription writes its steps right after creating it.
pub fn unresolvable(ip: &InstallPlan, now: &Time) -> Unresolvable {
    let status = ip.status.clone().unwrap_or_default();
    if status.phase.is_terminal() || !status.plan.is_empty() || !status.bundle_lookups.is_empty() {
        return Unresolvable::No;
    }
    let from_subscription = ip
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.kind == "Subscription");
    if from_subscription {
        return Unresolvable::No;
    }
    if let Some(created) = &ip.metadata.creation_timestamp {
        let age = now.0.duration_since(created.0);
        let grace = k8s_openapi::jiff::SignedDuration::try_from(UNRESOLVABLE_GRACE).unwrap_or_default();
        if age < grace {
            let left = (grace - age).unsigned_abs();
            return Unresolvable::WaitFor(left);
        }
    }
    let name = ip.metadata.name.clone().unwrap_or_default();
    let csvs = if ip.spec.cluster_service_version_names.is_empty() {
        "no ClusterServiceVersion".to_owned()
    } else {
        format!(
            "ClusterServiceVersion {}",
            ip.spec.cluster_service_version_names.join(", ")
        )
    };
    let message = format!(
        "InstallPlan {name} names {csvs} but has no steps, and no catalog bundle was resolved for it: \
         olm-rs installs only what a Subscription resolves from a catalog; create a Subscription \
         for the package (with startingCSV to pick a version) and delete this InstallPlan"
    );
    Unresolvable::Fail(Box::new(InstallPlanStatus {
        phase: InstallPlanPhase::Failed,
        message: Some(message.clone()),
        conditions: vec![InstallPlanCondition {
            type_: Some(InstallPlanConditionType::Installed),
            status: Some(ConditionStatus::False),
            last_update_time: Some(now.clone()),
            last_transition_time: Some(now.clone()),
            reason: Some(InstallPlanConditionReason::InstallCheckFailed),
            message: Some(message),
        }],
        ..status
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        api::v1alpha1::{Approval, InstallPlanSpec, InstallPlanStatus, StepStatus},
        plan::operator_group::member_annotations,
    };

    fn ip(approval: Approval, approved: bool) -> InstallPlan {
        InstallPlan::new(
            "install-abc",
            InstallPlanSpec {
                source: None,
                source_namespace: None,
                cluster_service_version_names: vec!["a.v1".into()],
                approval,
                approved,
                generation: None,
            },
        )
    }

    fn with_phase(mut plan: InstallPlan, phase: InstallPlanPhase) -> InstallPlan {
        plan.status = Some(InstallPlanStatus {
            phase,
            plan: vec![step("ConfigMap", "c")],
            ..Default::default()
        });
        plan
    }

    #[test]
    fn the_phase_decides_a_plan_waits_for_approval_and_an_installing_one_runs() {
        let waiting = with_phase(ip(Approval::Manual, false), InstallPlanPhase::RequiresApproval);
        assert_eq!(transition(&waiting), Transition::Leave);
        let approved = with_phase(ip(Approval::Manual, true), InstallPlanPhase::RequiresApproval);
        assert_eq!(transition(&approved), Transition::Execute);
        let automatic = with_phase(ip(Approval::Automatic, true), InstallPlanPhase::Installing);
        assert_eq!(transition(&automatic), Transition::Execute);
        // Upstream runs an Installing plan whatever its approval says.
        let manual_installing = with_phase(ip(Approval::Manual, false), InstallPlanPhase::Installing);
        assert_eq!(transition(&manual_installing), Transition::Execute);
    }

    #[test]
    fn a_plan_without_a_phase_or_a_terminal_one_is_left_alone() {
        for phase in [
            InstallPlanPhase::None,
            InstallPlanPhase::Planning,
            InstallPlanPhase::Other("Later".into()),
            InstallPlanPhase::Complete,
            InstallPlanPhase::Failed,
        ] {
            let plan = with_phase(ip(Approval::Automatic, true), phase.clone());
            assert_eq!(transition(&plan), Transition::Leave, "{phase:?}");
        }
        assert_eq!(transition(&ip(Approval::Automatic, true)), Transition::Leave);
    }

    fn group(name: &str, namespaces: Option<Vec<&str>>) -> OperatorGroup {
        let mut group = OperatorGroup::new(name, Default::default());
        group.status = namespaces.map(|n| crate::api::v1::OperatorGroupStatus {
            namespaces: Some(n.into_iter().map(str::to_owned).collect()),
            service_account_ref: None,
            last_updated: Time(k8s_openapi::jiff::Timestamp::from_second(0).unwrap()),
            conditions: Vec::new(),
        });
        group
    }

    #[test]
    fn a_plan_needs_exactly_one_group_that_manages_its_namespace() {
        assert_eq!(group_check([]), Err(NO_OPERATOR_GROUP.to_owned()));
        // A group whose targets are not resolved yet does not count.
        let fresh = group("og", None);
        assert_eq!(group_check([&fresh]), Err(NO_OPERATOR_GROUP.to_owned()));
        let ready = group("og", Some(vec!["ns"]));
        assert_eq!(group_check([&fresh, &ready]), Ok(None));
        let all = group("all", Some(vec![""]));
        assert_eq!(
            group_check([&ready, &all]),
            Err("more than one operator group(s) are managing this namespace count=2".to_owned())
        );
    }

    #[test]
    fn the_group_condition_is_set_while_no_group_manages_and_cleared_as_upstream_after() {
        let t0 = Time(k8s_openapi::jiff::Timestamp::from_second(0).unwrap());
        let t1 = Time(k8s_openapi::jiff::Timestamp::from_second(10).unwrap());
        let mut status = InstallPlanStatus {
            phase: InstallPlanPhase::Installing,
            ..Default::default()
        };
        // A passing check on a plan that never failed one writes nothing.
        assert_eq!(group_condition(&status, &Ok(None), &t0), None);
        let failed = group_condition(&status, &Err(NO_OPERATOR_GROUP.into()), &t0).unwrap();
        assert_eq!(failed.status, Some(ConditionStatus::False));
        assert_eq!(
            failed.reason,
            Some(InstallPlanConditionReason::InstallCheckFailed)
        );
        assert_eq!(failed.message.as_deref(), Some(NO_OPERATOR_GROUP));
        set_condition(&mut status, failed);
        // The same failure again changes nothing (no status write).
        assert_eq!(
            group_condition(&status, &Err(NO_OPERATOR_GROUP.into()), &t1),
            None
        );
        let cleared = group_condition(&status, &Ok(None), &t1).unwrap();
        assert_eq!(cleared.reason, Some(InstallPlanConditionReason::Unknown));
        assert_eq!(cleared.message, None);
        assert_eq!(cleared.last_transition_time, Some(t0));
        set_condition(&mut status, cleared);
        assert_eq!(status.conditions.len(), 1);
        assert_eq!(group_condition(&status, &Ok(None), &t1), None);
    }

    #[test]
    fn a_group_naming_an_account_passes_once_the_account_is_referenced() {
        let mut scoped = group("og", Some(vec!["ns"]));
        scoped.metadata.namespace = Some("ns".into());
        scoped.spec.service_account_name = Some("installer".into());
        assert_eq!(
            group_check([&scoped]),
            Err("please make sure the service account exists. sa=installer operatorgroup=ns/og".to_owned())
        );
        let reference = ObjectReference {
            kind: Some("ServiceAccount".into()),
            namespace: Some("ns".into()),
            name: Some("installer".into()),
            ..Default::default()
        };
        if let Some(status) = scoped.status.as_mut() {
            status.service_account_ref = Some(reference.clone());
        }
        assert_eq!(group_check([&scoped]), Ok(Some(reference)));
    }

    #[test]
    fn a_plan_runs_as_its_attenuated_account_in_its_namespace_unless_named() {
        let mut status = InstallPlanStatus::default();
        assert_eq!(run_as(&status, "ns"), None);
        status.attenuated_service_account_ref = Some(ObjectReference {
            name: Some("installer".into()),
            ..Default::default()
        });
        assert_eq!(run_as(&status, "ns"), Some(("ns".into(), "installer".into())));
        status.attenuated_service_account_ref = Some(ObjectReference {
            name: Some("installer".into()),
            namespace: Some("other".into()),
            ..Default::default()
        });
        assert_eq!(run_as(&status, "ns"), Some(("other".into(), "installer".into())));
        status.attenuated_service_account_ref = Some(ObjectReference::default());
        assert_eq!(run_as(&status, "ns"), None);
        assert!(!applied_as_account("CustomResourceDefinition"));
        assert!(applied_as_account("ClusterServiceVersion"));
        assert!(applied_as_account("ClusterRole"));
    }

    #[test]
    fn only_failed_scoped_plans_are_retried_on_rbac_changes_after_they_failed() {
        let t = |s| Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap());
        let mut plan = ip(Approval::Automatic, true);
        plan.status = Some(InstallPlanStatus {
            phase: InstallPlanPhase::Failed,
            conditions: vec![installed_condition(false, Some("forbidden".into()), &t(10))],
            ..Default::default()
        });
        assert!(!retried_on_rbac_change(&plan, Some(&t(20))), "not scoped");
        if let Some(status) = plan.status.as_mut() {
            status.attenuated_service_account_ref = Some(ObjectReference::default());
        }
        assert!(retried_on_rbac_change(&plan, Some(&t(20))));
        assert!(
            !retried_on_rbac_change(&plan, Some(&t(5))),
            "the change came before the failure"
        );
        assert!(!retried_on_rbac_change(&plan, None), "no change seen");
        if let Some(status) = plan.status.as_mut() {
            status.phase = InstallPlanPhase::Complete;
        }
        assert!(!retried_on_rbac_change(&plan, Some(&t(20))));
    }

    #[test]
    fn namespaced_objects_get_an_owner_reference_and_cluster_scoped_ones_none() {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op", "namespace": "other"}});
        let out = prepare_object(sa, "ns", true, Some(("a.v1", "uid-1")), None);
        assert_eq!(out["metadata"]["namespace"], "ns");
        assert_eq!(out["metadata"]["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(
            out["metadata"]["ownerReferences"][0]["kind"],
            "ClusterServiceVersion"
        );

        let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}});
        let out = prepare_object(cr, "ns", false, Some(("a.v1", "uid-1")), None);
        assert!(out["metadata"].get("namespace").is_none());
        assert!(out["metadata"].get("ownerReferences").is_none());
    }

    #[test]
    fn the_csv_is_never_owned_by_itself() {
        let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "metadata": {"name": "a.v1"}});
        let out = prepare_object(csv, "ns", true, Some(("a.v1", "u")), None);
        assert!(out["metadata"].get("ownerReferences").is_none());
    }

    #[test]
    fn a_csv_is_created_with_its_finalizer_and_the_member_annotations_over_its_own() {
        let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "a.v1", "annotations": {"capabilities": "Basic Install",
                "olm.targetNamespaces": "stale"}}});
        let member = member_annotations("og", "ns", &["ns".to_owned()]);
        let out = prepare_object(csv, "ns", true, None, Some(&member));
        let annotations = &out["metadata"]["annotations"];
        assert_eq!(annotations["capabilities"], "Basic Install");
        assert_eq!(annotations["olm.operatorGroup"], "og");
        assert_eq!(annotations["olm.operatorNamespace"], "ns");
        assert_eq!(annotations["olm.targetNamespaces"], "ns");
        assert_eq!(
            out["metadata"]["finalizers"],
            json!([labels::CSV_CLEANUP_FINALIZER])
        );

        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op"}});
        let out = prepare_object(sa, "ns", true, None, Some(&member));
        assert!(
            out["metadata"].get("annotations").is_none(),
            "only the CSV carries them"
        );
    }

    fn step(kind: &str, name: &str) -> Step {
        Step {
            resolving: "a.v1".into(),
            resource: crate::api::v1alpha1::StepResource {
                kind: kind.into(),
                name: name.into(),
                ..Default::default()
            },
            optional: false,
            status: StepStatus::Unknown,
        }
    }

    #[test]
    fn the_csv_runs_first_then_the_crds_then_the_rest_in_plan_order() {
        let plan = vec![
            step("CustomResourceDefinition", "a"),
            step("ServiceAccount", "sa"),
            step("Role", "r"),
            step("ClusterServiceVersion", "a.v1"),
            step("Service", "svc"),
        ];
        let names: Vec<&str> = execution_order(&plan)
            .into_iter()
            .map(|i| plan[i].resource.name.as_str())
            .collect();
        assert_eq!(names, ["a.v1", "a", "sa", "r", "svc"]);
        let (one_by_one, together) = sequential_and_concurrent(&plan);
        assert_eq!((one_by_one, together), (vec![3, 0], vec![1, 2, 4]));
    }

    #[test]
    fn the_rbac_waits_for_the_bundles_other_objects() {
        let rbac = |kind: &str, name: &str| {
            let mut s = step(kind, name);
            s.resource.group = if kind == "ServiceAccount" {
                String::new()
            } else {
                "rbac.authorization.k8s.io".into()
            };
            s
        };
        let plan = vec![
            step(steps::CSV_KIND, "a.v1"),
            rbac("ServiceAccount", "sa"),
            step("ServiceMonitor", "metrics"),
            rbac("Role", "r"),
            step("ConfigMap", "cm"),
            rbac("ClusterRoleBinding", "crb"),
        ];
        let (_, rest) = sequential_and_concurrent(&plan);
        assert_eq!(concurrent_groups(&plan, &rest), vec![vec![2, 4], vec![1, 3, 5]]);
        // Nothing but RBAC: one group.
        let only = vec![rbac("ServiceAccount", "sa"), rbac("Role", "r")];
        assert_eq!(concurrent_groups(&only, &[0, 1]), vec![vec![0, 1]]);
    }

    #[test]
    fn the_installed_condition_names_the_failure() {
        let now = Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap());
        let ok = installed_condition(true, None, &now);
        assert_eq!(ok.status, Some(ConditionStatus::True));
        assert_eq!(ok.reason, None);
        let failed = installed_condition(false, Some("error creating Role r: forbidden".into()), &now);
        assert_eq!(failed.status, Some(ConditionStatus::False));
        assert_eq!(
            failed.reason,
            Some(InstallPlanConditionReason::InstallComponentFailed)
        );
        assert_eq!(failed.last_transition_time, Some(now));
    }

    #[test]
    fn a_hand_made_plan_without_steps_fails_naming_its_csvs_but_a_subscriptions_plan_waits() {
        let now = Time(k8s_openapi::jiff::Timestamp::from_second(0).unwrap());
        let plan = ip(Approval::Automatic, true);
        let Unresolvable::Fail(status) = unresolvable(&plan, &now) else {
            panic!("a plan without steps fails");
        };
        assert_eq!(status.phase, InstallPlanPhase::Failed);
        let condition = &status.conditions[0];
        assert_eq!(condition.type_, Some(InstallPlanConditionType::Installed));
        assert_eq!(condition.status, Some(ConditionStatus::False));
        assert_eq!(
            condition.reason,
            Some(InstallPlanConditionReason::InstallCheckFailed)
        );
        let message = condition.message.clone().unwrap();
        assert!(message.contains("ClusterServiceVersion a.v1"), "{message}");
        assert!(message.contains("create a Subscription"), "{message}");
        assert_eq!(status.message, Some(message));
        // Already failed: nothing more to say.
        let mut failed = plan.clone();
        failed.status = Some(*status);
        assert_eq!(unresolvable(&failed, &now), Unresolvable::No);
        // A Subscription's plan whose steps are not written yet waits for them.
        let mut owned = plan;
        owned.metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                kind: "Subscription".into(),
                name: "redis".into(),
                ..Default::default()
            },
        ]);
        assert_eq!(unresolvable(&owned, &now), Unresolvable::No);
    }

    #[test]
    fn a_plan_without_steps_is_given_time_for_its_authors_status_write() {
        let created = Time(k8s_openapi::jiff::Timestamp::from_second(100).unwrap());
        let mut plan = ip(Approval::Automatic, true);
        plan.metadata.creation_timestamp = Some(created);
        let at = |s| Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap());
        assert_eq!(
            unresolvable(&plan, &at(110)),
            Unresolvable::WaitFor(std::time::Duration::from_secs(20))
        );
        assert!(matches!(unresolvable(&plan, &at(130)), Unresolvable::Fail(_)));
        // Its steps written in time: not unresolvable.
        plan.status = Some(InstallPlanStatus {
            phase: InstallPlanPhase::Installing,
            plan: vec![step("ConfigMap", "c")],
            ..Default::default()
        });
        assert_eq!(unresolvable(&plan, &at(130)), Unresolvable::No);
    }

    fn aged(name: &str, seconds: i64, phase: InstallPlanPhase) -> InstallPlan {
        let mut plan = ip(Approval::Automatic, true);
        plan.metadata.name = Some(name.into());
        plan.metadata.creation_timestamp = Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(1_800_000_000 + seconds).unwrap(),
        ));
        plan.status = Some(InstallPlanStatus {
            phase,
            ..Default::default()
        });
        plan
    }

    #[test]
    fn a_namespace_keeps_five_install_plans_the_oldest_finished_unreferenced_go() {
        let none = std::collections::BTreeSet::new();
        let five: Vec<InstallPlan> = (0..5)
            .map(|i| aged(&format!("p{i}"), i, InstallPlanPhase::Complete))
            .collect();
        assert!(plans_to_collect(&five, &none).is_empty(), "five stay");

        let mut eight: Vec<InstallPlan> = (0..8)
            .map(|i| aged(&format!("p{i}"), 10 - i, InstallPlanPhase::Complete))
            .collect();
        // The oldest are p7, p6, p5 (created last-to-first).
        assert_eq!(plans_to_collect(&eight, &none), vec!["p7", "p6", "p5"]);

        // A referenced plan stays, and the next oldest go instead.
        eight[0].status.as_mut().unwrap().phase = InstallPlanPhase::Failed;
        let referenced = std::collections::BTreeSet::from(["p7".to_owned()]);
        assert_eq!(plans_to_collect(&eight, &referenced), vec!["p6", "p5", "p4"]);

        // Nothing newer than a plan in flight goes: the oldest waits for approval, nothing goes;
        // the third oldest is installing, the two before it go.
        eight[7].status.as_mut().unwrap().phase = InstallPlanPhase::RequiresApproval;
        assert!(plans_to_collect(&eight, &none).is_empty());
        eight[7].status.as_mut().unwrap().phase = InstallPlanPhase::Complete;
        eight[5].status.as_mut().unwrap().phase = InstallPlanPhase::Installing;
        assert_eq!(plans_to_collect(&eight, &none), vec!["p7", "p6"]);

        // A backlog goes five at a time, as upstream's sweep.
        let twelve: Vec<InstallPlan> = (0..12)
            .map(|i| aged(&format!("q{i:02}"), i, InstallPlanPhase::Complete))
            .collect();
        assert_eq!(
            plans_to_collect(&twelve, &none),
            vec!["q00", "q01", "q02", "q03", "q04"]
        );
    }

    #[test]
    fn referenced_plans_are_read_from_both_subscription_fields() {
        let sub: crate::api::v1alpha1::Subscription = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"name": "p", "source": "c", "sourceNamespace": "olm"},
            "status": {"lastUpdated": "2026-11-27T00:00:00Z",
                "installPlanRef": {"name": "install-new"},
                "installplan": {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
                                "name": "install-old", "uuid": "u"}}
        }))
        .unwrap();
        assert_eq!(
            referenced_plans([&sub]),
            std::collections::BTreeSet::from(["install-new".to_owned(), "install-old".to_owned()])
        );
    }
}
