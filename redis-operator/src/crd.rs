//! The `RedisCluster` custom resource (`cache.example.com/v1`): the API the operator serves.
//!
//! The schema is generated from these Rust types, so the CRD in the latest bundle
//! (`bundles/redis-operator/1.2.0/manifests/cache.example.com_redisclusters.yaml`, `v1` and the
//! deprecated [`v1alpha1`], see [`multi_version_crd`]) is a rendering of this file and a test keeps
//! the two equal. Rules the apiserver can enforce live in the schema
//! (`size` from 1 to [`MAX_SIZE`], `replicasPerPrimary` from 0 to [`MAX_REPLICAS_PER_PRIMARY`], the
//! `mode` enum); rules that need the whole spec (cluster mode needs at least three primaries, the
//! `redisConfig` deny-list) are checked by the operator, which reports them as a `Degraded` condition
//! naming the field, because a CEL rule could not name the offending `redisConfig` line.

use std::collections::BTreeMap;

use k8s_openapi::{api::core::v1::ResourceRequirements, apimachinery::pkg::apis::meta::v1::Condition};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The largest `spec.size` the schema accepts.
pub const MAX_SIZE: i32 = 100;
/// The largest `spec.replicasPerPrimary` the schema accepts.
pub const MAX_REPLICAS_PER_PRIMARY: i32 = 5;
/// The image used when `spec.image` is empty.
pub const DEFAULT_REDIS_IMAGE: &str = "docker.io/library/redis:7.2-alpine";

/// Desired state of a Redis deployment: a standalone primary with replicas, or a sharded Redis Cluster.
#[allow(
    clippy::duplicated_attributes,
    reason = "each kube printcolumn(...) list repeats the same keys by design"
)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1",
    kind = "RedisCluster",
    plural = "redisclusters",
    singular = "rediscluster",
    shortname = "redis",
    namespaced,
    status = "RedisClusterStatus",
    derive = "PartialEq",
    doc = "RedisCluster runs Redis as a StatefulSet: one primary with read replicas (standalone mode) or a sharded Redis Cluster (cluster mode).",
    scale(
        spec_replicas_path = ".spec.size",
        status_replicas_path = ".status.readyReplicas"
    ),
    printcolumn(
        name = "Size",
        type_ = "integer",
        json_path = ".spec.size",
        description = "Desired number of Redis pods"
    ),
    printcolumn(
        name = "Ready",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "Redis pods that are ready"
    ),
    printcolumn(
        name = "Mode",
        type_ = "string",
        json_path = ".spec.mode",
        priority = 1,
        description = "standalone or cluster"
    ),
    printcolumn(
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase",
        description = "Pending, Progressing, Ready or Degraded"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct RedisClusterSpec {
    /// Number of Redis pods (total: primaries plus replicas).
    #[schemars(range(min = 1, max = 100))]
    pub size: i32,

    /// Redis container image; empty means the operator's default (`docker.io/library/redis:7.2-alpine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,

    /// CPU and memory requests and limits of the Redis container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,

    /// Persistent storage for the data directory; without it Redis keeps data in an emptyDir.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Storage>,

    /// `standalone`: pod 0 is the primary and the others replicate it. `cluster`: a sharded Redis Cluster.
    #[serde(default)]
    pub mode: Mode,

    /// Cluster mode only: replicas attached to each primary. `size` must be a multiple of
    /// `replicasPerPrimary + 1` with at least three primaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 5))]
    pub replicas_per_primary: Option<i32>,

    /// Extra redis.conf lines (one directive per line). Directives the operator manages itself
    /// (for example `port`, `dir`, `replicaof`, `cluster-enabled`) are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_config: Option<String>,
}

/// How Redis is topologised.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// One primary (pod 0) and `size - 1` replicas of it.
    #[default]
    Standalone,
    /// A Redis Cluster: 16384 hash slots spread over the primaries, each with replicas.
    Cluster,
}

/// A PersistentVolumeClaim template for each Redis pod.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Storage {
    /// Requested capacity of each claim, as a Kubernetes quantity (for example `1Gi`).
    pub size: String,
    /// StorageClass of the claims; empty means the cluster's default class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// Delete the claims when the RedisCluster is deleted (they are kept by default).
    #[serde(default)]
    pub delete_claim_on_delete: bool,
}

