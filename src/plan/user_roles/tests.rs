use std::collections::BTreeSet;

use super::*;
use crate::api::labels::COPIED_FROM;

fn csv(value: serde_json::Value) -> ClusterServiceVersion {
    serde_json::from_value(value).expect("a CSV")
}

fn redis_csv() -> ClusterServiceVersion {
    csv(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "redis-operator.v1.0.0", "namespace": "seed-manual"},
        "spec": {
            "customresourcedefinitions": {"owned": [
                {"name": "redisclusters.cache.example.com", "version": "v1", "kind": "RedisCluster"}
            ]},
            "apiservicedefinitions": {"owned": [
                {"name": "widgets", "group": "w.example.com", "version": "v1alpha1", "kind": "Widget"}
            ]}
        }
    }))
}

fn og(annotations: serde_json::Value, static_apis: bool) -> OperatorGroup {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {"name": "redis-og", "namespace": "seed-manual", "annotations": annotations},
        "spec": {"targetNamespaces": ["seed-manual"], "staticProvidedAPIs": static_apis}
    }))
    .expect("an OperatorGroup")
}

fn redis_key() -> ApiKey {
    ApiKey {
        group: "cache.example.com".into(),
        version: "v1".into(),
        kind: "RedisCluster".into(),
    }
}

#[test]
fn the_api_hash_is_upstreams() {
    // The upstream transcript's aggregation selectors for RedisCluster.v1.cache.example.com.
    assert_eq!(api_hash(&redis_key()), "246d28f1b1de44c2");
    assert_eq!(
        aggregation_label(&redis_key(), "edit"),
        "olm.opgroup.permissions/aggregate-to-246d28f1b1de44c2-edit"
    );
}

#[test]
fn group_role_names_are_upstreams() {
    // Names from the upstream transcripts (olmv0/02-manual-cluster-rbac.yaml, 03-auto-...).
    assert_eq!(
        operator_group_role_name("seed-manual", "redis-og", "admin"),
        "olm.og.redis-og.admin-8ehAS17poL0c5GF69SHV6giKx7lUzUQWcTNieB"
    );
    assert_eq!(
        operator_group_role_name("seed-manual", "redis-og", "edit"),
        "olm.og.redis-og.edit-7c87LgSTDkwU9u57OOfjWdwdofX4BgY4hRDc6v"
    );
    assert_eq!(
        operator_group_role_name("seed-auto", "redis-og", "view"),
        "olm.og.redis-og.view-71pyzEvImDmhsM56yH4mE5Iec6GgKq93y9uMlQ"
    );
    let long = "g".repeat(300);
    assert!(operator_group_role_name("ns", &long, "admin").len() <= 253);
}

#[test]
fn provided_apis_cover_crds_and_apiservices() {
    let apis = provided_apis(&redis_csv()).expect("valid");
    assert_eq!(apis.len(), 2);
    assert_eq!(apis[0].key, redis_key());
    assert_eq!(apis[0].plural, "redisclusters");
    assert_eq!(apis[0].owner_name(), "redisclusters.cache.example.com");
    assert_eq!(apis[1].key.gvk(), "Widget.v1alpha1.w.example.com");
    assert_eq!(apis[1].owner_name(), "v1alpha1.w.example.com");
}

#[test]
fn a_crd_name_without_group_is_named_in_the_error() {
    let bad = csv(serde_json::json!({
        "metadata": {"name": "x.v1"},
        "spec": {"customresourcedefinitions": {"owned": [{"name": "things", "version": "v1", "kind": "Thing"}]}}
    }));
    let err = provided_apis(&bad).expect_err("no group").to_string();
    assert!(
        err.contains("x.v1") && err.contains("\"things\"") && err.contains("<plural>.<group>"),
        "{err}"
    );
}

