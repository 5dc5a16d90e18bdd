//! The cluster verbs of `kubectl-olm` (`install`, `list`, `approve`, `uninstall`) run as a binary
//! against the real local control plane (see `tests/it/support/cluster.rs`).
//!
//! The controller is not needed: each test creates the objects the controller would (Subscription
//! status, CSVs, InstallPlans in `RequiresApproval`) by hand, status through the status
//! subresource, and checks what the CLI prints and changes. Each test works in its own namespace;
//! the one CRD a test creates has a unique name and is deleted at the end.

use std::process::Command;

use crate::support::cluster::{TestCluster, TestNamespace, WAIT, wait_for};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams},
};
use olm_rs::api::{
    v1::OperatorGroup,
    v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
};
use serde_json::{Value, json};

/// Exit code, stdout and stderr of one run.
struct Run {
    code: i32,
    out: String,
    err: String,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.out, self.err
        )
    }
}

/// Runs `kubectl-olm --kubeconfig <the test cluster's> ARGS`.
fn olm(cluster: &TestCluster, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("running kubectl-olm");
    Run {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Connects and makes sure OLM's CRDs are installed (server-side apply, like the manifests).
async fn setup(prefix: &str) -> Option<(TestCluster, TestNamespace)> {
    let cluster = TestCluster::connect().await?;
    cluster.install_olm_crds("olm-rs-tests");
    let ns = cluster.namespace(prefix).await;
    Some((cluster, ns))
}

/// A kubectl-style table: columns three spaces apart, the last one unpadded.
fn output_table<const N: usize>(rows: &[[&str; N]]) -> String {
    let widths: Vec<usize> = (0..N)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < N {
                line.push_str(&" ".repeat(widths[i] - cell.len() + 3));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("test object")
}

async fn create<K>(api: &Api<K>, value: Value) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), &from_json(value))
        .await
        .expect("creating a test object")
}

async fn set_status<K>(api: &Api<K>, name: &str, status: Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({ "status": status })),
    )
    .await
    .expect("setting status");
}

fn now() -> String {
    "2026-01-01T00:00:00Z".to_string()
}

async fn subscription(ns: &TestNamespace, name: &str, package: &str, status: Option<Value>) {
    let api: Api<Subscription> = ns.api();
    create(
        &api,
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": name, "namespace": ns.name()},
            "spec": {
                "source": "olm-rs-catalog", "sourceNamespace": "olm", "name": package,
                "channel": "stable", "installPlanApproval": "Manual"
            }
        }),
    )
    .await;
    if let Some(mut status) = status {
        status["lastUpdated"] = json!(now());
        set_status(&api, name, status).await;
    }
}

async fn csv(ns: &TestNamespace, name: &str, version: &str, phase: &str, owned_crd: Option<&str>) {
    let api: Api<ClusterServiceVersion> = ns.api();
    let mut spec = json!({
        "install": {"strategy": "deployment", "spec": {"deployments": []}},
        "displayName": "Redis Operator",
        "version": version
    });
    if let Some(crd) = owned_crd {
        spec["customresourcedefinitions"] =
            json!({"owned": [{"name": crd, "version": "v1", "kind": "Widget"}]});
    }
    create(
        &api,
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": name, "namespace": ns.name()},
            "spec": spec
        }),
    )
    .await;
    set_status(&api, name, json!({"phase": phase, "reason": "InstallSucceeded"})).await;
}

async fn waiting_plan(ns: &TestNamespace, name: &str, csv: &str) {
    let api: Api<InstallPlan> = ns.api();
    create(
        &api,
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "InstallPlan",
            "metadata": {"name": name, "namespace": ns.name()},
            "spec": {"clusterServiceVersionNames": [csv], "approval": "Manual", "approved": false}
        }),
    )
    .await;
    let step = |kind: &str, obj: &str, group: &str| {
        json!({
            "resolving": csv,
            "resource": {
                "sourceName": "olm-rs-catalog", "sourceNamespace": "olm",
                "group": group, "version": "v1", "kind": kind, "name": obj
            },
            "status": "Unknown"
        })
    };
    set_status(
        &api,
        name,
        json!({
            "phase": "RequiresApproval",
            "catalogSources": ["olm-rs-catalog"],
            "plan": [
                step("CustomResourceDefinition", "redisclusters.cache.example.com", "apiextensions.k8s.io"),
                step("ServiceAccount", "redis-operator", ""),
                step("ClusterServiceVersion", csv, "operators.coreos.com"),
            ]
        }),
    )
    .await;
}

