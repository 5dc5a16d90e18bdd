//! End-to-end tests of `olm-controller run` on the local control plane.
//!
//! Each test starts the built controller as a child process (killed by a guard when the test
//! ends), works in its own namespace, serves a file-based catalog from a ConfigMap built from
//! the plain YAML bundles in `tests/fixtures/e2e/`, and drives the OLM flow through the API
//! and the built `kubectl`, as a cluster admin would. Tests run one at a time (the controller
//! watches every namespace, so two controllers must not run at once); the CRDs of
//! `manifests/crds` are applied once per run with server-side apply.
//!
//! Without a configured cluster the tests skip (and fail under `CI=true`), see
//! `tests/it/support/cluster.rs`. Controller logs go to `target/tmp/olm-e2e-*.log`; a failing test
//! prints the tail of its controller's log.

use std::{
    net::SocketAddr,
    process::{Child, Command, Stdio},
    sync::OnceLock,
    time::Duration,
};

use crate::support::{
    cluster::{TestCluster, TestNamespace, wait_for},
    e2e::{
        Controller, InNamespace, apply_catalog_config_map, catalog_json, fixture, free_port, str_at, tmp_path,
    },
};
use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, Event, ServiceAccount},
        rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams},
};
use olm_rs::api::{
    v1::{Operator, OperatorGroup},
    v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
};
use serde_json::{Value, json};

/// How long one e2e wait may take (installs need several reconciles and a kwok rollout).
const WAIT: Duration = Duration::from_secs(120);

/// Tests run one at a time: each has its own controller, which watches every namespace.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

// ---------------------------------------------------------------------------------------------
// The controller as a child process.

/// `olm-controller run` with a 60 s install-plan retry timeout, serving every loaded catalog on
/// the catalogd HTTP API (`--serve-http` on the returned address); its log is
/// `target/tmp/olm-e2e-<tag>.log`.
fn start_controller(cluster: &TestCluster, tag: &str) -> (Controller, SocketAddr) {
    let serve_http = free_port();
    let controller = Controller::start(
        cluster.kubeconfig_path(),
        tmp_path(&format!("olm-e2e-{tag}.log")),
        vec![
            "--install-plan-retry-timeout".into(),
            "60s".into(),
            "--serve-http".into(),
            serve_http.to_string().into(),
        ],
        &[],
    );
    (controller, serve_http)
}

/// The body of the controller's `GET /metrics` (polled up to 5 s for a 200).
fn metrics(controller: &Controller) -> String {
    let mut text = String::new();
    for _ in 0..50 {
        text = controller.get("/metrics", Duration::from_secs(10));
        if text.starts_with("HTTP/1.1 200") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    text
}

/// Applies `manifests/crds` once per test run (server-side apply) and waits until established.
fn ensure_crds(cluster: &TestCluster) {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| cluster.install_olm_crds("olm-rs-e2e"));
}

/// Everything a test needs: the cluster, its namespace and its controller (dropped first).
struct Env {
    controller: Controller,
    /// The controller's `--serve-http` address: every loaded catalog on the catalogd HTTP API.
    serve_http: SocketAddr,
    ns: TestNamespace,
    cluster: TestCluster,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

async fn env(tag: &str) -> Option<Env> {
    let cluster = TestCluster::connect().await?;
    let serial = SERIAL.lock().await;
    ensure_crds(&cluster);
    let ns = cluster.namespace(tag).await;
    let (controller, serve_http) = start_controller(&cluster, &format!("{tag}-{}", ns.name()));
    Some(Env {
        controller,
        serve_http,
        ns,
        cluster,
        _serial: serial,
    })
}

impl InNamespace for Env {
    fn parts(&self) -> (&TestCluster, &TestNamespace) {
        (&self.cluster, &self.ns)
    }
}

impl Env {
    /// A CatalogSource `name` of `source_type` at `address`, an OwnNamespace group, the catalog
    /// READY, and the Subscription `widget` (channel `stable`) at widget 1.1.0, `Succeeded`.
    async fn install_widget_from_address(
        &self,
        name: &str,
        source_type: &str,
        address: &str,
        display_name: &str,
    ) {
        self.create::<CatalogSource>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": self.ns()},
            "spec": {"sourceType": source_type, "address": address, "displayName": display_name},
        }))
        .await;
        self.own_namespace_group().await;
        self.wait_catalog_ready(name).await;
        self.subscription("widget", "widget-operator", name, json!({"channel": "stable"}))
            .await;
        self.wait_at_latest("widget", &csv_name("widget", "1.1.0")).await;
        self.wait_csv_phase(&csv_name("widget", "1.1.0"), "Succeeded")
            .await;
    }

    async fn list<K: kube::Resource<DynamicType = ()>>(&self) -> Vec<Value> {
        self.dynamic::<K>()
            .list(&ListParams::default())
            .await
            .map(|l| {
                l.items
                    .into_iter()
                    .map(|o| serde_json::to_value(o).unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until `check` returns `Some` for the object `name` of kind `K`.
    async fn wait_obj<K, T>(&self, what: &str, name: &str, check: impl Fn(&Value) -> Option<T>) -> T
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let label = format!("{what} ({} {}/{name})", K::kind(&()), self.ns());
        let last = std::sync::Mutex::new(Value::Null);
        let (this, check, last_ref) = (self, &check, &last);
        let found = tokio::time::timeout(
            WAIT,
            wait_for(&label, WAIT + Duration::from_secs(5), move || async move {
                let obj = this.get::<K>(name).await?;
                let out = check(&obj);
                if let Ok(mut l) = last_ref.lock() {
                    *l = obj;
                }
                out
            }),
        )
        .await;
        match found {
            Ok(value) => value,
            Err(_) => panic!(
                "timed out waiting for {label}; last seen:\n{}",
                serde_json::to_string_pretty(&*last.lock().expect("lock")).unwrap_or_default()
            ),
        }
    }

    async fn apply_catalog(&self, name: &str, blobs: &[Value]) {
        apply_catalog_config_map(&self.ns, "olm-rs-e2e", name, &catalog_json(blobs)).await;
    }

    async fn catalog_source(&self, name: &str, config_map: &str) {
        self.create::<CatalogSource>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": self.ns()},
            "spec": {"sourceType": "configmap", "configMap": config_map, "displayName": "e2e"},
        }))
        .await;
    }

    async fn wait_catalog_ready(&self, name: &str) {
        self.wait_obj::<CatalogSource, _>("catalog READY", name, |cs| {
            (cs.pointer("/status/connectionState/lastObservedState") == Some(&json!("READY"))).then_some(())
        })
        .await;
    }

    async fn operator_group(&self, name: &str, targets: Option<Vec<String>>) {
        let mut spec = json!({});
        if let Some(t) = targets {
            spec["targetNamespaces"] = json!(t);
        }
        self.create::<OperatorGroup>(json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": name, "namespace": self.ns()},
            "spec": spec,
        }))
        .await;
    }

    async fn own_namespace_group(&self) {
        self.operator_group("og", Some(vec![self.ns().to_owned()])).await;
    }

    /// widget 1.0.0 served by [`Env::serve_catalog`] and the Subscription `widget`: the CSV's
    /// name once it is `Succeeded`.
    async fn install_widget(&self) -> String {
        self.serve_catalog(&widget_catalog(&[("stable", &[b("1.0.0")])]))
            .await;
        self.subscription("widget", "widget-operator", "e2e", json!({}))
            .await;
        let csv = csv_name("widget", "1.0.0");
        self.wait_csv_phase(&csv, "Succeeded").await;
        csv
    }

    /// widget 1.0.0 (MultiNamespace) served from the ConfigMap `e2e-catalog`, a group targeting
    /// this namespace and `other`, and the Subscription `widget`: the CSV once `Succeeded`.
    async fn subscribe_multi_namespace_widget(&self, other: &str) -> Value {
        self.apply_catalog(
            "e2e-catalog",
            &with_multi_namespace(widget_catalog(&[("stable", &[b("1.0.0")])])),
        )
        .await;
        self.catalog_source("e2e", "e2e-catalog").await;
        self.operator_group("og", Some(vec![self.ns().to_owned(), other.to_owned()]))
            .await;
        self.wait_catalog_ready("e2e").await;
        self.subscription("widget", "widget-operator", "e2e", json!({}))
            .await;
        self.wait_csv_phase(&csv_name("widget", "1.0.0"), "Succeeded")
            .await
    }

    /// The usual start: `blobs` in the ConfigMap `e2e-catalog`, served by the CatalogSource `e2e`,
    /// an OwnNamespace OperatorGroup, and the catalog READY.
    async fn serve_catalog(&self, blobs: &[Value]) {
        self.apply_catalog("e2e-catalog", blobs).await;
        self.catalog_source("e2e", "e2e-catalog").await;
        self.own_namespace_group().await;
        self.wait_catalog_ready("e2e").await;
    }

    async fn subscription(&self, name: &str, package: &str, catalog: &str, extra: Value) {
        let mut spec = json!({
            "name": package, "source": catalog, "sourceNamespace": self.ns(),
        });
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        self.create::<Subscription>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": name, "namespace": self.ns()},
            "spec": spec,
        }))
        .await;
    }

    /// Waits for the Subscription's InstallPlan for `csv` and returns its name.
    async fn install_plan_for(&self, sub: &str, csv: &str) -> String {
        self.wait_obj::<Subscription, _>(&format!("an InstallPlan for {csv}"), sub, |s| {
            (s.pointer("/status/currentCSV") == Some(&json!(csv)))
                .then(|| {
                    s.pointer("/status/installPlanRef/name")?
                        .as_str()
                        .map(str::to_owned)
                })
                .flatten()
        })
        .await
    }

    async fn wait_csv_phase(&self, csv: &str, phase: &str) -> Value {
        self.wait_obj::<ClusterServiceVersion, _>(&format!("phase {phase}"), csv, |c| {
            (c.pointer("/status/phase") == Some(&json!(phase))).then(|| c.clone())
        })
        .await
    }

    async fn wait_csv_gone(&self, csv: &str) {
        let api = self.dynamic::<ClusterServiceVersion>();
        let what = format!("CSV {}/{csv} to be deleted", self.ns());
        wait_for(&what, WAIT, || {
            let api = api.clone();
            async move { matches!(api.get_opt(csv).await, Ok(None)).then_some(()) }
        })
        .await;
    }

    /// The CSV went Succeeded → Replacing → Deleting and is gone.
    async fn assert_replaced(&self, csv: &str) {
        self.wait_csv_gone(csv).await;
        let reasons: Vec<String> = self
            .events_for("ClusterServiceVersion", csv)
            .await
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        for reason in ["InstallSucceeded", "BeingReplaced", "Replaced"] {
            assert!(
                reasons.iter().any(|r| r == reason),
                "{csv} has no {reason} event: {reasons:?}"
            );
        }
    }

    async fn wait_at_latest(&self, sub: &str, csv: &str) -> Value {
        self.wait_obj::<Subscription, _>(&format!("AtLatestKnown at {csv}"), sub, |s| {
            (s.pointer("/status/state") == Some(&json!("AtLatestKnown"))
                && s.pointer("/status/installedCSV") == Some(&json!(csv)))
            .then(|| s.clone())
        })
        .await
    }

    async fn wait_condition(&self, sub: &str, type_: &str) -> Value {
        self.wait_obj::<Subscription, _>(&format!("condition {type_}"), sub, |s| {
            s.pointer("/status/conditions")?
                .as_array()?
                .iter()
                .find(|c| c["type"] == type_ && c["status"] == "True")
                .cloned()
        })
        .await
    }

    async fn wait_deployment_available(&self, name: &str) -> Deployment {
        let api: Api<Deployment> = self.ns.api();
        let what = format!("Deployment {}/{name} Available", self.ns());
        wait_for(&what, WAIT, || {
            let api = api.clone();
            async move {
                let d = api.get_opt(name).await.ok().flatten()?;
                let ok =
                    d.status.as_ref()?.conditions.as_ref()?.iter().any(|c| {
                        c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True")
                    });
                ok.then_some(d)
            }
        })
        .await
    }

    fn approve(&self, plan: &str) {
        self.cluster.kubectl_ok([
            "patch",
            "installplans.operators.coreos.com",
            plan,
            "-n",
            self.ns(),
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"approved":true}}"#,
        ]);
    }

    async fn events_for(&self, kind: &str, name: &str) -> Vec<(String, String)> {
        let api: Api<Event> = self.ns.api();
        api.list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| {
                e.involved_object.kind.as_deref() == Some(kind)
                    && e.involved_object.name.as_deref() == Some(name)
            })
            .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Catalogs from the YAML fixtures.

/// One bundle of a channel: version and upgrade edges.
#[derive(Clone, Copy)]
struct B<'a> {
    version: &'a str,
    replaces: Option<&'a str>,
    skips: &'a [&'a str],
    skip_range: Option<&'a str>,
}

const fn b(version: &str) -> B<'_> {
    B {
        version,
        replaces: None,
        skips: &[],
        skip_range: None,
    }
}

impl<'a> B<'a> {
    const fn replaces(mut self, v: &'a str) -> Self {
        self.replaces = Some(v);
        self
    }
    const fn skips(mut self, v: &'a [&'a str]) -> Self {
        self.skips = v;
        self
    }
    const fn skip_range(mut self, r: &'a str) -> Self {
        self.skip_range = Some(r);
        self
    }
}

/// `widget` → package `widget-operator`, CSVs `widget-operator.v<version>`.
fn csv_name(dir: &str, version: &str) -> String {
    format!("{dir}-operator.v{version}")
}

