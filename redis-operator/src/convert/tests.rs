use serde_json::json;

use super::*;

fn v1_full() -> Value {
    json!({
        "apiVersion": V1,
        "kind": "RedisCluster",
        "metadata": {"name": "cache", "namespace": "shop", "uid": "u-1", "resourceVersion": "7",
                     "labels": {"team": "a"}},
        "spec": {
            "size": 6,
            "image": "redis:7",
            "resources": {"limits": {"memory": "256Mi"}},
            "storage": {"size": "1Gi", "storageClassName": "fast", "deleteClaimOnDelete": true},
            "mode": "cluster",
            "replicasPerPrimary": 1,
            "redisConfig": "maxmemory 100mb\n"
        },
        "status": {"readyReplicas": 6, "nodes": ["cache-0"], "phase": "Ready"}
    })
}

#[test]
fn v1_to_v1alpha1_renames_flattens_and_keeps_cluster_mode_in_an_annotation() {
    let alpha = convert(&v1_full(), V1ALPHA1).expect("converts");
    assert_eq!(alpha["apiVersion"], V1ALPHA1);
    let spec = &alpha["spec"];
    assert_eq!(spec["replicas"], 6);
    assert_eq!(spec["storageSize"], "1Gi");
    assert_eq!(spec["storageClassName"], "fast");
    assert_eq!(spec["deleteClaimOnDelete"], true);
    for gone in ["size", "storage", "mode", "replicasPerPrimary"] {
        assert!(spec.get(gone).is_none(), "{gone} left in {spec}");
    }
    let kept: Value = serde_json::from_str(
        alpha["metadata"]["annotations"][CLUSTER_ANNOTATION]
            .as_str()
            .expect("annotation"),
    )
    .expect("json");
    assert_eq!(kept, json!({"mode": "cluster", "replicasPerPrimary": 1}));
    // Metadata other than annotations, and status, are untouched.
    assert_eq!(alpha["metadata"]["uid"], "u-1");
    assert_eq!(alpha["metadata"]["labels"], json!({"team": "a"}));
    assert_eq!(alpha["status"], v1_full()["status"]);
    // The result is a valid v1alpha1 object for the typed API.
    let typed: crate::crd::v1alpha1::RedisCluster = serde_json::from_value(alpha).expect("typed");
    assert_eq!(typed.spec.replicas, 6);
}

#[test]
fn v1_round_trips_through_v1alpha1_unchanged() {
    let minimal = json!({"apiVersion": V1, "kind": "RedisCluster",
                         "metadata": {"name": "m", "namespace": "ns"}, "spec": {"size": 1}});
    let storage_only = json!({"apiVersion": V1, "kind": "RedisCluster",
        "metadata": {"name": "s", "annotations": {"keep": "me"}},
        "spec": {"size": 3, "storage": {"size": "2Gi"}, "mode": "standalone"}});
    for original in [v1_full(), minimal, storage_only] {
        let alpha = convert(&original, V1ALPHA1).expect("to alpha");
        let back = convert(&alpha, V1).expect("to v1");
        assert_eq!(back, original);
    }
}

#[test]
fn v1alpha1_round_trips_through_v1_unchanged_even_without_a_storage_size() {
    let alpha_objects = [
        json!({"apiVersion": V1ALPHA1, "kind": "RedisCluster", "metadata": {"name": "a"},
               "spec": {"replicas": 3, "storageSize": "1Gi", "deleteClaimOnDelete": false}}),
        // No v1 equivalent for a class without a size: kept in an annotation while stored as v1.
        json!({"apiVersion": V1ALPHA1, "kind": "RedisCluster", "metadata": {"name": "b"},
               "spec": {"replicas": 2, "storageClassName": "slow", "deleteClaimOnDelete": true}}),
        json!({"apiVersion": V1ALPHA1, "kind": "RedisCluster", "metadata": {"name": "c"},
               "spec": {"replicas": 1, "redisConfig": "maxmemory 1mb"}}),
    ];
    for original in alpha_objects {
        let v1 = convert(&original, V1).expect("to v1");
        assert!(v1["spec"].get("replicas").is_none());
        let typed: crate::crd::RedisCluster = serde_json::from_value(v1.clone()).expect("typed v1");
        assert_eq!(json!(typed.spec.size), original["spec"]["replicas"]);
        let back = convert(&v1, V1ALPHA1).expect("to alpha");
        assert_eq!(back, original);
    }
    let v1 = convert(
        &json!({"apiVersion": V1ALPHA1, "metadata": {"name": "b"},
                "spec": {"replicas": 2, "storageClassName": "slow"}}),
        V1,
    )
    .expect("v1");
    assert!(v1["spec"].get("storage").is_none());
    assert_eq!(
        v1["metadata"]["annotations"][ALPHA_STORAGE_ANNOTATION],
        r#"{"storageClassName":"slow"}"#
    );
}

#[test]
fn same_version_is_unchanged_and_unknown_versions_are_refused_with_the_object_named() {
    assert_eq!(convert(&v1_full(), V1).expect("same"), v1_full());
    let err = convert(
        &json!({"apiVersion": "cache.example.com/v2", "metadata": {"name": "x", "namespace": "n"}}),
        V1,
    )
    .expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "RedisCluster n/x: cannot convert from apiVersion \"cache.example.com/v2\"; this webhook converts cache.example.com/v1alpha1 and cache.example.com/v1"
    );
    assert!(matches!(
        convert(&v1_full(), "v9"),
        Err(ConvertError::UnknownTo(_))
    ));
    let mut bad = convert(&v1_full(), V1ALPHA1).expect("alpha");
    bad["metadata"]["annotations"][CLUSTER_ANNOTATION] = json!("{oops");
    let err = convert(&bad, V1).expect_err("bad annotation");
    assert!(
        err.to_string()
            .contains("annotation cache.example.com/v1-cluster"),
        "{err}"
    );
}

#[test]
fn a_conversion_review_converts_every_object_and_echoes_the_uid() {
    let body = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "r-1", "desiredAPIVersion": V1ALPHA1, "objects": [v1_full(), v1_full()]}
    });
    let answer = review(&body).expect("review");
    assert_eq!(answer["kind"], "ConversionReview");
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(answer["response"]["uid"], "r-1");
    assert_eq!(answer["response"]["result"]["status"], "Success");
    assert_eq!(answer["response"]["convertedObjects"][1]["spec"]["replicas"], 6);

    let failing = json!({"request": {"uid": "r-2", "desiredAPIVersion": "cache.example.com/v3",
                                     "objects": [v1_full()]}});
    let answer = review(&failing).expect("review");
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    assert!(
        answer["response"]["result"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("cache.example.com/v3"))
    );
    assert!(review(&json!({"kind": "ConversionReview"})).is_err());
}
