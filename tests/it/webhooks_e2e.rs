//! End-to-end tests of a CSV's `webhookdefinitions` on the local control plane (issue 12
//! item 2): `olm-controller run` as a child process installs the `hooked-operator` fixture
//! (`tests/fixtures/e2e/hooked/`: a validating, a mutating and a conversion webhook served by
//! one Deployment) from a ConfigMap catalog, and the tests check every object OLM makes for it
//! (Service, cert Secret and its RBAC, the certificate mounted into the pod template, both
//! webhook configurations with the CA bundle and upstream's labels, the CRD's conversion),
//! that the CSV is `Succeeded` only with all of them in place, that forcing a rotation
//! (`status.certsRotateAt` in the past) replaces the Secret and every CA bundle, that an
//! upgrade hands the webhooks to the new CSV, and that uninstalling removes them and strips
//! the conversion webhook from the CRD.
//!
//! kwok runs no pods, so nothing serves these webhooks (they are `failurePolicy: Ignore`);
//! the objects are checked, not the calls. Without a configured cluster the tests skip (and
//! fail under `CI=true`), see `crates/test-support/src/cluster.rs`.

use std::{path::PathBuf, sync::OnceLock, time::Duration};

use crate::support::{
    cluster::{TestCluster, TestNamespace, wait_for},
    e2e::{self, InNamespace, apply_catalog_config_map, catalog_json, fixture},
};
use base64::Engine as _;
use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        apps::v1::Deployment,
        core::v1::{Secret, Service},
        rbac::v1::{Role, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
};
use olm_rs::api::{
    v1::OperatorGroup,
    v1alpha1::{CatalogSource, ClusterServiceVersion, Subscription},
};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(120);
const PACKAGE: &str = "hooked-operator";
const CRD: &str = "hooks.e2e.olm-rs.io";
const DEPLOYMENT: &str = "hooked-operator";
const SERVICE: &str = "hooked-operator-service";
const SECRET: &str = "hooked-operator-service-cert";

/// Tests run one at a time: each has its own controller, which watches every namespace.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Env {
    _controller: e2e::Controller,
    ns: TestNamespace,
    cluster: TestCluster,
    _serial: tokio::sync::MutexGuard<'static, ()>,
}

async fn env(tag: &str) -> Option<Env> {
    let cluster = TestCluster::connect().await?;
    let serial = SERIAL.lock().await;
    static CRDS: OnceLock<()> = OnceLock::new();
    CRDS.get_or_init(|| cluster.install_olm_crds("olm-rs-e2e"));
    let ns = cluster.namespace(tag).await;
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("webhooks-e2e-{}.log", ns.name()));
    let controller = e2e::Controller::start(cluster.kubeconfig_path(), log, Vec::new(), &[]);
    // The CRD is cluster-scoped: a CSV of an earlier test, still being deleted with its
    // namespace, owns it too and would point its conversion at its own Service. Wait until
    // this controller has finished those (its finalizer strips the conversion).
    let csvs: Api<ClusterServiceVersion> = Api::all(cluster.client());
    let ours = ns.name().to_owned();
    wait_for("earlier tests' CSVs to be gone", WAIT, || {
        let (csvs, ours) = (csvs.clone(), ours.clone());
        async move {
            let list = csvs
                .list(&ListParams::default().labels("!olm.copiedFrom"))
                .await
                .ok()?;
            list.items
                .iter()
                .all(|c| {
                    c.metadata.namespace.as_deref() == Some(ours.as_str())
                        || !c
                            .metadata
                            .name
                            .as_deref()
                            .unwrap_or_default()
                            .starts_with(PACKAGE)
                })
                .then_some(())
        }
    })
    .await;
    Some(Env {
        _controller: controller,
        ns,
        cluster,
        _serial: serial,
    })
}

fn csv_name(version: &str) -> String {
    format!("{PACKAGE}.v{version}")
}

/// A catalog of `hooked-operator` with one channel of `versions`, each replacing the one before.
fn catalog(versions: &[&str]) -> Vec<Value> {
    catalog_with(versions, |_| {})
}

