//! accept: `cargo xtask accept`: whole-catalog acceptance (issue 12, item 1). Installs every
//! package of a catalog on the local cluster and compares each outcome with the expected one.
//!
//! Default catalog: `certified-operators-v4.16.tar.zst` of the shared corpus (52 packages, every
//! bundle's manifests inlined as `olm.bundle.object`), compared with
//! tests/fixtures/accept-catalog/certified-v4.16.tsv. Any other catalog runs the same way:
//! `--catalog DIR|ARCHIVE|IMAGE`, with `--expect FILE` to compare (without it the outcomes of
//! another catalog are reported, not compared). A copied CSV (label olm.copiedFrom) in a
//! namespace is never counted as that namespace's install.
//!
//! How:
//!  1. An archive is unpacked under target/ (removed at exit).
//!  2. `kubectl-olm catalog serve` serves it on loopback gRPC and HTTP; the bench reads the
//!     catalog back from the catalogd HTTP API (`/api/v1/all`) and starts `olm-controller run`
//!     (binaries from --bin-dir, default target/debug), its log in target/accept-catalog/ (kept
//!     when the run fails).
//!  3. A CatalogSource `sourceType: http` (or `grpc` with `--source grpc`: its ListBundles leaves
//!     out the manifests of bundles with an image, so those installs pull bundle images) in the
//!     controller's namespace, awaited READY.
//!  4. Per package, all at once: namespace `acc-<package>`, an OperatorGroup from the default
//!     channel head CSV's installModes ([`plan::choose_operator_group`]), an Automatic
//!     Subscription to the default channel. Every 2 s (bounded by --timeout) each install is
//!     classified ([`plan::classify`]) until settled ([`plan::Settler`]); what is still in
//!     progress at the deadline is `Timeout`. A `RequirementsNotMet` outcome names what the API
//!     server shows of each CRD not Present.
//!  5. Webhook objects of each Succeeded package whose CSV declares webhookdefinitions are
//!     checked ([`webhooks::check_webhooks`]).
//!  6. One line per package, totals, a TSV (--out: package, outcome, why, seconds, webhooks), the
//!     outcomes compared with the expect file. Exit 0 when every package matches, 1 otherwise, 2
//!     on set-up errors.
//!  7. Clean-up (unless --keep): the namespaces (while the controller still runs: CSV
//!     finalizers), the CatalogSource, cluster-scoped objects labelled `olm.owner.namespace` of
//!     those namespaces, the CRDs the catalog's bundles own (awaited, 300 s; each CRD still there
//!     is printed with its state), the run's Operator objects; then both processes are stopped.
//!  8. --walks: per package that reached Succeeded (and none of whose CRDs is still there, else
//!     `CRDsTerminating`), a Subscription starting at the oldest entry of the default channel; the
//!     CSVs the namespace went through (every InstallPlan seen, watched for the whole phase) must
//!     equal the path `kubectl-olm catalog upgrade-path` prints, or stop where an install-mode
//!     change predicts (`InstallModeChange`). Results in <out>-walks.tsv.

pub mod plan;
pub mod upstream;
pub mod webhooks;

#[cfg(test)]
mod tests;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    io::BufRead as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind},
    runtime::watcher,
};
use serde_json::{Value, json};

use crate::{
    args::{AcceptArgs, Source},
    catalog::{self, Catalog},
    cluster::{Cluster, Controller},
};
use plan::{Class, Facts, WebhookCheck, clean};

const ARCHIVE: &str = "certified-operators-v4.16.tar.zst";
const SOURCE_NAME: &str = "accept-catalog";
const POLL: Duration = Duration::from_secs(2);
const OPS: &str = "/apis/operators.coreos.com";
const CRD_PATH: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// A set-up failure (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

/// The kube client, spoken to by path as the outcomes are read (JSON values throughout).
#[derive(Clone)]
pub struct Kube(pub kube::Client);

impl Kube {
    async fn send(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, kube::Error> {
        self.send_as(method, path, body, "application/json").await
    }

    async fn send_as(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
        content_type: &str,
    ) -> Result<Value, kube::Error> {
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let mut request = http::Request::builder().method(method).uri(path);
        if body.is_some() {
            request = request.header("Content-Type", content_type);
        }
        let request = request
            .body(bytes)
            .map_err(|e| kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e)))?;
        let text = self.0.request_text(request).await?;
        Ok(if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::Null)
        })
    }

    /// GET `path`; `None` when it is not found.
    pub async fn get(&self, path: &str) -> anyhow::Result<Option<Value>> {
        match self.send(http::Method::GET, path, None).await {
            Ok(v) => Ok(Some(v)),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(e).with_context(|| format!("GET {path}")),
        }
    }

    /// The items of a list at `path`.
    pub async fn list(&self, path: &str) -> anyhow::Result<Vec<Value>> {
        Ok(self
            .get(path)
            .await?
            .and_then(|v| v.get("items").and_then(Value::as_array).cloned())
            .unwrap_or_default())
    }

    /// POST `body` to `path`; an object already there is fine.
    pub async fn create(&self, path: &str, body: Value) -> anyhow::Result<()> {
        match self.send(http::Method::POST, path, Some(&body)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(e).with_context(|| format!("POST {path}")),
        }
    }

    /// Server-side apply of `body` at `path` (which carries the fieldManager).
    pub async fn apply(&self, path: &str, body: &Value) -> anyhow::Result<()> {
        self.send_as(
            http::Method::PATCH,
            path,
            Some(body),
            "application/apply-patch+yaml",
        )
        .await
        .with_context(|| format!("PATCH {path}"))?;
        Ok(())
    }

    /// DELETE `path`; an object already gone is fine.
    pub async fn delete(&self, path: &str) -> anyhow::Result<()> {
        match self.send(http::Method::DELETE, path, None).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e).with_context(|| format!("DELETE {path}")),
        }
    }
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// `kubectl-olm catalog serve` on loopback gRPC and HTTP.
struct Serve {
    child: Child,
    grpc: String,
    http: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// The two addresses `kubectl-olm catalog serve` prints.
pub fn serve_addresses(lines: &[String]) -> (Option<String>, Option<String>) {
    let mut grpc = None;
    let mut http = None;
    for line in lines {
        if let Some((_, rest)) = line.split_once(" on http://") {
            http = rest.split_whitespace().next().map(str::to_owned);
        } else if let Some((_, rest)) = line.split_once(" on ")
            && rest.contains("(gRPC")
        {
            grpc = rest.split_whitespace().next().map(str::to_owned);
        }
    }
    (grpc, http)
}

fn start_serve(cli: &Path, catalog: &str, log: &Path) -> anyhow::Result<Serve> {
    let mut child = Command::new(cli)
        .args([
            "catalog",
            "serve",
            "--catalog",
            catalog,
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log)?)
        .spawn()
        .with_context(|| format!("failed to start {}", cli.display()))?;
    let Some(stdout) = child.stdout.take() else {
        bail!(SetupError("kubectl-olm catalog serve has no stdout".into()));
    };
    let mut reader = std::io::BufReader::new(stdout);
    let mut lines = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        lines.push(line);
    }
    // Keep reading its stdout so it never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = String::new();
        while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    let (grpc, http) = serve_addresses(&lines);
    let (Some(grpc), Some(http)) = (grpc, http) else {
        let _ = child.kill();
        let _ = child.wait();
        bail!(SetupError(format!(
            "kubectl-olm catalog serve did not print its addresses; see {}",
            log.display()
        )));
    };
    Ok(Serve { child, grpc, http })
}

