//! End-to-end test of OperatorConditions on the local control plane (issue 12 item 6): every CSV
//! gets an OperatorCondition with a Role that lets the operator's ServiceAccount write it, and an
//! operator that says `Upgradeable=False` holds its upgrade until it, or an admin's override,
//! says `True`.
//!
//! As `tests/it/olm_e2e.rs`: the built `olm-controller run` is started as a child process for the
//! test (its log goes to `target/tmp/olm-oc-e2e-*.log`, tail printed on failure), in a fresh
//! namespace, with a file-based catalog served from a ConfigMap made from the widget fixture
//! in `tests/fixtures/e2e/`. Without a configured cluster the test skips (and fails under
//! `CI=true`), see `tests/it/support`.

use std::time::Duration;

use crate::support::{
    cluster::{TestCluster, TestNamespace, wait_for},
    e2e::{self, Controller, apply_catalog_config_map, catalog_json, fixture, tmp_path},
};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::Event,
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams, Patch, PatchParams},
};
use olm_rs::api::{
    v1::OperatorGroup,
    v1alpha1::{CatalogSource, ClusterServiceVersion, Subscription},
    v2::OperatorCondition,
};
use serde_json::{Value, json};

/// How long one wait may take (installs need several reconciles and a kwok rollout).
const WAIT: Duration = Duration::from_secs(120);

/// The cluster, the test's namespace and its controller (dropped first).
struct Env {
    _controller: Controller,
    ns: TestNamespace,
    cluster: TestCluster,
}

impl Env {
    async fn new(tag: &str) -> Option<Self> {
        let cluster = TestCluster::connect().await?;
        cluster.install_olm_crds("olm-rs-e2e");
        let ns = cluster.namespace(tag).await;
        let controller = Controller::start(
            cluster.kubeconfig_path(),
            tmp_path(&format!("olm-oc-e2e-{tag}-{}.log", ns.name())),
            Vec::new(),
            &[],
        );
        Some(Self {
            _controller: controller,
            ns,
            cluster,
        })
    }

    fn ns(&self) -> &str {
        self.ns.name()
    }

    async fn create<K: kube::Resource<DynamicType = ()>>(&self, body: Value) {
        e2e::create::<K>(self.cluster.client(), self.ns(), body).await;
    }

    async fn get<K: kube::Resource<DynamicType = ()>>(&self, name: &str) -> Option<Value> {
        e2e::get::<K>(self.cluster.client(), self.ns(), name).await
    }

    /// Waits until `check` returns `Some` for the object `name` of kind `K`.
    async fn wait_obj<K, T>(&self, what: &str, name: &str, check: impl Fn(&Value) -> Option<T>) -> T
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let label = format!("{what} ({} {}/{name})", K::kind(&()), self.ns());
        let (this, check) = (self, &check);
        wait_for(&label, WAIT, move || async move {
            let obj = this.get::<K>(name).await?;
            check(&obj)
        })
        .await
    }

    async fn wait_gone<K: kube::Resource<DynamicType = ()>>(&self, name: &str) {
        let what = format!("{} {}/{name} to be deleted", K::kind(&()), self.ns());
        wait_for(&what, WAIT, || async move {
            self.get::<K>(name).await.is_none().then_some(())
        })
        .await;
    }

    async fn wait_csv(&self, csv: &str, phase: &str, reason: &str) -> Value {
        self.wait_obj::<ClusterServiceVersion, _>(&format!("phase {phase} {reason}"), csv, |c| {
            (c.pointer("/status/phase") == Some(&json!(phase))
                && c.pointer("/status/reason") == Some(&json!(reason)))
            .then(|| c.clone())
        })
        .await
    }

    async fn apply_catalog(&self, bundles: &[(&str, Option<&str>)]) {
        let text = catalog_json(&widget_catalog(bundles));
        apply_catalog_config_map(&self.ns, "olm-rs-e2e", "e2e-catalog", &text).await;
    }

    /// Merge-patches the OperatorCondition `name` through `client` (`v2`).
    async fn patch_condition(&self, client: Client, name: &str, patch: Value) -> kube::Result<DynamicObject> {
        e2e::dynamic::<OperatorCondition>(client, self.ns())
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
    }
}

fn csv_name(version: &str) -> String {
    format!("widget-operator.v{version}")
}

