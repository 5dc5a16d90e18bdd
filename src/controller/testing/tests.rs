//! Reconciles of the Subscription and CSV controllers against the mock API server.

use std::sync::Arc;

use base64::Engine as _;
use http::Method;
use serde_json::{Value, json};

use super::*;
use crate::{
    api::labels,
    catalog::{DeclarativeConfig, Model, declcfg::Origin, load::LoadedCatalog},
    controller::{csv, subscription},
    plan::steps,
};

const OLM: &str = "/apis/operators.coreos.com/v1alpha1/namespaces/ops";

fn inlined(value: &Value) -> Value {
    json!({"type": "olm.bundle.object", "value": {"data":
        base64::engine::general_purpose::STANDARD.encode(value.to_string())}})
}

fn csv_manifest(name: &str, version: &str) -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": name},
        "spec": {"displayName": "A", "version": version,
            "install": {"strategy": "deployment", "spec": {"deployments": []}},
            "installModes": [{"type": "OwnNamespace", "supported": true},
                             {"type": "AllNamespaces", "supported": true}]}})
}

/// Package `a`, channel `stable`: a.v1 ← a.v2, every bundle inlined.
fn model() -> Model {
    let mut cfg = DeclarativeConfig::default();
    let docs = [
        json!({"schema": "olm.package", "name": "a", "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": "a", "name": "stable",
               "entries": [{"name": "a.v1"}, {"name": "a.v2", "replaces": "a.v1"}]}),
        json!({"schema": "olm.bundle", "package": "a", "name": "a.v1", "image": "", "properties": [
            {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}},
            inlined(&csv_manifest("a.v1", "1.0.0"))]}),
        json!({"schema": "olm.bundle", "package": "a", "name": "a.v2", "image": "", "properties": [
            {"type": "olm.package", "value": {"packageName": "a", "version": "2.0.0"}},
            inlined(&csv_manifest("a.v2", "2.0.0"))]}),
    ];
    for (i, doc) in docs.into_iter().enumerate() {
        cfg.add_value(Origin::new("c.json", i), doc).unwrap();
    }
    Model::from_config(cfg)
}

fn subscription_json() -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "a", "namespace": "ops", "uid": "u-1", "resourceVersion": "1",
                     "labels": {"operators.coreos.com/a.ops": ""}},
        "spec": {"source": "cat", "sourceNamespace": "olm", "name": "a", "channel": "stable",
                 "installPlanApproval": "Automatic"}})
}

fn operator_group(namespace: &str) -> OperatorGroup {
    object(
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "og", "namespace": namespace},
        "spec": {"targetNamespaces": [namespace]},
        "status": {"namespaces": [namespace], "lastUpdated": "2026-01-01T00:00:00Z"}}),
    )
}

/// A fixture whose stores and cache hold the catalog `olm/cat` (package `a`) and, when
/// `with_group`, the OperatorGroup of namespace `ops`.
fn subscription_fixture(with_group: bool) -> (Fixture, ApiServerVerifier) {
    let (mut fixture, server) = Fixture::new();
    let catalog: CatalogSource = object(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "cat", "namespace": "olm", "uid": "cat-uid"},
        "spec": {"sourceType": "configmap", "configMap": "cat"}}));
    Fixture::store(&mut fixture.writers.catalog_sources, &catalog);
    fixture.shared.catalogs.insert(
        "olm",
        "cat",
        Arc::new(LoadedCatalog {
            origin: crate::catalog::load::CatalogOrigin::ConfigMap {
                resource_version: "7".into(),
            },
            model: model(),
            problems: Vec::new(),
        }),
    );
    if with_group {
        Fixture::store(&mut fixture.writers.operator_groups, &operator_group("ops"));
    }
    (fixture, server)
}

