//! InstallPlan controller: the approval gate, then the plan's steps applied in order.
//!
//! - Manual plans stay `RequiresApproval` until `spec.approved: true`; Automatic plans go
//!   straight to `Installing` (and `startTime` is set).
//! - Each step's manifest is server-side applied under `olm-rs/installplan` (re-applying a
//!   half-done plan after a crash is therefore safe and creates no duplicates). CRDs wait
//!   for `Established` (`WaitingForApi` → `Created`); namespaced objects get an owner
//!   reference to the CSV they belong to (`step.resolving`), once that CSV exists (except the
//!   Subscriptions generated for dependencies, see [`crate::plan::steps::owned_by_csv`]);
//!   cluster-scoped objects get the `olm.owner*` labels instead. The CSV is created with its
//!   `operators.coreos.com/csv-cleanup` finalizer already in place.
//! - CRDs and the CSV go first, one by one; the remaining steps (ServiceAccounts, RBAC, other
//!   bundle objects) are independent of each other and are applied concurrently. The CSV's
//!   uid comes from its apply or the reflector store, and API discovery is cached, so a step
//!   costs one request (a re-applied ServiceAccount keeps the CSVs that already own it, read
//!   from the ServiceAccount store, see [`crate::plan::steps::merge_csv_owner_references`]).
//!   The CSV is created with the OperatorGroup member annotations when the namespace's group
//!   already lists its targets, sparing the CSV controller a write.
//! - Events are published once the status is written, in the background
//!   ([`super::Context::publish`]).
//! - A failing step is retried until `--install-plan-retry-timeout` after `startTime`; then
//!   the plan is `Failed` with `Installed=False/InstallComponentFailed` naming the object.
//!   A plan whose steps are all done is `Complete` with `Installed=True`.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use k8s_openapi::{
    api::core::v1::{ObjectReference, ServiceAccount},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api, Resource, ResourceExt,
    core::{GroupVersionKind, PartialObjectMeta},
    runtime::{controller::Action, reflector::ObjectRef},
};
use serde_json::{Value, json};

use super::{Context, Error, EventNote, Result, instrumented};
use crate::{
    api::{
        ConditionStatus, labels,
        v1alpha1::{
            Approval, ClusterServiceVersion, InstallPlan, InstallPlanCondition, InstallPlanConditionReason,
            InstallPlanConditionType, InstallPlanPhase, InstallPlanStatus, Step, StepStatus,
        },
    },
    k8s::apply,
    plan::{operator_group::member_annotations, steps},
};

/// What the approval gate says (pure).
pub fn gate(ip: &InstallPlan) -> InstallPlanPhase {
    let phase = ip.status.as_ref().map(|s| s.phase.clone()).unwrap_or_default();
    if phase.is_terminal() {
        return phase;
    }
    if ip.spec.approval == Approval::Manual && !ip.spec.approved {
        InstallPlanPhase::RequiresApproval
    } else {
        InstallPlanPhase::Installing
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

/// The order in which the plan's steps are executed: CRDs first (as listed), then the CSV, then
/// everything else in plan order. The CSV is hoisted so that its uid exists when the
/// namespaced objects listed before it (ServiceAccounts, Roles, RoleBindings) are applied with
/// their owner reference; the CSV itself waits in `Pending` until they exist.
pub fn execution_order(plan: &[Step]) -> Vec<usize> {
    let rank = |s: &Step| match s.resource.kind.as_str() {
        "CustomResourceDefinition" => 0,
        steps::CSV_KIND => 1,
        _ => 2,
    };
    let mut order: Vec<usize> = (0..plan.len()).collect();
    order.sort_by_key(|&i| rank(&plan[i]));
    order
}

fn crd_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            let is = |t: &str| cs.iter().any(|c| c.type_ == t && c.status == "True");
            is("Established") && is("NamesAccepted")
        })
}

fn installed_condition(ok: bool, message: Option<String>) -> InstallPlanCondition {
    let now = Time(Timestamp::now());
    InstallPlanCondition {
        type_: Some(InstallPlanConditionType::Installed),
        status: Some(ConditionStatus::from_bool(ok)),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
        reason: (!ok).then_some(InstallPlanConditionReason::InstallComponentFailed),
        message,
    }
}

