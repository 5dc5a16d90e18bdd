//! release: the operator's release history and the registry+v1 bundles rendered from it.
//!
//! Each [`Release`] records what a version of the operator could do ([`Feature`]s), where it sits in
//! the upgrade graph, and the notes its CSV describes. From that one table this module renders, as
//! pure text, every file of `bundles/redis-operator/<version>/` (the ClusterServiceVersion, the
//! RedisCluster CRD as that version served it, `metadata/annotations.yaml`) and the FBC channel file
//! `bundles/redis-operator/channels.yaml`. A test compares the checked-in files with this rendering,
//! so the bundles cannot drift from the code: the CRDs from 1.1.0 on are [`crate::crd::multi_version_crd`]; up to
//! 1.0.0 the CRD is the `v1` schema of [`super::crd`] with the fields the release did not have
//! removed; each CSV's permissions
//! are [`super::rbac::RULES`] filtered by the release's features.
//!
//! The upgrade graph uses OLM's three edge kinds:
//! - `replaces`: 0.2.0 → 0.1.0, 0.2.1 → 0.1.0, 0.3.0 → 0.2.1, 1.0.0-rc.1 → 0.3.0, 1.0.0 → 0.3.0,
//!   1.1.0 → 1.0.0, 1.2.0 → 1.1.0.
//! - `skips`: 0.2.0 was withdrawn (its StatefulSet template change rolled every pod at once), so
//!   0.2.1 replaces 0.1.0 directly and `skips` 0.2.0: clusters on 0.2.0 move to 0.2.1 and nobody is
//!   offered 0.2.0 again. 1.0.0 `skips` 1.0.0-rc.1, which keeps the channel a single-headed graph.
//! - `skipRange`: 1.0.0 carries `olm.skipRange: '>=0.2.0 <1.0.0'`, so any 0.2.x, 0.3.x or 1.0.0
//!   prerelease upgrades to 1.0.0 in one hop (blang/semver ranges include prereleases).
//!
//! Channels: `alpha` has every release (1.1.0 and 1.2.0, which OLM installs only in AllNamespaces
//! OperatorGroups because of their conversion webhook, are only there, so the default channel
//! keeps installing in every install mode); `candidate` starts at 0.3.0 and has the release candidate;
//! `stable` (the default) has the non-prerelease, non-withdrawn releases 0.2.1, 0.3.0, 1.0.0, 1.1.0 and
//! 1.2.0.
//!
//! The API's versions: up to 1.0.0 the CRD has one version, `v1`. 1.1.0 also serves the flat
//! `v1alpha1` (storage stays `v1`) through a conversion webhook, and adds a validating webhook;
//! both are `webhookdefinitions` of its CSV. 1.2.0 keeps `v1alpha1` in the CRD with `served: false`.

use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use kube::CustomResourceExt;
use serde_json::{Value, json};

use super::{feature::Feature, rbac};
use crate::crd::RedisCluster;
use block_yaml::write as to_yaml;

/// The package name in the catalog.
pub const PACKAGE: &str = "redis-operator";
/// The image repository the operator is published to.
pub const IMAGE_REPOSITORY: &str = "ghcr.io/olm-rs/redis-operator";
/// The port serving `/metrics`, `/healthz` and `/readyz`.
pub const HTTP_PORT: u16 = 8080;
/// The port the webhooks listen on (TLS).
pub const WEBHOOK_PORT: u16 = crate::webhook::WEBHOOK_PORT;

/// One published version of the operator.
#[derive(Clone, Copy, Debug)]
pub struct Release {
    /// Semantic version, without a leading `v`.
    pub version: &'static str,
    /// Version this one replaces.
    pub replaces: Option<&'static str>,
    /// Versions this one skips.
    pub skips: &'static [&'static str],
    /// `olm.skipRange` annotation.
    pub skip_range: Option<&'static str>,
    /// Channels the bundle is published in.
    pub channels: &'static [&'static str],
    /// CSV `spec.maturity`.
    pub maturity: &'static str,
    /// Features the version has.
    pub features: &'static [Feature],
    /// CSV `createdAt` annotation.
    pub created_at: &'static str,
    /// Markdown describing what this version adds.
    pub notes: &'static str,
}

use Feature::{ClusterMode, RedisConfig, ResourcesAndStorage, V1Alpha1Unserved, Webhooks};