/// [`catalog`] with every CSV changed by `edit`.
fn catalog_with(versions: &[&str], edit: impl Fn(&mut Value)) -> Vec<Value> {
    let crd = fixture("hooked/crd.yaml");
    let mut template = fixture("hooked/csv.yaml");
    edit(&mut template);
    let object = |v: &Value| {
        json!({"type": "olm.bundle.object", "value": {
            "data": base64::engine::general_purpose::STANDARD.encode(v.to_string())}})
    };
    let mut entries = Vec::new();
    let mut blobs = vec![json!({"schema": "olm.package", "name": PACKAGE, "defaultChannel": "stable"})];
    for (i, version) in versions.iter().enumerate() {
        let mut csv = template.clone();
        csv["metadata"]["name"] = json!(csv_name(version));
        csv["spec"]["version"] = json!(version);
        let mut entry = json!({"name": csv_name(version)});
        if i > 0 {
            csv["spec"]["replaces"] = json!(csv_name(versions[i - 1]));
            entry["replaces"] = json!(csv_name(versions[i - 1]));
        }
        entries.push(entry);
        blobs.push(json!({
            "schema": "olm.bundle", "name": csv_name(version), "package": PACKAGE,
            "image": format!("registry.example.com/{PACKAGE}-bundle:v{version}"),
            "properties": [
                {"type": "olm.package", "value": {"packageName": PACKAGE, "version": version}},
                {"type": "olm.gvk", "value": {"group": "e2e.olm-rs.io", "kind": "Hook", "version": "v1"}},
                object(&csv),
                object(&crd),
            ],
        }));
    }
    blobs.push(json!({"schema": "olm.channel", "package": PACKAGE, "name": "stable", "entries": entries}));
    blobs
}

impl InNamespace for Env {
    fn parts(&self) -> (&TestCluster, &TestNamespace) {
        (&self.cluster, &self.ns)
    }
}

impl Env {
    /// Serves `versions` from a ConfigMap catalog, with an AllNamespaces OperatorGroup.
    async fn serve(&self, versions: &[&str]) {
        self.serve_blobs(&catalog(versions)).await;
    }

    async fn serve_blobs(&self, blobs: &[Value]) {
        apply_catalog_config_map(&self.ns, "olm-rs-e2e", "hooked-catalog", &catalog_json(blobs)).await;
    }

    async fn start(&self, versions: &[&str]) {
        self.start_blobs(&catalog(versions)).await;
    }

    async fn start_blobs(&self, blobs: &[Value]) {
        self.serve_blobs(blobs).await;
        self.create::<CatalogSource>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "hooked", "namespace": self.ns()},
            "spec": {"sourceType": "configmap", "configMap": "hooked-catalog", "displayName": "e2e"},
        }))
        .await;
        self.create::<OperatorGroup>(json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "global", "namespace": self.ns()},
            "spec": {},
        }))
        .await;
        self.wait::<CatalogSource, _>("catalog READY", "hooked", |cs| {
            (cs.pointer("/status/connectionState/lastObservedState") == Some(&json!("READY"))).then_some(())
        })
        .await;
        self.create::<Subscription>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": PACKAGE, "namespace": self.ns()},
            "spec": {"name": PACKAGE, "source": "hooked", "sourceNamespace": self.ns(),
                     "installPlanApproval": "Automatic"},
        }))
        .await;
    }

    async fn wait<K, T>(&self, what: &str, name: &str, check: impl Fn(&Value) -> Option<T>) -> T
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let label = format!("{what} ({} {}/{name})", K::kind(&()), self.ns());
        let check = &check;
        wait_for(
            &label,
            WAIT,
            move || async move { check(&self.get::<K>(name).await?) },
        )
        .await
    }

    async fn wait_csv_phase(&self, csv: &str, phase: &str) -> Value {
        self.wait::<ClusterServiceVersion, _>(&format!("phase {phase}"), csv, |c| {
            (c.pointer("/status/phase") == Some(&json!(phase))).then(|| c.clone())
        })
        .await
    }

    async fn secret(&self) -> Secret {
        let api: Api<Secret> = self.ns.api();
        api.get(SECRET).await.expect("the cert Secret")
    }

    /// The configuration of kind `K` labelled for `csv` and description `generate_name`.
    async fn config<K>(&self, csv: &str, generate_name: &str) -> Vec<K>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::all(self.client());
        let selector = format!(
            "olm.owner={csv},olm.owner.namespace={},olm.owner.kind=ClusterServiceVersion,olm.webhook-description-generate-name={generate_name}",
            self.ns()
        );
        api.list(&ListParams::default().labels(&selector))
            .await
            .expect("listing webhook configurations")
            .items
    }

    async fn crd(&self) -> CustomResourceDefinition {
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        api.get(CRD).await.expect("the CRD")
    }
}

