use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::*;
use crate::api::labels::{MANAGED, OWNER_KIND, OWNER_NAMESPACE, TARGET_NAMESPACES};

const CRD: &str = "redisclusters.cache.example.com";
const ME: &str = "redis-operator.v1.1.0";
const OLD: &str = "redis-operator.v1.0.0";
const NEW: &str = "redis-operator.v1.2.0";

fn t(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).unwrap())
}

/// Test builder for CSVs: `Csv::test().phase(..).reason(..).build()`.
struct Csv(ClusterServiceVersion);

impl Csv {
    fn test() -> Self {
        let mut csv: ClusterServiceVersion = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": ME, "namespace": "operators", "uid": "uid-me",
                         "annotations": {"capabilities": "Basic Install", LAST_APPLIED: "{}"}},
            "spec": {
                "displayName": "Redis",
                "customresourcedefinitions": {"owned": [{"name": CRD, "version": "v1", "kind": "RedisCluster"}]},
                "install": {"strategy": "deployment", "spec": {
                    "deployments": [{"name": "redis-operator", "label": {"app": "redis"}, "spec": {
                        "selector": {"matchLabels": {"app": "redis"}},
                        "template": {"metadata": {"labels": {"app": "redis"}, "annotations": {"t": "1"}},
                                     "spec": {"containers": [{"name": "manager", "image": "redis-op:1",
                                                              "env": [{"name": OPERATOR_CONDITION_ENV, "value": "stale"}]}]}}}}],
                    "permissions": [{"serviceAccountName": "redis-operator",
                                     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}]
                }},
                "installModes": [
                    {"type": "OwnNamespace", "supported": true},
                    {"type": "SingleNamespace", "supported": false},
                    {"type": "MultiNamespace", "supported": false},
                    {"type": "AllNamespaces", "supported": true}
                ]
            }
        }))
        .unwrap();
        csv.status = Some(ClusterServiceVersionStatus::default());
        Self(csv)
    }
    fn status(&mut self) -> &mut ClusterServiceVersionStatus {
        self.0.status.get_or_insert_with(Default::default)
    }
    fn phase(mut self, phase: CsvPhase) -> Self {
        self.status().phase = Some(phase);
        self
    }
    fn reason(mut self, reason: CsvReason) -> Self {
        self.status().reason = Some(reason);
        self
    }
    fn transitioned_at(mut self, time: Time) -> Self {
        self.status().last_transition_time = Some(time);
        self
    }
    fn replaces(mut self, name: &str) -> Self {
        self.0.spec.replaces = Some(name.to_owned());
        self
    }
    fn min_kube_version(mut self, v: &str) -> Self {
        self.0.spec.min_kube_version = Some(v.to_owned());
        self
    }
    fn install_modes(mut self, modes: &[(&str, bool)]) -> Self {
        self.0.spec.install_modes = modes
            .iter()
            .map(|(t, s)| v1alpha1::InstallMode {
                type_: v1alpha1::InstallModeType::parse(t),
                supported: *s,
            })
            .collect();
        self
    }
    fn member_of(mut self, og: &str, targets: &str) -> Self {
        let a = self.0.metadata.annotations.get_or_insert_with(BTreeMap::new);
        a.insert("olm.operatorGroup".into(), og.into());
        a.insert("olm.operatorNamespace".into(), "operators".into());
        a.insert(TARGET_NAMESPACES.into(), targets.into());
        self
    }
    fn build(self) -> ClusterServiceVersion {
        self.0
    }
}

fn established() -> CrdState {
    CrdState::Present {
        established: true,
        served_versions: vec!["v1".into()],
        uid: Some("crd-uid".into()),
    }
}

/// Observed state of a namespace where every requirement is met.
fn ready() -> Observed {
    Observed::default()
        .with_og("og", &["operators"])
        .with_crd(CRD, established())
        .with_service_account("redis-operator", &[ME])
}

fn healthy_deployment(csv: &ClusterServiceVersion) -> ObservedDeployment {
    let desired = desired_deployments(csv, &annotations_for(csv), None).unwrap();
    ObservedDeployment {
        owner: Some(ME.into()),
        spec_hash: desired[0].labels().get(DEPLOYMENT_SPEC_HASH).cloned(),
        generation: Some(2),
        observed_generation: Some(2),
        desired_replicas: 1,
        replicas: 1,
        updated_replicas: 1,
        available_replicas: 1,
        available: true,
        progress_deadline_exceeded: false,
    }
}

fn annotations_for(csv: &ClusterServiceVersion) -> BTreeMap<String, String> {
    let mut a = csv.annotations().clone();
    a.extend(member_annotations("og", "operators", &["operators".to_owned()]));
    a
}

fn with_healthy(observed: Observed, csv: &ClusterServiceVersion) -> Observed {
    observed.with_deployment("redis-operator", healthy_deployment(csv))
}

fn outcome(d: &CsvDecision) -> (CsvPhase, CsvReason) {
    (d.phase.clone(), d.reason.clone())
}

// ── pre-checks ───────────────────────────────────────────────────────────────────────

#[test]
fn a_namespace_without_an_operator_group_fails_the_csv_with_no_operator_group() {
    let d = decide(&Csv::test().build(), &Observed::default(), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::NoOperatorGroup));
    assert!(d.message.contains("namespace operators has no OperatorGroup"));
}

#[test]
fn two_operator_groups_fail_the_csv_with_too_many_operator_groups_naming_both() {
    let observed = ready().with_og("og-2", &["operators"]);
    let d = decide(&Csv::test().phase(CsvPhase::Succeeded).build(), &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::TooManyOperatorGroups));
    assert!(d.message.contains("(og, og-2)"));
}

#[test]
fn an_operator_group_targeting_an_unsupported_namespace_fails_with_unsupported_operator_group() {
    let observed = ready();
    let observed = Observed {
        operator_groups: vec![ObservedOperatorGroup {
            name: "og-single".into(),
            namespaces: Some(vec!["team-a".into()]),
            fail_forward: false,
        }],
        ..observed
    };
    let d = decide(&Csv::test().build(), &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::Failed, CsvReason::UnsupportedOperatorGroup)
    );
    assert!(
        d.message
            .contains("target the operator namespace or all namespaces"),
        "{}",
        d.message
    );
}

#[test]
fn duplicate_install_modes_fail_with_invalid_install_modes() {
    let csv = Csv::test()
        .install_modes(&[("OwnNamespace", true), ("OwnNamespace", false)])
        .build();
    let d = decide(&csv, &ready(), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::InvalidInstallModes));
}

#[test]
fn a_selector_matching_nothing_fails_with_no_target_namespaces() {
    let observed = Observed::default().with_og("og", &[]);
    let d = decide(&Csv::test().build(), &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::NoTargetNamespaces));
}

#[test]
fn an_operator_group_without_status_keeps_a_new_csv_pending_and_requeues() {
    let observed = Observed {
        operator_groups: vec![ObservedOperatorGroup {
            name: "og".into(),
            namespaces: None,
            fail_forward: false,
        }],
        ..Observed::default()
    };
    let d = decide(&Csv::test().build(), &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsUnknown));
    assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
}

#[test]
fn missing_member_annotations_are_returned_for_the_shell_to_write() {
    let d = decide(&Csv::test().build(), &ready(), &t(0));
    let a = d.annotations.expect("annotations to write");
    assert_eq!(a["olm.operatorGroup"], "og");
    assert_eq!(a[TARGET_NAMESPACES], "operators");
    assert_eq!(a["capabilities"], "Basic Install");
    let d = decide(&Csv::test().member_of("og", "operators").build(), &ready(), &t(0));
    assert_eq!(d.annotations, None);
}

// ── the phases ───────────────────────────────────────────────────────────────────────

#[test]
fn a_new_csv_goes_pending_with_requirements_unknown() {
    let d = decide(&Csv::test().build(), &ready(), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsUnknown));
    assert_eq!(d.message, "requirements not yet checked");
}

#[test]
fn a_pending_csv_with_a_missing_crd_stays_pending_with_requirements_not_met() {
    let observed = Observed::default()
        .with_og("og", &["operators"])
        .with_service_account("redis-operator", &[ME]);
    let d = decide(&Csv::test().phase(CsvPhase::Pending).build(), &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsNotMet));
    let reqs = d.requirement_status.unwrap();
    let crd = reqs.iter().find(|r| r.name == CRD).unwrap();
    assert_eq!(crd.status, StatusReason::NotPresent);
    let sa = reqs.iter().find(|r| r.name == "redis-operator").unwrap();
    assert_eq!(sa.status, StatusReason::Present);
    assert_eq!(d.requeue_after, Some(REQUIREMENTS_REQUEUE));
}

#[test]
fn a_crd_that_is_not_established_is_present_not_available() {
    let observed = ready().with_crd(
        CRD,
        CrdState::Present {
            established: false,
            served_versions: vec!["v1".into()],
            uid: None,
        },
    );
    let d = decide(&Csv::test().phase(CsvPhase::Pending).build(), &observed, &t(0));
    assert_eq!(d.reason, CsvReason::RequirementsNotMet);
    let reqs = d.requirement_status.unwrap();
    assert_eq!(reqs[0].status, StatusReason::PresentNotAvailable);
}

#[test]
fn a_crd_not_serving_the_csvs_version_does_not_satisfy_it() {
    let observed = ready().with_crd(
        CRD,
        CrdState::Present {
            established: true,
            served_versions: vec!["v2".into()],
            uid: Some("crd-uid".into()),
        },
    );
    let (met, reqs) = requirement_status(&Csv::test().build(), &observed);
    assert!(!met);
    // Upstream's reason and words.
    assert_eq!(reqs[0].status, StatusReason::NotPresent);
    assert_eq!(reqs[0].message, "CRD version not served");
    assert_eq!(
        reqs[0].uuid, None,
        "upstream records no uid for an unserved version"
    );
}