#[tokio::test]
async fn a_subscription_creates_its_install_plan_then_writes_the_plans_status_and_its_own() {
    let (fixture, mut server) = subscription_fixture(true);
    let sub: Subscription = object(subscription_json());
    // The Subscription has no plan yet: this is its first (generation 1).
    let plan = steps::install_plan_name("u-1", "a.v2", 1);
    let ctx = fixture.context("subscription");
    let (result, received) = server
        .run(
            Scenario::InstallPlanCreated {
                subscription: subscription_json(),
                plan: plan.clone(),
            },
            subscription::reconcile(Arc::new(sub), ctx),
        )
        .await;
    result.unwrap();

    // The plan is created (not applied), owned by the Subscription, approved as it asks.
    let created = bodies(&received, &Method::POST, &format!("{OLM}/installplans"));
    let [created] = created.as_slice() else {
        panic!("one InstallPlan created: {received:#?}")
    };
    assert_eq!(created["kind"], "InstallPlan");
    assert_eq!(created["metadata"]["name"], plan.as_str());
    assert_eq!(created["metadata"]["namespace"], "ops");
    let owner = &created["metadata"]["ownerReferences"][0];
    assert_eq!(
        (
            &owner["kind"],
            &owner["name"],
            &owner["uid"],
            &owner["controller"]
        ),
        (&json!("Subscription"), &json!("a"), &json!("u-1"), &json!(false))
    );
    assert_eq!(
        created["metadata"]["labels"],
        json!({"operators.coreos.com/a.ops": ""})
    );
    assert_eq!(created["spec"]["generation"], 1);
    assert_eq!(created["spec"]["clusterServiceVersionNames"], json!(["a.v2"]));
    assert_eq!(
        (&created["spec"]["source"], &created["spec"]["sourceNamespace"]),
        (&json!("cat"), &json!("olm"))
    );
    assert_eq!(
        (&created["spec"]["approval"], &created["spec"]["approved"]),
        (&json!("Automatic"), &json!(true))
    );
    assert!(created.get("status").is_none(), "the status is a separate write");

    // Its first status: Installing, with the bundle's steps.
    let plan_status = bodies(
        &received,
        &Method::PATCH,
        &format!("{OLM}/installplans/{plan}/status"),
    );
    let status = &plan_status[0]["status"];
    assert_eq!(plan_status[0]["kind"], "InstallPlan");
    assert_eq!(status["phase"], "Installing");
    assert_eq!(status["catalogSources"], json!(["cat"]));
    assert!(
        status["plan"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["resource"]["kind"] == "ClusterServiceVersion" && s["resource"]["name"] == "a.v2"),
        "{status:#}"
    );

    // The Subscription points at it.
    let sub_status = bodies(
        &received,
        &Method::PATCH,
        &format!("{OLM}/subscriptions/a/status"),
    );
    let status = &sub_status[0]["status"];
    assert_eq!(status["state"], "UpgradePending");
    assert_eq!(status["currentCSV"], "a.v2");
    assert_eq!(status["installPlanRef"]["name"], plan.as_str());
    assert_eq!(status["installPlanGeneration"], 1);
    assert_eq!(event_reasons(&received), ["InstallPlanCreated"]);
    // A core/v1 Event, from OLM's component, counted.
    let event = received
        .iter()
        .find(|r| r.uri.starts_with("/api/v1/namespaces/ops/events"))
        .expect("the Event is written to the Subscription's namespace");
    assert_eq!(event.body["source"]["component"], "operator-lifecycle-manager");
    assert_eq!(event.body["involvedObject"]["kind"], "Subscription");
    assert_eq!(event.body["count"], 1);
}

