//! Catalog images served by `olm-controller run` on the local control plane: a CatalogSource with
//! `sourceType: grpc` and `spec.image` pointing at a real registry (Debian's `docker-registry` on
//! loopback, `crates/test-support/src/registry.rs`), the controller pulling it itself.
//!
//! What is checked, through the API as a cluster admin sees it: the catalog turns `READY` with
//! the digest in `status.resolvedImage`; a new image pushed under the same tag is picked up at the
//! next `registryPoll` with an Event naming both digests; with the registry stopped the catalog
//! stays `READY` on the last good content and the message says why; a missing tag is
//! `TRANSIENT_FAILURE` naming the image; an invalid poll interval is reported with upstream's
//! `InvalidIntervalError`. A bundle-image-only catalog (`opm render` style: each bundle an
//! `image:` and no `olm.bundle.object`, the bundles pushed by `kubectl-olm bundle push`) installs
//! the Redis operator: the controller pulls the bundle image, the InstallPlan's steps come from it
//! and `status.bundleLookups` names it; a bundle image that does not exist leaves the Subscription
//! `BundleUnpacking` with the registry's message, then `BundleUnpackFailed` past the
//! OperatorGroup's `operatorframework.io/bundle-unpack-timeout`. Without a configured cluster, or
//! without the registry, the tests skip (and fail under `CI=true`).