/// The widget package with one channel `stable` of `(version, replaces)` bundles.
fn widget_catalog(bundles: &[(&str, Option<&str>)]) -> Vec<Value> {
    let package = "widget-operator";
    let crd = fixture("widget/crd.yaml");
    let template = fixture("widget/csv.yaml");
    let object = |v: &Value| {
        json!({"type": "olm.bundle.object", "value": {"data":
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, v.to_string())}})
    };
    let entries: Vec<Value> = bundles
        .iter()
        .map(|(version, replaces)| match replaces {
            Some(r) => json!({"name": csv_name(version), "replaces": csv_name(r)}),
            None => json!({"name": csv_name(version)}),
        })
        .collect();
    let mut blobs = vec![
        json!({"schema": "olm.package", "name": package, "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": package, "name": "stable", "entries": entries}),
    ];
    for (version, replaces) in bundles {
        let mut csv = template.clone();
        csv["metadata"]["name"] = json!(csv_name(version));
        csv["spec"]["version"] = json!(version);
        if let Some(r) = replaces {
            csv["spec"]["replaces"] = json!(csv_name(r));
        }
        blobs.push(json!({
            "schema": "olm.bundle", "name": csv_name(version), "package": package,
            "image": format!("registry.example.com/{package}-bundle:v{version}"),
            "properties": [
                {"type": "olm.package", "value": {"packageName": package, "version": version}},
                {"type": "olm.gvk", "value": {"group": crd["spec"]["group"],
                    "kind": crd["spec"]["names"]["kind"], "version": "v1"}},
                object(&csv),
                object(&crd),
            ],
        }));
    }
    blobs
}

