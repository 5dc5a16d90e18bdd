//! The Redis operator's webhooks, installed by olm-rs and really called by the API server (issue
//! 12 item 8). `olm-controller run` installs `redis-operator.v1.1.0` from the shipped catalog
//! (`catalog/redis-operator/catalog.yaml`, channel `alpha`, served from a ConfigMap, with the
//! 1.2.0 entry left out so that the Automatic Subscription stays on 1.1.0) into an
//! AllNamespaces OperatorGroup. OLM makes the serving certificate, the Service, the
//! ValidatingWebhookConfiguration and the CRD's conversion webhook; kwok marks the operator's
//! pod Running, and the test makes its IP real with a [`PodNetwork`] running the built
//! `redis-operator webhooks` (the webhook server alone: the API server listens on the host's
//! loopback, which the pod network cannot reach) with the certificate read from OLM's Secret.
//!
//! Then, through API server → Service → endpoints → pod IP → the operator binary:
//! 1. a `v1alpha1` RedisCluster is admitted, stored as `v1` and read back in both versions with
//!    the converted fields (the conversion webhook);
//! 2. a RedisCluster with a bad cluster-mode size, and one with a refused `redisConfig`
//!    directive, are denied with the webhook's message naming the field (the validating
//!    webhook);
//! 3. a forced rotation (`status.certsRotateAt` in the past) replaces the Secret and every CA
//!    bundle; the binary serves the new certificate (reloaded from its files, or restarted on
//!    the new pod's IP when the rollout moved the pod), and both webhooks keep working;
//! 4. uninstalling (Subscription and CSV deleted) removes the webhook configuration and sets the
//!    CRD's conversion back to `None`.
//!
//! Needs root (the pod network) and the local cluster; without them it skips with the reason
//! (and fails under `CI=true`). Logs: `$CARGO_TARGET_TMPDIR/redis-webhooks-*.log`.

use std::{
    net::{IpAddr, SocketAddr, TcpStream},
    path::{Path, PathBuf},
    time::Duration,
};

use crate::support::{
    LoggedChild,
    cluster::{TestCluster, TestNamespace, repo_root, wait_for},
    e2e,
    pod_net::{self, PodNetwork},
};
use k8s_openapi::{
    api::{admissionregistration::v1::ValidatingWebhookConfiguration, core::v1::Pod, core::v1::Secret},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, ResourceExt,
    api::{
        ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
        PostParams,
    },
};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(180);
const PACKAGE: &str = "redis-operator";
const CSV: &str = "redis-operator.v1.1.0";
const CRD: &str = "redisclusters.cache.example.com";
const SERVICE: &str = "redis-operator-service";
const SECRET: &str = "redis-operator-service-cert";
const POD_SELECTOR: &str = "app.kubernetes.io/name=redis-operator";
const WEBHOOK_PORT: u16 = 9443;

/// The operator binary: `$REDIS_OPERATOR_BIN` when set, else the workspace's build.
fn operator_bin() -> PathBuf {
    std::env::var_os("REDIS_OPERATOR_BIN")
        .filter(|v| !v.is_empty())
        .map_or_else(|| crate::support::workspace_bin("redis-operator"), PathBuf::from)
}

fn log_path(what: &str, ns: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("redis-webhooks-{what}-{ns}.log"))
}

/// The shipped catalog as FBC JSON lines, without `redis-operator.v1.2.0` (its bundle and its
/// `alpha` entry), so that `alpha`'s head is 1.1.0: the release that serves `v1alpha1`.
fn catalog_without_1_2_0() -> String {
    let path = repo_root().join("catalog/redis-operator/catalog.yaml");
    let text = std::fs::read_to_string(&path).expect("reading the shipped catalog");
    let decoded = olm_rs::codec::decode_documents(&path.display().to_string(), &text);
    assert!(decoded.error.is_none(), "{}: {:?}", path.display(), decoded.error);
    let head = "redis-operator.v1.2.0";
    let mut lines = Vec::new();
    for doc in decoded.documents {
        let mut blob = doc.value;
        if blob["schema"] == "olm.bundle" && blob["name"] == head {
            continue;
        }
        if blob["schema"] == "olm.channel"
            && let Some(entries) = blob["entries"].as_array_mut()
        {
            entries.retain(|e| e["name"] != head);
        }
        lines.push(blob.to_string());
    }
    lines.join("\n")
}

