//! status: the `RedisCluster` status computed from what the operator observed.
//!
//! Pure: pods, the outcome of building the desired objects and of cluster formation, the previous
//! conditions and the current time come in; the status goes out. The rule:
//!
//! - `nodes` are the pod names ordered by ordinal; `readyReplicas` counts ready pods that are not
//!   being deleted.
//! - An invalid spec gives `Degraded=True` with the error's reason and message (which names the field
//!   and the line) and phase `Degraded`; nothing else is judged, since nothing was applied.
//! - Otherwise `Ready=True` once `size` pods are ready (and, in cluster mode, formation succeeded);
//!   `Progressing=True` while fewer are; a cluster formation error is `Degraded=True` with reason
//!   `ClusterFormationFailed`.
//! - Phase: `Degraded` > `Ready` > `Progressing` (some pods exist) > `Pending`.
//! - `lastTransitionTime` only changes when a condition's status flips, and `observedGeneration` is
//!   the generation that was reconciled.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Condition, apimachinery::pkg::apis::meta::v1::Time};

use super::crd::{RedisCluster, RedisClusterStatus, conditions};

/// A pod as the status needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedPod {
    /// Pod name (`<cluster>-<ordinal>`).
    pub name: String,
    /// The pod's Ready condition is True.
    pub ready: bool,
    /// The pod has a deletion timestamp.
    pub terminating: bool,
}

/// What the reconcile learnt this round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The spec was refused: (reason, message).
    InvalidSpec(String, String),
    /// Objects applied; `cluster` is the cluster-mode result (`None` in standalone mode or while
    /// pods are not all ready, `Some(Err(message))` when formation failed).
    Applied {
        /// Cluster formation result.
        cluster: Option<Result<(), String>>,
    },
}

fn ordinal(name: &str) -> u32 {
    name.rsplit('-')
        .next()
        .and_then(|o| o.parse().ok())
        .unwrap_or(u32::MAX)
}

/// Computes the new status.
#[must_use]
pub fn compute(rc: &RedisCluster, pods: &[ObservedPod], outcome: &Outcome, now: &Time) -> RedisClusterStatus {
    let previous = rc
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let generation = rc.metadata.generation;
    let mut sorted: Vec<&ObservedPod> = pods.iter().collect();
    sorted.sort_by_key(|p| (ordinal(&p.name), p.name.clone()));
    let nodes: Vec<String> = sorted.iter().map(|p| p.name.clone()).collect();
    let ready = i32::try_from(pods.iter().filter(|p| p.ready && !p.terminating).count()).unwrap_or(i32::MAX);
    let size = rc.spec.size;

    let (ready_c, progressing_c, degraded_c, phase) = match outcome {
        Outcome::InvalidSpec(reason, message) => (
            (
                false,
                "InvalidSpec",
                "the spec was not applied; see the Degraded condition".to_owned(),
            ),
            (false, "InvalidSpec", "waiting for a valid spec".to_owned()),
            (true, reason.as_str(), message.clone()),
            "Degraded",
        ),
        Outcome::Applied { cluster } => {
            let all_ready = ready == size && pods.len() == usize::try_from(size).unwrap_or(0);
            let cluster_err = match cluster {
                Some(Err(e)) => Some(e.clone()),
                _ => None,
            };
            let cluster_ok = matches!(cluster, Some(Ok(()))) || rc.spec.mode == super::crd::Mode::Standalone;
            let is_ready = all_ready && cluster_ok && cluster_err.is_none();
            let degraded = match &cluster_err {
                Some(e) => (true, "ClusterFormationFailed", e.clone()),
                None => (false, "AsExpected", "the spec is valid and applied".to_owned()),
            };
            let phase = if cluster_err.is_some() {
                "Degraded"
            } else if is_ready {
                "Ready"
            } else if pods.is_empty() {
                "Pending"
            } else {
                "Progressing"
            };
            (
                if is_ready {
                    (
                        true,
                        "AllNodesReady",
                        format!("{ready}/{size} Redis pods are ready"),
                    )
                } else {
                    (
                        false,
                        "NodesNotReady",
                        format!("{ready}/{size} Redis pods are ready"),
                    )
                },
                if is_ready || cluster_err.is_some() {
                    (
                        false,
                        "Reconciled",
                        format!("{size} Redis pods are running the current spec"),
                    )
                } else {
                    (
                        true,
                        "Scaling",
                        format!("waiting for {size} Redis pods, {ready} ready"),
                    )
                },
                degraded,
                phase,
            )
        }
    };
    let make = |type_: &str, (on, reason, message): (bool, &str, String)| {
        let status = if on { "True" } else { "False" };
        let last = previous
            .iter()
            .find(|c| c.type_ == type_ && c.status == status)
            .map_or_else(|| now.clone(), |c| c.last_transition_time.clone());
        Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            observed_generation: generation,
            last_transition_time: last,
        }
    };
    RedisClusterStatus {
        nodes,
        ready_replicas: ready,
        phase: Some(phase.to_owned()),
        conditions: vec![
            make(conditions::READY, ready_c),
            make(conditions::PROGRESSING, progressing_c),
            make(conditions::DEGRADED, degraded_c),
        ],
        observed_generation: generation,
    }
}