// Test helpers outside #[test] functions: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use crate::support::{
    cluster::{TestCluster, repo_root, wait_for},
    e2e::{Controller, tmp_path},
    registry::Registry,
};
use k8s_openapi::api::core::v1::Event;
use kube::{
    Api, ResourceExt,
    api::{ListParams, PostParams},
};
use olm_rs::api::{
    v1::OperatorGroup,
    v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(90);

/// `olm-controller run` pulling from `registry` over plain HTTP, caching in `cache`; its log is
/// `target/tmp/catalog-image-e2e-<tag>.log`.
fn start_controller(cluster: &TestCluster, registry: &Registry, cache: &Path, tag: &str) -> Controller {
    Controller::start(
        cluster.kubeconfig_path(),
        tmp_path(&format!("catalog-image-e2e-{tag}.log")),
        vec![
            "--insecure-registry".into(),
            registry.addr.clone().into(),
            "--cache-dir".into(),
            cache.into(),
        ],
        &[],
    )
}

fn kubectl_olm(args: &[&str], cache: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(args)
        .arg("--cache-dir")
        .arg(cache)
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn pushed_digest(stdout: &str) -> String {
    stdout.trim().rsplit('@').next().unwrap().to_owned()
}

/// A copy of `catalog/` with one more package, so its image has another digest.
fn second_catalog(dir: &Path) -> PathBuf {
    let root = dir.join("catalog-v2");
    let status = Command::new("cp")
        .arg("-r")
        .arg(repo_root().join("catalog"))
        .arg(&root)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::create_dir_all(root.join("extra")).unwrap();
    std::fs::write(
        root.join("extra/catalog.json"),
        concat!(
            r#"{"schema":"olm.package","name":"extra","defaultChannel":"stable"}"#,
            "\n",
            r#"{"schema":"olm.channel","package":"extra","name":"stable","entries":[{"name":"extra.v1.0.0"}]}"#,
            "\n",
            r#"{"schema":"olm.bundle","package":"extra","name":"extra.v1.0.0","image":"example.invalid/extra:1","properties":[{"type":"olm.package","value":{"packageName":"extra","version":"1.0.0"}}]}"#,
            "\n"
        ),
    )
    .unwrap();
    root
}

async fn create_catalog_source(api: &Api<CatalogSource>, name: &str, ns: &str, image: &str, interval: &str) {
    let cs: CatalogSource = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"sourceType": "grpc", "image": image, "displayName": "image e2e",
                 "updateStrategy": {"registryPoll": {"interval": interval}}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &cs).await.unwrap();
}

async fn wait_status(
    api: &Api<CatalogSource>,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let check = &check;
    wait_for(what, WAIT, move || async move {
        let cs = api.get_opt(name).await.ok()??;
        let status = serde_json::to_value(cs.status?).ok()?;
        check(&status).then_some(status)
    })
    .await
}

fn state(status: &Value) -> &str {
    status
        .pointer("/connectionState/lastObservedState")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Tests run one at a time: each starts its own controller, which reconciles every
/// CatalogSource in the cluster and knows only its own registry as plain HTTP, so two at once
/// would overwrite each other's statuses.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn a_catalog_image_is_served_follows_its_tag_and_outlives_its_registry() {
    let _serial = SERIAL.lock().await;
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    if !crate::support::registry::available() {
        return;
    }
    cluster.install_olm_crds("olm-rs-e2e");
    let mut registry = Registry::plain();
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cli_cache = scratch.path().join("cli-cache");
    let image = registry.image("olm/catalog:stable");
    let first = pushed_digest(&kubectl_olm(
        &[
            "catalog",
            "push",
            "catalog",
            &image,
            "--insecure-registry",
            &registry.addr,
        ],
        &cli_cache,
    ));
    let ns = cluster.namespace("catalog-image").await;
    let controller = start_controller(
        &cluster,
        &registry,
        &scratch.path().join("controller-cache"),
        ns.name(),
    );
    let api: Api<CatalogSource> = ns.api();

    // Served, by digest.
    create_catalog_source(&api, "images", ns.name(), &image, "5s").await;
    let status = wait_status(&api, "images", "catalog image READY", |s| state(s) == "READY").await;
    assert_eq!(
        status["resolvedImage"],
        format!("{}/olm/catalog@{first}", registry.addr)
    );
    assert!(status["latestImageRegistryPoll"].is_string(), "{status:#}");

    // A new image under the same tag is picked up at the next poll, with an Event.
    let v2 = second_catalog(scratch.path());
    let v2_arg = v2.display().to_string();
    let second = pushed_digest(&kubectl_olm(
        &[
            "catalog",
            "push",
            &v2_arg,
            &image,
            "--insecure-registry",
            &registry.addr,
        ],
        &cli_cache,
    ));
    assert_ne!(first, second);
    wait_status(&api, "images", "the new digest served", |s| {
        s["resolvedImage"].as_str().is_some_and(|r| r.ends_with(&second))
    })
    .await;
    let events: Api<Event> = ns.api();
    let updated = wait_for("a CatalogImageUpdated Event", WAIT, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("CatalogImageUpdated"))
            .and_then(|e| e.message)
    })
    .await;
    assert!(updated.contains(&first) && updated.contains(&second), "{updated}");

    // A tag that does not exist; an interval that does not parse (the default 15m is used).
    let missing = format!("{}/olm/catalog:nope", registry.addr);
    create_catalog_source(&api, "missing", ns.name(), &missing, "1h").await;
    let status = wait_status(&api, "missing", "a missing image reported", |s| {
        state(s) == "TRANSIENT_FAILURE"
    })
    .await;
    assert_eq!(status["reason"], "RegistryServerError");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("image {missing} not found")),
        "{status:#}"
    );
    create_catalog_source(&api, "bad-interval", ns.name(), &image, "often").await;
    let status = wait_status(&api, "bad-interval", "InvalidIntervalError", |s| {
        state(s) == "READY"
    })
    .await;
    assert_eq!(status["reason"], "InvalidIntervalError", "{status:#}");
    assert!(
        status["message"].as_str().unwrap().contains("15m0s"),
        "{status:#}"
    );

    // The registry goes away: the last good catalog stays served and the message says why.
    registry.stop();
    let status = wait_status(&api, "images", "a failed poll reported", |s| {
        s["message"]
            .as_str()
            .is_some_and(|m| m.contains("the last poll failed"))
    })
    .await;
    assert_eq!(state(&status), "READY", "{status:#}");
    assert!(
        status["message"].as_str().unwrap().contains(&second),
        "{status:#}"
    );

    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(names.len(), 3);
    drop(controller);
}

