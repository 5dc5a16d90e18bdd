//! OperatorConditions, the shell around [`crate::plan::operator_condition`], in two parts:
//!
//! - **The generator** ([`sync_for_csv`], upstream `OperatorConditionGeneratorReconciler`):
//!   called by the CSV controller after each sync of an original CSV, it server-side applies the
//!   CSV's OperatorCondition (owner reference, `spec.deployments`, `spec.serviceAccounts`: only
//!   those fields, under the field manager [`MANAGER`]) when the store shows it missing or
//!   different. The garbage collector removes it with the CSV (its controller owner reference).
//! - **The controller** ([`reconcile`], upstream `OperatorConditionReconciler`): for each
//!   OperatorCondition, applies its Role and RoleBinding (on its own changes and theirs),
//!   copies `spec.conditions` into `status.conditions` when they are not there yet, and warns
//!   (Event `IgnoredOverride`) about `spec.overrides` entries OLM does not act on.
//!
//! The CSV controller reads the store to gate upgrades ([`upgrade_blocker`]) and is woken by
//! every OperatorCondition change ([`csvs_for`]).
//!
//! The OperatorCondition CRD may be missing (an install from before it existed): then its
//! watch is optional and the generator does nothing until the store has listed (the CRD was
//! installed), so nothing fails and nothing is polled for a kind the cluster lacks. When the
//! CRD is served at startup, the store is a readiness gate like the others, so the generator
//! never mistakes a cold store for a missing OperatorCondition.

use std::sync::{Arc, atomic::Ordering};

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::{
    Api, Resource, ResourceExt,
    core::PartialObjectMeta,
    runtime::{controller::Action, reflector::ObjectRef},
};

use super::wiring::{self, Wiring};
use super::{Context, Error, Result, instrumented};
use crate::{
    api::v1alpha1::ClusterServiceVersion,
    api::v2::OperatorCondition,
    k8s::apply,
    plan::operator_condition::{self as plan, UpgradeBlock},
};

/// The field manager of OperatorConditions, their Roles, RoleBindings and statuses.
pub const MANAGER: &str = "olm-rs/operatorcondition";

/// The controller's name (metrics, logs, its [`Context`]).
pub const CONTROLLER: &str = "operatorcondition";

/// The OperatorCondition of the CSV `name` in `ns`, from the store.
fn stored(ctx: &Context, ns: &str, name: &str) -> Option<Arc<OperatorCondition>> {
    ctx.shared
        .stores
        .operator_conditions
        .get(&ObjectRef::new(name).within(ns))
}

/// Why the upgrade away from the CSV `replaced` (in `ns`) must wait, if it must.
pub fn upgrade_blocker(ctx: &Context, ns: &str, replaced: &str) -> Option<UpgradeBlock> {
    plan::upgrade_blocker(stored(ctx, ns, replaced).as_deref())
}

/// The CSVs an OperatorCondition change concerns: its own CSV (the generator puts a changed or
/// lost spec back) and those replacing it (their upgrade gate).
pub fn csvs_for(
    csvs: &[Arc<ClusterServiceVersion>],
    oc: &OperatorCondition,
) -> Vec<ObjectRef<ClusterServiceVersion>> {
    let ns = oc.namespace().unwrap_or_default();
    let name = oc.name_any();
    let mut refs = vec![ObjectRef::new(&name).within(&ns)];
    refs.extend(
        csvs.iter()
            .filter(|c| c.namespace().as_deref() == Some(ns.as_str()))
            .filter(|c| c.spec.replaces.as_deref() == Some(name.as_str()))
            .map(|c| ObjectRef::from_obj(c.as_ref())),
    );
    refs
}

/// The OperatorCondition controlling a Role or RoleBinding, to reconcile when it changes. A
/// change this process did not make (its resourceVersion is not the one the last apply
/// returned) makes the next reconcile apply them again ([`super::applied::AppliedRbac`], in the
/// shared context).
pub fn owner_of<K: Resource>(
    shared: &super::Shared,
    obj: &PartialObjectMeta<K>,
) -> Option<ObjectRef<OperatorCondition>> {
    let ns = obj.namespace()?;
    let owner = obj
        .owner_references()
        .iter()
        .find(|o| o.kind == plan::KIND && o.controller == Some(true))
        .map(|o| ObjectRef::new(&o.name).within(&ns))?;
    let key = (ns, owner.name.clone());
    let version = obj.resource_version().unwrap_or_default();
    super::lock(&shared.condition_rbac).observed(&key, &version);
    Some(owner)
}

