//! `operators.coreos.com/v2`: OperatorCondition, the storage version. An operator tells OLM
//! about its own state through it (today only `Upgradeable`), and a cluster admin can override
//! what the operator says.
//!
//! OLM creates one per ClusterServiceVersion (same name and namespace, owned by the CSV),
//! filling `spec.deployments` and `spec.serviceAccounts`; the operator writes
//! `spec.conditions` (the operator-lib v2 API), OLM copies them into `status.conditions` with
//! the object's generation, and an admin writes `spec.overrides`, which win. `v1` (see
//! [`crate::api::v1::OperatorCondition`]) is the same object without `spec.conditions`.
//!
//! Upstream does not require `spec`; the CRD defaults a missing one to `{}` (as the
//! OperatorGroup's), so an OperatorCondition created without it still decodes here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API version of every kind in this module.
pub const API_VERSION: &str = "operators.coreos.com/v2";

/// The condition type an operator sets to `False` to hold its upgrades.
pub const UPGRADEABLE: &str = "Upgradeable";

/// OperatorConditionSpec allows an operator to report state to OLM and provides a cluster
/// admin with the ability to manually override state reported by the operator.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v2",
    kind = "OperatorCondition",
    plural = "operatorconditions",
    singular = "operatorcondition",
    shortname = "condition",
    category = "olm",
    namespaced,
    status = "OperatorConditionStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "OperatorCondition is a Custom Resource of type `OperatorCondition` which is used to convey information to OLM about the state of an operator."
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {}))]
pub struct OperatorConditionSpec {
    /// The operator's ServiceAccounts (granted get/update/patch on this object).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_accounts: Vec<String>,
    /// The operator's Deployments (they carry `OPERATOR_CONDITION_NAME`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<String>,
    /// Conditions set by a cluster admin; they take precedence over the operator's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<OverrideCondition>,
    /// Conditions set by the operator; OLM copies them into the status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The conditions OLM has observed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorConditionStatus {
    /// The operator's conditions, each with the generation it was observed at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// A condition a cluster admin sets in `spec.overrides` (`lastTransitionTime` may be omitted).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverrideCondition {
    /// The condition type (`Upgradeable`).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase reason.
    pub reason: String,
    /// Why, for people.
    pub message: String,
    /// When the condition last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// The generation the condition was set at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