#[test]
fn the_annotation_is_sorted_and_skips_copied_csvs() {
    let mut copied = redis_csv();
    copied.metadata.labels = Some([(COPIED_FROM.to_owned(), "other".to_owned())].into());
    copied
        .spec
        .custom_resource_definitions
        .as_mut()
        .expect("crds")
        .owned[0]
        .kind = "Other".into();
    // A copy without the label is still a copy (upstream `IsCopied`: reason `Copied`).
    let mut unlabelled = copied.clone();
    unlabelled.metadata.labels = None;
    unlabelled.status = Some(crate::api::v1alpha1::ClusterServiceVersionStatus {
        reason: Some(crate::api::v1alpha1::CsvReason::Copied),
        ..Default::default()
    });
    let with_status = |phase: CsvPhase, reason: CsvReason| {
        let mut csv = redis_csv();
        csv.spec.custom_resource_definitions.as_mut().expect("crds").owned[0].kind = "Other".into();
        csv.status = Some(crate::api::v1alpha1::ClusterServiceVersionStatus {
            phase: Some(phase),
            reason: Some(reason),
            ..Default::default()
        });
        csv
    };
    // Not yet checked by the CSV controller, or failed for a rival group's API: left out.
    let unchecked = redis_csv_unchecked_other();
    let conflicted = with_status(CsvPhase::Failed, CsvReason::InterOperatorGroupOwnerConflict);
    let mut claiming = redis_csv();
    claiming.status = Some(crate::api::v1alpha1::ClusterServiceVersionStatus {
        phase: Some(CsvPhase::Pending),
        ..Default::default()
    });
    let csvs = [claiming, copied, unlabelled, unchecked, conflicted];
    let apis = namespace_provided_apis(csvs.iter());
    assert_eq!(
        provided_apis_annotation(&apis),
        "RedisCluster.v1.cache.example.com,Widget.v1alpha1.w.example.com"
    );
    assert_eq!(parse_provided_apis(&provided_apis_annotation(&apis)), apis);
    assert_eq!(parse_provided_apis(" , Bad"), BTreeSet::new());
}

#[test]
fn the_annotation_is_written_when_it_changes_and_never_on_static_groups() {
    let apis: BTreeSet<ApiKey> = [redis_key()].into();
    let fresh = og(serde_json::json!({}), false);
    assert_eq!(
        desired_provided_apis(&fresh, &apis).as_deref(),
        Some("RedisCluster.v1.cache.example.com")
    );
    assert_eq!(desired_provided_apis(&fresh, &BTreeSet::new()), None);
    let current = og(
        serde_json::json!({PROVIDED_APIS: "RedisCluster.v1.cache.example.com"}),
        false,
    );
    assert_eq!(desired_provided_apis(&current, &apis), None);
    // The last provider left: the annotation is emptied, as upstream's pruning does.
    assert_eq!(
        desired_provided_apis(&current, &BTreeSet::new()).as_deref(),
        Some("")
    );
    let fixed = og(serde_json::json!({PROVIDED_APIS: "A.v1.x"}), true);
    assert_eq!(desired_provided_apis(&fixed, &apis), None);
}

#[test]
fn group_roles_match_the_upstream_transcript() {
    let roles = operator_group_cluster_roles(&og(serde_json::json!({}), false), &[redis_key()].into());
    let got = serde_json::to_value(&roles).expect("json");
    assert_eq!(
        got[0],
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": "olm.og.redis-og.admin-8ehAS17poL0c5GF69SHV6giKx7lUzUQWcTNieB",
                "labels": {
                    "olm.managed": "true",
                    "olm.owner": "redis-og",
                    "olm.owner.kind": "OperatorGroup",
                    "olm.owner.namespace": "seed-manual"
                }
            },
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"olm.opgroup.permissions/aggregate-to-246d28f1b1de44c2-admin": "true"}}
            ]}
        })
    );
    assert_eq!(roles.len(), 3);
    let empty = operator_group_cluster_roles(&og(serde_json::json!({}), false), &BTreeSet::new());
    assert!(empty.iter().all(|r| r.aggregation_rule.is_none()));
}