#[test]
fn a_service_account_owned_by_an_unrelated_csv_is_not_satisfied() {
    let observed = ready().with_service_account("redis-operator", &["other.v1"]);
    let (met, reqs) = requirement_status(&Csv::test().build(), &observed);
    assert!(!met);
    let sa = reqs.iter().find(|r| r.kind == "ServiceAccount").unwrap();
    assert_eq!(sa.status, StatusReason::PresentNotSatisfied);
    // owned by the CSV being replaced is fine.
    let observed = ready().with_service_account("redis-operator", &[OLD]);
    assert!(requirement_status(&Csv::test().replaces(OLD).build(), &observed).0);
    // shared between this CSV and its replacement (an upgrade in progress) is fine too.
    let me = Csv::test().build().name_any();
    let observed = ready().with_service_account("redis-operator", &[&me, "redis-operator.v9.9.9"]);
    assert!(requirement_status(&Csv::test().build(), &observed).0);
}

#[test]
fn a_server_older_than_min_kube_version_is_not_satisfied() {
    let observed = Observed {
        server_version: Some("v1.24.3+k3s1".into()),
        ..ready()
    };
    let (met, reqs) = requirement_status(&Csv::test().min_kube_version("1.25.0").build(), &observed);
    assert!(!met);
    assert!(
        reqs[0]
            .message
            .contains("minKubeVersion (1.25.0) > server version (v1.24.3+k3s1)")
    );
    let observed = Observed {
        server_version: Some("v1.37.0".into()),
        ..ready()
    };
    assert!(requirement_status(&Csv::test().min_kube_version("1.25").build(), &observed).0);
}

#[test]
fn native_apis_the_server_does_not_serve_are_not_present() {
    let gvk = |group: &str, version: &str, kind: &str| v1alpha1::GroupVersionKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    };
    let snapshot = gvk("snapshot.storage.k8s.io", "v1", "VolumeSnapshot");
    let pod = gvk("", "v1", "Pod");
    let mut csv = Csv::test().phase(CsvPhase::Pending).build();
    csv.spec.native_apis = vec![snapshot.clone(), pod.clone()];
    let observed = Observed {
        served_native_apis: [pod.clone()].into(),
        ..ready()
    };
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsNotMet));
    let reqs = d.requirement_status.unwrap();
    let entry = |name: &str| reqs.iter().find(|r| r.name == name).unwrap();
    let missing = entry("v1.snapshot.storage.k8s.io");
    assert_eq!(
        (
            missing.group.as_str(),
            missing.kind.as_str(),
            missing.status.clone()
        ),
        (
            "snapshot.storage.k8s.io",
            "VolumeSnapshot",
            StatusReason::NotPresent
        )
    );
    assert!(missing.message.starts_with(
        "Native API does not exist: the API server serves no VolumeSnapshot in snapshot.storage.k8s.io/v1"
    ));
    let served = entry("v1.");
    assert_eq!(
        (served.status.clone(), served.message.as_str()),
        (StatusReason::Present, "Native API exists")
    );

    let observed = Observed {
        served_native_apis: [pod, snapshot].into(),
        ..ready()
    };
    assert!(requirement_status(&csv, &observed).0);
}

#[test]
fn a_pending_csv_with_all_requirements_goes_install_ready() {
    let d = decide(&Csv::test().phase(CsvPhase::Pending).build(), &ready(), &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::InstallReady, CsvReason::AllRequirementsMet)
    );
    assert!(
        d.requirement_status
            .unwrap()
            .iter()
            .all(|r| r.status == StatusReason::Present)
    );
    assert!(d.desired_deployments.is_empty());
}

#[test]
fn a_pending_csv_owning_a_crd_another_csv_owns_fails_with_owner_conflict() {
    let observed = Observed {
        crd_owner_conflicts: vec![CrdOwnerConflict {
            crd: CRD.into(),
            csv: "other.v1".into(),
        }],
        ..ready()
    };
    let d = decide(&Csv::test().phase(CsvPhase::Pending).build(), &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::OwnerConflict));
    assert!(
        d.message
            .contains("already owned by ClusterServiceVersion other.v1")
    );
}

#[test]
fn a_pending_upgrade_waits_until_the_old_csv_is_replacing() {
    let csv = Csv::test()
        .replaces(OLD)
        .phase(CsvPhase::Pending)
        .reason(CsvReason::RequirementsNotMet)
        .build();
    let d = decide(&csv, &ready().with_replacee(OLD, CsvPhase::Succeeded), &t(0));
    assert_eq!(d.phase, CsvPhase::Pending);
    assert_eq!(d.reason, CsvReason::RequirementsNotMet);
    assert!(
        d.message
            .contains("waiting for redis-operator.v1.0.0 (phase Succeeded)")
    );
    assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
    let d = decide(&csv, &ready().with_replacee(OLD, CsvPhase::Replacing), &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::InstallReady, CsvReason::AllRequirementsMet)
    );
}

#[test]
fn an_upgrade_away_from_a_csv_whose_operator_condition_is_not_upgradeable_waits_pending_with_its_message() {
    let csv = Csv::test()
        .replaces(OLD)
        .phase(CsvPhase::Pending)
        .reason(CsvReason::RequirementsUnknown)
        .build();
    let mut observed = ready().with_replacee(OLD, CsvPhase::Replacing);
    observed.replacee_not_upgradeable = Some(crate::plan::operator_condition::UpgradeBlock::NotUpgradeable {
        message: "a migration is running".into(),
    });
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::Pending, CsvReason::OperatorConditionNotUpgradeable)
    );
    assert!(
        d.message.starts_with(&format!(
            "operator is not upgradeable: OperatorCondition {OLD}: a migration is running"
        )),
        "{}",
        d.message
    );
    assert_eq!(d.requeue_after, Some(NOT_UPGRADEABLE_REQUEUE));
    // Checked before the requirements, as upstream: nothing else is reported meanwhile.
    assert_eq!(d.requirement_status, None);
    // Upgradeable again: the upgrade proceeds.
    observed.replacee_not_upgradeable = None;
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::InstallReady, CsvReason::AllRequirementsMet)
    );
}

#[test]
fn an_install_ready_csv_creates_its_deployments_and_goes_installing() {
    let csv = Csv::test().phase(CsvPhase::InstallReady).build();
    let d = decide(&csv, &ready(), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallSucceeded));
    assert_eq!(d.message, "waiting for install components to report healthy");
    assert_eq!(d.desired_deployments.len(), 1);
    assert_eq!(d.desired_deployments[0].name_any(), "redis-operator");
}

#[test]
fn install_ready_lists_deployments_this_csv_owns_but_no_longer_declares_as_stale() {
    let csv = Csv::test().phase(CsvPhase::InstallReady).build();
    let observed = ready()
        .with_deployment(
            "old-helper",
            ObservedDeployment {
                owner: Some(ME.into()),
                ..Default::default()
            },
        )
        .with_deployment(
            "someone-elses",
            ObservedDeployment {
                owner: Some("x.v1".into()),
                ..Default::default()
            },
        );
    assert_eq!(decide(&csv, &observed, &t(0)).stale_deployments, ["old-helper"]);
}

#[test]
fn an_installing_csv_with_available_deployments_succeeds() {
    let csv = Csv::test()
        .phase(CsvPhase::Installing)
        .transitioned_at(t(0))
        .build();
    let d = decide(&csv, &with_healthy(ready(), &csv), &t(10));
    assert_eq!(outcome(&d), (CsvPhase::Succeeded, CsvReason::InstallSucceeded));
    assert_eq!(d.message, "install strategy completed with no errors");
}

#[test]
fn an_installing_csv_waits_for_an_unavailable_deployment_with_a_requeue() {
    let csv = Csv::test()
        .phase(CsvPhase::Installing)
        .transitioned_at(t(0))
        .build();
    let mut dep = healthy_deployment(&csv);
    dep.available = false;
    dep.available_replicas = 0;
    let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(10));
    assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallWaiting));
    assert!(
        d.message.contains("0 of 1 updated replicas are available"),
        "{}",
        d.message
    );
    assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
}

#[test]
fn an_installing_csv_waits_for_a_rollout_in_progress() {
    let csv = Csv::test()
        .phase(CsvPhase::Installing)
        .transitioned_at(t(0))
        .build();
    let mut dep = healthy_deployment(&csv);
    dep.generation = Some(3);
    let d = decide(
        &csv,
        &ready().with_deployment("redis-operator", dep.clone()),
        &t(1),
    );
    assert!(d.message.contains("waiting for the new spec to be observed"));
    dep.generation = Some(2);
    dep.updated_replicas = 0;
    let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(1));
    assert!(d.message.contains("0 out of 1 new replicas have been updated"));
}

#[test]
fn an_installing_csv_still_waiting_after_five_minutes_fails_with_install_check_failed() {
    let csv = Csv::test()
        .phase(CsvPhase::Installing)
        .transitioned_at(t(0))
        .build();
    let d = decide(&csv, &ready(), &t(299));
    assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallWaiting));
    assert_eq!(d.requeue_after, Some(Duration::from_secs(1)));
    let d = decide(&csv, &ready(), &t(300));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::InstallCheckFailed));
    assert_eq!(d.message, "install timeout");
}

#[test]
fn an_installing_csv_whose_deployment_missed_its_deadline_fails_at_once() {
    let csv = Csv::test()
        .phase(CsvPhase::Installing)
        .transitioned_at(t(0))
        .build();
    let mut dep = healthy_deployment(&csv);
    dep.progress_deadline_exceeded = true;
    let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(1));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::InstallCheckFailed));
    assert!(d.message.contains("exceeded its progress deadline"));
}

#[test]
fn an_installing_csv_whose_deployment_spec_drifted_goes_back_to_install_ready() {
    let csv = Csv::test()
        .phase(CsvPhase::Installing)
        .transitioned_at(t(0))
        .build();
    let mut dep = healthy_deployment(&csv);
    dep.spec_hash = Some("old".into());
    let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(1));
    assert_eq!(outcome(&d), (CsvPhase::InstallReady, CsvReason::InstallWaiting));
}

#[test]
fn a_succeeded_csv_with_a_replacement_goes_replacing() {
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let observed = with_healthy(ready(), &csv).with_replacement(NEW, CsvPhase::Pending);
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Replacing, CsvReason::BeingReplaced));
    assert_eq!(d.message, format!("being replaced by csv: {NEW}"));
}

