//! ClusterServiceVersion controller: OperatorGroup membership → requirements (owned and
//! required CRDs established) → the install strategy's Deployments (SSA under `olm-rs/csv`,
//! owned by the CSV, OperatorGroup annotations on the pod template) → phase from Deployment
//! availability; Replacing → Deleting once the replacement succeeded; the
//! `operators.coreos.com/csv-cleanup` finalizer removes the cluster-scoped RBAC labelled
//! with the CSV as owner.
//!
//! The phase decision is written here until `plan::csv` (core branch) lands.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        rbac::v1::{ClusterRole, ClusterRoleBinding},
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
use serde_json::json;

use super::{Context, Error, Result, instrumented};
use crate::{
    api::{
        labels,
        v1alpha1::{ClusterServiceVersion, CsvPhase, CsvReason},
    },
    k8s::apply,
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
    ctx.shared.metrics.forget_csv(&ns, &name);
    Ok(Action::await_change())
}

/// The phase decision (pure): (phase, reason, message).
pub fn decide(
    groups: usize,
    missing_crds: &[String],
    replaced_by: Option<(&str, bool)>,
    deployments_total: usize,
    deployments_available: usize,
) -> (CsvPhase, CsvReason, String) {
    if groups == 0 {
        return (
            CsvPhase::Failed,
            CsvReason::NoOperatorGroup,
            "csv in namespace with no operatorgroups".into(),
        );
    }
    if groups > 1 {
        return (
            CsvPhase::Failed,
            CsvReason::TooManyOperatorGroups,
            "csv created in namespace with multiple operatorgroups, can't pick one automatically".into(),
        );
    }
    if let Some((by, succeeded)) = replaced_by {
        return if succeeded {
            (
                CsvPhase::Deleting,
                CsvReason::Replaced,
                format!(
                    "has been replaced by {by}, a newer ClusterServiceVersion that has successfully installed."
                ),
            )
        } else {
            (
                CsvPhase::Replacing,
                CsvReason::BeingReplaced,
                format!("being replaced by csv: {by}"),
            )
        };
    }
    if !missing_crds.is_empty() {
        return (
            CsvPhase::Pending,
            CsvReason::RequirementsNotMet,
            format!(
                "one or more requirements couldn't be found: {}",
                missing_crds.join(", ")
            ),
        );
    }
    if deployments_available >= deployments_total {
        (
            CsvPhase::Succeeded,
            CsvReason::InstallSucceeded,
            "install strategy completed with no errors".into(),
        )
    } else {
        (
            CsvPhase::Installing,
            CsvReason::InstallWaiting,
            format!(
                "waiting for deployments to become available ({deployments_available}/{deployments_total})"
            ),
        )
    }
}

fn available(d: &Deployment) -> bool {
    let Some(s) = &d.status else { return false };
    let gen_ok = s.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0);
    gen_ok
        && s.conditions
            .iter()
            .flatten()
            .any(|c| c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True"))
}

