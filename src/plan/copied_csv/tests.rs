use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::*;

fn original(phase: &str, reason: &str) -> ClusterServiceVersion {
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": "redis-operator.v1.0.0",
            "namespace": "ops",
            "uid": "u-1",
            "resourceVersion": "42",
            "finalizers": ["operators.coreos.com/csv-cleanup"],
            "labels": {
                "operators.coreos.com/redis-operator.ops": "",
                "olm.managed": "true",
                "operatorframework.io/arch.amd64": "supported"
            },
            "annotations": {
                "olm.operatorGroup": "og",
                "olm.operatorNamespace": "ops",
                "olm.targetNamespaces": "ops,team-a",
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
                "capabilities": "Seamless Upgrades"
            }
        },
        "spec": {"displayName": "Redis", "version": "1.0.0", "install": {"strategy": "deployment"}},
        "status": {
            "phase": phase,
            "reason": reason,
            "message": "install strategy completed with no errors",
            "lastUpdateTime": "2025-01-01T00:00:00Z"
        }
    }))
    .expect("a valid CSV")
}

fn ns(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// The decision for `csv` in a group targeting `targets`, copies existing in `existing`.
fn decide_for(csv: &ClusterServiceVersion, targets: &[&str], existing: &[&str]) -> Decision {
    let (targets, existing) = (ns(targets), set(existing));
    decide(
        csv,
        &Observed {
            group_targets: Some(&targets),
            existing: &existing,
            ..Observed::default()
        },
    )
}

fn namespaces_of(d: &Decision) -> Vec<String> {
    d.apply
        .iter()
        .map(|c| c.namespace().unwrap_or_default())
        .collect()
}

#[test]
fn copy_is_upstreams_prototype() {
    let copy = copy_of(&original("Succeeded", "InstallSucceeded"), "team-a");
    assert_eq!(copy.namespace().as_deref(), Some("team-a"));
    assert_eq!(copy.name_any(), "redis-operator.v1.0.0");
    let labels = copy.labels();
    assert_eq!(labels.get("olm.copiedFrom").map(String::as_str), Some("ops"));
    assert_eq!(labels.get("olm.managed").map(String::as_str), Some("true"));
    assert!(labels.contains_key("operatorframework.io/arch.amd64"));
    assert!(!labels.keys().any(|k| k.starts_with("operators.coreos.com/")));
    let annotations = copy.annotations();
    assert_eq!(
        annotations.get("olm.operatorGroup").map(String::as_str),
        Some("og")
    );
    assert_eq!(
        annotations.get("olm.operatorNamespace").map(String::as_str),
        Some("ops")
    );
    assert!(!annotations.contains_key("olm.targetNamespaces"));
    assert!(!annotations.contains_key(LAST_APPLIED));
    assert!(copy.metadata.uid.is_none() && copy.metadata.resource_version.is_none());
    assert!(copy.metadata.finalizers.is_none() && copy.metadata.owner_references.is_none());
    let status = copy.status.as_ref().expect("status");
    assert_eq!(status.phase, Some(CsvPhase::Succeeded));
    assert_eq!(status.reason, Some(CsvReason::Copied));
    assert_eq!(
        status.message.as_deref(),
        Some("The operator is running in ops but is managing this namespace")
    );
    assert!(status.last_update_time.is_some());
    assert_eq!(copy.spec, original("Succeeded", "InstallSucceeded").spec);
    assert!(is_copy(&copy));
}

#[test]
fn copies_go_to_every_other_target_and_leave_dropped_ones() {
    let csv = original("Succeeded", "InstallSucceeded");
    let d = decide_for(&csv, &["ops", "team-a", "team-b"], &["team-c"]);
    assert_eq!(namespaces_of(&d), ns(&["team-a", "team-b"]));
    assert_eq!(d.delete, ns(&["team-c"]));
    assert!(!d.copying_disabled);
}

#[test]
fn an_unchanged_copy_is_not_applied_again_but_a_new_status_is() {
    let csv = original("Succeeded", "InstallSucceeded");
    let targets = ns(&["ops", "team-a"]);
    let existing = set(&["team-a"]);
    let applied: BTreeMap<String, u64> =
        [("team-a".to_owned(), fingerprint(&copy_of(&csv, "team-a")))].into();
    let observed = Observed {
        group_targets: Some(&targets),
        existing: &existing,
        applied: &applied,
        ..Observed::default()
    };
    assert_eq!(decide(&csv, &observed), Decision::default());
    let failed = original("Failed", "InstallCheckFailed");
    let d = decide(&failed, &observed);
    assert_eq!(namespaces_of(&d), ns(&["team-a"]));
    let status = d.apply[0].status.as_ref().expect("status");
    assert_eq!(
        (status.phase.clone(), status.reason.clone()),
        (Some(CsvPhase::Failed), Some(CsvReason::Copied))
    );
    // A copy someone deleted is applied again even though this process applied it before.
    let none = BTreeSet::new();
    let gone = Observed {
        existing: &none,
        ..observed
    };
    assert_eq!(namespaces_of(&decide(&csv, &gone)), ns(&["team-a"]));
}

#[test]
fn own_namespace_groups_have_no_copies() {
    let csv = original("Succeeded", "InstallSucceeded");
    let d = decide_for(&csv, &["ops"], &["team-a"]);
    assert!(d.apply.is_empty());
    assert_eq!(d.delete, ns(&["team-a"]));
}

#[test]
fn all_namespaces_copies_everywhere_unless_disabled() {
    let csv = original("Succeeded", "InstallSucceeded");
    let targets = ns(&[""]);
    let cluster = ns(&["default", "ops", "team-a"]);
    let existing = set(&["default"]);
    let mut observed = Observed {
        group_targets: Some(&targets),
        cluster_namespaces: &cluster,
        existing: &existing,
        ..Observed::default()
    };
    let d = decide(&csv, &observed);
    assert_eq!(namespaces_of(&d), ns(&["default", "team-a"]));
    assert!(d.delete.is_empty());
    observed.copies_disabled = true;
    let d = decide(&csv, &observed);
    assert!(d.apply.is_empty());
    assert_eq!(d.delete, ns(&["default"]));
    assert!(d.copying_disabled);
}

#[test]
fn disabling_copies_keeps_them_for_multi_namespace_groups() {
    let csv = original("Succeeded", "InstallSucceeded");
    let targets = ns(&["ops", "team-a"]);
    let existing = BTreeSet::new();
    let d = decide(
        &csv,
        &Observed {
            group_targets: Some(&targets),
            existing: &existing,
            copies_disabled: true,
            ..Observed::default()
        },
    );
    assert_eq!(namespaces_of(&d), ns(&["team-a"]));
    assert!(!d.copying_disabled);
}

#[test]
fn uncopiable_csvs_are_neither_copied_nor_pruned_except_on_a_group_conflict() {
    let targets = ns(&["ops", "team-a"]);
    let existing = set(&["team-a"]);
    let observed = Observed {
        group_targets: Some(&targets),
        existing: &existing,
        ..Observed::default()
    };
    for (phase, reason) in [
        ("Failed", "UnsupportedOperatorGroup"),
        ("Failed", "TooManyOperatorGroups"),
    ] {
        assert_eq!(decide(&original(phase, reason), &observed), Decision::default());
    }
    let mut fresh = original("Pending", "RequirementsUnknown");
    fresh.status = None;
    assert!(is_uncopiable(&fresh));
    assert_eq!(decide(&fresh, &observed), Decision::default());
    let conflict = decide(&original("Failed", "InterOperatorGroupOwnerConflict"), &observed);
    assert!(conflict.apply.is_empty());
    assert_eq!(conflict.delete, ns(&["team-a"]));
    // A Pending CSV is copied too: upstream copies every phase but None.
    assert_eq!(
        namespaces_of(&decide(&original("Pending", "RequirementsNotMet"), &observed)),
        ns(&["team-a"])
    );
}

#[test]
fn a_csv_without_group_or_a_copy_decides_nothing() {
    let csv = original("Succeeded", "InstallSucceeded");
    let existing = set(&["team-a"]);
    let observed = Observed {
        existing: &existing,
        ..Observed::default()
    };
    assert_eq!(decide(&csv, &observed), Decision::default());
    let copy = copy_of(&csv, "team-a");
    let targets = ns(&["team-a", "team-b"]);
    assert_eq!(
        decide(
            &copy,
            &Observed {
                group_targets: Some(&targets),
                ..observed
            }
        ),
        Decision::default()
    );
}

#[test]
fn messages() {
    assert_eq!(disabled_note("ops", "a.v1"), "CSV copying disabled for ops/a.v1");
}

#[test]
fn no_copy_is_written_over_a_namespaces_own_csv_of_the_same_name() {
    let csv = original("Succeeded", "InstallSucceeded");
    let (targets, cluster) = (ns(&[""]), ns(&["ops", "team-a", "team-b", "team-c"]));
    // team-b installed the same operator itself; team-c holds another namespace's copy.
    let (existing, occupied) = (set(&["team-a"]), set(&["team-b", "team-c"]));
    let d = decide(
        &csv,
        &Observed {
            group_targets: Some(&targets),
            cluster_namespaces: &cluster,
            existing: &existing,
            occupied: &occupied,
            ..Observed::default()
        },
    );
    assert_eq!(namespaces_of(&d), vec!["team-a".to_owned()]);
    assert!(
        d.delete.is_empty(),
        "nothing of theirs is deleted: {:?}",
        d.delete
    );
}

#[test]
fn a_copy_someone_else_changed_is_written_again() {
    let csv = original("Succeeded", "InstallSucceeded");
    let targets = ns(&["ops", "team-a"]);
    let copy = copy_of(&csv, "team-a");
    let existing = set(&["team-a"]);
    let applied = BTreeMap::from([("team-a".to_owned(), fingerprint(&copy))]);
    let mut observed = Observed {
        group_targets: Some(&targets),
        existing: &existing,
        applied: &applied,
        ..Observed::default()
    };
    // As applied: nothing to write.
    assert!(decide(&csv, &observed).apply.is_empty());
    // Someone wrote the copy after us (its resourceVersion moved); a copy we never wrote, and
    // one still at our write, are not taken for changed ones.
    let live = BTreeMap::from([
        ("team-a".to_owned(), "12".to_owned()),
        ("team-b".to_owned(), "7".to_owned()),
        ("team-c".to_owned(), "9".to_owned()),
    ]);
    let recorded = BTreeMap::from([
        ("team-a".to_owned(), "10".to_owned()),
        ("team-c".to_owned(), "9".to_owned()),
    ]);
    assert_eq!(changed_by_others(&live, &recorded), set(&["team-a"]));
    let drifted = set(&["team-a"]);
    observed.drifted = &drifted;
    assert_eq!(namespaces_of(&decide(&csv, &observed)), vec!["team-a".to_owned()]);
}

#[test]
fn a_status_change_alone_keeps_the_spec_fingerprint_so_only_the_status_is_written_again() {
    let installing = copy_of(&original("Installing", "InstallWaiting"), "team-a");
    let succeeded = copy_of(&original("Succeeded", "InstallSucceeded"), "team-a");
    assert_ne!(fingerprint(&installing), fingerprint(&succeeded));
    assert_eq!(spec_fingerprint(&installing), spec_fingerprint(&succeeded));
    let mut relabelled = succeeded.clone();
    relabelled.labels_mut().insert("extra".into(), "1".into());
    assert_ne!(spec_fingerprint(&relabelled), spec_fingerprint(&succeeded));
}
