//! `operators.coreos.com/v1` OperatorCondition: served, not stored (the API server converts by
//! relabelling). The `v2` object ([`crate::api::v2::OperatorCondition`]) without
//! `spec.conditions`: operators built on the v1 API write `status.conditions` directly. The
//! status and the override entries are v2's types.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::api::v2::OperatorConditionStatus;
use crate::api::v2::OverrideCondition;

/// OperatorConditionSpec allows a cluster admin to convey information about the state of an
/// operator to OLM, potentially overriding state reported by the operator.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
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
    /// The operator's ServiceAccounts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_accounts: Vec<String>,
    /// The operator's Deployments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<String>,
    /// Conditions set by a cluster admin; they take precedence over the operator's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<OverrideCondition>,
}
