//! OperatorGroup controller: `status.namespaces` from the group's targets and the
//! `MultipleOperatorGroup` condition when its namespace holds more than one group.
//!
//! Targets (upstream `getOperatorGroupTargets`): explicit `targetNamespaces` → that set;
//! no selector → `[""]` (all namespaces); a selector → the namespaces it matches.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::core::v1::Namespace,
    apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time},
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
};

/// How the targets of a group are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    /// Fixed namespaces (sorted, deduplicated).
    Fixed(Vec<String>),
    /// Every namespace (`[""]`).
    All,
    /// The namespaces matching this label selector (as a `labelSelector` query string).
    Selector(String),
}

/// The targets of `og` (pure).
pub fn targets(og: &OperatorGroup) -> Targets {
    if let Some(list) = og.spec.target_namespaces.as_ref().filter(|l| !l.is_empty()) {
        let mut list = list.clone();
        list.sort();
        list.dedup();
        return Targets::Fixed(list);
    }
    match og.spec.selector.as_ref().map(selector_query) {
        Some(q) if !q.is_empty() => Targets::Selector(q),
        _ => Targets::All,
    }
}

/// A label selector as a query string (`a=b,c in (d,e),!f`).
pub fn selector_query(selector: &LabelSelector) -> String {
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for expr in selector.match_expressions.iter().flatten() {
        let values = expr.values.clone().unwrap_or_default().join(",");
        parts.push(match expr.operator.as_str() {
            "In" => format!("{} in ({values})", expr.key),
            "NotIn" => format!("{} notin ({values})", expr.key),
            "Exists" => expr.key.clone(),
            _ => format!("!{}", expr.key),
        });
    }
    parts.join(",")
}

/// The `MultipleOperatorGroup` condition, present only when `siblings` names more than one
/// group (pure).
pub fn multiple_groups_condition(
    mut siblings: Vec<String>,
    generation: Option<i64>,
    now: &Time,
) -> Option<Condition> {
    if siblings.len() < 2 {
        return None;
    }
    siblings.sort();
    Some(Condition {
        type_: reason::MULTIPLE_OPERATOR_GROUP.into(),
        status: "True".into(),
        reason: reason::MULTIPLE_OPERATOR_GROUPS_FOUND.into(),
        message: format!(
            "multiple OperatorGroups found in the same namespace: {}; delete all but one",
            siblings.join(", ")
        ),
        last_transition_time: now.clone(),
        observed_generation: generation,
    })
}

/// Reconciles one OperatorGroup.
pub async fn reconcile(og: Arc<OperatorGroup>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(Arc::clone(&og), Arc::clone(&ctx), reconcile_inner(og, ctx)).await
}

async fn reconcile_inner(og: Arc<OperatorGroup>, ctx: Arc<Context>) -> Result<Action> {
    let ns = og
        .namespace()
        .ok_or_else(|| Error::InvalidObject("OperatorGroup without namespace".into()))?;
    let name = og.name_any();
    let now = Time(Timestamp::now());
    let namespaces = match targets(&og) {
        Targets::Fixed(list) => list,
        Targets::All => vec![String::new()],
        Targets::Selector(q) => {
            let api: Api<Namespace> = Api::all(ctx.client());
            let list = api
                .list_metadata(&ListParams::default().labels(&q))
                .await
                .map_err(Error::observe("namespaces"))?;
            let mut names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
            names.sort();
            names
        }
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
    let multiple = multiple_groups_condition(siblings, og.meta().generation, &now);
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
        namespaces: Some(namespaces),
        service_account_ref: old.as_ref().and_then(|s| s.service_account_ref.clone()),
        last_updated: now,
        conditions,
    };
    let changed = old
        .as_ref()
        .is_none_or(|o| !apply::same_ignoring_time(&apply::to_value(o), &apply::to_value(&status)));
    if changed {
        let api: Api<OperatorGroup> = Api::namespaced(ctx.client(), &ns);
        apply::apply_status(&api, &name, &status, &ctx.manager)
            .await
            .map_err(Error::status(format!("OperatorGroup {ns}/{name}")))?;
        if let Some(cond) = &multiple {
            ctx.events
                .warning(&og.object_ref(&()), &cond.reason, "Sync", cond.message.clone())
                .await;
        }
    }
    // Selector targets change when namespaces are labelled: look again now and then.
    Ok(Action::requeue(Duration::from_secs(300)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1::OperatorGroupSpec;

    #[test]
    fn explicit_targets_win_over_the_selector_and_are_sorted() {
        let mut og = OperatorGroup::new("g", OperatorGroupSpec::default());
        assert_eq!(targets(&og), Targets::All);
        og.spec.selector = Some(LabelSelector {
            match_labels: Some([("team".to_owned(), "a".to_owned())].into()),
            ..Default::default()
        });
        assert_eq!(targets(&og), Targets::Selector("team=a".into()));
        og.spec.target_namespaces = Some(vec!["b".into(), "a".into(), "b".into()]);
        assert_eq!(targets(&og), Targets::Fixed(vec!["a".into(), "b".into()]));
    }

    #[test]
    fn two_groups_in_a_namespace_get_the_multiple_condition_naming_both() {
        let now = Time(Timestamp::UNIX_EPOCH);
        assert!(multiple_groups_condition(vec!["a".into()], None, &now).is_none());
        let cond = multiple_groups_condition(vec!["b".into(), "a".into()], Some(1), &now).unwrap();
        assert_eq!(cond.reason, "MultipleOperatorGroupsFound");
        assert!(cond.message.contains("a, b"), "{}", cond.message);
    }
}
