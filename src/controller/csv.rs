//! ClusterServiceVersion controller: OperatorGroup membership → requirements (owned and
//! required CRDs established) → the install strategy's Deployments (SSA under `olm-rs/csv`,
//! owned by the CSV, OperatorGroup annotations on the pod template) → phase from Deployment
//! availability; Replacing → Deleting once the replacement succeeded; the
//! `operators.coreos.com/csv-cleanup` finalizer removes the cluster-scoped RBAC labelled
//! with the CSV as owner.
//!
//! The phase decision is [`crate::plan::csv::decide`]; this module observes (stores plus a
//! few reads of CRDs, ServiceAccounts and Deployments) and acts on the decision.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::ServiceAccount,
        rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, ListParams},
    runtime::{
        controller::Action,
        finalizer::{Event as FinalizerEvent, finalizer},
    },
};
use serde_json::{Value, json};

use super::{Context, Error, Result, instrumented};
use crate::{
    api::{
        labels,
        v1alpha1::{ClusterServiceVersion, CsvPhase},
    },
    k8s::apply,
    plan::{
        csv::{
            self as plan_csv, CrdState, Observed, ObservedDeployment, ObservedOperatorGroup, OtherCsv,
            ServiceAccountState, crd_owner_conflicts, replacee_of, replacement_of,
        },
        steps,
    },
};

/// Reconciles one CSV.
pub async fn reconcile(csv: Arc<ClusterServiceVersion>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(Arc::clone(&csv), Arc::clone(&ctx), reconcile_inner(csv, ctx)).await
}

