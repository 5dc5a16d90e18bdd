//! operator: the `operators.coreos.com/v1` Operator `<package>.<namespace>` as upstream's
//! `OperatorReconciler` (`operator_controller.go`, `decorators/operator.go`) writes it.
//!
//! # The rule this module enforces
//!
//! An Operator's status is exactly the set of objects carrying its component label
//! `operators.coreos.com/<name>` (any value): `status.components.labelSelector` is that
//! label with `Exists`, and `status.components.refs` lists every labelled object of the
//! kinds in [`COMPONENT_KINDS`], in that order (then by namespace and name, as the API server
//! lists them), each with its kind, namespace, name and apiVersion, plus the object's
//! `status.conditions` cut to upstream's `Condition` fields (type, status, reason, message,
//! lastUpdateTime, lastTransitionTime) when it has any.
//!
//! Lifecycle, as upstream: an Operator is created for every name a component label on a
//! Subscription, InstallPlan, ClusterServiceVersion or Deployment carries ([`operator_names`])
//! while no Operator of that name exists. It is never deleted by OLM: once nothing carries the
//! label any more its refs are simply empty (upstream operator-lifecycle-manager#2850; olm-docs
//! "Deleting the Operator CR": delete it by hand once its components are gone, it is recreated
//! only while something still carries the label).
//!
//! Unlike upstream, Secrets are not listed: the controller is not allowed to list Secrets
//! (manifests/rbac.yaml), so a Secret a bundle ships is labelled but not listed in refs.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement, Time};
use serde_json::Value;

use crate::api::{
    labels::COMPONENT_LABEL_PREFIX,
    v1::{ComponentCondition, Components, OperatorStatus, RichReference},
};

/// One kind an Operator's components may be: where to list it and whether its objects carry
/// `status.conditions` worth copying (else listing metadata is enough).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComponentKind {
    /// API group (`""` for core).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Whether refs copy the objects' `status.conditions`.
    pub has_conditions: bool,
}

const fn kind(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    has_conditions: bool,
) -> ComponentKind {
    ComponentKind {
        group,
        version,
        kind,
        has_conditions,
    }
}

/// The kinds listed for components, in upstream's `listComponents` order (refs follow it).
/// Secrets are left out (module doc). Kinds the cluster does not serve (OperatorCondition
/// before its CRD exists) are skipped by the shell.
pub const COMPONENT_KINDS: &[ComponentKind] = &[
    kind("apps", "v1", "Deployment", true),
    kind("", "v1", "Namespace", false),
    kind("", "v1", "ServiceAccount", false),
    kind("", "v1", "ConfigMap", false),
    kind("rbac.authorization.k8s.io", "v1", "Role", false),
    kind("rbac.authorization.k8s.io", "v1", "RoleBinding", false),
    kind("rbac.authorization.k8s.io", "v1", "ClusterRole", false),
    kind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", false),
    kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", true),
    kind("apiregistration.k8s.io", "v1", "APIService", true),
    kind("operators.coreos.com", "v1alpha1", "Subscription", true),
    kind("operators.coreos.com", "v1alpha1", "InstallPlan", true),
    kind("operators.coreos.com", "v1alpha1", "ClusterServiceVersion", true),
    kind("operators.coreos.com", "v1", "OperatorCondition", true),
];

impl ComponentKind {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// One labelled object as the shell listed it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Component {
    /// `apiVersion` of the object.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace (`None` when cluster-scoped).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its `status.conditions`, when listed in full.
    pub conditions: Option<Value>,
}

/// The component label key of the Operator `name`: `operators.coreos.com/<name>`, the name
/// cut to 63 characters (upstream `ComponentLabelKey`).
pub fn component_label_key(name: &str) -> String {
    let cut: String = name.chars().take(63).collect();
    format!("{COMPONENT_LABEL_PREFIX}{cut}")
}

/// The selector of the Operator `name`'s components (`<key> Exists`), as upstream writes it
/// in `status.components.labelSelector`.
pub fn component_selector(name: &str) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: component_label_key(name),
            operator: "Exists".to_owned(),
            values: None,
        }]),
        match_labels: None,
    }
}

/// The Operators an object's labels make it a component of (upstream `OperatorNames`): the
/// name part of every `operators.coreos.com/<name>` label key, sorted.
pub fn operator_names(labels: &BTreeMap<String, String>) -> Vec<String> {
    labels
        .keys()
        .filter_map(|k| k.strip_prefix(COMPONENT_LABEL_PREFIX))
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .map(str::to_owned)
        .collect()
}

/// Upstream's `Condition` fields of one `status.conditions` entry (others, like a
/// Subscription's `lastHeartbeatTime` or a CSV's `phase`, are dropped; missing type and status
/// become empty strings, as Go writes them).
fn condition(entry: &Value) -> Option<ComponentCondition> {
    let entry = entry.as_object()?;
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
    let time = |key: &str| {
        entry
            .get(key)
            .and_then(|v| serde_json::from_value::<Time>(v.clone()).ok())
    };
    Some(ComponentCondition {
        type_: text("type").unwrap_or_default(),
        status: text("status").unwrap_or_default(),
        reason: text("reason").filter(|s| !s.is_empty()),
        message: text("message").filter(|s| !s.is_empty()),
        last_update_time: time("lastUpdateTime"),
        last_transition_time: time("lastTransitionTime"),
    })
}

fn kind_rank(kind: &str) -> usize {
    COMPONENT_KINDS
        .iter()
        .position(|k| k.kind == kind)
        .unwrap_or(COMPONENT_KINDS.len())
}

/// The status of the Operator `name` whose components (listed by its selector) are
/// `components`. Objects that do not carry the label are left out (a stale list).
pub fn desired_status(name: &str, components: &[Component]) -> OperatorStatus {
    let key = component_label_key(name);
    let mut selected: Vec<&Component> = components
        .iter()
        .filter(|c| c.labels.contains_key(&key))
        .collect();
    selected.sort_by(|a, b| {
        (kind_rank(&a.kind), &a.kind, &a.namespace, &a.name).cmp(&(
            kind_rank(&b.kind),
            &b.kind,
            &b.namespace,
            &b.name,
        ))
    });
    selected.dedup_by(|a, b| a.kind == b.kind && a.namespace == b.namespace && a.name == b.name);
    let refs = selected
        .into_iter()
        .map(|c| RichReference {
            kind: Some(c.kind.clone()),
            namespace: c.namespace.clone().filter(|ns| !ns.is_empty()),
            name: Some(c.name.clone()),
            api_version: Some(c.api_version.clone()),
            conditions: c
                .conditions
                .as_ref()
                .and_then(Value::as_array)
                .map(|list| list.iter().filter_map(condition).collect())
                .unwrap_or_default(),
            ..RichReference::default()
        })
        .collect();
    OperatorStatus {
        components: Some(Components {
            label_selector: component_selector(name),
            refs,
        }),
    }
}

#[cfg(test)]
mod tests;