#[test]
fn per_api_roles_have_upstreams_rules_labels_and_owner() {
    let apis = provided_apis(&redis_csv()).expect("valid");
    let owner = ApiOwner {
        name: "redisclusters.cache.example.com".into(),
        uid: "u1".into(),
    };
    let roles = provided_api_cluster_roles(&apis[0], &owner);
    let names: Vec<String> = roles.iter().map(ResourceExt::name_any).collect();
    assert_eq!(
        names,
        [
            "redisclusters.cache.example.com-v1-admin",
            "redisclusters.cache.example.com-v1-edit",
            "redisclusters.cache.example.com-v1-view",
            "redisclusters.cache.example.com-v1-crdview",
        ]
    );
    let crdview = serde_json::to_value(&roles[3]).expect("json");
    assert_eq!(
        crdview["metadata"]["labels"],
        serde_json::json!({
            "olm.managed": "true",
            "olm.opgroup.permissions/aggregate-to-246d28f1b1de44c2-view": "true",
            "rbac.authorization.k8s.io/aggregate-to-view": "true"
        })
    );
    assert_eq!(
        crdview["rules"],
        serde_json::json!([{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
            "resourceNames": ["redisclusters.cache.example.com"], "verbs": ["get"]}])
    );
    assert_eq!(
        crdview["metadata"]["ownerReferences"],
        serde_json::json!([{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "name": "redisclusters.cache.example.com", "uid": "u1", "blockOwnerDeletion": false, "controller": false}])
    );
    let edit = serde_json::to_value(&roles[1]).expect("json");
    assert_eq!(
        edit["rules"][0]["verbs"],
        serde_json::json!(["create", "update", "patch", "delete"])
    );
    assert_eq!(
        edit["rules"][0]["resources"],
        serde_json::json!(["redisclusters"])
    );
    let svc = provided_api_cluster_roles(
        &apis[1],
        &ApiOwner {
            name: "v1alpha1.w.example.com".into(),
            uid: "u2".into(),
        },
    );
    let names: Vec<String> = svc.iter().map(ResourceExt::name_any).collect();
    assert_eq!(
        names,
        [
            "widgets-v1alpha1-admin",
            "widgets-v1alpha1-edit",
            "widgets-v1alpha1-view"
        ]
    );
    assert_eq!(
        svc[0].metadata.owner_references.as_ref().expect("owner")[0].kind,
        "APIService"
    );
}

#[test]
fn a_stored_role_holding_what_is_desired_is_current_and_any_difference_is_not() {
    let group = operator_group_cluster_roles(&og(serde_json::json!({}), false), &[redis_key()].into());
    let desired = group[0].clone();
    // The API server fills an aggregated role's rules and may add labels: still current.
    let mut stored = desired.clone();
    stored.rules = Some(vec![k8s_openapi::api::rbac::v1::PolicyRule {
        verbs: vec!["*".into()],
        ..Default::default()
    }]);
    stored.labels_mut().insert("extra".into(), "x".into());
    assert!(role_is_current(&desired, &stored));
    // A removed label or another aggregation is not.
    let mut unlabelled = stored.clone();
    unlabelled.labels_mut().remove("olm.owner");
    assert!(!role_is_current(&desired, &unlabelled));
    let other = operator_group_cluster_roles(&og(serde_json::json!({}), false), &BTreeSet::new());
    assert!(!role_is_current(&desired, &other[0]));

    // A role with rules of its own is current only with those rules and its owner.
    let apis = provided_apis(&redis_csv()).expect("valid");
    let owner = ApiOwner {
        name: "redisclusters.cache.example.com".into(),
        uid: "u1".into(),
    };
    let admin = provided_api_cluster_roles(&apis[0], &owner).remove(0);
    assert!(role_is_current(&admin, &admin.clone()));
    let mut edited = admin.clone();
    edited.rules = Some(Vec::new());
    assert!(!role_is_current(&admin, &edited));
    let mut orphaned = admin.clone();
    orphaned.metadata.owner_references = None;
    assert!(!role_is_current(&admin, &orphaned));
}

fn redis_csv_unchecked_other() -> ClusterServiceVersion {
    let mut csv = redis_csv();
    csv.spec.custom_resource_definitions.as_mut().expect("crds").owned[0].kind = "Other".into();
    csv.status = None;
    csv
}

#[test]
fn group_roles_whose_group_is_gone_are_listed_for_deletion() {
    let live = og(serde_json::json!({}), false);
    let gone: OperatorGroup = serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "gone", "namespace": "seed-manual"}, "spec": {}
    }))
    .expect("an OperatorGroup");
    let apis = BTreeSet::new();
    let mut roles = operator_group_cluster_roles(&live, &apis);
    let orphans = operator_group_cluster_roles(&gone, &apis);
    roles.extend(orphans.clone());
    // A per-API role (no owner labels) and a CSV-owned role are never swept.
    let mut csv_role = orphans[0].clone();
    csv_role.metadata.name = Some("csv-role".into());
    csv_role
        .labels_mut()
        .insert(OWNER_KIND.into(), "ClusterServiceVersion".into());
    roles.push(csv_role);
    roles.extend(provided_api_cluster_roles(
        &provided_apis(&redis_csv()).expect("apis")[0],
        &ApiOwner {
            name: "redisclusters.cache.example.com".into(),
            uid: "u".into(),
        },
    ));
    let groups: BTreeSet<(String, String)> = [(live.namespace().expect("ns"), live.name_any())].into();
    let want: Vec<String> = orphans.iter().map(ResourceExt::name_any).collect();
    assert_eq!(orphaned_group_roles(roles.iter(), &groups), want);
    assert_eq!(want.len(), 3);
}
