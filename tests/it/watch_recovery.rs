//! watch_recovery (cluster): a supervised watch ([`operator_runtime::watch`], what every reflector
//! of olm-controller and the Redis operator goes through) survives error answers. Started before
//! its CRD exists, it gets 404s (on a fresh cluster, 404s and 429s while the CRDs install: issue 14,
//! item 5), backs off, and delivers the first object once the CRD is installed, without a
//! restart of the process. Prints the time from the object's creation to its delivery.
//!
//! An API server restart mid-watch is not tested here: the launcher (`tests/cluster/launcher`)
//! can only start and stop the whole control plane. It would need a `restart kube-apiserver`
//! command (stop that one process by its recorded pid, start it again with the same flags and
//! log file, wait for `/readyz`); the test would then start a supervised watch, restart the
//! API server, create an object and assert it arrives within seconds, and that `/readyz` of a
//! running olm-controller never stays ok while a store is stale.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use crate::support::cluster::TestCluster;
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams},
    runtime::watcher,
};
use operator_runtime::watch::{WatchHealth, config};
use serde_json::json;

#[tokio::test]
async fn a_watch_started_before_its_crd_exists_recovers_once_the_crd_is_installed() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let ns = cluster.namespace("watch-crd").await;
    // A CRD of its own per run, so a rerun never finds it installed already.
    let suffix: String = ns.name().chars().filter(char::is_ascii_alphanumeric).collect();
    let group = format!("w{suffix}.olmrs.test");
    let plural = "widgets";
    let crd_name = format!("{plural}.{group}");
    let gvk = GroupVersionKind::gvk(&group, "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, plural);

    let health = Arc::new(WatchHealth::default());
    let api: Api<DynamicObject> = Api::namespaced_with(cluster.client(), ns.name(), &ar);
    let watch_api = api.clone();
    let mut stream = Box::pin(
        health
            .supervised("widgets", move || watcher(watch_api.clone(), config()))
            .filter_map(|event| async move {
                match event {
                    Ok(watcher::Event::Apply(obj) | watcher::Event::InitApply(obj)) => {
                        Some(Ok(obj.name_any()))
                    }
                    Ok(_) => None,
                    Err(err) => Some(Err(err.to_string())),
                }
            }),
    );

    // Before the CRD: the watch answers errors (404), retried with backoff.
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next()).await;
    match first {
        Ok(Some(Err(err))) => eprintln!("before the CRD the watch fails as expected: {err}"),
        other => panic!("expected an error answer before the CRD exists, got {other:?}"),
    }

    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": crd_name },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": { "plural": plural, "singular": "widget", "kind": "Widget", "listKind": "WidgetList" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } }
            }]
        }
    }))
    .expect("the CRD manifest is valid");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("creating the CRD");
    cluster.wait_crds_established(&[&crd_name]);

    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"),
        "kind": "Widget",
        "metadata": { "name": "w1" },
    }))
    .expect("the widget manifest is valid");
    let created = Instant::now();
    api.create(&PostParams::default(), &widget)
        .await
        .expect("creating the widget");

    // kube-runtime's default backoff caps at 30 s (with jitter): the object arrives within that.
    let deadline = Duration::from_secs(60);
    let delivered = tokio::time::timeout(deadline, async {
        while let Some(item) = stream.next().await {
            match item {
                Ok(name) if name == "w1" => return true,
                Ok(_) => {}
                Err(err) => eprintln!("still failing: {err}"),
            }
        }
        false
    })
    .await;
    let recovery = created.elapsed();
    let _ = crds.delete(&crd_name, &DeleteParams::default()).await;
    assert_eq!(
        delivered,
        Ok(true),
        "the watch did not deliver the widget within {deadline:?} of its creation"
    );
    eprintln!("watch recovered after the CRD install: object delivered {recovery:?} after its creation");
    let ages = health.ages();
    assert!(ages[0].silent_for < Duration::from_secs(5), "{ages:?}");
}