/// Everything the webhooks of `csv` need is in place, with the CA of the cert Secret; returns
/// that CA.
async fn assert_webhook_objects(env: &Env, csv: &str) -> Vec<u8> {
    let ns = env.ns();
    let secret = env.secret().await;
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.clone().unwrap_or_default();
    for key in ["tls.crt", "tls.key", "olmCAKey"] {
        assert!(data.contains_key(key), "Secret {SECRET} lacks {key}");
    }
    let ca = e2e::webhook_ca(&secret);
    let ca_hash = secret
        .annotations()
        .get("olmcahash")
        .cloned()
        .expect("olmcahash on the Secret");
    assert!(
        secret.owner_references().iter().any(|o| o.name == csv),
        "the Secret is owned by {csv}"
    );

    let services: Api<Service> = env.ns.api();
    let service = services.get(SERVICE).await.expect("the webhook Service");
    let spec = service.spec.clone().unwrap_or_default();
    assert_eq!(
        spec.selector.unwrap_or_default().get("app").map(String::as_str),
        Some("hooked-operator")
    );
    let ports = spec.ports.unwrap_or_default();
    assert_eq!(ports.len(), 1, "one distinct port: {ports:?}");
    assert_eq!(ports[0].port, 443);
    assert_eq!(
        ports[0].target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(
            9443
        ))
    );

    let roles: Api<Role> = env.ns.api();
    let role = roles.get(SECRET).await.expect("the Secret's Role");
    let rule = &role.rules.unwrap_or_default()[0];
    assert_eq!(rule.resource_names.as_deref(), Some(&[SECRET.to_owned()][..]));
    let bindings: Api<RoleBinding> = env.ns.api();
    let binding = bindings.get(SECRET).await.expect("the Secret's RoleBinding");
    assert_eq!(binding.subjects.unwrap_or_default()[0].name, "hooked-operator");

    let deployments: Api<Deployment> = env.ns.api();
    let deployment = deployments.get(DEPLOYMENT).await.expect("the Deployment");
    let template = deployment.spec.template.clone();
    assert_eq!(
        template
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get("olmcahash")),
        Some(&ca_hash),
        "the pod template carries the CA hash"
    );
    let pod = template.spec.unwrap_or_default();
    let volumes = pod.volumes.unwrap_or_default();
    for volume in ["apiservice-cert", "webhook-cert"] {
        let v = volumes
            .iter()
            .find(|v| v.name == volume)
            .unwrap_or_else(|| panic!("volume {volume}"));
        assert_eq!(
            v.secret.as_ref().and_then(|s| s.secret_name.as_deref()),
            Some(SECRET)
        );
    }
    let mounts = pod.containers[0].volume_mounts.clone().unwrap_or_default();
    for (volume, path) in [
        ("apiservice-cert", "/apiserver.local.config/certificates"),
        ("webhook-cert", "/tmp/k8s-webhook-server/serving-certs"),
    ] {
        assert!(
            mounts.iter().any(|m| m.name == volume && m.mount_path == path),
            "{volume} mounted at {path}: {mounts:?}"
        );
    }

    let validating = env
        .config::<ValidatingWebhookConfiguration>(csv, "vhook.e2e.olm-rs.io")
        .await;
    assert_eq!(validating.len(), 1, "one validating configuration");
    assert!(validating[0].name_any().starts_with("vhook.e2e.olm-rs.io-"));
    let hook = &validating[0].webhooks.clone().unwrap_or_default()[0];
    assert_eq!(hook.name, "vhook.e2e.olm-rs.io");
    assert_eq!(
        hook.client_config.ca_bundle.as_ref().map(|b| b.0.clone()),
        Some(ca.clone())
    );
    let svc = hook.client_config.service.clone().expect("a service reference");
    assert_eq!(
        (
            svc.name.as_str(),
            svc.namespace.as_str(),
            svc.path.as_deref(),
            svc.port
        ),
        (SERVICE, ns, Some("/validate-hook"), Some(443))
    );
    // AllNamespaces group: no namespaceSelector beyond the API server's default (match all).
    assert!(
        hook.namespace_selector
            .as_ref()
            .is_none_or(|s| s.match_labels.is_none() && s.match_expressions.is_none())
    );

    let mutating = env
        .config::<MutatingWebhookConfiguration>(csv, "mhook.e2e.olm-rs.io")
        .await;
    assert_eq!(mutating.len(), 1, "one mutating configuration");
    let hook = &mutating[0].webhooks.clone().unwrap_or_default()[0];
    assert_eq!(
        hook.client_config.ca_bundle.as_ref().map(|b| b.0.clone()),
        Some(ca.clone())
    );

    let crd = env.crd().await;
    let conversion = crd.spec.conversion.expect("spec.conversion");
    assert_eq!(conversion.strategy, "Webhook");
    let webhook = conversion.webhook.expect("conversion webhook");
    assert_eq!(webhook.conversion_review_versions, ["v1"]);
    let client = webhook.client_config.expect("client config");
    assert_eq!(client.ca_bundle.map(|b| b.0), Some(ca.clone()));
    let svc = client.service.expect("service");
    assert_eq!(
        (
            svc.name.as_str(),
            svc.namespace.as_str(),
            svc.path.as_deref(),
            svc.port
        ),
        (SERVICE, ns, Some("/convert"), Some(443))
    );
    ca
}