#[test]
fn a_healthy_succeeded_csv_stays_succeeded_and_its_status_does_not_change() {
    let csv = Csv::test()
        .member_of("og", "operators")
        .phase(CsvPhase::Succeeded)
        .reason(CsvReason::InstallSucceeded)
        .build();
    let mut csv = csv;
    csv.status.as_mut().unwrap().message = Some("install strategy completed with no errors".into());
    let observed = with_healthy(ready(), &csv);
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Succeeded, CsvReason::InstallSucceeded));
    let mut status = csv.status.clone().unwrap();
    // first application records the requirement status; afterwards nothing changes.
    d.apply_to(&mut status, &t(5));
    let before = status.clone();
    assert!(!decide(&csv, &observed, &t(9)).apply_to(&mut status, &t(9)));
    assert_eq!(status, before);
}

#[test]
fn a_succeeded_csv_that_lost_a_requirement_fails_with_requirements_not_met() {
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let observed = with_healthy(ready(), &csv).with_crd(CRD, CrdState::Absent);
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::RequirementsNotMet));
}

#[test]
fn a_succeeded_csv_with_an_unavailable_deployment_fails_with_component_unhealthy() {
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let mut dep = healthy_deployment(&csv);
    dep.available = false;
    let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::ComponentUnhealthy));
}

#[test]
fn a_failed_csv_whose_operator_group_was_fixed_goes_back_to_pending() {
    let csv = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::UnsupportedOperatorGroup)
        .build();
    let d = decide(&csv, &ready(), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsUnknown));
}

#[test]
fn a_failed_csv_whose_components_are_healthy_again_succeeds() {
    let csv = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::ComponentUnhealthy)
        .build();
    let d = decide(&csv, &with_healthy(ready(), &csv), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Succeeded, CsvReason::InstallSucceeded));
}

#[test]
fn a_failed_csv_with_unhealthy_components_needs_a_reinstall() {
    let csv = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::InstallCheckFailed)
        .build();
    let d = decide(&csv, &ready(), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::NeedsReinstall));
}

#[test]
fn a_failed_csv_that_lost_requirements_goes_pending_with_requirements_not_met() {
    let csv = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::ComponentUnhealthy)
        .build();
    let d = decide(&csv, &ready().with_crd(CRD, CrdState::Absent), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsNotMet));
}

#[test]
fn a_failed_csv_with_invalid_install_modes_or_no_retry_stays_failed() {
    let no_retry = CsvReason::InstallComponentFailedNoRetry;
    let csv = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(no_retry.clone())
        .build();
    assert_eq!(
        outcome(&decide(&csv, &ready(), &t(0))),
        (CsvPhase::Failed, no_retry)
    );
    let csv = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::InvalidInstallModes)
        .install_modes(&[("OwnNamespace", true), ("OwnNamespace", true)])
        .build();
    assert_eq!(
        outcome(&decide(&csv, &ready(), &t(0))),
        (CsvPhase::Failed, CsvReason::InvalidInstallModes)
    );
}

#[test]
fn a_failed_owner_conflict_stays_failed_while_the_conflict_lasts() {
    let csv = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::OwnerConflict)
        .build();
    let conflicted = Observed {
        crd_owner_conflicts: vec![CrdOwnerConflict {
            crd: CRD.into(),
            csv: "other.v1".into(),
        }],
        ..ready()
    };
    assert_eq!(
        outcome(&decide(&csv, &conflicted, &t(0))),
        (CsvPhase::Failed, CsvReason::OwnerConflict)
    );
    // once the other operator is gone, the CSV reinstalls.
    assert_eq!(
        outcome(&decide(&csv, &ready(), &t(0))),
        (CsvPhase::Pending, CsvReason::NeedsReinstall)
    );
}

#[test]
fn a_failed_csv_with_a_fail_forward_group_and_a_replacement_goes_replacing() {
    let csv = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::InstallCheckFailed)
        .build();
    let mut observed = ready().with_replacement(NEW, CsvPhase::Pending);
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(
        d.phase,
        CsvPhase::Pending,
        "default strategy never replaces a failed CSV"
    );
    observed.operator_groups[0].fail_forward = true;
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Replacing, CsvReason::BeingReplaced));
}

#[test]
fn a_replacing_csv_is_deleted_once_its_replacement_succeeded() {
    let csv = Csv::test()
        .phase(CsvPhase::Replacing)
        .reason(CsvReason::BeingReplaced)
        .build();
    let d = decide(&csv, &ready().with_replacement(NEW, CsvPhase::Installing), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Replacing, CsvReason::BeingReplaced));
    assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
    let d = decide(&csv, &ready().with_replacement(NEW, CsvPhase::Succeeded), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Deleting, CsvReason::Replaced));
    assert!(!d.delete_self, "the Deleting phase is recorded first");
}

#[test]
fn a_replacing_csv_that_still_replaces_an_older_one_waits_its_turn() {
    let csv = Csv::test()
        .replaces(OLD)
        .phase(CsvPhase::Replacing)
        .reason(CsvReason::BeingReplaced)
        .build();
    let observed = ready()
        .with_replacee(OLD, CsvPhase::Replacing)
        .with_replacement(NEW, CsvPhase::Succeeded);
    assert_eq!(decide(&csv, &observed, &t(0)).phase, CsvPhase::Replacing);
}

#[test]
fn a_deleting_csv_asks_to_be_deleted_whatever_else_is_observed() {
    let csv = Csv::test()
        .phase(CsvPhase::Deleting)
        .reason(CsvReason::Replaced)
        .build();
    let d = decide(&csv, &Observed::default(), &t(0));
    assert!(d.delete_self);
    assert_eq!(d.phase, CsvPhase::Deleting);
}

// ── desired Deployments ──────────────────────────────────────────────────────────────

#[test]
fn desired_deployments_carry_olm_labels_owner_annotations_env_and_history_limit() {
    let csv = Csv::test().build();
    let deployments = desired_deployments(&csv, &annotations_for(&csv), None).unwrap();
    let d = &deployments[0];
    let labels = d.labels();
    assert_eq!(labels["app"], "redis");
    assert_eq!(labels[MANAGED], "true");
    assert_eq!(labels[OWNER], ME);
    assert_eq!(labels[OWNER_NAMESPACE], "operators");
    assert_eq!(labels[OWNER_KIND], "ClusterServiceVersion");
    assert!(!labels[DEPLOYMENT_SPEC_HASH].is_empty());
    assert_eq!(d.metadata.namespace.as_deref(), Some("operators"));
    let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.uid.as_str(), owner.controller), ("uid-me", Some(false)));
    let spec = &d.spec;
    assert_eq!(spec.revision_history_limit, Some(1));
    let template_annotations = spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .annotations
        .as_ref()
        .unwrap();
    assert_eq!(template_annotations["t"], "1");
    assert_eq!(template_annotations[TARGET_NAMESPACES], "operators");
    assert_eq!(template_annotations["capabilities"], "Basic Install");
    assert!(!template_annotations.contains_key(LAST_APPLIED));
    let env = spec.template.spec.as_ref().unwrap().containers[0]
        .env
        .as_ref()
        .unwrap();
    let cond: Vec<_> = env.iter().filter(|e| e.name == OPERATOR_CONDITION_ENV).collect();
    assert_eq!(cond.len(), 1);
    assert_eq!(cond[0].value.as_deref(), Some(ME));
}

#[test]
fn desired_deployments_carry_the_operator_component_label_of_their_csv_and_nothing_else_of_it() {
    // The InstallPlan labels the CSV `operators.coreos.com/<package>.<namespace>` (empty
    // value, upstream's Operator-API component label); its Deployments inherit exactly that.
    let mut csv = Csv::test().build();
    csv.metadata.labels = Some(BTreeMap::from([
        (
            "operators.coreos.com/redis-operator.operators".to_owned(),
            String::new(),
        ),
        ("team".to_owned(), "a".to_owned()),
    ]));
    let labels = desired_deployments(&csv, &annotations_for(&csv), None).unwrap()[0]
        .labels()
        .clone();
    assert_eq!(
        labels
            .get("operators.coreos.com/redis-operator.operators")
            .map(String::as_str),
        Some("")
    );
    assert!(!labels.contains_key("team"), "{labels:?}");
    // Without the label on the CSV, none is invented.
    let bare = Csv::test().build();
    let labels = desired_deployments(&bare, &annotations_for(&bare), None).unwrap()[0]
        .labels()
        .clone();
    assert!(
        !labels
            .keys()
            .any(|k| k.starts_with(crate::api::labels::COMPONENT_LABEL_PREFIX)),
        "{labels:?}"
    );
}

#[test]
fn the_spec_hash_changes_when_the_target_namespaces_change() {
    let csv = Csv::test().build();
    let hash = |targets: &str| {
        let mut a = annotations_for(&csv);
        a.insert(TARGET_NAMESPACES.into(), targets.into());
        desired_deployments(&csv, &a, None).unwrap()[0].labels()[DEPLOYMENT_SPEC_HASH].clone()
    };
    assert_eq!(hash("operators"), hash("operators"));
    assert_ne!(hash("operators"), hash(""));
}

#[test]
fn an_upgrade_takes_over_the_old_csvs_deployment_by_name() {
    // The old CSV's deployment is observed; the new CSV in InstallReady applies its own
    // spec with itself as owner, and while the old owner is still observed it re-applies.
    let csv = Csv::test().replaces(OLD).phase(CsvPhase::InstallReady).build();
    let d = decide(&csv, &ready().with_replacee(OLD, CsvPhase::Replacing), &t(0));
    assert_eq!(d.desired_deployments[0].labels()[OWNER], ME);
    let csv = Csv::test()
        .replaces(OLD)
        .phase(CsvPhase::Installing)
        .transitioned_at(t(0))
        .build();
    let mut old = healthy_deployment(&csv);
    old.owner = Some(OLD.into());
    let d = decide(&csv, &ready().with_deployment("redis-operator", old), &t(1));
    assert_eq!(d.phase, CsvPhase::InstallReady);
    assert!(d.message.contains("owned by redis-operator.v1.0.0"));
}

#[test]
fn observed_deployments_are_read_from_labels_and_status() {
    let dep: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "x", "generation": 4, "labels": {OWNER: ME, DEPLOYMENT_SPEC_HASH: "h"}},
        "spec": {"replicas": 2, "selector": {}, "template": {}},
        "status": {"observedGeneration": 4, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1,
                   "conditions": [{"type": "Available", "status": "True"},
                                  {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]}
    }))
    .unwrap();
    let o = ObservedDeployment::from_deployment(&dep);
    assert_eq!(o.owner.as_deref(), Some(ME));
    assert_eq!(o.spec_hash.as_deref(), Some("h"));
    assert_eq!(
        (o.desired_replicas, o.updated_replicas, o.available_replicas),
        (2, 2, 1)
    );
    assert!(o.available && o.progress_deadline_exceeded);
}