/// A file-based catalog for the package of fixture directory `dir`: one channel per entry of
/// `channels` (the first is the default), each bundle built from the CSV template.
fn package_catalog(dir: &str, channels: &[(&str, &[B<'_>])]) -> Vec<Value> {
    let package = format!("{dir}-operator");
    let crd = fixture(&format!("{dir}/crd.yaml"));
    let template = fixture(&format!("{dir}/csv.yaml"));
    let mut blobs = vec![json!({
        "schema": "olm.package", "name": package, "defaultChannel": channels[0].0,
    })];
    let mut seen = std::collections::BTreeSet::new();
    for (channel, bundles) in channels {
        let entries: Vec<Value> = bundles
            .iter()
            .map(|bundle| {
                let mut e = json!({"name": csv_name(dir, bundle.version)});
                if let Some(r) = bundle.replaces {
                    e["replaces"] = json!(csv_name(dir, r));
                }
                if !bundle.skips.is_empty() {
                    e["skips"] = json!(bundle.skips.iter().map(|s| csv_name(dir, s)).collect::<Vec<_>>());
                }
                if let Some(r) = bundle.skip_range {
                    e["skipRange"] = json!(r);
                }
                e
            })
            .collect();
        blobs.push(json!({"schema": "olm.channel", "package": package, "name": channel, "entries": entries}));
        for bundle in bundles.iter() {
            if !seen.insert(bundle.version) {
                continue;
            }
            let name = csv_name(dir, bundle.version);
            let mut csv = template.clone();
            csv["metadata"]["name"] = json!(name);
            csv["spec"]["version"] = json!(bundle.version);
            if let Some(r) = bundle.replaces {
                csv["spec"]["replaces"] = json!(csv_name(dir, r));
            }
            if !bundle.skips.is_empty() {
                csv["spec"]["skips"] =
                    json!(bundle.skips.iter().map(|s| csv_name(dir, s)).collect::<Vec<_>>());
            }
            if let Some(r) = bundle.skip_range {
                csv["metadata"]["annotations"]["olm.skipRange"] = json!(r);
            }
            let crd_spec = &crd["spec"];
            let object = |v: &Value| json!({"type": "olm.bundle.object", "value": {"data": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, v.to_string())}});
            blobs.push(json!({
                "schema": "olm.bundle", "name": name, "package": package,
                "image": format!("registry.example.com/{package}-bundle:v{}", bundle.version),
                "properties": [
                    {"type": "olm.package", "value": {"packageName": package, "version": bundle.version}},
                    {"type": "olm.gvk", "value": {"group": crd_spec["group"], "kind": crd_spec["names"]["kind"], "version": "v1"}},
                    object(&csv),
                    object(&crd),
                ],
            }));
        }
    }
    blobs
}

fn widget_catalog(channels: &[(&str, &[B<'_>])]) -> Vec<Value> {
    package_catalog("widget", channels)
}

fn kinds_of_plan(plan: &Value) -> Vec<String> {
    plan.pointer("/status/plan")
        .and_then(Value::as_array)
        .map(|steps| {
            steps
                .iter()
                .filter_map(|s| {
                    s.pointer("/resource/kind")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The tests.

/// How the tutorial's InstallPlan is approved.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Approver {
    /// `kubectl patch installplan ... {"spec":{"approved":true}}`.
    KubectlPatch,
    /// `kubectl-olm approve --subscription widget`.
    Cli,
}

/// The OLM tutorial: OperatorGroup + Manual Subscription → RequiresApproval with the steps
/// listed → approved with `kubectl patch` → installed, with RBAC, events and metrics.
#[tokio::test]
async fn the_tutorial_flow_installs_a_manual_subscription_after_kubectl_patch_approval() {
    let Some(env) = env("e2e-tutorial").await else {
        return;
    };
    tutorial_flow(&env, Approver::KubectlPatch).await;
}

/// The same tutorial, approved with the CLI (`kubectl-olm approve --subscription widget`).
#[tokio::test]
async fn the_tutorial_flow_installs_a_manual_subscription_after_kubectl_olm_approve() {
    let Some(env) = env("e2e-tutorial-cli").await else {
        return;
    };
    tutorial_flow(&env, Approver::Cli).await;
}

async fn tutorial_flow(env: &Env, approver: Approver) {
    env.apply_catalog(
        "e2e-catalog",
        &widget_catalog(&[("stable", &[b("1.0.0"), b("1.1.0").replaces("1.0.0")])]),
    )
    .await;
    env.catalog_source("e2e", "e2e-catalog").await;
    env.own_namespace_group().await;
    env.wait_catalog_ready("e2e").await;
    env.subscription(
        "widget",
        "widget-operator",
        "e2e",
        json!({"channel": "stable", "installPlanApproval": "Manual"}),
    )
    .await;

    let head = csv_name("widget", "1.1.0");
    let plan_name = env.install_plan_for("widget", &head).await;
    let plan = env
        .wait_obj::<InstallPlan, _>("RequiresApproval", &plan_name, |p| {
            (str_at(p, "/status/phase") == "RequiresApproval").then(|| p.clone())
        })
        .await;
    let kinds = kinds_of_plan(&plan);
    for kind in [
        "CustomResourceDefinition",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterServiceVersion",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "plan lacks a {kind} step: {kinds:?}"
        );
    }
    assert!(
        plan.pointer("/status/plan")
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().all(|s| s["status"] == "Unknown")),
        "nothing runs before approval: {plan:#}"
    );
    assert_eq!(str_at(&plan, "/spec/approval"), "Manual");
    // Nothing was installed yet.
    assert!(env.get::<ClusterServiceVersion>(&head).await.is_none());
    let sub = env.wait_condition("widget", "InstallPlanPending").await;
    assert_eq!(str_at(&sub, "/reason"), "RequiresApproval", "{sub:#}");

    match approver {
        Approver::KubectlPatch => env.approve(&plan_name),
        Approver::Cli => {
            let out = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
                .arg("--kubeconfig")
                .arg(env.cluster.kubeconfig_path())
                .args(["approve", "--subscription", "widget", "-n", env.ns()])
                .env_remove("KUBECONFIG")
                .output()
                .expect("running kubectl-olm approve");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "kubectl-olm approve failed: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                stdout.contains(&format!("installplan.operators.coreos.com/{plan_name} approved")),
                "{stdout}"
            );
        }
    }
    env.wait_obj::<InstallPlan, _>("Complete", &plan_name, |p| {
        (str_at(p, "/status/phase") == "Complete").then_some(())
    })
    .await;
    let csv = env.wait_csv_phase(&head, "Succeeded").await;
    assert_eq!(str_at(&csv, "/metadata/annotations/olm.operatorGroup"), "og");
    assert_eq!(
        str_at(&csv, "/metadata/annotations/olm.targetNamespaces"),
        env.ns()
    );
    let deployment = env.wait_deployment_available("widget-operator").await;
    assert!(
        deployment
            .owner_references()
            .iter()
            .any(|o| o.kind == "ClusterServiceVersion" && o.name == head),
        "the Deployment is owned by the CSV"
    );
    let template_annotations = deployment
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    assert_eq!(
        template_annotations
            .get("olm.targetNamespaces")
            .map(String::as_str),
        Some(env.ns())
    );

    // RBAC: Role + RoleBinding owned by the CSV, ClusterRole + binding labelled with it.
    let roles: Api<Role> = env.ns.api();
    let role = roles
        .list(&ListParams::default().labels(&format!("olm.owner={head}")))
        .await
        .expect("listing roles")
        .items;
    assert_eq!(role.len(), 1, "one generated Role");
    assert!(role[0].owner_references().iter().any(|o| o.name == head));
    let bindings: Api<RoleBinding> = env.ns.api();
    assert_eq!(
        bindings
            .list(&ListParams::default().labels(&format!("olm.owner={head}")))
            .await
            .expect("listing rolebindings")
            .items
            .len(),
        1
    );
    let selector = format!("olm.owner={head},olm.owner.namespace={}", env.ns());
    let crs: Api<ClusterRole> = Api::all(env.client());
    assert_eq!(
        crs.list(&ListParams::default().labels(&selector))
            .await
            .expect("crs")
            .items
            .len(),
        1
    );
    let crbs: Api<ClusterRoleBinding> = Api::all(env.client());
    assert_eq!(
        crbs.list(&ListParams::default().labels(&selector))
            .await
            .expect("crbs")
            .items
            .len(),
        1
    );

    // Upstream's Operator-API component label on everything the install created.
    let component =
        olm_rs::api::labels::component_label_key("widget-operator", env.ns()).expect("a component label key");
    let labelled = |what: &str, labels: &std::collections::BTreeMap<String, String>| {
        assert_eq!(
            labels.get(&component).map(String::as_str),
            Some(""),
            "{what} lacks {component}: {labels:?}"
        );
    };
    let csv_obj = env.get::<ClusterServiceVersion>(&head).await.expect("the CSV");
    let csv_labels: std::collections::BTreeMap<String, String> =
        serde_json::from_value(csv_obj["metadata"]["labels"].clone()).unwrap_or_default();
    labelled("the CSV", &csv_labels);
    labelled("the Deployment", deployment.labels());
    labelled("the Role", role[0].labels());
    let sas: Api<ServiceAccount> = env.ns.api();
    let sa = sas
        .list(&ListParams::default().labels(&component))
        .await
        .expect("listing service accounts")
        .items;
    assert!(!sa.is_empty(), "no ServiceAccount carries {component}");
    let by_component = ListParams::default().labels(&format!("{component},olm.owner={head}"));
    assert_eq!(
        bindings
            .list(&by_component)
            .await
            .expect("rolebindings")
            .items
            .len(),
        1,
        "the RoleBinding carries {component}"
    );
    assert_eq!(crs.list(&by_component).await.expect("crs").items.len(), 1);
    assert_eq!(crbs.list(&by_component).await.expect("crbs").items.len(), 1);

    let sub = env.wait_at_latest("widget", &head).await;
    assert_eq!(str_at(&sub, "/status/installPlanRef/name"), plan_name);

    // Ready: the leader's caches synced (the readiness task used to wait forever).
    let mut readyz = String::new();
    for _ in 0..100 {
        readyz = env.controller.get("/readyz", Duration::from_secs(10));
        if readyz.starts_with("HTTP/1.1 200") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(readyz.starts_with("HTTP/1.1 200"), "/readyz: {readyz}");

    // Events on the transitions, and the metrics.
    let events = env.events_for("ClusterServiceVersion", &head).await;
    assert!(
        events.iter().any(|(reason, _)| reason == "InstallSucceeded"),
        "CSV events: {events:?}"
    );
    let sub_events = env.events_for("Subscription", "widget").await;
    assert!(
        sub_events
            .iter()
            .any(|(reason, m)| reason == "InstallPlanCreated" && m.contains(&plan_name)),
        "Subscription events: {sub_events:?}"
    );
    // core/v1 Events as upstream writes them: OLM's source component, a count and the times.
    let all: Api<Event> = env.ns.api();
    let ours: Vec<Event> = all
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.involved_object.kind.as_deref() == Some("Subscription"))
        .collect();
    assert!(!ours.is_empty(), "no Subscription events");
    for event in &ours {
        let source = event.source.as_ref().and_then(|s| s.component.as_deref());
        assert_eq!(source, Some("operator-lifecycle-manager"), "{event:?}");
        assert!(event.count.is_some_and(|c| c >= 1), "{event:?}");
        assert!(
            event.last_timestamp.is_some() && event.first_timestamp.is_some(),
            "{event:?}"
        );
    }
    let metrics = metrics(&env.controller);
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("csv_succeeded{")
                && l.contains(&format!("name=\"{head}\""))
                && l.contains(&format!("namespace=\"{}\"", env.ns()))
        })
        .unwrap_or_else(|| panic!("no csv_succeeded series for {head}:\n{metrics}"));
    assert!(line.ends_with(" 1"), "{line}");
    assert!(metrics.contains("subscription_sync_total{"), "{metrics}");
    assert!(metrics.contains("install_plan_count"), "{metrics}");
    assert!(metrics.contains("catalogsource_ready{"), "{metrics}");

    user_roles_for_the_widget_api(env).await;
    operator_object_lists_the_widget_components(env, &head).await;
}

/// Upstream's `operators.coreos.com/v1` Operator `<package>.<namespace>`: cluster-scoped, its
/// selector the component label, its refs every labelled object (issue 15).
async fn operator_object_lists_the_widget_components(env: &Env, csv: &str) {
    let name = format!("widget-operator.{}", env.ns());
    let key = format!("operators.coreos.com/{name}");
    let api: Api<Operator> = Api::all(env.client());
    let wanted = [
        ("ClusterServiceVersion", csv.to_owned()),
        ("Deployment", "widget-operator".to_owned()),
        ("CustomResourceDefinition", "widgets.e2e.olm-rs.io".to_owned()),
        ("Subscription", "widget".to_owned()),
    ];
    let (api_ref, wanted_ref) = (&api, &wanted);
    let status = wait_for(&format!("Operator {name} lists its components"), WAIT, || {
        let name = name.clone();
        async move {
            let op = api_ref.get_opt(&name).await.ok().flatten()?;
            let status = serde_json::to_value(op.status?).ok()?;
            let refs = status.pointer("/components/refs")?.as_array()?.clone();
            let available = refs.iter().any(|r| {
                r["kind"] == "Deployment"
                    && r["conditions"].as_array().is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Available" && c["status"] == "True")
                    })
            });
            (available
                && wanted_ref
                    .iter()
                    .all(|(kind, n)| refs.iter().any(|r| r["kind"] == *kind && r["name"] == *n)))
            .then_some(status)
        }
    })
    .await;
    assert_eq!(
        status["components"]["labelSelector"],
        json!({"matchExpressions": [{"key": key, "operator": "Exists"}]}),
        "{status:#}"
    );
    let refs = status["components"]["refs"].as_array().expect("refs");
    let find = |kind: &str| {
        refs.iter()
            .find(|r| r["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {status:#}"))
    };
    let crd = find("CustomResourceDefinition");
    assert!(crd.get("namespace").is_none(), "{crd}");
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    let deployment = find("Deployment");
    assert_eq!(deployment["namespace"], env.ns());
    assert_eq!(deployment["apiVersion"], "apps/v1");
    let csv_ref = find("ClusterServiceVersion");
    assert_eq!(csv_ref["apiVersion"], "operators.coreos.com/v1alpha1");
    // A CSV's one condition is its current phase (upstream `csvConditionsJQ`).
    let csv_conditions = csv_ref["conditions"].as_array().expect("CSV conditions");
    assert_eq!(csv_conditions.len(), 1, "{csv_ref}");
    assert_eq!(csv_conditions[0]["status"], "True", "{csv_ref}");
    // Sorted by kind first, as upstream's AddComponents sorts them.
    let kinds: Vec<&str> = refs.iter().filter_map(|r| r["kind"].as_str()).collect();
    assert!(kinds.is_sorted(), "{kinds:?}");
    // The Subscription's conditions are copied without its lastHeartbeatTime.
    let sub = find("Subscription");
    assert!(
        sub["conditions"]
            .as_array()
            .is_some_and(|c| !c.is_empty() && c.iter().all(|c| c.get("lastHeartbeatTime").is_none())),
        "{sub}"
    );
    let listed = env.cluster.kubectl_ok(["get", "operators", "-o", "name"]);
    assert!(
        listed.contains(&format!("operator.operators.coreos.com/{name}")),
        "{listed}"
    );
}

/// What upstream OLM writes so a namespace's people can use an installed operator's API: the
/// group's `olm.providedAPIs`, the per-API ClusterRoles aggregated into `admin`/`edit`/`view`,
/// the group's `olm.og.og.<level>-<hash>` roles, and a namespace admin creating a Widget.
async fn user_roles_for_the_widget_api(env: &Env) {
    env.wait_obj::<OperatorGroup, _>("olm.providedAPIs", "og", |g| {
        (str_at(g, "/metadata/annotations/olm.providedAPIs") == "Widget.v1.e2e.olm-rs.io").then(|| g.clone())
    })
    .await;
    let crs: Api<ClusterRole> = Api::all(env.cluster.client());
    // FNV-1a 64 of "Widget.v1.e2e.olm-rs.io", as upstream's APIKeyToGVKHash.
    let hash = "bded413ba7741be6";
    for (level, verbs) in [
        ("admin", vec!["*"]),
        ("edit", vec!["create", "update", "patch", "delete"]),
        ("view", vec!["get", "list", "watch"]),
        ("crdview", vec!["get"]),
    ] {
        let name = format!("widgets.e2e.olm-rs.io-v1-{level}");
        let role = wait_for(&format!("ClusterRole {name}"), Duration::from_secs(60), || {
            let crs = crs.clone();
            let name = name.clone();
            async move { crs.get_opt(&name).await.ok().flatten() }
        })
        .await;
        let aggregate = if level == "crdview" { "view" } else { level };
        let labels = role.labels();
        assert_eq!(
            labels
                .get(&format!("rbac.authorization.k8s.io/aggregate-to-{aggregate}"))
                .map(String::as_str),
            Some("true"),
            "{name}: {labels:?}"
        );
        assert_eq!(
            labels
                .get(&format!(
                    "olm.opgroup.permissions/aggregate-to-{hash}-{aggregate}"
                ))
                .map(String::as_str),
            Some("true"),
            "{name}: {labels:?}"
        );
        let rule = &role.rules.as_ref().expect("rules")[0];
        assert_eq!(rule.verbs, verbs, "{name}");
        let owner = &role.metadata.owner_references.as_ref().expect("owner")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("CustomResourceDefinition", "widgets.e2e.olm-rs.io")
        );
    }
    let by_owner = ListParams::default().labels(&format!(
        "olm.owner=og,olm.owner.kind=OperatorGroup,olm.owner.namespace={}",
        env.ns()
    ));
    let group_roles = crs.list(&by_owner).await.expect("group roles").items;
    assert_eq!(group_roles.len(), 3, "{group_roles:?}");
    for role in &group_roles {
        let level = ["admin", "edit", "view"]
            .into_iter()
            .find(|l| role.name_any().starts_with(&format!("olm.og.og.{l}-")))
            .unwrap_or_else(|| panic!("unexpected group role {}", role.name_any()));
        let selectors = role
            .aggregation_rule
            .as_ref()
            .and_then(|a| a.cluster_role_selectors.clone())
            .unwrap_or_default();
        let key = format!("olm.opgroup.permissions/aggregate-to-{hash}-{level}");
        assert!(
            selectors.iter().any(|s| s
                .match_labels
                .as_ref()
                .and_then(|m| m.get(&key))
                .map(String::as_str)
                == Some("true")),
            "{}: {selectors:?}",
            role.name_any()
        );
    }

    // A namespace admin (bound to the built-in `admin` ClusterRole here) creates a Widget.
    let rbs: Api<RoleBinding> = Api::namespaced(env.cluster.client(), env.ns());
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "alice-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]
    }))
    .expect("a RoleBinding");
    rbs.create(&PostParams::default(), &binding)
        .await
        .expect("binding alice");
    let widget = ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk("e2e.olm-rs.io", "v1", "Widget"));
    let alice: Api<DynamicObject> = Api::namespaced_with(
        env.cluster.client_as("alice", &["system:authenticated"]),
        env.ns(),
        &widget,
    );
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "e2e.olm-rs.io/v1", "kind": "Widget", "metadata": {"name": "alices"}, "spec": {}
    }))
    .expect("a Widget");
    // The aggregation controller needs a moment to fold the new roles into `admin`.
    wait_for("alice may create a Widget", Duration::from_secs(60), || {
        let alice = alice.clone();
        let obj = obj.clone();
        async move { alice.create(&PostParams::default(), &obj).await.ok() }
    })
    .await;
}

/// Automatic approval from `startingCSV`, then upgrades through `replaces`, `skips` and
/// `skipRange` as the catalog ConfigMap grows, each old CSV replaced and removed.
#[tokio::test]
async fn an_automatic_subscription_upgrades_along_replaces_skips_and_skip_range_to_the_head() {
    let Some(env) = env("e2e-upgrade").await else {
        return;
    };
    let v1 = b("1.0.0");
    let v11 = b("1.1.0").replaces("1.0.0");
    env.serve_catalog(&widget_catalog(&[("stable", &[v1, v11])]))
        .await;
    env.subscription(
        "widget",
        "widget-operator",
        "e2e",
        json!({"channel": "stable", "startingCSV": csv_name("widget", "1.0.0")}),
    )
    .await;

    // startingCSV installs 1.0.0, then replaces → 1.1.0 (Automatic: no approval needed).
    // 1.0.0 is Succeeded only for a moment before 1.1.0 replaces it: its events tell.
    env.wait_at_latest("widget", &csv_name("widget", "1.1.0")).await;
    env.wait_csv_phase(&csv_name("widget", "1.1.0"), "Succeeded")
        .await;
    env.assert_replaced(&csv_name("widget", "1.0.0")).await;

    // skips: 1.3.0 skips 1.1.0 (1.2.0 is never installed).
    let v12 = b("1.2.0").replaces("1.1.0");
    let v13 = b("1.3.0").replaces("1.2.0").skips(&["1.1.0"]);
    env.apply_catalog(
        "e2e-catalog",
        &widget_catalog(&[("stable", &[v1, v11, v12, v13])]),
    )
    .await;
    env.wait_at_latest("widget", &csv_name("widget", "1.3.0")).await;
    env.assert_replaced(&csv_name("widget", "1.1.0")).await;
    assert!(
        env.get::<ClusterServiceVersion>(&csv_name("widget", "1.2.0"))
            .await
            .is_none()
    );

    // skipRange: 2.0.0 covers >=1.0.0 <2.0.0 and replaces nothing installed. The installed
    // 1.3.0 left the channel (a channel keeps one head, as upstream's resolver and opm validate
    // require; 2.0.0 replaces the never-installed 1.2.0), so only the skipRange reaches it.
    let v2 = b("2.0.0").replaces("1.2.0").skip_range(">=1.0.0 <2.0.0");
    env.apply_catalog("e2e-catalog", &widget_catalog(&[("stable", &[v1, v11, v12, v2])]))
        .await;
    env.wait_at_latest("widget", &csv_name("widget", "2.0.0")).await;
    env.wait_csv_phase(&csv_name("widget", "2.0.0"), "Succeeded")
        .await;
    env.assert_replaced(&csv_name("widget", "1.3.0")).await;
    let csvs = env.list::<ClusterServiceVersion>().await;
    assert_eq!(
        csvs.len(),
        1,
        "only the head remains: {:?}",
        csvs.iter()
            .map(|c| str_at(c, "/metadata/name"))
            .collect::<Vec<_>>()
    );
    // The Deployment was handed over, not recreated from scratch.
    let d = env.wait_deployment_available("widget-operator").await;
    assert!(
        d.owner_references()
            .iter()
            .any(|o| o.name == csv_name("widget", "2.0.0"))
    );
    assert_eq!(
        d.labels().get("olm.owner").map(String::as_str),
        Some(csv_name("widget", "2.0.0").as_str())
    );
    // One InstallPlan per hop.
    let plans = env.list::<InstallPlan>().await;
    assert_eq!(plans.len(), 4, "1.0.0, 1.1.0, 1.3.0, 2.0.0");
}

/// A Manual and an Automatic Subscription in one namespace: the pending approval of one never
/// holds the other back.
#[tokio::test]
async fn a_manual_and_an_automatic_subscription_in_one_namespace_stay_independent() {
    let Some(env) = env("e2e-indep").await else { return };
    let mut blobs = widget_catalog(&[("stable", &[b("1.0.0")])]);
    blobs.extend(package_catalog("gadget", &[("stable", &[b("1.0.0")])]));
    env.serve_catalog(&blobs).await;
    env.subscription(
        "widget",
        "widget-operator",
        "e2e",
        json!({"installPlanApproval": "Manual"}),
    )
    .await;
    env.subscription(
        "gadget",
        "gadget-operator",
        "e2e",
        json!({"installPlanApproval": "Automatic"}),
    )
    .await;

    let gadget = csv_name("gadget", "1.0.0");
    env.wait_csv_phase(&gadget, "Succeeded").await;
    env.wait_at_latest("gadget", &gadget).await;
    let widget = csv_name("widget", "1.0.0");
    let plan = env.install_plan_for("widget", &widget).await;
    let p = env
        .wait_obj::<InstallPlan, _>("RequiresApproval", &plan, |p| {
            (str_at(p, "/status/phase") == "RequiresApproval").then(|| p.clone())
        })
        .await;
    assert_eq!(
        p.pointer("/spec/clusterServiceVersionNames"),
        Some(&json!([widget])),
        "each Subscription has its own plan"
    );
    assert!(env.get::<ClusterServiceVersion>(&widget).await.is_none());
    env.approve(&plan);
    env.wait_csv_phase(&widget, "Succeeded").await;
    env.wait_at_latest("widget", &widget).await;
}

/// A dependency declared with `olm.package.required` is installed through a generated
/// Subscription: the widget requires the gadget in `>=1.0.0 <2.0.0`, the gadget channel's head
/// is 2.0.0, so 1.1.0 is chosen. The generated Subscription is created by the widget's (Manual)
/// InstallPlan once approved, carries upstream's name, annotation and label, installs 1.1.0,
/// and is not upgraded out of the range the widget needs.
#[tokio::test]
async fn a_dependency_declared_with_olm_package_required_is_installed_through_a_generated_subscription() {
    let Some(env) = env("e2e-dep").await else { return };
    let mut blobs = widget_catalog(&[("stable", &[b("1.0.0")])]);
    for blob in blobs.iter_mut().filter(|b| b["schema"] == "olm.bundle") {
        if let Some(properties) = blob["properties"].as_array_mut() {
            properties.push(json!({"type": "olm.package.required",
                "value": {"packageName": "gadget-operator", "versionRange": ">=1.0.0 <2.0.0"}}));
        }
    }
    blobs.extend(package_catalog(
        "gadget",
        &[(
            "stable",
            &[
                b("1.0.0"),
                b("1.1.0").replaces("1.0.0"),
                b("2.0.0").replaces("1.1.0"),
            ],
        )],
    ));
    env.serve_catalog(&blobs).await;
    env.subscription(
        "widget",
        "widget-operator",
        "e2e",
        json!({"installPlanApproval": "Manual"}),
    )
    .await;

    let widget = csv_name("widget", "1.0.0");
    let gadget = csv_name("gadget", "1.1.0");
    let generated = format!("gadget-operator-stable-e2e-{}", env.ns());
    let plan_name = env.install_plan_for("widget", &widget).await;
    let plan = env
        .wait_obj::<InstallPlan, _>("RequiresApproval", &plan_name, |p| {
            (str_at(p, "/status/phase") == "RequiresApproval").then(|| p.clone())
        })
        .await;
    let step = plan
        .pointer("/status/plan")
        .and_then(Value::as_array)
        .and_then(|steps| steps.iter().find(|s| s["resource"]["kind"] == "Subscription"))
        .cloned()
        .unwrap_or_else(|| panic!("the plan has no Subscription step: {plan:#}"));
    assert_eq!(str_at(&step, "/resource/name"), generated);
    assert_eq!(str_at(&step, "/resolving"), gadget);
    assert!(
        env.get::<Subscription>(&generated).await.is_none(),
        "the dependency waits for the parent's approval"
    );

    env.approve(&plan_name);
    env.wait_csv_phase(&widget, "Succeeded").await;
    env.wait_csv_phase(&gadget, "Succeeded").await;
    let sub = env.wait_at_latest(&generated, &gadget).await;
    assert_eq!(str_at(&sub, "/spec/name"), "gadget-operator");
    assert_eq!(str_at(&sub, "/spec/channel"), "stable");
    assert_eq!(str_at(&sub, "/spec/startingCSV"), gadget);
    assert_eq!(str_at(&sub, "/spec/source"), "e2e");
    assert_eq!(str_at(&sub, "/spec/sourceNamespace"), env.ns());
    assert_eq!(str_at(&sub, "/spec/installPlanApproval"), "Automatic");
    assert_eq!(
        sub.pointer("/metadata/annotations/olm.generated-by"),
        Some(&json!(plan_name)),
        "{sub:#}"
    );
    let label =
        olm_rs::api::labels::component_label_key("gadget-operator", env.ns()).expect("a component label key");
    assert!(
        sub.pointer("/metadata/labels")
            .and_then(|l| l.get(&label))
            .is_some(),
        "no {label} label: {sub:#}"
    );
    assert!(
        sub.pointer("/metadata/ownerReferences").is_none(),
        "the generated Subscription outlives the parent's CSV: {sub:#}"
    );
    env.wait_at_latest("widget", &widget).await;
    // 2.0.0 is the gadget's head but outside the widget's range: never installed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        env.get::<ClusterServiceVersion>(&csv_name("gadget", "2.0.0"))
            .await
            .is_none()
    );
    let sub = env.get::<Subscription>(&generated).await.expect("subscription");
    assert_eq!(str_at(&sub, "/status/installedCSV"), gadget, "{sub:#}");
    assert_eq!(env.list::<Subscription>().await.len(), 2);
}