/// Every release, oldest first.
pub const RELEASES: &[Release] = &[
    Release {
        version: "0.1.0",
        replaces: None,
        skips: &[],
        skip_range: None,
        channels: &["alpha"],
        maturity: "alpha",
        features: &[],
        created_at: "2025-01-15T10:00:00Z",
        notes: "First release: a primary and `size - 1` replicas as a StatefulSet, with a headless \
                Service for peer discovery, a client Service and a redis.conf ConfigMap. `status.nodes` \
                lists the pods.",
    },
    Release {
        version: "0.2.0",
        replaces: Some("0.1.0"),
        skips: &[],
        skip_range: None,
        channels: &["alpha"],
        maturity: "alpha",
        features: &[ResourcesAndStorage],
        created_at: "2025-03-03T10:00:00Z",
        notes: "Adds `spec.resources`, `spec.storage` (a PersistentVolumeClaim per pod, deleted with the \
                RedisCluster when `deleteClaimOnDelete` is set) and a PodDisruptionBudget.\n\n\
                **Withdrawn:** upgrading from 0.1.0 restarted every Redis pod at once. Use 0.2.1.",
    },
    Release {
        version: "0.2.1",
        replaces: Some("0.1.0"),
        skips: &["0.2.0"],
        skip_range: None,
        channels: &["alpha", "stable"],
        maturity: "alpha",
        features: &[ResourcesAndStorage],
        created_at: "2025-03-10T10:00:00Z",
        notes: "Fixes 0.2.0's rolling update: pods are replaced one at a time, replicas first. \
                Everything 0.2.0 added (`resources`, `storage`, the PodDisruptionBudget) is here; 0.2.0 \
                is skipped.",
    },
    Release {
        version: "0.3.0",
        replaces: Some("0.2.1"),
        skips: &[],
        skip_range: None,
        channels: &["alpha", "candidate", "stable"],
        maturity: "beta",
        features: &[ResourcesAndStorage, RedisConfig],
        created_at: "2025-05-20T10:00:00Z",
        notes: "Adds `spec.redisConfig`: extra redis.conf lines, checked against a deny-list of \
                directives the operator manages itself (`port`, `dir`, `replicaof`, `include`, \
                `loadmodule`, `rename-command`, ...). A refused line sets the `Degraded` condition \
                naming it and emits a Warning event; nothing is applied until it is fixed.",
    },
    Release {
        version: "1.0.0-rc.1",
        replaces: Some("0.3.0"),
        skips: &[],
        skip_range: None,
        channels: &["alpha", "candidate"],
        maturity: "beta",
        features: &[ResourcesAndStorage, RedisConfig, ClusterMode],
        created_at: "2025-08-04T10:00:00Z",
        notes: "Release candidate of cluster mode: `spec.mode: cluster` forms a Redis Cluster over the \
                pods (CLUSTER MEET, the 16384 hash slots split evenly across primaries, \
                `replicasPerPrimary` replicas each) and re-shards when `size` grows.",
    },
    Release {
        version: "1.0.0",
        replaces: Some("0.3.0"),
        skips: &["1.0.0-rc.1"],
        skip_range: Some(">=0.2.0 <1.0.0"),
        channels: &["alpha", "candidate", "stable"],
        maturity: "stable",
        features: &[ResourcesAndStorage, RedisConfig, ClusterMode],
        created_at: "2025-09-01T10:00:00Z",
        notes: "Cluster mode is stable and scales both ways: lowering `size` moves the hash slots (and \
                keys) of the leaving primaries to the staying ones and makes the cluster forget the \
                leaving nodes before the StatefulSet removes them; below 3 primaries a shrink is \
                refused. Any 0.2.x, 0.3.x or 1.0.0 prerelease upgrades straight to 1.0.0 \
                (`olm.skipRange: '>=0.2.0 <1.0.0'`).",
    },
    Release {
        version: "1.1.0",
        replaces: Some("1.0.0"),
        skips: &[],
        skip_range: None,
        channels: &["alpha"],
        maturity: "stable",
        features: &[ResourcesAndStorage, RedisConfig, ClusterMode, Webhooks],
        created_at: "2025-11-03T10:00:00Z",
        notes: "Serves `cache.example.com/v1alpha1` next to `v1`, for manifests written against the flat \
                pre-1.0 shape (`replicas` for `size`; `storageSize`, `storageClassName`, \
                `deleteClaimOnDelete` for `storage`). Objects are stored as `v1`; the operator's \
                conversion webhook (`/convert`) converts both ways without loss (`v1alpha1` has no cluster \
                mode: `mode` and `replicasPerPrimary` ride in an annotation). A validating webhook \
                (`/validate`) refuses a bad `size` or a denied `redisConfig` directive when the object is \
                written, naming the field, instead of a `Degraded` condition later. OLM issues the \
                webhooks' serving certificate.",
    },
    Release {
        version: "1.2.0",
        replaces: Some("1.1.0"),
        skips: &[],
        skip_range: None,
        channels: &["alpha"],
        maturity: "stable",
        features: &[
            ResourcesAndStorage,
            RedisConfig,
            ClusterMode,
            Webhooks,
            V1Alpha1Unserved,
        ],
        created_at: "2026-01-12T10:00:00Z",
        notes: "Stops serving the deprecated `cache.example.com/v1alpha1` (`served: false`): write \
                `v1`. The version stays in the CRD, so an upgrade never drops a version listed in \
                `status.storedVersions` (objects were always stored as `v1`); a later release may remove \
                it once no cluster lists it.",
    },
];