// ── helpers for the shell ───────────────────────────────────────────────────────────

fn named(name: &str, replaces: Option<&str>, owns: &[&str]) -> ClusterServiceVersion {
    let mut csv = Csv::test().build();
    csv.metadata.name = Some(name.into());
    csv.spec.replaces = replaces.map(str::to_owned);
    csv.spec.custom_resource_definitions = Some(v1alpha1::CustomResourceDefinitions {
        owned: owns
            .iter()
            .map(|n| v1alpha1::CrdDescription {
                name: (*n).into(),
                version: "v1".into(),
                kind: "K".into(),
                display_name: None,
                description: None,
                resources: vec![],
                status_descriptors: vec![],
                spec_descriptors: vec![],
                action_descriptors: vec![],
            })
            .collect(),
        required: vec![],
    });
    csv
}

#[test]
fn owner_conflicts_ignore_the_replacement_chain_but_not_strangers() {
    let old = named(OLD, None, &[CRD]);
    let me = named(ME, Some(OLD), &[CRD]);
    let new = named(NEW, Some(ME), &[CRD]);
    let stranger = named("other.v1", None, &[CRD]);
    let all = vec![old.clone(), me.clone(), new.clone()];
    assert!(crd_owner_conflicts(&me, &all).is_empty());
    assert_eq!(
        replacement_of(ME, &all).map(|c| c.name_any()),
        Some(NEW.to_owned())
    );
    assert_eq!(replacee_of(&me, &all).map(|c| c.name_any()), Some(OLD.to_owned()));
    let mut with_stranger = all;
    with_stranger.push(stranger);
    assert_eq!(
        crd_owner_conflicts(&me, &with_stranger),
        vec![CrdOwnerConflict {
            crd: CRD.into(),
            csv: "other.v1".into()
        }]
    );
}

#[test]
fn the_status_history_follows_a_whole_install() {
    let mut csv = Csv::test().member_of("og", "operators").build();
    let mut observed = ready();
    let mut phases = vec![];
    for second in 0..6 {
        let now = t(second);
        let d = decide(&csv, &observed, &now);
        if !d.desired_deployments.is_empty() {
            observed = with_healthy(observed, &csv);
        }
        d.apply_to(csv.status.as_mut().unwrap(), &now);
        phases.push(d.phase.as_str().to_owned());
    }
    assert_eq!(
        phases,
        [
            "Pending",
            "InstallReady",
            "Installing",
            "Succeeded",
            "Succeeded",
            "Succeeded"
        ]
    );
    let history: Vec<_> = csv
        .status
        .as_ref()
        .unwrap()
        .conditions
        .iter()
        .map(|c| c.phase.clone().unwrap())
        .collect();
    assert_eq!(
        history,
        [
            CsvPhase::Pending,
            CsvPhase::InstallReady,
            CsvPhase::Installing,
            CsvPhase::Succeeded
        ]
    );
    assert_eq!(csv.status.as_ref().unwrap().last_transition_time, Some(t(3)));
}

fn sa_requirement(name: &str, status: StatusReason) -> RequirementStatus {
    RequirementStatus {
        group: String::new(),
        version: "v1".into(),
        kind: "ServiceAccount".into(),
        name: name.into(),
        status,
        message: String::new(),
        uuid: None,
        dependents: Vec::new(),
    }
}

fn plan_with_sa_step(phase: &str, csv: &str, sa: &str, step: &str) -> v1alpha1::InstallPlanStatus {
    serde_json::from_value(serde_json::json!({
        "phase": phase,
        "catalogSources": [],
        "plan": [{
            "resolving": csv,
            "resource": {"sourceName": "c", "sourceNamespace": "ns", "group": "", "version": "v1",
                         "kind": "ServiceAccount", "name": sa},
            "status": step,
        }],
    }))
    .unwrap()
}

#[test]
fn a_new_csv_waits_silently_only_for_service_accounts_its_installing_plan_still_has_to_apply() {
    let missing = [sa_requirement("op", StatusReason::NotPresent)];
    let applying = plan_with_sa_step("Installing", "op.v1", "op", "Unknown");
    assert!(waits_only_on_own_plan("op.v1", &missing, [&applying]));

    // Another CSV's plan, a plan that already applied the account, a failed plan, or no
    // plan at all: the requirement is reported as usual.
    let other = plan_with_sa_step("Installing", "other.v1", "op", "Unknown");
    assert!(!waits_only_on_own_plan("op.v1", &missing, [&other]));
    let applied = plan_with_sa_step("Installing", "op.v1", "op", "Created");
    assert!(!waits_only_on_own_plan("op.v1", &missing, [&applied]));
    let failed = plan_with_sa_step("Failed", "op.v1", "op", "Unknown");
    assert!(!waits_only_on_own_plan("op.v1", &missing, [&failed]));
    assert!(!waits_only_on_own_plan("op.v1", &missing, []));

    // A missing requirement that is not a ServiceAccount, or nothing missing at all.
    let mut crd = sa_requirement("widgets.example.com", StatusReason::NotPresent);
    crd.kind = "CustomResourceDefinition".into();
    assert!(!waits_only_on_own_plan(
        "op.v1",
        &[missing[0].clone(), crd],
        [&applying]
    ));
    let present = [sa_requirement("op", StatusReason::Present)];
    assert!(!waits_only_on_own_plan("op.v1", &present, [&applying]));
}

// Deployments up to date, and when a status write waits (moved from controller/csv.rs).

fn owned_deployment(labels: serde_json::Value, owner_uid: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "op", "namespace": "ns", "labels": labels,
            "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "ClusterServiceVersion", "name": "a.v1", "uid": owner_uid}]},
        "spec": {"selector": {}, "template": {}}
    }))
    .unwrap()
}

#[test]
fn a_deployment_is_up_to_date_only_with_the_same_hash_labels_and_owner() {
    let desired = owned_deployment(
        json!({"olm.deployment-spec-hash": "h1", "olm.owner": "a.v1"}),
        "u1",
    );
    let mut seen = owned_deployment(
        json!({"olm.deployment-spec-hash": "h1", "olm.owner": "a.v1", "pod-template-hash": "x"}),
        "u1",
    );
    assert!(
        deployment_up_to_date(&desired, &seen),
        "extra labels on the live object are fine"
    );
    seen.labels_mut()
        .insert("olm.deployment-spec-hash".into(), "h0".into());
    assert!(!deployment_up_to_date(&desired, &seen), "a spec drift re-applies");
    let other_owner = owned_deployment(
        json!({"olm.deployment-spec-hash": "h1", "olm.owner": "a.v1"}),
        "u0",
    );
    assert!(
        !deployment_up_to_date(&desired, &other_owner),
        "a new owner re-applies"
    );
}

fn with_strategy(strategy: serde_json::Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "op"},
        "spec": {"selector": {}, "template": {}, "strategy": strategy}
    }))
    .unwrap()
}

#[test]
fn switching_to_recreate_removes_the_defaulted_rolling_update_first() {
    let live = with_strategy(json!({
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}
    }));
    let recreate = with_strategy(json!({"type": "Recreate"}));
    assert_eq!(
        strategy_switch_patch(&recreate, &live),
        Some(json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}}))
    );
    assert_eq!(strategy_switch_patch(&recreate, &recreate), None);
}

#[test]
fn switching_back_to_rolling_update_sets_the_desired_parameters() {
    let live = with_strategy(json!({"type": "Recreate"}));
    let unspecified = with_strategy(json!({}));
    assert_eq!(
        strategy_switch_patch(&unspecified, &live),
        Some(json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": null}}})),
        "no strategy means the server's default, RollingUpdate with its default parameters"
    );
    let rolling = with_strategy(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}));
    assert_eq!(
        strategy_switch_patch(&rolling, &live),
        Some(json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}))
    );
    let defaulted = with_strategy(json!({
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}
    }));
    assert_eq!(
        strategy_switch_patch(&unspecified, &defaulted),
        None,
        "the same type needs no patch"
    );
}

fn waiting(message: &str) -> ClusterServiceVersionStatus {
    ClusterServiceVersionStatus {
        phase: Some(CsvPhase::Installing),
        reason: Some(CsvReason::InstallWaiting),
        message: Some(message.into()),
        ..Default::default()
    }
}

#[test]
fn only_a_new_rollout_message_while_installing_is_progress() {
    let old = waiting("installing: deployment op: waiting for the new spec to be observed");
    let new = waiting("installing: deployment op is not available: 0 of 1 updated replicas are available");
    assert!(progress_only(&old, &new));
    assert!(!progress_only(&old, &old), "no change at all is not progress");

    let mut succeeded = new.clone();
    succeeded.phase = Some(CsvPhase::Succeeded);
    succeeded.reason = Some(CsvReason::InstallSucceeded);
    assert!(
        !progress_only(&old, &succeeded),
        "a phase change is written at once"
    );

    let mut more = new.clone();
    more.requirement_status = vec![RequirementStatus {
        group: String::new(),
        version: "v1".into(),
        kind: "ServiceAccount".into(),
        name: "op".into(),
        status: StatusReason::Present,
        message: String::new(),
        uuid: None,
        dependents: Vec::new(),
    }];
    assert!(
        !progress_only(&old, &more),
        "a change besides the message is written at once"
    );

    let mut later = new.clone();
    later.last_update_time = Some(t(60));
    assert!(progress_only(&old, &later), "timestamps aside");
}

