//! operator: the `operators.coreos.com/v1` Operator `<package>.<namespace>` as upstream's
//! `OperatorReconciler` (`operator_controller.go`, `decorators/operator.go`) writes it.
//!
//! # The rule this module enforces
//!
//! An Operator's status is exactly the set of objects carrying its component label
//! `operators.coreos.com/<name>` (any value): `status.components.labelSelector` is that
//! label with `Exists`, and `status.components.refs` lists every labelled object of the
//! kinds in [`COMPONENT_KINDS`], sorted by kind, apiVersion, namespace and name (upstream
//! `AddComponents` sorts them so a reconcile does not reorder the status), each with its kind,
//! namespace, name and apiVersion, plus its conditions cut to upstream's `Condition` fields
//! (type, status, reason, message, lastUpdateTime, lastTransitionTime): the object's
//! `status.conditions`, except for a CSV, whose one condition is its current phase (type the
//! phase, status `True`, and the status's reason, message and times; upstream's
//! `csvConditionsJQ`), not its phase history.
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
    labels::{self, COMPONENT_LABEL_PREFIX},
    v1::{ComponentCondition, Components, OperatorStatus, RichReference},
};

/// The kind whose refs carry its current phase as their one condition.
const CSV_KIND: &str = "ClusterServiceVersion";

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
    /// Whether refs carry conditions (the objects are listed in full, else metadata only).
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

/// The kinds listed for components, in upstream's `listComponents` order. Secrets are left out
/// (module doc). Kinds the cluster does not serve (OperatorCondition before its CRD exists) are
/// skipped by the shell. OperatorConditions are listed as `v2`, their storage version, as
/// upstream.
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
    kind("operators.coreos.com", "v2", "OperatorCondition", true),
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
    /// Its `status`, when listed in full.
    pub status: Option<Value>,
}

/// The component label key of the Operator `name` (upstream `ComponentLabelKey`): the key a
/// Subscription for `<package>.<namespace>` carries, [`labels::component_label_key`] (cut to
/// 63 characters, trailing `.`, `-`, `_` stripped), which depends only on the joined name.
/// `None` for a name that leaves nothing valid.
pub fn component_label_key(name: &str) -> Option<String> {
    // An empty namespace part only adds a trailing `.`, which the cut strips.
    labels::component_label_key(name, "")
}

/// The selector of the components with the label `key` (`<key> Exists`), as upstream writes
/// it in `status.components.labelSelector`.
pub fn component_selector(key: &str) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: key.to_owned(),
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

/// A CSV's one condition: its current phase as the type, `True`, and the status's reason,
/// message and times (upstream `csvConditionsJQ`; a CSV without status gives an empty type).
fn csv_condition(status: Option<&Value>) -> ComponentCondition {
    let mut fields = serde_json::Map::new();
    if let Some(status) = status.and_then(Value::as_object) {
        for key in ["reason", "message", "lastUpdateTime", "lastTransitionTime"] {
            if let Some(v) = status.get(key) {
                fields.insert(key.to_owned(), v.clone());
            }
        }
        if let Some(phase) = status.get("phase") {
            fields.insert("type".to_owned(), phase.clone());
        }
    }
    fields.insert("status".to_owned(), Value::from("True"));
    condition(&Value::Object(fields)).unwrap_or_default()
}

/// The conditions of one component's ref (module doc).
fn conditions(c: &Component) -> Vec<ComponentCondition> {
    if c.kind == CSV_KIND {
        return vec![csv_condition(c.status.as_ref())];
    }
    c.status
        .as_ref()
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(condition).collect())
        .unwrap_or_default()
}

/// The status of the Operator whose component label is `key` (see [`component_label_key`]),
/// its components (listed by that label) being `components`. Objects that do not carry the
/// label are left out (a stale list).
pub fn desired_status(key: &str, components: &[Component]) -> OperatorStatus {
    let mut selected: Vec<&Component> = components.iter().filter(|c| c.labels.contains_key(key)).collect();
    selected.sort_by(|a, b| {
        (&a.kind, &a.api_version, &a.namespace, &a.name).cmp(&(
            &b.kind,
            &b.api_version,
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
            conditions: conditions(c),
            ..RichReference::default()
        })
        .collect();
    OperatorStatus {
        components: Some(Components {
            label_selector: component_selector(key),
            refs,
        }),
    }
}

#[cfg(test)]
mod tests;