/// The CSV name of a version (`redis-operator.v1.0.0`).
#[must_use]
pub fn csv_name(version: &str) -> String {
    format!("{PACKAGE}.v{version}")
}

/// The release recorded for `version`, if any.
#[must_use]
pub fn find(version: &str) -> Option<&'static Release> {
    RELEASES.iter().find(|r| r.version == version)
}

impl Release {
    fn has(&self, f: Feature) -> bool {
        self.features.contains(&f)
    }

    /// The operator image of this release.
    #[must_use]
    pub fn image(&self) -> String {
        format!("{IMAGE_REPOSITORY}:{}", self.version)
    }

    /// The default channel written into this bundle's annotations: `stable` when the bundle is in it.
    #[must_use]
    pub fn default_channel(&self) -> &'static str {
        if self.channels.contains(&"stable") {
            "stable"
        } else {
            "alpha"
        }
    }

    /// The CRD as this release served it, as a JSON value.
    #[must_use]
    pub fn crd(&self) -> Value {
        if self.has(Webhooks) {
            return crate::crd::multi_version_crd(!self.has(V1Alpha1Unserved));
        }
        let mut crd = serde_json::to_value(RedisCluster::crd()).unwrap_or(Value::Null);
        let mut removed: Vec<&str> = Vec::new();
        if !self.has(ResourcesAndStorage) {
            removed.extend(["resources", "storage"]);
        }
        if !self.has(RedisConfig) {
            removed.push("redisConfig");
        }
        if !self.has(ClusterMode) {
            removed.extend(["mode", "replicasPerPrimary"]);
        }
        let version = &mut crd["spec"]["versions"][0];
        if let Some(props) =
            version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"].as_object_mut()
        {
            props.retain(|k, _| !removed.contains(&k.as_str()));
        }
        if !self.has(ClusterMode) {
            version["schema"]["openAPIV3Schema"]["description"] =
                json!("RedisCluster runs Redis as a StatefulSet: one primary with read replicas.");
            if let Some(cols) = version["additionalPrinterColumns"].as_array_mut() {
                cols.retain(|c| c["name"] != "Mode");
            }
        }
        crd
    }

    /// The ClusterServiceVersion of this release, as a JSON value.
    #[must_use]
    pub fn csv(&self) -> Value {
        let mut annotations = serde_json::Map::new();
        annotations.insert("alm-examples".into(), json!(self.alm_examples()));
        annotations.insert(
            "capabilities".into(),
            json!(if self.has(ClusterMode) {
                "Seamless Upgrades"
            } else {
                "Basic Install"
            }),
        );
        annotations.insert("categories".into(), json!("Database"));
        annotations.insert("containerImage".into(), json!(self.image()));
        annotations.insert("createdAt".into(), json!(self.created_at));
        annotations.insert(
            "description".into(),
            json!("Runs Redis on Kubernetes, standalone or as a Redis Cluster."),
        );
        annotations.insert("repository".into(), json!("https://github.com/olm-rs/olm-rs"));
        annotations.insert("support".into(), json!("olm-rs"));
        if let Some(range) = self.skip_range {
            annotations.insert("olm.skipRange".into(), json!(range));
        }
        let mut spec = serde_json::Map::new();
        spec.insert("displayName".into(), json!("Redis Operator"));
        spec.insert("description".into(), json!(self.description()));
        spec.insert("version".into(), json!(self.version));
        if let Some(r) = self.replaces {
            spec.insert("replaces".into(), json!(csv_name(r)));
        }
        if !self.skips.is_empty() {
            spec.insert(
                "skips".into(),
                json!(self.skips.iter().map(|s| csv_name(s)).collect::<Vec<_>>()),
            );
        }
        spec.insert("minKubeVersion".into(), json!("1.25.0"));
        spec.insert("maturity".into(), json!(self.maturity));
        spec.insert(
            "provider".into(),
            json!({"name": "olm-rs", "url": "https://github.com/olm-rs/olm-rs"}),
        );
        spec.insert(
            "maintainers".into(),
            json!([{"name": "olm-rs maintainers", "email": "olm-rs-maintainers@example.com"}]),
        );
        spec.insert(
            "links".into(),
            json!([
                {"name": "Source Code", "url": "https://github.com/olm-rs/olm-rs"},
                {"name": "Documentation", "url": "https://github.com/olm-rs/olm-rs/blob/main/README.md#the-redis-operator"},
                {"name": "Redis", "url": "https://redis.io/docs/latest/"}
            ]),
        );
        spec.insert("keywords".into(), json!(self.keywords()));
        spec.insert(
            "icon".into(),
            json!([{"base64data": BASE64.encode(ICON_SVG.as_bytes()), "mediatype": "image/svg+xml"}]),
        );
        // OLM installs a CSV with a conversion webhook only when it supports AllNamespaces alone
        // (a CRD, and so its conversion, is cluster-wide).
        let scoped = !self.has(Webhooks);
        spec.insert(
            "installModes".into(),
            json!([
                {"type": "OwnNamespace", "supported": scoped},
                {"type": "SingleNamespace", "supported": scoped},
                {"type": "MultiNamespace", "supported": scoped},
                {"type": "AllNamespaces", "supported": true}
            ]),
        );
        spec.insert(
            "customresourcedefinitions".into(),
            json!({"owned": self.owned_crds()}),
        );
        spec.insert("install".into(), self.install());
        if self.has(Webhooks) {
            spec.insert("webhookdefinitions".into(), webhook_definitions());
        }
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {
                "name": csv_name(self.version),
                "annotations": annotations,
                "labels": {
                    "operatorframework.io/arch.amd64": "supported",
                    "operatorframework.io/arch.arm64": "supported",
                    "operatorframework.io/os.linux": "supported"
                }
            },
            "spec": spec
        })
    }

    fn keywords(&self) -> Vec<&'static str> {
        let mut k = vec!["redis", "cache", "database", "key-value"];
        if self.has(ClusterMode) {
            k.push("sharding");
        }
        k
    }

    fn alm_examples(&self) -> String {
        let mut spec = json!({"size": 3, "image": crate::crd::DEFAULT_REDIS_IMAGE});
        if self.has(ResourcesAndStorage) {
            spec["resources"] =
                json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}});
            spec["storage"] = json!({"size": "1Gi", "deleteClaimOnDelete": false});
        }
        if self.has(RedisConfig) {
            spec["redisConfig"] = json!("maxmemory 200mb\nmaxmemory-policy allkeys-lru\n");
        }
        let mut examples = vec![example("example-rediscluster", spec)];
        if self.has(ClusterMode) {
            examples.push(example(
                "example-sharded",
                json!({"size": 6, "mode": "cluster", "replicasPerPrimary": 1}),
            ));
        }
        serde_json::to_string_pretty(&examples).unwrap_or_default()
    }

    fn description(&self) -> String {
        let mut d = String::from(
            "The Redis Operator runs [Redis](https://redis.io) on Kubernetes from a `RedisCluster` \
             resource. It is the example operator that olm-rs ships in its catalog.\n\n",
        );
        d.push_str("## What it manages\n\n");
        d.push_str(
            "For each RedisCluster it server-side applies a ConfigMap holding redis.conf, a headless \
             Service for peer discovery, a client Service and a StatefulSet with `size` pods and \
             readiness and liveness probes",
        );
        if self.has(ResourcesAndStorage) {
            d.push_str(", a PodDisruptionBudget and, with `spec.storage`, a PersistentVolumeClaim per pod");
        }
        d.push_str(
            ". Every object is owned by the RedisCluster, so deleting it garbage-collects them. \
             `status.nodes` lists the pods and `status.conditions` reports `Ready` and `Progressing`",
        );
        if self.has(RedisConfig) {
            d.push_str(" and `Degraded`");
        }
        d.push_str(".\n\n");
        if self.has(ClusterMode) {
            d.push_str(
                "With `mode: cluster` the operator forms a Redis Cluster: it introduces the pods with \
                 CLUSTER MEET, splits the 16384 hash slots evenly across the primaries, attaches \
                 `replicasPerPrimary` replicas to each and moves slots to new primaries when `size` \
                 grows. The operator connects to the pods on port 6379, so NetworkPolicies must allow \
                 traffic from its namespace.\n\n",
            );
        }
        d.push_str("## This version\n\n");
        d.push_str(self.notes);
        d.push_str("\n\n## Install modes\n\n");
        if self.has(Webhooks) {
            d.push_str(
                "AllNamespaces only: the CRD's conversion webhook serves the whole cluster, so OLM \
                 installs an operator with a conversion webhook only in an AllNamespaces \
                 OperatorGroup. The operator watches every namespace (`WATCH_NAMESPACE` is empty).\n\n",
            );
        } else {
            d.push_str(
                "All four install modes are supported. The operator reads the namespaces it should watch \
             from the `olm.targetNamespaces` annotation OLM puts on its pod (passed in as \
             `WATCH_NAMESPACE` through the downward API): one namespace (OwnNamespace, \
             SingleNamespace), a comma-separated list (MultiNamespace, one watch per namespace) or \
             empty for every namespace (AllNamespaces). It needs only namespaced permissions, which \
             OLM grants in each target namespace.\n\n",
            );
        }
        if self.has(Webhooks) {
            d.push_str("## Webhooks\n\n");
            d.push_str(&format!(
                "The operator serves two webhooks over TLS on port {WEBHOOK_PORT}, declared in this CSV so \
                 that OLM creates their Service, serving certificate and configuration: the CRD conversion \
                 webhook (`/convert`) between `v1alpha1` and `v1`, and a validating webhook (`/validate`) that \
                 refuses what the operator would refuse (`size` out of range, cluster mode with fewer than \
                 three primaries, a denied `redisConfig` directive) with a message naming the field. \
                 Conversion webhooks need the AllNamespaces install mode.\n\n"
            ));
        }
        d.push_str("## Metrics\n\n");
        d.push_str(&format!(
            "Prometheus metrics are served on port {HTTP_PORT} at `/metrics`: reconcile duration by \
             result, reconcile errors by kind and the number of managed RedisClusters.\n"
        ));
        d
    }

    /// One owned-CRD description per served version (newest first, as upstream CSVs list them).
    fn owned_crds(&self) -> Vec<Value> {
        let v1 = self.owned_crd();
        if !self.has(Webhooks) || self.has(V1Alpha1Unserved) {
            return vec![v1];
        }
        let mut alpha = v1.clone();
        alpha["version"] = json!("v1alpha1");
        alpha["displayName"] = json!("Redis Cluster (v1alpha1, deprecated)");
        alpha["description"] =
            json!("The flat, deprecated shape of a RedisCluster; stored and reconciled as v1.");
        alpha["specDescriptors"] = json!([
            {"path": "replicas", "displayName": "Replicas", "description": "Number of Redis pods (1 to 100).",
             "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:podCount"]},
            {"path": "storageSize", "displayName": "Storage Size", "description": "Capacity of each pod's PersistentVolumeClaim.",
             "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:text"]}
        ]);
        vec![v1, alpha]
    }

    fn owned_crd(&self) -> Value {
        let mut resources = vec![
            json!({"kind": "StatefulSet", "version": "v1", "name": ""}),
            json!({"kind": "Service", "version": "v1", "name": ""}),
            json!({"kind": "ConfigMap", "version": "v1", "name": ""}),
        ];
        if self.has(ResourcesAndStorage) {
            resources.push(json!({"kind": "PodDisruptionBudget", "version": "v1", "name": ""}));
        }
        let mut spec_descriptors = vec![
            json!({"path": "size", "displayName": "Size", "description": "Number of Redis pods (1 to 100).",
                   "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:podCount"]}),
            json!({"path": "image", "displayName": "Image", "description": "Redis container image.",
                   "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:text"]}),
        ];
        if self.has(ResourcesAndStorage) {
            spec_descriptors.extend([
                json!({"path": "resources", "displayName": "Resources", "description": "CPU and memory of the Redis container.",
                       "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:resourceRequirements"]}),
                json!({"path": "storage.size", "displayName": "Storage Size", "description": "Capacity of each pod's PersistentVolumeClaim.",
                       "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:text"]}),
                json!({"path": "storage.storageClassName", "displayName": "Storage Class", "description": "StorageClass of the claims.",
                       "x-descriptors": ["urn:alm:descriptor:io.kubernetes:StorageClass"]}),
                json!({"path": "storage.deleteClaimOnDelete", "displayName": "Delete Claims On Delete", "description": "Delete the claims with the RedisCluster.",
                       "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:booleanSwitch"]}),
            ]);
        }
        if self.has(ClusterMode) {
            spec_descriptors.extend([
                json!({"path": "mode", "displayName": "Mode", "description": "standalone (primary and replicas) or cluster (sharded).",
                       "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:select:standalone", "urn:alm:descriptor:com.tectonic.ui:select:cluster"]}),
                json!({"path": "replicasPerPrimary", "displayName": "Replicas Per Primary", "description": "Cluster mode: replicas attached to each primary.",
                       "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:number"]}),
            ]);
        }
        if self.has(RedisConfig) {
            spec_descriptors.push(json!({"path": "redisConfig", "displayName": "Redis Config",
                "description": "Extra redis.conf lines; directives the operator manages are refused.",
                "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:advanced", "urn:alm:descriptor:com.tectonic.ui:text"]}));
        }
        let status_descriptors = vec![
            json!({"path": "nodes", "displayName": "Nodes", "description": "Names of the Redis pods.",
                   "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:podStatuses"]}),
            json!({"path": "readyReplicas", "displayName": "Ready Replicas", "description": "Redis pods that are ready.",
                   "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:podCount"]}),
            json!({"path": "phase", "displayName": "Phase", "description": "Pending, Progressing, Ready or Degraded.",
                   "x-descriptors": ["urn:alm:descriptor:io.kubernetes.phase"]}),
            json!({"path": "conditions", "displayName": "Conditions", "description": "Ready, Progressing and Degraded conditions.",
                   "x-descriptors": ["urn:alm:descriptor:io.kubernetes.conditions"]}),
        ];
        json!({
            "name": "redisclusters.cache.example.com",
            "version": "v1",
            "kind": "RedisCluster",
            "displayName": "Redis Cluster",
            "description": if self.has(ClusterMode) {
                "A Redis deployment: a primary with replicas, or a sharded Redis Cluster."
            } else {
                "A Redis deployment: a primary with replicas."
            },
            "resources": resources,
            "specDescriptors": spec_descriptors,
            "statusDescriptors": status_descriptors,
        })
    }

    fn install(&self) -> Value {
        let labels = json!({"app.kubernetes.io/name": PACKAGE});
        let field_env =
            |name: &str, path: &str| json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}});
        let mut container = json!({
            "name": "operator",
            "image": self.image(),
            "imagePullPolicy": "IfNotPresent",
            "args": ["run"],
            "env": [
                field_env("WATCH_NAMESPACE", "metadata.annotations['olm.targetNamespaces']"),
                field_env("POD_NAME", "metadata.name"),
                field_env("POD_NAMESPACE", "metadata.namespace"),
                {"name": "OPERATOR_NAME", "value": PACKAGE},
                {"name": "RUST_LOG", "value": "info"}
            ],
            "ports": [{"name": "http", "containerPort": HTTP_PORT, "protocol": "TCP"}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 5, "periodSeconds": 20},
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "initialDelaySeconds": 2, "periodSeconds": 10},
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}},
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true,
                "capabilities": {"drop": ["ALL"]}
            }
        });
        if self.has(Webhooks)
            && let Some(ports) = container["ports"].as_array_mut()
        {
            ports.push(json!({"name": "webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"}));
        }
        json!({
            "strategy": "deployment",
            "spec": {
                "deployments": [{
                    "name": PACKAGE,
                    "label": labels,
                    "spec": {
                        "replicas": 1,
                        // One replica and no leader election: Recreate keeps two from reconciling at once.
                        "strategy": {"type": "Recreate"},
                        "selector": {"matchLabels": labels},
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {
                                "serviceAccountName": PACKAGE,
                                "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                                "terminationGracePeriodSeconds": 10,
                                "containers": [container]
                            }
                        }
                    }
                }],
                "permissions": [{"serviceAccountName": PACKAGE, "rules": rbac::rules_json(self.features)}]
            }
        })
    }

    /// `metadata/annotations.yaml` of this bundle.
    #[must_use]
    pub fn annotations(&self) -> Value {
        json!({"annotations": {
            "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
            "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
            "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
            "operators.operatorframework.io.bundle.package.v1": PACKAGE,
            "operators.operatorframework.io.bundle.channels.v1": self.channels.join(","),
            "operators.operatorframework.io.bundle.channel.default.v1": self.default_channel(),
        }})
    }

    /// Every file of the bundle directory, as (path relative to the bundle, YAML text).
    #[must_use]
    pub fn files(&self) -> Vec<(String, String)> {
        vec![
            (
                format!("manifests/{PACKAGE}.clusterserviceversion.yaml"),
                to_yaml(&self.csv()),
            ),
            (
                "manifests/cache.example.com_redisclusters.yaml".to_owned(),
                to_yaml(&self.crd()),
            ),
            (
                "metadata/annotations.yaml".to_owned(),
                to_yaml(&self.annotations()),
            ),
        ]
    }
}