/// Unknown package, channel, catalog and startingCSV each fail resolution with a message that
/// names the fix; a malformed catalog does not hold back a Subscription of another catalog.
#[tokio::test]
async fn bad_subscriptions_and_a_broken_catalog_are_reported_and_break_nothing_else() {
    let Some(env) = env("e2e-bad").await else { return };
    env.apply_catalog("e2e-catalog", &widget_catalog(&[("stable", &[b("1.0.0")])]))
        .await;
    env.catalog_source("e2e", "e2e-catalog").await;
    let broken = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "broken", "namespace": env.ns()},
        "data": {"catalog.json": "{\"schema\": \"olm.package\", \"name\": "},
    });
    let cms: Api<ConfigMap> = env.ns.api();
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(broken).expect("cm"),
    )
    .await
    .expect("creating the broken ConfigMap");
    env.catalog_source("broken", "broken").await;
    env.own_namespace_group().await;
    env.wait_catalog_ready("e2e").await;

    // A typo in installPlanApproval is refused by the CRD, naming the field and the values
    // (upstream accepts it and installs without approval).
    let typo: Subscription = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "typo", "namespace": env.ns()},
        "spec": {"source": "e2e", "sourceNamespace": env.ns(), "name": "widget-operator",
                 "channel": "stable", "installPlanApproval": "manual"},
    }))
    .expect("subscription");
    let subs: Api<Subscription> = env.ns.api();
    let refused = subs
        .create(&PostParams::default(), &typo)
        .await
        .expect_err("a Subscription with installPlanApproval: manual is refused");
    let text = refused.to_string();
    assert!(
        text.contains("spec.installPlanApproval") && text.contains("\"Automatic\", \"Manual\""),
        "{text}"
    );

    let cs = env
        .wait_obj::<CatalogSource, _>("TRANSIENT_FAILURE", "broken", |cs| {
            (str_at(cs, "/status/connectionState/lastObservedState") == "TRANSIENT_FAILURE")
                .then(|| cs.clone())
        })
        .await;
    assert_eq!(str_at(&cs, "/status/reason"), "ConfigMapError", "{cs:#}");
    assert!(str_at(&cs, "/status/message").contains("catalog.json"), "{cs:#}");

    // A catalog with a channel entry whose bundle is missing is served without that entry, and
    // says so on its status and in a Warning Event.
    let mut partial = widget_catalog(&[("stable", &[b("1.0.0")])]);
    partial.push(
        json!({"schema": "olm.channel", "package": "widget-operator", "name": "beta",
        "entries": [{"name": "widget-operator.v5.0.0"}]}),
    );
    env.apply_catalog("partial", &partial).await;
    env.catalog_source("partial", "partial").await;
    let cs = env
        .wait_obj::<CatalogSource, _>("READY with a message", "partial", |cs| {
            (str_at(cs, "/status/connectionState/lastObservedState") == "READY"
                && !str_at(cs, "/status/message").is_empty())
            .then(|| cs.clone())
        })
        .await;
    let message = str_at(&cs, "/status/message");
    assert!(
        message.contains("widget-operator.v5.0.0") && message.contains("catalog validate"),
        "{cs:#}"
    );
    let mut events = Vec::new();
    for _ in 0..50 {
        events = env.events_for("CatalogSource", "partial").await;
        if events.iter().any(|(reason, _)| reason == "CatalogProblems") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        events
            .iter()
            .any(|(reason, m)| reason == "CatalogProblems" && m == message),
        "CatalogSource events: {events:?}"
    );

    env.subscription("no-package", "nope-operator", "e2e", json!({}))
        .await;
    env.subscription(
        "no-channel",
        "widget-operator",
        "e2e",
        json!({"channel": "stabel"}),
    )
    .await;
    env.subscription("no-catalog", "widget-operator", "missing", json!({}))
        .await;
    env.subscription(
        "no-start",
        "widget-operator",
        "e2e",
        json!({"startingCSV": "widget-operator.v9.9.9"}),
    )
    .await;
    env.subscription("good", "widget-operator", "e2e", json!({}))
        .await;
    env.subscription("on-broken", "widget-operator", "broken", json!({}))
        .await;

    let c = env.wait_condition("no-package", "ResolutionFailed").await;
    let m = str_at(&c, "/message");
    assert!(
        m.contains("nope-operator") && m.contains("widget-operator"),
        "{c:#}"
    );
    let c = env.wait_condition("no-channel", "ResolutionFailed").await;
    let m = str_at(&c, "/message");
    assert!(m.contains("stabel") && m.contains("stable"), "{c:#}");
    let c = env.wait_condition("no-catalog", "ResolutionFailed").await;
    assert!(str_at(&c, "/message").contains("missing"), "{c:#}");
    env.wait_condition("no-catalog", "CatalogSourcesUnhealthy").await;
    let c = env.wait_condition("no-start", "ResolutionFailed").await;
    let m = str_at(&c, "/message");
    assert!(
        m.contains("widget-operator.v9.9.9") && m.contains("widget-operator.v1.0.0"),
        "{c:#}"
    );
    let c = env.wait_condition("on-broken", "ResolutionFailed").await;
    assert!(str_at(&c, "/message").contains("broken"), "{c:#}");
    // A hand-made InstallPlan naming a CSV no catalog has: Failed, Installed=False with the
    // CSV's name and the fix, and a Warning Event (issue 14 item 5).
    env.create::<InstallPlan>(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": "hand-made", "namespace": env.ns()},
        "spec": {"clusterServiceVersionNames": ["ghost-operator.v1.0.0"],
                 "approval": "Automatic", "approved": true}
    }))
    .await;
    let ip = env
        .wait_obj::<InstallPlan, _>("Failed", "hand-made", |ip| {
            (str_at(ip, "/status/phase") == "Failed").then(|| ip.clone())
        })
        .await;
    let installed = ip
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| str_at(c, "/type") == "Installed"))
        .cloned()
        .unwrap_or_else(|| panic!("no Installed condition: {ip:#}"));
    assert_eq!(str_at(&installed, "/status"), "False", "{ip:#}");
    assert_eq!(str_at(&installed, "/reason"), "InstallCheckFailed", "{ip:#}");
    let m = str_at(&installed, "/message");
    assert!(
        m.contains("ghost-operator.v1.0.0") && m.contains("create a Subscription"),
        "{ip:#}"
    );
    let mut events = Vec::new();
    for _ in 0..50 {
        events = env.events_for("InstallPlan", "hand-made").await;
        if events.iter().any(|(reason, _)| reason == "InstallCheckFailed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        events.iter().any(|(reason, _)| reason == "InstallCheckFailed"),
        "InstallPlan events: {events:?}"
    );
    for sub in ["no-package", "no-channel", "no-catalog", "no-start"] {
        let s = env.get::<Subscription>(sub).await.expect("subscription");
        assert!(
            s.pointer("/status/installPlanRef").is_none(),
            "{sub} got a plan: {s:#}"
        );
    }

    // The good one installs regardless.
    env.wait_at_latest("good", &csv_name("widget", "1.0.0")).await;
    env.wait_csv_phase(&csv_name("widget", "1.0.0"), "Succeeded")
        .await;
}

/// An OperatorGroup targeting all namespaces, which the widget's install modes don't support,
/// fails its CSV `UnsupportedOperatorGroup`; a second OperatorGroup fails it
/// `TooManyOperatorGroups`.
#[tokio::test]
async fn operator_group_problems_fail_the_csv_with_upstream_reasons() {
    let Some(env) = env("e2e-og").await else { return };
    env.apply_catalog("e2e-catalog", &widget_catalog(&[("stable", &[b("1.0.0")])]))
        .await;
    env.catalog_source("e2e", "e2e-catalog").await;
    env.operator_group("all", None).await;
    env.wait_catalog_ready("e2e").await;
    env.subscription("widget", "widget-operator", "e2e", json!({}))
        .await;
    let csv = env.wait_csv_phase(&csv_name("widget", "1.0.0"), "Failed").await;
    assert_eq!(
        str_at(&csv, "/status/reason"),
        "UnsupportedOperatorGroup",
        "{csv:#}"
    );
    assert!(
        str_at(&csv, "/status/message").contains("AllNamespaces"),
        "{csv:#}"
    );

    env.operator_group("second", Some(vec![env.ns().to_owned()]))
        .await;
    let csv = env
        .wait_obj::<ClusterServiceVersion, _>("TooManyOperatorGroups", &csv_name("widget", "1.0.0"), |c| {
            (str_at(c, "/status/reason") == "TooManyOperatorGroups").then(|| c.clone())
        })
        .await;
    assert_eq!(str_at(&csv, "/status/phase"), "Failed");
    assert!(
        str_at(&csv, "/status/message").contains("delete all but one"),
        "{csv:#}"
    );
    let og = env
        .wait_obj::<OperatorGroup, _>("MultipleOperatorGroup", "second", |o| {
            o.pointer("/status/conditions")?
                .as_array()?
                .iter()
                .find(|c| c["type"] == "MultipleOperatorGroup")
                .cloned()
        })
        .await;
    assert_eq!(str_at(&og, "/reason"), "MultipleOperatorGroupsFound");

    // Fixing the namespace (one OwnNamespace group) lets the CSV install.
    env.dynamic::<OperatorGroup>()
        .delete("all", &DeleteParams::default())
        .await
        .expect("deleting the AllNamespaces group");
    env.wait_csv_phase(&csv_name("widget", "1.0.0"), "Succeeded")
        .await;
    // The deleted group's aggregated ClusterRoles go with it (upstream `operatorGroupDeleted`).
    let crs: Api<ClusterRole> = Api::all(env.client());
    let selector = format!(
        "olm.owner=all,olm.owner.namespace={},olm.owner.kind=OperatorGroup",
        env.ns()
    );
    wait_for("the deleted group's ClusterRoles to be deleted", WAIT, || {
        let (crs, selector) = (crs.clone(), selector.clone());
        async move {
            let list = crs.list(&ListParams::default().labels(&selector)).await.ok()?;
            list.items.is_empty().then_some(())
        }
    })
    .await;

    // A group elsewhere targeting all namespaces that already provides the widget API (static,
    // so nothing rewrites its annotation): the CSV fails InterOperatorGroupOwnerConflict with
    // upstream's message; deleting that group lets it install again.
    let rival_ns = env.cluster.namespace("e2e-og-rival").await;
    let rivals: Api<OperatorGroup> = rival_ns.api();
    let rival: OperatorGroup = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "rival", "namespace": rival_ns.name(),
            "annotations": {"olm.providedAPIs": "Widget.v1.e2e.olm-rs.io"}},
        "spec": {"staticProvidedAPIs": true},
    }))
    .expect("the rival OperatorGroup");
    rivals
        .create(&PostParams::default(), &rival)
        .await
        .expect("creating the rival group");
    let csv = env
        .wait_obj::<ClusterServiceVersion, _>(
            "InterOperatorGroupOwnerConflict",
            &csv_name("widget", "1.0.0"),
            |c| (str_at(c, "/status/reason") == "InterOperatorGroupOwnerConflict").then(|| c.clone()),
        )
        .await;
    assert_eq!(str_at(&csv, "/status/phase"), "Failed");
    assert_eq!(
        str_at(&csv, "/status/message"),
        "intersecting operatorgroups provide the same apis"
    );
    rivals
        .delete("rival", &DeleteParams::default())
        .await
        .expect("deleting the rival group");
    env.wait_csv_phase(&csv_name("widget", "1.0.0"), "Succeeded")
        .await;
}

/// Deleting the Subscription and the CSV garbage-collects Deployments and RBAC; CRDs stay.
#[tokio::test]
async fn deleting_the_subscription_and_csv_removes_deployments_and_rbac_but_keeps_crds() {
    let Some(env) = env("e2e-gc").await else { return };
    let csv = env.install_widget().await;
    env.wait_deployment_available("widget-operator").await;

    env.dynamic::<Subscription>()
        .delete("widget", &DeleteParams::default())
        .await
        .expect("deleting the Subscription");
    env.dynamic::<ClusterServiceVersion>()
        .delete(&csv, &DeleteParams::default())
        .await
        .expect("deleting the CSV");
    env.wait_csv_gone(&csv).await;

    let selector = format!("olm.owner={csv},olm.owner.namespace={}", env.ns());
    let deployments: Api<Deployment> = env.ns.api();
    let roles: Api<Role> = env.ns.api();
    let crs: Api<ClusterRole> = Api::all(env.client());
    let crbs: Api<ClusterRoleBinding> = Api::all(env.client());
    wait_for("Deployments and RBAC to be garbage-collected", WAIT, || {
        let (deployments, roles, crs, crbs, selector) = (
            deployments.clone(),
            roles.clone(),
            crs.clone(),
            crbs.clone(),
            selector.clone(),
        );
        async move {
            let lp = ListParams::default().labels(&selector);
            let d = deployments.get_opt("widget-operator").await.ok()?;
            let r = roles
                .list(&ListParams::default().labels(&format!("olm.owner={}", "widget-operator.v1.0.0")))
                .await
                .ok()?;
            let c = crs.list(&lp).await.ok()?;
            let b = crbs.list(&lp).await.ok()?;
            (d.is_none() && r.items.is_empty() && c.items.is_empty() && b.items.is_empty()).then_some(())
        }
    })
    .await;
    env.cluster.kubectl_ok(["get", "crd", "widgets.e2e.olm-rs.io"]);
}

/// SIGKILL in the middle of an install, then a restart: the install completes with exactly one
/// InstallPlan and one CSV.
#[tokio::test]
async fn a_controller_killed_mid_install_finishes_after_restart_without_duplicates() {
    let Some(mut env) = env("e2e-crash").await else {
        return;
    };
    env.serve_catalog(&widget_catalog(&[("stable", &[b("1.0.0")])]))
        .await;
    env.subscription("widget", "widget-operator", "e2e", json!({}))
        .await;
    let csv = csv_name("widget", "1.0.0");
    // Kill as soon as the plan exists (the install is under way).
    env.install_plan_for("widget", &csv).await;
    env.controller.kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    env.controller.restart();
    env.wait_csv_phase(&csv, "Succeeded").await;
    env.wait_at_latest("widget", &csv).await;
    // Give a duplicate the chance to appear, then count.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(env.list::<InstallPlan>().await.len(), 1);
    assert_eq!(env.list::<ClusterServiceVersion>().await.len(), 1);
}

/// The pod template of the Deployment `name`, once `check` accepts it.
async fn wait_pod_template(env: &Env, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let api: Api<Deployment> = env.ns.api();
    let label = format!("Deployment {}/{name}: {what}", env.ns());
    let check = &check;
    wait_for(&label, WAIT, || {
        let api = api.clone();
        async move {
            let d = api.get_opt(name).await.ok().flatten()?;
            let template = serde_json::to_value(&d.spec.template).ok()?;
            check(&template).then_some(template)
        }
    })
    .await
}

/// `Subscription.spec.config` reaches the operator's Deployment (env, resources, nodeSelector,
/// tolerations, annotations), follows a patch of the config with no new InstallPlan, and a
/// mount of a volume defined nowhere fails the CSV with a message naming the field, until fixed.
#[tokio::test]
async fn subscription_config_is_merged_into_the_deployment_and_follows_a_patch_without_a_new_plan() {
    let Some(env) = env("e2e-subconfig").await else {
        return;
    };
    env.serve_catalog(&widget_catalog(&[("stable", &[b("1.0.0")])]))
        .await;
    let toleration =
        json!({"key": "e2e/dedicated", "operator": "Equal", "value": "olm", "effect": "NoSchedule"});
    env.subscription(
        "widget",
        "widget-operator",
        "e2e",
        json!({"config": {
            "env": [{"name": "HTTP_PROXY", "value": "http://proxy.e2e:3128"}],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
            "nodeSelector": {"type": "kwok"},
            "tolerations": [toleration],
            "annotations": {"e2e.olm-rs.io/config": "1"}
        }}),
    )
    .await;
    let csv = csv_name("widget", "1.0.0");
    env.wait_csv_phase(&csv, "Succeeded").await;
    env.wait_deployment_available("widget-operator").await;
    let env_var = |t: &Value, name: &str| -> Option<Value> {
        t.pointer("/spec/containers/0/env")?
            .as_array()?
            .iter()
            .find(|e| e["name"] == name)
            .map(|e| e["value"].clone())
    };
    let template = wait_pod_template(&env, "widget-operator", "the first config", |t| {
        env_var(t, "HTTP_PROXY") == Some(json!("http://proxy.e2e:3128"))
    })
    .await;
    assert_eq!(
        template.pointer("/spec/containers/0/resources"),
        Some(&json!({"requests": {"cpu": "10m", "memory": "32Mi"}})),
        "{template:#}"
    );
    assert_eq!(
        template.pointer("/spec/nodeSelector"),
        Some(&json!({"type": "kwok"}))
    );
    let tolerations = template.pointer("/spec/tolerations").cloned().unwrap_or_default();
    assert!(
        tolerations.as_array().is_some_and(|ts| ts.contains(&toleration)),
        "{tolerations:#}"
    );
    assert_eq!(
        template.pointer("/metadata/annotations/e2e.olm-rs.io~1config"),
        Some(&json!("1"))
    );
    assert_eq!(
        env_var(&template, "OPERATOR_CONDITION_NAME"),
        Some(json!(csv)),
        "OLM's own variables stay"
    );
    assert_eq!(env.list::<InstallPlan>().await.len(), 1);

    // Patch the config: the Deployment follows, with no new InstallPlan.
    let subs = env.dynamic::<Subscription>();
    // One write that replaces the whole config (a merge patch would keep the old keys).
    let patch = |config: Value| {
        let subs = subs.clone();
        async move {
            // The controller writes the status meanwhile: retry on a conflict.
            for _ in 0..10 {
                let mut sub = subs.get("widget").await.expect("reading the Subscription");
                sub.data["spec"]["config"] = config.clone();
                match subs.replace("widget", &PostParams::default(), &sub).await {
                    Ok(_) => return,
                    Err(kube::Error::Api(e)) if e.code == 409 => continue,
                    Err(e) => panic!("replacing spec.config: {e}"),
                }
            }
            panic!("replacing spec.config: 10 conflicts in a row");
        }
    };
    patch(json!({
        "env": [{"name": "HTTP_PROXY", "value": "http://other.e2e:8080"}, {"name": "NO_PROXY", "value": ".svc"}],
        "resources": {"limits": {"cpu": "200m", "memory": "64Mi"}},
        "nodeSelector": {"kubernetes.io/os": "linux"}
    }))
    .await;
    let template = wait_pod_template(&env, "widget-operator", "the patched config", |t| {
        env_var(t, "HTTP_PROXY") == Some(json!("http://other.e2e:8080"))
    })
    .await;
    assert_eq!(env_var(&template, "NO_PROXY"), Some(json!(".svc")));
    let limits = template.pointer("/spec/containers/0/resources/limits").cloned();
    assert_eq!(
        limits,
        Some(json!({"cpu": "200m", "memory": "64Mi"})),
        "{template:#}"
    );
    // Replaced, not merged: the old requests are gone (the API server defaults requests to
    // the limits).
    assert_ne!(
        template.pointer("/spec/containers/0/resources/requests"),
        Some(&json!({"cpu": "10m", "memory": "32Mi"})),
        "resources are replaced"
    );
    assert_eq!(
        template.pointer("/spec/nodeSelector"),
        Some(&json!({"kubernetes.io/os": "linux"}))
    );
    let tolerations = template.pointer("/spec/tolerations").cloned().unwrap_or_default();
    assert!(
        !tolerations.as_array().is_some_and(|ts| ts.contains(&toleration)),
        "a toleration dropped from the config leaves the Deployment: {tolerations:#}"
    );
    env.wait_deployment_available("widget-operator").await;
    env.wait_csv_phase(&csv, "Succeeded").await;
    assert_eq!(env.list::<InstallPlan>().await.len(), 1, "no new InstallPlan");
    assert_eq!(env.list::<ClusterServiceVersion>().await.len(), 1);

    // A mount of a volume defined nowhere: reported on the CSV, not ignored.
    patch(json!({"volumeMounts": [{"name": "nowhere", "mountPath": "/etc/nowhere"}]})).await;
    let failed = env.wait_csv_phase(&csv, "Failed").await;
    assert_eq!(str_at(&failed, "/status/reason"), "InstallComponentFailed");
    let message = str_at(&failed, "/status/message");
    assert!(
        message.contains("spec.config.volumeMounts[0]") && message.contains("nowhere"),
        "{message}"
    );
    // Fixed: the volume is added, the CSV installs again.
    patch(json!({
        "volumes": [{"name": "nowhere", "emptyDir": {}}],
        "volumeMounts": [{"name": "nowhere", "mountPath": "/etc/nowhere"}]
    }))
    .await;
    wait_pod_template(&env, "widget-operator", "the volume mounted", |t| {
        t.pointer("/spec/containers/0/volumeMounts")
            .and_then(Value::as_array)
            .is_some_and(|ms| ms.iter().any(|m| m["name"] == "nowhere"))
    })
    .await;
    env.wait_csv_phase(&csv, "Succeeded").await;
    assert_eq!(
        env.list::<InstallPlan>().await.len(),
        1,
        "still no new InstallPlan"
    );
}

/// `kubectl-olm catalog serve <dir> <flag> 127.0.0.1:0` on `blobs` (a `catalog.json` in a
/// temporary directory, kept alive by the first value): the child, its first stdout line and the
/// address it names.
fn catalog_serve(blobs: &[Value], flag: &str) -> (tempfile::TempDir, Child, String, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("catalog.json"), catalog_json(blobs)).expect("writing the catalog");
    let mut server = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["catalog", "serve"])
        .arg(dir.path())
        .args([flag, "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting kubectl-olm catalog serve");
    let mut line = String::new();
    {
        use std::io::BufRead as _;
        let stdout = server.stdout.take().expect("piped stdout");
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the serve line");
    }
    let address = line
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (dir, server, line, address)
}