/// Observed state, written by the operator to the status subresource.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedisClusterStatus {
    /// Names of the Redis pods, in ordinal order.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Number of Redis pods that are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// One-word summary: `Pending`, `Progressing`, `Ready` or `Degraded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// `Ready`, `Progressing` and `Degraded` conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The `cache.example.com/v1alpha1` shape of `RedisCluster`, served from release 1.1.0 for
/// manifests written against the flat pre-1.0 API, next to `v1` (the storage version). The API
/// server converts between the two through the operator's conversion webhook
/// ([`crate::convert`]); the operator itself only ever reads `v1`.
///
/// It differs from `v1` in three ways: `replicas` is `v1`'s `size`; the storage settings are flat
/// (`storageSize`, `storageClassName`, `deleteClaimOnDelete` instead of `storage.{size,
/// storageClassName, deleteClaimOnDelete}`); and it has no cluster mode (`mode`,
/// `replicasPerPrimary`), which conversion keeps in an annotation so nothing is lost.
pub mod v1alpha1 {
    use k8s_openapi::api::core::v1::ResourceRequirements;
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Desired state of a Redis deployment in the flat `v1alpha1` shape.
    #[allow(
        clippy::duplicated_attributes,
        reason = "each kube printcolumn(...) list repeats the same keys by design"
    )]
    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
    #[kube(
        group = "cache.example.com",
        version = "v1alpha1",
        kind = "RedisCluster",
        plural = "redisclusters",
        singular = "rediscluster",
        shortname = "redis",
        namespaced,
        status = "super::RedisClusterStatus",
        derive = "PartialEq",
        deprecated = "cache.example.com/v1alpha1 RedisCluster is deprecated; use cache.example.com/v1 (spec.replicas is spec.size, spec.storageSize is spec.storage.size)",
        doc = "RedisCluster (v1alpha1, deprecated) runs Redis as a StatefulSet: one primary with read replicas.",
        scale(
            spec_replicas_path = ".spec.replicas",
            status_replicas_path = ".status.readyReplicas"
        ),
        printcolumn(
            name = "Replicas",
            type_ = "integer",
            json_path = ".spec.replicas",
            description = "Desired number of Redis pods"
        ),
        printcolumn(
            name = "Ready",
            type_ = "integer",
            json_path = ".status.readyReplicas",
            description = "Redis pods that are ready"
        ),
        printcolumn(
            name = "Phase",
            type_ = "string",
            json_path = ".status.phase",
            description = "Pending, Progressing, Ready or Degraded"
        ),
        printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
    )]
    #[serde(rename_all = "camelCase")]
    pub struct RedisClusterSpec {
        /// Number of Redis pods (`size` in v1).
        #[schemars(range(min = 1, max = 100))]
        pub replicas: i32,

        /// Redis container image; empty means the operator's default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub image: Option<String>,

        /// CPU and memory requests and limits of the Redis container.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub resources: Option<ResourceRequirements>,

        /// Capacity of each pod's PersistentVolumeClaim (`storage.size` in v1); without it Redis
        /// keeps data in an emptyDir.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub storage_size: Option<String>,

        /// StorageClass of the claims (`storage.storageClassName` in v1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub storage_class_name: Option<String>,

        /// Delete the claims with the RedisCluster (`storage.deleteClaimOnDelete` in v1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub delete_claim_on_delete: Option<bool>,

        /// Extra redis.conf lines (one directive per line); directives the operator manages are refused.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub redis_config: Option<String>,
    }
}

/// Status condition types and reasons, as PascalCase constants.
pub mod conditions {
    /// All pods ready and, in cluster mode, the cluster reports `cluster_state:ok`.
    pub const READY: &str = "Ready";
    /// The operator is moving the cluster towards its spec.
    pub const PROGRESSING: &str = "Progressing";
    /// The spec cannot be applied or the cluster is unhealthy.
    pub const DEGRADED: &str = "Degraded";
}