#[tokio::test]
async fn webhooks_install_with_their_certificates_rotate_and_are_removed_on_uninstall() {
    let Some(env) = env("webhooks").await else {
        return;
    };
    let csv = csv_name("0.1.0");
    env.start(&["0.1.0"]).await;
    let succeeded = env.wait_csv_phase(&csv, "Succeeded").await;
    // Succeeded only with every webhook object in place.
    let ca = assert_webhook_objects(&env, &csv).await;
    let rotate_at = succeeded
        .pointer("/status/certsRotateAt")
        .and_then(Value::as_str)
        .expect("certsRotateAt")
        .to_owned();
    assert!(
        succeeded.pointer("/status/certsLastUpdated").is_some(),
        "certsLastUpdated"
    );
    let at = |pointer: &str| -> k8s_openapi::jiff::Timestamp {
        succeeded
            .pointer(pointer)
            .and_then(Value::as_str)
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{pointer} is a time"))
    };
    let valid_for = at("/status/certsRotateAt").as_second() - at("/status/certsLastUpdated").as_second();
    // 730 days of validity less one day of freshness (a minute of slack for the clock).
    assert!(
        (valid_for - 729 * 24 * 3600).abs() < 120,
        "certsRotateAt {rotate_at} is not 729 days after certsLastUpdated"
    );

    // Rotation, forced: certsRotateAt in the past.
    let csvs = env.dynamic::<ClusterServiceVersion>();
    csvs.patch_status(
        &csv,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"certsRotateAt": "2020-01-01T00:00:00Z"}})),
    )
    .await
    .expect("moving certsRotateAt to the past");
    let api: Api<Secret> = env.ns.api();
    wait_for("a new CA in the cert Secret", WAIT, || {
        let api = api.clone();
        let old = ca.clone();
        async move {
            let s = api.get_opt(SECRET).await.ok().flatten()?;
            (e2e::webhook_ca(&s) != old && !e2e::webhook_ca(&s).is_empty()).then_some(())
        }
    })
    .await;
    let rotated = env
        .wait::<ClusterServiceVersion, _>("Succeeded after rotation", &csv, |c| {
            (c.pointer("/status/phase") == Some(&json!("Succeeded"))
                && c.pointer("/status/certsRotateAt").and_then(Value::as_str) > Some("2025"))
            .then(|| c.clone())
        })
        .await;
    assert_ne!(rotated["status"]["certsRotateAt"], json!("2020-01-01T00:00:00Z"));
    let new_ca = assert_webhook_objects(&env, &csv).await;
    assert_ne!(new_ca, ca, "every CA bundle follows the new Secret");

    // Uninstall: the configurations go and the CRD's conversion is stripped.
    env.dynamic::<Subscription>()
        .delete(PACKAGE, &DeleteParams::default())
        .await
        .expect("deleting the Subscription");
    csvs.delete(&csv, &DeleteParams::default())
        .await
        .expect("deleting the CSV");
    wait_for("the CSV to be deleted", WAIT, || {
        let csvs = csvs.clone();
        let csv = csv.clone();
        async move { matches!(csvs.get_opt(&csv).await, Ok(None)).then_some(()) }
    })
    .await;
    assert!(
        env.config::<ValidatingWebhookConfiguration>(&csv, "vhook.e2e.olm-rs.io")
            .await
            .is_empty()
    );
    assert!(
        env.config::<MutatingWebhookConfiguration>(&csv, "mhook.e2e.olm-rs.io")
            .await
            .is_empty()
    );
    let conversion = env.crd().await.spec.conversion;
    assert!(
        conversion
            .as_ref()
            .is_none_or(|c| c.strategy == "None" && c.webhook.is_none()),
        "conversion webhook stripped: {conversion:?}"
    );
}

