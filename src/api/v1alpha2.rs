//! `operators.coreos.com/v1alpha2`: the legacy OperatorGroup version, still served (not
//! stored) like upstream, so old manifests with `apiVersion: operators.coreos.com/v1alpha2`
//! apply unchanged. The API server converts by relabelling (strategy `None`); the stored
//! object is the `v1` shape. Controllers use [`crate::api::v1::OperatorGroup`].

use k8s_openapi::{
    api::core::v1::ObjectReference,
    apimachinery::pkg::apis::meta::v1::{LabelSelector, Time},
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// OperatorGroupSpec (legacy version): the `v1` spec without `upgradeStrategy`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha2",
    kind = "OperatorGroup",
    plural = "operatorgroups",
    singular = "operatorgroup",
    shortname = "og",
    category = "olm",
    namespaced,
    status = "OperatorGroupStatus",
    derive = "PartialEq",
    storage = false,
    doc = "OperatorGroup is the unit of multitenancy for OLM managed operators. It constrains the installation of operators in its namespace to a specified set of target namespaces."
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorGroupSpec {
    /// Selects the target namespaces by label (ignored when `targetNamespaces` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// An explicit set of target namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespaces: Option<Vec<String>>,
    /// Service account used to install the group's operators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// When true, OLM does not update the group's `olm.providedAPIs` annotation.
    #[serde(
        default,
        rename = "staticProvidedAPIs",
        skip_serializing_if = "Option::is_none"
    )]
    pub static_provided_apis: Option<bool>,
}

/// The observed state of a legacy OperatorGroup.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorGroupStatus {
    /// The resolved target namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
    /// The service account named in the spec, once found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_ref: Option<ObjectReference>,
    /// Last time the status was updated.
    pub last_updated: Time,
}
