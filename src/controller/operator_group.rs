//! OperatorGroup controller: `status.namespaces` from the group's targets and the
//! `MultipleOperatorGroup` condition when its namespace holds more than one group.
//!
//! Targets and the condition are [`crate::plan::operator_group`]'s (upstream
//! `getOperatorGroupTargets`); namespaces are listed only for a selector. Invalid targets
//! leave `status.namespaces` unset (member CSVs wait) and raise a Warning event.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::core::v1::Namespace,
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use kube::{Api, Resource, ResourceExt, api::ListParams, runtime::controller::Action};

use super::{Context, Error, Result, instrumented};
use crate::{
    api::{
        reasons::operator_group as reason,
        v1::{OperatorGroup, OperatorGroupStatus},
    },
    k8s::apply,
    plan::operator_group::{NamespaceInfo, multiple_groups_condition, target_namespaces},
};

/// Reconciles one OperatorGroup.
pub async fn reconcile(og: Arc<OperatorGroup>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(Arc::clone(&og), Arc::clone(&ctx), reconcile_inner(og, ctx)).await
}

async fn reconcile_inner(og: Arc<OperatorGroup>, ctx: Arc<Context>) -> Result<Action> {
    let ns = og
        .namespace()
        .ok_or_else(|| Error::InvalidObject("OperatorGroup without namespace".into()))?;
    let now = Time(Timestamp::now());
    // The namespace list is only needed for a selector.
    let needs_namespaces = og.spec.target_namespaces.as_ref().is_none_or(Vec::is_empty)
        && og.spec.selector.as_ref().is_some_and(|s| {
            s.match_labels.as_ref().is_some_and(|m| !m.is_empty())
                || s.match_expressions.as_ref().is_some_and(|m| !m.is_empty())
        });
    let cluster_namespaces = if needs_namespaces {
        let api: Api<Namespace> = Api::all(ctx.client());
        api.list_metadata(&ListParams::default())
            .await
            .map_err(Error::observe("namespaces"))?
            .items
            .iter()
            .map(|n| NamespaceInfo {
                name: n.name_any(),
                labels: n.labels().clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    let (namespaces, target_error) = match target_namespaces(&og, &cluster_namespaces) {
        Ok(list) => (Some(list), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let siblings: Vec<String> = ctx
        .shared
        .stores
        .operator_groups
        .state()
        .iter()
        .filter(|o| o.namespace().as_deref() == Some(ns.as_str()))
        .map(|o| o.name_any())
        .collect();
    let old = og.status.clone();
    let mut conditions: Vec<Condition> = old
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.type_ != reason::MULTIPLE_OPERATOR_GROUP)
        .collect();
    let multiple = multiple_groups_condition(&ns, &siblings, og.meta().generation, &now);
    if let Some(mut cond) = multiple.clone() {
        if let Some(prev) = old
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == cond.type_))
        {
            cond.last_transition_time = prev.last_transition_time.clone();
        }
        conditions.push(cond);
    }
    let status = OperatorGroupStatus {
        namespaces,
        service_account_ref: old.as_ref().and_then(|s| s.service_account_ref.clone()),
        last_updated: now,
        conditions,
    };
    let changed = old
        .as_ref()
        .is_none_or(|o| !apply::same_ignoring_time(&apply::to_value(o), &apply::to_value(&status)));
    if ctx.write_status(og.as_ref(), changed, &status).await? {
        if let Some(message) = &target_error {
            ctx.warning(&og.object_ref(&()), "InvalidTargets", "Sync", message.clone());
        }
        if let Some(cond) = &multiple {
            ctx.warning(&og.object_ref(&()), &cond.reason, "Sync", cond.message.clone());
        }
    }
    // Selector targets change when namespaces are labelled: look again now and then.
    Ok(Action::requeue(Duration::from_secs(300)))
}
