use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

use super::*;
use crate::api::v2::OverrideCondition;

fn csv(strategy: serde_json::Value) -> ClusterServiceVersion {
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "redis-operator.v1.0.0", "namespace": "ops", "uid": "csv-uid"},
        "spec": {"displayName": "Redis", "version": "1.0.0",
                 "install": {"strategy": "deployment", "spec": strategy}}
    }))
    .expect("a valid CSV")
}

fn oc(value: serde_json::Value) -> OperatorCondition {
    let mut base = json!({
        "apiVersion": "operators.coreos.com/v2",
        "kind": "OperatorCondition",
        "metadata": {"name": "redis-operator.v1.0.0", "namespace": "ops", "uid": "oc-uid", "generation": 2},
        "spec": {}
    });
    if let (Some(base), Some(extra)) = (base.as_object_mut(), value.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(base).expect("a valid OperatorCondition")
}

fn cond(status: &str, message: &str, generation: i64) -> serde_json::Value {
    json!({"type": "Upgradeable", "status": status, "reason": "Test", "message": message,
           "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": generation})
}

#[test]
fn the_desired_operator_condition_is_named_and_owned_like_its_csv_with_its_deployments_and_accounts() {
    let csv = csv(json!({
        "deployments": [{"name": "redis-operator", "spec": {"selector": {}, "template": {}}},
                        {"name": "redis-metrics", "spec": {"selector": {}, "template": {}}}],
        "permissions": [{"serviceAccountName": "redis-sa", "rules": []}],
        "clusterPermissions": [{"serviceAccountName": "redis-cluster-sa", "rules": []},
                               {"serviceAccountName": "redis-sa", "rules": []}]
    }));
    let oc = desired(&csv).expect("the CSV has a uid");
    let value = serde_json::to_value(&oc).expect("serialises");
    assert_eq!(
        value,
        json!({
            "apiVersion": "operators.coreos.com/v2",
            "kind": "OperatorCondition",
            "metadata": {
                "name": "redis-operator.v1.0.0",
                "namespace": "ops",
                "ownerReferences": [{
                    "apiVersion": "operators.coreos.com/v1alpha1",
                    "kind": "ClusterServiceVersion",
                    "name": "redis-operator.v1.0.0",
                    "uid": "csv-uid",
                    "controller": true,
                    "blockOwnerDeletion": false
                }]
            },
            // clusterPermissions first, then permissions, duplicates kept (as upstream).
            "spec": {
                "serviceAccounts": ["redis-cluster-sa", "redis-sa", "redis-sa"],
                "deployments": ["redis-operator", "redis-metrics"]
            }
        }),
        "only OLM's fields: spec.conditions and spec.overrides are left to their owners"
    );
}

#[test]
fn a_csv_without_permissions_runs_as_default_and_one_without_a_uid_gets_nothing_yet() {
    let mut csv = csv(json!({"deployments": []}));
    let oc = desired(&csv).expect("uid");
    assert_eq!(oc.spec.service_accounts, ["default"]);
    assert!(oc.spec.deployments.is_empty());
    csv.metadata.uid = None;
    assert!(desired(&csv).is_none());
}

#[test]
fn the_operator_condition_carries_the_csvs_component_label_and_none_is_made_for_a_going_csv() {
    let mut csv = csv(json!({"deployments": []}));
    csv.metadata.labels = Some(
        [
            (
                "operators.coreos.com/redis-operator.ops".to_owned(),
                String::new(),
            ),
            ("olm.managed".to_owned(), "true".to_owned()),
        ]
        .into(),
    );
    let oc = desired(&csv).expect("uid");
    assert_eq!(
        oc.metadata.labels,
        Some(
            [(
                "operators.coreos.com/redis-operator.ops".to_owned(),
                String::new()
            )]
            .into()
        )
    );
    let mut seen = oc.clone();
    seen.metadata.labels = None;
    assert!(!up_to_date(&oc, &seen), "a lost label is put back");
    csv.status = Some(serde_json::from_value(json!({"phase": "Deleting"})).expect("a status"));
    assert!(desired(&csv).is_none());
}

#[test]
fn up_to_date_compares_only_what_olm_owns() {
    let desired = desired(&csv(json!({"deployments": []}))).expect("uid");
    let mut seen = desired.clone();
    seen.spec.overrides.push(OverrideCondition {
        type_: "Upgradeable".into(),
        status: "True".into(),
        reason: "Admin".into(),
        message: "go".into(),
        ..OverrideCondition::default()
    });
    seen.metadata.resource_version = Some("7".into());
    assert!(up_to_date(&desired, &seen));
    seen.spec.deployments.push("other".into());
    assert!(!up_to_date(&desired, &seen));
}

#[test]
fn the_role_lets_the_operator_get_update_and_patch_only_its_own_operator_condition() {
    let oc = oc(json!({"spec": {"serviceAccounts": ["redis-sa", "other-sa"]}}));
    let role = role(&oc).expect("uid");
    assert_eq!(
        serde_json::to_value(&role).expect("serialises"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {
                "name": "redis-operator.v1.0.0",
                "namespace": "ops",
                "labels": {"olm.managed": "true"},
                "ownerReferences": [{
                    "apiVersion": "operators.coreos.com/v2",
                    "kind": "OperatorCondition",
                    "name": "redis-operator.v1.0.0",
                    "uid": "oc-uid",
                    "controller": true,
                    "blockOwnerDeletion": false
                }]
            },
            "rules": [{
                "verbs": ["get", "update", "patch"],
                "apiGroups": ["operators.coreos.com"],
                "resources": ["operatorconditions"],
                "resourceNames": ["redis-operator.v1.0.0"]
            }]
        })
    );
    let binding = role_binding(&oc).expect("uid");
    let value = serde_json::to_value(&binding).expect("serialises");
    assert_eq!(
        value["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "redis-operator.v1.0.0"})
    );
    assert_eq!(
        value["subjects"],
        json!([{"kind": "ServiceAccount", "name": "redis-sa"},
               {"kind": "ServiceAccount", "name": "other-sa"}])
    );
    assert_eq!(
        value["metadata"],
        serde_json::to_value(&role.metadata).expect("meta")
    );
}

#[test]
fn spec_conditions_are_copied_into_the_status_at_the_objects_generation() {
    // New: copied with the operator's lastTransitionTime and the generation.
    let fresh = oc(json!({"spec": {"conditions": [cond("False", "migrating", 0)]}}));
    let status = synced_status(&fresh).expect("a new condition");
    assert_eq!(
        serde_json::to_value(&status.conditions).expect("serialises"),
        json!([cond("False", "migrating", 2)])
    );
    // Already there at this generation with the same status: nothing to write.
    let mut steady = fresh.clone();
    steady.status = Some(status);
    assert_eq!(synced_status(&steady), None);
    // Same status at an older generation (say an override was added): only the generation
    // (and reason/message) move, the stored lastTransitionTime stays.
    let mut older = steady.clone();
    older.metadata.generation = Some(3);
    older.spec.conditions[0].last_transition_time =
        Time(k8s_openapi::jiff::Timestamp::from_second(1_900_000_000).expect("a valid time"));
    let moved = synced_status(&older).expect("generation moved");
    assert_eq!(moved.conditions[0].observed_generation, Some(3));
    assert_eq!(
        serde_json::to_value(&moved.conditions[0].last_transition_time).expect("time"),
        json!("2026-01-01T00:00:00Z")
    );
    // Status flipped: the operator's lastTransitionTime is taken.
    let mut flipped = steady.clone();
    flipped.spec.conditions = vec![serde_json::from_value(cond("True", "done", 0)).expect("condition")];
    let status = synced_status(&flipped).expect("flipped");
    assert_eq!(
        serde_json::to_value(&status.conditions).expect("serialises"),
        json!([cond("True", "done", 2)])
    );
    // Conditions the operator wrote straight into the status (the v1 API) are kept.
    let v1_style = oc(json!({"status": {"conditions": [
        {"type": "Other", "status": "True", "reason": "R", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        "spec": {"conditions": [cond("False", "busy", 0)]}}));
    let status = synced_status(&v1_style).expect("a new condition");
    assert_eq!(status.conditions.len(), 2);
}

#[test]
fn no_operator_condition_or_no_upgradeable_condition_is_upgradeable() {
    assert_eq!(upgrade_blocker(None), None);
    assert_eq!(upgrade_blocker(Some(&oc(json!({})))), None);
    let other = oc(json!({"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "R", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 2}]}}));
    assert_eq!(upgrade_blocker(Some(&other)), None);
}

#[test]
fn upgradeable_false_in_the_status_holds_the_upgrade_with_its_message() {
    let held = oc(json!({"status": {"conditions": [cond("False", "a migration is running", 2)]}}));
    let block = upgrade_blocker(Some(&held)).expect("held");
    assert_eq!(
        block,
        UpgradeBlock::NotUpgradeable {
            message: "a migration is running".into()
        }
    );
    let message = not_upgradeable_message("redis-operator.v1.0.0", &block);
    assert!(
        message.starts_with(
            "operator is not upgradeable: OperatorCondition redis-operator.v1.0.0: a migration is running"
        ),
        "{message}"
    );
    assert!(message.contains("spec.overrides"), "says the way out: {message}");
    let fine = oc(json!({"status": {"conditions": [cond("True", "", 2)]}}));
    assert_eq!(upgrade_blocker(Some(&fine)), None);
}

#[test]
fn a_status_condition_observed_at_an_older_generation_is_outdated_and_holds() {
    let stale = oc(json!({"status": {"conditions": [cond("True", "", 1)]}}));
    assert_eq!(
        upgrade_blocker(Some(&stale)),
        Some(UpgradeBlock::Outdated {
            status: "True".into()
        })
    );
    // A newer observedGeneration (written straight into the status) is not outdated, as
    // upstream (`ObservedGeneration < Generation`).
    let ahead = oc(json!({"status": {"conditions": [cond("True", "", 3)]}}));
    assert_eq!(upgrade_blocker(Some(&ahead)), None);
    let ahead_false = oc(json!({"status": {"conditions": [cond("False", "busy", 3)]}}));
    assert_eq!(
        upgrade_blocker(Some(&ahead_false)),
        Some(UpgradeBlock::NotUpgradeable {
            message: "busy".into()
        })
    );
}

#[test]
fn overrides_take_precedence_over_the_operators_conditions() {
    let overridden_true = oc(json!({
        "spec": {"overrides": [{"type": "Upgradeable", "status": "True", "reason": "Admin", "message": "known issue"}]},
        "status": {"conditions": [cond("False", "busy", 2)]}
    }));
    assert_eq!(upgrade_blocker(Some(&overridden_true)), None);
    // Even a stale status condition does not matter under an override.
    let overridden_stale = oc(json!({
        "spec": {"overrides": [{"type": "Upgradeable", "status": "True", "reason": "Admin", "message": ""}]},
        "status": {"conditions": [cond("False", "busy", 1)]}
    }));
    assert_eq!(upgrade_blocker(Some(&overridden_stale)), None);
    let overridden_false = oc(json!({
        "spec": {"overrides": [{"type": "Upgradeable", "status": "False", "reason": "Admin", "message": "wait for the window"}]},
        "status": {"conditions": [cond("True", "", 2)]}
    }));
    assert_eq!(
        upgrade_blocker(Some(&overridden_false)),
        Some(UpgradeBlock::Override {
            status: "False".into(),
            message: "wait for the window".into()
        })
    );
    // Unknown is not True.
    let unknown = oc(json!({
        "spec": {"overrides": [{"type": "Upgradeable", "status": "Unknown", "reason": "Admin", "message": ""}]}
    }));
    assert!(upgrade_blocker(Some(&unknown)).is_some());
}

#[test]
fn the_v1_and_v2_objects_read_the_same_overrides() {
    let text = json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorCondition",
        "metadata": {"name": "x", "namespace": "ops"},
        "spec": {"overrides": [{"type": "Upgradeable", "status": "True", "reason": "Admin", "message": "ok"}]}});
    let v1: crate::api::v1::OperatorCondition = serde_json::from_value(text.clone()).expect("v1");
    let v2: OperatorCondition = serde_json::from_value(text).expect("v2 reads it too");
    assert_eq!(v1.spec.overrides, v2.spec.overrides);
}

#[test]
fn overrides_other_than_upgradeable_are_named_as_ignored() {
    let only_upgradeable = oc(json!({
        "spec": {"overrides": [{"type": "Upgradeable", "status": "False", "reason": "Admin", "message": ""}]}
    }));
    assert_eq!(ignored_overrides(&only_upgradeable), None);
    let mixed = oc(json!({
        "spec": {"overrides": [
            {"type": "Upgradeable", "status": "True", "reason": "Admin", "message": ""},
            {"type": "Degraded", "status": "True", "reason": "Admin", "message": ""},
            {"type": "Available", "status": "False", "reason": "Admin", "message": ""}
        ]}
    }));
    let message = ignored_overrides(&mixed).expect("named");
    assert!(message.contains("\"Degraded\", \"Available\""), "{message}");
    assert!(
        message.contains("only on an override of type Upgradeable"),
        "{message}"
    );
    assert_eq!(ignored_overrides(&oc(json!({"spec": {}}))), None);
}