/// A CatalogSource with `sourceType: grpc` and `spec.address` reads the registry that
/// `kubectl-olm catalog serve` runs on loopback; a Subscription installs from it; when the
/// registry goes away the catalog stays served and the status says so.
#[tokio::test]
async fn a_subscription_installs_from_a_grpc_catalog_source_served_by_catalog_serve() {
    let Some(env) = env("e2e-grpc").await else {
        return;
    };
    let mut blobs = widget_catalog(&[("stable", &[b("1.0.0"), b("1.1.0").replaces("1.0.0")])]);
    // ListBundles carries the manifests of bundles without an image only (the others are pulled
    // from their image, which this cluster has not got).
    for blob in &mut blobs {
        if blob["schema"] == "olm.bundle" {
            blob["image"] = json!("");
        }
    }
    let (_dir, mut server, _, address) = catalog_serve(&blobs, "--grpc");

    env.install_widget_from_address("e2e-grpc", "grpc", &address, "e2e over gRPC")
        .await;

    // The registry goes away: the last good catalog stays served, and the status says so.
    let _ = server.kill();
    let _ = server.wait();
    let cs = env
        .wait_obj::<CatalogSource, _>("TRANSIENT_FAILURE", "e2e-grpc", |cs| {
            (cs.pointer("/status/connectionState/lastObservedState") == Some(&json!("TRANSIENT_FAILURE")))
                .then(|| cs.clone())
        })
        .await;
    assert_eq!(str_at(&cs, "/status/connectionState/address"), address);
    assert_eq!(str_at(&cs, "/status/reason"), "RegistryServerError");
    let message = str_at(&cs, "/status/message");
    assert!(
        message.contains("still serving the catalog read from it at"),
        "{message}"
    );
}

/// A CatalogSource with `sourceType: http` and `spec.address` reads the catalogd HTTP API that
/// `kubectl-olm catalog serve --http` runs on loopback (plain HTTP is allowed to loopback); a
/// Subscription installs from it. The controller serves the catalog it loaded in turn on its own
/// catalogd API (`olm-controller run --serve-http`), read back by `kubectl-olm --catalog`.
#[tokio::test]
async fn a_subscription_installs_from_an_http_catalog_source_served_by_catalog_serve() {
    let Some(env) = env("e2e-http").await else {
        return;
    };
    let blobs = widget_catalog(&[("stable", &[b("1.0.0"), b("1.1.0").replaces("1.0.0")])]);
    let (_dir, mut server, line, base) = catalog_serve(&blobs, "--http");
    assert!(base.starts_with("http://127.0.0.1:"), "{line}");

    env.install_widget_from_address("e2e-http", "http", &base, "e2e over HTTP")
        .await;
    let _ = server.kill();
    let _ = server.wait();

    // The controller's own catalogd API serves what it loaded, under /catalogs/NAMESPACE/NAME.
    let served = format!("http://{}/catalogs/{}/e2e-http", env.serve_http, env.ns());
    let output = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["catalog", "channels", "widget-operator", "--catalog", &served])
        .output()
        .expect("kubectl-olm runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{served}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("stable"), "{stdout}");
}

/// An OperatorGroup naming a target namespace that does not exist fails the CSV with a message
/// naming the namespace, the group and the fix (issue 14 item 3: the CSV used to keep no status
/// at all); creating the namespace lets the install finish.
#[tokio::test]
async fn a_missing_target_namespace_fails_the_csv_naming_it_until_it_is_created() {
    let Some(env) = env("e2e-missing-ns").await else {
        return;
    };
    let missing = format!("{}-absent", env.ns());
    env.apply_catalog(
        "e2e-catalog",
        &with_multi_namespace(widget_catalog(&[("stable", &[b("1.0.0")])])),
    )
    .await;
    env.catalog_source("e2e", "e2e-catalog").await;
    env.operator_group("og", Some(vec![env.ns().to_owned(), missing.clone()]))
        .await;
    env.wait_catalog_ready("e2e").await;
    env.subscription("widget", "widget-operator", "e2e", json!({}))
        .await;
    let name = csv_name("widget", "1.0.0");
    let csv = env
        .wait_obj::<ClusterServiceVersion, _>("the CSV failing on the missing namespace", &name, |c| {
            str_at(c, "/status/message").contains(&missing).then(|| c.clone())
        })
        .await;
    assert_eq!(str_at(&csv, "/status/phase"), "Failed", "{csv:#}");
    assert_eq!(
        str_at(&csv, "/status/reason"),
        "InstallComponentFailed",
        "{csv:#}"
    );
    let message = str_at(&csv, "/status/message");
    assert!(
        message.contains("does not exist") && message.contains("OperatorGroup"),
        "{csv:#}"
    );

    // Creating the namespace heals the install (the CSV retries through NeedsReinstall).
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": missing}})).expect("a namespace"),
        )
        .await
        .expect("creating the missing namespace");
    env.wait_csv_phase(&name, "Succeeded").await;
    let _ = namespaces.delete(&missing, &DeleteParams::default()).await;
}

/// A namespace keeps at most five InstallPlans, as upstream's `gcInstallPlans` keeps them: seven
/// finished plans there (hand-made ones, which fail at once) leave the five newest.
#[tokio::test]
async fn a_namespace_keeps_its_five_newest_finished_install_plans() {
    let Some(env) = env("e2e-ipgc").await else { return };
    for generation in 1..=7 {
        env.create::<InstallPlan>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
            "metadata": {"name": format!("hand-{generation}"), "namespace": env.ns()},
            "spec": {"clusterServiceVersionNames": ["ghost-operator.v1.0.0"],
                     "approval": "Automatic", "approved": true, "generation": generation}
        }))
        .await;
    }
    let plans: Api<InstallPlan> = Api::namespaced(env.client(), env.ns());
    let left = wait_for("two of the seven InstallPlans to be collected", WAIT, || {
        let plans = plans.clone();
        async move {
            let names: Vec<String> = plans
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .iter()
                .map(ResourceExt::name_any)
                .collect();
            (names.len() == 5).then_some(names)
        }
    })
    .await;
    assert_eq!(left, ["hand-3", "hand-4", "hand-5", "hand-6", "hand-7"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        plans
            .list(&ListParams::default())
            .await
            .expect("listing plans")
            .items
            .len(),
        5,
        "no more than the excess is collected"
    );
}

// ---------------------------------------------------------------------------------------------
// Hand-made InstallPlans, as upstream's own e2e suite makes them: created, then given their steps
// and phase by a second (status) write.

/// Creates the InstallPlan `name` (Automatic, approved), waits `pause`, then writes `status` over
/// the status subresource with the resourceVersion of the create, as upstream's suite does: the
/// write conflicts if the controller wrote anything in between.
async fn hand_made_plan(env: &Env, name: &str, pause: Duration, status: Value) {
    let plans = env.dynamic::<InstallPlan>();
    let plan: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": name, "namespace": env.ns()},
        "spec": {"clusterServiceVersionNames": [], "approval": "Automatic", "approved": true}
    }))
    .expect("an InstallPlan");
    let mut created = plans
        .create(&PostParams::default(), &plan)
        .await
        .unwrap_or_else(|e| panic!("creating InstallPlan {name}: {e}"));
    tokio::time::sleep(pause).await;
    created.data["status"] = status;
    plans
        .replace_status(name, &PostParams::default(), &created)
        .await
        .unwrap_or_else(|e| {
            panic!("writing the status of InstallPlan {name} (the controller wrote first?): {e}")
        });
}

/// A step of a hand-made plan: `manifest` (JSON text) with the step fields as given (and the
/// empty catalog fields Go's encoder writes).
fn hand_step(resolving: &str, group: &str, version: &str, kind: &str, manifest: &Value) -> Value {
    json!({
        "resolving": resolving, "status": "Unknown",
        "resource": {"group": group, "version": version, "kind": kind,
                     "name": str_at(manifest, "/metadata/name"), "manifest": manifest.to_string(),
                     "sourceName": "", "sourceNamespace": ""}
    })
}

/// A ConfigMap manifest naming the CSV `owner` as its owner, with no uid.
fn config_map_owned_by(name: &str, owner: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "ownerReferences": [{
               "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
               "name": owner, "uid": ""}]},
           "data": {"k": "v"}})
}

/// A CSV with no deployments (nothing to run), with the `apiVersion` given.
fn bare_csv(name: &str, api_version: &str) -> Value {
    json!({"apiVersion": api_version, "kind": "ClusterServiceVersion",
           "metadata": {"name": name},
           "spec": {"displayName": name, "version": "1.0.0",
                    "install": {"strategy": "deployment", "spec": {"deployments": []}},
                    "installModes": [{"type": "OwnNamespace", "supported": true},
                                     {"type": "SingleNamespace", "supported": true},
                                     {"type": "MultiNamespace", "supported": false},
                                     {"type": "AllNamespaces", "supported": true}]}})
}

fn plan_phase(plan: &Value) -> String {
    str_at(plan, "/status/phase").to_owned()
}

#[tokio::test]
async fn hand_made_install_plans_run_as_upstream_runs_them() {
    let Some(env) = env("e2e-handip").await else {
        return;
    };
    env.own_namespace_group().await;

    // A plan given steps but no phase is left alone (upstream acts on RequiresApproval and
    // Installing only); the status write after the create never conflicts with ours.
    let idle = config_map_owned_by("idle", "nobody");
    hand_made_plan(
        &env,
        "idle",
        Duration::from_secs(3),
        json!({"phase": "", "catalogSources": [], "plan": [hand_step("", "", "v1", "ConfigMap", &idle)]}),
    )
    .await;

    // Steps are applied as their manifests say: a legacy CSV whose apiVersion is `v1alpha1`, a
    // ConfigMap with no `resolving` whose manifest names that CSV as owner (the uid is filled in),
    // and a PodDisruptionBudget whose step leaves the group empty (its manifest says policy/v1).
    let owned = config_map_owned_by("owned", "hand-owner");
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": "hand-pdb"},
                     "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "hand"}}}});
    // A CRD step (as upstream's CRD step, annotated with the CSV it resolves at apply time).
    let crd_name = format!("hm{}.e2e.olm-rs.io", env.ns().rsplit('-').next().unwrap_or("x"));
    let plural = crd_name.split('.').next().unwrap_or_default().to_owned();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name},
        "spec": {"group": "e2e.olm-rs.io", "scope": "Cluster",
                 "names": {"plural": plural, "singular": format!("{plural}s"), "kind": "HandMade", "listKind": "HandMadeList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    hand_made_plan(
        &env,
        "by-manifest",
        Duration::ZERO,
        json!({"phase": "Installing", "catalogSources": [], "plan": [
            hand_step("hand-owner", "", "apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd),
            hand_step("hand-owner", "operators.coreos.com", "v1alpha1", "ClusterServiceVersion",
                      &bare_csv("hand-owner", "v1alpha1")),
            hand_step("", "", "v1", "ConfigMap", &owned),
            hand_step("", "", "v1", "PodDisruptionBudget", &pdb),
        ]}),
    )
    .await;
    let plan = env
        .wait_obj::<InstallPlan, _>("the plan to finish", "by-manifest", |p| {
            matches!(plan_phase(p).as_str(), "Complete" | "Failed").then(|| p.clone())
        })
        .await;
    assert_eq!(plan_phase(&plan), "Complete", "{plan:#}");
    let csv = env
        .get::<ClusterServiceVersion>("hand-owner")
        .await
        .expect("the CSV");
    let config_map = env.get::<ConfigMap>("owned").await.expect("the ConfigMap");
    assert_eq!(
        str_at(&config_map, "/metadata/ownerReferences/0/uid"),
        str_at(&csv, "/metadata/uid"),
        "the owner's uid is filled in: {config_map:#}"
    );
    assert_eq!(
        str_at(&config_map, "/metadata/ownerReferences/0/name"),
        "hand-owner"
    );
    let pdbs = Api::<DynamicObject>::namespaced_with(
        env.client(),
        env.ns(),
        &ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "policy",
            "v1",
            "PodDisruptionBudget",
        )),
    );
    assert!(pdbs.get_opt("hand-pdb").await.expect("reading the PDB").is_some());
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let applied = crds.get(&crd_name).await.expect("the CRD");
    let alongside: Vec<String> = applied
        .annotations()
        .iter()
        .filter(|(k, _)| k.starts_with("operatorframework.io/installed-alongside-"))
        .map(|(_, v)| v.clone())
        .collect();
    let _ = crds.delete(&crd_name, &DeleteParams::default()).await;
    assert_eq!(alongside, [format!("{}/hand-owner", env.ns())]);

    // A manifest naming a CSV that does not exist waits (retrying, naming it) until it does.
    let waiting = config_map_owned_by("waiting", "late-owner");
    hand_made_plan(
        &env,
        "late",
        Duration::ZERO,
        json!({"phase": "Installing", "catalogSources": [],
               "plan": [hand_step("", "", "v1", "ConfigMap", &waiting)]}),
    )
    .await;
    env.wait_obj::<InstallPlan, _>("the plan to name the missing owner", "late", |p| {
        (plan_phase(p) == "Installing"
            && str_at(p, "/status/message").contains("ClusterServiceVersion late-owner not found"))
        .then_some(())
    })
    .await;
    let mut late = bare_csv("late-owner", "operators.coreos.com/v1alpha1");
    late["metadata"]["namespace"] = json!(env.ns());
    env.create::<ClusterServiceVersion>(late).await;
    env.wait_obj::<InstallPlan, _>("the plan to complete once its owner exists", "late", |p| {
        (plan_phase(p) == "Complete").then_some(())
    })
    .await;

    // Still untouched, long after.
    let idle = env.get::<InstallPlan>("idle").await.expect("the idle plan");
    assert_eq!(plan_phase(&idle), "", "{idle:#}");
    assert_eq!(str_at(&idle, "/status/plan/0/status"), "Unknown");
    assert!(env.get::<ConfigMap>("idle").await.is_none());
}

#[tokio::test]
async fn an_install_plan_waits_for_an_operator_group_and_then_runs() {
    let Some(env) = env("e2e-ipnog").await else { return };
    let manifest = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-group"}});
    hand_made_plan(
        &env,
        "ip",
        Duration::ZERO,
        json!({"phase": "Installing", "catalogSources": [],
               "plan": [hand_step("", "", "v1", "ConfigMap", &manifest)]}),
    )
    .await;
    let held = env
        .wait_obj::<InstallPlan, _>("the plan to say it has no group", "ip", |p| {
            let conditions = p.pointer("/status/conditions")?.as_array()?;
            conditions
                .iter()
                .any(|c| {
                    str_at(c, "/type") == "Installed"
                        && str_at(c, "/status") == "False"
                        && str_at(c, "/reason") == "InstallCheckFailed"
                        && str_at(c, "/message") == "no operator group found that is managing this namespace"
                })
                .then(|| p.clone())
        })
        .await;
    assert_eq!(
        plan_phase(&held),
        "Installing",
        "the plan keeps its phase: {held:#}"
    );
    assert!(
        env.get::<ConfigMap>("after-group").await.is_none(),
        "nothing applied without a group"
    );
    env.own_namespace_group().await;
    let done = env
        .wait_obj::<InstallPlan, _>("the plan to run once the group is there", "ip", |p| {
            (plan_phase(p) == "Complete").then(|| p.clone())
        })
        .await;
    assert!(
        !done.to_string().contains("no operator group found"),
        "the condition is cleared: {done:#}"
    );
    assert!(env.get::<ConfigMap>("after-group").await.is_some());
}

/// A CSV applied directly (no package, no Subscription) in a MultiNamespace group installs as
/// upstream installs it: the RBAC it gets in the group's other target namespace carries no
/// Operator component label (there is no package to name; `operators.coreos.com/.<namespace>` is
/// refused by the API server, which failed the CSV). An AllNamespaces group would do the same
/// with ClusterRoles, but its copies would reach the namespaces of the tests after this one.
#[tokio::test]
async fn a_csv_applied_directly_gets_its_target_namespace_rbac() {
    let Some(env) = env("e2e-directcsv").await else {
        return;
    };
    let other = env.cluster.namespace("e2e-directcsv-target").await;
    env.operator_group("og", Some(vec![env.ns().to_owned(), other.name().to_owned()]))
        .await;
    env.create::<ServiceAccount>(json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "direct-sa", "namespace": env.ns()}}))
        .await;
    let mut csv = bare_csv("direct.v1.0.0", "operators.coreos.com/v1alpha1");
    csv["metadata"]["namespace"] = json!(env.ns());
    csv["spec"]["installModes"] = json!([{"type": "OwnNamespace", "supported": true},
                                         {"type": "SingleNamespace", "supported": true},
                                         {"type": "MultiNamespace", "supported": true},
                                         {"type": "AllNamespaces", "supported": false}]);
    csv["spec"]["install"]["spec"] = json!({
        "deployments": [{"name": "direct", "spec": {
            "selector": {"matchLabels": {"app": "direct"}},
            "template": {"metadata": {"labels": {"app": "direct"}},
                         "spec": {"serviceAccountName": "direct-sa",
                                  "containers": [{"name": "direct", "image": "olm-rs/placeholder"}]}}}}],
        "permissions": [{"serviceAccountName": "direct-sa",
                         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}]
    });
    env.create::<ClusterServiceVersion>(csv).await;
    env.wait_csv_phase("direct.v1.0.0", "Succeeded").await;
    let roles: Api<Role> = Api::namespaced(env.client(), other.name());
    let selector = format!("olm.owner=direct.v1.0.0,olm.owner.namespace={}", env.ns());
    let owned = wait_for("the CSV's Role in the other target namespace", WAIT, || {
        let (roles, selector) = (roles.clone(), selector.clone());
        async move {
            let list = roles.list(&ListParams::default().labels(&selector)).await.ok()?;
            (!list.items.is_empty()).then_some(list)
        }
    })
    .await;
    for role in &owned.items {
        assert!(
            !role
                .labels()
                .keys()
                .any(|k| k.starts_with("operators.coreos.com/.")),
            "no component label without a package: {:?}",
            role.labels()
        );
    }
}

/// A pending InstallPlan deleted by hand is planned again under a new name (upstream's plans
/// have generated names), and the new one waits for approval too.
#[tokio::test]
async fn a_deleted_pending_install_plan_is_planned_again_under_a_new_name() {
    let Some(env) = env("e2e-replan").await else {
        return;
    };
    env.serve_catalog(&widget_catalog(&[("stable", &[b("1.0.0")])]))
        .await;
    env.subscription(
        "widget",
        "widget-operator",
        "e2e",
        json!({"channel": "stable", "installPlanApproval": "Manual"}),
    )
    .await;
    let head = csv_name("widget", "1.0.0");
    let first = env.install_plan_for("widget", &head).await;
    env.wait_obj::<InstallPlan, _>("RequiresApproval", &first, |p| {
        (str_at(p, "/status/phase") == "RequiresApproval").then_some(())
    })
    .await;
    env.dynamic::<InstallPlan>()
        .delete(&first, &DeleteParams::default())
        .await
        .expect("deleting the pending plan");
    let second = env
        .wait_obj::<Subscription, _>("a new plan", "widget", |s| {
            let name = str_at(s, "/status/installPlanRef/name");
            (!name.is_empty() && name != first).then(|| name.to_owned())
        })
        .await;
    env.wait_obj::<InstallPlan, _>("RequiresApproval", &second, |p| {
        (str_at(p, "/status/phase") == "RequiresApproval"
            && str_at(p, "/spec/clusterServiceVersionNames/0") == head)
            .then_some(())
    })
    .await;
}

/// A copied CSV whose status someone else changes is written back from the original (upstream's
/// "is synchronized with the original csv"), once: a restored copy is left alone after.
#[tokio::test]
async fn a_copied_csv_whose_status_is_changed_is_restored_from_the_original() {
    let Some(env) = env("e2e-copysync").await else {
        return;
    };
    let other = env.cluster.namespace("e2e-copysync-target").await;
    let name = csv_name("widget", "1.0.0");
    let original = env.subscribe_multi_namespace_widget(other.name()).await;
    let copies: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        other.name(),
        &ApiResource::erase::<ClusterServiceVersion>(&()),
    );
    let want = str_at(&original, "/status/lastUpdateTime").to_owned();
    let synced = |copies: Api<DynamicObject>, name: String, want: String| async move {
        let copy = serde_json::to_value(copies.get_opt(&name).await.ok()??).ok()?;
        (str_at(&copy, "/status/phase") == "Succeeded" && str_at(&copy, "/status/lastUpdateTime") == want)
            .then_some(copy)
    };
    wait_for("the copy", WAIT, || {
        synced(copies.clone(), name.clone(), want.clone())
    })
    .await;
    copies
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"lastUpdateTime": "1970-01-01T00:00:01Z"}})),
        )
        .await
        .expect("changing the copy's status");
    wait_for("the copy's status restored", WAIT, || {
        synced(copies.clone(), name.clone(), want.clone())
    })
    .await;
    // Restored once; an untouched copy is never taken for a changed one.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let restores = env
        .controller
        .log_text()
        .matches("restoring a copied CSV that someone else changed")
        .count();
    assert_eq!(restores, 1, "one restore, no churn");
}