/// The generator: applies `csv`'s OperatorCondition when the store shows it missing or
/// different. Nothing for a copied CSV, a CSV without uid, or a cluster without the kind.
pub async fn sync_for_csv(csv: &ClusterServiceVersion, ctx: &Context) -> Result<()> {
    if super::copied_csv::is_copy(csv) {
        return Ok(());
    }
    let Some(desired) = plan::desired(csv) else {
        return Ok(());
    };
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    // Not listed: the kind is not served (yet). Listed: the store says what exists.
    if !ctx
        .shared
        .stores
        .operator_conditions_synced
        .load(Ordering::Acquire)
        || stored(ctx, &ns, &name).is_some_and(|seen| plan::up_to_date(&desired, &seen))
    {
        return Ok(());
    }
    let api: Api<OperatorCondition> = Api::namespaced(ctx.client(), &ns);
    match apply::apply(&api, &name, &desired, MANAGER).await {
        Ok(_) => Ok(()),
        // The namespace is going, or the kind went away: nothing to keep.
        Err(kube::Error::Api(s)) if s.code == 404 || (s.code == 403 && s.message.contains("terminat")) => {
            Ok(())
        }
        Err(source) => Err(Error::apply(format!("OperatorCondition {ns}/{name}"))(source)),
    }
}

/// Reconciles one OperatorCondition: its Role and RoleBinding, then its status.
pub async fn reconcile(oc: Arc<OperatorCondition>, ctx: Arc<Context>) -> Result<Action> {
    let store = ctx.shared.stores.operator_conditions.clone();
    instrumented(oc, Arc::clone(&ctx), Some(&store), |oc| reconcile_inner(oc, ctx)).await
}

async fn reconcile_inner(oc: Arc<OperatorCondition>, ctx: Arc<Context>) -> Result<Action> {
    if oc.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = oc.namespace().unwrap_or_default();
    let name = oc.name_any();
    // An apply that changes nothing leaves the resourceVersion alone: no watch event, no loop.
    if let (Some(role), Some(binding)) = (plan::role(&oc), plan::role_binding(&oc)) {
        let key = (ns.clone(), name.clone());
        let hash = crate::plan::hash_json(&(&role, &binding));
        if !super::lock(&ctx.shared.condition_rbac).fresh(&key, hash) {
            let roles: Api<Role> = Api::namespaced(ctx.client(), &ns);
            let role = apply::apply(&roles, &name, &role, &ctx.manager)
                .await
                .map_err(Error::apply(format!("Role {ns}/{name} of its OperatorCondition")))?;
            let bindings: Api<RoleBinding> = Api::namespaced(ctx.client(), &ns);
            let binding = apply::apply(&bindings, &name, &binding, &ctx.manager)
                .await
                .map_err(Error::apply(format!(
                    "RoleBinding {ns}/{name} of its OperatorCondition"
                )))?;
            let versions = [
                role.resource_version().unwrap_or_default(),
                binding.resource_version().unwrap_or_default(),
            ];
            super::lock(&ctx.shared.condition_rbac).record(key, hash, versions);
        }
    }
    if let Some(status) = plan::synced_status(&oc) {
        ctx.write_status(oc.as_ref(), true, &status).await?;
    }
    // Repeats are counted on one Event by the recorder, not written again.
    if let Some(note) = plan::ignored_overrides(&oc) {
        ctx.warning(&oc.object_ref(&()), "IgnoredOverride", "Sync", note);
    }
    Ok(Action::await_change())
}

