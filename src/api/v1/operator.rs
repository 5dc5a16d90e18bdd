//! `operators.coreos.com/v1` Operator: a cluster-scoped, read-only view of one installed
//! operator, named `<package>.<namespace>`, whose status lists every object carrying the
//! component label `operators.coreos.com/<package>.<namespace>` (what `kubectl get operators`
//! and consoles show). Users never write it; the operator controller keeps its status.
//!
//! Upstream's CRD has no printer columns (kubectl shows NAME and AGE), no short names, the
//! `olm` category, an empty spec and a status subresource; so does this one.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// OperatorSpec defines the desired state of Operator (empty: the Operator is a view).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "Operator",
    plural = "operators",
    singular = "operator",
    category = "olm",
    status = "OperatorStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "Operator represents a cluster operator."
)]
pub struct OperatorSpec {}

/// OperatorStatus defines the observed state of an Operator and its components.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct OperatorStatus {
    /// Components describes resources that compose the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Components>,
}

/// Components tracks the resources that compose an operator.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Components {
    /// LabelSelector is a label query over a set of resources used to select the operator's
    /// components.
    pub label_selector: LabelSelector,
    /// Refs are a set of references to the operator's component resources, selected with
    /// LabelSelector.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<RichReference>,
}

/// RichReference is a reference to a resource, enriched with its status conditions (the
/// fields of a core/v1 ObjectReference, inline).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RichReference {
    /// Kind of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Namespace of the referent (none for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// UID of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// API version of the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Specific resourceVersion to which this reference is made, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// If referring to a piece of an object instead of an entire object, its field path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
    /// Conditions represents the latest state of the component.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ComponentCondition>,
}

/// Condition represent the latest available observations of a component's state (upstream's
/// `operators/v1.Condition`: a component's `status.conditions` entry cut to these fields; a
/// CSV's current phase).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::api::GoRequired(&["type", "status"]))]
pub struct ComponentCondition {
    /// Type of condition.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// Status of the condition, one of True, False, Unknown.
    #[serde(default)]
    pub status: String,
    /// The reason for the condition's last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human readable message indicating details about the transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Last time the condition was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Last time the condition transitioned from one status to another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}