/// Whether two statuses differ in anything but condition timestamps (to skip no-op status patches).
#[must_use]
pub fn differs(a: &RedisClusterStatus, b: &RedisClusterStatus) -> bool {
    let strip = |s: &RedisClusterStatus| {
        let mut s = s.clone();
        for c in &mut s.conditions {
            c.last_transition_time = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        }
        s
    };
    strip(a) != strip(b)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::redis_operator::crd::RedisClusterSpec;

    fn rc(size: i32) -> RedisCluster {
        let spec: RedisClusterSpec = serde_json::from_value(serde_json::json!({"size": size})).expect("spec");
        let mut rc = RedisCluster::new("r", spec);
        rc.metadata.generation = Some(4);
        rc
    }
    fn pod(name: &str, ready: bool) -> ObservedPod {
        ObservedPod {
            name: name.into(),
            ready,
            terminating: false,
        }
    }
    fn t(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).expect("time"))
    }
    fn cond<'a>(s: &'a RedisClusterStatus, type_: &str) -> &'a Condition {
        s.conditions.iter().find(|c| c.type_ == type_).expect("condition")
    }
    const APPLIED: Outcome = Outcome::Applied { cluster: None };

    #[test]
    fn nodes_are_listed_in_ordinal_order_and_all_ready_means_ready() {
        let pods = [pod("r-10", true), pod("r-2", true), pod("r-0", true)];
        let s = compute(&rc(3), &pods, &APPLIED, &t(100));
        assert_eq!(s.nodes, ["r-0", "r-2", "r-10"]);
        assert_eq!(s.ready_replicas, 3);
        assert_eq!(s.phase.as_deref(), Some("Ready"));
        assert_eq!(cond(&s, "Ready").status, "True");
        assert_eq!(cond(&s, "Progressing").status, "False");
        assert_eq!(s.observed_generation, Some(4));
    }

    #[test]
    fn fewer_ready_pods_than_size_is_progressing_and_no_pods_is_pending() {
        let s = compute(&rc(5), &[pod("r-0", true), pod("r-1", false)], &APPLIED, &t(1));
        assert_eq!(s.phase.as_deref(), Some("Progressing"));
        assert_eq!(
            cond(&s, "Progressing").message,
            "waiting for 5 Redis pods, 1 ready"
        );
        assert_eq!(
            compute(&rc(5), &[], &APPLIED, &t(1)).phase.as_deref(),
            Some("Pending")
        );
    }

    #[test]
    fn an_invalid_spec_is_degraded_with_the_reason_and_message_given() {
        let out = Outcome::InvalidSpec("InvalidRedisConfig".into(), "line 2 `dir /x`".into());
        let s = compute(&rc(3), &[pod("r-0", true)], &out, &t(1));
        assert_eq!(s.phase.as_deref(), Some("Degraded"));
        let d = cond(&s, "Degraded");
        assert_eq!(
            (d.status.as_str(), d.reason.as_str(), d.message.as_str()),
            ("True", "InvalidRedisConfig", "line 2 `dir /x`")
        );
    }

    #[test]
    fn a_failed_cluster_formation_is_degraded_even_with_all_pods_ready() {
        let out = Outcome::Applied {
            cluster: Some(Err("timed out".into())),
        };
        let s = compute(&rc(1), &[pod("r-0", true)], &out, &t(1));
        assert_eq!(cond(&s, "Degraded").reason, "ClusterFormationFailed");
        assert_eq!(s.phase.as_deref(), Some("Degraded"));
    }

    #[test]
    fn transition_time_is_kept_until_the_status_flips() {
        let mut r = rc(1);
        r.status = Some(compute(&r, &[pod("r-0", true)], &APPLIED, &t(100)));
        let same = compute(&r, &[pod("r-0", true)], &APPLIED, &t(200));
        assert_eq!(cond(&same, "Ready").last_transition_time, t(100));
        assert!(!differs(r.status.as_ref().expect("status"), &same));
        let flipped = compute(&r, &[pod("r-0", false)], &APPLIED, &t(300));
        assert_eq!(cond(&flipped, "Ready").last_transition_time, t(300));
        assert!(differs(r.status.as_ref().expect("status"), &flipped));
    }
}