/// `catalog/redis-operator` as `opm render` writes a catalog of bundle images: every bundle's
/// inlined objects dropped and its `image:` set to `image_of(version)`.
fn bundle_image_catalog(dir: &Path, image_of: impl Fn(&str) -> String) -> PathBuf {
    let source = repo_root().join("catalog/redis-operator/catalog.yaml");
    let text = std::fs::read_to_string(&source).unwrap();
    let decoded = olm_rs::codec::decode_documents("catalog.yaml", &text);
    assert!(decoded.error.is_none(), "{:?}", decoded.error);
    let mut out = String::new();
    for doc in decoded.documents {
        let mut value = doc.value;
        if value["schema"] == "olm.bundle" {
            let version = value["name"]
                .as_str()
                .unwrap()
                .trim_start_matches("redis-operator.v")
                .to_owned();
            value["image"] = json!(image_of(&version));
            if let Some(props) = value["properties"].as_array_mut() {
                props.retain(|p| p["type"] != "olm.bundle.object");
            }
        }
        out.push_str(&value.to_string());
        out.push('\n');
    }
    let root = dir.join("catalog");
    std::fs::create_dir_all(root.join("redis-operator")).unwrap();
    std::fs::write(root.join("redis-operator/catalog.json"), out).unwrap();
    root
}

async fn create<K>(api: &Api<K>, value: Value)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize,
{
    let object: K = serde_json::from_value(value).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

/// A namespace with an OwnNamespace OperatorGroup (with `annotations`), a CatalogSource `images`
/// serving `catalog_image`, and a Subscription `redis` to the Redis operator's stable channel.
async fn subscribe(ns: &crate::support::cluster::TestNamespace, catalog_image: &str, annotations: Value) {
    let name = ns.name().to_owned();
    create_catalog_source(&ns.api(), "images", &name, catalog_image, "10m").await;
    wait_status(&ns.api(), "images", "catalog image READY", |s| {
        state(s) == "READY"
    })
    .await;
    create::<OperatorGroup>(
        &ns.api(),
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
               "metadata": {"name": "og", "namespace": name, "annotations": annotations},
               "spec": {"targetNamespaces": [name]}}),
    )
    .await;
    create::<Subscription>(
        &ns.api(),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": "redis", "namespace": name},
               "spec": {"name": "redis-operator", "channel": "stable", "source": "images",
                        "sourceNamespace": name, "installPlanApproval": "Automatic"}}),
    )
    .await;
}

/// Waits until the Subscription `redis` has a condition of `type_`; returns it.
async fn wait_subscription_condition(api: &Api<Subscription>, type_: &str) -> Value {
    wait_subscription_condition_saying(api, type_, "").await
}

/// The first `type_` condition (status True) whose message contains `saying`.
async fn wait_subscription_condition_saying(api: &Api<Subscription>, type_: &str, saying: &str) -> Value {
    wait_for(
        &format!("Subscription condition {type_} saying {saying:?}"),
        WAIT,
        || async {
            let sub = api.get_opt("redis").await.ok()??;
            let status = serde_json::to_value(sub.status?).ok()?;
            status["conditions"]
                .as_array()?
                .iter()
                .find(|c| {
                    c["type"] == type_
                        && c["status"] == "True"
                        && c["message"].as_str().unwrap_or_default().contains(saying)
                })
                .cloned()
        },
    )
    .await
}