/// Undoes what a failed run would leave for the next one (a `failurePolicy: Fail` webhook and a
/// CRD converting through a gone server), even on panic. Idempotent after a clean uninstall.
struct Cleanup<'a> {
    cluster: &'a TestCluster,
    ns: String,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let selector = format!("olm.owner.namespace={}", self.ns);
        let _ = self.cluster.kubectl([
            "delete",
            "validatingwebhookconfiguration,mutatingwebhookconfiguration",
            "-l",
            &selector,
            "--ignore-not-found",
            "--wait=false",
        ]);
        let out = self.cluster.kubectl([
            "get",
            "crd",
            CRD,
            "-o",
            "jsonpath={.spec.conversion.webhook.clientConfig.service.namespace}",
        ]);
        if String::from_utf8_lossy(&out.stdout).trim() == self.ns {
            let _ = self.cluster.kubectl([
                "patch",
                "crd",
                CRD,
                "--type=merge",
                "-p",
                r#"{"spec":{"conversion":{"strategy":"None","webhook":null}}}"#,
            ]);
        }
    }
}

/// The operator's webhook server running inside the pod network of the operator's pod.
struct Served {
    // Field order: the process goes before its network.
    _process: LoggedChild,
    net: PodNetwork,
}

/// Makes `ip` real and starts `redis-operator webhooks` there with the pair in `certs`.
async fn serve_on(ip: IpAddr, certs: &Path, log: PathBuf) -> Served {
    let net = wait_for(&format!("a pod network for {ip}"), WAIT, || async move {
        match PodNetwork::create(ip) {
            Ok(net) => Some(net),
            // Another cluster's test run on this host may hold the same kwok IP for a while.
            Err(e) if e.to_string().contains("another pod network holds this IP") => {
                eprintln!("waiting: {e}");
                None
            }
            Err(e) => panic!("making the pod network for {ip}: {e}"),
        }
    })
    .await;
    let process = LoggedChild::spawn(
        net.command(operator_bin())
            .arg("webhooks")
            .arg("--webhook-addr")
            .arg(format!("{ip}:{WEBHOOK_PORT}"))
            .arg("--tls-cert-file")
            .arg(certs.join("tls.crt"))
            .arg("--tls-key-file")
            .arg(certs.join("tls.key")),
        log,
    );
    let addr = SocketAddr::new(ip, WEBHOOK_PORT);
    wait_for(&format!("the webhook server on {addr}"), WAIT, || async move {
        TcpStream::connect_timeout(&addr, Duration::from_secs(1))
            .ok()
            .map(|_| ())
    })
    .await;
    Served {
        _process: process,
        net,
    }
}

/// Writes the Secret's `tls.key` then `tls.crt` into `dir` (the server reloads when the
/// certificate's modification time changes: the key must be in place first).
fn write_certs(secret: &Secret, dir: &Path) {
    let data = secret.data.clone().unwrap_or_default();
    for key in ["tls.key", "tls.crt"] {
        let bytes = &data
            .get(key)
            .unwrap_or_else(|| panic!("Secret {SECRET} lacks {key}"))
            .0;
        let tmp = dir.join(format!(".{key}.tmp"));
        std::fs::write(&tmp, bytes).expect("writing the certificate");
        std::fs::rename(&tmp, dir.join(key)).expect("moving the certificate in place");
    }
}

struct Env<'a> {
    cluster: &'a TestCluster,
    ns: &'a TestNamespace,
}