/// An APIService labelled as a CSV's whose namespace or CSV is gone is deleted (upstream's
/// "orphaned API service clean up"); one whose CSV exists stays.
#[tokio::test]
async fn orphaned_api_services_are_deleted_and_owned_ones_kept() {
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
    let Some(env) = env("e2e-apisvc").await else {
        return;
    };
    env.own_namespace_group().await;
    let mut csv = bare_csv("hat-server.v1", "operators.coreos.com/v1alpha1");
    csv["metadata"]["namespace"] = json!(env.ns());
    env.create::<ClusterServiceVersion>(csv).await;
    let api: Api<APIService> = Api::all(env.client());
    let suffix = env.ns().rsplit('-').next().unwrap_or("x").to_owned();
    let make = |name: &str, owner: &str, owner_ns: &str| -> APIService {
        serde_json::from_value(json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name, "labels": {
                "olm.owner": owner, "olm.owner.kind": "ClusterServiceVersion",
                "olm.owner.namespace": owner_ns}},
            "spec": {"group": name.split_once('.').map(|(_, g)| g).unwrap_or_default(),
                     "version": "v1alpha1", "groupPriorityMinimum": 100, "versionPriority": 100}
        }))
        .expect("an APIService")
    };
    let no_namespace = format!("v1alpha1.gone-ns-{suffix}.hats.olm-rs.io");
    let no_csv = format!("v1alpha1.gone-csv-{suffix}.hats.olm-rs.io");
    let owned = format!("v1alpha1.owned-{suffix}.hats.olm-rs.io");
    for service in [
        make(&no_namespace, "hat-server.v1", "nonexistent-namespace"),
        make(&no_csv, "hat-server.v0", env.ns()),
        make(&owned, "hat-server.v1", env.ns()),
    ] {
        api.create(&PostParams::default(), &service)
            .await
            .expect("creating an APIService");
    }
    for name in [&no_namespace, &no_csv] {
        let (api, name) = (api.clone(), name.clone());
        wait_for(&format!("APIService {name} to be deleted"), WAIT, move || {
            let (api, name) = (api.clone(), name.clone());
            async move { api.get_opt(&name).await.ok()?.is_none().then_some(()) }
        })
        .await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        api.get_opt(&owned).await.expect("reading").is_some(),
        "an owned APIService stays"
    );
    api.delete(&owned, &DeleteParams::default())
        .await
        .expect("cleaning up");
}

/// The catalog blobs with every bundle's CSV changed by `edit`.
fn edit_csvs(mut blobs: Vec<Value>, edit: impl Fn(&mut Value)) -> Vec<Value> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    for blob in &mut blobs {
        let Some(props) = blob.get_mut("properties").and_then(Value::as_array_mut) else {
            continue;
        };
        for prop in props.iter_mut().filter(|p| p["type"] == "olm.bundle.object") {
            let Some(data) = prop.pointer("/value/data").and_then(Value::as_str) else {
                continue;
            };
            let mut object: Value = serde_json::from_slice(&b64.decode(data).expect("base64 bundle object"))
                .expect("JSON object");
            if object["kind"] != "ClusterServiceVersion" {
                continue;
            }
            edit(&mut object);
            prop["value"]["data"] = json!(b64.encode(object.to_string()));
        }
    }
    blobs
}

/// The catalog blobs with the CSVs' `MultiNamespace` install mode supported.
fn with_multi_namespace(blobs: Vec<Value>) -> Vec<Value> {
    edit_csvs(blobs, |csv| {
        if let Some(modes) = csv
            .pointer_mut("/spec/installModes")
            .and_then(Value::as_array_mut)
        {
            for mode in modes.iter_mut().filter(|m| m["type"] == "MultiNamespace") {
                mode["supported"] = json!(true);
            }
        }
    })
}

/// `spec.nativeAPIs` checked as upstream checks them, through API discovery, and read from a
/// CSV that spells the field `nativeApis` as a certified bundle does (Go matches field names in
/// any case): a kind the cluster does not serve holds the CSV `Pending RequirementsNotMet`
/// naming it; once a CRD serves it, the CSV installs.
#[tokio::test]
async fn native_apis_hold_the_csv_until_the_cluster_serves_them() {
    let Some(env) = env("e2e-native").await else {
        return;
    };
    let group = format!("{}.native.olm-rs.io", env.ns());
    let blobs = edit_csvs(widget_catalog(&[("stable", &[b("1.0.0")])]), |csv| {
        csv["spec"]["nativeApis"] = json!([
            {"group": "", "version": "v1", "kind": "ConfigMap"},
            {"group": group, "version": "v1", "kind": "VolumeSnapshot"},
        ]);
    });
    env.apply_catalog("e2e-catalog", &blobs).await;
    env.catalog_source("e2e", "e2e-catalog").await;
    env.operator_group("og", Some(vec![env.ns().to_owned()])).await;
    env.wait_catalog_ready("e2e").await;
    env.subscription("widget", "widget-operator", "e2e", json!({}))
        .await;
    let name = csv_name("widget", "1.0.0");
    let missing = format!("v1.{group}");
    let csv = env
        .wait_obj::<ClusterServiceVersion, _>("the CSV held on the native API", &name, |c| {
            let held = c
                .pointer("/status/requirementStatus")?
                .as_array()?
                .iter()
                .any(|r| r["name"] == missing.as_str() && r["status"] == "NotPresent");
            held.then(|| c.clone())
        })
        .await;
    assert_eq!(str_at(&csv, "/status/phase"), "Pending", "{csv:#}");
    assert_eq!(str_at(&csv, "/status/reason"), "RequirementsNotMet", "{csv:#}");
    let entries = csv["status"]["requirementStatus"].as_array().expect("entries");
    let entry = |name: &str| entries.iter().find(|r| r["name"] == name).expect(name);
    assert_eq!(entry("v1.")["status"], "Present", "{csv:#}");
    assert_eq!(entry("v1.")["message"], "Native API exists", "{csv:#}");
    assert_eq!(entry(&missing)["kind"], "VolumeSnapshot", "{csv:#}");
    assert!(
        str_at(entry(&missing), "/message").starts_with("Native API does not exist"),
        "{csv:#}"
    );

    // A CRD serving the kind satisfies the requirement.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": format!("volumesnapshots.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "volumesnapshots", "kind": "VolumeSnapshot"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .expect("the CRD");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("creating the VolumeSnapshot CRD");
    env.wait_csv_phase(&name, "Succeeded").await;
    let _ = crds
        .delete(&format!("volumesnapshots.{group}"), &DeleteParams::default())
        .await;
}

/// Copied CSVs as upstream writes them: an OperatorGroup targeting its own and a second
/// namespace gets a copy of the CSV in the second one (phase mirrored, reason `Copied`,
/// `olm.copiedFrom`), and the copy goes when the namespace leaves the group.
#[tokio::test]
async fn a_multi_namespace_group_gets_a_copied_csv_that_leaves_with_its_namespace() {
    let Some(env) = env("e2e-copy").await else { return };
    let other = env.cluster.namespace("e2e-copy-target").await;
    let name = csv_name("widget", "1.0.0");
    env.subscribe_multi_namespace_widget(other.name()).await;

    let copies: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        other.name(),
        &ApiResource::erase::<ClusterServiceVersion>(&()),
    );
    let what = format!("a Succeeded copy of {name} in {}", other.name());
    let copy = wait_for(&what, WAIT, || {
        let copies = copies.clone();
        let name = name.clone();
        async move {
            let copy = serde_json::to_value(copies.get_opt(&name).await.ok()??).ok()?;
            (str_at(&copy, "/status/phase") == "Succeeded").then_some(copy)
        }
    })
    .await;
    assert_eq!(str_at(&copy, "/status/reason"), "Copied", "{copy:#}");
    assert_eq!(
        str_at(&copy, "/status/message"),
        format!(
            "The operator is running in {} but is managing this namespace",
            env.ns()
        ),
        "{copy:#}"
    );
    assert_eq!(
        str_at(&copy, "/metadata/labels/olm.copiedFrom"),
        env.ns(),
        "{copy:#}"
    );
    assert_eq!(
        str_at(&copy, "/metadata/annotations/olm.operatorGroup"),
        "og",
        "{copy:#}"
    );
    assert_eq!(
        str_at(&copy, "/metadata/annotations/olm.operatorNamespace"),
        env.ns(),
        "{copy:#}"
    );
    assert!(
        copy.pointer("/metadata/annotations/olm.targetNamespaces")
            .is_none(),
        "{copy:#}"
    );
    assert!(copy.pointer("/metadata/finalizers").is_none(), "{copy:#}");
    // The copy is not installed there: no Deployment of the operator in the target namespace.
    let deployments: Api<Deployment> = other.api();
    let list = deployments
        .list(&ListParams::default())
        .await
        .expect("listing Deployments");
    assert!(list.items.is_empty(), "{:?}", list.items);

    // The namespace leaves the group: its copy goes.
    env.dynamic::<OperatorGroup>()
        .patch(
            "og",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"targetNamespaces": [env.ns()]}})),
        )
        .await
        .expect("narrowing the OperatorGroup");
    let what = format!("the copy of {name} in {} to be deleted", other.name());
    wait_for(&what, WAIT, || {
        let copies = copies.clone();
        let name = name.clone();
        async move { matches!(copies.get_opt(&name).await, Ok(None)).then_some(()) }
    })
    .await;
    env.wait_csv_phase(&name, "Succeeded").await;
}

/// The OLMConfig `cluster` (issue 15): the controller creates it; `disableCopiedCSVs: true`
/// keeps an AllNamespaces operator's CSV from being copied, records the `DisabledCopiedCSVs`
/// Warning on it (once: a restarted controller does not repeat it) and reports
/// `CopiedCSVsDisabled`; turning it off again copies the CSV into
/// the other namespaces, deletes the Warning and reports `CopiedCSVsEnabled`. A
/// `packageServerSyncInterval` is reported as ignored. The object's spec is restored at the end.
#[tokio::test]
async fn olm_config_disables_and_reenables_copied_csvs_of_all_namespaces_operators() {
    let Some(mut env) = env("e2e-olmcfg").await else {
        return;
    };
    let other = env.cluster.namespace("e2e-olmcfg-other").await;
    let configs: Api<DynamicObject> = Api::all_with(
        env.client(),
        &ApiResource::erase::<olm_rs::api::v1::OLMConfig>(&()),
    );
    let config = wait_for("the OLMConfig cluster to be created", WAIT, || {
        let configs = configs.clone();
        async move { configs.get_opt("cluster").await.ok().flatten() }
    })
    .await;
    let saved_features = serde_json::to_value(&config)
        .ok()
        .and_then(|c| c.pointer("/spec/features").cloned())
        .unwrap_or(Value::Null);
    let set_features = |features: Value| {
        let configs = configs.clone();
        async move {
            configs
                .patch(
                    "cluster",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"features": features}})),
                )
                .await
                .expect("patching OLMConfig cluster");
        }
    };
    let wait_condition = |reason: &'static str, status: &'static str| {
        let configs = configs.clone();
        async move {
            wait_for(
                &format!("OLMConfig DisabledCopiedCSVs {status}/{reason}"),
                WAIT,
                || {
                    let configs = configs.clone();
                    async move {
                        let c = serde_json::to_value(configs.get_opt("cluster").await.ok()??).ok()?;
                        let conds = c.pointer("/status/conditions")?.as_array()?.clone();
                        conds.into_iter().find(|x| {
                            x["type"] == "DisabledCopiedCSVs"
                                && x["reason"] == reason
                                && x["status"] == status
                        })
                    }
                },
            )
            .await
        }
    };
    set_features(json!({"disableCopiedCSVs": true, "packageServerSyncInterval": "1h30m"})).await;

    env.apply_catalog(
        "e2e-catalog",
        &package_catalog("gadget", &[("stable", &[b("1.0.0")])]),
    )
    .await;
    env.catalog_source("e2e", "e2e-catalog").await;
    env.operator_group("og", None).await;
    env.wait_catalog_ready("e2e").await;
    env.subscription("gadget", "gadget-operator", "e2e", json!({}))
        .await;
    let name = csv_name("gadget", "1.0.0");
    let csv = env.wait_csv_phase(&name, "Succeeded").await;
    let uid = str_at(&csv, "/metadata/uid").to_owned();

    // Disabled: no copy, the Warning on the CSV, and the condition True.
    let events: Api<Event> = env.ns.api();
    let selector = format!("involvedObject.uid={uid},reason=DisabledCopiedCSVs");
    let warning = wait_for("the DisabledCopiedCSVs Warning", WAIT, || {
        let (events, selector) = (events.clone(), selector.clone());
        async move {
            events
                .list(&ListParams::default().fields(&selector))
                .await
                .ok()?
                .items
                .into_iter()
                .next()
        }
    })
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert_eq!(
        warning.message.as_deref(),
        Some(format!("CSV copying disabled for {}/{name}", env.ns()).as_str())
    );
    let disabled = wait_condition("CopiedCSVsDisabled", "True").await;
    assert_eq!(
        disabled["message"],
        "Copied CSVs are disabled and no unexpected copied CSVs were found for operators installed in AllNamespace mode"
    );
    let copies: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        other.name(),
        &ApiResource::erase::<ClusterServiceVersion>(&()),
    );
    assert!(
        matches!(copies.get_opt(&name).await, Ok(None)),
        "no copy while disabled"
    );
    let c =
        serde_json::to_value(configs.get_opt("cluster").await.expect("get").expect("exists")).expect("json");
    let ignored = c
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|x| x["type"] == "PackageServerSyncIntervalIgnored")
                .cloned()
        })
        .unwrap_or_else(|| panic!("no PackageServerSyncIntervalIgnored condition: {c:#}"));
    assert!(
        str_at(&ignored, "/message").contains("packageServerSyncInterval (1h30m)"),
        "{ignored:#}"
    );

    // A restarted controller does not give the Warning a second time (upstream counts the
    // Events first): once ready and a few seconds on, still one Event, counted once.
    async fn restart_and_list(
        controller: &mut Controller,
        events: &Api<Event>,
        selector: &str,
    ) -> Vec<Event> {
        controller.restart();
        wait_for("/readyz after the restart", WAIT, || async {
            controller
                .get("/readyz", Duration::from_secs(2))
                .starts_with("HTTP/1.1 200")
                .then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        events
            .list(&ListParams::default().fields(selector))
            .await
            .expect("list the Warnings")
            .items
    }
    let after_restart = restart_and_list(&mut env.controller, &events, &selector).await;
    assert_eq!(after_restart.len(), 1, "{after_restart:#?}");
    assert_eq!(after_restart[0].count, Some(1), "{after_restart:#?}");
    // Two of them (as two racing processes could leave): replaced by one, as upstream does.
    let mut twin = after_restart[0].clone();
    twin.metadata = kube::api::ObjectMeta {
        name: Some(format!("{}.twin", twin.metadata.name.clone().unwrap_or_default())),
        namespace: twin.metadata.namespace.clone(),
        ..Default::default()
    };
    events
        .create(&kube::api::PostParams::default(), &twin)
        .await
        .expect("a second Warning");
    let after_twin = restart_and_list(&mut env.controller, &events, &selector).await;
    assert_eq!(after_twin.len(), 1, "{after_twin:#?}");
    assert_ne!(after_twin[0].metadata.name, twin.metadata.name, "{after_twin:#?}");

    // Enabled again: the copy appears, the Warning goes, the condition says so.
    set_features(json!({"disableCopiedCSVs": false, "packageServerSyncInterval": null})).await;
    wait_for(&format!("a copy of {name} in {}", other.name()), WAIT, || {
        let (copies, name) = (copies.clone(), name.clone());
        async move { copies.get_opt(&name).await.ok().flatten() }
    })
    .await;
    wait_for("the DisabledCopiedCSVs Warning to be deleted", WAIT, || {
        let (events, selector) = (events.clone(), selector.clone());
        async move {
            let list = events.list(&ListParams::default().fields(&selector)).await.ok()?;
            list.items.is_empty().then_some(())
        }
    })
    .await;
    wait_condition("CopiedCSVsEnabled", "False").await;

    // Clean up while the controller runs: the CSV goes, and with it every copy (its finalizer).
    env.dynamic::<Subscription>()
        .delete("gadget", &DeleteParams::default())
        .await
        .expect("deleting the Subscription");
    env.dynamic::<ClusterServiceVersion>()
        .delete(&name, &DeleteParams::default())
        .await
        .expect("deleting the CSV");
    wait_for(
        &format!("the copy of {name} in {} to be deleted", other.name()),
        WAIT,
        || {
            let (copies, name) = (copies.clone(), name.clone());
            async move { matches!(copies.get_opt(&name).await, Ok(None)).then_some(()) }
        },
    )
    .await;
    // Leave the cluster's OLMConfig as it was.
    set_features(json!({"disableCopiedCSVs": null, "packageServerSyncInterval": null})).await;
    if !saved_features.is_null() {
        set_features(saved_features).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Upstream fidelity (issue 15 item 4): the seed flow, compared object by object with what
// upstream OLM v0 created for it (`tests/fixtures/olmv0-objects/olmv0/`, see `tests/it/fidelity`).

const SUCCEEDED_KINDS: &[(&str, &str, &str)] = &[
    ("operators.coreos.com", "v1alpha1", "Subscription"),
    ("operators.coreos.com", "v1alpha1", "InstallPlan"),
    ("operators.coreos.com", "v1alpha1", "ClusterServiceVersion"),
];
const RESOURCE_KINDS: &[(&str, &str, &str)] = &[
    ("operators.coreos.com", "v1", "OperatorGroup"),
    ("apps", "v1", "Deployment"),
    ("", "v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
];

/// The seed flow's start in the test namespace: the built-in catalog as `olm-rs-catalog`, the
/// OwnNamespace group `redis-og` and the Subscription `redis-operator` (channel `stable`).
async fn seed(env: &Env, approval: &str, starting_csv: Option<&str>) {
    env.create::<CatalogSource>(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "olm-rs-catalog", "namespace": env.ns()},
        "spec": {"sourceType": "builtin", "displayName": "olm-rs catalog", "publisher": "olm-rs"},
    }))
    .await;
    env.create::<OperatorGroup>(json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "redis-og", "namespace": env.ns()},
        "spec": {"targetNamespaces": [env.ns()]},
    }))
    .await;
    env.wait_catalog_ready("olm-rs-catalog").await;
    let mut spec = json!({
        "name": "redis-operator", "channel": "stable", "installPlanApproval": approval,
        "source": "olm-rs-catalog", "sourceNamespace": env.ns(),
    });
    if let Some(csv) = starting_csv {
        spec["startingCSV"] = json!(csv);
    }
    env.create::<Subscription>(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "redis-operator", "namespace": env.ns()},
        "spec": spec,
    }))
    .await;
}

/// The objects of `kinds` in the test namespace, with their kind and apiVersion.
async fn snapshot(env: &Env, kinds: &[(&str, &str, &str)]) -> Vec<Value> {
    let mut out = Vec::new();
    for (group, version, kind) in kinds {
        let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
        let (ar, _) = kube::discovery::pinned_kind(&env.client(), &gvk)
            .await
            .unwrap_or_else(|e| panic!("discovering {kind}: {e}"));
        let api: Api<DynamicObject> = Api::namespaced_with(env.client(), env.ns(), &ar);
        for item in api.list(&ListParams::default()).await.expect("listing").items {
            let mut value = serde_json::to_value(item).expect("json");
            value["apiVersion"] = json!(ar.api_version);
            value["kind"] = json!(ar.kind);
            out.push(value);
        }
    }
    out
}