fn upgradeable(status: &str, reason: &str, message: &str) -> Value {
    json!({"type": "Upgradeable", "status": status, "reason": reason, "message": message,
           "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

#[tokio::test]
async fn an_operator_condition_upgradeable_false_holds_the_upgrade_until_an_override_lets_it_proceed() {
    let Some(env) = Env::new("e2e-opcond").await else {
        return;
    };
    let (v1, v2) = (csv_name("1.0.0"), csv_name("1.1.0"));

    // Install 1.0.0.
    env.apply_catalog(&[("1.0.0", None)]).await;
    env.create::<CatalogSource>(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "e2e", "namespace": env.ns()},
        "spec": {"sourceType": "configmap", "configMap": "e2e-catalog", "displayName": "e2e"},
    }))
    .await;
    env.create::<OperatorGroup>(json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "og", "namespace": env.ns()},
        "spec": {"targetNamespaces": [env.ns()]},
    }))
    .await;
    env.create::<Subscription>(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "widget", "namespace": env.ns()},
        "spec": {"name": "widget-operator", "source": "e2e", "sourceNamespace": env.ns(),
                 "channel": "stable"},
    }))
    .await;
    let csv = env.wait_csv(&v1, "Succeeded", "InstallSucceeded").await;
    let csv_uid = csv.pointer("/metadata/uid").cloned().expect("a uid");

    // Its OperatorCondition: named like the CSV, controlled by it, with its Deployment and
    // ServiceAccounts (clusterPermissions, then permissions).
    let oc = env
        .wait_obj::<OperatorCondition, _>("created", &v1, |oc| Some(oc.clone()))
        .await;
    let owners = oc
        .pointer("/metadata/ownerReferences")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        owners,
        json!([{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                "name": v1, "uid": csv_uid, "controller": true, "blockOwnerDeletion": false}]),
        "{oc:#}"
    );
    assert_eq!(oc.pointer("/spec/deployments"), Some(&json!(["widget-operator"])));
    // Labelled as a component of the Operator widget-operator.<ns>, like the CSV's other objects.
    let component = format!("operators.coreos.com/widget-operator.{}", env.ns());
    assert!(
        oc.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .is_some_and(|l| l.contains_key(&component)),
        "{oc:#}"
    );
    assert_eq!(
        oc.pointer("/spec/serviceAccounts"),
        Some(&json!(["widget-operator", "widget-operator"]))
    );
    // The operator finds it through OPERATOR_CONDITION_NAME.
    let deployments: Api<Deployment> = env.ns.api();
    let deployment = deployments
        .get("widget-operator")
        .await
        .expect("the operator's Deployment");
    let env_vars = serde_json::to_value(&deployment.spec).expect("spec")["template"]["spec"]["containers"][0]
        ["env"]
        .clone();
    assert!(
        env_vars
            .as_array()
            .is_some_and(|e| e.contains(&json!({"name": "OPERATOR_CONDITION_NAME", "value": v1}))),
        "{env_vars}"
    );

    // The Role and RoleBinding letting the operator's ServiceAccount write its own condition.
    let roles: Api<Role> = env.ns.api();
    let bindings: Api<RoleBinding> = env.ns.api();
    let role = wait_for("the OperatorCondition's Role", WAIT, || {
        let roles = roles.clone();
        let v1 = v1.clone();
        async move { roles.get_opt(&v1).await.ok().flatten() }
    })
    .await;
    assert_eq!(
        serde_json::to_value(&role.rules).expect("rules"),
        json!([{"verbs": ["get", "update", "patch"], "apiGroups": ["operators.coreos.com"],
                "resources": ["operatorconditions"], "resourceNames": [v1]}])
    );
    assert_eq!(
        role.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("olm.managed"))
            .map(String::as_str),
        Some("true")
    );
    let binding = wait_for("the OperatorCondition's RoleBinding", WAIT, || {
        let bindings = bindings.clone();
        let v1 = v1.clone();
        async move { bindings.get_opt(&v1).await.ok().flatten() }
    })
    .await;
    assert_eq!(binding.role_ref.name, v1);
    assert!(
        binding
            .subjects
            .unwrap_or_default()
            .iter()
            .any(|s| s.kind == "ServiceAccount" && s.name == "widget-operator")
    );
    // Deleted by hand, the Role comes back (the controller re-applies only what changed
    // under it, so this is what proves it notices).
    let uid = role.metadata.uid.clone();
    roles
        .delete(&v1, &kube::api::DeleteParams::default())
        .await
        .expect("delete the Role");
    wait_for("the OperatorCondition's Role to come back", WAIT, || {
        let (roles, v1, uid) = (roles.clone(), v1.clone(), uid.clone());
        async move {
            roles
                .get_opt(&v1)
                .await
                .ok()
                .flatten()
                .filter(|r| r.metadata.uid != uid)
        }
    })
    .await;

    // The operator (as its ServiceAccount) says Upgradeable=False in spec.conditions, as
    // operator-lib's v2 API does; OLM copies it into the status at the object's generation.
    let operator = env.cluster.client_as_service_account(env.ns(), "widget-operator");
    let message = "a data migration is running";
    let written = wait_for("the operator's write allowed by its Role", WAIT, || {
        let (operator, v1) = (operator.clone(), v1.clone());
        let env = &env;
        async move {
            env.patch_condition(
                operator,
                &v1,
                json!({"spec": {"conditions": [upgradeable("False", "Migrating", message)]}}),
            )
            .await
            .ok()
        }
    })
    .await;
    let generation = written.metadata.generation.expect("a generation");
    env.wait_obj::<OperatorCondition, _>("status Upgradeable=False", &v1, |oc| {
        oc.pointer("/status/conditions")?
            .as_array()?
            .iter()
            .find(|c| {
                c["type"] == "Upgradeable" && c["status"] == "False" && c["observedGeneration"] == generation
            })
            .map(drop)
    })
    .await;
    // Its Role covers its own OperatorCondition only.
    let other = env
        .patch_condition(operator.clone(), "someone-else", json!({"spec": {}}))
        .await;
    assert!(
        matches!(&other, Err(kube::Error::Api(s)) if s.code == 403),
        "{other:?}"
    );

    // 1.1.0 appears: its CSV waits in Pending with the reason and the operator's message.
    env.apply_catalog(&[("1.0.0", None), ("1.1.0", Some("1.0.0"))])
        .await;
    let held = env
        .wait_csv(&v2, "Pending", "OperatorConditionNotUpgradeable")
        .await;
    let held_message = held
        .pointer("/status/message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        held_message.starts_with("operator is not upgradeable: ") && held_message.contains(message),
        "{held_message}"
    );
    // It stays held, and 1.0.0 keeps running.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let still = env.get::<ClusterServiceVersion>(&v2).await.expect("1.1.0");
    assert_eq!(still.pointer("/status/phase"), Some(&json!("Pending")));
    assert_eq!(
        still.pointer("/status/reason"),
        Some(&json!("OperatorConditionNotUpgradeable"))
    );
    assert!(env.get::<ClusterServiceVersion>(&v1).await.is_some());

    // An admin's override wins over what the operator says: the upgrade proceeds. An override
    // of another type changes nothing, as upstream, and a Warning Event says so.
    env.patch_condition(
        env.cluster.client(),
        &v1,
        json!({"spec": {"overrides": [
            upgradeable("True", "AdminOverride", "the migration is resumable"),
            {"type": "Degraded", "status": "False", "reason": "AdminOverride", "message": "ignore"}
        ]}}),
    )
    .await
    .expect("the admin's override");
    let warning = wait_for(
        "an IgnoredOverride Warning Event",
        Duration::from_secs(30),
        || async {
            let events: Api<Event> = Api::namespaced(env.cluster.client(), env.ns());
            events
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|e| {
                    e.involved_object.kind.as_deref() == Some("OperatorCondition")
                        && e.involved_object.name.as_deref() == Some(v1.as_str())
                        && e.reason.as_deref() == Some("IgnoredOverride")
                        && e.type_.as_deref() == Some("Warning")
                })
        },
    )
    .await;
    let note = warning.message.unwrap_or_default();
    assert!(
        note.contains("\"Degraded\"") && note.contains("no effect"),
        "{note}"
    );
    env.wait_csv(&v2, "Succeeded", "InstallSucceeded").await;
    env.wait_gone::<ClusterServiceVersion>(&v1).await;
    // 1.0.0's OperatorCondition went with its CSV (garbage collection); 1.1.0 has its own.
    env.wait_gone::<OperatorCondition>(&v1).await;
    env.wait_obj::<OperatorCondition, _>("created for 1.1.0", &v2, |oc| {
        (oc.pointer("/spec/deployments") == Some(&json!(["widget-operator"]))).then_some(())
    })
    .await;
}