/// The CSV's `webhookdefinitions`: the conversion webhook for the RedisCluster CRD and the
/// validating webhook, both served by the operator's Deployment on [`WEBHOOK_PORT`].
fn webhook_definitions() -> Value {
    json!([
        {
            "type": "ConversionWebhook",
            "generateName": "credisclusters.cache.example.com",
            "deploymentName": PACKAGE,
            "containerPort": 443,
            "targetPort": WEBHOOK_PORT,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "webhookPath": crate::webhook::CONVERT_PATH,
            "conversionCRDs": ["redisclusters.cache.example.com"]
        },
        {
            "type": "ValidatingAdmissionWebhook",
            "generateName": "vredisclusters.cache.example.com",
            "deploymentName": PACKAGE,
            "containerPort": 443,
            "targetPort": WEBHOOK_PORT,
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "webhookPath": crate::webhook::VALIDATE_PATH,
            "rules": [{
                "apiGroups": ["cache.example.com"],
                "apiVersions": ["v1", "v1alpha1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["redisclusters"]
            }]
        }
    ])
}

fn example(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "cache.example.com/v1", "kind": "RedisCluster", "metadata": {"name": name}, "spec": spec})
}

/// The FBC `olm.package` and `olm.channel` documents (the channel file the catalog is rendered with).
#[must_use]
pub fn channels_yaml() -> String {
    let mut out = String::from(
        "# Channel definitions of the redis-operator package, rendered from src/redis_operator/release.rs\n\
         # (`redis-operator bundles --out bundles/redis-operator`). Bundles are in the version directories.\n",
    );
    let package = json!({
        "schema": "olm.package",
        "name": PACKAGE,
        "defaultChannel": "stable",
        "description": "Runs Redis on Kubernetes, standalone or as a sharded Redis Cluster.",
        "icon": {"base64data": BASE64.encode(ICON_SVG.as_bytes()), "mediatype": "image/svg+xml"},
    });
    out.push_str("---\n");
    out.push_str(&to_yaml(&package));
    for channel in ["alpha", "candidate", "stable"] {
        let entries: Vec<Value> = RELEASES
            .iter()
            .filter(|r| r.channels.contains(&channel))
            .map(|r| {
                let mut e = serde_json::Map::new();
                e.insert("name".into(), json!(csv_name(r.version)));
                if let Some(rep) = r.replaces {
                    e.insert("replaces".into(), json!(csv_name(rep)));
                }
                if !r.skips.is_empty() {
                    e.insert(
                        "skips".into(),
                        json!(r.skips.iter().map(|s| csv_name(s)).collect::<Vec<_>>()),
                    );
                }
                if let Some(range) = r.skip_range {
                    e.insert("skipRange".into(), json!(range));
                }
                Value::Object(e)
            })
            .collect();
        out.push_str("---\n");
        out.push_str(&to_yaml(
            &json!({"schema": "olm.channel", "package": PACKAGE, "name": channel, "entries": entries}),
        ));
    }
    out
}