async fn reconcile_inner(csv: Arc<ClusterServiceVersion>, ctx: Arc<Context>) -> Result<Action> {
    let ns = csv
        .namespace()
        .ok_or_else(|| Error::InvalidObject("CSV without namespace".into()))?;
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), &ns);
    let c = Arc::clone(&ctx);
    finalizer(&api, labels::CSV_CLEANUP_FINALIZER, csv, |event| async move {
        match event {
            FinalizerEvent::Apply(csv) => sync(csv, c).await,
            FinalizerEvent::Cleanup(csv) => cleanup(csv, c).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

async fn cleanup(csv: Arc<ClusterServiceVersion>, ctx: Arc<Context>) -> Result<Action> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let selector = format!("{}={name},{}={ns}", labels::OWNER, labels::OWNER_NAMESPACE);
    let lp = ListParams::default().labels(&selector);
    let crbs: Api<ClusterRoleBinding> = Api::all(ctx.client());
    let crs: Api<ClusterRole> = Api::all(ctx.client());
    crbs.delete_collection(&DeleteParams::default(), &lp)
        .await
        .map_err(|source| Error::Cleanup {
            what: format!("ClusterRoleBindings of {ns}/{name}"),
            source,
        })?;
    crs.delete_collection(&DeleteParams::default(), &lp)
        .await
        .map_err(|source| Error::Cleanup {
            what: format!("ClusterRoles of {ns}/{name}"),
            source,
        })?;
    // Roles granted in other target namespaces (owner references cannot cross namespaces).
    let roles: Api<Role> = Api::all(ctx.client());
    let bindings: Api<RoleBinding> = Api::all(ctx.client());
    let cleanup_err = |what: String| move |source| Error::Cleanup { what, source };
    for role in roles
        .list_metadata(&lp)
        .await
        .map_err(cleanup_err(format!("Roles of {ns}/{name}")))?
    {
        let api: Api<Role> = Api::namespaced(ctx.client(), &role.namespace().unwrap_or_default());
        api.delete(&role.name_any(), &DeleteParams::default())
            .await
            .map(drop)
            .or_else(ignore_not_found)
            .map_err(cleanup_err(format!("Role {}", role.name_any())))?;
    }
    for binding in bindings
        .list_metadata(&lp)
        .await
        .map_err(cleanup_err(format!("RoleBindings of {ns}/{name}")))?
    {
        let api: Api<RoleBinding> = Api::namespaced(ctx.client(), &binding.namespace().unwrap_or_default());
        api.delete(&binding.name_any(), &DeleteParams::default())
            .await
            .map(drop)
            .or_else(ignore_not_found)
            .map_err(cleanup_err(format!("RoleBinding {}", binding.name_any())))?;
    }
    ctx.shared.metrics.forget_csv(&ns, &name);
    Ok(Action::await_change())
}

/// The package of a CSV, from the `olm.package` property in its
/// `operatorframework.io/properties` annotation (written by planning); empty when absent.
pub fn package_of(csv: &ClusterServiceVersion) -> String {
    csv.annotations()
        .get(labels::PROPERTIES)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|v| {
            v["properties"].as_array().and_then(|props| {
                props
                    .iter()
                    .find(|p| p["type"] == "olm.package")
                    .and_then(|p| p["value"]["packageName"].as_str().map(str::to_owned))
            })
        })
        .unwrap_or_default()
}

fn other(csv: &ClusterServiceVersion) -> OtherCsv {
    OtherCsv {
        name: csv.name_any(),
        phase: csv
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default(),
    }
}

/// Fills the state machine's [`Observed`] from the reflector stores and a few reads.
async fn observe(csv: &ClusterServiceVersion, ctx: &Context) -> Result<Observed> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let client = ctx.client();
    let stores = &ctx.shared.stores;
    let mut observed = Observed {
        operator_groups: stores
            .operator_groups
            .state()
            .iter()
            .filter(|g| g.namespace().as_deref() == Some(ns.as_str()))
            .map(|g| ObservedOperatorGroup {
                name: g.name_any(),
                namespaces: g.status.as_ref().and_then(|s| s.namespaces.clone()),
                fail_forward: g.spec.fail_forward(),
            })
            .collect(),
        ..Observed::default()
    };
    let siblings: Vec<ClusterServiceVersion> = stores
        .csvs
        .state()
        .iter()
        .filter(|c| c.namespace().as_deref() == Some(ns.as_str()))
        .map(|c| c.as_ref().clone())
        .collect();
    observed.replacement = replacement_of(&name, &siblings).map(other);
    observed.replacee = replacee_of(csv, &siblings).map(other);
    observed.crd_owner_conflicts = crd_owner_conflicts(csv, &siblings);

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    if let Some(defs) = &csv.spec.custom_resource_definitions {
        for desc in defs.owned.iter().chain(defs.required.iter()) {
            let state = match crds
                .get_opt(&desc.name)
                .await
                .map_err(Error::observe(format!("CRD {}", desc.name)))?
            {
                None => CrdState::Absent,
                Some(crd) => CrdState::Present {
                    established: crd
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Established" && c.status == "True")),
                    served_versions: crd
                        .spec
                        .versions
                        .iter()
                        .filter(|v| v.served)
                        .map(|v| v.name.clone())
                        .collect(),
                    uid: crd.metadata.uid.clone(),
                },
            };
            observed.crds.insert(desc.name.clone(), state);
        }
    }
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), &ns);
    let strategy = &csv.spec.install.spec;
    for permission in strategy
        .permissions
        .iter()
        .chain(strategy.cluster_permissions.iter())
    {
        let sa = &permission.service_account_name;
        if observed.service_accounts.contains_key(sa) {
            continue;
        }
        let state = match sas
            .get_opt(sa)
            .await
            .map_err(Error::observe(format!("ServiceAccount {ns}/{sa}")))?
        {
            None => ServiceAccountState::Absent,
            Some(found) => ServiceAccountState::Present {
                owner_csvs: found
                    .owner_references()
                    .iter()
                    .filter(|r| r.kind == "ClusterServiceVersion")
                    .map(|r| r.name.clone())
                    .collect(),
                uid: found.metadata.uid.clone(),
            },
        };
        observed.service_accounts.insert(sa.clone(), state);
    }
    let dapi: Api<Deployment> = Api::namespaced(client, &ns);
    let owned = dapi
        .list(&ListParams::default().labels(&format!("{}={name}", labels::OWNER)))
        .await
        .map_err(Error::observe(format!("Deployments of CSV {ns}/{name}")))?;
    for d in &owned.items {
        observed
            .deployments
            .insert(d.name_any(), ObservedDeployment::from_deployment(d));
    }
    for d in &strategy.deployments {
        if observed.deployments.contains_key(&d.name) {
            continue;
        }
        if let Some(found) = dapi
            .get_opt(&d.name)
            .await
            .map_err(Error::observe(format!("Deployment {ns}/{}", d.name)))?
        {
            observed
                .deployments
                .insert(d.name.clone(), ObservedDeployment::from_deployment(&found));
        }
    }
    Ok(observed)
}

/// Applies the RBAC granting the operator its `permissions` in the OperatorGroup's other
/// target namespaces (Roles there, or ClusterRoles for all namespaces).
async fn apply_target_rbac(csv: &ClusterServiceVersion, ctx: &Context, targets: &[String]) -> Result<()> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let rbac = steps::target_namespace_rbac(&name, &ns, &package_of(csv), &csv.spec.install.spec, targets);
    let client = ctx.client();
    for role in &rbac.roles {
        let api: Api<Role> =
            Api::namespaced(client.clone(), role.metadata.namespace.as_deref().unwrap_or(&ns));
        apply::apply(&api, &role.name_any(), role, &ctx.manager)
            .await
            .map_err(Error::apply(format!("Role {}", role.name_any())))?;
    }
    for binding in &rbac.role_bindings {
        let api: Api<RoleBinding> = Api::namespaced(
            client.clone(),
            binding.metadata.namespace.as_deref().unwrap_or(&ns),
        );
        apply::apply(&api, &binding.name_any(), binding, &ctx.manager)
            .await
            .map_err(Error::apply(format!("RoleBinding {}", binding.name_any())))?;
    }
    let crs: Api<ClusterRole> = Api::all(client.clone());
    for role in &rbac.cluster_roles {
        apply::apply(&crs, &role.name_any(), role, &ctx.manager)
            .await
            .map_err(Error::apply(format!("ClusterRole {}", role.name_any())))?;
    }
    let crbs: Api<ClusterRoleBinding> = Api::all(client);
    for binding in &rbac.cluster_role_bindings {
        apply::apply(&crbs, &binding.name_any(), binding, &ctx.manager)
            .await
            .map_err(Error::apply(format!("ClusterRoleBinding {}", binding.name_any())))?;
    }
    Ok(())
}