impl RedisClusterSpec {
    /// The image to run: `spec.image` or [`DEFAULT_REDIS_IMAGE`].
    #[must_use]
    pub fn image_or_default(&self) -> &str {
        match self.image.as_deref() {
            Some(i) if !i.trim().is_empty() => i,
            _ => DEFAULT_REDIS_IMAGE,
        }
    }

    /// `replicasPerPrimary` with its default of 1.
    #[must_use]
    pub fn replicas_per_primary_or_default(&self) -> i32 {
        self.replicas_per_primary.unwrap_or(1)
    }
}

/// Labels put on every object the operator creates for `name`, and used as the pod selector.
#[must_use]
pub fn selector_labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "redis".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), name.to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            "redis-operator".to_owned(),
        ),
    ])
}

/// The CRD serving `v1alpha1` and `v1` (storage `v1`), converted by the operator's webhook
/// (`spec.conversion.strategy: Webhook`; OLM fills in the webhook's Service and CA bundle from
/// the CSV's `ConversionWebhook` definition). `v1alpha1_served: false` is the later release that
/// stops serving `v1alpha1` but keeps it in `spec.versions`, so objects once stored as
/// `v1alpha1` stay readable until storage migration removed it from `status.storedVersions`.
#[must_use]
pub fn multi_version_crd(v1alpha1_served: bool) -> serde_json::Value {
    use kube::CustomResourceExt;
    let (Ok(mut alpha), Ok(v1)) = (
        serde_json::to_value(v1alpha1::RedisCluster::crd()),
        serde_json::to_value(RedisCluster::crd()),
    ) else {
        return serde_json::Value::Null;
    };
    let mut crd = v1;
    let mut alpha_version = alpha["spec"]["versions"][0].take();
    alpha_version["storage"] = serde_json::json!(false);
    alpha_version["served"] = serde_json::json!(v1alpha1_served);
    if let Some(versions) = crd["spec"]["versions"].as_array_mut() {
        versions.insert(0, alpha_version);
    }
    crd["spec"]["conversion"] = serde_json::json!({
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"service": {
                "name": "redis-operator-service",
                "namespace": "system",
                "path": "/convert",
                "port": 443
            }}
        }
    });
    crd
}

/// The CRD as YAML, as `redis-operator crd` prints it and the latest bundle ships it.
#[must_use]
pub fn crd_yaml() -> String {
    block_yaml::write(&multi_version_crd(false))
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;

    use super::*;

    #[test]
    fn the_crd_is_namespaced_in_group_cache_example_com_with_status_and_scale() {
        let crd = RedisCluster::crd();
        assert_eq!(crd.spec.group, "cache.example.com");
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.kind, "RedisCluster");
        assert_eq!(crd.spec.names.short_names, Some(vec!["redis".to_owned()]));
        let v1 = &crd.spec.versions[0];
        assert_eq!(v1.name, "v1");
        let sub = v1.subresources.as_ref().expect("subresources");
        assert!(sub.status.is_some());
        assert_eq!(
            sub.scale.as_ref().expect("scale").spec_replicas_path,
            ".spec.size"
        );
        let cols: Vec<_> = v1
            .additional_printer_columns
            .as_ref()
            .expect("columns")
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(cols, ["Size", "Ready", "Mode", "Phase", "Age"]);
    }

    #[test]
    fn the_schema_bounds_size_between_1_and_the_maximum() {
        let crd = serde_json::to_value(RedisCluster::crd()).expect("json");
        let size = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"];
        assert_eq!(size["minimum"].as_f64(), Some(1.0));
        assert_eq!(size["maximum"].as_f64(), Some(f64::from(MAX_SIZE)));
        let rpp = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["replicasPerPrimary"];
        assert_eq!(rpp["maximum"].as_f64(), Some(f64::from(MAX_REPLICAS_PER_PRIMARY)));
    }

    #[test]
    fn a_minimal_spec_defaults_to_standalone_mode_and_the_default_image() {
        let spec: RedisClusterSpec = serde_json::from_value(serde_json::json!({"size": 3})).expect("spec");
        assert_eq!(spec.mode, Mode::Standalone);
        assert_eq!(spec.image_or_default(), DEFAULT_REDIS_IMAGE);
        assert_eq!(spec.replicas_per_primary_or_default(), 1);
    }
}