/// The operator's icon: three stacked red slabs (Redis' layered look) on a dark tile.
pub const ICON_SVG: &str = concat!(
    r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">"##,
    r##"<rect width="64" height="64" rx="12" fill="#1f2937"/>"##,
    r##"<g stroke="#fff" stroke-width="1.5">"##,
    r##"<path d="M32 48 10 39l22-9 22 9z" fill="#991b1b"/>"##,
    r##"<path d="M32 38 10 29l22-9 22 9z" fill="#dc2626"/>"##,
    r##"<path d="M32 28 10 19l22-9 22 9z" fill="#f87171"/>"##,
    r##"</g><circle cx="32" cy="19" r="3" fill="#fff"/></svg>"##
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_replaces_and_skips_target_is_an_earlier_release() {
        for (i, r) in RELEASES.iter().enumerate() {
            for target in r.replaces.iter().chain(r.skips) {
                let pos = RELEASES.iter().position(|x| x.version == *target);
                assert!(pos.is_some_and(|p| p < i), "{} points at {target}", r.version);
            }
        }
    }

    #[test]
    fn the_graph_uses_replaces_skips_and_a_skip_range() {
        assert!(RELEASES.iter().any(|r| r.replaces.is_some()));
        assert!(RELEASES.iter().any(|r| r.skips.contains(&"0.2.0")));
        assert_eq!(find("1.0.0").and_then(|r| r.skip_range), Some(">=0.2.0 <1.0.0"));
    }

    #[test]
    fn stable_holds_only_non_prerelease_versions_that_were_not_withdrawn() {
        let stable: Vec<_> = RELEASES
            .iter()
            .filter(|r| r.channels.contains(&"stable"))
            .map(|r| r.version)
            .collect();
        assert_eq!(stable, ["0.2.1", "0.3.0", "1.0.0"]);
    }

    #[test]
    fn older_crds_lack_the_fields_their_release_did_not_have() {
        let props = |v: &str| {
            let crd = find(v).expect("release").crd();
            crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                .as_object()
                .expect("props")
                .keys()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(props("0.1.0"), ["image", "size"]);
        assert_eq!(props("0.2.1"), ["image", "resources", "size", "storage"]);
        assert!(props("0.3.0").contains(&"redisConfig".to_owned()));
        assert!(!props("0.3.0").contains(&"mode".to_owned()));
        assert!(props("1.0.0").contains(&"mode".to_owned()));
    }

    #[test]
    fn the_latest_crd_is_exactly_the_generated_one() {
        let latest = RELEASES.last().expect("releases");
        assert_eq!(latest.crd(), crate::crd::multi_version_crd(false));
        // 1.0.0 was the last single-version CRD: the generated v1 schema as is.
        assert_eq!(
            find("1.0.0").expect("1.0.0").crd(),
            serde_json::to_value(RedisCluster::crd()).expect("crd")
        );
    }

    #[test]
    fn webhook_releases_serve_v1alpha1_then_stop_with_v1_always_stored_and_converted() {
        let versions = |v: &str| {
            let crd = find(v).expect("release").crd();
            assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook", "{v}");
            crd["spec"]["versions"]
                .as_array()
                .expect("versions")
                .iter()
                .map(|x| {
                    (
                        x["name"].as_str().unwrap_or_default().to_owned(),
                        x["served"] == true,
                        x["storage"] == true,
                    )
                })
                .collect::<Vec<_>>()
        };
        let (a, b) = (
            ("v1alpha1".to_owned(), true, false),
            ("v1".to_owned(), true, true),
        );
        assert_eq!(versions("1.1.0"), [a, b.clone()]);
        assert_eq!(versions("1.2.0"), [("v1alpha1".to_owned(), false, false), b]);
        let csv = find("1.1.0").expect("1.1.0").csv();
        let hooks = csv["spec"]["webhookdefinitions"]
            .as_array()
            .expect("webhookdefinitions");
        assert_eq!(hooks[0]["type"], "ConversionWebhook");
        assert_eq!(
            hooks[0]["conversionCRDs"],
            json!(["redisclusters.cache.example.com"])
        );
        assert_eq!(hooks[0]["webhookPath"], "/convert");
        assert_eq!(hooks[1]["type"], "ValidatingAdmissionWebhook");
        assert_eq!(hooks[1]["webhookPath"], "/validate");
        assert_eq!(hooks[1]["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
        // The webhooks' CSV fields decode with olm-rs's CSV type in tests/it/redis_bundles.rs.
        let owned = csv["spec"]["customresourcedefinitions"]["owned"]
            .as_array()
            .expect("owned");
        assert_eq!(owned.len(), 2);
        assert!(
            find("1.0.0").expect("1.0.0").csv()["spec"]
                .get("webhookdefinitions")
                .is_none()
        );
        assert_eq!(find("1.2.0").and_then(|r| r.replaces), Some("1.1.0"));
        assert_eq!(find("1.1.0").and_then(|r| r.replaces), Some("1.0.0"));
    }

    #[test]
    fn the_csv_points_olm_at_the_target_namespaces_through_the_downward_api() {
        let csv = find("0.1.0").expect("release").csv();
        let env = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"]
            [0]["env"];
        assert_eq!(env[0]["name"], "WATCH_NAMESPACE");
        assert_eq!(
            env[0]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['olm.targetNamespaces']"
        );
    }
}