async fn sync(csv: Arc<ClusterServiceVersion>, ctx: Arc<Context>) -> Result<Action> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let stores = &ctx.shared.stores;
    let client = ctx.client();
    let groups: Vec<_> = stores
        .operator_groups
        .state()
        .into_iter()
        .filter(|g| g.namespace().as_deref() == Some(ns.as_str()))
        .collect();
    let replacer = stores.csvs.state().into_iter().find(|c| {
        c.namespace().as_deref() == Some(ns.as_str()) && c.spec.replaces.as_deref() == Some(name.as_str())
    });
    let replaced_by = replacer.as_ref().map(|r| {
        let ok = r.status.as_ref().and_then(|s| s.phase.clone()) == Some(CsvPhase::Succeeded);
        (r.name_any(), ok)
    });

    // Requirements: owned and required CRDs exist and are established.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut missing = Vec::new();
    if let Some(defs) = &csv.spec.custom_resource_definitions {
        for desc in defs.owned.iter().chain(defs.required.iter()) {
            let ok = crds
                .get_opt(&desc.name)
                .await
                .map_err(Error::observe(format!("CRD {}", desc.name)))?
                .and_then(|c| c.status)
                .and_then(|s| s.conditions)
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Established" && c.status == "True"));
            if !ok {
                missing.push(desc.name.clone());
            }
        }
    }

    // Deployments (only when membership and requirements are fine and not being replaced).
    let deployments = &csv.spec.install.spec.deployments;
    let mut available_count = 0;
    let dapi: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let ready_to_install = groups.len() == 1 && missing.is_empty() && replaced_by.is_none();
    if ready_to_install {
        let og = &groups[0];
        let targets = og
            .status
            .as_ref()
            .map(|s| s.target_namespaces_annotation())
            .unwrap_or_default();
        let mut annotations = csv.annotations().clone();
        annotations.insert(labels::OPERATOR_GROUP.into(), og.name_any());
        annotations.insert(labels::OPERATOR_NAMESPACE.into(), ns.clone());
        annotations.insert(labels::TARGET_NAMESPACES.into(), targets.clone());
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
        // Stamp the group annotations on the CSV itself.
        let stamp = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": name, "namespace": ns, "annotations": {
                labels::OPERATOR_GROUP: og.name_any(),
                labels::OPERATOR_NAMESPACE: ns,
                labels::TARGET_NAMESPACES: targets,
            }},
        });
        let capi: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), &ns);
        apply::apply(&capi, &name, &stamp, &ctx.manager)
            .await
            .map_err(Error::apply(format!("annotations of CSV {ns}/{name}")))?;
        let uid = csv.uid().unwrap_or_default();
        for d in deployments {
            let mut spec = apply::to_value(&d.spec);
            let template_annotations = &mut spec["template"]["metadata"]["annotations"];
            if !template_annotations.is_object() {
                *template_annotations = json!({});
            }
            for (k, v) in &annotations {
                template_annotations[k] = json!(v);
            }
            let mut labels_map = json!(d.label.clone().unwrap_or_default());
            labels_map[labels::MANAGED] = json!("true");
            labels_map[labels::OWNER] = json!(name);
            labels_map[labels::OWNER_NAMESPACE] = json!(ns);
            labels_map[labels::OWNER_KIND] = json!("ClusterServiceVersion");
            spec["revisionHistoryLimit"] = json!(1);
            let body = json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": d.name,
                    "namespace": ns,
                    "labels": labels_map,
                    "ownerReferences": [{
                        "apiVersion": "operators.coreos.com/v1alpha1",
                        "kind": "ClusterServiceVersion",
                        "name": name,
                        "uid": uid,
                        "controller": false,
                        "blockOwnerDeletion": false,
                    }],
                },
                "spec": spec,
            });
            let applied = apply::apply(&dapi, &d.name, &body, &ctx.manager)
                .await
                .map_err(Error::apply(format!("Deployment {ns}/{}", d.name)))?;
            if available(&applied) {
                available_count += 1;
            }
        }
    }
    let replaced_ref = replaced_by.as_ref().map(|(n, ok)| (n.as_str(), *ok));
    let (phase, reason, message) = decide(
        groups.len(),
        &missing,
        replaced_ref,
        deployments.len(),
        available_count,
    );

    if phase == CsvPhase::Deleting {
        let capi: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), &ns);
        ctx.events
            .normal(&csv.object_ref(&()), "Replaced", "Delete", message.clone())
            .await;
        capi.delete(&name, &DeleteParams::default())
            .await
            .map_err(|source| Error::Delete {
                what: format!("CSV {ns}/{name}"),
                source,
            })?;
        return Ok(Action::await_change());
    }

    let old = csv.status.clone().unwrap_or_default();
    let now = Time(Timestamp::now());
    let transition = old.phase.as_ref() != Some(&phase) || old.reason.as_ref() != Some(&reason);
    let mut status = old.clone();
    crate::status::set_csv_phase(&mut status, phase.clone(), reason.clone(), message.clone(), &now);
    if !apply::same_ignoring_time(&apply::to_value(&old), &apply::to_value(&status)) {
        let capi: Api<ClusterServiceVersion> = Api::namespaced(client, &ns);
        apply::apply_status(&capi, &name, &status, &ctx.manager)
            .await
            .map_err(Error::status(format!("CSV {ns}/{name}")))?;
    }
    if transition {
        let r = csv.object_ref(&());
        if phase == CsvPhase::Failed {
            ctx.events.warning(&r, reason.as_str(), "Sync", message).await;
        } else {
            ctx.events.normal(&r, reason.as_str(), "Sync", message).await;
        }
    }
    ctx.shared.metrics.record_csv(
        &ns,
        &name,
        csv.spec.version.as_deref().unwrap_or(""),
        phase.as_str(),
        reason.as_str(),
    );
    Ok(match phase {
        CsvPhase::Succeeded => Action::requeue(Duration::from_secs(300)),
        _ => Action::requeue(Duration::from_secs(5)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_group_membership_is_checked_first() {
        assert_eq!(decide(0, &[], None, 1, 1).1, CsvReason::NoOperatorGroup);
        assert_eq!(decide(2, &[], None, 1, 1).1, CsvReason::TooManyOperatorGroups);
    }

    #[test]
    fn a_replaced_csv_is_deleted_only_after_its_replacement_succeeded() {
        assert_eq!(decide(1, &[], Some(("b", false)), 1, 1).0, CsvPhase::Replacing);
        assert_eq!(decide(1, &[], Some(("b", true)), 1, 1).0, CsvPhase::Deleting);
    }

    #[test]
    fn missing_crds_keep_the_csv_pending_and_available_deployments_make_it_succeed() {
        let (phase, reason, msg) = decide(1, &["a.b".into()], None, 1, 0);
        assert_eq!(
            (phase, reason),
            (CsvPhase::Pending, CsvReason::RequirementsNotMet)
        );
        assert!(msg.contains("a.b"));
        assert_eq!(decide(1, &[], None, 2, 1).0, CsvPhase::Installing);
        assert_eq!(decide(1, &[], None, 2, 2).0, CsvPhase::Succeeded);
    }
}