#[tokio::test]
async fn a_bundle_image_only_catalog_installs_the_redis_operator() {
    let _serial = SERIAL.lock().await;
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    if !crate::support::registry::available() {
        return;
    }
    cluster.install_olm_crds("olm-rs-e2e");
    let registry = Registry::plain();
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cli_cache = scratch.path().join("cli-cache");

    // Every bundle pushed as a bundle image, pinned by digest in the catalog (as opm renders it).
    let mut digests = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(repo_root().join("bundles/redis-operator")).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let version = dir.file_name().unwrap().to_string_lossy().into_owned();
        let image = registry.image(&format!("olm/redis-operator-bundle:v{version}"));
        let dir_arg = dir.display().to_string();
        let pushed = kubectl_olm(
            &[
                "bundle",
                "push",
                &dir_arg,
                &image,
                "--insecure-registry",
                &registry.addr,
            ],
            &cli_cache,
        );
        digests.insert(version, pushed_digest(&pushed));
    }
    let addr = registry.addr.clone();
    let good = bundle_image_catalog(&scratch.path().join("good"), |version| {
        format!("{addr}/olm/redis-operator-bundle@{}", digests[version])
    });
    let catalog_image = registry.image("olm/redis-bundle-images:v1");
    let good_arg = good.display().to_string();
    kubectl_olm(
        &[
            "catalog",
            "push",
            &good_arg,
            &catalog_image,
            "--insecure-registry",
            &registry.addr,
        ],
        &cli_cache,
    );
    // The same catalog whose bundle images do not exist.
    let missing = bundle_image_catalog(&scratch.path().join("missing"), |version| {
        format!("{addr}/olm/no-such-bundle:v{version}")
    });
    let missing_image = registry.image("olm/redis-missing-bundles:v1");
    let missing_arg = missing.display().to_string();
    kubectl_olm(
        &[
            "catalog",
            "push",
            &missing_arg,
            &missing_image,
            "--insecure-registry",
            &registry.addr,
        ],
        &cli_cache,
    );

    let ns = cluster.namespace("bundle-image").await;
    let controller = start_controller(
        &cluster,
        &registry,
        &scratch.path().join("controller-cache"),
        ns.name(),
    );

    // Installs from the bundle image: the plan lists the pulled manifests and the lookup.
    subscribe(&ns, &catalog_image, json!({})).await;
    let subs: Api<Subscription> = ns.api();
    let plan_name = wait_for("an InstallPlan for the Redis operator", WAIT, || async {
        let sub = subs.get_opt("redis").await.ok()??;
        sub.status?.install_plan_ref?.name
    })
    .await;
    let plans: Api<InstallPlan> = ns.api();
    let plan = wait_for("the InstallPlan Complete", WAIT, || async {
        let plan = plans.get_opt(&plan_name).await.ok()??;
        let status = serde_json::to_value(plan.status?).ok()?;
        (status["phase"] == "Complete").then_some(status)
    })
    .await;
    let lookup = &plan["bundleLookups"][0];
    let csv = plan["plan"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["resource"]["kind"] == "ClusterServiceVersion")
        .map(|s| s["resource"]["name"].as_str().unwrap().to_owned())
        .expect("a CSV step");
    let version = csv.trim_start_matches("redis-operator.v");
    assert_eq!(
        lookup["path"],
        format!("{addr}/olm/redis-operator-bundle@{}", digests[version]),
        "{plan:#}"
    );
    assert_eq!(lookup["identifier"], csv.as_str());
    assert!(lookup.get("conditions").is_none(), "{plan:#}");
    let csvs: Api<ClusterServiceVersion> = ns.api();
    wait_for("the CSV created", WAIT, || async {
        csvs.get_opt(&csv).await.ok()?
    })
    .await;

    // A bundle image that does not exist: unpacking with the registry's message, then failed
    // past the OperatorGroup's unpack timeout.
    let other = cluster.namespace("bundle-image-missing").await;
    subscribe(
        &other,
        &missing_image,
        json!({"operatorframework.io/bundle-unpack-timeout": "20s"}),
    )
    .await;
    let subs: Api<Subscription> = other.api();
    // The first message names the pull; the registry's answer follows once it failed.
    let unpacking = wait_subscription_condition_saying(&subs, "BundleUnpacking", "not found").await;
    assert_eq!(unpacking["reason"], "UnpackingInProgress");
    assert!(
        unpacking["message"]
            .as_str()
            .is_some_and(|m| m.contains("olm/no-such-bundle") && m.contains("not found")),
        "{unpacking:#}"
    );
    let failed = wait_subscription_condition(&subs, "BundleUnpackFailed").await;
    assert_eq!(failed["reason"], "BundleUnpackFailed");
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("DeadlineExceeded") && message.contains("20s"),
        "{failed:#}"
    );
    let sub = subs.get("redis").await.unwrap();
    assert!(
        sub.status.and_then(|s| s.install_plan_ref).is_none(),
        "no InstallPlan is created for a bundle that was not unpacked"
    );
    drop(controller);
}
