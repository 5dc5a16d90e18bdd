//! desired: the objects a `RedisCluster` should own, computed from its spec alone.
//!
//! This is the `decide` step of the reconcile pipeline: a pure function from the custom resource to
//! the ConfigMap (redis.conf plus the start script), the headless Service (stable pod DNS names for
//! replication and cluster gossip), the client Service, the StatefulSet and the PodDisruptionBudget.
//! Every object carries the selector labels and a controller owner reference to the RedisCluster, so
//! deleting the RedisCluster garbage-collects them. An invalid spec yields an error and no objects:
//! the operator then reports `Degraded` and applies nothing, leaving the running cluster untouched.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        apps::v1::{StatefulSet, StatefulSetSpec},
        core::v1::{
            ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource, EnvVar,
            EnvVarSource, ExecAction, ObjectFieldSelector, PersistentVolumeClaim, PersistentVolumeClaimSpec,
            PodSpec, PodTemplateSpec, Probe, Service, ServicePort, ServiceSpec, Volume, VolumeMount,
            VolumeResourceRequirements,
        },
        policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec},
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference},
        util::intstr::IntOrString,
    },
};
use kube::{Resource, ResourceExt};

use super::{
    config::{self, CLUSTER_BUS_PORT, DATA_DIR, REDIS_PORT},
    crd::{MAX_SIZE, Mode, RedisCluster, RedisClusterSpec, selector_labels},
};

/// Why no objects can be built from a spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A `redisConfig` line was refused.
    #[error(transparent)]
    RedisConfig(#[from] config::ConfigError),
    /// `size` out of range (the schema normally prevents this).
    #[error("spec.size {size} is out of range; set it between 1 and {MAX_SIZE}")]
    Size {
        /// The size given.
        size: i32,
    },
    /// Cluster mode with a size that does not form whole groups of at least three primaries.
    #[error(
        "spec.size {size} does not fit cluster mode with replicasPerPrimary {rpp}: size must be a multiple of {} and at least {}",
        rpp + 1, 3 * (rpp + 1)
    )]
    ClusterSize {
        /// The size given.
        size: i32,
        /// replicasPerPrimary.
        rpp: i32,
    },
    /// Cluster mode asked to remove pods: their primaries' hash slots would be lost.
    #[error(
        "spec.size {size} is smaller than the {pods} pods of this Redis Cluster: cluster mode cannot shrink yet \
         (the hash slots served by the removed pods would be lost); set spec.size back to {pods}"
    )]
    ClusterShrink {
        /// The size asked for.
        size: i32,
        /// The pods that exist.
        pods: usize,
    },
    /// The object has no name or namespace (it was not read from the API).
    #[error("the RedisCluster has no {0}; it must be read from the API server")]
    Metadata(&'static str),
}

impl SpecError {
    /// The condition reason for this error.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::RedisConfig(_) => "InvalidRedisConfig",
            Self::Size { .. } | Self::ClusterSize { .. } => "InvalidSize",
            Self::ClusterShrink { .. } => "ShrinkNotSupported",
            Self::Metadata(_) => "InvalidObject",
        }
    }
}

/// The objects one RedisCluster owns.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    /// redis.conf and the start script.
    pub config_map: ConfigMap,
    /// Headless Service `<name>-headless` for pod DNS.
    pub headless_service: Service,
    /// Client Service `<name>`.
    pub client_service: Service,
    /// The Redis pods.
    pub stateful_set: StatefulSet,
    /// Keeps a quorum (or the primary) up during voluntary disruptions.
    pub pdb: PodDisruptionBudget,
}

/// Start script: in standalone mode every pod but ordinal 0 replicates pod 0 through the headless Service.
const START_SH: &str = r#"#!/bin/sh
set -eu
cp /config/redis.conf /tmp/redis.conf
ordinal="${POD_NAME##*-}"
if [ "$MODE" = standalone ] && [ "$ordinal" != 0 ]; then
  echo "replicaof ${CLUSTER_NAME}-0.${CLUSTER_NAME}-headless 6379" >> /tmp/redis.conf
fi
exec redis-server /tmp/redis.conf
"#;