async fn load_blobs(http: &str) -> anyhow::Result<Vec<Value>> {
    let addr = http.parse().with_context(|| format!("catalogd address {http}"))?;
    let text = crate::cluster::http_get_within(addr, "/api/v1/all", Duration::from_secs(300)).await?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).context("a catalogd line is not JSON"))
        .collect()
}

async fn install_crds(cluster: &Cluster, repo: &Path, kube: &Kube, namespace: &str) -> anyhow::Result<()> {
    cluster
        .install_crds(repo)
        .map_err(|e| SetupError(format!("{e:#}")))?;
    kube.create("/api/v1/namespaces", json!({"metadata": {"name": namespace}}))
        .await
}

async fn create_catalog_source(
    kube: &Kube,
    namespace: &str,
    source: (&str, String),
    alive: &mut dyn FnMut() -> Result<(), String>,
    timeout: Duration,
    log: &Path,
) -> anyhow::Result<()> {
    let path = format!("{OPS}/v1alpha1/namespaces/{namespace}/catalogsources");
    kube.delete(&format!("{path}/{SOURCE_NAME}")).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while kube.get(&format!("{path}/{SOURCE_NAME}")).await?.is_some() {
        if Instant::now() > deadline {
            bail!(SetupError(format!(
                "an old CatalogSource {namespace}/{SOURCE_NAME} was never deleted"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    kube.create(
        &path,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": SOURCE_NAME},
               "spec": {"sourceType": source.0, "address": source.1,
                        "displayName": "accept-catalog"}}),
    )
    .await?;
    let deadline = Instant::now() + timeout;
    loop {
        let cs = kube
            .get(&format!("{path}/{SOURCE_NAME}"))
            .await?
            .unwrap_or(Value::Null);
        if s(&cs, "/status/connectionState/lastObservedState") == "READY" {
            return Ok(());
        }
        if let Err(dead) = alive() {
            bail!(SetupError(dead));
        }
        if Instant::now() > deadline {
            bail!(SetupError(format!(
                "CatalogSource {namespace}/{SOURCE_NAME} never became READY ({}); see {}",
                cs.get("status").cloned().unwrap_or(Value::Null),
                log.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Namespace (and the OperatorGroup's other target namespaces), OperatorGroup `og`, Automatic
/// Subscription; every namespace created.
async fn subscribe(
    kube: &Kube,
    package: &str,
    channel: &str,
    namespace: &str,
    og: &Value,
    catalog_ns: &str,
    starting_csv: Option<&str>,
) -> anyhow::Result<Vec<String>> {
    let mut namespaces = vec![namespace.to_owned()];
    for t in og
        .get("targetNamespaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = t.as_str()
            && t != namespace
        {
            namespaces.push(t.to_owned());
        }
    }
    for ns in &namespaces {
        kube.create(
            "/api/v1/namespaces",
            json!({"metadata": {"name": ns, "labels": {"olm-rs/accept": "true"}}}),
        )
        .await?;
    }
    kube.create(
        &format!("{OPS}/v1/namespaces/{namespace}/operatorgroups"),
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
               "metadata": {"name": "og"}, "spec": og}),
    )
    .await?;
    let mut spec = json!({"name": package, "channel": channel, "installPlanApproval": "Automatic",
                          "source": SOURCE_NAME, "sourceNamespace": catalog_ns});
    if let Some(start) = starting_csv {
        spec["startingCSV"] = json!(start);
    }
    kube.create(
        &format!("{OPS}/v1alpha1/namespaces/{namespace}/subscriptions"),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": package}, "spec": spec}),
    )
    .await?;
    Ok(namespaces)
}

async fn unschedulable_pod(kube: &Kube, namespace: &str) -> anyhow::Result<Option<String>> {
    let pods = kube
        .list(&format!(
            "/api/v1/namespaces/{namespace}/pods?fieldSelector=status.phase%3DPending"
        ))
        .await?;
    for pod in &pods {
        if let Some(c) = plan::condition(Some(pod), "PodScheduled")
            && c["status"] == "False"
            && c["reason"] == "Unschedulable"
        {
            return Ok(Some(format!(
                "{} Unschedulable: {}",
                s(pod, "/metadata/name"),
                clean(s(c, "/message"), 200)
            )));
        }
    }
    Ok(None)
}

/// classify() of one namespace now. With `target` (walks), only that CSV Succeeded is final.
async fn observe(
    kube: &Kube,
    namespace: &str,
    sub: Option<&Value>,
    target: Option<&str>,
) -> anyhow::Result<Class> {
    let null = Value::Null;
    let sub_v = sub.unwrap_or(&null);
    let name = [s(sub_v, "/status/currentCSV"), s(sub_v, "/status/installedCSV")]
        .into_iter()
        .find(|n| !n.is_empty());
    let mut csv = None;
    if let Some(name) = name {
        csv = kube
            .get(&format!(
                "{OPS}/v1alpha1/namespaces/{namespace}/clusterserviceversions/{name}"
            ))
            .await?
            .filter(|c| !plan::is_copy(Some(c)));
    }
    let ip_name = [
        s(sub_v, "/status/installPlanRef/name"),
        s(sub_v, "/status/installplan/name"),
    ]
    .into_iter()
    .find(|n| !n.is_empty());
    let csv_phase = csv.as_ref().map_or("", |c| s(c, "/status/phase")).to_owned();
    let plan_failed = plan::condition(sub, "InstallPlanFailed").is_some_and(|c| c["status"] == "True");
    let mut ip = None;
    if let Some(ip_name) = ip_name
        && (csv_phase == "Succeeded" || plan_failed)
    {
        ip = kube
            .get(&format!(
                "{OPS}/v1alpha1/namespaces/{namespace}/installplans/{ip_name}"
            ))
            .await?;
    }
    let pending = if matches!(csv_phase.as_str(), "InstallReady" | "Installing") {
        unschedulable_pod(kube, namespace).await?
    } else {
        None
    };
    let mut class = plan::classify(sub, csv.as_ref(), ip.as_ref(), pending.as_deref());
    if let Some(target) = target
        && class.is_final
        && name != Some(target)
    {
        class = Class {
            outcome: "InProgress".into(),
            why: format!("at {}, on the way to {target}", name.unwrap_or("?")),
            is_final: false,
        };
    }
    Ok(class)
}

/// One settled install: outcome, why, seconds.
pub type Settled = (String, String, f64);

/// {package: (outcome, why, seconds)} once every install is settled or the deadline passed.
async fn wait_settled(
    kube: &Kube,
    namespaces: &BTreeMap<String, String>,
    timeout: Duration,
    targets: &BTreeMap<String, String>,
) -> anyhow::Result<BTreeMap<String, Settled>> {
    let start = Instant::now();
    let mut settler = plan::Settler::new(plan::SETTLE_SECONDS);
    let mut results = BTreeMap::new();
    let mut last: HashMap<String, (String, String)> = HashMap::new();
    let mut pending = namespaces.clone();
    let mut cycles = 0;
    while !pending.is_empty() {
        let mut subs: HashMap<(String, String), Value> = HashMap::new();
        for item in kube.list(&format!("{OPS}/v1alpha1/subscriptions")).await? {
            subs.insert(
                (
                    s(&item, "/metadata/namespace").to_owned(),
                    s(&item, "/spec/name").to_owned(),
                ),
                item,
            );
        }
        let now = Instant::now();
        let observed: Vec<(String, Class)> = futures::stream::iter(pending.clone())
            .map(|(package, ns)| {
                let sub = subs.get(&(ns.clone(), package.clone())).cloned();
                let target = targets.get(&package).cloned();
                async move {
                    let class = observe(kube, &ns, sub.as_ref(), target.as_deref())
                        .await
                        .unwrap_or_else(|e| Class {
                            outcome: "InProgress".into(),
                            why: format!("observing failed: {}", clean(&format!("{e:#}"), 300)),
                            is_final: false,
                        });
                    (package, class)
                }
            })
            .buffer_unordered(8)
            .collect()
            .await;
        let t = now.duration_since(start).as_secs_f64();
        for (package, class) in observed {
            last.insert(package.clone(), (class.outcome.clone(), class.why.clone()));
            if settler.observe(&package, &class, t) {
                results.insert(package.clone(), (class.outcome, class.why, round1(t)));
                pending.remove(&package);
            }
        }
        if !pending.is_empty() && start.elapsed() > timeout {
            let secs = timeout.as_secs_f64();
            for package in pending.keys() {
                // A failure seen but not yet stable keeps its class.
                let (outcome, why) = last
                    .get(package)
                    .cloned()
                    .unwrap_or(("InProgress".into(), "never observed".into()));
                let (outcome, why) = if outcome == "InProgress" {
                    ("Timeout".to_owned(), format!("after {secs:.0} s: {why}"))
                } else {
                    (outcome, format!("{why} (at the {secs:.0} s deadline)"))
                };
                results.insert(
                    package.clone(),
                    (outcome, clean(&why, 300), round1(start.elapsed().as_secs_f64())),
                );
            }
            break;
        }
        if !pending.is_empty() {
            cycles += 1;
            if cycles % 10 == 0 {
                println!(
                    "  {} settled, {} in progress after {:.0} s",
                    results.len(),
                    pending.len(),
                    start.elapsed().as_secs_f64()
                );
            }
            tokio::time::sleep(POLL.saturating_sub(now.elapsed())).await;
        }
    }
    Ok(results)
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// What the API server shows of a CRD (`None` when it is gone): deletion, finalizers, its
/// conditions, and the custom resources still stored when it is being deleted.
async fn crd_state(kube: &Kube, crd: &str) -> anyhow::Result<Option<String>> {
    let Some(obj) = kube.get(&format!("{CRD_PATH}/{crd}")).await? else {
        return Ok(None);
    };
    let mut parts = vec![format!("created {}", s(&obj, "/metadata/creationTimestamp"))];
    let deleting = s(&obj, "/metadata/deletionTimestamp");
    if !deleting.is_empty() {
        parts.push(format!("deleting since {deleting}"));
    }
    let finalizers: Vec<&str> = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !finalizers.is_empty() {
        parts.push(format!("finalizers {}", finalizers.join(",")));
    }
    for kind in ["Terminating", "NamesAccepted", "Established"] {
        if let Some(c) = plan::condition(Some(&obj), kind) {
            let mut text = format!(
                "{kind}={} {} since {}",
                s(c, "/status"),
                s(c, "/reason"),
                s(c, "/lastTransitionTime")
            );
            if kind == "Terminating" && !s(c, "/message").is_empty() {
                text.push_str(&format!(" ({})", clean(s(c, "/message"), 120)));
            }
            parts.push(text);
        }
    }
    let version = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str());
    let plural = s(&obj, "/spec/names/plural");
    if !deleting.is_empty()
        && let Some(version) = version
        && !plural.is_empty()
    {
        let path = format!("/apis/{}/{version}/{plural}?limit=20", s(&obj, "/spec/group"));
        match kube.get(&path).await {
            Err(e) => parts.push(format!(
                "listing its resources failed: {}",
                clean(&format!("{e:#}"), 150)
            )),
            Ok(got) => {
                let got = got.unwrap_or(Value::Null);
                let items: Vec<&Value> = got
                    .get("items")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .collect();
                if items.is_empty() {
                    parts.push("no resources left".into());
                } else {
                    let more = if s(&got, "/metadata/continue").is_empty() {
                        ""
                    } else {
                        "+"
                    };
                    let left: Vec<String> = items
                        .iter()
                        .take(3)
                        .map(|i| {
                            let ns = s(i, "/metadata/namespace");
                            let name = s(i, "/metadata/name");
                            let id = if ns.is_empty() {
                                name.to_owned()
                            } else {
                                format!("{ns}/{name}")
                            };
                            format!(
                                "{id} finalizers {}",
                                i.pointer("/metadata/finalizers").cloned().unwrap_or(json!([]))
                            )
                        })
                        .collect();
                    parts.push(format!(
                        "{}{more} resources left: {}",
                        items.len(),
                        left.join(", ")
                    ));
                }
            }
        }
    }
    Ok(Some(clean(&parts.join("; "), 600)))
}

/// `why` of a RequirementsNotMet outcome with the API server's view of each CRD not Present.
async fn explain_requirements(kube: &Kube, outcome: &str, why: &str) -> String {
    if outcome != "RequirementsNotMet" {
        return why.to_owned();
    }
    let mut details = Vec::new();
    for crd in plan::missing_crds(why) {
        let state = crd_state(kube, &crd)
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| "absent".into());
        details.push(format!("CRD {crd} on the API server: {state}"));
    }
    if details.is_empty() {
        why.to_owned()
    } else {
        clean(&format!("{why}; {}", details.join("; ")), 900)
    }
}

/// check_webhooks() of the CSV the Subscription `package` in `namespace` installed; `None` when
/// it declares no webhookdefinitions.
async fn package_webhooks(
    kube: &Kube,
    namespace: &str,
    package: &str,
) -> anyhow::Result<Option<WebhookCheck>> {
    let sub = kube
        .get(&format!(
            "{OPS}/v1alpha1/namespaces/{namespace}/subscriptions/{package}"
        ))
        .await?
        .unwrap_or(Value::Null);
    let name = s(&sub, "/status/installedCSV");
    if name.is_empty() {
        return Ok(None);
    }
    let Some(csv) = kube
        .get(&format!(
            "{OPS}/v1alpha1/namespaces/{namespace}/clusterserviceversions/{name}"
        ))
        .await?
    else {
        return Ok(None);
    };
    let defs: Vec<Value> = csv
        .pointer("/spec/webhookdefinitions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if defs.is_empty() {
        return Ok(None);
    }
    let selector = format!("olm.owner.namespace%3D{namespace}");
    let mut objs = webhooks::Objects {
        validating: kube
            .list(&format!(
                "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?labelSelector={selector}"
            ))
            .await?,
        mutating: kube
            .list(&format!(
                "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?labelSelector={selector}"
            ))
            .await?,
        ..Default::default()
    };
    for d in &defs {
        let service = webhooks::webhook_service(s(d, "/deploymentName"));
        if let Some(o) = kube
            .get(&format!("/api/v1/namespaces/{namespace}/services/{service}"))
            .await?
        {
            objs.services.insert(service.clone(), o);
        }
        let secret = format!("{service}-cert");
        if let Some(o) = kube
            .get(&format!("/api/v1/namespaces/{namespace}/secrets/{secret}"))
            .await?
        {
            objs.secrets.insert(secret, o);
        }
        for crd in d
            .get("conversionCRDs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if let Some(o) = kube.get(&format!("{CRD_PATH}/{crd}")).await? {
                objs.crds.insert(crd.to_owned(), o);
            }
        }
    }
    Ok(Some(webhooks::check_webhooks(&csv, namespace, &objs)))
}

/// package_webhooks() of every Succeeded package (or matched walk) in `namespaces`.
async fn check_installed_webhooks(
    kube: &Kube,
    outcomes: &BTreeMap<String, String>,
    namespaces: &BTreeMap<String, String>,
) -> BTreeMap<String, WebhookCheck> {
    let mut out = BTreeMap::new();
    for (package, outcome) in outcomes {
        let Some(ns) = namespaces.get(package) else {
            continue;
        };
        if outcome != "Succeeded" && outcome != "match" {
            continue;
        }
        let got = match package_webhooks(kube, ns, package).await {
            Ok(got) => got,
            Err(e) => Some((
                false,
                format!("webhooks: checking failed: {}", clean(&format!("{e:#}"), 300)),
            )),
        };
        if let Some(got) = got {
            out.insert(package.clone(), got);
        }
    }
    out
}

/// Deletes the namespaces (the controller must still run: CSV finalizers), then cluster-scoped
/// objects labelled olm.owner.namespace of them, then the CRDs the catalog owns, awaiting them
/// (bounded); then the run's Operator objects. The CRDs still there, with their state.
pub async fn cleanup(
    kube: &Kube,
    namespaces: &[String],
    crds: &[String],
    operators: &BTreeSet<String>,
) -> anyhow::Result<BTreeMap<String, String>> {
    let (timeout, crd_timeout) = (Duration::from_secs(240), Duration::from_secs(300));
    let namespaces: BTreeSet<String> = namespaces.iter().cloned().collect();
    let started = Instant::now();
    for ns in &namespaces {
        kube.delete(&format!("/api/v1/namespaces/{ns}")).await?;
    }
    loop {
        let left: BTreeSet<String> = kube
            .list("/api/v1/namespaces")
            .await?
            .iter()
            .map(|n| s(n, "/metadata/name").to_owned())
            .filter(|n| namespaces.contains(n))
            .collect();
        if left.is_empty() {
            break;
        }
        if started.elapsed() > timeout {
            eprintln!(
                "warning: namespaces still terminating after {} s: {}",
                timeout.as_secs(),
                left.into_iter().collect::<Vec<_>>().join(", ")
            );
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let ns_seconds = started.elapsed().as_secs_f64();
    for path in [
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        "/apis/apiregistration.k8s.io/v1/apiservices",
    ] {
        for item in kube
            .list(&format!("{path}?labelSelector=olm.owner.namespace"))
            .await?
        {
            if namespaces.contains(s(&item, "/metadata/labels/olm.owner.namespace")) {
                kube.delete(&format!("{path}/{}", s(&item, "/metadata/name")))
                    .await?;
            }
        }
    }
    let crd_started = Instant::now();
    for crd in crds {
        kube.delete(&format!("{CRD_PATH}/{crd}")).await?;
    }
    let mut left: Vec<String> = crds.to_vec();
    while !left.is_empty() {
        let mut still = Vec::new();
        for c in left {
            if kube.get(&format!("{CRD_PATH}/{c}")).await?.is_some() {
                still.push(c);
            }
        }
        left = still;
        if !left.is_empty() && crd_started.elapsed() > crd_timeout {
            break;
        }
        if !left.is_empty() {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
    // Operator objects stay when their components go (as upstream's do); a later run would start
    // by reconciling and caching them all.
    for name in operators {
        kube.delete(&format!("{OPS}/v1/operators/{name}")).await?;
    }
    let mut states = BTreeMap::new();
    for c in &left {
        if let Some(st) = crd_state(kube, c).await? {
            states.insert(c.clone(), st);
        }
    }
    println!(
        "clean-up: {} namespaces gone after {ns_seconds:.0} s, {} of {} CRDs gone {:.0} s after their deletion",
        namespaces.len(),
        crds.len() - states.len(),
        crds.len(),
        crd_started.elapsed().as_secs_f64()
    );
    for (crd, st) in &states {
        eprintln!(
            "warning: CRD {crd} still there after {} s: {st}",
            crd_timeout.as_secs()
        );
    }
    Ok(states)
}

/// Step 4: every package at once; {package: (outcome, why, seconds)} and the namespaces used.
async fn run_installs(
    kube: &Kube,
    facts: &BTreeMap<String, Facts>,
    packages: &[String],
    catalog_ns: &str,
    timeout: Duration,
) -> anyhow::Result<(BTreeMap<String, Settled>, Vec<String>)> {
    let namespaces: BTreeMap<String, String> = packages
        .iter()
        .map(|p| (p.clone(), plan::namespace_for("acc", p)))
        .collect();
    let mut results = BTreeMap::new();
    let mut used = Vec::new();
    let created: Vec<(String, anyhow::Result<Option<Vec<String>>>)> =
        futures::stream::iter(packages.to_vec())
            .map(|package| {
                let f = &facts[&package];
                let ns = namespaces[&package].clone();
                async move {
                    let got = match plan::choose_operator_group(f.csv.as_ref(), &ns) {
                        None => Ok(None),
                        Some((_, og)) => subscribe(kube, &package, &f.channel, &ns, &og, catalog_ns, None)
                            .await
                            .map(Some),
                    };
                    (package, got)
                }
            })
            .buffer_unordered(8)
            .collect()
            .await;
    for (package, got) in created {
        match got? {
            Some(ns) => used.extend(ns),
            None if facts[&package].csv.is_none() => {
                results.insert(
                    package.clone(),
                    (
                        "NoInlinedCSV".into(),
                        format!(
                            "the head bundle {} carries no inlined CSV (its manifests are only in its bundle image): this bench reads install modes from inlined CSVs",
                            facts[&package].head.as_deref().unwrap_or("<none>")
                        ),
                        0.0,
                    ),
                );
            }
            None => {
                results.insert(
                    package.clone(),
                    (
                        "NoInstallMode".into(),
                        "the head CSV supports no install mode".into(),
                        0.0,
                    ),
                );
            }
        }
    }
    let waiting: BTreeMap<String, String> = namespaces
        .into_iter()
        .filter(|(p, _)| !results.contains_key(p))
        .collect();
    println!(
        "{} Subscriptions created; polling every {:.0} s (timeout {:.0} s)",
        waiting.len(),
        POLL.as_secs_f64(),
        timeout.as_secs_f64()
    );
    for (package, (outcome, why, secs)) in wait_settled(kube, &waiting, timeout, &BTreeMap::new()).await? {
        let why = explain_requirements(kube, &outcome, &why).await;
        results.insert(package, (outcome, why, secs));
    }
    Ok((results, used))
}

/// Prints and writes the installs; whether every outcome is as expected.
fn report_installs(
    results: &BTreeMap<String, Settled>,
    expected: &BTreeMap<String, (String, String)>,
    out: &Path,
    webhooks: &BTreeMap<String, WebhookCheck>,
    compare: bool,
) -> anyhow::Result<bool> {
    let width = results.keys().map(String::len).max().unwrap_or(10);
    println!();
    for (package, (outcome, why, secs)) in results {
        let wanted = expected.get(package).map_or("<not listed>", |(o, _)| o.as_str());
        let mark = if outcome == wanted || !compare {
            String::new()
        } else {
            format!("   [expected {wanted}]")
        };
        let hooks = webhooks
            .get(package)
            .map(|(_, t)| format!(" [{t}]"))
            .unwrap_or_default();
        println!("{package:width$}  {outcome:24} {secs:6.1} s  {why}{hooks}{mark}");
    }
    let succeeded = results.values().filter(|(o, _, _)| o == "Succeeded").count();
    println!("\n{succeeded} of {} Succeeded", results.len());
    if !webhooks.is_empty() {
        let good: Vec<&String> = webhooks
            .iter()
            .filter(|(_, (ok, _))| *ok)
            .map(|(p, _)| p)
            .collect();
        let objects: usize = good.iter().map(|p| webhooks::ok_count(&webhooks[*p].1)).sum();
        println!(
            "webhook objects: {} of {} Succeeded packages with webhookdefinitions have every object present and correct ({objects} objects)",
            good.len(),
            webhooks.len()
        );
        for (package, (ok, text)) in webhooks {
            if !ok {
                println!("  {package}: {text}");
            }
        }
    }
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut tsv = "package\toutcome\twhy\tseconds\twebhooks\n".to_owned();
    for (package, (outcome, why, secs)) in results {
        let hooks = webhooks.get(package).map_or("", |(_, t)| t.as_str());
        tsv.push_str(&format!(
            "{package}\t{outcome}\t{}\t{secs}\t{hooks}\n",
            clean(why, 300)
        ));
    }
    std::fs::write(out, tsv).with_context(|| format!("failed to write {}", out.display()))?;
    println!("written {}", out.display());
    if !compare {
        println!("no --expect: outcomes reported, not compared");
        return Ok(true);
    }
    let outcomes: BTreeMap<String, String> = results
        .iter()
        .map(|(p, (o, _, _))| (p.clone(), o.clone()))
        .collect();
    let mismatches = plan::compare(&outcomes, expected, webhooks);
    for (package, got, wanted) in &mismatches {
        let why = expected.get(package).map_or("", |(_, w)| w.as_str());
        println!("MISMATCH {package}: got {got}, expected {wanted} ({why})");
    }
    println!(
        "{} of {} as expected",
        results.len() - mismatches.len(),
        results.len()
    );
    Ok(mismatches.is_empty())
}

/// (oldest entry, expected path) for `package`'s `channel`, from the CLI on the package's own
/// directory.
fn walk_plan(
    cli: &Path,
    catalog: &str,
    package: &str,
    channel: &str,
) -> Result<(String, Vec<String>), String> {
    let own = Path::new(catalog).join(package);
    let dir = if own.is_dir() {
        own.to_string_lossy().into_owned()
    } else {
        catalog.to_owned()
    };
    let run = |args: &[&str]| -> Result<String, String> {
        let out = Command::new(cli).args(args).output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let graph = run(&[
        "catalog",
        "graph",
        package,
        "--channel",
        channel,
        "-o",
        "name",
        "--catalog",
        &dir,
    ])
    .map_err(|e| format!("kubectl-olm catalog graph {package}: {e}"))?;
    let tail = graph
        .lines()
        .last()
        .map(|l| l.trim().trim_start_matches("bundle/").to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("kubectl-olm catalog graph {package}: no output"))?;
    let path = run(&[
        "catalog",
        "upgrade-path",
        package,
        "--from",
        &tail,
        "--channel",
        channel,
        "-o",
        "json",
        "--catalog",
        &dir,
    ])
    .map_err(|e| format!("kubectl-olm catalog upgrade-path {package} --from {tail}: {e}"))?;
    // The head itself prints a sentence, not JSON: a one-entry walk.
    let hops = if path.trim_start().starts_with('{') {
        serde_json::from_str(&path).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    Ok((tail.clone(), plan::expected_walk(&tail, &hops)))
}

/// Every InstallPlan of the namespaces starting with `prefix`, watched while the walks run.
struct PlanRecorder {
    seen: Arc<Mutex<BTreeMap<String, Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PlanRecorder {
    fn start(client: kube::Client, prefix: &str) -> Self {
        let seen: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
        let api: Api<DynamicObject> = Api::all_with(
            client,
            &ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("operators.coreos.com", "v1alpha1", "InstallPlan"),
                "installplans",
            ),
        );
        let prefix = prefix.to_owned();
        let record = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                if let Ok(watcher::Event::Apply(ip) | watcher::Event::InitApply(ip)) = ev
                    && ip
                        .metadata
                        .namespace
                        .as_deref()
                        .is_some_and(|n| n.starts_with(&prefix))
                    && let Some(uid) = ip.metadata.uid.clone()
                    && let Ok(v) = serde_json::to_value(&ip)
                {
                    record
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(uid, plan::slim_plan(&v));
                }
            }
        });
        Self { seen, task }
    }

    fn recorded(&self, namespace: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .filter(|ip| s(ip, "/metadata/namespace") == namespace)
            .cloned()
            .collect()
    }
}

impl Drop for PlanRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One walk: outcome, expected path, observed path, why.
pub type Walk = (String, Vec<String>, Vec<String>, String);

/// Step 8: {package: walk} and the namespaces used.
#[allow(clippy::too_many_arguments, reason = "the walk phase's whole input")]
async fn run_walks(
    kube: &Kube,
    cli: &Path,
    catalog: &str,
    facts: &BTreeMap<String, Facts>,
    packages: &[String],
    catalog_ns: &str,
    timeout: Duration,
    leftover: &BTreeMap<String, String>,
    recorder: &PlanRecorder,
) -> anyhow::Result<(BTreeMap<String, Walk>, Vec<String>)> {
    let mut results: BTreeMap<String, Walk> = BTreeMap::new();
    let mut plans: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for package in packages {
        let stuck: Vec<&String> = facts[package]
            .crds
            .iter()
            .filter(|c| leftover.contains_key(*c))
            .collect();
        if !stuck.is_empty() {
            let text: Vec<String> = stuck.iter().map(|c| format!("{c}: {}", leftover[*c])).collect();
            results.insert(
                package.clone(),
                (
                    "CRDsTerminating".into(),
                    vec![],
                    vec![],
                    clean(
                        &format!(
                            "not walked: the first phase's CRD(s) still there after the clean-up: {}",
                            text.join("; ")
                        ),
                        900,
                    ),
                ),
            );
            continue;
        }
        match walk_plan(cli, catalog, package, &facts[package].channel) {
            Ok(p) => {
                plans.insert(package.clone(), p);
            }
            Err(e) => {
                results.insert(
                    package.clone(),
                    ("PathUnknown".into(), vec![], vec![], clean(&e, 300)),
                );
            }
        }
    }
    let mut namespaces = BTreeMap::new();
    let mut groups = BTreeMap::new();
    let mut used = Vec::new();
    for (package, (tail, path)) in &plans {
        let ns = plan::namespace_for("accw", package);
        let Some((mode, og, halt)) = plan::choose_walk_group(path, &facts[package].csvs, &ns) else {
            results.insert(
                package.clone(),
                (
                    "NoInstallMode".into(),
                    path.clone(),
                    vec![],
                    format!("the walk's start {tail} supports no install mode"),
                ),
            );
            continue;
        };
        let note = match &halt {
            Some((entry, modes)) => format!(
                " (group {mode}; expected to stop at {entry}, which supports {})",
                if modes.is_empty() {
                    "none".to_owned()
                } else {
                    modes.join(", ")
                }
            ),
            None => format!(" (group {mode})"),
        };
        println!("  walk {package}: {}{note}", path.join(" -> "));
        used.extend(
            subscribe(
                kube,
                package,
                &facts[package].channel,
                &ns,
                &og,
                catalog_ns,
                Some(tail),
            )
            .await?,
        );
        namespaces.insert(package.clone(), ns);
        groups.insert(package.clone(), (mode, halt));
    }
    let targets: BTreeMap<String, String> = plans
        .iter()
        .filter(|(p, _)| namespaces.contains_key(*p))
        .filter_map(|(p, (_, path))| Some((p.clone(), path.last()?.clone())))
        .collect();
    let settled = wait_settled(kube, &namespaces, timeout, &targets).await?;
    for (package, (outcome, why, _)) in settled {
        let path = &plans[&package].1;
        let (mode, halt) = &groups[&package];
        let ns = &namespaces[&package];
        let expected: Vec<String> = match halt {
            Some((entry, _)) => {
                let end = path.iter().position(|e| e == entry).map_or(path.len(), |i| i + 1);
                path[..end].to_vec()
            }
            None => path.clone(),
        };
        let current = kube
            .list(&format!("{OPS}/v1alpha1/namespaces/{ns}/installplans"))
            .await?;
        let observed = plan::observed_walk(&plan::merge_plans(&recorder.recorded(ns), &current));
        let (outcome, why) = if let Some(halt) = halt {
            let (changed, stop_why) =
                walk_stop_outcome(kube, ns, &path[0], mode, halt, &expected, &observed).await?;
            match changed {
                Some(c) => (c, stop_why),
                None => (outcome, format!("{why} (expected: {stop_why})")),
            }
        } else if outcome == "Succeeded" {
            (
                (if observed == expected { "match" } else { "mismatch" }).to_owned(),
                why,
            )
        } else {
            (outcome, why)
        };
        let why = explain_requirements(kube, &outcome, &why).await;
        results.insert(package, (outcome, expected, observed, why));
    }
    Ok((results, used))
}

/// (`InstallModeChange` or none, why) of a walk expected to stop at `halt`.
async fn walk_stop_outcome(
    kube: &Kube,
    namespace: &str,
    start: &str,
    mode: &str,
    halt: &plan::Halt,
    expected: &[String],
    observed: &[String],
) -> anyhow::Result<(Option<String>, String)> {
    let (entry, modes) = halt;
    let csv = kube
        .get(&format!(
            "{OPS}/v1alpha1/namespaces/{namespace}/clusterserviceversions/{entry}"
        ))
        .await?;
    let supported = if modes.is_empty() {
        "no install mode".to_owned()
    } else {
        modes.join(", ")
    };
    let why = format!(
        "{entry} supports {supported}, not the {mode} group chosen from the start {start} (no mode is supported by every entry)"
    );
    if let Some(csv) = csv
        && s(&csv, "/status/phase") == "Failed"
        && s(&csv, "/status/reason") == "UnsupportedOperatorGroup"
        && observed == expected
    {
        return Ok((
            Some("InstallModeChange".into()),
            clean(
                &format!(
                    "{why}: CSV {entry} Failed UnsupportedOperatorGroup: {}",
                    s(&csv, "/status/message")
                ),
                300,
            ),
        ));
    }
    Ok((None, why))
}

/// Prints and writes the walks; whether every walk reached the head along the predicted path (or
/// stopped where an install-mode change predicts) and the heads' webhook objects are right.
fn report_walks(
    results: &BTreeMap<String, Walk>,
    out: &Path,
    webhooks: &BTreeMap<String, WebhookCheck>,
) -> anyhow::Result<bool> {
    println!();
    let mut tsv = "package\toutcome\texpected path\tobserved path\twhy\twebhooks\n".to_owned();
    for (package, (outcome, expected, observed, why)) in results {
        let hooks = webhooks.get(package).map_or("", |(_, t)| t.as_str());
        let mut line = format!("walk {package}: {outcome}  expected {}", expected.join(" -> "));
        if observed != expected {
            let seen = if observed.is_empty() {
                "<none>".to_owned()
            } else {
                observed.join(" -> ")
            };
            line.push_str(&format!("  observed {seen}"));
        }
        if outcome != "match" && outcome != "mismatch" {
            line.push_str(&format!("  ({why})"));
        }
        if !hooks.is_empty() {
            line.push_str(&format!("  [{hooks}]"));
        }
        println!("{line}");
        tsv.push_str(&format!(
            "{package}\t{outcome}\t{}\t{}\t{}\t{hooks}\n",
            expected.join(" "),
            observed.join(" "),
            clean(why, 300)
        ));
    }
    std::fs::write(out, tsv).with_context(|| format!("failed to write {}", out.display()))?;
    let matched = results.values().filter(|r| r.0 == "match").count();
    let changed = results.values().filter(|r| r.0 == "InstallModeChange").count();
    println!(
        "\n{matched} of {} walks reached the head along the predicted path",
        results.len()
    );
    if changed > 0 {
        println!(
            "{changed} stopped where predicted: a later entry does not support the start's install mode (its CSV Failed UnsupportedOperatorGroup, as upstream)"
        );
    }
    let bad: Vec<&String> = webhooks
        .iter()
        .filter(|(_, (ok, _))| !ok)
        .map(|(p, _)| p)
        .collect();
    if !webhooks.is_empty() {
        println!(
            "webhook objects after the walk: {} of {} heads with webhookdefinitions have every object present and correct",
            webhooks.len() - bad.len(),
            webhooks.len()
        );
        for p in &bad {
            println!("  {p}: {}", webhooks[*p].1);
        }
    }
    println!("written {}", out.display());
    Ok(matched + changed == results.len() && bad.is_empty())
}

/// Runs the bench: Ok(true) every outcome as expected, Ok(false) not, Err a set-up failure.
pub async fn run(repo: &Path, args: AcceptArgs) -> anyhow::Result<bool> {
    let bin_dir = args.bin_dir.clone().unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| repo.join("target"), PathBuf::from)
            .join("debug")
    });
    let cli = bin_dir.join("kubectl-olm");
    let controller_bin = bin_dir.join("olm-controller");
    for binary in [&cli, &controller_bin] {
        if !binary.is_file() {
            bail!(SetupError(format!(
                "{} is missing: cargo build --bin kubectl-olm --bin olm-controller (or pass --bin-dir)",
                binary.display()
            )));
        }
    }
    let default_expect = repo.join("tests/fixtures/accept-catalog/certified-v4.16.tsv");
    let (expected, compare) = match (&args.expect, &args.catalog) {
        (None, Some(_)) => (BTreeMap::new(), false),
        (path, _) => {
            let path = path.clone().unwrap_or(default_expect);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| SetupError(format!("failed to read {}: {e}", path.display())))?;
            let expected = plan::parse_expected(&text, &path.display().to_string())
                .map_err(|e| SetupError(e.to_string()))?;
            if expected.is_empty() {
                eprintln!(
                    "warning: no expected outcomes in {}: every package counts as a mismatch",
                    path.display()
                );
            }
            (expected, true)
        }
    };
    let log_dir = repo.join("target/accept-catalog");
    std::fs::create_dir_all(&log_dir)?;
    let controller_log = log_dir.join("controller.log");
    let serve_log = log_dir.join("serve.log");
    // Unique per run (as the script's mkdtemp), so two runs never share an unpacked catalog.
    let work = log_dir.join(format!("work-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let (catalog_spec, label) = match &args.catalog {
        None => {
            let archive = catalog::corpus_archive(repo, ARCHIVE).map_err(|e| SetupError(format!("{e:#}")))?;
            (Catalog::Archive(archive), ARCHIVE.to_owned())
        }
        Some(c) => (c.clone(), c.label()),
    };
    let catalog_loc = match &catalog_spec {
        Catalog::Image(image) => image.clone(),
        other => catalog::as_dir(other, &work.join("catalog"))
            .map_err(|e| SetupError(format!("{e:#}")))?
            .to_string_lossy()
            .into_owned(),
    };
    if args.check {
        let outcome = check_catalog(&cli, &catalog_loc, &label, &expected, compare, &serve_log);
        let _ = std::fs::remove_dir_all(&work);
        return outcome;
    }
    let cluster = Cluster::find(repo).map_err(|e| SetupError(format!("{e:#}")))?;
    let outcome = run_phases(
        repo,
        &args,
        &cluster,
        &cli,
        &controller_bin,
        &catalog_loc,
        &label,
        &expected,
        compare,
        &controller_log,
        &serve_log,
        &work,
    )
    .await;
    let _ = std::fs::remove_dir_all(&work);
    match &outcome {
        Ok(true) if !args.keep => {
            let _ = std::fs::remove_file(&controller_log);
            let _ = std::fs::remove_file(&serve_log);
        }
        _ => println!("logs kept: {}, {}", controller_log.display(), serve_log.display()),
    }
    outcome
}

/// `--check`: the bench's premises on the catalog, without a cluster (what the script's
/// `--self-test` checked on the real catalog). Prints each check; whether all held.
fn check_catalog(
    cli: &Path,
    catalog: &str,
    label: &str,
    expected: &BTreeMap<String, (String, String)>,
    compare: bool,
    serve_log: &Path,
) -> anyhow::Result<bool> {
    let serve = start_serve(cli, catalog, serve_log)?;
    let runtime = tokio::runtime::Handle::current();
    let blobs = tokio::task::block_in_place(|| runtime.block_on(load_blobs(&serve.http)))?;
    drop(serve);
    let facts = plan::catalog_packages(&blobs);
    let mut ok = true;
    let mut check = |held: bool, what: String| {
        println!("  {}  {what}", if held { "ok" } else { "NO" });
        ok &= held;
    };
    println!("catalog {label}: {} packages", facts.len());
    let no_head: Vec<&String> = facts
        .iter()
        .filter(|(_, f)| f.head.is_none() || f.csv.is_none())
        .map(|(p, _)| p)
        .collect();
    check(
        no_head.is_empty(),
        format!(
            "every default channel has one head with an inlined CSV ({})",
            if no_head.is_empty() {
                "all".to_owned()
            } else {
                format!("not: {no_head:?}")
            }
        ),
    );
    let mut chosen: BTreeMap<String, usize> = BTreeMap::new();
    for (package, f) in &facts {
        let mode = plan::choose_operator_group(f.csv.as_ref(), &plan::namespace_for("acc", package))
            .map_or_else(|| "none".to_owned(), |(m, _)| m);
        *chosen.entry(mode).or_default() += 1;
    }
    check(
        !chosen.contains_key("none"),
        format!("an OperatorGroup for every package: {chosen:?}"),
    );
    if compare {
        let listed: BTreeSet<&String> = expected.keys().collect();
        let have: BTreeSet<&String> = facts.keys().collect();
        check(
            listed == have,
            "the expect file lists exactly the catalog's packages".to_owned(),
        );
        let not: Vec<String> = expected
            .iter()
            .filter(|(_, (o, _))| o != "Succeeded")
            .map(|(p, (o, _))| format!("{p} ({o})"))
            .collect();
        println!("  expected not to succeed: {}", not.join(", "));
    }
    let mut hops = Vec::new();
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    let mut stops = Vec::new();
    for (package, f) in &facts {
        match walk_plan(cli, catalog, package, &f.channel) {
            Err(e) => check(false, format!("walk {package}: {e}")),
            Ok((tail, path)) => {
                let unique: BTreeSet<&String> = path.iter().collect();
                let known = path.iter().all(|e| *e == tail || f.entries.contains(e));
                check(
                    path.last() == f.head.as_ref()
                        && path.first() == Some(&tail)
                        && unique.len() == path.len()
                        && known,
                    format!(
                        "walk {package}: {} hop(s) from {tail} to the head",
                        path.len() - 1
                    ),
                );
                hops.push(path.len() - 1);
                match plan::choose_walk_group(&path, &f.csvs, &plan::namespace_for("accw", package)) {
                    None => *groups.entry("none".into()).or_default() += 1,
                    Some((mode, _, halt)) => {
                        if let Some((entry, modes)) = halt {
                            stops.push(format!(
                                "{package} (group {mode} from {tail}; {entry} supports {})",
                                modes.join(", ")
                            ));
                        }
                        *groups.entry(mode).or_default() += 1;
                    }
                }
            }
        }
    }
    hops.sort_unstable();
    println!(
        "  walks: {} hops in all, longest {}, {} package(s) with a one-entry walk",
        hops.iter().sum::<usize>(),
        hops.last().copied().unwrap_or(0),
        hops.iter().filter(|h| **h == 0).count()
    );
    check(
        !groups.contains_key("none"),
        format!("an OperatorGroup for every walk start: {groups:?}"),
    );
    println!(
        "  walks expected to stop at an install-mode change: {}",
        if stops.is_empty() {
            "none".to_owned()
        } else {
            stops.join(", ")
        }
    );
    println!("{}", if ok { "check passed" } else { "check FAILED" });
    Ok(ok)
}

#[allow(clippy::too_many_arguments, reason = "the bench's whole set-up, passed once")]
async fn run_phases(
    repo: &Path,
    args: &AcceptArgs,
    cluster: &Cluster,
    cli: &Path,
    controller_bin: &Path,
    catalog: &str,
    label: &str,
    expected: &BTreeMap<String, (String, String)>,
    compare: bool,
    controller_log: &Path,
    serve_log: &Path,
    work: &Path,
) -> anyhow::Result<bool> {
    let serve = start_serve(cli, catalog, serve_log)?;
    let blobs = load_blobs(&serve.http)
        .await
        .map_err(|e| SetupError(format!("{e:#}")))?;
    let facts = plan::catalog_packages(&blobs);
    let unknown: Vec<&String> = args.package.iter().filter(|p| !facts.contains_key(*p)).collect();
    if !unknown.is_empty() {
        bail!(SetupError(format!(
            "unknown package(s) {}; the catalog has: {}",
            unknown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
            facts.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let mut packages: Vec<String> = if args.package.is_empty() {
        facts.keys().cloned().collect()
    } else {
        let mut p = args.package.clone();
        p.sort();
        p.dedup();
        p
    };
    if let Some(limit) = args.limit {
        packages.truncate(limit as usize);
    }
    let crds: Vec<String> = packages
        .iter()
        .flat_map(|p| facts[p].crds.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    println!(
        "catalog {label}: {} packages, served on {}; running {}",
        facts.len(),
        serve.grpc,
        packages.len()
    );
    let client = cluster.client().await.map_err(|e| SetupError(format!("{e:#}")))?;
    let kube = Kube(client.clone());
    install_crds(cluster, repo, &kube, &args.namespace).await?;
    let _ = std::fs::remove_file(controller_log);
    let cache = work.join("cache");
    let mut controller = Controller::start(
        controller_bin,
        cluster,
        &[
            "--namespace",
            &args.namespace,
            "--cache-dir",
            &cache.to_string_lossy(),
        ],
        controller_log,
        "info,olm_rs=debug",
    )?;
    println!(
        "olm-controller pid {}, log {}",
        controller.pid(),
        controller_log.display()
    );
    let source = match args.source {
        Source::Grpc => ("grpc", serve.grpc.clone()),
        Source::Http => ("http", format!("http://{}", serve.http)),
    };
    let mut used_ns: Vec<String> = Vec::new();
    let mut operators = BTreeSet::new();
    let phases = async {
        let log = controller.log.clone();
        let mut alive = || {
            if controller.running() {
                Ok(())
            } else {
                Err(format!("olm-controller exited; see {}", controller.log.display()))
            }
        };
        create_catalog_source(
            &kube,
            &args.namespace,
            source,
            &mut alive,
            Duration::from_secs(120),
            &log,
        )
        .await?;
        let timeout = Duration::from_secs_f64(args.timeout);
        let (results, used) = run_installs(&kube, &facts, &packages, &args.namespace, timeout).await?;
        used_ns = used;
        operators = plan::operator_names(&packages, &["acc"]);
        let outcomes: BTreeMap<String, String> = results
            .iter()
            .map(|(p, (o, _, _))| (p.clone(), o.clone()))
            .collect();
        let acc_ns: BTreeMap<String, String> = packages
            .iter()
            .map(|p| (p.clone(), plan::namespace_for("acc", p)))
            .collect();
        let hooks = check_installed_webhooks(&kube, &outcomes, &acc_ns).await;
        let mut ok = report_installs(&results, expected, &args.out, &hooks, compare)?;
        if args.walks {
            println!("\nclean-up before the walks ...");
            let leftover = cleanup(&kube, &used_ns, &crds, &operators).await?;
            used_ns.clear();
            let walkers: Vec<String> = packages
                .iter()
                .filter(|p| outcomes[*p] == "Succeeded")
                .cloned()
                .collect();
            let skipped: Vec<&String> = packages.iter().filter(|p| !walkers.contains(p)).collect();
            if !skipped.is_empty() {
                println!(
                    "walks skipped (no Succeeded install): {}",
                    skipped.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                );
            }
            println!(
                "walking {} default channels from their oldest entry",
                walkers.len()
            );
            operators = plan::operator_names(&walkers, &["accw"]);
            // olm-rs keeps at most five InstallPlans per namespace, as upstream does: record them all.
            let recorder = PlanRecorder::start(client.clone(), "accw-");
            let walk_timeout = Duration::from_secs_f64(args.walk_timeout);
            let (walks, used) = run_walks(
                &kube,
                cli,
                catalog,
                &facts,
                &walkers,
                &args.namespace,
                walk_timeout,
                &leftover,
                &recorder,
            )
            .await?;
            used_ns = used;
            drop(recorder);
            let walk_outcomes: BTreeMap<String, String> =
                walks.iter().map(|(p, w)| (p.clone(), w.0.clone())).collect();
            let accw_ns: BTreeMap<String, String> = walkers
                .iter()
                .map(|p| (p.clone(), plan::namespace_for("accw", p)))
                .collect();
            let walk_hooks = check_installed_webhooks(&kube, &walk_outcomes, &accw_ns).await;
            ok = report_walks(&walks, &plan::out_path_for_walks(&args.out), &walk_hooks)? && ok;
        }
        anyhow::Ok(ok)
    }
    .await;
    if args.keep {
        println!(
            "\nkept: namespaces {} and CatalogSource {}/{SOURCE_NAME}",
            used_ns.join(", "),
            args.namespace
        );
    } else {
        println!("\ncleaning up ...");
        let cleaned = async {
            kube.delete(&format!(
                "{OPS}/v1alpha1/namespaces/{}/catalogsources/{SOURCE_NAME}",
                args.namespace
            ))
            .await?;
            cleanup(&kube, &used_ns, &crds, &operators).await
        }
        .await;
        if let Err(e) = cleaned {
            eprintln!("warning: clean-up incomplete: {e:#}");
        }
    }
    controller.stop(Duration::from_secs(30));
    drop(serve);
    phases
}