#[tokio::test]
async fn an_unchanged_status_and_a_repeat_of_the_last_write_are_not_written() {
    // No OperatorGroup in the namespace: resolution fails, which is reported once.
    let (fixture, mut server) = subscription_fixture(false);
    let ctx = fixture.context("subscription");
    let sub: Subscription = object(subscription_json());
    let write = || Scenario::StatusWritten {
        collection: format!("{OLM}/subscriptions"),
        object: subscription_json(),
        manager: "olm-rs/subscription",
    };
    let (result, received) = server
        .run(
            write(),
            subscription::reconcile(Arc::new(sub.clone()), Arc::clone(&ctx)),
        )
        .await;
    result.unwrap();
    assert_eq!(event_reasons(&received), ["ResolutionFailed"]);
    let written = bodies(
        &received,
        &Method::PATCH,
        &format!("{OLM}/subscriptions/a/status"),
    )[0]["status"]
        .clone();
    let failed = written["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "ResolutionFailed")
        .expect("a ResolutionFailed condition");
    assert_eq!(failed["status"], "True");

    // The store has not seen that write yet (same resourceVersion): the same status is not
    // written again.
    let (result, received) = server
        .run(
            Scenario::NothingWritten,
            subscription::reconcile(Arc::new(sub.clone()), Arc::clone(&ctx)),
        )
        .await;
    result.unwrap();
    assert!(writes(&received).is_empty(), "{received:#?}");
    // Its Event is published again: a repeat, so the first Event is counted, not a new one.
    let repeats = bodies(&received, &Method::PATCH, "/api/v1/namespaces/ops/events/");
    let [repeat] = repeats.as_slice() else {
        panic!("one Event patched: {received:#?}")
    };
    assert_eq!(repeat["count"], 2);
    assert!(bodies(&received, &Method::POST, "/api/v1/namespaces/ops/events").is_empty());

    // The store shows the write: nothing changed, nothing is written, no Event repeats.
    let mut seen = subscription_json();
    seen["metadata"]["resourceVersion"] = json!("2");
    seen["status"] = written;
    let (result, received) = server
        .run(
            Scenario::NothingWritten,
            subscription::reconcile(Arc::new(object(seen)), ctx),
        )
        .await;
    result.unwrap();
    assert!(received.is_empty(), "{received:#?}");
}

#[tokio::test]
async fn a_subscription_without_its_component_label_is_labelled_first() {
    let (fixture, mut server) = subscription_fixture(false);
    let ctx = fixture.context("subscription");
    let mut unlabelled = subscription_json();
    unlabelled["metadata"].as_object_mut().unwrap().remove("labels");
    let (result, received) = server
        .run(
            Scenario::SubscriptionLabelled {
                subscription: unlabelled.clone(),
            },
            subscription::reconcile(Arc::new(object(unlabelled)), ctx),
        )
        .await;
    result.unwrap();
    let labelled = bodies(&received, &Method::PATCH, &format!("{OLM}/subscriptions/a?"));
    assert_eq!(
        labelled[0]["metadata"]["labels"],
        json!({"operators.coreos.com/a.ops": ""})
    );
}

fn new_csv() -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "a.v1", "namespace": "ops", "uid": "csv-uid", "resourceVersion": "1",
                     "finalizers": [labels::CSV_CLEANUP_FINALIZER]},
        "spec": {"displayName": "A", "version": "1.0.0",
            "installModes": [{"type": "OwnNamespace", "supported": true}],
            "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "op", "spec": {
                "selector": {"matchLabels": {"app": "op"}},
                "template": {"metadata": {"labels": {"app": "op"}},
                             "spec": {"containers": [{"name": "op", "image": "example.com/op:1"}]}}}}]}}}})
}

#[tokio::test]
async fn a_new_csv_with_its_requirements_met_reaches_installing_in_one_reconcile_and_one_status_write() {
    let (mut fixture, mut server) = Fixture::new();
    Fixture::store(&mut fixture.writers.operator_groups, &operator_group("ops"));
    let csv_object: ClusterServiceVersion = object(new_csv());
    Fixture::store(&mut fixture.writers.csvs, &csv_object);
    let ctx = fixture.context("csv");
    let (result, received) = server
        .run(
            Scenario::CsvInstalling {
                csv: new_csv(),
                deployment: "op".into(),
            },
            csv::reconcile(Arc::new(csv_object), ctx),
        )
        .await;
    result.unwrap();

    // The member annotations, and only them, under the CSV controller's field manager.
    let stamp = bodies(
        &received,
        &Method::PATCH,
        &format!("{OLM}/clusterserviceversions/a.v1?"),
    );
    assert_eq!(
        stamp[0]["metadata"]["annotations"],
        json!({"olm.operatorGroup": "og", "olm.operatorNamespace": "ops", "olm.targetNamespaces": "ops"})
    );
    assert!(stamp[0].get("spec").is_none(), "{:#}", stamp[0]);

    // The Deployment: owned by the CSV, labelled with its spec hash.
    let deployment = bodies(
        &received,
        &Method::PATCH,
        "/apis/apps/v1/namespaces/ops/deployments/op",
    )[0];
    assert_eq!(deployment["metadata"]["ownerReferences"][0]["uid"], "csv-uid");
    assert_eq!(deployment["metadata"]["labels"]["olm.owner"], "a.v1");
    assert!(deployment["metadata"]["labels"]["olm.deployment-spec-hash"].is_string());

    // One status write for Pending → InstallReady → Installing.
    let status = bodies(
        &received,
        &Method::PATCH,
        &format!("{OLM}/clusterserviceversions/a.v1/status"),
    );
    let [status] = status.as_slice() else {
        panic!("one status write: {received:#?}")
    };
    assert_eq!(
        (&status["status"]["phase"], &status["status"]["reason"]),
        (&json!("Installing"), &json!("InstallWaiting"))
    );
    let reasons = event_reasons(&received);
    assert_eq!(
        reasons,
        [
            "RequirementsUnknown",
            "AllRequirementsMet",
            "InstallSucceeded",
            "InstallWaiting"
        ]
    );
}