/// The OperatorGroup's aggregated ClusterRoles (`olm.og.redis-og.*`), once all three exist
/// and the cluster's aggregation controller has filled in their rules.
async fn group_cluster_roles(env: &Env) -> Vec<Value> {
    let api: Api<ClusterRole> = Api::all(env.client());
    let lp = ListParams::default().labels(&format!(
        "olm.owner=redis-og,olm.owner.kind=OperatorGroup,olm.owner.namespace={}",
        env.ns()
    ));
    let roles = wait_for(
        "the group's three aggregated ClusterRoles with rules",
        WAIT,
        || {
            let (api, lp) = (api.clone(), lp.clone());
            async move {
                let roles = api.list(&lp).await.ok()?.items;
                (roles.len() == 3
                    && roles
                        .iter()
                        .all(|r| r.rules.as_ref().is_some_and(|x| !x.is_empty())))
                .then_some(roles)
            }
        },
    )
    .await;
    roles
        .into_iter()
        .map(|r| {
            let mut v = serde_json::to_value(r).expect("json");
            v["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
            v["kind"] = json!("ClusterRole");
            v
        })
        .collect()
}

/// Asserts that `ours` differs from the upstream transcript `file` only as the allow-list
/// explains (printing every difference, explained or not, on failure).
fn assert_like_upstream(env: &Env, seed_namespace: &str, file: &str, ours: &[Value]) {
    let renames = crate::fidelity::Renames {
        namespaces: vec![(env.ns().to_owned(), seed_namespace.to_owned())],
        catalog_namespace: Some(env.ns().to_owned()),
    };
    let expected = crate::fidelity::upstream(file);
    let csvs = {
        let mut all = crate::fidelity::csv_names(ours);
        all.extend(crate::fidelity::csv_names(&expected));
        all.sort_by_key(|n| std::cmp::Reverse(n.len()));
        all.dedup();
        all
    };
    let ours: Vec<Value> = ours
        .iter()
        .map(|o| crate::fidelity::normalise(o, &renames, &csvs))
        .collect();
    let diffs = crate::fidelity::compare(&expected, &ours);
    let left = crate::fidelity::unexplained(&diffs, crate::fidelity::ALLOWED, file);
    assert!(
        left.is_empty(),
        "{file}: {} difference(s) from upstream OLM v0 that the allow-list does not explain:\n{}\n(all differences:\n{})",
        left.len(),
        left.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
        diffs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Seed flow, Manual: the plan waiting for approval, then the installed operator.
#[tokio::test]
async fn the_seed_flow_creates_the_objects_upstream_olm_creates_manual() {
    let Some(env) = env("fid-manual").await else {
        return;
    };
    seed(&env, "Manual", None).await;
    let csv = "redis-operator.v1.0.0";
    let plan = env.install_plan_for("redis-operator", csv).await;
    env.wait_obj::<InstallPlan, _>("RequiresApproval", &plan, |p| {
        (str_at(p, "/status/phase") == "RequiresApproval").then_some(())
    })
    .await;
    let objects = snapshot(&env, SUCCEEDED_KINDS).await;
    assert_like_upstream(&env, "seed-manual", "01-manual-requires-approval.yaml", &objects);
    env.approve(&plan);
    env.wait_csv_phase(csv, "Succeeded").await;
    let objects = snapshot(&env, SUCCEEDED_KINDS).await;
    assert_like_upstream(&env, "seed-manual", "02-manual-succeeded.yaml", &objects);
    let objects = snapshot(&env, RESOURCE_KINDS).await;
    assert_like_upstream(&env, "seed-manual", "02-manual-resources.yaml", &objects);
    assert_like_upstream(
        &env,
        "seed-manual",
        "02-manual-cluster-rbac.yaml",
        &group_cluster_roles(&env).await,
    );
}

/// Seed flow, Automatic.
#[tokio::test]
async fn the_seed_flow_creates_the_objects_upstream_olm_creates_automatic() {
    let Some(env) = env("fid-auto").await else { return };
    seed(&env, "Automatic", None).await;
    env.wait_csv_phase("redis-operator.v1.0.0", "Succeeded").await;
    let objects = snapshot(&env, SUCCEEDED_KINDS).await;
    assert_like_upstream(&env, "seed-auto", "03-auto-succeeded.yaml", &objects);
    let objects = snapshot(&env, RESOURCE_KINDS).await;
    assert_like_upstream(&env, "seed-auto", "03-auto-resources.yaml", &objects);
    assert_like_upstream(
        &env,
        "seed-auto",
        "03-auto-cluster-rbac.yaml",
        &group_cluster_roles(&env).await,
    );
}

/// Seed flow, a Manual upgrade 0.2.1 → 1.0.0.
#[tokio::test]
async fn the_seed_flow_creates_the_objects_upstream_olm_creates_upgrade() {
    let Some(env) = env("fid-upgrade").await else {
        return;
    };
    seed(&env, "Manual", Some("redis-operator.v0.2.1")).await;
    let first = env
        .install_plan_for("redis-operator", "redis-operator.v0.2.1")
        .await;
    env.approve(&first);
    env.wait_csv_phase("redis-operator.v0.2.1", "Succeeded").await;
    let second = env
        .install_plan_for("redis-operator", "redis-operator.v1.0.0")
        .await;
    env.approve(&second);
    env.wait_csv_phase("redis-operator.v1.0.0", "Succeeded").await;
    env.wait_csv_gone("redis-operator.v0.2.1").await;
    let objects = snapshot(&env, SUCCEEDED_KINDS).await;
    assert_like_upstream(&env, "seed-upgrade", "05-upgrade-done.yaml", &objects);
    let objects = snapshot(&env, RESOURCE_KINDS).await;
    assert_like_upstream(&env, "seed-upgrade", "05-upgrade-resources.yaml", &objects);
    assert_like_upstream(
        &env,
        "seed-upgrade",
        "05-upgrade-cluster-rbac.yaml",
        &group_cluster_roles(&env).await,
    );
}

// ---------------------------------------------------------------------------------------------
// Installs that heal (issue 27): what an install owns, deleted by hand, is put back.

/// How long after its deletion an object of the install must be back, with its CSV
/// `Succeeded` again (the issue's bound).
const HEAL_WITHIN: Duration = Duration::from_secs(30);

impl Env {
    /// The name of the one object of kind `K` labelled as owned by `csv` (in this namespace,
    /// or cluster-wide when `namespaced` is false).
    async fn owned_by_csv<K: kube::Resource<DynamicType = ()>>(&self, csv: &str, namespaced: bool) -> String {
        let resource = ApiResource::erase::<K>(&());
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(self.client(), self.ns(), &resource)
        } else {
            Api::all_with(self.client(), &resource)
        };
        let selector = format!(
            "olm.owner={csv},olm.owner.namespace={},olm.owner.kind=ClusterServiceVersion",
            self.ns()
        );
        let items = api
            .list(&ListParams::default().labels(&selector))
            .await
            .expect("listing the install's objects")
            .items;
        assert_eq!(items.len(), 1, "one {} of {csv}: {items:?}", K::kind(&()));
        items[0].name_any()
    }

    async fn uid_of<K: kube::Resource<DynamicType = ()>>(&self, name: &str) -> Value {
        self.get::<K>(name)
            .await
            .and_then(|o| o.pointer("/metadata/uid").cloned())
            .unwrap_or_default()
    }

    /// [`crate::support::e2e::delete_and_wait_healed`] for this test's CSV, bounded by [`HEAL_WITHIN`].
    async fn heals<K: kube::Resource<DynamicType = ()>>(&self, csv: &str, name: &str, namespaced: bool) {
        let took = crate::support::e2e::delete_and_wait_healed::<K>(
            self.client(),
            namespaced.then_some(self.ns()),
            name,
            self.ns(),
            csv,
            HEAL_WITHIN,
        )
        .await;
        eprintln!("{} {name} healed in {took:?}", K::kind(&()));
    }
}

#[tokio::test]
async fn each_deleted_component_of_an_installed_operator_is_back_within_30_seconds() {
    let Some(env) = env("e2e-heal").await else {
        return;
    };
    let csv = env.install_widget().await;
    let deployment = env.wait_deployment_available("widget-operator").await;
    let generation = deployment.metadata.generation;

    // The ServiceAccount and RBAC of the install: each deleted, each back (the requirement
    // way, as upstream: Failed/Pending RequirementsNotMet, then installed again), and the
    // Deployment, which did not change, is not rolled.
    env.heals::<ServiceAccount>(&csv, "widget-operator", true).await;
    let role = env.owned_by_csv::<Role>(&csv, true).await;
    env.heals::<Role>(&csv, &role, true).await;
    let binding = env.owned_by_csv::<RoleBinding>(&csv, true).await;
    env.heals::<RoleBinding>(&csv, &binding, true).await;
    let cluster_role = env.owned_by_csv::<ClusterRole>(&csv, false).await;
    env.heals::<ClusterRole>(&csv, &cluster_role, false).await;
    let cluster_binding = env.owned_by_csv::<ClusterRoleBinding>(&csv, false).await;
    env.heals::<ClusterRoleBinding>(&csv, &cluster_binding, false)
        .await;
    // The user roles (aggregated to admin/edit/view): the OperatorGroup's own, and the per-API
    // roles of the widget API; their OperatorGroup puts them back.
    let crs: Api<ClusterRole> = Api::all(env.client());
    let by_group = ListParams::default().labels(&format!(
        "olm.owner=og,olm.owner.kind=OperatorGroup,olm.owner.namespace={}",
        env.ns()
    ));
    let group_role = crs.list(&by_group).await.expect("group roles").items[0].name_any();
    for name in [group_role.as_str(), "widgets.e2e.olm-rs.io-v1-admin"] {
        let what = format!("ClusterRole {name}");
        let old = wait_for(&what, WAIT, || {
            let crs = crs.clone();
            async move { crs.get_opt(name).await.ok().flatten() }
        })
        .await;
        crs.delete(name, &DeleteParams::default())
            .await
            .expect("deleting a user role");
        let started = std::time::Instant::now();
        wait_for(&format!("{what} back"), HEAL_WITHIN, || {
            let (crs, uid) = (crs.clone(), old.metadata.uid.clone());
            async move {
                crs.get_opt(name)
                    .await
                    .ok()
                    .flatten()
                    .filter(|r| r.metadata.uid != uid)
            }
        })
        .await;
        eprintln!("{what} healed in {:?}", started.elapsed());
    }
    let now: Api<Deployment> = env.ns.api();
    let now = now.get("widget-operator").await.expect("the Deployment");
    assert_eq!(
        now.metadata.uid, deployment.metadata.uid,
        "the Deployment was not replaced"
    );
    assert_eq!(
        now.metadata.generation, generation,
        "the Deployment was not rolled"
    );

    // The Deployment: Failed ComponentUnhealthy, Pending NeedsReinstall, installed again;
    // the ServiceAccount and RBAC stay as they are (upstream's e2e checks their uids).
    let kept = (
        env.uid_of::<ServiceAccount>("widget-operator").await,
        env.uid_of::<Role>(&role).await,
        env.uid_of::<RoleBinding>(&binding).await,
    );
    env.heals::<Deployment>(&csv, "widget-operator", true).await;
    let reasons: Vec<String> = env
        .events_for("ClusterServiceVersion", &csv)
        .await
        .into_iter()
        .map(|(reason, _)| reason)
        .collect();
    for reason in [
        "ComponentUnhealthy",
        "NeedsReinstall",
        "ComponentMissing",
        "RequirementsNotMet",
    ] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "no {reason} Event: {reasons:?}"
        );
    }
    assert_eq!(
        (
            env.uid_of::<ServiceAccount>("widget-operator").await,
            env.uid_of::<Role>(&role).await,
            env.uid_of::<RoleBinding>(&binding).await,
        ),
        kept
    );
    env.wait_deployment_available("widget-operator").await;

    // Scaled to 0 by hand: upstream compares the spec-hash label, not the live spec, and a
    // Deployment of 0 replicas is Available, so it leaves it; so does olm-rs.
    env.cluster.kubectl_ok([
        "scale",
        "deployment",
        "widget-operator",
        "-n",
        env.ns(),
        "--replicas=0",
    ]);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let d = env
        .get::<Deployment>("widget-operator")
        .await
        .expect("the Deployment");
    assert_eq!(d.pointer("/spec/replicas"), Some(&json!(0)), "left scaled down");
    let c = env.get::<ClusterServiceVersion>(&csv).await.expect("the CSV");
    assert_eq!(c.pointer("/status/phase"), Some(&json!("Succeeded")), "{c:#}");
}

/// Upstream's `catalog_e2e_test.go` "operator workload continues running after catalog source
/// is deleted": the catalog goes, the Subscription's config changes, and the Deployment deleted
/// by hand is re-created (new uid, ready replicas, the config's variable) while the
/// ServiceAccount, Role and RoleBinding keep their uids.
#[tokio::test]
async fn the_operator_workload_is_recreated_after_its_catalog_is_deleted_like_upstreams_e2e() {
    let Some(env) = env("e2e-heal-catalog").await else {
        return;
    };
    let csv = env.install_widget().await;
    let first = env.wait_deployment_available("widget-operator").await;
    let role = env.owned_by_csv::<Role>(&csv, true).await;
    let binding = env.owned_by_csv::<RoleBinding>(&csv, true).await;
    let kept = (
        env.uid_of::<ServiceAccount>("widget-operator").await,
        env.uid_of::<Role>(&role).await,
        env.uid_of::<RoleBinding>(&binding).await,
    );

    env.dynamic::<CatalogSource>()
        .delete("e2e", &DeleteParams::default())
        .await
        .expect("deleting the CatalogSource");
    // Upstream checks `Consistently` that the catalog's loss changes nothing installed.
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let c = env.get::<ClusterServiceVersion>(&csv).await.expect("the CSV");
        assert_eq!(c.pointer("/status/phase"), Some(&json!("Succeeded")), "{c:#}");
        let d = env
            .get::<Deployment>("widget-operator")
            .await
            .expect("the Deployment");
        assert_eq!(
            d.pointer("/metadata/uid").and_then(Value::as_str),
            first.metadata.uid.as_deref(),
            "the Deployment is not re-created"
        );
    }
    let subs = env.dynamic::<Subscription>();
    subs.patch(
        "widget",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"config": {"env": [{"name": "TEST_ENV_VAR", "value": "test-value"}]}}}),
        ),
    )
    .await
    .expect("patching spec.config");
    let has_var = |t: &Value| {
        t.pointer("/spec/containers/0/env")
            .and_then(Value::as_array)
            .is_some_and(|env| {
                env.iter()
                    .any(|e| e["name"] == "TEST_ENV_VAR" && e["value"] == "test-value")
            })
    };
    wait_pod_template(&env, "widget-operator", "the config's variable", has_var).await;

    // Deleted right away (the CSV may still be rolling the config out, as in upstream's e2e).
    env.dynamic::<Deployment>()
        .delete("widget-operator", &DeleteParams::default())
        .await
        .expect("deleting the Deployment");
    let api: Api<Deployment> = env.ns.api();
    let what = format!("Deployment {}/widget-operator re-created and ready", env.ns());
    let recreated = wait_for(&what, WAIT, || {
        let (api, old) = (api.clone(), first.metadata.uid.clone());
        async move {
            let d = api.get_opt("widget-operator").await.ok().flatten()?;
            let status = d.status.as_ref()?;
            let want = d.spec.replicas?;
            (d.metadata.uid != old
                && want > 0
                && status.available_replicas == Some(want)
                && status.ready_replicas == Some(want)
                && status.updated_replicas == Some(want))
            .then_some(d)
        }
    })
    .await;
    let template = serde_json::to_value(&recreated.spec.template).unwrap_or_default();
    assert!(has_var(&template), "{template:#}");
    env.wait_csv_phase(&csv, "Succeeded").await;
    assert_eq!(
        (
            env.uid_of::<ServiceAccount>("widget-operator").await,
            env.uid_of::<Role>(&role).await,
            env.uid_of::<RoleBinding>(&binding).await,
        ),
        kept,
        "the ServiceAccount, Role and RoleBinding were not re-created"
    );
    let sub = env.get::<Subscription>("widget").await.expect("the Subscription");
    assert_eq!(sub.pointer("/status/installedCSV"), Some(&json!(csv)));
}

/// The RBAC an install makes in the OperatorGroup's other target namespaces (upstream
/// `ensureTenantRBAC`, ensured on every sync): deleted there, it is back within 30 s, and the
/// CSV stays `Succeeded`.
#[tokio::test]
async fn the_rbac_of_a_target_namespace_is_back_within_30_seconds() {
    let Some(env) = env("e2e-heal-target").await else {
        return;
    };
    let target = env.cluster.namespace("e2e-heal-tenant").await;
    let csv = csv_name("widget", "1.0.0");
    env.subscribe_multi_namespace_widget(target.name()).await;
    let selector = format!(
        "olm.owner={csv},olm.owner.namespace={},olm.owner.kind=ClusterServiceVersion",
        env.ns()
    );
    let roles: Api<Role> = target.api();
    let bindings: Api<RoleBinding> = target.api();
    let listed = |what: &'static str| {
        let (roles, bindings, selector) = (roles.clone(), bindings.clone(), selector.clone());
        async move {
            let lp = ListParams::default().labels(&selector);
            let items: Vec<(String, Option<String>)> = if what == "Role" {
                roles
                    .list(&lp)
                    .await
                    .ok()?
                    .items
                    .iter()
                    .map(|r| (r.name_any(), r.metadata.uid.clone()))
                    .collect()
            } else {
                bindings
                    .list(&lp)
                    .await
                    .ok()?
                    .items
                    .iter()
                    .map(|r| (r.name_any(), r.metadata.uid.clone()))
                    .collect()
            };
            items.into_iter().next()
        }
    };
    for what in ["Role", "RoleBinding"] {
        let (name, uid) = wait_for(&format!("the {what} in {}", target.name()), WAIT, || listed(what)).await;
        let started = std::time::Instant::now();
        match what {
            "Role" => drop(
                roles
                    .delete(&name, &DeleteParams::default())
                    .await
                    .expect("deleting"),
            ),
            _ => drop(
                bindings
                    .delete(&name, &DeleteParams::default())
                    .await
                    .expect("deleting"),
            ),
        }
        let back = wait_for(&format!("the {what} {name} back"), HEAL_WITHIN, || {
            let (listed, uid, name) = (&listed, uid.clone(), name.clone());
            async move { listed(what).await.filter(|(n, u)| *n == name && *u != uid) }
        })
        .await;
        eprintln!(
            "{what} {}/{} healed in {:?}",
            target.name(),
            back.0,
            started.elapsed()
        );
        let c = env.get::<ClusterServiceVersion>(&csv).await.expect("the CSV");
        assert_eq!(c.pointer("/status/phase"), Some(&json!("Succeeded")), "{c:#}");
    }
    wait_for(
        "an Event naming what was put back",
        Duration::from_secs(10),
        || {
            let (env, csv, ns) = (&env, &csv, target.name());
            async move {
                env.events_for("ClusterServiceVersion", csv)
                    .await
                    .into_iter()
                    .any(|(reason, message)| reason == "ComponentMissing" && message.contains(ns))
                    .then_some(())
            }
        },
    )
    .await;
}

/// A Role of the install whose rules are edited by hand is put back (`ComponentChanged`);
/// a label another field manager adds to it is theirs and stays.
#[tokio::test]
async fn a_role_changed_by_hand_is_put_back_and_what_others_add_is_left_alone() {
    let Some(env) = env("e2e-heal-changed").await else {
        return;
    };
    let csv = env.install_widget().await;
    let role = env.owned_by_csv::<Role>(&csv, true).await;
    let roles: Api<Role> = env.ns.api();
    let rules = roles.get(&role).await.expect("the Role").rules;

    // Someone else's label: not ours to compare, so no write and no Event.
    roles
        .patch(
            &role,
            &PatchParams::apply("someone-else"),
            &Patch::Apply(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": role, "labels": {"team": "platform"}}
            })),
        )
        .await
        .expect("labelling the Role");
    let labelled = roles.get(&role).await.expect("the Role");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let later = roles.get(&role).await.expect("the Role");
    assert_eq!(
        later.metadata.resource_version,
        labelled.metadata.resource_version
    );
    assert_eq!(later.labels().get("team").map(String::as_str), Some("platform"));

    // Its rules narrowed by hand: put back within 30 s, named by a ComponentChanged Event.
    roles
        .patch(
            &role,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
            ),
        )
        .await
        .expect("editing the Role's rules");
    let started = std::time::Instant::now();
    wait_for("the Role's rules back", HEAL_WITHIN, || {
        let (roles, role, rules) = (roles.clone(), role.clone(), rules.clone());
        async move { (roles.get(&role).await.ok()?.rules == rules).then_some(()) }
    })
    .await;
    eprintln!("Role {role} rules put back in {:?}", started.elapsed());
    env.wait_csv_phase(&csv, "Succeeded").await;
    wait_for("a ComponentChanged Event", Duration::from_secs(10), || {
        let (env, csv, role) = (&env, &csv, &role);
        async move {
            env.events_for("ClusterServiceVersion", csv)
                .await
                .into_iter()
                .any(|(reason, message)| reason == "ComponentChanged" && message.contains(role.as_str()))
                .then_some(())
        }
    })
    .await;
    let after = roles.get(&role).await.expect("the Role");
    assert_eq!(
        after.labels().get("team").map(String::as_str),
        Some("platform"),
        "their label stays"
    );
}

// ---------------------------------------------------------------------------------------------
// CatalogSource status as upstream's e2e suite waits on it (issue 21: ConfigMap updates,
// registryService, legacy ConfigMap catalogs with several documents of one CRD).

/// The CatalogSource's `status` once `check` accepts it.
async fn wait_catalog_status(env: &Env, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    env.wait_obj::<CatalogSource, _>(what, name, |cs| {
        let status = cs.get("status")?;
        check(status).then(|| status.clone())
    })
    .await
}

/// Upstream's `catalogSourceRegistryPodSynced` (test/e2e/util.go), without the pod probe it
/// skips by default: `registryService` set, `READY`, `lastConnect` set.
fn registry_synced(status: &Value) -> bool {
    status.get("registryService").is_some_and(Value::is_object)
        && str_at(status, "/connectionState/lastObservedState") == "READY"
        && !str_at(status, "/connectionState/lastConnect").is_empty()
}

/// `lastConnect` later than `configMapReference.lastUpdateTime` (RFC 3339 to the second, as
/// stored, so comparing the texts compares the times).
fn connected_after_update(status: &Value) -> bool {
    let connect = str_at(status, "/connectionState/lastConnect");
    let updated = str_at(status, "/configMapReference/lastUpdateTime");
    !connect.is_empty() && !updated.is_empty() && connect > updated
}

/// Upstream's `updateInternalCatalog` and "config map update triggers registry pod rollout" /
/// "loading between restarts" waits, on a ConfigMap catalog: after the ConfigMap changes,
/// `configMapReference` names its new resourceVersion with a later `lastUpdateTime`, and
/// `lastConnect` becomes later than that; `registryService` is `{protocol: grpc, createdAt}`;
/// nothing more is written while nothing changes; a restarted controller moves `lastConnect`.
#[tokio::test]
async fn a_config_map_catalog_update_is_observable_as_upstreams_registry_rollout() {
    let Some(mut env) = env("cs-cm-update").await else {
        return;
    };
    env.serve_catalog(&widget_catalog(&[("stable", &[b("1.0.0")])]))
        .await;
    let before = wait_catalog_status(&env, "e2e", "registry synced, connected after the update", |s| {
        registry_synced(s) && connected_after_update(s)
    })
    .await;
    let service = &before["registryService"];
    assert_eq!(service["protocol"], "grpc", "{before:#}");
    let mut keys: Vec<&String> = service
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    keys.sort();
    assert_eq!(keys, ["createdAt", "protocol"], "{before:#}");
    let cms: Api<ConfigMap> = env.ns.api();
    let rv = |cm: ConfigMap| cm.resource_version().unwrap_or_default();
    assert_eq!(
        str_at(&before, "/configMapReference/resourceVersion"),
        rv(cms.get("e2e-catalog").await.expect("the ConfigMap")),
    );

    // Updated at once (within the second the first version may have been recorded in).
    env.apply_catalog(
        "e2e-catalog",
        &widget_catalog(&[("stable", &[b("1.0.0"), b("1.1.0").replaces("1.0.0")])]),
    )
    .await;
    let updated_rv = rv(cms.get("e2e-catalog").await.expect("the ConfigMap"));
    let after = wait_catalog_status(&env, "e2e", "the update recorded and connected after it", |s| {
        str_at(s, "/configMapReference/lastUpdateTime")
            > str_at(&before, "/configMapReference/lastUpdateTime")
            && str_at(s, "/configMapReference/resourceVersion")
                != str_at(&before, "/configMapReference/resourceVersion")
            && connected_after_update(s)
            && registry_synced(s)
    })
    .await;
    assert_eq!(str_at(&after, "/configMapReference/resourceVersion"), updated_rv);
    // The content served was replaced, as upstream's pod is: createdAt renewed.
    assert!(
        str_at(&after, "/registryService/createdAt") > str_at(&before, "/registryService/createdAt"),
        "{before:#}\n{after:#}"
    );
    // The new version is what the catalog serves.
    env.subscription("widget", "widget-operator", "e2e", json!({"channel": "stable"}))
        .await;
    env.wait_at_latest("widget", &csv_name("widget", "1.1.0")).await;

    // Nothing changes: nothing is written.
    let written = env.get::<CatalogSource>("e2e").await.unwrap_or_default();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let still = env.get::<CatalogSource>("e2e").await.unwrap_or_default();
    assert_eq!(
        str_at(&written, "/metadata/resourceVersion"),
        str_at(&still, "/metadata/resourceVersion"),
        "a write that changed nothing:\n{written:#}\n{still:#}"
    );

    // Upstream's "loading between restarts": the restarted controller connects again.
    let connected = env
        .get::<CatalogSource>("e2e")
        .await
        .map(|cs| str_at(&cs, "/status/connectionState/lastConnect").to_owned())
        .unwrap_or_default();
    env.controller.restart();
    wait_catalog_status(&env, "e2e", "lastConnect moved after the restart", |s| {
        str_at(s, "/connectionState/lastConnect") > connected.as_str() && registry_synced(s)
    })
    .await;
}