#[tokio::test]
async fn install_creates_the_subscription_and_the_operator_group_with_the_flags_given() {
    let Some((cluster, ns)) = setup("cli-install").await else {
        return;
    };
    let n = ns.name();
    let catalogs: Api<CatalogSource> = ns.api();
    create(
        &catalogs,
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": "test-catalog", "namespace": n},
            "spec": {"sourceType": "configmap", "configMap": "test-catalog"}
        }),
    )
    .await;

    let args = [
        "install",
        "redis-operator",
        "-n",
        n,
        "--channel",
        "alpha",
        "--starting-csv",
        "redis-operator.v0.1.0",
        "--approval",
        "Manual",
        "--create-operator-group",
        "--catalog-source",
        "test-catalog",
        "--catalog-source-namespace",
        n,
    ];
    let dry = olm(&cluster, &[&args[..], &["--dry-run"]].concat());
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(dry.out.contains("(dry run)"), "{dry:?}");
    let subs: Api<Subscription> = ns.api();
    assert!(
        subs.get_opt("redis-operator").await.unwrap().is_none(),
        "dry run created it"
    );

    let run = olm(&cluster, &args);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.out,
        format!(
            "operatorgroup.operators.coreos.com/{n} created\nsubscription.operators.coreos.com/redis-operator created\n"
        )
    );
    assert!(
        run.err
            .contains("kubectl olm approve --subscription redis-operator"),
        "{run:?}"
    );

    let sub = subs.get("redis-operator").await.unwrap();
    assert_eq!(sub.spec.name, "redis-operator");
    assert_eq!(sub.spec.channel.as_deref(), Some("alpha"));
    assert_eq!(sub.spec.starting_csv.as_deref(), Some("redis-operator.v0.1.0"));
    assert_eq!(sub.spec.source, "test-catalog");
    assert_eq!(sub.spec.source_namespace, n);
    assert!(sub.spec.approval().is_manual());

    let ogs: Api<OperatorGroup> = ns.api();
    let og = ogs.get(n).await.unwrap();
    assert_eq!(og.spec.target_namespaces, Some(vec![n.to_string()]));

    let again = olm(&cluster, &args);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(
        again.err.starts_with(&format!(
            "error: package redis-operator is already subscribed in namespace {n} by subscription redis-operator"
        )),
        "{again:?}"
    );
}