/// Reconciles one InstallPlan.
pub async fn reconcile(ip: Arc<InstallPlan>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(Arc::clone(&ip), Arc::clone(&ctx), reconcile_inner(ip, ctx)).await
}

async fn reconcile_inner(ip: Arc<InstallPlan>, ctx: Arc<Context>) -> Result<Action> {
    let ns = ip
        .namespace()
        .ok_or_else(|| Error::InvalidObject("InstallPlan without namespace".into()))?;
    let Some(old) = ip.status.clone() else {
        return Ok(Action::await_change());
    };
    if old.phase.is_terminal() || old.plan.is_empty() {
        return Ok(Action::await_change());
    }
    let mut status = old.clone();
    let reference = ip.object_ref(&());
    // Published in order once the status is written.
    let mut events = Vec::new();
    match gate(&ip) {
        InstallPlanPhase::RequiresApproval => {
            if status.phase != InstallPlanPhase::RequiresApproval {
                status.phase = InstallPlanPhase::RequiresApproval;
                write(&ip, &old, &status, &ctx).await?;
            }
            return Ok(Action::await_change());
        }
        _ => {
            if status.phase != InstallPlanPhase::Installing {
                status.phase = InstallPlanPhase::Installing;
                status.message = None;
                events.push(note(
                    &reference,
                    false,
                    "Installing",
                    format!("installing {}", ip.spec.cluster_service_version_names.join(", ")),
                ));
            }
            if status.start_time.is_none() {
                status.start_time = Some(Time(Timestamp::now()));
            }
        }
    }

    let outcome = execute(&ctx, &ns, &mut status.plan).await;
    let waiting = status.plan.iter().any(|s| s.status == StepStatus::WaitingForApi);
    let action = match outcome {
        Ok(()) if !waiting => {
            status.phase = InstallPlanPhase::Complete;
            status.message = None;
            status.conditions = vec![installed_condition(true, None)];
            events.push(note(
                &reference,
                false,
                "InstallSucceeded",
                "every step of the plan was applied".into(),
            ));
            Action::await_change()
        }
        Ok(()) => Action::requeue(Duration::from_secs(2)),
        Err(message) => {
            let started = status.start_time.as_ref().map_or_else(Timestamp::now, |t| t.0);
            let timeout = SignedDuration::try_from(ctx.shared.config.install_plan_retry_timeout)
                .unwrap_or(SignedDuration::from_secs(60));
            if Timestamp::now().duration_since(started) < timeout {
                status.message = Some(format!("retrying execution due to error: {message}"));
                Action::requeue(Duration::from_secs(5))
            } else {
                status.phase = InstallPlanPhase::Failed;
                status.message = Some(message.clone());
                status.conditions = vec![installed_condition(false, Some(message.clone()))];
                events.push(note(&reference, true, "InstallComponentFailed", message));
                Action::await_change()
            }
        }
    };
    write(&ip, &old, &status, &ctx).await?;
    ctx.publish(events);
    Ok(action)
}

/// An Event of this controller (action `Install`).
fn note(regarding: &ObjectReference, warning: bool, reason: &str, note: String) -> EventNote {
    EventNote {
        regarding: regarding.clone(),
        warning,
        reason: reason.to_owned(),
        action: "Install",
        note,
    }
}

/// Writes the plan's status unless it equals what the object shows (timestamps aside) or
/// repeats this controller's last write while the store lags behind it.
async fn write(
    ip: &InstallPlan,
    old: &InstallPlanStatus,
    new: &InstallPlanStatus,
    ctx: &Context,
) -> Result<()> {
    let changed = !apply::same_ignoring_time(&apply::to_value(old), &apply::to_value(new));
    ctx.write_status(ip, changed, new).await.map(drop)
}