/// A legacy ConfigMap catalog (`packages`, `clusterServiceVersions`,
/// `customResourceDefinitions`) shipping two documents of one CRD, as upstream's "blocks a CRD
/// upgrade that could cause data loss" spec does: each CSV gets the document defining the version
/// it owns, so the stable CSV installs the old CRD, and moving to the alpha channel (whose CRD
/// drops the stored version) fails the InstallPlan with upstream's data-loss message.
#[tokio::test]
async fn a_legacy_config_map_catalog_gives_each_csv_its_own_document_of_a_shared_crd() {
    let Some(env) = env("cs-legacy-crd").await else {
        return;
    };
    // CRD names are cluster-wide: one of this namespace's own.
    let plural: String = env.ns().chars().filter(char::is_ascii_alphanumeric).collect();
    let group = "legacy.e2e.olm-rs.io";
    let crd_name = format!("{plural}.{group}");
    let kind = format!("L{plural}");
    let crd = |versions: [&str; 2]| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": crd_name},
            "spec": {
                "group": group, "scope": "Namespaced",
                "names": {"plural": plural, "singular": plural, "kind": kind, "listKind": format!("{kind}List")},
                "versions": [
                    {"name": versions[0], "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "description": "my crd schema"}}},
                    {"name": versions[1], "served": true, "storage": false,
                        "schema": {"openAPIV3Schema": {"type": "object", "description": "my crd schema"}}},
                ],
            },
        })
    };
    let template = fixture("gadget/csv.yaml");
    let csv = |name: &str, version: &str, replaces: Option<&str>, crd_version: &str| {
        let mut csv = template.clone();
        csv["metadata"]["name"] = json!(name);
        csv["spec"]["version"] = json!(version);
        if let Some(r) = replaces {
            csv["spec"]["replaces"] = json!(r);
        }
        csv["spec"]["customresourcedefinitions"] = json!({"owned": [{
            "name": crd_name, "version": crd_version, "kind": kind, "displayName": "ins", "description": "ins",
        }]});
        csv
    };
    let stable = "legacy-gadget.v0.1.0";
    let alpha = "legacy-gadget.v0.1.1";
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "legacy-catalog", "namespace": env.ns()},
        "data": {
            "packages": json!([{
                "packageName": "legacy-gadget", "defaultChannel": "stable",
                "channels": [{"name": "stable", "currentCSV": stable}, {"name": "alpha", "currentCSV": alpha}],
            }]).to_string(),
            "clusterServiceVersions": json!([
                csv(stable, "0.1.0", None, "v1alpha2"),
                csv(alpha, "0.1.1", Some(stable), "v1alpha3"),
            ]).to_string(),
            // The old CRD first, as upstream's fixture lists them.
            "customResourceDefinitions": json!([crd(["v1alpha2", "v2alpha1"]), crd(["v1alpha3", "v2alpha2"])]).to_string(),
        },
    });
    let cms: Api<ConfigMap> = env.ns.api();
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(cm).expect("a ConfigMap"),
    )
    .await
    .expect("creating the legacy catalog ConfigMap");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    env.catalog_source("legacy", "legacy-catalog").await;
    env.own_namespace_group().await;
    let status = wait_catalog_status(&env, "legacy", "registry synced", registry_synced).await;
    // Two documents, no version defined twice: nothing to report.
    assert!(status.get("message").is_none(), "{status:#}");

    env.subscription("gadget", "legacy-gadget", "legacy", json!({"channel": "stable"}))
        .await;
    env.wait_csv_phase(stable, "Succeeded").await;
    let installed = crds.get(&crd_name).await.expect("the CRD installed");
    let versions: Vec<&str> = installed.spec.versions.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        versions,
        ["v1alpha2", "v2alpha1"],
        "the stable CSV's own CRD document"
    );

    // The alpha CSV's document drops the stored version v1alpha2: refused as upstream does.
    env.dynamic::<Subscription>()
        .patch(
            "gadget",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"channel": "alpha"}})),
        )
        .await
        .expect("moving the Subscription to alpha");
    let plan = env.install_plan_for("gadget", alpha).await;
    let failed = env
        .wait_obj::<InstallPlan, _>("Failed", &plan, |p| {
            (str_at(p, "/status/phase") == "Failed").then(|| p.clone())
        })
        .await;
    let conditions = failed.pointer("/status/conditions").cloned().unwrap_or_default();
    assert!(conditions.to_string().contains("risk of data loss"), "{failed:#}");
    let kept = crds.get(&crd_name).await.expect("the CRD");
    let versions: Vec<&str> = kept.spec.versions.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(versions, ["v1alpha2", "v2alpha1"], "the CRD was not replaced");
    // The CRD is cluster-wide (one a failed run leaves behind is named after its namespace).
    let _ = crds.delete(&crd_name, &DeleteParams::default()).await;
}

/// A Role in the test namespace granting the ServiceAccount `installer` `rules`, bound to it.
async fn grant_installer(env: &Env, name: &str, rules: Value) {
    env.create::<Role>(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": env.ns()},
        "rules": rules,
    }))
    .await;
    env.create::<RoleBinding>(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": env.ns()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": env.ns()}],
    }))
    .await;
}

/// Waits for the InstallPlan `plan`'s message to contain `text`; returns the plan.
async fn wait_plan_message(env: &Env, plan: &str, text: &str) -> Value {
    env.wait_obj::<InstallPlan, _>(&format!("message with {text:?}"), plan, |p| {
        str_at(p, "/status/message").contains(text).then(|| p.clone())
    })
    .await
}

/// Scoped installs (OperatorGroup `spec.serviceAccountName`): the group references its account
/// once it exists; the plan records it and creates its steps as that account, so a missing
/// permission fails the step naming the verb and resource, RBAC wider than the account holds
/// is refused by the API server, and granting what is missing lets the plan finish.
#[tokio::test]
async fn a_group_service_account_scopes_installs_to_its_permissions() {
    let Some(env) = env("e2e-scoped").await else {
        return;
    };
    let ns = env.ns().to_owned();
    env.apply_catalog("e2e-catalog", &widget_catalog(&[("stable", &[b("1.0.0")])]))
        .await;
    env.catalog_source("e2e", "e2e-catalog").await;
    env.create::<OperatorGroup>(json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "og", "namespace": ns},
        "spec": {"targetNamespaces": [ns], "serviceAccountName": "installer"},
    }))
    .await;
    // The account does not exist yet: upstream's condition, no reference.
    env.wait_obj::<OperatorGroup, _>("ServiceAccountNotFound", "og", |g| {
        let conditions = g.pointer("/status/conditions")?.as_array()?;
        conditions
            .iter()
            .find(|c| c["type"] == "OperatorGroupServiceAccount")
            .filter(|c| c["status"] == "True" && c["reason"] == "ServiceAccountNotFound")
            .filter(|c| c["message"] == "ServiceAccount installer not found")
            .map(|_| ())
    })
    .await;
    env.create::<ServiceAccount>(json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "installer", "namespace": ns},
    }))
    .await;
    let group = env
        .wait_obj::<OperatorGroup, _>("status.serviceAccountRef", "og", |g| {
            (str_at(g, "/status/serviceAccountRef/name") == "installer").then(|| g.clone())
        })
        .await;
    assert_eq!(str_at(&group, "/status/serviceAccountRef/kind"), "ServiceAccount");
    let conditions = group.pointer("/status/conditions").and_then(Value::as_array);
    assert!(
        conditions.is_none_or(|c| c.iter().all(|c| c["type"] != "OperatorGroupServiceAccount")),
        "the condition leaves once the account exists: {group:#}"
    );

    // No permission at all: the CSV step is refused, naming the verb and resource.
    env.wait_catalog_ready("e2e").await;
    env.subscription("widget", "widget-operator", "e2e", json!({}))
        .await;
    let csv = csv_name("widget", "1.0.0");
    let plan = env.install_plan_for("widget", &csv).await;
    let refused = wait_plan_message(
        &env,
        &plan,
        r#"cannot create resource "clusterserviceversions" in API group "operators.coreos.com""#,
    )
    .await;
    let message = str_at(&refused, "/status/message");
    assert!(
        message.contains(&format!("as ServiceAccount {ns}/installer")),
        "{message}"
    );
    assert!(
        message.contains("spec.serviceAccountName"),
        "the fix is named: {message}"
    );
    assert_eq!(
        str_at(&refused, "/status/attenuatedServiceAccountRef/name"),
        "installer"
    );
    assert!(env.get::<ClusterServiceVersion>(&csv).await.is_none());

    // Enough to write the CSV and RBAC, but not the rules the bundle's Role grants: the API
    // server refuses to let the account grant what it does not hold.
    grant_installer(
        &env,
        "installer-base",
        json!([
            {"apiGroups": ["operators.coreos.com"], "resources": ["clusterserviceversions"], "verbs": ["get", "create", "patch", "update"]},
            {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get", "create", "patch"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["get", "create", "patch"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "create", "patch", "update"]},
        ]),
    )
    .await;
    wait_plan_message(
        &env,
        &plan,
        "attempting to grant RBAC permissions not currently held",
    )
    .await;
    let roles: Api<Role> = Api::namespaced(env.client(), &ns);
    let granted = roles.list(&ListParams::default()).await.expect("roles");
    assert!(
        granted.items.iter().all(|r| {
            r.rules
                .iter()
                .flatten()
                .all(|rule| !rule.resources.iter().flatten().any(|x| x == "configmaps"))
        }),
        "no Role granting configmaps was created for an account without them"
    );

    // What the bundle grants, in the namespace and cluster-wide: the plan finishes.
    let cluster_name = format!("{ns}-installer");
    let cluster_roles: Api<ClusterRole> = Api::all(env.client());
    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(env.client());
    let cluster_role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": cluster_name},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles", "clusterrolebindings"], "verbs": ["get", "create", "patch"]},
        ],
    }))
    .expect("a ClusterRole");
    let cluster_binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": cluster_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_name},
        "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": ns}],
    }))
    .expect("a ClusterRoleBinding");
    cluster_roles
        .create(&PostParams::default(), &cluster_role)
        .await
        .expect("creating the ClusterRole");
    cluster_bindings
        .create(&PostParams::default(), &cluster_binding)
        .await
        .expect("creating the ClusterRoleBinding");
    grant_installer(
        &env,
        "installer-operator",
        json!([
            {"apiGroups": [""], "resources": ["configmaps", "events"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            {"apiGroups": ["e2e.olm-rs.io"], "resources": ["widgets", "widgets/status"], "verbs": ["*"]},
        ]),
    )
    .await;
    let done = env
        .wait_obj::<InstallPlan, _>("phase Complete", &plan, |p| {
            (str_at(p, "/status/phase") == "Complete").then(|| p.clone())
        })
        .await;
    assert!(
        done.pointer("/status/plan")
            .and_then(Value::as_array)
            .is_some_and(|steps| steps
                .iter()
                .all(|s| s["status"] == "Created" || s["status"] == "Present")),
        "{done:#}"
    );
    env.wait_csv_phase(&csv, "Succeeded").await;
    for name in [&cluster_name] {
        let _ = cluster_bindings.delete(name, &DeleteParams::default()).await;
        let _ = cluster_roles.delete(name, &DeleteParams::default()).await;
    }
}

/// A step the API server answers with a warning (a custom resource of a deprecated version):
/// the plan completes, and an `AppliedWithWarnings` Warning Event on the plan quotes the
/// warning in upstream's words; `installplan_warnings_total` counts it.
#[tokio::test]
async fn a_step_the_api_server_warns_about_raises_an_applied_with_warnings_event() {
    let Some(env) = env("e2e-warned").await else {
        return;
    };
    env.own_namespace_group().await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let name = format!("deprecateds.{}.e2e.olm-rs.io", env.ns());
    let group = format!("{}.e2e.olm-rs.io", env.ns());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"kind": "Deprecated", "listKind": "DeprecatedList", "plural": "deprecateds", "singular": "deprecated"},
            "versions": [{"name": "v1", "served": true, "storage": true, "deprecated": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    }))
    .expect("a CRD");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("creating the deprecated CRD");
    wait_for("the deprecated CRD established", WAIT, || async {
        let crd = crds.get_opt(&name).await.ok().flatten()?;
        crd.status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
            .then_some(())
    })
    .await;
    let cr = json!({"apiVersion": format!("{group}/v1"), "kind": "Deprecated", "metadata": {"name": "foo", "namespace": env.ns()}});
    hand_made_plan(
        &env,
        "warned",
        Duration::ZERO,
        json!({"phase": "Installing", "catalogSources": [], "plan": [hand_step("", "", "v1", "Deprecated", &cr)]}),
    )
    .await;
    env.wait_obj::<InstallPlan, _>("phase Complete", "warned", |p| {
        (str_at(p, "/status/phase") == "Complete").then_some(())
    })
    .await;
    let expected = format!(
        "1 warning(s) generated during operator installation (Deprecated \"foo\"): {group}/v1 Deprecated is deprecated"
    );
    let events: Api<Event> = env.ns.api();
    let event = wait_for("the AppliedWithWarnings Event", WAIT, || async {
        events
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("AppliedWithWarnings"))
    })
    .await;
    let _ = crds.delete(&name, &DeleteParams::default()).await;
    assert_eq!(event.message.as_deref(), Some(expected.as_str()));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.involved_object.kind.as_deref(), Some("InstallPlan"));
    assert_eq!(event.involved_object.name.as_deref(), Some("warned"));
    assert_eq!(
        event.involved_object.field_path.as_deref(),
        Some("status.plan[0]")
    );
    assert!(
        metrics(&env.controller).contains("installplan_warnings_total 1"),
        "the warning is counted"
    );
}

/// A scoped plan that failed for want of a permission runs again once the namespace's RBAC
/// changes (upstream's `triggerInstallPlanRetry`): `Failed` at once (its start time is long
/// past the retry timeout), then `Complete` after a Role grants what was missing.
#[tokio::test]
async fn a_failed_scoped_plan_is_retried_when_the_namespace_rbac_changes() {
    let Some(env) = env("e2e-scoped-retry").await else {
        return;
    };
    let ns = env.ns().to_owned();
    env.create::<ServiceAccount>(json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "installer", "namespace": ns},
    }))
    .await;
    env.own_namespace_group().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": ns}, "data": {"a": "1"}});
    hand_made_plan(
        &env,
        "scoped",
        Duration::ZERO,
        json!({
            "phase": "Installing", "catalogSources": [], "startTime": "1970-01-01T00:00:00Z",
            "attenuatedServiceAccountRef": {"kind": "ServiceAccount", "name": "installer", "namespace": ns},
            "plan": [hand_step("", "", "v1", "ConfigMap", &cm)],
        }),
    )
    .await;
    let failed = env
        .wait_obj::<InstallPlan, _>("phase Failed", "scoped", |p| {
            (str_at(p, "/status/phase") == "Failed").then(|| p.clone())
        })
        .await;
    let message = str_at(&failed, "/status/message");
    assert!(
        message.contains(r#"cannot create resource "configmaps""#),
        "{message}"
    );
    assert!(env.get::<ConfigMap>("settings").await.is_none());
    grant_installer(
        &env,
        "installer-configmaps",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch", "get"]}]),
    )
    .await;
    env.wait_obj::<InstallPlan, _>("phase Complete after the grant", "scoped", |p| {
        (str_at(p, "/status/phase") == "Complete").then_some(())
    })
    .await;
    let created = env.get::<ConfigMap>("settings").await.expect("the ConfigMap");
    assert_eq!(str_at(&created, "/data/a"), "1");
}

// ---------------------------------------------------------------------------------------------
// Many tenants (issue 22): two namespaces installing the same operator at once.

/// The catalog blobs with the CSVs' `MultiNamespace` and `AllNamespaces` install modes supported.
fn with_all_namespaces_capable(blobs: Vec<Value>) -> Vec<Value> {
    edit_csvs(blobs, |csv| {
        if let Some(modes) = csv
            .pointer_mut("/spec/installModes")
            .and_then(Value::as_array_mut)
        {
            for mode in modes
                .iter_mut()
                .filter(|m| m["type"] == "MultiNamespace" || m["type"] == "AllNamespaces")
            {
                mode["supported"] = json!(true);
            }
        }
    })
}

/// What a watch of the two namespaces saw while they installed: the namespaces where a
/// Deployment appeared, and for each CSV object (by uid) whether it was seen as an own CSV, as
/// a copy, or both.
#[derive(Default)]
struct TenantWatch {
    deployments: std::collections::BTreeSet<String>,
    csvs: std::collections::BTreeMap<String, (String, bool, bool)>,
}

/// Watches Deployments and CSVs of every namespace into a [`TenantWatch`] (stopped with the
/// returned handle).
fn watch_tenants(
    client: kube::Client,
) -> (
    std::sync::Arc<std::sync::Mutex<TenantWatch>>,
    tokio::task::JoinHandle<()>,
) {
    use futures::StreamExt as _;
    use kube::runtime::{WatchStreamExt as _, watcher};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(TenantWatch::default()));
    let (s1, s2) = (seen.clone(), seen.clone());
    let deployments = watcher(Api::<Deployment>::all(client.clone()), watcher::Config::default())
        .applied_objects()
        .for_each(move |d| {
            if let Ok(d) = d
                && let Ok(mut seen) = s1.lock()
            {
                seen.deployments.insert(d.namespace().unwrap_or_default());
            }
            async {}
        });
    let csvs = watcher(
        Api::<DynamicObject>::all_with(client, &ApiResource::erase::<ClusterServiceVersion>(&())),
        watcher::Config::default(),
    )
    .applied_objects()
    .for_each(move |c| {
        if let Ok(c) = c
            && let Ok(mut seen) = s2.lock()
        {
            let copy = c.labels().contains_key("olm.copiedFrom");
            let entry = seen.csvs.entry(c.uid().unwrap_or_default()).or_insert((
                c.namespace().unwrap_or_default(),
                false,
                false,
            ));
            if copy {
                entry.2 = true;
            } else {
                entry.1 = true;
            }
        }
        async {}
    });
    let task = tokio::spawn(async move {
        futures::future::join(deployments, csvs).await;
    });
    (seen, task)
}