impl Env<'_> {
    fn ns(&self) -> &str {
        self.ns.name()
    }

    fn redis(&self, version: &str) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("cache.example.com", version, "RedisCluster");
        Api::namespaced_with(
            self.cluster.client(),
            self.ns(),
            &ApiResource::from_gvk_with_plural(&gvk, "redisclusters"),
        )
    }

    fn dynamic(&self, group: &str, version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk(group, version, kind);
        Api::namespaced_with(
            self.cluster.client(),
            self.ns(),
            &ApiResource::from_gvk_with_plural(&gvk, plural),
        )
    }

    fn csvs(&self) -> Api<DynamicObject> {
        self.dynamic(
            "operators.coreos.com",
            "v1alpha1",
            "ClusterServiceVersion",
            "clusterserviceversions",
        )
    }

    async fn apply(&self, group: &str, version: &str, kind: &str, plural: &str, body: Value) {
        let name = body["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        let api = self.dynamic(group, version, kind, plural);
        api.patch(
            &name,
            &PatchParams::apply("redis-webhooks-e2e").force(),
            &Patch::Apply(&body),
        )
        .await
        .unwrap_or_else(|e| panic!("applying {kind} {name}: {e}"));
    }

    async fn secret(&self) -> Secret {
        let api: Api<Secret> = self.ns.api();
        api.get(SECRET).await.expect("the cert Secret")
    }

    async fn validating(&self) -> Vec<ValidatingWebhookConfiguration> {
        let api: Api<ValidatingWebhookConfiguration> = Api::all(self.cluster.client());
        let selector = format!("olm.owner={CSV},olm.owner.namespace={}", self.ns());
        api.list(&ListParams::default().labels(&selector))
            .await
            .expect("listing validating webhook configurations")
            .items
    }

    async fn crd(&self) -> CustomResourceDefinition {
        let api: Api<CustomResourceDefinition> = Api::all(self.cluster.client());
        api.get(CRD).await.expect("the RedisCluster CRD")
    }

    /// Every CA bundle OLM wrote (the validating webhook's, the CRD conversion's) is `ca`.
    async fn ca_bundles_are(&self, ca: &[u8]) -> bool {
        let vwcs = self.validating().await;
        let hooks_ok = !vwcs.is_empty()
            && vwcs.iter().all(|c| {
                c.webhooks
                    .iter()
                    .flatten()
                    .all(|w| w.client_config.ca_bundle.as_ref().map(|b| b.0.as_slice()) == Some(ca))
            });
        let crd = self.crd().await;
        let conversion_ok = crd
            .spec
            .conversion
            .as_ref()
            .and_then(|c| c.webhook.as_ref())
            .and_then(|w| w.client_config.as_ref())
            .and_then(|c| c.ca_bundle.as_ref())
            .is_some_and(|b| b.0 == ca);
        hooks_ok && conversion_ok
    }

    /// The IP of the running operator pod whose template carries `ca_hash` (the rollout after a
    /// rotation replaces the pod), once the webhook Service lists it as a ready endpoint.
    async fn pod_ip_for(&self, ca_hash: &str) -> IpAddr {
        let pods: Api<Pod> = self.ns.api();
        let what = format!("a Running operator pod with olmcahash {ca_hash}");
        let ip = wait_for(&what, WAIT, || {
            let pods = pods.clone();
            async move {
                let list = pods
                    .list(&ListParams::default().labels(POD_SELECTOR))
                    .await
                    .ok()?;
                list.items.iter().find_map(|p| {
                    if p.metadata.deletion_timestamp.is_some()
                        || p.annotations().get("olmcahash").map(String::as_str) != Some(ca_hash)
                    {
                        return None;
                    }
                    let status = p.status.as_ref()?;
                    if status.phase.as_deref() != Some("Running") {
                        return None;
                    }
                    status.pod_ip.as_deref()?.parse().ok()
                })
            }
        })
        .await;
        self.ns.wait_service_endpoint(SERVICE, ip).await;
        ip
    }

    /// Creates `body` through `api`, retried while the API server has not picked the webhook
    /// configuration or certificate up yet (a failed call to the webhook), until created.
    async fn create_admitted(&self, api: &Api<DynamicObject>, body: Value) {
        let obj: DynamicObject = serde_json::from_value(body).expect("a RedisCluster");
        let name = obj.name_any();
        wait_for(&format!("RedisCluster {name} to be admitted"), WAIT, || {
            let (api, obj) = (api.clone(), obj.clone());
            async move {
                match api.create(&PostParams::default(), &obj).await {
                    Ok(_) => Some(()),
                    Err(e) => {
                        eprintln!("creating RedisCluster {}: {e}", obj.name_any());
                        None
                    }
                }
            }
        })
        .await;
    }

    /// Creates `body`, expecting the validating webhook's denial; returns its message. Retries
    /// while the failure is a call error rather than a denial.
    async fn denied(&self, api: &Api<DynamicObject>, body: Value) -> String {
        let obj: DynamicObject = serde_json::from_value(body).expect("a RedisCluster");
        let name = obj.name_any();
        wait_for(&format!("RedisCluster {name} to be denied"), WAIT, || {
            let (api, obj) = (api.clone(), obj.clone());
            async move {
                match api.create(&PostParams::default(), &obj).await {
                    Ok(_) => panic!(
                        "RedisCluster {} was admitted; the webhook should deny it",
                        obj.name_any()
                    ),
                    Err(e) if e.to_string().contains("denied the request") => Some(e.to_string()),
                    Err(e) => {
                        eprintln!("creating RedisCluster {}: {e}", obj.name_any());
                        None
                    }
                }
            }
        })
        .await
    }

    /// Both webhooks answer: a `v1alpha1` object `name` is admitted, stored as `v1` and read
    /// back converted both ways, and a bad size is denied naming `spec.size`.
    async fn webhooks_work(&self, name: &str) {
        let (alpha, v1) = (self.redis("v1alpha1"), self.redis("v1"));
        self.create_admitted(
            &alpha,
            json!({
                "apiVersion": "cache.example.com/v1alpha1", "kind": "RedisCluster",
                "metadata": {"name": name},
                "spec": {"replicas": 3, "storageSize": "2Gi", "deleteClaimOnDelete": true,
                         "redisConfig": "maxmemory 64mb"},
            }),
        )
        .await;
        let stored = v1.get(name).await.expect("reading the RedisCluster as v1");
        let spec = &stored.data["spec"];
        assert_eq!(spec["size"], 3, "v1alpha1 spec.replicas is v1 spec.size: {spec}");
        assert_eq!(
            spec["storage"]["size"], "2Gi",
            "storageSize is storage.size: {spec}"
        );
        assert_eq!(spec["storage"]["deleteClaimOnDelete"], true, "{spec}");
        assert!(spec.get("replicas").is_none(), "no v1alpha1 field in v1: {spec}");
        assert_eq!(spec["redisConfig"], "maxmemory 64mb");
        let back = alpha
            .get(name)
            .await
            .expect("reading the RedisCluster as v1alpha1");
        let spec = &back.data["spec"];
        assert_eq!(
            (spec["replicas"].clone(), spec["storageSize"].clone()),
            (json!(3), json!("2Gi")),
            "read back as v1alpha1: {spec}"
        );
        assert!(spec.get("size").is_none(), "no v1 field in v1alpha1: {spec}");

        let denial = self
            .denied(
                &v1,
                json!({
                    "apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
                    "metadata": {"name": format!("{name}-bad-size")},
                    "spec": {"size": 4, "mode": "cluster", "replicasPerPrimary": 1},
                }),
            )
            .await;
        assert!(
            denial.contains("admission webhook \"vredisclusters.cache.example.com\" denied the request")
                && denial.contains("spec.size 4 does not fit cluster mode"),
            "the denial names the webhook and the field: {denial}"
        );
    }
}