#[tokio::test]
async fn install_without_an_operator_group_fails_and_creates_nothing() {
    let Some((cluster, ns)) = setup("cli-install-noog").await else {
        return;
    };
    let n = ns.name();
    let run = olm(&cluster, &["install", "redis-operator", "-n", n]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.err,
        format!(
            "error: namespace {n} has no OperatorGroup; pass --create-operator-group or create one \
             (kubectl apply -f operatorgroup.yaml with spec.targetNamespaces: [{n}])\n"
        )
    );
    assert_eq!(run.out, "");
    let subs: Api<Subscription> = ns.api();
    assert!(subs.list(&Default::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn install_from_a_missing_catalog_source_names_the_flags_to_fix_it() {
    let Some((cluster, ns)) = setup("cli-install-nocat").await else {
        return;
    };
    let n = ns.name();
    let run = olm(
        &cluster,
        &[
            "install",
            "redis-operator",
            "-n",
            n,
            "--create-operator-group",
            "--catalog-source",
            "no-such-catalog",
        ],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.err
            .starts_with("error: catalog source olm/no-such-catalog not found; catalog sources: "),
        "{run:?}"
    );
    assert!(
        run.err
            .contains("pass --catalog-source NAME --catalog-source-namespace NS"),
        "{run:?}"
    );
    let ogs: Api<OperatorGroup> = ns.api();
    assert!(
        ogs.list(&Default::default()).await.unwrap().items.is_empty(),
        "created an OperatorGroup"
    );
}

#[tokio::test]
async fn list_shows_the_installed_operator_and_the_upgrade_waiting_in_every_format() {
    let Some((cluster, ns)) = setup("cli-list").await else {
        return;
    };
    let n = ns.name();
    csv(&ns, "redis-operator.v0.3.0", "0.3.0", "Succeeded", None).await;
    waiting_plan(&ns, "install-abc12", "redis-operator.v1.0.0").await;
    subscription(
        &ns,
        "redis-operator",
        "redis-operator",
        Some(json!({
            "installedCSV": "redis-operator.v0.3.0",
            "currentCSV": "redis-operator.v1.0.0",
            "state": "UpgradePending",
            "installPlanRef": {"kind": "InstallPlan", "name": "install-abc12", "namespace": n}
        })),
    )
    .await;

    // A running olm-controller may move the hand-made CSV to another phase (it has no Deployment
    // and no OperatorGroup): the CSV PHASE column must show the phase the CSV has.
    let csvs: Api<ClusterServiceVersion> = ns.api();
    let phase = || async {
        csvs.get("redis-operator.v0.3.0")
            .await
            .unwrap()
            .status
            .and_then(|s| s.phase)
            .map(|p| p.as_str().to_string())
            .unwrap_or_default()
    };
    let before = phase().await;
    let table = olm(&cluster, &["list", "-n", n]);
    let after = phase().await;
    assert_eq!(table.code, 0, "{table:?}");
    let expected = |p: &str| {
        output_table(&[
            ["PACKAGE", "VERSION", "CHANNEL", "STATE", "CSV PHASE", "UPGRADE"],
            [
                "redis-operator",
                "0.3.0",
                "stable",
                "UpgradePending",
                p,
                "redis-operator.v1.0.0",
            ],
        ])
    };
    assert!(
        table.out == expected(&before) || table.out == expected(&after),
        "{table:?}\nexpected:\n{}",
        expected(&before)
    );

    let wide = olm(&cluster, &["list", "-n", n, "-o", "wide"]);
    assert_eq!(wide.code, 0, "{wide:?}");
    assert!(wide.out.starts_with("PACKAGE "), "{wide:?}");
    for cell in [
        "SUBSCRIPTION",
        "INSTALLPLAN",
        "Manual",
        "olm/olm-rs-catalog",
        "install-abc12",
    ] {
        assert!(wide.out.contains(cell), "{cell} missing: {wide:?}");
    }

    let json_run = olm(&cluster, &["list", "-n", n, "-o", "json"]);
    assert_eq!(json_run.code, 0, "{json_run:?}");
    let v: Value = serde_json::from_str(&json_run.out).unwrap();
    assert_eq!(v["kind"], "List");
    let item = &v["items"][0];
    assert_eq!(item["package"], "redis-operator");
    assert_eq!(item["version"], "0.3.0");
    assert!(item["csvPhase"].is_string(), "{item}");
    assert_eq!(item["installedCSV"], "redis-operator.v0.3.0");
    assert_eq!(item["upgrade"], "redis-operator.v1.0.0");
    assert_eq!(item["namespace"], n);

    let yaml = olm(&cluster, &["list", "-n", n, "-o", "yaml"]);
    assert_eq!(yaml.code, 0, "{yaml:?}");
    assert!(yaml.out.contains("upgrade: redis-operator.v1.0.0"), "{yaml:?}");

    let name = olm(&cluster, &["list", "-n", n, "-o", "name"]);
    assert_eq!(
        name.out, "subscription.operators.coreos.com/redis-operator\n",
        "{name:?}"
    );

    let all = olm(&cluster, &["list", "-A"]);
    assert_eq!(all.code, 0, "{all:?}");
    assert!(all.out.starts_with("NAMESPACE "), "{all:?}");
    assert!(
        all.out
            .lines()
            .any(|l| l.starts_with(n) && l.contains("redis-operator.v1.0.0")),
        "{all:?}"
    );

    let empty = cluster.namespace("cli-list-empty").await;
    let none = olm(&cluster, &["list", "-n", empty.name()]);
    assert_eq!(none.code, 0, "{none:?}");
    assert_eq!(none.out, "");
    assert_eq!(
        none.err,
        format!("No resources found in {} namespace.\n", empty.name())
    );
}

#[tokio::test]
async fn approve_previews_the_plan_and_sets_spec_approved() {
    let Some((cluster, ns)) = setup("cli-approve").await else {
        return;
    };
    let n = ns.name();
    waiting_plan(&ns, "install-first", "redis-operator.v0.1.0").await;
    let plans: Api<InstallPlan> = ns.api();

    let dry = olm(&cluster, &["approve", "install-first", "-n", n, "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(
        dry.out
            .ends_with("installplan.operators.coreos.com/install-first approved (dry run)\n"),
        "{dry:?}"
    );
    assert!(
        !plans.get("install-first").await.unwrap().spec.approved,
        "dry run approved it"
    );

    let run = olm(&cluster, &["approve", "install-first", "-n", n]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.out,
        format!(
            "installplan install-first in namespace {n} (RequiresApproval) installs:\n  \
             ClusterServiceVersions: redis-operator.v0.1.0\n  Steps (3):\n    \
             KIND                       NAME                              STATUS\n    \
             CustomResourceDefinition   redisclusters.cache.example.com   Unknown\n    \
             ServiceAccount             redis-operator                    Unknown\n    \
             ClusterServiceVersion      redis-operator.v0.1.0             Unknown\n\
             installplan.operators.coreos.com/install-first approved\n"
        )
    );
    assert!(plans.get("install-first").await.unwrap().spec.approved);

    let again = olm(&cluster, &["approve", "install-first", "-n", n]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.out.contains("is already approved"), "{again:?}");

    let missing = olm(&cluster, &["approve", "install-nope", "-n", n]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing.err.starts_with(&format!(
            "error: installplan install-nope not found in namespace {n}; installplans: install-first"
        )),
        "{missing:?}"
    );
}

#[tokio::test]
async fn approve_subscription_follows_its_install_plan_ref() {
    let Some((cluster, ns)) = setup("cli-approve-sub").await else {
        return;
    };
    let n = ns.name();
    waiting_plan(&ns, "install-other", "other.v1.0.0").await;
    waiting_plan(&ns, "install-upgrade", "redis-operator.v1.0.0").await;
    subscription(
        &ns,
        "my-redis",
        "redis-operator",
        Some(json!({
            "installedCSV": "redis-operator.v0.3.0",
            "currentCSV": "redis-operator.v1.0.0",
            "state": "UpgradePending",
            "installPlanRef": {"kind": "InstallPlan", "name": "install-upgrade", "namespace": n}
        })),
    )
    .await;
    subscription(&ns, "unresolved", "etcd", None).await;

    // By package name; JSON output carries the preview.
    let run = olm(
        &cluster,
        &[
            "approve",
            "--subscription",
            "redis-operator",
            "-n",
            n,
            "-o",
            "json",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let v: Value = serde_json::from_str(&run.out).unwrap();
    assert_eq!(v["installPlan"], "install-upgrade");
    assert_eq!(v["approved"], true);
    assert_eq!(v["clusterServiceVersionNames"], json!(["redis-operator.v1.0.0"]));
    assert_eq!(v["steps"][0]["kind"], "CustomResourceDefinition");

    let plans: Api<InstallPlan> = ns.api();
    assert!(plans.get("install-upgrade").await.unwrap().spec.approved);
    assert!(
        !plans.get("install-other").await.unwrap().spec.approved,
        "approved the wrong plan"
    );

    let pending = olm(&cluster, &["approve", "--subscription", "unresolved", "-n", n]);
    assert_eq!(pending.code, 1, "{pending:?}");
    assert!(
        pending.err.starts_with(&format!(
            "error: subscription unresolved in namespace {n} has no InstallPlan yet (state: not resolved yet)"
        )),
        "{pending:?}"
    );

    let unknown = olm(&cluster, &["approve", "--subscription", "nothing", "-n", n]);
    assert_eq!(unknown.code, 1, "{unknown:?}");
    assert!(
        unknown.err.contains("subscription nothing not found"),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn uninstall_deletes_subscription_and_csv_keeps_crds_and_refuses_delete_crds_while_crs_exist() {
    let Some((cluster, ns)) = setup("cli-uninstall").await else {
        return;
    };
    let n = ns.name().to_string();
    // A CRD unique to this run (CRDs are cluster-scoped).
    let group = format!("{n}.olm-rs.test");
    let crd_name = format!("widgets.{group}");
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    create(
        &crds,
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": crd_name},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
                }]
            }
        }),
    )
    .await;
    cluster.wait_crds_established(&[&crd_name]);
    let ar = ApiResource {
        group: group.clone(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let widgets: Api<DynamicObject> = Api::namespaced_with(cluster.client(), &n, &ar);
    let widget: DynamicObject = from_json(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Widget",
        "metadata": {"name": "my-widget", "namespace": n}
    }));
    widgets.create(&PostParams::default(), &widget).await.unwrap();

    let installed = || async {
        csv(
            &ns,
            "redis-operator.v1.0.0",
            "1.0.0",
            "Succeeded",
            Some(&crd_name),
        )
        .await;
        subscription(
            &ns,
            "redis-operator",
            "redis-operator",
            Some(json!({"installedCSV": "redis-operator.v1.0.0", "currentCSV": "redis-operator.v1.0.0", "state": "AtLatestKnown"})),
        )
        .await;
    };
    installed().await;
    let subs: Api<Subscription> = ns.api();
    let csvs: Api<ClusterServiceVersion> = ns.api();

    // --delete-crds with a custom resource left: refused, nothing deleted.
    let refused = olm(
        &cluster,
        &["uninstall", "redis-operator", "-n", &n, "--delete-crds"],
    );
    assert_eq!(refused.code, 1, "{refused:?}");
    assert_eq!(
        refused.err,
        format!(
            "error: refusing to delete the CRDs of redis-operator: custom resources remain ({crd_name}: {n}/my-widget); \
             nothing was deleted. Delete them first (kubectl delete {crd_name} --all -A), or uninstall without \
             --delete-crds to keep the CRDs\n"
        )
    );
    assert!(subs.get_opt("redis-operator").await.unwrap().is_some());
    assert!(csvs.get_opt("redis-operator.v1.0.0").await.unwrap().is_some());

    // Plain uninstall: Subscription and CSV gone, the CRD kept.
    let run = olm(&cluster, &["uninstall", "redis-operator", "-n", &n]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.out,
        "subscription.operators.coreos.com/redis-operator deleted\n\
         clusterserviceversion.operators.coreos.com/redis-operator.v1.0.0 deleted\n"
    );
    assert_eq!(
        run.err,
        format!("kept crd {crd_name} (pass --delete-crds to delete it)\n")
    );
    assert!(subs.get_opt("redis-operator").await.unwrap().is_none());
    assert!(csvs.get_opt("redis-operator.v1.0.0").await.unwrap().is_none());
    assert!(crds.get_opt(&crd_name).await.unwrap().is_some());

    let gone = olm(&cluster, &["uninstall", "redis-operator", "-n", &n]);
    assert_eq!(gone.code, 1, "{gone:?}");
    assert!(
        gone.err
            .contains("package redis-operator is not installed in namespace"),
        "{gone:?}"
    );

    // Installed again, no custom resource left: --delete-crds deletes the CRD too.
    installed().await;
    widgets
        .delete("my-widget", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("the widget to be deleted", WAIT, || {
        let widgets = widgets.clone();
        async move {
            widgets
                .get_opt("my-widget")
                .await
                .ok()
                .flatten()
                .is_none()
                .then_some(())
        }
    })
    .await;
    let all = olm(
        &cluster,
        &[
            "uninstall",
            "redis-operator",
            "-n",
            &n,
            "--delete-crds",
            "-o",
            "json",
        ],
    );
    assert_eq!(all.code, 0, "{all:?}");
    let v: Value = serde_json::from_str(&all.out).unwrap();
    let deleted: Vec<&str> = v["deleted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        deleted,
        [
            "subscription.operators.coreos.com",
            "clusterserviceversion.operators.coreos.com",
            "customresourcedefinition.apiextensions.k8s.io"
        ]
    );
    assert!(
        crds.get_opt(&crd_name).await.unwrap().is_none(),
        "the CRD is still there"
    );
}

#[tokio::test]
async fn an_unreachable_cluster_names_the_server_and_the_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
         users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: team\n\
         current-context: x\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["list", "--kubeconfig"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: cannot reach the cluster at https://127.0.0.1:1/ (kubeconfig {}) to list subscriptions in namespace team:",
            path.display()
        )),
        "{err}"
    );
}

#[tokio::test]
async fn an_unknown_context_is_reported_with_the_kubeconfig() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let run = olm(&cluster, &["list", "--context", "no-such-context"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.err.starts_with(&format!(
            "error: cannot load kubeconfig {}: ",
            cluster.kubeconfig_path().display()
        )),
        "{run:?}"
    );
    assert!(run.err.contains("no-such-context"), "{run:?}");
}

#[tokio::test]
async fn approve_shows_what_each_step_changes_the_rbac_it_grants_and_the_images() {
    let Some((cluster, ns)) = setup("cli-preview").await else {
        return;
    };
    let n = ns.name();
    // Live: the ConfigMap holds another value than the plan's.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = ns.api();
    create(
        &cms,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": n},
               "data": {"mode": "fast", "kept": "yes"}}),
    )
    .await;
    // Live: a CRD storing v1, which the plan's CRD drops (the plan would refuse the update).
    let crd_name = format!("gadgets.{n}.e2e.olm-rs.io");
    let crd_group = format!("{n}.e2e.olm-rs.io");
    let crd_of = |version: &str| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": crd_name},
               "spec": {"group": crd_group, "scope": "Namespaced",
                        "names": {"kind": "Gadget", "listKind": "GadgetList", "plural": "gadgets", "singular": "gadget"},
                        "versions": [{"name": version, "served": true, "storage": true,
                                      "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    };
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    create(&crds, crd_of("v1")).await;
    // Live: widget.v1, which the plan's CSV replaces, with what it owns: a Deployment the new
    // CSV keeps (same name), one it drops, a Role by owner reference and a ClusterRole by the
    // `olm.owner` labels.
    csv(&ns, "widget.v1", "1.0.0", "Succeeded", None).await;
    let old_uid = ns
        .api::<ClusterServiceVersion>()
        .get("widget.v1")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let owned_by_old = json!([{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "name": "widget.v1", "uid": old_uid}]);
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = ns.api();
    for name in ["widget", "widget-metrics"] {
        create(
            &deployments,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": name, "namespace": n, "ownerReferences": owned_by_old},
                   "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}},
                                         "spec": {"containers": [{"name": "w", "image": "registry.example.com/widget:1.0"}]}}}}),
        )
        .await;
    }
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = ns.api();
    create(
        &roles,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
               "metadata": {"name": "widget.v1-metrics", "namespace": n, "ownerReferences": owned_by_old},
               "rules": []}),
    )
    .await;
    let old_cluster_role = format!("widget.v1-{n}");
    let cluster_roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(cluster.client());
    create(
        &cluster_roles,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": old_cluster_role, "labels": {"olm.owner": "widget.v1", "olm.owner.namespace": n,
                            "olm.owner.kind": "ClusterServiceVersion"}},
               "rules": []}),
    )
    .await;
    let csv = "widget.v2";
    let manifests = [
        (
            "ConfigMap",
            "",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                   "data": {"mode": "safe", "kept": "yes"}}),
        ),
        (
            "ServiceAccount",
            "",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "widget"}}),
        ),
        (
            "Role",
            "rbac.authorization.k8s.io",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "widget"},
                   "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]}),
        ),
        (
            "ClusterServiceVersion",
            "operators.coreos.com",
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                   "metadata": {"name": csv},
                   "spec": {"displayName": "Widget", "replaces": "widget.v1", "install": {"strategy": "deployment", "spec": {"deployments": [
                       {"name": "widget", "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": {
                           "metadata": {"labels": {"app": "w"}},
                           "spec": {"containers": [{"name": "w", "image": "registry.example.com/widget:2.0"}]}}}}]}}}}),
        ),
        ("CustomResourceDefinition", "apiextensions.k8s.io", crd_of("v2")),
    ];
    let plans: Api<InstallPlan> = ns.api();
    create(
        &plans,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
               "metadata": {"name": "install-preview", "namespace": n},
               "spec": {"clusterServiceVersionNames": [csv], "approval": "Manual", "approved": false}}),
    )
    .await;
    let steps: Vec<Value> = manifests
        .iter()
        .map(|(kind, group, manifest)| {
            json!({"resolving": csv, "status": "Unknown", "resource": {
                "sourceName": "c", "sourceNamespace": "olm", "group": group, "version": "v1", "kind": kind,
                "name": manifest["metadata"]["name"], "manifest": manifest.to_string()}})
        })
        .collect();
    set_status(
        &plans,
        "install-preview",
        json!({"phase": "RequiresApproval", "catalogSources": ["c"], "plan": steps}),
    )
    .await;

    let dry = olm(&cluster, &["approve", "install-preview", "-n", n, "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    let out = &dry.out;
    let row = |kind: &str, change: &str| {
        out.lines()
            .any(|l| l.trim_start().starts_with(kind) && l.split_whitespace().nth(3) == Some(change))
    };
    assert!(row("ConfigMap", "changed"), "{out}");
    assert!(row("ServiceAccount", "new"), "{out}");
    assert!(row("ClusterServiceVersion", "new"), "{out}");
    assert!(
        out.contains(r#"ConfigMap settings: data.mode: "fast" -> "safe""#),
        "the changed field, before and after: {out}"
    );
    assert!(
        !out.contains("data.kept"),
        "an unchanged field is not listed: {out}"
    );
    assert!(out.contains("RBAC granted (1 rules):"), "{out}");
    let grant = out
        .lines()
        .find(|l| l.contains("Role widget"))
        .unwrap_or_default();
    assert!(
        grant.contains(&format!("namespace {n}")) && grant.contains("secrets") && grant.ends_with("secrets"),
        "the Role's rule, flagged for secrets: {grant:?}"
    );
    assert!(out.contains("Images: registry.example.com/widget:2.0"), "{out}");
    assert!(
        out.contains(&format!(
            "CustomResourceDefinition {crd_name}: update refused: risk of data loss updating \"{crd_name}\""
        )),
        "the CRD verdict, before approval: {out}"
    );
    assert!(
        out.contains("Removed with widget.v1 once the upgrade is done (3):"),
        "what the upgrade removes: {out}"
    );
    for (kind, name, namespace) in [
        ("ClusterRole", old_cluster_role.as_str(), "(cluster)"),
        ("Deployment", "widget-metrics", n),
        ("Role", "widget.v1-metrics", n),
    ] {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == [kind, name, namespace]),
            "{kind} {name} listed as removed: {out}"
        );
    }
    assert!(
        !out.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Deployment", "widget", n]),
        "the Deployment the new CSV keeps is not removed: {out}"
    );
    // The same in JSON, and the dry run changed nothing.
    let json_out = olm(
        &cluster,
        &["approve", "install-preview", "-n", n, "--dry-run", "-o", "json"],
    );
    let shown: Value = serde_json::from_str(&json_out.out).unwrap();
    assert_eq!(shown["steps"][0]["change"], "changed");
    assert_eq!(shown["steps"][0]["fields"][0]["path"], "data.mode");
    assert_eq!(shown["grants"][0]["flags"], json!(["secrets"]));
    assert_eq!(shown["images"], json!(["registry.example.com/widget:2.0"]));
    assert_eq!(shown["replaces"], json!(["widget.v1"]));
    assert_eq!(
        shown["removals"][1],
        json!({"kind": "Deployment", "namespace": n, "name": "widget-metrics"})
    );
    // `plan show` (alias `plan diff`) prints the same preview and approves nothing.
    let shown = olm(&cluster, &["plan", "show", "install-preview", "-n", n]);
    assert_eq!(shown.code, 0, "{shown:?}");
    assert!(
        shown
            .out
            .contains(r#"ConfigMap settings: data.mode: "fast" -> "safe""#),
        "{shown:?}"
    );
    assert!(!shown.out.contains("approved"), "{shown:?}");
    let diffed = olm(
        &cluster,
        &["plan", "diff", "install-preview", "-n", n, "-o", "json"],
    );
    let diffed: Value = serde_json::from_str(&diffed.out).unwrap();
    assert_eq!(diffed["steps"][1]["change"], "new");
    let live = cms.get("settings").await.unwrap();
    assert_eq!(live.data.unwrap()["mode"], "fast", "a preview never writes");
    assert!(!plans.get("install-preview").await.unwrap().spec.approved);
    let _ = crds.delete(&crd_name, &DeleteParams::default()).await;
    let _ = cluster_roles
        .delete(&old_cluster_role, &DeleteParams::default())
        .await;
}

/// On a terminal `approve` asks before it approves: `n` leaves the plan unapproved (exit 1),
/// `y` approves it. The terminal is `script`'s pseudo-terminal (util-linux/bsdutils).
#[tokio::test]
async fn approve_on_a_terminal_asks_first() {
    let Some((cluster, ns)) = setup("cli-ask").await else {
        return;
    };
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` to give approve a terminal");
        return;
    }
    let n = ns.name();
    waiting_plan(&ns, "install-asked", "redis-operator.v0.1.0").await;
    let plans: Api<InstallPlan> = ns.api();
    let ask = |answer: &str| {
        let line = format!(
            "{} --kubeconfig {} approve install-asked -n {n}",
            env!("CARGO_BIN_EXE_kubectl-olm"),
            cluster.kubeconfig_path().display()
        );
        let mut child = Command::new("script")
            .args(["-q", "-e", "-c", &line, "/dev/null"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("script runs");
        {
            use std::io::Write as _;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin
                .write_all(format!("{answer}\n").as_bytes())
                .expect("answer written");
        }
        let out = child.wait_with_output().expect("script finishes");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = ask("n");
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("approve installplan.operators.coreos.com/install-asked? [y/N]"),
        "{out}"
    );
    assert!(out.contains("left unapproved"), "{out}");
    assert!(!plans.get("install-asked").await.unwrap().spec.approved);
    let (code, out) = ask("y");
    assert_eq!(code, Some(0), "{out}");
    assert!(plans.get("install-asked").await.unwrap().spec.approved, "{out}");
}

/// The Redis operator's CRD name (cluster-wide: the rollback test below owns it while it runs).
const REDIS_CRD: &str = "redisclusters.cache.example.com";

/// Deletes the Redis operator's CRD (and with it every RedisCluster) and waits until it is gone.
async fn delete_redis_crd(cluster: &TestCluster) {
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    let _ = crds.delete(REDIS_CRD, &DeleteParams::default()).await;
    wait_for(&format!("CRD {REDIS_CRD} to be deleted"), WAIT, || {
        let crds = crds.clone();
        async move { matches!(crds.get_opt(REDIS_CRD).await, Ok(None)).then_some(()) }
    })
    .await;
}

/// `kubectl olm rollback` from redis-operator 1.1.0 to 1.0.0 (the CSVs the Subscription's
/// `olm-rs.io/installed-csvs` history records), against the shipped bundles in the built-in
/// catalog: refused while a RedisCluster is written through `cache.example.com/v1alpha1` (the
/// version 1.1.0 adds and 1.0.0 does not serve), safe once it is gone, and then done: the
/// Subscription is made again at startingCSV 1.0.0 pinned there and the 1.1.0 CSV is deleted.
/// The controller is not running, so the state 1.1.0 left is made by hand: the CRD of the 1.1.0
/// bundle (its conversion webhook left out: no operator pod serves it on this cluster), the CSV
/// and the Subscription's status.
#[tokio::test]
async fn rollback_is_refused_while_objects_of_a_dropped_version_exist_and_done_once_they_are_gone() {
    let Some((cluster, ns)) = setup("cli-rollback").await else {
        return;
    };
    let n = ns.name();
    delete_redis_crd(&cluster).await;
    let path = format!(
        "{}/bundles/redis-operator/1.1.0/manifests/cache.example.com_redisclusters.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    cluster.kubectl_ok([
        "apply",
        "--server-side",
        "--field-manager",
        "olm-rs-tests",
        "-f",
        &path,
    ]);
    cluster.wait_crds_established(&[REDIS_CRD]);
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    crds.patch(
        REDIS_CRD,
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}})),
    )
    .await
    .expect("dropping the conversion webhook");
    let sources: Api<CatalogSource> = ns.api();
    create(
        &sources,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": "olm-rs-catalog", "namespace": n},
               "spec": {"sourceType": "builtin", "displayName": "olm-rs", "priority": 5}}),
    )
    .await;
    let subs: Api<Subscription> = ns.api();
    create(
        &subs,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": "redis", "namespace": n, "annotations": {
                   "olm-rs.io/installed-csvs": "redis-operator.v1.0.0,redis-operator.v1.1.0"}},
               "spec": {"source": "olm-rs-catalog", "sourceNamespace": n, "name": "redis-operator",
                        "channel": "alpha", "installPlanApproval": "Automatic"}}),
    )
    .await;
    set_status(
        &subs,
        "redis",
        json!({"installedCSV": "redis-operator.v1.1.0", "currentCSV": "redis-operator.v1.1.0",
               "state": "AtLatestKnown", "lastUpdated": now()}),
    )
    .await;
    csv(&ns, "redis-operator.v1.1.0", "1.1.0", "Succeeded", None).await;
    // A second catalog of the namespace whose content cannot be read: named, never skipped.
    create(
        &sources,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": "unreadable", "namespace": n},
               "spec": {"sourceType": "configmap", "configMap": "missing", "priority": 2}}),
    )
    .await;
    let unread = format!(
        "{n}/unreadable (priority 2): not read: failed to get configmap missing in namespace {n}: \
         configmaps \"missing\" not found (HTTP 404)"
    );
    let run = olm(&cluster, &["why", "redis", "-n", n]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.out.contains(&format!(
            "  other catalogs (dependencies may come from them):\n    {unread}"
        )),
        "{run:?}"
    );
    let clusters = Api::<DynamicObject>::namespaced_with(
        cluster.client(),
        n,
        &ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("cache.example.com", "v1alpha1", "RedisCluster"),
            "redisclusters",
        ),
    );
    create(
        &clusters,
        json!({"apiVersion": "cache.example.com/v1alpha1", "kind": "RedisCluster",
               "metadata": {"name": "cache", "namespace": n}, "spec": {"replicas": 1}}),
    )
    .await;

    // Refused while the RedisCluster exists, naming it, the version and the fix.
    let run = olm(&cluster, &["rollback", "redis", "-n", n, "--yes"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.err,
        format!(
            "error: rollback of subscription {n}/redis refused: redis-operator.v1.0.0 does not serve \
             cache.example.com/v1alpha1 of CRD redisclusters.cache.example.com, and 1 RedisCluster \
             object(s) are written through it (metadata.managedFields) ({n}/cache); whoever writes them \
             (kubectl apply, GitOps) could not any more: write them as another version, or delete them \
             first\n"
        )
    );
    assert!(subs.get_opt("redis").await.unwrap().is_some(), "nothing changed");

    // Gone: the dry run says what will happen and shows the plan of 1.0.0.
    clusters
        .delete("cache", &DeleteParams::default())
        .await
        .expect("deleting the RedisCluster");
    wait_for("the RedisCluster to be deleted", WAIT, || {
        let clusters = clusters.clone();
        async move { matches!(clusters.get_opt("cache").await, Ok(None)).then_some(()) }
    })
    .await;
    let run = olm(&cluster, &["rollback", "redis", "-n", n, "--dry-run"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.out.starts_with(&format!(
            "rollback of subscription {n}/redis: redis-operator.v1.1.0 -> redis-operator.v1.0.0\n  \
             then: delete subscription redis and csv redis-operator.v1.1.0 (custom resources and CRDs \
             stay), and subscribe again with startingCSV redis-operator.v1.0.0, pinned by \
             olm-rs.io/version-ceiling=1.0.0\n"
        )),
        "{run:?}"
    );
    assert!(
        run.out.contains("installplan rollback-preview in namespace")
            && run.out.contains("ClusterServiceVersions: redis-operator.v1.0.0"),
        "{run:?}"
    );
    assert!(
        run.out.ends_with("rollback is safe; nothing changed (dry run)\n"),
        "{run:?}"
    );
    assert!(
        subs.get("redis").await.unwrap().status.is_some(),
        "a dry run changes nothing"
    );
    assert!(
        run.out.contains("  not read (no dependency can come from it): "),
        "{run:?}"
    );

    // The earlier CSV left Replacing by the upgrade, and a ServiceAccount the installed CSV
    // owns: the rollback deletes them, so the preview says the plan creates them again.
    csv(&ns, "redis-operator.v1.0.0", "1.0.0", "Replacing", None).await;
    let csvs: Api<ClusterServiceVersion> = ns.api();
    let installed_uid = csvs
        .get("redis-operator.v1.1.0")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> = ns.api();
    create(
        &accounts,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "redis-operator", "namespace": n, "ownerReferences": [{
                   "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                   "name": "redis-operator.v1.1.0", "uid": installed_uid}]}}),
    )
    .await;
    let run = olm(&cluster, &["rollback", "redis", "-n", n, "--dry-run"]);
    assert_eq!(run.code, 0, "{run:?}");
    let row = |kind: &str, name: &str| {
        run.out
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([kind, name]))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
    };
    assert_eq!(
        row("ClusterServiceVersion", "redis-operator.v1.0.0"),
        Some(vec![
            "ClusterServiceVersion",
            "redis-operator.v1.0.0",
            "Unknown",
            "reinstalled"
        ]),
        "{run:?}"
    );
    assert_eq!(
        row("ServiceAccount", "redis-operator"),
        Some(vec!["ServiceAccount", "redis-operator", "Unknown", "reinstalled"]),
        "{run:?}"
    );
    assert!(
        run.out.contains(
            "    ClusterServiceVersion redis-operator.v1.0.0: the rollback deletes it; the plan \
             creates it again from its bundle\n"
        ) && run.out.contains(
            "    ServiceAccount redis-operator: deleted with csv redis-operator.v1.1.0 by the \
             rollback; the plan creates it again\n"
        ),
        "{run:?}"
    );

    // Done: the CSV gone, the Subscription again at 1.0.0, pinned there.
    let run = olm(
        &cluster,
        &["rollback", "redis", "-n", n, "--yes", "--timeout", "0s"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.out.ends_with(&format!(
            "subscription.operators.coreos.com/redis created again at startingCSV redis-operator.v1.0.0; \
             its InstallPlan is not there yet: approve it with `kubectl olm approve --subscription redis \
             -n {n}` when it is (a Manual Subscription's plan waits for it)\n"
        )),
        "{run:?}"
    );
    assert_eq!(
        crds.get(REDIS_CRD).await.unwrap().status.unwrap().stored_versions,
        Some(vec!["v1".to_owned()]),
        "v1alpha1 was never stored: nothing to trim"
    );
    assert!(csvs.get_opt("redis-operator.v1.1.0").await.unwrap().is_none());
    assert!(csvs.get_opt("redis-operator.v1.0.0").await.unwrap().is_none());
    let sub = subs.get("redis").await.unwrap();
    assert_eq!(sub.spec.starting_csv.as_deref(), Some("redis-operator.v1.0.0"));
    assert!(sub.status.is_none(), "a new Subscription");
    let annotations = sub.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get("olm-rs.io/version-ceiling").map(String::as_str),
        Some("1.0.0")
    );
    assert_eq!(
        annotations.get("olm-rs.io/installed-csvs").map(String::as_str),
        Some("redis-operator.v1.0.0,redis-operator.v1.1.0")
    );
    delete_redis_crd(&cluster).await;
}

/// Every verb reads as the user: run as `alice` (the test kubeconfig's admin impersonating a user
/// without any role), each verb fails with `you may not ...` naming the read and the permission
/// to ask for, never with a bare HTTP 403.
#[tokio::test]
async fn every_verb_run_by_a_user_without_rights_names_what_they_may_not_read() {
    let Some((cluster, ns)) = setup("cli-forbidden").await else {
        return;
    };
    let n = ns.name();
    let admin = std::fs::read_to_string(cluster.kubeconfig_path()).expect("reading the kubeconfig");
    assert!(admin.contains("\n  user:\n"), "{admin}");
    let alice = admin.replacen("\n  user:\n", "\n  user:\n    as: alice\n", 1);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("alice.kubeconfig");
    std::fs::write(&path, alice).expect("writing alice's kubeconfig");
    let as_alice = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
            .arg("--kubeconfig")
            .arg(&path)
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .expect("running kubectl-olm");
        Run {
            code: out.status.code().unwrap_or(-1),
            out: String::from_utf8_lossy(&out.stdout).into_owned(),
            err: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let ask = format!(
        "ask for \"list\" on subscriptions.operators.coreos.com in namespace {n} (a Role and \
         RoleBinding) for user alice, or use --context with a user that has it\n"
    );
    for args in [
        vec!["why", "redis"],
        vec!["rollback", "redis", "--dry-run"],
        vec!["list"],
        vec!["approve", "--subscription", "redis"],
        vec!["plan", "show", "--subscription", "redis"],
    ] {
        let mut full = args.clone();
        full.extend(["-n", n]);
        let run = as_alice(&full);
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert_eq!(
            run.err,
            format!("error: you may not list subscriptions in namespace {n}: {ask}"),
            "{args:?}"
        );
    }
    // A plan named directly: the read refused is the plan's.
    let run = as_alice(&["plan", "show", "install-x", "-n", n]);
    assert_eq!(
        run.err,
        format!(
            "error: you may not get installplan install-x in namespace {n}: ask for \"get\" on \
             installplans.operators.coreos.com in namespace {n} (a Role and RoleBinding) for user \
             alice, or use --context with a user that has it\n"
        ),
        "{run:?}"
    );
}