/// Builds every object for `rc`.
///
/// # Errors
/// An invalid spec (see [`SpecError`]); nothing should be applied then.
pub fn build(rc: &RedisCluster) -> Result<Desired, SpecError> {
    let name = rc
        .metadata
        .name
        .clone()
        .ok_or(SpecError::Metadata("metadata.name"))?;
    let namespace = rc
        .metadata
        .namespace
        .clone()
        .ok_or(SpecError::Metadata("metadata.namespace"))?;
    let spec = &rc.spec;
    if !(1..=MAX_SIZE).contains(&spec.size) {
        return Err(SpecError::Size { size: spec.size });
    }
    if spec.mode == Mode::Cluster {
        let rpp = spec.replicas_per_primary_or_default().max(0);
        if spec.size % (rpp + 1) != 0 || spec.size < 3 * (rpp + 1) {
            return Err(SpecError::ClusterSize { size: spec.size, rpp });
        }
    }
    let redis_conf = config::render_redis_conf(spec)?;
    let labels = selector_labels(&name);
    let meta = |n: String| ObjectMeta {
        name: Some(n),
        namespace: Some(namespace.clone()),
        labels: Some(labels.clone()),
        owner_references: rc.controller_owner_ref(&()).map(|o| vec![o]),
        ..ObjectMeta::default()
    };
    let headless = format!("{name}-headless");

    let config_map = ConfigMap {
        metadata: meta(format!("{name}-config")),
        data: Some(BTreeMap::from([
            ("redis.conf".to_owned(), redis_conf),
            ("start.sh".to_owned(), START_SH.to_owned()),
        ])),
        ..ConfigMap::default()
    };
    let redis_port = ServicePort {
        name: Some("redis".into()),
        port: i32::from(REDIS_PORT),
        target_port: Some(IntOrString::String("redis".into())),
        ..ServicePort::default()
    };
    let mut headless_ports = vec![redis_port.clone()];
    if spec.mode == Mode::Cluster {
        headless_ports.push(ServicePort {
            name: Some("cluster-bus".into()),
            port: i32::from(CLUSTER_BUS_PORT),
            target_port: Some(IntOrString::String("cluster-bus".into())),
            ..ServicePort::default()
        });
    }
    let headless_service = Service {
        metadata: meta(headless.clone()),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            // Peers must resolve each other before they are ready, or replication never starts.
            publish_not_ready_addresses: Some(true),
            selector: Some(labels.clone()),
            ports: Some(headless_ports),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    let client_service = Service {
        metadata: meta(name.clone()),
        spec: Some(ServiceSpec {
            selector: Some(labels.clone()),
            ports: Some(vec![redis_port]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };

    let probe = |initial: i32, command: &str| Probe {
        exec: Some(ExecAction {
            command: Some(vec!["sh".into(), "-c".into(), command.into()]),
        }),
        initial_delay_seconds: Some(initial),
        period_seconds: Some(10),
        timeout_seconds: Some(5),
        failure_threshold: Some(3),
        ..Probe::default()
    };
    let mut ports = vec![ContainerPort {
        name: Some("redis".into()),
        container_port: i32::from(REDIS_PORT),
        ..ContainerPort::default()
    }];
    if spec.mode == Mode::Cluster {
        ports.push(ContainerPort {
            name: Some("cluster-bus".into()),
            container_port: i32::from(CLUSTER_BUS_PORT),
            ..ContainerPort::default()
        });
    }
    let env_field = |n: &str, path: &str| EnvVar {
        name: n.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    };
    let env_value = |n: &str, v: &str| EnvVar {
        name: n.into(),
        value: Some(v.into()),
        ..EnvVar::default()
    };
    let mode = match spec.mode {
        Mode::Standalone => "standalone",
        Mode::Cluster => "cluster",
    };
    let container = Container {
        name: "redis".into(),
        image: Some(spec.image_or_default().to_owned()),
        command: Some(vec!["sh".into(), "/config/start.sh".into()]),
        env: Some(vec![
            env_field("POD_NAME", "metadata.name"),
            env_value("CLUSTER_NAME", &name),
            env_value("MODE", mode),
        ]),
        ports: Some(ports),
        readiness_probe: Some(probe(5, "redis-cli -p 6379 ping | grep -q PONG")),
        liveness_probe: Some(probe(20, "redis-cli -p 6379 ping")),
        resources: spec.resources.clone(),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "config".into(),
                mount_path: "/config".into(),
                ..VolumeMount::default()
            },
            VolumeMount {
                name: "data".into(),
                mount_path: DATA_DIR.into(),
                ..VolumeMount::default()
            },
        ]),
        ..Container::default()
    };
    let mut volumes = vec![Volume {
        name: "config".into(),
        config_map: Some(ConfigMapVolumeSource {
            name: format!("{name}-config"),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    }];
    let claims = spec.storage.as_ref().map(|s| {
        vec![PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some("data".into()),
                labels: Some(labels.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".into()]),
                storage_class_name: s.storage_class_name.clone(),
                resources: Some(VolumeResourceRequirements {
                    requests: Some(BTreeMap::from([("storage".to_owned(), Quantity(s.size.clone()))])),
                    ..VolumeResourceRequirements::default()
                }),
                ..PersistentVolumeClaimSpec::default()
            }),
            ..PersistentVolumeClaim::default()
        }]
    });
    if claims.is_none() {
        volumes.push(Volume {
            name: "data".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        });
    }
    let stateful_set = StatefulSet {
        metadata: meta(name.clone()),
        spec: StatefulSetSpec {
            replicas: Some(spec.size),
            service_name: Some(headless),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            // Cluster nodes find each other by gossip, so they can all start at once.
            pod_management_policy: Some(
                if spec.mode == Mode::Cluster {
                    "Parallel"
                } else {
                    "OrderedReady"
                }
                .into(),
            ),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.clone()),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    volumes: Some(volumes),
                    ..PodSpec::default()
                }),
            },
            volume_claim_templates: claims,
            ..StatefulSetSpec::default()
        },
        ..StatefulSet::default()
    };
    // One pod may be down voluntarily at a time; a single pod may be evicted (nothing to protect).
    let pdb = PodDisruptionBudget {
        metadata: meta(name.clone()),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some(labels),
                ..LabelSelector::default()
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        ..PodDisruptionBudget::default()
    };
    Ok(Desired {
        config_map,
        headless_service,
        client_service,
        stateful_set,
        pdb,
    })
}