#[test]
fn a_new_csv_missing_only_its_own_plans_service_accounts_waits_for_them_without_a_write() {
    let new_csv = ClusterServiceVersionStatus::default();
    let pending = CsvDecision::to(
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        "one or more requirements couldn't be found",
    );
    let mut status = new_csv.clone();
    status.phase = Some(CsvPhase::Pending);
    status.reason = Some(CsvReason::RequirementsNotMet);
    assert_eq!(
        write_waits(&new_csv, &status, &pending, || true, None),
        Some(OWN_PLAN_REQUEUE)
    );
    assert_eq!(
        write_waits(&new_csv, &status, &pending, || false, None),
        None,
        "no plan of its own still applying: written at once"
    );
    let was_pending = status.clone();
    assert_eq!(
        write_waits(&was_pending, &status, &pending, || panic!("not asked"), None),
        None,
        "a CSV that already has a phase reports it as usual"
    );
    let ready = CsvDecision::to(
        CsvPhase::InstallReady,
        CsvReason::AllRequirementsMet,
        "all requirements found",
    );
    assert_eq!(
        write_waits(&new_csv, &status, &ready, || panic!("not asked"), None),
        None
    );
}

#[test]
fn a_progress_message_waits_for_the_rest_of_the_interval_after_the_last_write() {
    let old = waiting("deployment op: waiting for the new spec to be observed");
    let new = waiting("deployment op is not available: 0 of 1 updated replicas are available");
    let decision = CsvDecision::to(CsvPhase::Installing, CsvReason::InstallWaiting, "installing");
    let quarter = PROGRESS_INTERVAL / 4;
    assert_eq!(
        write_waits(&old, &new, &decision, || false, Some(quarter)),
        Some(PROGRESS_INTERVAL - quarter)
    );
    assert_eq!(
        write_waits(&old, &new, &decision, || false, Some(PROGRESS_INTERVAL)),
        None,
        "the interval is over"
    );
    assert_eq!(
        write_waits(&old, &new, &decision, || false, None),
        None,
        "no write remembered"
    );
    let mut done = new.clone();
    done.phase = Some(CsvPhase::Succeeded);
    done.reason = Some(CsvReason::InstallSucceeded);
    assert_eq!(
        write_waits(&old, &done, &decision, || false, Some(quarter)),
        None,
        "a phase change is written at once"
    );
}

// ── Subscription spec.config ─────────────────────────────────────────────────────────

fn overrides(config: serde_json::Value) -> SubscriptionOverrides {
    SubscriptionOverrides {
        subscription: "operators/redis".into(),
        config: serde_json::from_value(config).unwrap(),
    }
}

#[test]
fn a_changed_subscription_config_is_a_drift_that_reinstalls_the_merged_deployments() {
    let csv = Csv::test()
        .member_of("og", "operators")
        .phase(CsvPhase::Succeeded)
        .reason(CsvReason::InstallSucceeded)
        .build();
    let mut observed = with_healthy(ready(), &csv);
    observed.overrides = Some(overrides(json!({
        "env": [{"name": "HTTP_PROXY", "value": "http://proxy:3128"}],
        "nodeSelector": {"disk": "ssd"}
    })));
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::InstallReady, CsvReason::ComponentUnhealthy)
    );
    let mut installing = csv.clone();
    d.apply_to(installing.status.as_mut().unwrap(), &t(0));
    let d = decide(&installing, &observed, &t(1));
    assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallSucceeded));
    let pod = d.desired_deployments[0].spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.node_selector.as_ref().unwrap()["disk"], "ssd");
    let env = pod.containers[0].env.as_ref().unwrap();
    assert!(env.iter().any(|e| e.name == "HTTP_PROXY"), "{env:?}");
    // Once applied (the observed hash is the merged one), the CSV is healthy again.
    let merged_hash = d.desired_deployments[0].labels()[DEPLOYMENT_SPEC_HASH].clone();
    let mut dep = healthy_deployment(&csv);
    dep.spec_hash = Some(merged_hash);
    let observed = observed.with_deployment("redis-operator", dep);
    assert_eq!(
        outcome(&decide(&csv, &observed, &t(2))),
        (CsvPhase::Succeeded, CsvReason::InstallSucceeded)
    );
}

#[test]
fn no_config_keeps_the_spec_hash_of_before() {
    let csv = Csv::test().build();
    let plain = desired_deployments(&csv, &annotations_for(&csv), None).unwrap();
    let empty = desired_deployments(&csv, &annotations_for(&csv), Some(&overrides(json!({})))).unwrap();
    assert_eq!(plain, empty);
}

#[test]
fn an_invalid_subscription_config_fails_the_install_and_stays_failed_until_fixed() {
    let bad = overrides(json!({"volumeMounts": [{"name": "nowhere", "mountPath": "/x"}]}));
    let csv = Csv::test()
        .member_of("og", "operators")
        .phase(CsvPhase::InstallReady)
        .build();
    let observed = Observed {
        overrides: Some(bad),
        ..ready()
    };
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::InstallComponentFailed));
    assert!(d.desired_deployments.is_empty());
    assert!(
        d.message
            .contains("Subscription operators/redis: spec.config.volumeMounts[0] mounts volume \"nowhere\""),
        "{}",
        d.message
    );
    // A Succeeded CSV whose config turns invalid fails the same way.
    let succeeded = Csv::test()
        .member_of("og", "operators")
        .phase(CsvPhase::Succeeded)
        .build();
    let healthy = with_healthy(observed.clone(), &succeeded);
    assert_eq!(
        outcome(&decide(&succeeded, &healthy, &t(0))),
        (CsvPhase::Failed, CsvReason::InstallComponentFailed)
    );
    // Failed with the config still invalid: no reinstall loop.
    let failed = Csv::test()
        .member_of("og", "operators")
        .phase(CsvPhase::Failed)
        .reason(CsvReason::InstallComponentFailed)
        .build();
    assert_eq!(
        outcome(&decide(&failed, &healthy, &t(0))),
        (CsvPhase::Failed, CsvReason::InstallComponentFailed)
    );
    // Fixed: the CSV is reinstalled.
    let fixed = Observed {
        overrides: Some(overrides(json!({"env": [{"name": "A", "value": "1"}]}))),
        ..with_healthy(ready(), &succeeded)
    };
    assert_eq!(
        outcome(&decide(&failed, &fixed, &t(0))),
        (CsvPhase::Pending, CsvReason::NeedsReinstall)
    );
}

// ── failures outside the state machine ───────────────────────────────────────────────

fn install_plan(
    name: &str,
    csv: &str,
    phase: &str,
    message: Option<&str>,
    created: i64,
) -> v1alpha1::InstallPlan {
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": name, "namespace": "operators",
                     "creationTimestamp": format!("1970-01-01T00:{:02}:00Z", created)},
        "spec": {"clusterServiceVersionNames": [csv], "approval": "Automatic", "approved": true},
        "status": {"phase": phase, "catalogSources": [], "plan": [], "message": message}
    }))
    .unwrap()
}

fn failed_plan() -> OwnPlanState {
    OwnPlanState::Failed {
        plan: "install-abc".into(),
        message: "api-server resource not found installing PrometheusRule operators/rules".into(),
    }
}

#[test]
fn the_own_plan_state_is_the_newest_plan_naming_the_csv_unless_one_completed() {
    let failed = install_plan(
        "install-a",
        ME,
        "Failed",
        Some("error creating PrometheusRule x"),
        1,
    );
    let retrying = install_plan(
        "install-b",
        ME,
        "Installing",
        Some("retrying execution due to error"),
        2,
    );
    let quiet = install_plan("install-c", ME, "Installing", None, 3);
    let complete = install_plan("install-d", ME, "Complete", None, 0);
    let other = install_plan("install-e", OLD, "Failed", Some("boom"), 9);
    assert_eq!(
        own_plan_state(ME, [&failed, &other]),
        Some(OwnPlanState::Failed {
            plan: "install-a".into(),
            message: "error creating PrometheusRule x".into()
        })
    );
    assert_eq!(
        own_plan_state(ME, [&failed, &retrying]),
        Some(OwnPlanState::Retrying {
            plan: "install-b".into(),
            message: "retrying execution due to error".into()
        })
    );
    assert_eq!(own_plan_state(ME, [&failed, &retrying, &quiet]), None);
    assert_eq!(own_plan_state(ME, [&failed, &complete]), None);
    assert_eq!(own_plan_state(ME, [&other]), None);
}

#[test]
fn a_csv_whose_install_plan_failed_is_never_succeeded_and_stays_pending_naming_the_step() {
    let mut observed_ready = ready();
    observed_ready.own_plan = Some(failed_plan());
    // Pending with every requirement met: stays Pending.
    let pending = Csv::test()
        .member_of("og", "operators")
        .phase(CsvPhase::Pending)
        .build();
    let d = decide(&pending, &observed_ready, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsNotMet));
    assert!(d.message.contains("InstallPlan install-abc"), "{}", d.message);
    assert!(
        d.message.contains("PrometheusRule operators/rules"),
        "{}",
        d.message
    );
    assert!(d.desired_deployments.is_empty());
    // Installing, Succeeded or Failed with healthy Deployments: back to Pending.
    for phase in [CsvPhase::Installing, CsvPhase::Succeeded, CsvPhase::Failed] {
        let csv = Csv::test()
            .member_of("og", "operators")
            .phase(phase.clone())
            .reason(CsvReason::InstallSucceeded)
            .transitioned_at(t(0))
            .build();
        let d = decide(&csv, &with_healthy(observed_ready.clone(), &csv), &t(10));
        assert_eq!(
            outcome(&d),
            (CsvPhase::Pending, CsvReason::RequirementsNotMet),
            "from {phase:?}"
        );
    }
}

#[test]
fn a_csv_whose_install_plan_retries_a_failed_step_waits_installing() {
    let csv = Csv::test()
        .phase(CsvPhase::Installing)
        .transitioned_at(t(0))
        .build();
    let mut observed = with_healthy(ready(), &csv);
    observed.own_plan = Some(OwnPlanState::Retrying {
        plan: "install-abc".into(),
        message: "retrying execution due to error: error creating Service x".into(),
    });
    let d = decide(&csv, &observed, &t(10));
    assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallWaiting));
    assert!(
        d.message.contains("waiting for InstallPlan install-abc"),
        "{}",
        d.message
    );
    assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
    // Without a plan problem the same CSV succeeds.
    observed.own_plan = None;
    assert_eq!(
        outcome(&decide(&csv, &observed, &t(10))),
        (CsvPhase::Succeeded, CsvReason::InstallSucceeded)
    );
}

