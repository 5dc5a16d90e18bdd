//! `operators.coreos.com/v1`: OperatorGroup, the unit of multitenancy for OLM-managed
//! operators. It selects the namespaces the operators installed in its own namespace watch.

use k8s_openapi::{
    api::core::v1::ObjectReference,
    apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time},
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::string_enum;

/// The API version of every kind in this module.
pub const API_VERSION: &str = "operators.coreos.com/v1";

/// OperatorGroupSpec is the spec for an OperatorGroup resource.
///
/// A manifest may omit `spec` (upstream's `global-operators` group does); the CRD defaults it
/// to `{upgradeStrategy: {name: Default}}`, so objects read from the API server always have
/// one. Parsing a spec-less manifest from a file into this type needs `spec: {}` added first.
///
/// Target rule (upstream `getOperatorGroupTargets`): explicit `targetNamespaces` win; else a
/// non-empty `selector` selects namespaces by label; else every namespace (`status.namespaces
/// == [""]`).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "OperatorGroup",
    plural = "operatorgroups",
    singular = "operatorgroup",
    shortname = "og",
    category = "olm",
    namespaced,
    status = "OperatorGroupStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "OperatorGroup is the unit of multitenancy for OLM managed operators. It constrains the installation of operators in its namespace to a specified set of target namespaces."
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"upgradeStrategy": "Default"}))]
pub struct OperatorGroupSpec {
    /// Selects the target namespaces by label (ignored when `targetNamespaces` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// An explicit set of target namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub target_namespaces: Option<Vec<String>>,
    /// Service account used to install the group's operators (scoped installs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// When true, OLM does not update the group's `olm.providedAPIs` annotation.
    #[serde(
        default,
        rename = "staticProvidedAPIs",
        skip_serializing_if = "Option::is_none"
    )]
    pub static_provided_apis: Option<bool>,
    /// How failed installs and upgrades of the group's operators are handled.
    #[serde(default, skip_serializing_if = "UpgradeStrategy::is_unset")]
    pub upgrade_strategy: UpgradeStrategy,
}

string_enum! {
    /// The upgrade strategy of an OperatorGroup.
    pub enum UpgradeStrategyName: default Default {
        /// A failed CSV is never replaced; a Subscription whose InstallPlan failed is stuck.
        Default => "Default",
        /// Failed installs and upgrades may be replaced by newer ones (unsafe).
        TechPreviewUnsafeFailForward => "TechPreviewUnsafeFailForward",
    }
}

/// The upgrade strategy of an OperatorGroup: `spec.upgradeStrategy: Default` or
/// `TechPreviewUnsafeFailForward`, a plain string as upstream writes it. The object form
/// `{name: ...}` of earlier olm-rs CRDs is still read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpgradeStrategy {
    /// `Default` or `TechPreviewUnsafeFailForward` (absent reads as `Default`).
    pub name: Option<UpgradeStrategyName>,
}

impl UpgradeStrategy {
    /// True when the spec did not name a strategy (not written back).
    pub fn is_unset(&self) -> bool {
        self.name.is_none()
    }
}

impl Serialize for UpgradeStrategy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.name.clone().unwrap_or_default().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for UpgradeStrategy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Plain(UpgradeStrategyName),
            Object {
                #[serde(default)]
                name: Option<UpgradeStrategyName>,
            },
        }
        Ok(match Form::deserialize(deserializer)? {
            Form::Plain(name) => Self { name: Some(name) },
            Form::Object { name } => Self { name },
        })
    }
}

impl JsonSchema for UpgradeStrategy {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "UpgradeStrategy".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "enum": ["Default", "TechPreviewUnsafeFailForward"],
            "default": "Default",
            "description": "`Default`: a failed install or upgrade is never replaced. `TechPreviewUnsafeFailForward`: failed installs and upgrades may be replaced by newer ones (unsafe)."
        })
    }
}

impl OperatorGroupSpec {
    /// True when the group opted into fail-forward upgrades.
    pub fn fail_forward(&self) -> bool {
        self.upgrade_strategy.name.as_ref() == Some(&UpgradeStrategyName::TechPreviewUnsafeFailForward)
    }
}

/// The observed state of an OperatorGroup.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorGroupStatus {
    /// The resolved target namespaces (`[""]` means all namespaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub namespaces: Option<Vec<String>>,
    /// The service account named in the spec, once found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_ref: Option<ObjectReference>,
    /// Last time the status was updated (required upstream).
    pub last_updated: Time,
    /// Conditions (`OperatorGroupServiceAccount`, `MultipleOperatorGroup`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

impl OperatorGroupStatus {
    /// The targets as the `olm.targetNamespaces` annotation spells them: sorted, comma-joined
    /// (empty for all namespaces).
    pub fn target_namespaces_annotation(&self) -> String {
        let mut namespaces = self.namespaces.clone().unwrap_or_default();
        namespaces.sort();
        namespaces.join(",")
    }
}

mod operator;
mod operator_condition;
pub use operator::{ComponentCondition, Components, Operator, OperatorSpec, OperatorStatus, RichReference};
pub use operator_condition::{OperatorCondition, OperatorConditionSpec, OperatorConditionStatus};

mod olm_config;
pub use olm_config::{Features, OLM_CONFIG_NAME, OLMConfig, OLMConfigSpec, OLMConfigStatus};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_targets_annotation_is_sorted_and_comma_joined() {
        let status = OperatorGroupStatus {
            namespaces: Some(vec!["b".into(), "a".into()]),
            service_account_ref: None,
            last_updated: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            conditions: vec![],
        };
        assert_eq!(status.target_namespaces_annotation(), "a,b");
    }

    #[test]
    fn all_namespaces_is_the_empty_annotation() {
        let status = OperatorGroupStatus {
            namespaces: Some(vec![String::new()]),
            service_account_ref: None,
            last_updated: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            conditions: vec![],
        };
        assert_eq!(status.target_namespaces_annotation(), "");
    }

    #[test]
    fn fail_forward_is_opt_in() {
        let mut spec = OperatorGroupSpec::default();
        assert!(!spec.fail_forward());
        spec.upgrade_strategy = UpgradeStrategy {
            name: Some(UpgradeStrategyName::TechPreviewUnsafeFailForward),
        };
        assert!(spec.fail_forward());
    }

    #[test]
    fn the_upgrade_strategy_is_a_plain_string_and_the_old_object_form_still_reads() {
        let spec: OperatorGroupSpec =
            serde_json::from_value(serde_json::json!({"upgradeStrategy": "TechPreviewUnsafeFailForward"}))
                .unwrap();
        assert!(spec.fail_forward());
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            serde_json::json!({"upgradeStrategy": "TechPreviewUnsafeFailForward"})
        );
        let old: OperatorGroupSpec =
            serde_json::from_value(serde_json::json!({"upgradeStrategy": {"name": "Default"}})).unwrap();
        assert!(!old.fail_forward());
        assert_eq!(
            serde_json::to_value(&old).unwrap(),
            serde_json::json!({"upgradeStrategy": "Default"})
        );
        // The CRD's enum refuses other values; one that got through anyway is not fail-forward.
        let unknown: OperatorGroupSpec =
            serde_json::from_value(serde_json::json!({"upgradeStrategy": "Sometimes"})).unwrap();
        assert!(!unknown.fail_forward());
    }
}