/// The OperatorCondition controller: their Roles and RoleBindings, and their status.
pub(super) fn controller<S>(
    w: &Wiring<'_>,
    conditions: S,
    store: kube::runtime::reflector::Store<OperatorCondition>,
) -> impl std::future::Future<Output = ()> + Send + use<S>
where
    S: futures::Stream<Item = std::result::Result<OperatorCondition, kube::runtime::watcher::Error>>
        + Send
        + 'static,
{
    let controller = kube::runtime::Controller::for_stream(conditions, store)
        .with_config(wiring::settings())
        .watches_stream(w.metadata::<Role>(Wiring::managed()), {
            let shared = Arc::clone(w.shared);
            move |role| owner_of(&shared, &role)
        })
        .watches_stream(w.metadata::<RoleBinding>(Wiring::managed()), {
            let shared = Arc::clone(w.shared);
            move |binding| owner_of(&shared, &binding)
        });
    wiring::run(controller, reconcile, w.context(CONTROLLER), CONTROLLER)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::controller::testing::{Fixture, Scenario, bodies, object};

    fn condition(generation: i64, status: Option<serde_json::Value>) -> OperatorCondition {
        object(json!({
            "apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
            "metadata": {"name": "op.v1", "namespace": "ops", "uid": "oc-uid", "generation": generation,
                         "resourceVersion": "5"},
            "spec": {"serviceAccounts": ["op-sa"], "deployments": ["op"],
                     "conditions": [{"type": "Upgradeable", "status": "False", "reason": "Busy",
                                     "message": "migrating", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
            "status": status
        }))
    }

    const ROLE: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/ops/roles/op.v1";
    const BINDING: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/ops/rolebindings/op.v1";
    const STATUS: &str = "/apis/operators.coreos.com/v2/namespaces/ops/operatorconditions/op.v1/status";

    #[tokio::test]
    async fn an_operator_condition_gets_its_role_its_binding_and_its_status_under_its_own_manager() {
        let (fixture, mut server) = Fixture::new();
        let ctx = fixture.context(CONTROLLER);
        let held = serde_json::to_value(condition(3, None)).expect("serialises");
        let (result, received) = server
            .run(
                Scenario::Applied {
                    requests: vec![
                        (ROLE.into(), serde_json::Value::Null),
                        (BINDING.into(), serde_json::Value::Null),
                        (STATUS.into(), held),
                    ],
                    manager: MANAGER,
                },
                reconcile(Arc::new(condition(3, None)), Arc::clone(&ctx)),
            )
            .await;
        result.expect("reconciled");
        let role = bodies(&received, &http::Method::PATCH, ROLE)[0];
        assert_eq!(role["rules"][0]["resourceNames"], json!(["op.v1"]));
        assert_eq!(role["metadata"]["ownerReferences"][0]["uid"], "oc-uid");
        let binding = bodies(&received, &http::Method::PATCH, BINDING)[0];
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": "op-sa"}])
        );
        let status = bodies(&received, &http::Method::PATCH, STATUS)[0];
        assert_eq!(status["status"]["conditions"][0]["observedGeneration"], 3);
        assert_eq!(status["status"]["conditions"][0]["status"], "False");

        // Once the status holds the conditions at this generation: nothing is sent (the RBAC
        // was applied and nothing changed it since).
        let synced = json!({"conditions": [{"type": "Upgradeable", "status": "False", "reason": "Busy",
            "message": "migrating", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 3}]});
        let (result, _) = server
            .run(
                Scenario::NothingWritten,
                reconcile(Arc::new(condition(3, Some(synced.clone()))), Arc::clone(&ctx)),
            )
            .await;
        result.expect("reconciled");

        // Someone else changed the Role (a resourceVersion the apply did not return): both
        // are applied again.
        let edited: PartialObjectMeta<Role> = serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "op.v1", "namespace": "ops", "resourceVersion": "edited-999",
                         "ownerReferences": [{"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
                                              "name": "op.v1", "uid": "oc-uid", "controller": true}]}
        }))
        .expect("metadata");
        assert!(owner_of(&ctx.shared, &edited).is_some());
        let (result, _) = server
            .run(
                Scenario::Applied {
                    requests: vec![
                        (ROLE.into(), serde_json::Value::Null),
                        (BINDING.into(), serde_json::Value::Null),
                    ],
                    manager: MANAGER,
                },
                reconcile(Arc::new(condition(3, Some(synced))), ctx),
            )
            .await;
        result.expect("reconciled");
    }

    #[test]
    fn an_operator_condition_change_wakes_its_csv_and_the_csvs_replacing_it() {
        let csv = |name: &str, ns: &str, replaces: Option<&str>| -> Arc<ClusterServiceVersion> {
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"displayName": "x", "version": "1.0.0", "replaces": replaces,
                             "install": {"strategy": "deployment"}}
                }))
                .expect("a CSV"),
            )
        };
        let csvs = vec![
            csv("op.v1", "ops", None),
            csv("op.v2", "ops", Some("op.v1")),
            csv("op.v2", "elsewhere", Some("op.v1")),
        ];
        let oc: OperatorCondition = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
            "metadata": {"name": "op.v1", "namespace": "ops"}, "spec": {}
        }))
        .expect("an OperatorCondition");
        let refs: Vec<String> = csvs_for(&csvs, &oc).iter().map(ToString::to_string).collect();
        assert_eq!(refs.len(), 2, "{refs:?}");
        assert!(refs[0].contains("op.v1") && refs[1].contains("op.v2"), "{refs:?}");
    }

    #[tokio::test]
    async fn roles_are_mapped_to_the_operator_condition_controlling_them() {
        let role: PartialObjectMeta<Role> = serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "mapped.v1", "namespace": "ops", "ownerReferences": [
                {"apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
                 "name": "mapped.v1", "uid": "u", "controller": true}]}
        }))
        .expect("metadata");
        let (fixture, _server) = Fixture::new();
        let ctx = fixture.context(CONTROLLER);
        assert_eq!(
            owner_of(&ctx.shared, &role),
            Some(ObjectRef::new("mapped.v1").within("ops"))
        );
        let other: PartialObjectMeta<Role> = serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "x", "namespace": "ops"}
        }))
        .expect("metadata");
        assert_eq!(owner_of(&ctx.shared, &other), None);
    }
}
