use serde_json::json;

use super::*;

fn schema(max_size: i64) -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "minimum": 1, "maximum": max_size},
                    "mode": {"type": "string", "enum": ["standalone", "cluster"]},
                    "storage": {"type": "object", "nullable": true, "required": ["size"],
                                "properties": {"size": {"type": "string", "minLength": 1}}},
                    "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                    "port": {"x-kubernetes-int-or-string": true},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                }
            }
        }
    })
}

/// A RedisCluster-like CRD: `(name, served, storage, max size)` per version, `stored` in status.
fn crd(
    versions: &[(&str, bool, bool, i64)],
    stored: &[&str],
    conversion: Option<&str>,
) -> CustomResourceDefinition {
    let mut value = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "redisclusters.cache.example.com"},
        "spec": {
            "group": "cache.example.com",
            "scope": "Namespaced",
            "names": {"plural": "redisclusters", "singular": "rediscluster", "kind": "RedisCluster"},
            "versions": versions.iter().map(|(name, served, storage, max)| json!({
                "name": name, "served": served, "storage": storage,
                "schema": {"openAPIV3Schema": schema(*max)}
            })).collect::<Vec<_>>()
        },
        "status": {"storedVersions": stored}
    });
    if let Some(strategy) = conversion {
        value["spec"]["conversion"] = json!({"strategy": strategy});
    }
    serde_json::from_value(value).expect("crd")
}

#[test]
fn dropping_a_stored_version_is_refused_with_upstreams_message() {
    let existing = crd(
        &[("v1alpha1", true, false, 100), ("v1", true, true, 100)],
        &["v1alpha1", "v1"],
        None,
    );
    let new = crd(&[("v1", true, true, 100)], &[], None);
    let err = stored_versions_kept(&existing, &new).expect_err("v1alpha1 is stored");
    assert_eq!(
        err.to_string(),
        "risk of data loss updating \"redisclusters.cache.example.com\": new CRD removes version v1alpha1 that is listed as a stored version on the existing CRD"
    );
}

#[test]
fn an_unserved_or_never_stored_version_may_change() {
    let existing = crd(
        &[("v1alpha1", true, false, 100), ("v1", true, true, 100)],
        &["v1"],
        Some("Webhook"),
    );
    // served: false keeps the version: safe even when it is stored.
    let unserved = crd(
        &[("v1alpha1", false, false, 100), ("v1", true, true, 100)],
        &[],
        Some("Webhook"),
    );
    assert_eq!(stored_versions_kept(&existing, &unserved), Ok(()));
    let stored_both = crd(
        &[("v1alpha1", true, false, 100), ("v1", true, true, 100)],
        &["v1alpha1", "v1"],
        None,
    );
    assert_eq!(stored_versions_kept(&stored_both, &unserved), Ok(()));
    // v1alpha1 was never stored: removing it loses nothing.
    let removed = crd(&[("v1", true, true, 100)], &[], None);
    assert_eq!(stored_versions_kept(&existing, &removed), Ok(()));
    // An existing CRD without status (not yet written by the API server) is not checked.
    let mut bare = existing.clone();
    bare.status = None;
    assert_eq!(stored_versions_kept(&bare, &removed), Ok(()));
}

#[test]
fn only_versions_served_by_both_with_a_changed_schema_are_validated() {
    let existing = crd(
        &[("v1alpha1", true, false, 100), ("v1", true, true, 100)],
        &["v1"],
        None,
    );
    let same = crd(
        &[("v1alpha1", true, false, 100), ("v1", true, true, 100)],
        &[],
        None,
    );
    assert!(versions_to_validate(&existing, &same).is_empty());
    let tighter = crd(
        &[
            ("v1alpha1", false, false, 10),
            ("v1", true, true, 10),
            ("v2", true, false, 10),
        ],
        &[],
        None,
    );
    let versions: Vec<String> = versions_to_validate(&existing, &tighter)
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    assert_eq!(versions, ["v1"]);
    assert!(uses_webhook_conversion(&crd(
        &[("v1", true, true, 1)],
        &[],
        Some("Webhook")
    )));
    assert!(!uses_webhook_conversion(&crd(
        &[("v1", true, true, 1)],
        &[],
        Some("None")
    )));
    assert!(!uses_webhook_conversion(&tighter));
}

#[test]
fn an_existing_object_the_new_schema_rejects_fails_the_step_naming_it() {
    let new = crd(&[("v1", true, true, 10)], &[], None);
    let (version, schema) = versions_to_validate(&crd(&[("v1", true, true, 100)], &["v1"], None), &new)
        .pop()
        .expect("v1 changed");
    let ok = json!({"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
                    "metadata": {"name": "small", "namespace": "shop"}, "spec": {"size": 3}});
    let big = json!({"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
                     "metadata": {"name": "big", "namespace": "shop"}, "spec": {"size": 50}});
    assert_eq!(
        existing_objects_valid(&new, &version, &schema, std::slice::from_ref(&ok)),
        Ok(())
    );
    let err = existing_objects_valid(&new, &version, &schema, &[ok, big]).expect_err("too big");
    assert_eq!(
        err.to_string(),
        "error validating existing CRs against new CRD's schema for \"redisclusters.cache.example.com\": \
         error validating cache.example.com/v1, Kind=RedisCluster \"shop/big\": updated validation is too \
         restrictive: [].spec.size: Invalid value: 50: spec.size in body should be less than or equal to 10"
    );
}

#[test]
fn the_validator_reports_each_kind_of_field_error() {
    let s = schema(100);
    let obj = |spec: Value| json!({"apiVersion": "x", "kind": "y", "metadata": {"name": 5}, "spec": spec});
    assert!(
        validate(
            &s,
            &obj(
                json!({"size": 3, "mode": "cluster", "storage": null, "tags": ["a"],
                                     "port": "http", "labels": {"a": "b"}})
            )
        )
        .is_empty()
    );
    let errors = validate(
        &s,
        &obj(
            json!({"mode": "sharded", "storage": {"size": ""}, "tags": ["a", "b", 3], "port": 1.5,
                    "labels": {"a": 1}}),
        ),
    );
    assert_eq!(
        errors,
        [
            "spec.mode: Unsupported value: \"sharded\": supported values: \"standalone\", \"cluster\"",
            "spec.storage.size: Invalid value: \"\": spec.storage.size in body should be at least 1 chars long",
            "spec.tags: Too many: 3: must have at most 2 items",
            "spec.tags[2]: Invalid value: \"integer\": spec.tags[2] in body must be of type string: \"integer\"",
            "spec.port: Invalid value: \"number\": spec.port in body must be of type integer or string",
            "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
            "spec.size: Required value",
        ]
    );
    let err = CrdSafetyError::TooRestrictive {
        crd: "c".into(),
        gvk: "g/v1, Kind=K".into(),
        object: "o".into(),
        errors: vec!["a".into(), "b".into()],
    };
    assert!(
        err.to_string().ends_with("too restrictive: [[].a, [].b]"),
        "{err}"
    );
}
