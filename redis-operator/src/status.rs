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
//! - A cluster-mode shrink is `Progressing=True` with reason `Draining` while the leaving pods' hash
//!   slots move (the message names the pods and says what it waits for) and `ScalingDown` once they
//!   are drained and the StatefulSet is lowered; `Ready=False` until only `size` pods remain. A drain
//!   that fails is `Degraded=True` with reason `DrainFailed` (the StatefulSet keeps every pod) and
//!   stays `Progressing`, since the next reconcile retries it.
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
    /// Objects applied while a cluster-mode shrink drains the pods from ordinal `to` on.
    Shrinking {
        /// Pods that exist.
        from: usize,
        /// Pods wanted.
        to: usize,
        /// Where the drain stands.
        drain: Drain,
    },
}

/// Where a cluster-mode drain stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drain {
    /// Not started: the message says what it waits for.
    Waiting(String),
    /// The protocol failed (message); the StatefulSet keeps every pod.
    Failed(String),
    /// Every slot left the leaving pods and they were forgotten; the StatefulSet was lowered.
    Done,
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
        Outcome::Shrinking { from, to, drain } => {
            let name = rc.metadata.name.as_deref().unwrap_or("redis");
            let leaving = if from.saturating_sub(*to) == 1 {
                format!("pod {name}-{to}")
            } else {
                format!("pods {name}-{to} to {name}-{}", from.saturating_sub(1))
            };
            let not_ready = (
                false,
                "ScalingDown",
                format!("{ready}/{from} Redis pods are ready; {to} remain after the scale-down"),
            );
            let ok = (false, "AsExpected", "the spec is valid and applied".to_owned());
            match drain {
                Drain::Waiting(why) => (
                    not_ready,
                    (
                        true,
                        "Draining",
                        format!(
                            "scaling from {from} to {to}: moving the hash slots off {leaving} before removing them; {why}"
                        ),
                    ),
                    ok,
                    "Progressing",
                ),
                Drain::Failed(err) => (
                    not_ready,
                    (
                        true,
                        "Draining",
                        format!("scaling from {from} to {to}: draining {leaving} failed and will be retried"),
                    ),
                    (
                        true,
                        "DrainFailed",
                        format!(
                            "cannot move the hash slots off {leaving}, so the StatefulSet keeps {from} pods: {err}"
                        ),
                    ),
                    "Degraded",
                ),
                Drain::Done => (
                    not_ready,
                    (
                        true,
                        "ScalingDown",
                        format!(
                            "scaling from {from} to {to}: {leaving} hold no hash slots and were forgotten by the cluster; the StatefulSet now has {to} replicas"
                        ),
                    ),
                    ok,
                    "Progressing",
                ),
            }
        }
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
    use crate::crd::RedisClusterSpec;

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
    fn a_draining_shrink_is_progressing_with_the_leaving_pods_named_and_a_failed_drain_is_degraded() {
        let mut r = rc(3);
        r.metadata.name = Some("r".into());
        let pods: Vec<ObservedPod> = (0..4).map(|i| pod(&format!("r-{i}"), true)).collect();
        let waiting = Outcome::Shrinking {
            from: 4,
            to: 3,
            drain: Drain::Waiting("3/4 pods are ready".into()),
        };
        let s = compute(&r, &pods, &waiting, &t(1));
        assert_eq!(s.phase.as_deref(), Some("Progressing"));
        let p = cond(&s, "Progressing");
        assert_eq!((p.status.as_str(), p.reason.as_str()), ("True", "Draining"));
        assert!(
            p.message.contains("off pod r-3") && p.message.contains("3/4 pods are ready"),
            "{}",
            p.message
        );
        assert_eq!(cond(&s, "Ready").status, "False");
        assert_eq!(cond(&s, "Degraded").status, "False");

        let failed = Outcome::Shrinking {
            from: 6,
            to: 3,
            drain: Drain::Failed("connection refused".into()),
        };
        let s = compute(&r, &pods, &failed, &t(1));
        assert_eq!(s.phase.as_deref(), Some("Degraded"));
        let d = cond(&s, "Degraded");
        assert_eq!((d.status.as_str(), d.reason.as_str()), ("True", "DrainFailed"));
        assert!(
            d.message.contains("pods r-3 to r-5")
                && d.message.contains("keeps 6 pods")
                && d.message.contains("connection refused"),
            "{}",
            d.message
        );
        assert_eq!(cond(&s, "Progressing").status, "True", "the drain is retried");

        let done = Outcome::Shrinking {
            from: 4,
            to: 3,
            drain: Drain::Done,
        };
        let s = compute(&r, &pods, &done, &t(1));
        assert_eq!(cond(&s, "Progressing").reason, "ScalingDown");
        assert_eq!(s.phase.as_deref(), Some("Progressing"));
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
