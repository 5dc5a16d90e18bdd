//! `operators.coreos.com/v1` OLMConfig: the cluster-scoped singleton `cluster` holding OLM's
//! global switches. The controller creates it (empty) at startup when it is missing, as
//! upstream OLM does, and keeps its `status.conditions`.
//!
//! Upstream's CRD requires only `metadata`, has no printer columns or short names, the `olm`
//! category and a status subresource; so does this one. Of its two features olm-rs honours
//! `disableCopiedCSVs` (see [`crate::plan::olm_config`]); `packageServerSyncInterval` tunes
//! upstream's packageserver, which olm-rs does not run, so it is reported as ignored in the
//! status instead of being silently dropped.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The name of the one OLMConfig OLM reads.
pub const OLM_CONFIG_NAME: &str = "cluster";

// Upstream's `cluster` has no spec at all; the CRD defaults it to `{}` so that objects read
// from the API server always have one (as OperatorGroup's spec).
/// OLMConfigSpec is the spec for an OLMConfig resource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "OLMConfig",
    plural = "olmconfigs",
    singular = "olmconfig",
    category = "olm",
    status = "OLMConfigStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "OLMConfig is a resource responsible for configuring OLM."
)]
#[schemars(extend("default" = {}))]
pub struct OLMConfigSpec {
    /// Features contains the list of configurable OLM features.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Features>,
}

/// Features contains the list of configurable OLM features.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Features {
    /// DisableCopiedCSVs is used to disable OLM's "Copied CSV" feature for operators installed
    /// at the cluster scope, where a cluster scoped operator is one that has been installed in
    /// an OperatorGroup that targets all namespaces. When reenabled, OLM will recreate the
    /// "Copied CSVs" for each cluster scoped operator.
    #[serde(
        default,
        rename = "disableCopiedCSVs",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_copied_csvs: Option<bool>,
    /// PackageServerSyncInterval is the period of upstream's packageserver ("60m"; hours,
    /// minutes and seconds only). olm-rs runs no packageserver: the field is accepted and
    /// reported as ignored in the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = r"^([0-9]+(\.[0-9]+)?(s|m|h))+$"))]
    pub package_server_sync_interval: Option<String>,
}

/// OLMConfigStatus is the status for an OLMConfig resource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct OLMConfigStatus {
    /// Conditions (`DisabledCopiedCSVs`, and `PackageServerSyncIntervalIgnored` while that
    /// field is set).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl OLMConfig {
    /// `spec.features.disableCopiedCSVs` (absent: copies enabled, as upstream's
    /// `CopiedCSVsAreEnabled`).
    pub fn copied_csvs_disabled(&self) -> bool {
        self.spec
            .features
            .as_ref()
            .and_then(|f| f.disable_copied_csvs)
            .unwrap_or(false)
    }

    /// `spec.features.packageServerSyncInterval`, when set.
    pub fn package_server_sync_interval(&self) -> Option<&str> {
        self.spec
            .features
            .as_ref()
            .and_then(|f| f.package_server_sync_interval.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_config_enables_copies_and_round_trips() {
        // As the API server returns upstream's spec-less `cluster` (the CRD defaults `spec`).
        let config: OLMConfig = serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OLMConfig",
            "metadata": {"name": "cluster"},
            "spec": {},
        }))
        .unwrap();
        assert!(!config.copied_csvs_disabled());
        assert_eq!(config.package_server_sync_interval(), None);
    }

    #[test]
    fn features_read_as_upstream_spells_them() {
        let config: OLMConfig = serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OLMConfig",
            "metadata": {"name": "cluster"},
            "spec": {"features": {"disableCopiedCSVs": true, "packageServerSyncInterval": "1h30m"}},
        }))
        .unwrap();
        assert!(config.copied_csvs_disabled());
        assert_eq!(config.package_server_sync_interval(), Some("1h30m"));
        let spec = serde_json::to_value(&config.spec).unwrap();
        assert_eq!(
            spec,
            serde_json::json!({"features": {"disableCopiedCSVs": true, "packageServerSyncInterval": "1h30m"}})
        );
    }
}