#[test]
fn a_refused_object_fails_the_install_naming_the_object_and_the_fix() {
    let missing_ns = ApplyFailure {
        object: "Role team-b/redis-operator.v1.1.0".into(),
        code: 404,
        detail: "namespaces \"team-b\" not found (HTTP 404 NotFound)".into(),
        missing_namespace: Some("team-b".into()),
    };
    let d = apply_failed(&missing_ns, Some("og"));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::InstallComponentFailed));
    assert_eq!(
        d.message,
        "install strategy failed: could not apply Role team-b/redis-operator.v1.1.0: namespaces \
         \"team-b\" not found (HTTP 404 NotFound); namespace team-b does not exist: create it, or \
         remove it from the target namespaces of OperatorGroup og"
    );
    assert_eq!(d.requeue_after, Some(failures::APPLY_RETRY));
    let invalid = ApplyFailure {
        object: "Deployment operators/redis-operator".into(),
        code: 422,
        detail: "Deployment.apps \"redis-operator\" is invalid: spec.template: Invalid (HTTP 422 Invalid)"
            .into(),
        missing_namespace: None,
    };
    let d = apply_failed(&invalid, Some("og"));
    assert!(d.message.contains("Deployment operators/redis-operator"));
    assert!(d.message.ends_with(
        "fix the bundle's install strategy, or the Subscription's spec.config if it sets this field"
    ));
    let forbidden = ApplyFailure {
        code: 403,
        ..invalid.clone()
    };
    assert!(
        apply_failed(&forbidden, None)
            .message
            .contains("grant olm-rs's ServiceAccount")
    );
    let not_served = ApplyFailure { code: 404, ..invalid };
    assert!(
        apply_failed(&not_served, None)
            .message
            .contains("install the CRD")
    );
}

#[test]
fn the_same_refusal_again_is_a_repeat_and_changes_nothing() {
    let failure = ApplyFailure {
        object: "Deployment operators/x".into(),
        code: 422,
        detail: "invalid".into(),
        missing_namespace: None,
    };
    let d = apply_failed(&failure, Some("og"));
    let mut old = ClusterServiceVersionStatus::default();
    assert!(!repeats_failure(&old, &d));
    d.apply_to(&mut old, &t(0));
    assert!(repeats_failure(&old, &d));
    let other = apply_failed(
        &ApplyFailure {
            detail: "other".into(),
            ..failure
        },
        Some("og"),
    );
    assert!(!repeats_failure(&old, &other));
}

#[test]
fn operator_condition_name_is_injected_after_the_subscription_config_as_upstream() {
    let csv = Csv::test().build();
    // The config's own OPERATOR_CONDITION_NAME loses to the CSV's name, in place; the bundle's
    // "stale" value was replaced in place too (it is the first variable).
    let config = overrides(json!({"env": [
        {"name": "HTTP_PROXY", "value": "http://proxy:3128"},
        {"name": OPERATOR_CONDITION_ENV, "value": "from-config"}
    ]}));
    let deployments = desired_deployments(&csv, &annotations_for(&csv), Some(&config)).unwrap();
    let env = deployments[0].spec.template.spec.as_ref().unwrap().containers[0]
        .env
        .clone()
        .unwrap();
    let names: Vec<(&str, Option<&str>)> = env
        .iter()
        .map(|e| (e.name.as_str(), e.value.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            (OPERATOR_CONDITION_ENV, Some(ME)),
            ("HTTP_PROXY", Some("http://proxy:3128"))
        ]
    );
}

#[test]
fn requirement_entries_are_written_as_upstream_writes_them() {
    let observed = Observed {
        server_version: Some("v1.37.2".into()),
        ..ready()
    };
    let (met, reqs) = requirement_status(&Csv::test().min_kube_version("1.25.0").build(), &observed);
    assert!(met);
    let kinds: Vec<&str> = reqs.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "ClusterServiceVersion",
            "CustomResourceDefinition",
            "ServiceAccount"
        ]
    );
    assert_eq!(reqs[0].group, "operators.coreos.com");
    assert_eq!(reqs[0].version, "v1alpha1");
    assert_eq!(
        reqs[0].message,
        "CSV minKubeVersion (1.25.0) less than server version (v1.37.2)"
    );
    let sa = &reqs[2];
    assert_eq!(
        (sa.status.clone(), sa.message.as_str(), sa.uuid.as_deref()),
        (StatusReason::Present, "", None)
    );
    assert_eq!(sa.dependents.len(), 1);
    let rule = &sa.dependents[0];
    assert_eq!(
        (
            rule.group.as_str(),
            rule.version.as_str(),
            rule.kind.as_str(),
            rule.status.clone()
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "PolicyRule",
            StatusReason::Satisfied
        )
    );
    assert_eq!(
        rule.message.as_deref(),
        Some(r#"namespaced rule:{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}"#)
    );
    // A missing account has no dependents and fails the check.
    let observed = Observed {
        server_version: Some("v1.37.2".into()),
        ..Observed::default()
    };
    let (met, reqs) = requirement_status(&Csv::test().build(), &observed);
    assert!(!met);
    let sa = reqs.iter().find(|r| r.kind == "ServiceAccount").unwrap();
    assert_eq!(sa.status, StatusReason::NotPresent);
    assert!(sa.dependents.is_empty());
}

#[test]
fn a_status_that_changes_carries_an_empty_cleanup_as_go_writes_it() {
    let csv = Csv::test().phase(CsvPhase::Pending).build();
    let d = decide(&csv, &ready(), &t(0));
    let mut status = csv.status.clone().unwrap_or_default();
    status.cleanup = None;
    assert!(d.apply_to(&mut status, &t(0)));
    assert_eq!(serde_json::to_value(&status).unwrap()["cleanup"], json!({}));
    // Nothing changed: nothing added (no write of its own).
    let mut settled = status.clone();
    settled.cleanup = None;
    assert!(!d.apply_to(&mut settled, &t(1)));
    assert!(settled.cleanup.is_none());
}

fn rival_providing(csv: &ClusterServiceVersion, targets: &[&str]) -> group_conflict::ProvidingGroup {
    group_conflict::ProvidingGroup {
        namespace: "elsewhere".into(),
        name: "rival".into(),
        namespaces: Some(targets.iter().map(|s| (*s).to_owned()).collect()),
        provided_apis: crate::plan::user_roles::provided_apis(csv)
            .unwrap()
            .into_iter()
            .map(|a| a.key)
            .collect(),
        static_apis: false,
    }
}

#[test]
fn an_api_another_intersecting_group_provides_fails_the_csv_and_deletes_its_deployments() {
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let observed = Observed {
        providing_groups: vec![rival_providing(&csv, &[""])],
        ..with_healthy(ready(), &csv)
    };
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::Failed, CsvReason::InterOperatorGroupOwnerConflict)
    );
    assert_eq!(d.message, "intersecting operatorgroups provide the same apis");
    assert_eq!(d.stale_deployments, vec!["redis-operator".to_owned()]);
    assert_eq!(d.requeue_after, Some(GROUP_CONFLICT_REQUEUE));
}

#[test]
fn a_new_csv_that_passes_the_group_check_claims_its_apis_and_a_conflict_gives_them_up() {
    // A CSV with no phase yet: its first decision already rests on its claim, so the shell
    // takes it before the CSV gets anywhere near a Deployment.
    let csv = Csv::test().build();
    let d = decide(&csv, &ready(), &t(0));
    let claim = d.claim.clone().expect("a claim");
    assert_eq!(
        (claim.group_namespace.as_str(), claim.group_name.as_str()),
        ("operators", "og")
    );
    assert_eq!(claim.csv_name, csv.name_any());
    assert_eq!(claim.apis, rival_providing(&csv, &[]).provided_apis);
    assert!(!d.gives_up_claim());
    // A rival's claim taken meanwhile (the overlay): the CSV fails at once, with nothing to
    // delete, and gives up its claim.
    let mut claims = group_conflict::Claims::default();
    let mut rival = rival_providing(&csv, &[""]);
    let rival_apis = std::mem::take(&mut rival.provided_apis);
    claims
        .take(
            group_conflict::Claim {
                csv_namespace: "elsewhere".into(),
                csv_name: csv.name_any(),
                group_namespace: "elsewhere".into(),
                group_name: "rival".into(),
                apis: rival_apis,
            },
            std::slice::from_ref(&rival),
        )
        .expect("the rival claims first");
    let observed = Observed {
        providing_groups: claims.overlay(&[rival]),
        ..ready()
    };
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::Failed, CsvReason::InterOperatorGroupOwnerConflict)
    );
    assert!(d.desired_deployments.is_empty() && d.stale_deployments.is_empty());
    assert!(d.claim.is_none() && d.gives_up_claim());
}

#[test]
fn a_rival_group_with_disjoint_targets_does_not_conflict_and_a_gone_conflict_goes_pending() {
    let csv = Csv::test().phase(CsvPhase::Pending).build();
    let observed = Observed {
        providing_groups: vec![rival_providing(&csv, &["elsewhere"])],
        ..ready()
    };
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::InstallReady, CsvReason::AllRequirementsMet)
    );
    let failed = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::InterOperatorGroupOwnerConflict)
        .build();
    let d = decide(&failed, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsUnknown));
}

#[test]
fn a_static_group_not_listing_the_csvs_api_fails_it_until_the_annotation_lists_it() {
    let csv = Csv::test().phase(CsvPhase::Pending).build();
    let mut own = rival_providing(&csv, &["operators"]);
    own.namespace = "operators".into();
    own.name = "og".into();
    own.static_apis = true;
    let listed = own.provided_apis.clone();
    own.provided_apis.clear();
    let observed = Observed {
        providing_groups: vec![own.clone()],
        ..with_healthy(ready(), &csv)
    };
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (
            CsvPhase::Failed,
            CsvReason::CannotModifyStaticOperatorGroupProvidedApis
        )
    );
    assert!(
        d.message.starts_with(group_conflict::STATIC_MESSAGE)
            && d.message.contains("OperatorGroup operators/og"),
        "{}",
        d.message
    );
    assert_eq!(d.stale_deployments, vec!["redis-operator".to_owned()]);
    // The admin lists the API: the failed CSV starts over.
    own.provided_apis = listed;
    let observed = Observed {
        providing_groups: vec![own],
        ..ready()
    };
    let failed = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::CannotModifyStaticOperatorGroupProvidedApis)
        .build();
    let d = decide(&failed, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsUnknown));
}