/// Two namespaces install the same AllNamespaces-capable operator at once, each with a
/// MultiNamespace group targeting both (so each would copy its CSV into the other), the
/// Subscriptions created in the order `first_b`: the first to claim the API wins and keeps its
/// own CSV `Succeeded`; the other is `Failed` `InterOperatorGroupOwnerConflict` with upstream's
/// message and never had a Deployment; no own CSV is ever turned into a copy (nor a copy into an
/// own CSV); and both namespaces are then deleted without help (no finalizer holds them).
async fn two_namespaces_install_one_operator_at_once(first_b: bool) {
    let Some(env) = env("e2e-tenant-a").await else {
        return;
    };
    let other = env.cluster.namespace("e2e-tenant-b").await;
    let (na, nb) = (env.ns().to_owned(), other.name().to_owned());
    let blobs = with_all_namespaces_capable(widget_catalog(&[("stable", &[b("1.0.0")])]));
    let client = env.client();
    for ns in [&na, &nb] {
        let tenant = if *ns == na { &env.ns } else { &other };
        apply_catalog_config_map(tenant, "olm-rs-e2e", "e2e-catalog", &catalog_json(&blobs)).await;
        crate::support::e2e::create::<CatalogSource>(
            client.clone(),
            ns,
            json!({
                "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                "metadata": {"name": "e2e", "namespace": ns},
                "spec": {"sourceType": "configmap", "configMap": "e2e-catalog", "displayName": "e2e"},
            }),
        )
        .await;
        crate::support::e2e::create::<OperatorGroup>(
            client.clone(),
            ns,
            json!({
                "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                "metadata": {"name": "og", "namespace": ns},
                "spec": {"targetNamespaces": [na.clone(), nb.clone()]},
            }),
        )
        .await;
    }
    for ns in [&na, &nb] {
        let what = format!("catalog e2e in {ns} READY");
        wait_for(&what, WAIT, || {
            let client = client.clone();
            async move {
                let cs = crate::support::e2e::get::<CatalogSource>(client, ns, "e2e").await?;
                (cs.pointer("/status/connectionState/lastObservedState") == Some(&json!("READY")))
                    .then_some(())
            }
        })
        .await;
    }
    let (seen, watching) = watch_tenants(client.clone());
    let order = if first_b { [&nb, &na] } else { [&na, &nb] };
    for ns in order {
        crate::support::e2e::create::<Subscription>(
            client.clone(),
            ns,
            json!({
                "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                "metadata": {"name": "widget", "namespace": ns},
                "spec": {"name": "widget-operator", "source": "e2e", "sourceNamespace": ns},
            }),
        )
        .await;
    }

    let name = csv_name("widget", "1.0.0");
    let csv_in = |ns: String| {
        let (client, name) = (client.clone(), name.clone());
        async move { crate::support::e2e::get::<ClusterServiceVersion>(client, &ns, &name).await }
    };
    fn phase_of(c: &Value) -> (&str, &str) {
        (str_at(c, "/status/phase"), str_at(c, "/status/reason"))
    }
    // One winner, one loser.
    let (winner, loser, won, lost) =
        wait_for("one CSV Succeeded and the other one in conflict", WAIT, || {
            let (a, b) = (na.clone(), nb.clone());
            async move {
                let (ca, cb) = (csv_in(a.clone()).await?, csv_in(b.clone()).await?);
                let conflict = ("Failed", "InterOperatorGroupOwnerConflict");
                let (pa, pb) = (phase_of(&ca), phase_of(&cb));
                let a_wins = pa.0 == "Succeeded" && pb == conflict;
                let b_wins = pb.0 == "Succeeded" && pa == conflict;
                if a_wins {
                    Some((a, b, ca, cb))
                } else if b_wins {
                    Some((b, a, cb, ca))
                } else {
                    None
                }
            }
        })
        .await;
    assert_eq!(
        str_at(&lost, "/status/message"),
        "intersecting operatorgroups provide the same apis",
        "{lost:#}"
    );
    // Both CSVs are their namespace's own (never a copy of the other).
    for (ns, csv) in [(&winner, &won), (&loser, &lost)] {
        assert!(
            csv.pointer("/metadata/labels/olm.copiedFrom").is_none(),
            "{csv:#}"
        );
        assert_eq!(
            str_at(csv, "/metadata/annotations/olm.operatorNamespace"),
            *ns,
            "{csv:#}"
        );
    }
    // It stays so for a while: the loser never deploys, the winner keeps its CSV.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (won, lost) = (
        csv_in(winner.clone()).await.expect("the winner's CSV"),
        csv_in(loser.clone()).await.expect("the loser's CSV"),
    );
    assert_eq!(phase_of(&won).0, "Succeeded", "{won:#}");
    assert_eq!(phase_of(&lost).1, "InterOperatorGroupOwnerConflict", "{lost:#}");
    let in_loser: Api<Deployment> = Api::namespaced(client.clone(), &loser);
    let deployments = in_loser
        .list(&ListParams::default())
        .await
        .expect("listing the loser's Deployments");
    assert!(deployments.items.is_empty(), "{:?}", deployments.items);
    {
        let seen = seen.lock().expect("the watch");
        assert!(
            !seen.deployments.contains(&loser),
            "a Deployment appeared in the loser's namespace {loser}: {:?}",
            seen.deployments
        );
        assert!(seen.deployments.contains(&winner), "{:?}", seen.deployments);
        let both: Vec<_> = seen
            .csvs
            .iter()
            .filter(|(_, (ns, own, copy))| (*ns == na || *ns == nb) && *own && *copy)
            .collect();
        assert!(both.is_empty(), "a CSV object was both own and a copy: {both:?}");
    }
    watching.abort();

    // Both namespaces go without help (the controller runs, as it would on a cluster).
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for ns in [&na, &nb] {
        namespaces
            .delete(ns, &DeleteParams::background())
            .await
            .expect("deleting a tenant namespace");
    }
    for ns in [na.clone(), nb.clone()] {
        let what = format!("namespace {ns} to be deleted");
        wait_for(&what, WAIT, || {
            let (namespaces, ns) = (namespaces.clone(), ns.clone());
            async move { matches!(namespaces.get_opt(&ns).await, Ok(None)).then_some(()) }
        })
        .await;
    }
}

#[tokio::test]
async fn two_namespaces_installing_one_operator_at_once_leave_one_own_csv_each_and_one_winner() {
    two_namespaces_install_one_operator_at_once(false).await;
}

#[tokio::test]
async fn two_namespaces_installing_one_operator_at_once_in_the_other_order_do_the_same() {
    two_namespaces_install_one_operator_at_once(true).await;
}

/// A copy never keeps the CSV cleanup finalizer (an older olm-rs left it on own CSVs its copy
/// writer overwrote, and held their namespaces in `Terminating`): a labelled copy whose original
/// does not exist is deleted, finalizer and all, and an unlabelled copy (its status says
/// `Copied`) loses the finalizer; then the namespace is deleted without help.
#[tokio::test]
async fn copies_never_keep_the_cleanup_finalizer_and_an_orphaned_copy_goes() {
    let Some(env) = env("e2e-copy-fin").await else {
        return;
    };
    let finalizer = "operators.coreos.com/csv-cleanup";
    let mut orphan = bare_csv("orphan.v1.0.0", "operators.coreos.com/v1alpha1");
    orphan["metadata"]["labels"] = json!({"olm.copiedFrom": "no-such-namespace"});
    orphan["metadata"]["finalizers"] = json!([finalizer]);
    env.create::<ClusterServiceVersion>(orphan).await;
    let mut copied = bare_csv("copied.v1.0.0", "operators.coreos.com/v1alpha1");
    copied["metadata"]["finalizers"] = json!([finalizer]);
    copied["metadata"]["annotations"] =
        json!({"olm.operatorNamespace": "elsewhere", "olm.operatorGroup": "og"});
    env.create::<ClusterServiceVersion>(copied).await;

    env.wait_csv_gone("orphan.v1.0.0").await;
    env.wait_obj::<ClusterServiceVersion, _>("no cleanup finalizer", "copied.v1.0.0", |c| {
        c.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(|f| !f.contains(&json!(finalizer)))
            .then_some(())
    })
    .await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client());
    namespaces
        .delete(env.ns(), &DeleteParams::background())
        .await
        .expect("deleting the namespace");
    let ns = env.ns().to_owned();
    wait_for(&format!("namespace {ns} to be deleted"), WAIT, || {
        let (namespaces, ns) = (namespaces.clone(), ns.clone());
        async move { matches!(namespaces.get_opt(&ns).await, Ok(None)).then_some(()) }
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Pinning, "first automatic, then manual", `why` and `rollback` (issue 25).

/// Runs `kubectl-olm --kubeconfig <the test cluster's> ARGS`: exit code, stdout, stderr.
fn kubectl_olm(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .arg("--kubeconfig")
        .arg(env.cluster.kubeconfig_path())
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("running kubectl-olm");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A Subscription pinned at 1.0.0 (`olm-rs.io/version-ceiling`) installs 1.0.0 automatically and
/// stays there while 1.1.0 is published: `state: UpgradeAvailable`, `UpgradeHeld=True`
/// (`VersionPinned`) naming 1.1.0, an `UpgradeAvailable` Event, and no InstallPlan for 1.1.0.
/// Raising the ceiling plans 1.1.0, and `olm-rs.io/upgrade-approval: Manual` makes that plan
/// wait for approval although the Subscription is Automatic. An unreadable ceiling is reported
/// (condition and Event naming the annotation), never ignored.
#[tokio::test]
async fn a_pinned_subscription_stays_put_while_a_newer_bundle_is_published() {
    let Some(env) = env("e2e-pin").await else {
        return;
    };
    env.serve_catalog(&widget_catalog(&[("stable", &[b("1.0.0")])]))
        .await;
    env.create::<Subscription>(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "widget", "namespace": env.ns(), "annotations": {
            "olm-rs.io/version-ceiling": "1.0.0", "olm-rs.io/upgrade-approval": "Manual"}},
        "spec": {"name": "widget-operator", "source": "e2e", "sourceNamespace": env.ns(),
                 "channel": "stable", "installPlanApproval": "Automatic"},
    }))
    .await;
    let v1 = csv_name("widget", "1.0.0");
    let v11 = csv_name("widget", "1.1.0");
    // The first install is Automatic.
    env.wait_csv_phase(&v1, "Succeeded").await;
    env.wait_at_latest("widget", &v1).await;

    // 1.1.0 is published: reported, not planned.
    env.apply_catalog(
        "e2e-catalog",
        &widget_catalog(&[("stable", &[b("1.0.0"), b("1.1.0").replaces("1.0.0")])]),
    )
    .await;
    let sub = env
        .wait_obj::<Subscription, _>("UpgradeAvailable", "widget", |s| {
            (str_at(s, "/status/state") == "UpgradeAvailable").then(|| s.clone())
        })
        .await;
    assert_eq!(str_at(&sub, "/status/installedCSV"), v1);
    assert_eq!(str_at(&sub, "/status/currentCSV"), v1);
    let held = env.wait_condition("widget", "UpgradeHeld").await;
    assert_eq!(held["reason"], "VersionPinned");
    let message = held["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "{v11} (1.1.0) is available but the annotation olm-rs.io/version-ceiling keeps this \
             Subscription at or below 1.0.0"
        )),
        "{message}"
    );
    assert_eq!(
        sub.pointer("/metadata/annotations/olm-rs.io~1installed-csvs"),
        Some(&json!(v1)),
        "the history records the first install: {sub:#}"
    );
    let events = env.events_for("Subscription", "widget").await;
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "UpgradeAvailable" && m == message),
        "{events:?}"
    );
    // Stays put: several reconciles later, still no plan for 1.1.0 and 1.0.0 installed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let plans = env.list::<InstallPlan>().await;
    assert!(
        plans
            .iter()
            .all(|p| !p["spec"]["clusterServiceVersionNames"].to_string().contains(&v11)),
        "no plan for {v11}: {plans:#?}"
    );
    assert_eq!(
        str_at(
            &env.get::<Subscription>("widget").await.unwrap_or_default(),
            "/status/state"
        ),
        "UpgradeAvailable"
    );
    // `why` for the upgradable (pinned) Subscription, read as the user through their kubeconfig.
    let (code, out, err) = kubectl_olm(&env, &["why", "widget", "-n", env.ns()]);
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        format!("  catalog:   {}/e2e (priority 0), channel stable", env.ns()),
        "  approval:  Automatic (upgrades: Manual, annotation olm-rs.io/upgrade-approval)".to_owned(),
        "  state:     UpgradeAvailable".to_owned(),
        format!("  installed: {v1} (1.0.0) — first install: the channel head at the time"),
        format!(
            "  next:      nothing: {v11} 1.1.0 is available, but the annotation \
             olm-rs.io/version-ceiling keeps this Subscription at or below 1.0.0 (state UpgradeAvailable)"
        ),
    ] {
        assert!(out.lines().any(|l| l == line), "no line {line:?} in:\n{out}");
    }

    // An unreadable ceiling: reported on the Subscription and as an Event, naming the fix.
    env.cluster.kubectl_ok([
        "annotate",
        "--overwrite",
        "subscriptions.operators.coreos.com",
        "widget",
        "-n",
        env.ns(),
        "olm-rs.io/version-ceiling=one",
    ]);
    let failed = env.wait_condition("widget", "ResolutionFailed").await;
    assert_eq!(failed["reason"], "InvalidAnnotation");
    let failure = failed["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        failure.starts_with("annotation olm-rs.io/version-ceiling \"one\" is not a semantic version"),
        "{failure}"
    );
    let events = env.events_for("Subscription", "widget").await;
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "ResolutionFailed" && *m == failure),
        "{events:?}"
    );
    // `why` for the failing Subscription: the cause in one sentence, and the fix.
    let (code, out, err) = kubectl_olm(&env, &["why", "sub/widget", "-n", env.ns()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "\n  failure:   annotation olm-rs.io/version-ceiling \"one\" is not a semantic version ("
        ) && out.contains("\n  fix:       set it to a version such as 1.0.0, or remove it\n"),
        "{out}"
    );

    // The ceiling raised: 1.1.0 is planned, and waits for approval (upgrade-approval Manual).
    env.cluster.kubectl_ok([
        "annotate",
        "--overwrite",
        "subscriptions.operators.coreos.com",
        "widget",
        "-n",
        env.ns(),
        "olm-rs.io/version-ceiling=1.1.0",
    ]);
    let plan_name = env.install_plan_for("widget", &v11).await;
    let plan = env
        .wait_obj::<InstallPlan, _>("RequiresApproval", &plan_name, |p| {
            (str_at(p, "/status/phase") == "RequiresApproval").then(|| p.clone())
        })
        .await;
    assert_eq!(plan["spec"]["approved"], false);
    assert_eq!(str_at(&plan, "/spec/approval"), "Manual");
    // `why` asked about the waiting InstallPlan, as JSON.
    let (code, out, err) = kubectl_olm(
        &env,
        &[
            "why",
            &format!("installplan/{plan_name}"),
            "-n",
            env.ns(),
            "-o",
            "json",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let answer: Value = serde_json::from_str(&out).expect("why -o json");
    assert_eq!(
        answer["asked"],
        format!(
            "installplan.operators.coreos.com/{plan_name} (RequiresApproval, installs {v11}) was made for:"
        )
    );
    assert_eq!(
        answer["next"],
        format!("install {v11} 1.1.0 (replaces {v1}) (its InstallPlan is pending)")
    );
    assert_eq!(answer["installed"]["bundle"], json!(v1));
    let (code, out, err) = kubectl_olm(
        &env,
        &["approve", "--subscription", "widget", "-n", env.ns(), "--yes"],
    );
    assert_eq!(code, 0, "{out}{err}");
    env.wait_at_latest("widget", &v11).await;
    let sub = env
        .wait_obj::<Subscription, _>("the history", "widget", |s| {
            let history = s.pointer("/metadata/annotations/olm-rs.io~1installed-csvs")?;
            (history == &json!(format!("{v1},{v11}"))).then(|| s.clone())
        })
        .await;
    // `why` for the installed Subscription, asked by its CSV, with the graph as Mermaid.
    let (code, out, err) = kubectl_olm(
        &env,
        &["why", &format!("csv/{v11}"), "-n", env.ns(), "--graph", "mermaid"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with(&format!(
            "clusterserviceversion.operators.coreos.com/{v11} is installed by:\n"
        )),
        "{out}"
    );
    for line in [
        format!("  installed: {v11} (1.1.0) — upgrade: replaces {v1}"),
        format!(
            "  next:      nothing: no entry of the channel replaces or skips {v11}, or has a skipRange \
             covering its version"
        ),
        "    flowchart TD".to_owned(),
    ] {
        assert!(out.lines().any(|l| l == line), "no line {line:?} in:\n{out}");
    }
    // The controller's apply keeps the component label.
    assert!(
        sub.pointer(&format!(
            "/metadata/labels/operators.coreos.com~1widget-operator.{}",
            env.ns()
        ))
        .is_some(),
        "{sub:#}"
    );
}

/// `kubectl olm rollback` with the controller: the Redis operator from the built-in catalog's
/// `alpha` channel installs 1.0.0 (startingCSV), upgrades to 1.1.0 (ceiling 1.1.0), and 1.1.0
/// fails (it supports only AllNamespaces, the group targets its own namespace). The rollback
/// shows the plan of 1.0.0, deletes the Subscription, the failed CSV and the 1.0.0 CSV the
/// upgrade left `Replacing`, and subscribes again at 1.0.0, pinned there: 1.0.0 is `Succeeded`
/// again, the history records the way back, and `why` says so.
#[tokio::test]
async fn rollback_returns_a_failed_upgrade_of_the_redis_operator_to_1_0_0() {
    let Some(env) = env("e2e-rollback").await else {
        return;
    };
    env.create::<CatalogSource>(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "olm-rs-catalog", "namespace": env.ns()},
        "spec": {"sourceType": "builtin", "displayName": "olm-rs catalog", "publisher": "olm-rs"},
    }))
    .await;
    env.own_namespace_group().await;
    env.wait_catalog_ready("olm-rs-catalog").await;
    env.create::<Subscription>(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "redis-operator", "namespace": env.ns(),
                     "annotations": {"olm-rs.io/version-ceiling": "1.1.0"}},
        "spec": {"name": "redis-operator", "source": "olm-rs-catalog", "sourceNamespace": env.ns(),
                 "channel": "alpha", "startingCSV": "redis-operator.v1.0.0"},
    }))
    .await;
    let (v1, v11) = ("redis-operator.v1.0.0", "redis-operator.v1.1.0");
    env.wait_csv_phase(v11, "Failed").await;
    env.wait_obj::<Subscription, _>("the history of both", "redis-operator", |s| {
        (s.pointer("/metadata/annotations/olm-rs.io~1installed-csvs") == Some(&json!(format!("{v1},{v11}"))))
            .then_some(())
    })
    .await;

    let (code, out, err) = kubectl_olm(&env, &["rollback", "redis-operator", "-n", env.ns(), "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with(&format!(
            "rollback of subscription {}/redis-operator: {v11} -> {v1}\n",
            env.ns()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("and csv {v1} (left Replacing by the upgrade)")),
        "{out}"
    );
    env.wait_csv_gone(v11).await;
    env.wait_csv_phase(v1, "Succeeded").await;
    let sub = env
        .wait_obj::<Subscription, _>("back at 1.0.0, recorded", "redis-operator", |s| {
            let history = s.pointer("/metadata/annotations/olm-rs.io~1installed-csvs")?;
            (history == &json!(format!("{v1},{v11},{v1}"))
                && s.pointer("/status/installedCSV") == Some(&json!(v1)))
            .then(|| s.clone())
        })
        .await;
    assert_eq!(
        sub.pointer("/metadata/annotations/olm-rs.io~1version-ceiling"),
        Some(&json!("1.0.0"))
    );
    assert_eq!(sub.pointer("/spec/startingCSV"), Some(&json!(v1)));
    let (code, out, err) = kubectl_olm(&env, &["why", "redis-operator", "-n", env.ns()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "\n  installed: {v1} (1.0.0) — rolled back from {v11} (it was installed before {v11})\n"
        )),
        "{out}"
    );
    // The CSV before 1.0.0 in the history is now 1.1.0: a rollback never goes forward.
    let (code, out, err) = kubectl_olm(&env, &["rollback", "redis-operator", "-n", env.ns(), "--dry-run"]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        err,
        format!(
            "error: rollback of subscription {}/redis-operator refused: the CSV before {v1} in the \
             history is {v11} (1.1.0), which is not older than {v1} (1.0.0); rollback only goes back: \
             to upgrade, raise or remove the annotation olm-rs.io/version-ceiling\n",
            env.ns()
        )
    );
}

/// An OperatorGroup annotated `olm.operatorframework.io/exclude-global-namespace-resolution:
/// "true"` leaves the global catalog namespace (`olm` here) out of resolution in its namespace,
/// as upstream's step resolver does: a Subscription to a global catalog fails, naming the group
/// and the annotation; with the annotation `"false"` it installs.
#[tokio::test]
async fn an_operator_group_can_leave_the_global_catalogs_out_of_resolution() {
    let Some(env) = env("e2e-exclude").await else {
        return;
    };
    let client = env.cluster.client();
    let global = "olm";
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    if namespaces
        .get_opt(global)
        .await
        .expect("reading namespace olm")
        .is_none()
    {
        let _ = namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": global}}),
                )
                .expect("namespace"),
            )
            .await;
    }
    let name = format!("global-{}", env.ns());
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), global);
    cms.patch(
        &name,
        &kube::api::PatchParams::apply("olm-rs-e2e").force(),
        &kube::api::Patch::Apply(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": global},
            "data": {"catalog.json": catalog_json(&widget_catalog(&[("stable", &[b("1.0.0")])]))},
        })),
    )
    .await
    .expect("the global catalog's ConfigMap");
    let sources: Api<CatalogSource> = Api::namespaced(client.clone(), global);
    sources
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                "metadata": {"name": name, "namespace": global},
                "spec": {"sourceType": "configmap", "configMap": name, "displayName": "global e2e"},
            }))
            .expect("catalog source"),
        )
        .await
        .expect("the global CatalogSource");
    env.create::<OperatorGroup>(json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "og", "namespace": env.ns(),
                     "annotations": {"olm.operatorframework.io/exclude-global-namespace-resolution": "true"}},
        "spec": {"targetNamespaces": [env.ns()]},
    }))
    .await;
    env.create::<Subscription>(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "widget", "namespace": env.ns()},
        "spec": {"name": "widget-operator", "source": name, "sourceNamespace": global, "channel": "stable"},
    }))
    .await;
    let failed = env.wait_condition("widget", "ResolutionFailed").await;
    let message = failed["message"].as_str().unwrap_or_default().to_owned();
    assert!(
        message.contains("left out of resolution")
            && message.contains("OperatorGroup og")
            && message.contains("exclude-global-namespace-resolution"),
        "the failure names the group and the annotation: {message}"
    );
    let csvs: Api<ClusterServiceVersion> = env.ns.api();
    assert!(
        csvs.list(&Default::default())
            .await
            .expect("csvs")
            .items
            .is_empty(),
        "nothing installed from an excluded catalog"
    );
    let groups: Api<OperatorGroup> = env.ns.api();
    groups
        .patch(
            "og",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"annotations": {
                "olm.operatorframework.io/exclude-global-namespace-resolution": "false"}}})),
        )
        .await
        .expect("turning the exclusion off");
    env.wait_csv_phase(&csv_name("widget", "1.0.0"), "Succeeded")
        .await;
    let _ = sources.delete(&name, &DeleteParams::default()).await;
    let _ = cms.delete(&name, &DeleteParams::default()).await;
}