/// Applies every step not done yet: CRDs and the CSV first, in order, then the other objects
/// (ServiceAccounts, RBAC, Services, ...) concurrently, since none depends on another once the
/// CSV's uid is known. Returns the first failure as a message naming the object.
async fn execute(ctx: &Arc<Context>, ns: &str, plan: &mut [Step]) -> std::result::Result<(), String> {
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client());
    let mut owners: HashMap<String, String> = HashMap::new();
    let order = execution_order(plan);
    let (first, rest): (Vec<usize>, Vec<usize>) = order.into_iter().partition(|&i| {
        plan.get(i).is_some_and(|s| {
            matches!(
                s.resource.kind.as_str(),
                "CustomResourceDefinition" | steps::CSV_KIND
            )
        })
    });
    for index in first {
        let Some(step) = plan.get_mut(index) else { continue };
        if matches!(step.status, StepStatus::Created | StepStatus::Present) {
            continue;
        }
        if step.status == StepStatus::WaitingForApi && step.resource.kind == "CustomResourceDefinition" {
            let what = format!("{} {}", step.resource.kind, step.resource.name);
            match crds.get_opt(&step.resource.name).await {
                Ok(Some(crd)) if crd_established(&crd) => step.status = StepStatus::Created,
                Ok(_) => {}
                Err(err) => return Err(format!("failed to read {what}: {err}")),
            }
            continue;
        }
        step.status = apply_step(ctx, ns, step, None, &mut owners).await?;
    }
    // The CSV's uid for the owner references: from this reconcile's apply, else the store
    // (a GET only when the store has not seen the CSV yet).
    let mut wanted: Vec<String> = rest
        .iter()
        .filter_map(|&i| plan.get(i))
        .filter(|s| !matches!(s.status, StepStatus::Created | StepStatus::Present))
        .map(|s| s.resolving.clone())
        .collect();
    wanted.sort();
    wanted.dedup();
    for csv_name in wanted {
        if owners.contains_key(&csv_name) {
            continue;
        }
        if let Some(uid) = csv_uid(ctx, ns, &csv_name).await? {
            owners.insert(csv_name, uid);
        }
    }
    let owners = Arc::new(owners);
    let pending: Vec<(usize, Step)> = rest
        .into_iter()
        .filter_map(|i| plan.get(i).map(|s| (i, s.clone())))
        .filter(|(_, s)| !matches!(s.status, StepStatus::Created | StepStatus::Present))
        .collect();
    let mut results = Vec::with_capacity(pending.len());
    for chunk in pending.chunks(STEP_CONCURRENCY) {
        let applies = chunk.iter().cloned().map(|(i, step)| {
            let ctx = Arc::clone(ctx);
            let ns = ns.to_owned();
            let owners = Arc::clone(&owners);
            async move {
                let mut scratch = HashMap::new();
                (
                    i,
                    apply_step(&ctx, &ns, &step, Some(owners.as_ref()), &mut scratch).await,
                )
            }
        });
        results.extend(futures::future::join_all(applies).await);
    }
    let mut first_error = None;
    for (i, result) in results {
        match result {
            Ok(status) => {
                if let Some(step) = plan.get_mut(i) {
                    step.status = status;
                }
            }
            Err(message) => {
                first_error.get_or_insert(message);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Steps applied at once after the CSV.
const STEP_CONCURRENCY: usize = 8;

/// The uid of the CSV `name` in `ns`: from the reflector store, else (not seen yet) the API.
async fn csv_uid(ctx: &Context, ns: &str, name: &str) -> std::result::Result<Option<String>, String> {
    let key = ObjectRef::<ClusterServiceVersion>::new(name).within(ns);
    if let Some(csv) = ctx.shared.stores.csvs.get(&key) {
        return Ok(csv.uid());
    }
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), ns);
    match csvs.get_opt(name).await {
        Ok(found) => Ok(found.and_then(|c| c.uid())),
        Err(err) => Err(format!("failed to read CSV {name}: {err}")),
    }
}

/// The OperatorGroup member annotations for a CSV in `ns`, from the store: only when the
/// namespace has exactly one group and it lists its target namespaces (otherwise the CSV
/// controller reports the problem and writes them once the group is ready).
fn member_annotations_in(ctx: &Context, ns: &str) -> Option<BTreeMap<String, String>> {
    let groups: Vec<_> = ctx
        .shared
        .stores
        .operator_groups
        .state()
        .into_iter()
        .filter(|g| g.namespace().as_deref() == Some(ns))
        .collect();
    let [group] = groups.as_slice() else {
        return None;
    };
    let targets = group.status.as_ref()?.namespaces.as_ref()?;
    Some(member_annotations(&group.name_any(), ns, targets))
}

/// Applies one step; returns its new status. `owners` maps CSV names to uids; `None` while
/// the CSV itself is being applied (its uid is recorded in `created`).
async fn apply_step(
    ctx: &Context,
    ns: &str,
    step: &Step,
    owners: Option<&HashMap<String, String>>,
    created: &mut HashMap<String, String>,
) -> std::result::Result<StepStatus, String> {
    let r = &step.resource;
    let what = format!("{} {}", r.kind, r.name);
    let manifest: Value = match r.manifest.as_deref().map(serde_json::from_str) {
        Some(Ok(v)) => v,
        Some(Err(err)) => return Err(format!("the manifest of {what} is not valid JSON: {err}")),
        None => return Err(format!("step {what} has no manifest")),
    };
    let gvk = GroupVersionKind::gvk(&r.group, &r.version, steps::apply_kind(&r.kind));
    let (resource, caps) = match ctx.shared.discover(&gvk).await {
        Ok(found) => found,
        Err(err) => return Err(format!("api-server resource not found installing {what}: {err}")),
    };
    let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
    let owned = steps::owned_by_csv(&r.kind);
    let owner = owners
        .filter(|_| owned)
        .and_then(|o| o.get(&step.resolving))
        .map(|uid| (step.resolving.clone(), uid.clone()));
    if namespaced && owned && owner.is_none() {
        // The CSV step comes first; its object may not be visible yet. Try again shortly.
        return Err(format!(
            "waiting for ClusterServiceVersion {} before {what}",
            step.resolving
        ));
    }
    let member = (r.kind == steps::CSV_KIND)
        .then(|| member_annotations_in(ctx, ns))
        .flatten();
    let object = prepare_object(
        manifest,
        ns,
        namespaced,
        owner.as_ref().map(|(n, u)| (n.as_str(), u.as_str())),
        member.as_ref(),
    );
    let api = apply::dynamic_api(ctx.client(), &resource, namespaced.then_some(ns));
    // A ServiceAccount is shared by the versions of an operator: keep the CSVs that already
    // own it (the one being replaced stays satisfied until it is replaced).
    // Its owners come from the (metadata-only) ServiceAccount store: a ServiceAccount that
    // another CSV owns was created by that CSV's plan, long seen by the store.
    let object = if r.kind == "ServiceAccount" {
        let key = ObjectRef::<PartialObjectMeta<ServiceAccount>>::new(&r.name).within(ns);
        match ctx.shared.stores.service_accounts.get(&key) {
            Some(live) => {
                let refs: Vec<Value> = live
                    .owner_references()
                    .iter()
                    .filter_map(|o| serde_json::to_value(o).ok())
                    .collect();
                steps::merge_csv_owner_references(&object, &refs)
            }
            None => object,
        }
    } else {
        object
    };
    match apply::apply_dynamic(&api, &r.name, &object, &ctx.manager).await {
        Ok(applied) => {
            if r.kind == steps::CSV_KIND
                && let Some(uid) = applied.metadata.uid
            {
                created.insert(r.name.clone(), uid);
            }
        }
        Err(err) => return Err(format!("error creating {what}: {err}")),
    }
    if r.kind == "CustomResourceDefinition" {
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client());
        return Ok(match crds.get_opt(&r.name).await {
            Ok(Some(crd)) if crd_established(&crd) => StepStatus::Created,
            _ => StepStatus::WaitingForApi,
        });
    }
    Ok(StepStatus::Created)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1alpha1::InstallPlanSpec;

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

    #[test]
    fn a_manual_plan_waits_for_approval_and_an_automatic_one_installs() {
        assert_eq!(
            gate(&ip(Approval::Manual, false)),
            InstallPlanPhase::RequiresApproval
        );
        assert_eq!(gate(&ip(Approval::Manual, true)), InstallPlanPhase::Installing);
        assert_eq!(gate(&ip(Approval::Automatic, true)), InstallPlanPhase::Installing);
    }

    #[test]
    fn terminal_plans_stay_terminal() {
        let mut plan = ip(Approval::Manual, false);
        plan.status = Some(InstallPlanStatus {
            phase: InstallPlanPhase::Complete,
            ..Default::default()
        });
        assert_eq!(gate(&plan), InstallPlanPhase::Complete);
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
    fn crds_run_first_then_the_csv_then_the_rest_in_plan_order() {
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
        assert_eq!(names, ["a", "a.v1", "sa", "r", "svc"]);
    }
}