/// Refuses to shrink a cluster-mode RedisCluster: when pods with an ordinal at or above `spec.size`
/// exist, applying the smaller StatefulSet would delete them, and with them the hash slots their
/// primaries serve. Standalone mode shrinks freely (replicas hold no unique data).
///
/// # Errors
/// [`SpecError::ClusterShrink`] with the pod count to go back to.
pub fn check_cluster_shrink(spec: &RedisClusterSpec, pod_names: &[String]) -> Result<(), SpecError> {
    if spec.mode != Mode::Cluster {
        return Ok(());
    }
    let ordinals = pod_names
        .iter()
        .filter_map(|n| n.rsplit('-').next().and_then(|o| o.parse::<i64>().ok()));
    match ordinals.max() {
        Some(highest) if highest >= i64::from(spec.size) => Err(SpecError::ClusterShrink {
            size: spec.size,
            pods: usize::try_from(highest + 1).unwrap_or(usize::MAX),
        }),
        _ => Ok(()),
    }
}

/// The owner reference every built object carries, for tests and the e2e checks.
#[must_use]
pub fn owner_of(rc: &RedisCluster) -> Option<OwnerReference> {
    rc.controller_owner_ref(&())
}

/// Name of the PersistentVolumeClaims the StatefulSet creates for `rc` (`data-<name>-<ordinal>`).
#[must_use]
pub fn claim_prefix(rc: &RedisCluster) -> String {
    format!("data-{}-", rc.name_any())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis_operator::crd::RedisClusterSpec;

    fn rc(spec: serde_json::Value) -> RedisCluster {
        let spec: RedisClusterSpec = serde_json::from_value(spec).expect("spec");
        let mut rc = RedisCluster::new("example-rediscluster", spec);
        rc.metadata.namespace = Some("redis".into());
        rc.metadata.uid = Some("uid-1".into());
        rc
    }

    #[test]
    fn cluster_mode_refuses_to_drop_pods_but_standalone_mode_may() {
        let pods: Vec<String> = (0..6).map(|i| format!("example-rediscluster-{i}")).collect();
        let mut r = rc(serde_json::json!({"size": 3, "mode": "cluster", "replicasPerPrimary": 0}));
        let err = check_cluster_shrink(&r.spec, &pods).expect_err("shrink refused");
        assert_eq!(err, SpecError::ClusterShrink { size: 3, pods: 6 });
        assert_eq!(err.reason(), "ShrinkNotSupported");
        assert!(err.to_string().contains("set spec.size back to 6"), "{err}");
        r.spec.size = 6;
        assert_eq!(check_cluster_shrink(&r.spec, &pods), Ok(()));
        r.spec.size = 9;
        assert_eq!(check_cluster_shrink(&r.spec, &pods), Ok(()), "growing is fine");
        r.spec.size = 3;
        r.spec.mode = Mode::Standalone;
        assert_eq!(check_cluster_shrink(&r.spec, &pods), Ok(()));
    }

    #[test]
    fn a_size_3_cluster_gets_a_3_replica_statefulset_and_two_services_all_owned() {
        let d = build(&rc(serde_json::json!({"size": 3}))).expect("build");
        let sts = &d.stateful_set.spec;
        assert_eq!(sts.replicas, Some(3));
        assert_eq!(sts.service_name.as_deref(), Some("example-rediscluster-headless"));
        assert_eq!(
            d.headless_service
                .spec
                .as_ref()
                .and_then(|s| s.cluster_ip.as_deref()),
            Some("None")
        );
        assert_eq!(
            d.client_service.metadata.name.as_deref(),
            Some("example-rediscluster")
        );
        for meta in [
            &d.config_map.metadata,
            &d.headless_service.metadata,
            &d.client_service.metadata,
            &d.stateful_set.metadata,
            &d.pdb.metadata,
        ] {
            let owners = meta.owner_references.as_ref().expect("owner");
            assert_eq!(owners[0].kind, "RedisCluster");
            assert_eq!(owners[0].controller, Some(true));
        }
        let pod = sts.template.spec.as_ref().expect("pod");
        assert!(pod.containers[0].readiness_probe.is_some() && pod.containers[0].liveness_probe.is_some());
        assert!(
            sts.volume_claim_templates.is_none(),
            "no storage means an emptyDir"
        );
    }

    #[test]
    fn storage_adds_a_claim_template_with_the_requested_size_and_class() {
        let d = build(&rc(
            serde_json::json!({"size": 1, "storage": {"size": "2Gi", "storageClassName": "fast"}}),
        ))
        .expect("build");
        let claims = d.stateful_set.spec.volume_claim_templates.expect("claims");
        let spec = claims[0].spec.as_ref().expect("claim spec");
        assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
        let req = spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .expect("requests");
        assert_eq!(req["storage"], Quantity("2Gi".into()));
    }

    #[test]
    fn a_denied_redis_config_line_builds_nothing_and_names_the_line() {
        let err = build(&rc(
            serde_json::json!({"size": 3, "redisConfig": "maxmemory 1mb\nloadmodule /x.so"}),
        ))
        .expect_err("denied");
        assert_eq!(err.reason(), "InvalidRedisConfig");
        assert!(err.to_string().contains("line 2 `loadmodule /x.so`"), "{err}");
    }

    #[test]
    fn cluster_mode_needs_whole_groups_of_at_least_three_primaries() {
        let err = build(&rc(serde_json::json!({"size": 4, "mode": "cluster"}))).expect_err("4 nodes");
        assert_eq!(err, SpecError::ClusterSize { size: 4, rpp: 1 });
        let d = build(&rc(serde_json::json!({"size": 6, "mode": "cluster"}))).expect("6 nodes");
        let conf = &d.config_map.data.as_ref().expect("data")["redis.conf"];
        assert!(conf.contains("cluster-enabled yes"));
        let ports = d.headless_service.spec.and_then(|s| s.ports).expect("ports");
        assert!(ports.iter().any(|p| p.port == 16379));
    }

    #[test]
    fn the_resources_of_the_spec_reach_the_container() {
        let d = build(&rc(
            serde_json::json!({"size": 1, "resources": {"limits": {"memory": "256Mi"}}}),
        ))
        .expect("build");
        let pod = d.stateful_set.spec.template.spec.expect("pod");
        let limits = pod.containers[0]
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .expect("limits");
        assert_eq!(limits["memory"], Quantity("256Mi".into()));
    }
}
