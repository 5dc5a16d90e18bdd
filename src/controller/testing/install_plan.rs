//! Reconciles of the InstallPlan controller against the mock API server: CRD safety on upgrade.

use std::sync::Arc;

use http::Method;
use serde_json::{Value, json};

use super::*;
use crate::controller::install_plan;

const CRD: &str = "redisclusters.cache.example.com";

/// A RedisCluster CRD serving `versions` (the last one stored), with `stored` in its status.
fn crd(versions: &[&str], stored: &[&str]) -> Value {
    let last = versions.len().saturating_sub(1);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {
            "group": "cache.example.com",
            "scope": "Namespaced",
            "names": {"plural": "redisclusters", "singular": "rediscluster", "kind": "RedisCluster"},
            "versions": versions.iter().enumerate().map(|(i, v)| json!({
                "name": v, "served": true, "storage": i == last,
                "schema": {"openAPIV3Schema": {"type": "object"}}
            })).collect::<Vec<_>>()
        },
        "status": {"storedVersions": stored}
    })
}

/// An Automatic InstallPlan `name` in `ops`, started long ago (past the retry timeout), whose
/// one step applies `crd`.
fn crd_plan(name: &str, crd: &Value) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "InstallPlan",
        "metadata": {"name": name, "namespace": "ops", "uid": format!("{name}-uid")},
        "spec": {"clusterServiceVersionNames": ["redis-operator.v2.0.0"], "approval": "Automatic", "approved": true},
        "status": {
            "phase": "Installing",
            "catalogSources": [],
            "startTime": "2026-01-01T00:00:00Z",
            "plan": [{
                "resolving": "redis-operator.v2.0.0",
                "status": "Unknown",
                "resource": {
                    "group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition",
                    "name": CRD, "sourceName": "cat", "sourceNamespace": "olm",
                    "manifest": crd.to_string()
                }
            }]
        }
    })
}

/// A fixture whose store holds the OperatorGroup of `ops` (a plan runs only where one is).
fn fixture_with_group() -> (Fixture, ApiServerVerifier) {
    let (mut fixture, server) = Fixture::new();
    let group: crate::api::v1::OperatorGroup = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "og", "namespace": "ops"},
        "spec": {"targetNamespaces": ["ops"]},
        "status": {"namespaces": ["ops"], "lastUpdated": "2026-01-01T00:00:00Z"}}))
    .expect("an OperatorGroup");
    Fixture::store(&mut fixture.writers.operator_groups, &group);
    (fixture, server)
}

/// Reconciles `ip` through `scenario`; returns the status it wrote (its first status write)
/// and every request received.
async fn reconciled_status(
    server: &mut ApiServerVerifier,
    fixture: &Fixture,
    ip: InstallPlan,
    scenario: Scenario,
) -> (Value, Vec<Received>) {
    let name = ip.metadata.name.clone().unwrap_or_default();
    let (_, received) = server
        .run(
            scenario,
            install_plan::reconcile(Arc::new(ip), fixture.context("installplan")),
        )
        .await;
    let path = format!("/apis/operators.coreos.com/v1alpha1/namespaces/ops/installplans/{name}/status");
    let status = bodies(&received, &Method::PATCH, &path)[0]["status"].clone();
    (status, received)
}

#[tokio::test]
async fn a_crd_step_that_drops_a_stored_version_is_refused_with_upstreams_message_and_nothing_is_applied() {
    let (fixture, mut server) = fixture_with_group();
    let new_crd = crd(&["v1"], &[]);
    let plan = crd_plan("install-abcde", &new_crd);
    let ip: InstallPlan = object(plan.clone());
    let (status, received) = reconciled_status(
        &mut server,
        &fixture,
        ip,
        Scenario::CrdUpdateRefused {
            existing: crd(&["v1alpha1", "v1"], &["v1alpha1", "v1"]),
            plan,
        },
    )
    .await;
    let message = "risk of data loss updating \"redisclusters.cache.example.com\": new CRD removes version \
                   v1alpha1 that is listed as a stored version on the existing CRD";
    // Started long ago: past the retry timeout, so the plan fails with the message.
    assert_eq!(status["phase"], "Failed", "{status:#}");
    assert_eq!(status["message"], message);
    assert_eq!(status["conditions"][0]["reason"], "InstallComponentFailed");
    assert_eq!(status["conditions"][0]["message"], message);
    assert_eq!(status["plan"][0]["status"], "Unknown", "the CRD was not applied");
    assert_eq!(event_reasons(&received), ["InstallComponentFailed"]);
}

/// A RedisCluster object in `ops` with `spec.size`.
fn cluster(name: &str, size: Value) -> Value {
    json!({"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
           "metadata": {"name": name, "namespace": "ops"}, "spec": {"size": size}})
}

#[tokio::test]
async fn a_crd_step_reads_existing_objects_a_page_at_a_time_and_is_refused_by_one_on_the_second_page() {
    let (fixture, mut server) = fixture_with_group();
    // The new schema makes spec.size an integer; the existing one accepted anything.
    let mut new_crd = crd(&["v1"], &[]);
    new_crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}
    });
    let plan = crd_plan("install-fghij", &new_crd);
    let ip: InstallPlan = object(plan.clone());
    let list = |items: Vec<Value>, token: Option<&str>| {
        json!({"apiVersion": "cache.example.com/v1", "kind": "RedisClusterList",
               "metadata": {"continue": token}, "items": items})
    };
    let (status, _) = reconciled_status(
        &mut server,
        &fixture,
        ip,
        Scenario::CrdObjectsRefused {
            existing: crd(&["v1"], &["v1"]),
            version: "v1",
            pages: vec![
                list(vec![cluster("good", json!(3))], Some("page-2")),
                list(vec![cluster("bad", json!("three"))], None),
            ],
            plan,
        },
    )
    .await;
    let message = status["message"].as_str().unwrap_or_default();
    assert_eq!(status["phase"], "Failed", "{status:#}");
    assert!(message.contains("ops/bad"), "{message}");
    assert!(!message.contains("ops/good"), "{message}");
    assert!(message.contains("spec.size"), "{message}");
    assert_eq!(status["plan"][0]["status"], "Unknown", "the CRD was not applied");
}