#[tokio::test]
async fn the_api_server_calls_the_redis_operators_webhooks_installed_by_olm() {
    if !pod_net::available() {
        return;
    }
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let started = std::time::Instant::now();
    cluster.install_olm_crds("olm-rs-e2e");
    let ns = cluster.namespace("redis-webhooks").await;
    let _cleanup = Cleanup {
        cluster: &cluster,
        ns: ns.name().to_owned(),
    };
    let env = Env {
        cluster: &cluster,
        ns: &ns,
    };
    let _controller = e2e::Controller::start(
        cluster.kubeconfig_path(),
        log_path("olm-controller", env.ns()),
        Vec::new(),
        &[],
    );

    // Install 1.1.0 from the shipped catalog, AllNamespaces (what the bundle supports).
    let n = env.ns().to_owned();
    env.apply(
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "redis-catalog", "namespace": n},
               "data": {"catalog.json": catalog_without_1_2_0()}}),
    )
    .await;
    env.apply(
        "operators.coreos.com",
        "v1alpha1",
        "CatalogSource",
        "catalogsources",
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": "redis-catalog", "namespace": n},
               "spec": {"sourceType": "configmap", "configMap": "redis-catalog", "displayName": "shipped"}}),
    )
    .await;
    env.apply(
        "operators.coreos.com",
        "v1",
        "OperatorGroup",
        "operatorgroups",
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
               "metadata": {"name": "global", "namespace": n}, "spec": {}}),
    )
    .await;
    env.apply(
        "operators.coreos.com",
        "v1alpha1",
        "Subscription",
        "subscriptions",
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": PACKAGE, "namespace": n},
               "spec": {"name": PACKAGE, "channel": "alpha", "source": "redis-catalog",
                        "sourceNamespace": n, "startingCSV": CSV,
                        "installPlanApproval": "Automatic"}}),
    )
    .await;
    let csvs = env.csvs();
    wait_for(&format!("CSV {CSV} Succeeded in {n}"), WAIT, || {
        let csvs = csvs.clone();
        async move {
            let csv = csvs.get_opt(CSV).await.ok().flatten()?;
            (csv.data["status"]["phase"] == "Succeeded").then_some(())
        }
    })
    .await;
    eprintln!("{CSV} Succeeded after {:?}", started.elapsed());

    // OLM's objects: the Secret, the validating webhook and the CRD conversion, one CA.
    let secret = env.secret().await;
    let ca = e2e::webhook_ca(&secret);
    assert!(!ca.is_empty(), "Secret {SECRET} carries olmCAKey");
    wait_for("every CA bundle to be the Secret's CA", WAIT, || {
        let ca = ca.clone();
        let env = &env;
        async move { env.ca_bundles_are(&ca).await.then_some(()) }
    })
    .await;
    let crd = env.crd().await;
    let conversion = crd.spec.conversion.clone().expect("the CRD's conversion");
    assert_eq!(conversion.strategy, "Webhook");
    let service = conversion
        .webhook
        .and_then(|w| w.client_config)
        .and_then(|c| c.service)
        .expect("the conversion webhook names a Service");
    assert_eq!(
        (
            service.name.as_str(),
            service.namespace.as_str(),
            service.path.as_deref()
        ),
        (SERVICE, n.as_str(), Some("/convert"))
    );

    // The operator's pod, made real: the binary serves OLM's certificate on the pod IP.
    let certs = tempfile::tempdir().expect("temp dir");
    write_certs(&secret, certs.path());
    let ca_hash = secret
        .annotations()
        .get("olmcahash")
        .cloned()
        .expect("olmcahash on the Secret");
    let ip = env.pod_ip_for(&ca_hash).await;
    let mut served = Some(serve_on(ip, certs.path(), log_path("operator-1", &n)).await);
    eprintln!(
        "serving the webhooks on {ip}:{WEBHOOK_PORT} after {:?}",
        started.elapsed()
    );

    // 1 and 2: conversion and validation, called by the API server.
    env.webhooks_work("cache").await;
    let denial = env
        .denied(
            &env.redis("v1alpha1"),
            json!({
                "apiVersion": "cache.example.com/v1alpha1", "kind": "RedisCluster",
                "metadata": {"name": "bad-config"},
                "spec": {"replicas": 1, "redisConfig": "maxmemory 64mb\ndir /tmp"},
            }),
        )
        .await;
    assert!(
        denial.contains("spec.redisConfig line 2 `dir /tmp`: directive `dir` is not allowed"),
        "the denial names the field and the line: {denial}"
    );
    eprintln!("conversion and validation passed after {:?}", started.elapsed());

    // 3: a forced rotation; the webhooks keep working with the new certificate.
    csvs.patch_status(
        CSV,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"certsRotateAt": "2020-01-01T00:00:00Z"}})),
    )
    .await
    .expect("moving certsRotateAt to the past");
    let secrets: Api<Secret> = ns.api();
    let rotated = wait_for("a new CA in the cert Secret", WAIT, || {
        let (secrets, old) = (secrets.clone(), ca.clone());
        async move {
            let s = secrets.get_opt(SECRET).await.ok().flatten()?;
            (e2e::webhook_ca(&s) != old && !e2e::webhook_ca(&s).is_empty()).then_some(s)
        }
    })
    .await;
    let new_ca = e2e::webhook_ca(&rotated);
    wait_for("every CA bundle to follow the rotated Secret", WAIT, || {
        let new_ca = new_ca.clone();
        let env = &env;
        async move { env.ca_bundles_are(&new_ca).await.then_some(()) }
    })
    .await;
    write_certs(&rotated, certs.path());
    let new_hash = rotated
        .annotations()
        .get("olmcahash")
        .cloned()
        .expect("olmcahash on the rotated Secret");
    let new_ip = env.pod_ip_for(&new_hash).await;
    if served.as_ref().is_some_and(|s| s.net.ip() != new_ip) {
        // The rollout moved the pod: the server follows it, as the new pod would start.
        drop(served.take());
        served = Some(serve_on(new_ip, certs.path(), log_path("operator-2", &n)).await);
    }
    env.webhooks_work("cache-rotated").await;
    eprintln!(
        "rotation passed (pod {ip} -> {new_ip}) after {:?}",
        started.elapsed()
    );

    // 4: uninstall removes the webhook configuration and the conversion webhook.
    for name in ["cache", "cache-rotated"] {
        let _ = env.redis("v1").delete(name, &DeleteParams::default()).await;
    }
    env.dynamic(
        "operators.coreos.com",
        "v1alpha1",
        "Subscription",
        "subscriptions",
    )
    .delete(PACKAGE, &DeleteParams::default())
    .await
    .expect("deleting the Subscription");
    csvs.delete(CSV, &DeleteParams::default())
        .await
        .expect("deleting the CSV");
    wait_for("the CSV to be deleted", WAIT, || {
        let csvs = csvs.clone();
        async move { matches!(csvs.get_opt(CSV).await, Ok(None)).then_some(()) }
    })
    .await;
    wait_for("the webhook configuration to go", WAIT, || {
        let env = &env;
        async move { env.validating().await.is_empty().then_some(()) }
    })
    .await;
    let conversion = wait_for("the CRD's conversion back to None", WAIT, || {
        let env = &env;
        async move {
            let conversion = env.crd().await.spec.conversion;
            conversion
                .as_ref()
                .is_none_or(|c| c.strategy == "None" && c.webhook.is_none())
                .then_some(conversion)
        }
    })
    .await;
    eprintln!("uninstalled ({conversion:?}) after {:?}", started.elapsed());
    drop(served);
}