#[tokio::test]
async fn an_upgrade_hands_the_webhooks_to_the_new_csv() {
    let Some(env) = env("webhooks-upgrade").await else {
        return;
    };
    let (old, new) = (csv_name("0.1.0"), csv_name("0.2.0"));
    env.start(&["0.1.0"]).await;
    env.wait_csv_phase(&old, "Succeeded").await;
    let names: Vec<String> = env
        .config::<ValidatingWebhookConfiguration>(&old, "vhook.e2e.olm-rs.io")
        .await
        .iter()
        .map(ResourceExt::name_any)
        .collect();

    env.serve(&["0.1.0", "0.2.0"]).await;
    env.wait_csv_phase(&new, "Succeeded").await;
    assert_webhook_objects(&env, &new).await;
    let csvs = env.dynamic::<ClusterServiceVersion>();
    wait_for("the old CSV to be deleted", WAIT, || {
        let csvs = csvs.clone();
        let old = old.clone();
        async move { matches!(csvs.get_opt(&old).await, Ok(None)).then_some(()) }
    })
    .await;
    // Same configurations, now the new CSV's; the replaced CSV's deletion kept the conversion.
    let taken: Vec<String> = env
        .config::<ValidatingWebhookConfiguration>(&new, "vhook.e2e.olm-rs.io")
        .await
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(taken, names);
    assert!(
        env.config::<ValidatingWebhookConfiguration>(&old, "vhook.e2e.olm-rs.io")
            .await
            .is_empty()
    );
    assert_eq!(
        env.crd().await.spec.conversion.map(|c| c.strategy).as_deref(),
        Some("Webhook")
    );
    assert_webhook_objects(&env, &new).await;
}

/// Deletes an APIService when the test ends, passed or not: an APIService whose backend does
/// not answer breaks discovery for the whole cluster (and with it namespace deletion).
struct ApiServiceGuard<'a> {
    cluster: &'a TestCluster,
    name: &'static str,
}

impl Drop for ApiServiceGuard<'_> {
    fn drop(&mut self) {
        let _ = self.cluster.kubectl([
            "delete",
            "apiservice",
            self.name,
            "--ignore-not-found",
            "--wait=false",
        ]);
    }
}

const API_SERVICE: &str = "v1alpha1.metrics.e2e.olm-rs.io";

