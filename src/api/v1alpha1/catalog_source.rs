//! CatalogSource: where packages, channels and bundles come from.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Affinity, Toleration},
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{Condition, Time},
    },
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Icon;
use crate::api::string_enum;

/// CatalogSourceSpec: where a catalog's content comes from and how it is shown.
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats type_ = \"string\"; clippy reads them as one attribute"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "CatalogSource",
    plural = "catalogsources",
    singular = "catalogsource",
    shortname = "catsrc",
    category = "olm",
    namespaced,
    status = "CatalogSourceStatus",
    derive = "PartialEq",
    doc = "CatalogSource is a repository of CSVs, CRDs, and operator packages.",
    printcolumn(
        name = "Display",
        type_ = "string",
        json_path = ".spec.displayName",
        description = "The pretty name of the catalog"
    ),
    printcolumn(
        name = "Type",
        type_ = "string",
        json_path = ".spec.sourceType",
        description = "The type of the catalog"
    ),
    printcolumn(
        name = "Publisher",
        type_ = "string",
        json_path = ".spec.publisher",
        description = "The publisher of the catalog"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSourceSpec {
    /// `grpc`, `configmap` or `internal` (deprecated alias of configmap); olm-rs also reads
    /// `builtin` (the catalog shipped with the controller) and `http` (a catalogd HTTP API at
    /// `address`).
    pub source_type: SourceType,
    /// Higher is preferred during dependency resolution; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// The ConfigMap holding the catalog (configmap and internal sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
    /// `host:port` of a running registry (grpc sources; ignored when `image` is set), or the base
    /// URL of a catalogd HTTP API, `https://HOST/catalogs/NAME` (http sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// A catalog image to serve (grpc sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Overrides for the registry pod of an image-backed grpc source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_pod_config: Option<GrpcPodConfig>,
    /// How updated catalog content is discovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    /// Pull secrets for the catalog's images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Publisher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// Icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
}

string_enum! {
    /// The backing store of a CatalogSource.
    pub enum SourceType {
        /// A registry served over gRPC, from an image or at an address.
        Grpc => "grpc",
        /// Catalog documents in a ConfigMap.
        ConfigMap => "configmap",
        /// Deprecated alias of `configmap`.
        Internal => "internal",
    }
}

impl SourceType {
    /// True for `configmap` and its alias `internal`.
    pub fn is_config_map(&self) -> bool {
        matches!(self, Self::ConfigMap | Self::Internal)
    }
}

string_enum! {
    /// The security profile of a registry pod.
    pub enum SecurityConfig {
        /// No security context is set (runs only in baseline/privileged namespaces).
        Legacy => "legacy",
        /// Runs under the `restricted` Pod Security Standard.
        Restricted => "restricted",
    }
}

/// Overrides for the pod spec of a CatalogSource's registry pod.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrpcPodConfig {
    /// Node selector of the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Tolerations of the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Affinity of the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Priority class of the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// `legacy` or `restricted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["legacy", "restricted"], "default" = "legacy"))]
    pub security_context_config: Option<SecurityConfig>,
    /// Soft memory limit (`GOMEMLIMIT`) and memory request of the registry container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_target: Option<Quantity>,
    /// Serve the catalog extracted from the image with OLM's own server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_content: Option<ExtractContentConfig>,
}

/// Where the file-based catalog and its cache live inside the catalog image.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtractContentConfig {
    /// Directory of the pre-computed API cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_dir: Option<String>,
    /// Directory of the file-based catalog.
    pub catalog_dir: String,
}

/// How updated catalog content is discovered.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// Poll the registry at an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_poll: Option<RegistryPoll>,
}

/// Registry polling.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryPoll {
    /// A Go duration (`10m`, `1h30m`); invalid values fall back to 15m upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

/// The ConfigMap a configmap source was loaded from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapResourceReference {
    /// ConfigMap name.
    pub name: String,
    /// ConfigMap namespace.
    pub namespace: String,
    /// ConfigMap UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The resourceVersion that was loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// When it was loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
}

/// The Service a registry is served through.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryServiceStatus {
    /// `grpc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Service name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Service namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_namespace: Option<String>,
    /// Service port (a string upstream, e.g. `"50051"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// When the service was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
}

/// The last observed state of the connection to a registry.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrpcConnectionState {
    /// The address connected to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// `IDLE`, `CONNECTING`, `READY`, `TRANSIENT_FAILURE` or `SHUTDOWN`.
    pub last_observed_state: String,
    /// When the state was observed.
    #[serde(default, rename = "lastConnect", skip_serializing_if = "Option::is_none")]
    pub last_connect: Option<Time>,
}

/// gRPC connectivity states as written to `status.connectionState.lastObservedState`.
pub mod connection_state {
    /// The connection is idle.
    pub const IDLE: &str = "IDLE";
    /// The connection is being established.
    pub const CONNECTING: &str = "CONNECTING";
    /// The catalog can be read.
    pub const READY: &str = "READY";
    /// The catalog cannot be read right now.
    pub const TRANSIENT_FAILURE: &str = "TRANSIENT_FAILURE";
    /// The connection was shut down.
    pub const SHUTDOWN: &str = "SHUTDOWN";
}

/// The observed state of a CatalogSource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSourceStatus {
    /// Why the source is in its state (human-readable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// CamelCase reason (`SpecInvalidError`, `ConfigMapError`, ...; see `reasons::catalog_source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Last time the catalog image was polled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_image_registry_poll: Option<Time>,
    /// The ConfigMap a configmap source was loaded from.
    #[serde(
        default,
        rename = "configMapReference",
        skip_serializing_if = "Option::is_none"
    )]
    pub config_map_reference: Option<ConfigMapResourceReference>,
    /// The Service the registry is served through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_service: Option<RegistryServiceStatus>,
    /// The connection to the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_state: Option<GrpcConnectionState>,
    /// olm-rs: the catalog image being served, by digest (`REGISTRY/REPO@sha256:...`), for a
    /// CatalogSource with `spec.image` (upstream OLM has no such field; catalogd reports the same
    /// in `resolvedSource.image.ref`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_image: Option<String>,
    /// Conditions (newer features report here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_is_an_alias_of_configmap() {
        assert!(SourceType::parse("internal").is_config_map());
        assert!(SourceType::parse("configmap").is_config_map());
        assert!(!SourceType::parse("grpc").is_config_map());
    }

    #[test]
    fn an_unknown_source_type_is_kept_so_the_controller_can_report_it() {
        let spec: CatalogSourceSpec =
            serde_json::from_value(serde_json::json!({"sourceType": "sqlite"})).unwrap();
        assert_eq!(spec.source_type, SourceType::Other("sqlite".into()));
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            serde_json::json!({"sourceType": "sqlite"})
        );
    }
}
