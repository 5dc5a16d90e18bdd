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
        "spec.size {size} does not fit cluster mode with replicasPerPrimary {rpp}: size must be a multiple of {} and at least {} \
         (a Redis Cluster needs 3 primaries, because a failover must be agreed by a majority of primaries)",
        rpp + 1, 3 * (rpp + 1)
    )]
    ClusterSize {
        /// The size given.
        size: i32,
        /// replicasPerPrimary.
        rpp: i32,
    },
    /// Cluster mode asked to shrink below the fewest pods a Redis Cluster can run on.
    #[error(
        "spec.size {size} would shrink this Redis Cluster from {pods} pods below the minimum of {minimum} for cluster mode \
         with replicasPerPrimary {rpp} (3 primaries: a failover must be agreed by a majority of primaries, which \
         fewer than 3 cannot keep after losing one); the {pods} pods are kept; set spec.size to {minimum} or more"
    )]
    ShrinkBelowMinimum {
        /// The size asked for.
        size: i32,
        /// The pods that exist.
        pods: usize,
        /// The fewest pods cluster mode allows.
        minimum: i32,
        /// replicasPerPrimary.
        rpp: i32,
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
            Self::ShrinkBelowMinimum { .. } => "ShrinkBelowMinimum",
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

/// The rules a spec must meet before anything is built from it: `size` in range, cluster mode
/// with whole groups of at least three primaries, and no refused `redisConfig` line. The
/// validating webhook ([`crate::validate`]) refuses what fails here, with the same message.
///
/// # Errors
/// The first rule the spec breaks.
pub fn check_spec(spec: &RedisClusterSpec) -> Result<(), SpecError> {
    if !(1..=MAX_SIZE).contains(&spec.size) {
        return Err(SpecError::Size { size: spec.size });
    }
    if spec.mode == Mode::Cluster {
        let rpp = spec.replicas_per_primary_or_default().max(0);
        if spec.size % (rpp + 1) != 0 || spec.size < 3 * (rpp + 1) {
            return Err(SpecError::ClusterSize { size: spec.size, rpp });
        }
    }
    config::validate_redis_config(spec.redis_config.as_deref().unwrap_or_default())?;
    Ok(())
}

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
    check_spec(spec)?;
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

/// A cluster-mode shrink in progress: the pods from ordinal `to` up to `from - 1` must leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shrink {
    /// Pods that exist (highest ordinal + 1); the StatefulSet keeps this many until drained.
    pub from: usize,
    /// Pods wanted (`spec.size`).
    pub to: usize,
}

/// Whether a cluster-mode RedisCluster is shrinking: pods with an ordinal at or above `spec.size`
/// exist. Their primaries serve hash slots, so the StatefulSet may only lose them after the slots
/// are drained (see `cluster_mode::shrink`); until then it keeps `from` replicas. Standalone mode
/// shrinks at once (replicas hold no unique data) and gives `None`. A StatefulSet that already
/// wants at most `spec.size` replicas (`statefulset_replicas`) was lowered after its drain: the
/// pods above are on their way out and nothing is left to drain.
///
/// # Errors
/// [`SpecError::ShrinkBelowMinimum`] when `spec.size` is below three groups of
/// `replicasPerPrimary + 1`: nothing is applied and no pod is removed.
pub fn cluster_shrink(
    spec: &RedisClusterSpec,
    pod_names: &[String],
    statefulset_replicas: Option<i32>,
) -> Result<Option<Shrink>, SpecError> {
    if spec.mode != Mode::Cluster {
        return Ok(None);
    }
    let highest = pod_names
        .iter()
        .filter_map(|n| n.rsplit('-').next().and_then(|o| o.parse::<usize>().ok()))
        .max();
    let to = usize::try_from(spec.size.max(0)).unwrap_or(0);
    let Some(from) = highest.map(|h| h.saturating_add(1)).filter(|from| *from > to) else {
        return Ok(None);
    };
    let rpp = spec.replicas_per_primary_or_default().max(0);
    let minimum = 3 * (rpp + 1);
    if spec.size < minimum {
        return Err(SpecError::ShrinkBelowMinimum {
            size: spec.size,
            pods: from,
            minimum,
            rpp,
        });
    }
    if statefulset_replicas.is_some_and(|r| r <= spec.size) {
        return Ok(None);
    }
    Ok(Some(Shrink { from, to }))
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
    use crate::crd::RedisClusterSpec;

    fn rc(spec: serde_json::Value) -> RedisCluster {
        let spec: RedisClusterSpec = serde_json::from_value(spec).expect("spec");
        let mut rc = RedisCluster::new("example-rediscluster", spec);
        rc.metadata.namespace = Some("redis".into());
        rc.metadata.uid = Some("uid-1".into());
        rc
    }

    #[test]
    fn a_cluster_mode_shrink_is_planned_from_the_highest_pod_and_refused_only_below_three_primaries() {
        let pods: Vec<String> = (0..8).map(|i| format!("example-rediscluster-{i}")).collect();
        let mut r = rc(serde_json::json!({"size": 6, "mode": "cluster", "replicasPerPrimary": 1}));
        assert_eq!(
            cluster_shrink(&r.spec, &pods, Some(8)),
            Ok(Some(Shrink { from: 8, to: 6 }))
        );
        r.spec.size = 8;
        assert_eq!(
            cluster_shrink(&r.spec, &pods, Some(8)),
            Ok(None),
            "nothing to drain"
        );
        r.spec.size = 10;
        assert_eq!(
            cluster_shrink(&r.spec, &pods, Some(8)),
            Ok(None),
            "growing is fine"
        );

        r.spec.size = 6;
        assert_eq!(
            cluster_shrink(&r.spec, &pods, Some(6)),
            Ok(None),
            "a StatefulSet already lowered was drained before"
        );
        r.spec.size = 4;
        let err = cluster_shrink(&r.spec, &pods, Some(8)).expect_err("two primaries are too few");
        assert_eq!(
            err,
            SpecError::ShrinkBelowMinimum {
                size: 4,
                pods: 8,
                minimum: 6,
                rpp: 1
            }
        );
        assert_eq!(err.reason(), "ShrinkBelowMinimum");
        let text = err.to_string();
        assert!(
            text.contains("minimum of 6")
                && text.contains("majority of primaries")
                && text.contains("set spec.size to 6"),
            "{text}"
        );

        r.spec.mode = Mode::Standalone;
        assert_eq!(
            cluster_shrink(&r.spec, &pods, Some(8)),
            Ok(None),
            "standalone shrinks at once"
        );
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