#[test]
fn required_api_services_not_owned_are_requirements_as_upstream_checks_them() {
    let mut csv = Csv::test().build();
    let desc = |group: &str, version: &str| v1alpha1::ApiServiceDescription {
        name: "things".into(),
        group: group.into(),
        version: version.into(),
        kind: "Thing".into(),
        ..Default::default()
    };
    csv.spec.api_service_definitions = Some(v1alpha1::ApiServiceDefinitions {
        owned: vec![desc("mine.example.com", "v1")],
        required: vec![
            desc("metrics.k8s.io", "v1beta1"),
            desc("mine.example.com", "v1"),
            desc("metrics.k8s.io", "v1beta1"),
            desc("custom.example.com", "v1"),
        ],
    });
    assert_eq!(
        required_api_service_names(&csv),
        ["v1.custom.example.com", "v1beta1.metrics.k8s.io"],
        "owned ones and repeats left out, sorted"
    );
    let entry = |reqs: &[RequirementStatus], name: &str| {
        reqs.iter()
            .find(|r| r.kind == "APIService" && r.name == name)
            .map(|r| (r.status.clone(), r.uuid.clone()))
    };
    // Missing: not met.
    let (met, reqs) = requirement_status(&csv, &ready());
    assert!(!met);
    assert_eq!(
        entry(&reqs, "v1beta1.metrics.k8s.io"),
        Some((StatusReason::NotPresent, None))
    );
    // Present but one not Available: still not met.
    let mut observed = ready();
    for (name, available) in [("v1beta1.metrics.k8s.io", true), ("v1.custom.example.com", false)] {
        observed.required_api_services.insert(
            name.into(),
            RequiredApiService {
                available,
                uid: Some(format!("uid-{name}")),
            },
        );
    }
    let (met, reqs) = requirement_status(&csv, &observed);
    assert!(!met);
    assert_eq!(
        entry(&reqs, "v1.custom.example.com"),
        Some((StatusReason::NotPresent, Some("uid-v1.custom.example.com".into())))
    );
    // Both Available: met, with their uids.
    observed
        .required_api_services
        .get_mut("v1.custom.example.com")
        .unwrap()
        .available = true;
    let (met, reqs) = requirement_status(&csv, &observed);
    assert!(met);
    assert_eq!(
        entry(&reqs, "v1beta1.metrics.k8s.io"),
        Some((StatusReason::Present, Some("uid-v1beta1.metrics.k8s.io".into())))
    );
}

// ── installs that heal (issue 27) ─────────────────────────────────────────────────────

/// A `Complete` InstallPlan of the namespace `operators` whose steps create the generated
/// RBAC of `csv` (as `bundle_steps` writes them), plus `extra` steps `(kind, manifest)`.
fn complete_plan(csv: &ClusterServiceVersion, extra: &[(&str, serde_json::Value)]) -> v1alpha1::InstallPlan {
    let rbac = crate::plan::steps::generated_rbac(ME, "operators", "redis", &csv.spec.install.spec);
    let mut steps: Vec<(String, serde_json::Value)> = Vec::new();
    let mut add = |kind: &str, value: serde_json::Value| steps.push((kind.to_owned(), value));
    rbac.service_accounts
        .iter()
        .for_each(|o| add("ServiceAccount", serde_json::to_value(o).unwrap()));
    rbac.roles
        .iter()
        .for_each(|o| add("Role", serde_json::to_value(o).unwrap()));
    rbac.role_bindings
        .iter()
        .for_each(|o| add("RoleBinding", serde_json::to_value(o).unwrap()));
    for (kind, manifest) in extra {
        add(kind, manifest.clone());
    }
    let plan: Vec<serde_json::Value> = steps
        .into_iter()
        .map(|(kind, mut manifest)| {
            manifest["kind"] = json!(kind);
            manifest["apiVersion"] = json!(if kind == "ServiceAccount" {
                "v1"
            } else {
                "rbac.authorization.k8s.io/v1"
            });
            json!({
                "resolving": ME, "status": "Created",
                "resource": {"sourceName": "c", "sourceNamespace": "olm", "group": "", "version": "v1",
                             "kind": kind, "name": manifest["metadata"]["name"],
                             "manifest": manifest.to_string()}
            })
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": "install-abcde", "namespace": "operators", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"clusterServiceVersionNames": [ME], "approval": "Automatic", "approved": true},
        "status": {"phase": "Complete", "catalogSources": [], "plan": plan}
    }))
    .unwrap()
}

/// The components of `plan`, each live exactly as its manifest (all in place).
fn components_in_place(
    csv: &ClusterServiceVersion,
    plan: &v1alpha1::InstallPlan,
) -> Vec<components::Component> {
    let mut components = desired_components(csv, [plan]);
    for c in &mut components {
        c.live = Some(c.manifest.clone());
    }
    components
}

fn without(mut components: Vec<components::Component>, kind: &str) -> Vec<components::Component> {
    for c in &mut components {
        if c.key.kind == kind {
            c.live = None;
        }
    }
    components
}

#[test]
fn a_deleted_deployment_fails_a_succeeded_csv_component_unhealthy_with_upstreams_message() {
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let d = decide(&csv, &ready(), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::ComponentUnhealthy));
    assert_eq!(
        d.message,
        "installing: missing deployment with name=redis-operator"
    );
    assert!(d.desired_deployments.is_empty(), "Failed applies nothing");

    // Then, as upstream's Failed phase: Pending NeedsReinstall, same message.
    let csv = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::ComponentUnhealthy)
        .build();
    let d = decide(&csv, &ready(), &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::NeedsReinstall));
    assert_eq!(
        d.message,
        "installing: missing deployment with name=redis-operator"
    );

    // And Pending installs it again.
    let csv = Csv::test()
        .phase(CsvPhase::Pending)
        .reason(CsvReason::NeedsReinstall)
        .build();
    assert_eq!(
        outcome(&decide(&csv, &ready(), &t(0))),
        (CsvPhase::InstallReady, CsvReason::AllRequirementsMet)
    );
}

#[test]
fn an_installing_csv_applies_a_deleted_deployment_again_without_waiting_for_the_timeout() {
    let csv = Csv::test()
        .phase(CsvPhase::Installing)
        .reason(CsvReason::InstallWaiting)
        .transitioned_at(t(0))
        .build();
    // Just applied: the store may lag behind the apply; asked again when it cannot any more.
    let d = decide(&csv, &ready(), &t(3));
    assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallWaiting));
    assert_eq!(
        d.message,
        "installing: missing deployment with name=redis-operator"
    );
    assert!(d.desired_deployments.is_empty() && d.missing.is_empty());
    assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
    let d = decide(&csv, &ready(), &t(7));
    assert_eq!(d.requeue_after, Some(Duration::from_secs(3)));
    // Past that: deleted, applied again, named for the Event.
    let d = decide(&csv, &ready(), &t(10));
    assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallWaiting));
    assert_eq!(
        d.message,
        "installing: missing deployment with name=redis-operator"
    );
    assert_eq!(d.desired_deployments.len(), 1);
    assert_eq!(d.missing, ["Deployment operators/redis-operator"]);
    assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));

    // A Deployment that exists and is rolling out is left alone.
    let mut rolling = healthy_deployment(&csv);
    rolling.available = false;
    let d = decide(&csv, &ready().with_deployment("redis-operator", rolling), &t(10));
    assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallWaiting));
    assert!(d.desired_deployments.is_empty() && d.missing.is_empty());

    // The install timeout still holds.
    let d = decide(&csv, &ready(), &t(301));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::InstallCheckFailed));
    assert!(d.desired_deployments.is_empty());
}

#[test]
fn a_deployment_scaled_to_zero_by_hand_is_left_as_it_is_as_upstream_does() {
    // Upstream compares the spec-hash label, not the live spec, and a Deployment of 0
    // replicas is Available: the CSV stays Succeeded and nothing is applied.
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let mut scaled = healthy_deployment(&csv);
    scaled.desired_replicas = 0;
    scaled.replicas = 0;
    scaled.updated_replicas = 0;
    scaled.available_replicas = 0;
    let d = decide(&csv, &ready().with_deployment("redis-operator", scaled), &t(0));
    assert_eq!(d.phase, CsvPhase::Succeeded);
    assert!(d.desired_deployments.is_empty() && d.restore.is_empty());
}

#[test]
fn the_components_are_the_rbac_of_the_newest_complete_plan_with_the_csv_as_owner() {
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let plan = complete_plan(&csv, &[]);
    let components = desired_components(&csv, [&plan]);
    let keys: Vec<String> = components.iter().map(|c| c.key.to_string()).collect();
    let role = crate::plan::steps::role_name(ME, &csv.spec.install.spec.permissions[0]);
    assert_eq!(
        keys,
        [
            "ServiceAccount operators/redis-operator".to_owned(),
            format!("Role operators/{role}"),
            format!("RoleBinding operators/{role}"),
        ]
    );
    let sa = &components[0].manifest;
    assert_eq!(sa["metadata"]["ownerReferences"][0]["uid"], json!("uid-me"));
    assert_eq!(sa["metadata"]["namespace"], json!("operators"));
    assert_eq!(components[0].plan, "install-abcde");

    // A plan still running (or failed) restores nothing: it is the one creating them.
    let mut running = plan.clone();
    running.status.as_mut().unwrap().phase = v1alpha1::InstallPlanPhase::Installing;
    assert!(desired_components(&csv, [&running]).is_empty());
    // Nor does a plan of another namespace.
    let mut elsewhere = plan;
    elsewhere.metadata.namespace = Some("other".into());
    assert!(desired_components(&csv, [&elsewhere]).is_empty());
}