#[tokio::test]
async fn an_owned_api_service_gets_the_ca_bundle_is_waited_on_and_goes_with_the_csv() {
    let Some(env) = env("apiservice").await else {
        return;
    };
    let _guard = ApiServiceGuard {
        cluster: &env.cluster,
        name: API_SERVICE,
    };
    let csv = csv_name("0.1.0");
    env.start_blobs(&catalog_with(&["0.1.0"], |c| {
        if let Some(spec) = c["spec"].as_object_mut() {
            spec.remove("webhookdefinitions");
        }
        c["spec"]["apiservicedefinitions"] = json!({"owned": [{
            "name": "metrics", "group": "metrics.e2e.olm-rs.io", "version": "v1alpha1",
            "kind": "Metric", "displayName": "Metric", "description": "A metric.",
            "deploymentName": DEPLOYMENT, "containerPort": 6443,
        }]});
    }))
    .await;
    let resource = ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
    ));
    let apis: Api<DynamicObject> = Api::all_with(env.client(), &resource);
    let api_service = wait_for("the owned APIService", WAIT, || {
        let apis = apis.clone();
        async move { apis.get_opt(API_SERVICE).await.ok().flatten() }
    })
    .await;
    let labels = api_service.labels();
    assert_eq!(labels.get("olm.owner"), Some(&csv));
    assert_eq!(
        labels.get("olm.owner.namespace").map(String::as_str),
        Some(env.ns())
    );
    let spec = &api_service.data["spec"];
    assert_eq!(
        spec["service"],
        json!({"namespace": env.ns(), "name": SERVICE, "port": 6443})
    );
    assert_eq!(
        (spec["group"].clone(), spec["version"].clone()),
        (json!("metrics.e2e.olm-rs.io"), json!("v1alpha1"))
    );
    let ca = e2e::webhook_ca(&env.secret().await);
    assert_eq!(
        spec["caBundle"],
        json!(base64::engine::general_purpose::STANDARD.encode(&ca))
    );
    // Nothing serves it on kwok: the CSV waits for it, never Succeeded.
    let waiting = env
        .wait::<ClusterServiceVersion, _>("waiting for the APIService", &csv, |c| {
            c.pointer("/status/message")
                .and_then(Value::as_str)
                .is_some_and(|m| m.contains(&format!("APIService {API_SERVICE} is not available")))
                .then(|| c.clone())
        })
        .await;
    assert_eq!(waiting["status"]["phase"], "Installing");

    env.dynamic::<Subscription>()
        .delete(PACKAGE, &DeleteParams::default())
        .await
        .expect("deleting the Subscription");
    let csvs = env.dynamic::<ClusterServiceVersion>();
    csvs.delete(&csv, &DeleteParams::default())
        .await
        .expect("deleting the CSV");
    wait_for("the APIService to go with its CSV", WAIT, || {
        let apis = apis.clone();
        async move { matches!(apis.get_opt(API_SERVICE).await, Ok(None)).then_some(()) }
    })
    .await;
}

/// Issue 27: the webhook Service, the cert Secret and a webhook configuration, each deleted by
/// hand, are back within 30 s with the CSV `Succeeded` again, and every webhook object is in
/// place afterwards (the Secret's loss is a certificate rotation, as upstream's
/// `ShouldRotateCerts` makes it).
#[tokio::test]
async fn a_deleted_webhook_service_or_cert_secret_is_back_within_30_seconds() {
    let Some(env) = env("webhooks-heal").await else {
        return;
    };
    let csv = csv_name("0.1.0");
    env.start(&["0.1.0"]).await;
    env.wait_csv_phase(&csv, "Succeeded").await;
    assert_webhook_objects(&env, &csv).await;
    for (kind, name) in [("Service", SERVICE), ("Secret", SECRET)] {
        let took = match kind {
            "Service" => {
                e2e::delete_and_wait_healed::<Service>(
                    env.client(),
                    Some(env.ns()),
                    name,
                    env.ns(),
                    &csv,
                    Duration::from_secs(30),
                )
                .await
            }
            _ => {
                e2e::delete_and_wait_healed::<Secret>(
                    env.client(),
                    Some(env.ns()),
                    name,
                    env.ns(),
                    &csv,
                    Duration::from_secs(30),
                )
                .await
            }
        };
        eprintln!("{kind} {name} healed in {took:?}");
        assert_webhook_objects(&env, &csv).await;
    }
    // The webhook configuration (cluster-scoped, labelled with its CSV): applied again.
    let validating = env
        .config::<ValidatingWebhookConfiguration>(&csv, "vhook.e2e.olm-rs.io")
        .await;
    let name = validating
        .first()
        .expect("the validating configuration")
        .name_any();
    let took = e2e::delete_and_wait_healed::<ValidatingWebhookConfiguration>(
        env.client(),
        None,
        &name,
        env.ns(),
        &csv,
        Duration::from_secs(30),
    )
    .await;
    eprintln!("ValidatingWebhookConfiguration {name} healed in {took:?}");
    assert_webhook_objects(&env, &csv).await;
}