async fn sync(csv: Arc<ClusterServiceVersion>, ctx: Arc<Context>) -> Result<Action> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let client = ctx.client();
    let capi: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), &ns);
    let observed = observe(&csv, &ctx).await?;
    let now = Time(Timestamp::now());
    let decision = plan_csv::decide(&csv, &observed, &now);

    if let Some(annotations) = &decision.annotations {
        let member: BTreeMap<&str, &String> = [
            labels::OPERATOR_GROUP,
            labels::OPERATOR_NAMESPACE,
            labels::TARGET_NAMESPACES,
        ]
        .into_iter()
        .filter_map(|k| annotations.get(k).map(|v| (k, v)))
        .collect();
        let stamp = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": name, "namespace": ns, "annotations": member},
        });
        apply::apply(&capi, &name, &stamp, &ctx.manager)
            .await
            .map_err(Error::apply(format!("annotations of CSV {ns}/{name}")))?;
    }

    if !decision.desired_deployments.is_empty() {
        let targets = observed
            .operator_groups
            .first()
            .and_then(|g| g.namespaces.clone())
            .unwrap_or_default();
        apply_target_rbac(&csv, &ctx, &targets).await?;
    }
    let dapi: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    for d in &decision.desired_deployments {
        apply::apply(&dapi, &d.name_any(), d, &ctx.manager)
            .await
            .map_err(Error::apply(format!("Deployment {ns}/{}", d.name_any())))?;
    }
    for stale in &decision.stale_deployments {
        dapi.delete(stale, &DeleteParams::default())
            .await
            .map(drop)
            .or_else(ignore_not_found)
            .map_err(|source| Error::Delete {
                what: format!("Deployment {ns}/{stale}"),
                source,
            })?;
    }

    let old = csv.status.clone().unwrap_or_default();
    let mut status = old.clone();
    let changed = decision.apply_to(&mut status, &now);
    let transition =
        old.phase.as_ref() != Some(&decision.phase) || old.reason.as_ref() != Some(&decision.reason);
    if changed && !apply::same_ignoring_time(&apply::to_value(&old), &apply::to_value(&status)) {
        apply::apply_status(&capi, &name, &status, &ctx.manager)
            .await
            .map_err(Error::status(format!("CSV {ns}/{name}")))?;
    }
    if transition {
        let r = csv.object_ref(&());
        let reason = decision.reason.as_str();
        if decision.phase == CsvPhase::Failed {
            ctx.events
                .warning(&r, reason, "Sync", decision.message.clone())
                .await;
        } else {
            ctx.events
                .normal(&r, reason, "Sync", decision.message.clone())
                .await;
        }
    }
    ctx.shared.metrics.record_csv(
        &ns,
        &name,
        csv.spec.version.as_deref().unwrap_or(""),
        decision.phase.as_str(),
        decision.reason.as_str(),
    );

    if decision.delete_self {
        capi.delete(&name, &DeleteParams::default())
            .await
            .map(drop)
            .or_else(ignore_not_found)
            .map_err(|source| Error::Delete {
                what: format!("CSV {ns}/{name}"),
                source,
            })?;
        return Ok(Action::await_change());
    }
    // Steady states are re-checked now and then; others sooner, in case an event was missed.
    let fallback = if decision.phase == CsvPhase::Succeeded {
        Duration::from_secs(300)
    } else {
        Duration::from_secs(30)
    };
    Ok(Action::requeue(decision.requeue_after.unwrap_or(fallback)))
}

fn ignore_not_found(err: kube::Error) -> std::result::Result<(), kube::Error> {
    match &err {
        kube::Error::Api(status) if status.code == 404 => Ok(()),
        _ => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_is_read_from_the_properties_annotation() {
        let mut csv: ClusterServiceVersion = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "a.v1", "annotations": {
                "operatorframework.io/properties": "{\"properties\":[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"a\",\"version\":\"1.0.0\"}}]}"
            }},
            "spec": {"displayName": "a", "install": {"strategy": "deployment", "spec": {"deployments": []}}}
        }))
        .unwrap();
        assert_eq!(package_of(&csv), "a");
        csv.metadata.annotations = None;
        assert_eq!(package_of(&csv), "");
    }
}