#[test]
fn a_component_is_changed_only_when_a_field_the_install_sets_differs() {
    let csv = Csv::test().build();
    let plan = complete_plan(&csv, &[]);
    let mut components = components_in_place(&csv, &plan);
    assert!(components::issues(&components).is_empty());

    // Fields others add (labels, annotations), and empty values spelled out: not a change.
    let role = &mut components[1];
    role.live.as_mut().unwrap()["metadata"]["labels"]["team"] = json!("x");
    role.live.as_mut().unwrap()["rules"][0]["resourceNames"] = json!([]);
    assert!(components::issues(&components).is_empty());
    // A permission without rules (`rules: []`), which the API server stores without the field
    // (appian-operator's webhooks account): not a change, so never re-applied in a loop.
    let saved = (components[1].manifest.clone(), components[1].live.clone());
    components[1].manifest["rules"] = json!([]);
    if let Some(live) = components[1]
        .live
        .as_mut()
        .and_then(serde_json::Value::as_object_mut)
    {
        live.remove("rules");
    }
    assert!(components::issues(&components).is_empty());
    (components[1].manifest, components[1].live) = saved;

    // A rule edited away is.
    components[1].live.as_mut().unwrap()["rules"][0]["verbs"] = json!(["list"]);
    let issues = components::issues(&components);
    assert_eq!(issues.len(), 1);
    assert!(!issues[0].missing);
    assert_eq!(issues[0].event_reason(), "ComponentChanged");
    assert!(
        issues[0]
            .to_string()
            .ends_with("was changed from what the install set")
    );

    // A deleted one is missing.
    let issues = components::issues(&without(components_in_place(&csv, &plan), "RoleBinding"));
    assert_eq!(issues.len(), 1);
    assert!(issues[0].missing);
    assert!(
        issues[0]
            .to_string()
            .starts_with("missing RoleBinding operators/")
    );
}

#[test]
fn an_aggregated_cluster_role_is_compared_by_its_aggregation_rule_only() {
    let csv = Csv::test().build();
    let aggregated = json!({
        "metadata": {"name": "redis-view"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"redis/aggregate": "true"}}]}
    });
    let plan = complete_plan(&csv, &[("ClusterRole", aggregated)]);
    let mut components = components_in_place(&csv, &plan);
    let cr = components
        .iter_mut()
        .find(|c| c.key.kind == "ClusterRole")
        .unwrap();
    assert_eq!(cr.key.namespace, None);
    // The aggregation controller fills its rules: not ours to compare.
    cr.live.as_mut().unwrap()["rules"] =
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    assert!(components::issues(&components).is_empty());
    let cr = components
        .iter_mut()
        .find(|c| c.key.kind == "ClusterRole")
        .unwrap();
    cr.live.as_mut().unwrap()["aggregationRule"] = json!({"clusterRoleSelectors": []});
    assert_eq!(components::issues(&components).len(), 1);
}

#[test]
fn a_deleted_service_account_goes_the_requirement_way_and_pending_restores_it() {
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let plan = complete_plan(&csv, &[]);
    let mut observed = with_healthy(ready(), &csv);
    observed.service_accounts.clear();
    observed.components = without(components_in_place(&csv, &plan), "ServiceAccount");

    // Succeeded → Failed RequirementsNotMet (upstream's words), nothing written yet.
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::RequirementsNotMet));
    assert_eq!(d.message, "requirements no longer met");
    assert!(d.restore.is_empty());

    // Failed → Pending RequirementsNotMet.
    let failed = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::RequirementsNotMet)
        .build();
    let d = decide(&failed, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsNotMet));

    // Pending restores it from the plan's manifest, naming it.
    let pending = Csv::test()
        .phase(CsvPhase::Pending)
        .reason(CsvReason::RequirementsNotMet)
        .build();
    let d = decide(&pending, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsNotMet));
    assert_eq!(d.restore.len(), 1);
    assert_eq!(
        d.restore[0].key.to_string(),
        "ServiceAccount operators/redis-operator"
    );
    assert_eq!(d.restore[0].event_reason(), "ComponentMissing");
    assert_eq!(d.restore[0].manifest["kind"], json!("ServiceAccount"));

    // Back: installed again, nothing more to restore.
    let observed = with_healthy(ready(), &csv);
    let observed = Observed {
        components: components_in_place(&csv, &plan),
        ..observed
    };
    let d = decide(&pending, &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::InstallReady, CsvReason::AllRequirementsMet)
    );
    assert!(d.restore.is_empty());
}

#[test]
fn a_deleted_role_or_binding_leaves_the_service_account_present_not_satisfied_as_upstream() {
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let plan = complete_plan(&csv, &[]);
    for kind in ["Role", "RoleBinding"] {
        let observed = Observed {
            components: without(components_in_place(&csv, &plan), kind),
            ..with_healthy(ready(), &csv)
        };
        let (met, reqs) = requirement_status(&csv, &observed);
        assert!(!met, "{kind}");
        let sa = reqs.iter().find(|r| r.kind == "ServiceAccount").unwrap();
        assert_eq!(sa.status, StatusReason::PresentNotSatisfied);
        assert_eq!(sa.message, "Policy rule not satisfied for service account");
        assert!(
            sa.dependents
                .iter()
                .all(|d| d.status == StatusReason::NotSatisfied)
        );
        assert_eq!(
            outcome(&decide(&csv, &observed, &t(0))),
            (CsvPhase::Failed, CsvReason::RequirementsNotMet)
        );
        let pending = Csv::test()
            .phase(CsvPhase::Pending)
            .reason(CsvReason::RequirementsNotMet)
            .build();
        let d = decide(&pending, &observed, &t(0));
        assert_eq!(d.restore.len(), 1, "{kind}");
        assert_eq!(d.restore[0].key.kind, kind);
    }
    // All in place: Satisfied, and a Succeeded CSV stays so.
    let observed = Observed {
        components: components_in_place(&csv, &plan),
        ..with_healthy(ready(), &csv)
    };
    let (met, reqs) = requirement_status(&csv, &observed);
    assert!(met);
    let sa = reqs.iter().find(|r| r.kind == "ServiceAccount").unwrap();
    assert!(sa.dependents.iter().all(|d| d.status == StatusReason::Satisfied));
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(d.phase, CsvPhase::Succeeded);
    assert!(d.restore.is_empty() && d.desired_deployments.is_empty());
}

#[test]
fn a_missing_component_outside_the_requirements_goes_failed_then_needs_reinstall() {
    // A Role the bundle ships itself (no permission entry grants through it).
    let shipped = json!({
        "metadata": {"name": "redis-extra"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    });
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let plan = complete_plan(&csv, &[("Role", shipped)]);
    let mut components = components_in_place(&csv, &plan);
    components
        .iter_mut()
        .filter(|c| c.key.name == "redis-extra")
        .for_each(|c| c.live = None);
    let observed = Observed {
        components,
        ..with_healthy(ready(), &csv)
    };
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::ComponentUnhealthy));
    assert_eq!(d.message, "installing: missing Role operators/redis-extra");
    let failed = Csv::test()
        .phase(CsvPhase::Failed)
        .reason(CsvReason::ComponentUnhealthy)
        .build();
    let d = decide(&failed, &observed, &t(0));
    assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::NeedsReinstall));
    let pending = Csv::test()
        .phase(CsvPhase::Pending)
        .reason(CsvReason::NeedsReinstall)
        .build();
    let d = decide(&pending, &observed, &t(0));
    assert_eq!(
        outcome(&d),
        (CsvPhase::InstallReady, CsvReason::AllRequirementsMet)
    );
    assert_eq!(d.restore.len(), 1);
    assert_eq!(d.restore[0].key.name, "redis-extra");
}

#[test]
fn a_succeeded_csv_puts_back_the_rbac_of_its_target_namespaces_without_a_phase_change() {
    // An AllNamespaces group: the install's ClusterRole and ClusterRoleBinding for
    // `permissions` (upstream `ensureSingletonRBAC`, ensured on every sync).
    let csv = Csv::test().phase(CsvPhase::Succeeded).build();
    let targets = [String::new()];
    let mut annotations = csv.annotations().clone();
    annotations.extend(member_annotations("og", "operators", &targets));
    let desired = desired_deployments(&csv, &annotations, None).unwrap();
    let healthy = ObservedDeployment {
        spec_hash: desired[0].labels().get(DEPLOYMENT_SPEC_HASH).cloned(),
        ..healthy_deployment(&csv)
    };
    let mut observed = Observed::default()
        .with_og("og", &[""])
        .with_crd(CRD, established())
        .with_service_account("redis-operator", &[ME])
        .with_deployment("redis-operator", healthy);
    observed.target_components = components::target_components(&csv, &targets);
    let kinds: Vec<&str> = observed
        .target_components
        .iter()
        .map(|c| c.key.kind.as_str())
        .collect();
    assert_eq!(kinds, ["ClusterRole", "ClusterRoleBinding"]);

    let d = decide(&csv, &observed, &t(0));
    assert_eq!(d.phase, CsvPhase::Succeeded, "{}", d.message);
    assert_eq!(d.restore.len(), 2);
    assert!(d.restore.iter().all(|i| i.missing && i.plan.is_empty()));

    for c in &mut observed.target_components {
        c.live = Some(c.manifest.clone());
    }
    let d = decide(&csv, &observed, &t(0));
    assert_eq!(d.phase, CsvPhase::Succeeded);
    assert!(d.restore.is_empty());
}

#[test]
fn the_package_is_read_from_the_properties_annotation() {
    let mut csv = Csv::test().build();
    csv.metadata.annotations = Some(BTreeMap::from([(
        "operatorframework.io/properties".to_owned(),
        r#"{"properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}"#.to_owned(),
    )]));
    assert_eq!(package_of(&csv), "a");
    csv.metadata.annotations = None;
    assert_eq!(package_of(&csv), "");
}

#[test]
fn a_reinstall_names_what_it_puts_back_and_a_first_install_names_nothing() {
    let mut csv = Csv::test()
        .phase(CsvPhase::InstallReady)
        .reason(CsvReason::AllRequirementsMet)
        .build();
    let d = decide(&csv, &ready(), &t(0));
    assert_eq!(d.phase, CsvPhase::Installing);
    assert_eq!(d.desired_deployments.len(), 1);
    assert!(d.missing.is_empty(), "a first install: {:?}", d.missing);

    csv.status.as_mut().unwrap().conditions = vec![v1alpha1::ClusterServiceVersionCondition {
        phase: Some(CsvPhase::Succeeded),
        reason: Some(CsvReason::InstallSucceeded),
        ..Default::default()
    }];
    let d = decide(&csv, &ready(), &t(0));
    assert_eq!(d.missing, ["Deployment operators/redis-operator"]);
    // Present, it is not named (and not rolled: the shell skips an up-to-date Deployment).
    let d = decide(&csv, &with_healthy(ready(), &csv), &t(0));
    assert!(d.missing.is_empty());
}
