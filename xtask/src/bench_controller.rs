//! bench_controller: `cargo xtask bench-controller`: olm-controller on the local control plane
//! (issue 4, "Benchmark").
//!
//! Starts its own olm-controller against the cluster, serves a one-bundle fixture operator from
//! a ConfigMap catalog, and measures:
//!   (a) sequential Automatic installs (default 20), each in a fresh namespace: Subscription
//!       create → CSV Succeeded, split into the controller's share (Subscription create →
//!       Deployment created, plus Deployment Available → CSV Succeeded) and the cluster's rollout
//!       (Deployment created → Available; kwok fakes the pods' readiness). p50/p95.
//!   (b) Subscriptions created at once in that many namespaces (default 100): time until every
//!       CSV is Succeeded, the timeline of its stages, and the CPU seconds of each process.
//!   (c) the controller's peak RSS (VmHWM) and its API requests per install during (a), read from
//!       its `/metrics` (`olmrs_api_requests_total`, per method, resource and scope).
//!   (d) status writes that change nothing: status PATCHes sent in the bench namespaces (from
//!       the same counter) minus the status changes seen by watches on them (a change that only
//!       moves timestamps counts as changing nothing).
//!
//! All times are taken client-side from watch events, not from the objects' second-resolution
//! timestamps. Leaves nothing behind: its namespaces, CatalogSource, ConfigMap and Operator
//! objects are deleted at the end.

use std::{
    collections::{BTreeMap, HashMap},
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams},
    runtime::watcher,
};
use serde_json::{Value, json};

use crate::{
    args::{ControllerArgs, default_binary},
    cluster::{self, Cluster, Controller},
    metrics_text, stats,
    summary::{self, Figure, Op},
};

const PACKAGE: &str = "bench-operator";
const CATALOG: &str = "bench-catalog";
const GLOBAL_NS: &str = "olm";
const TIME_KEYS: [&str; 6] = [
    "lastUpdated",
    "lastUpdateTime",
    "lastTransitionTime",
    "lastHeartbeatTime",
    "lastConnect",
    "lastProbeTime",
];

/// The fixture catalog: one package, one bundle, one tiny Deployment, a namespaced permission
/// (JSON documents separated by `---`).
pub fn fixture_catalog() -> String {
    use base64::Engine as _;
    let csv = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": format!("{PACKAGE}.v1.0.0")},
        "spec": {
            "displayName": "Bench Operator",
            "version": "1.0.0",
            "installModes": [
                {"type": "OwnNamespace", "supported": true},
                {"type": "SingleNamespace", "supported": true},
                {"type": "MultiNamespace", "supported": false},
                {"type": "AllNamespaces", "supported": false},
            ],
            "install": {
                "strategy": "deployment",
                "spec": {
                    "permissions": [{
                        "serviceAccountName": PACKAGE,
                        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}],
                    }],
                    "deployments": [{
                        "name": PACKAGE,
                        "spec": {
                            "replicas": 1,
                            "selector": {"matchLabels": {"app": PACKAGE}},
                            "template": {
                                "metadata": {"labels": {"app": PACKAGE}},
                                "spec": {
                                    "serviceAccountName": PACKAGE,
                                    "containers": [{"name": "manager", "image": "registry.example.com/bench:1.0.0",
                                                    "resources": {"requests": {"cpu": "1m", "memory": "4Mi"}}}],
                                },
                            },
                        },
                    }],
                },
            },
        },
    });
    let data = base64::engine::general_purpose::STANDARD.encode(csv.to_string());
    let docs = [
        json!({"schema": "olm.package", "name": PACKAGE, "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": PACKAGE, "name": "stable",
               "entries": [{"name": format!("{PACKAGE}.v1.0.0")}]}),
        json!({
            "schema": "olm.bundle", "name": format!("{PACKAGE}.v1.0.0"), "package": PACKAGE,
            "image": "registry.example.com/bench-bundle:1.0.0",
            "properties": [
                {"type": "olm.package", "value": {"packageName": PACKAGE, "version": "1.0.0"}},
                {"type": "olm.bundle.object", "value": {"data": data}},
            ],
        }),
    ];
    docs.iter().map(|d| format!("---\n{d}\n")).collect()
}

/// `v` without the timestamp fields (at any depth).
pub fn strip_time(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !TIME_KEYS.contains(&k.as_str()))
                .map(|(k, x)| (k.clone(), strip_time(x)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_time).collect()),
        other => other.clone(),
    }
}

/// The kinds whose status the bench watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Csv,
    Sub,
    Ip,
    Og,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Csv, Kind::Sub, Kind::Ip, Kind::Og];

    fn plural(self) -> &'static str {
        match self {
            Kind::Csv => "clusterserviceversions",
            Kind::Sub => "subscriptions",
            Kind::Ip => "installplans",
            Kind::Og => "operatorgroups",
        }
    }

    fn resource(self) -> ApiResource {
        let (version, kind) = match self {
            Kind::Csv => ("v1alpha1", "ClusterServiceVersion"),
            Kind::Sub => ("v1alpha1", "Subscription"),
            Kind::Ip => ("v1alpha1", "InstallPlan"),
            Kind::Og => ("v1", "OperatorGroup"),
        };
        olm_resource(version, kind, self.plural())
    }
}

fn olm_resource(version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("operators.coreos.com", version, kind),
        plural,
    )
}

/// How a watch saw an object.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Seen {
    /// Listed when the watch (re)started: recorded, not counted as a change.
    Existing,
    /// Added or modified.
    Applied,
}

/// What the watches saw of the bench namespaces: per-namespace times and status-change counts.
#[derive(Debug, Default)]
pub struct Observer {
    prefix: String,
    pub dep_created: HashMap<String, Instant>,
    pub dep_available: HashMap<String, Instant>,
    pub csv_succeeded: HashMap<String, Instant>,
    /// First sighting per namespace of each kind, and of each CSV phase (the (b) timeline).
    pub first_seen: HashMap<(Kind, String), Instant>,
    pub csv_phase_seen: HashMap<(String, String), Instant>,
    last_status: HashMap<(Kind, String, String), Value>,
    pub status_changes: u64,
    pub time_only_changes: u64,
    pub changes_by_kind: BTreeMap<Kind, u64>,
}

impl Observer {
    pub fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
            ..Self::default()
        }
    }

    fn ours<'a>(&self, obj: &'a Value) -> Option<&'a str> {
        let ns = obj.pointer("/metadata/namespace")?.as_str()?;
        ns.starts_with(&self.prefix).then_some(ns)
    }

    /// A Deployment event.
    pub fn on_deployment(&mut self, obj: &Value, now: Instant) {
        let Some(ns) = self.ours(obj) else { return };
        let ns = ns.to_owned();
        self.dep_created.entry(ns.clone()).or_insert(now);
        let available = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Available" && c["status"] == "True")
            });
        if available {
            self.dep_available.entry(ns).or_insert(now);
        }
    }

    /// A status-carrying object's event.
    pub fn on_status(&mut self, kind: Kind, seen: Seen, obj: &Value, now: Instant) {
        let Some(ns) = self.ours(obj) else { return };
        let ns = ns.to_owned();
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let status = match obj.get("status") {
            Some(Value::Null) | None => json!({}),
            Some(s) => s.clone(),
        };
        let key = (kind, ns.clone(), name);
        let has_status = status.as_object().is_some_and(|m| !m.is_empty());
        match (seen, self.last_status.get(&key)) {
            (Seen::Applied, Some(old)) => {
                if strip_time(old) != strip_time(&status) {
                    self.status_changes += 1;
                    *self.changes_by_kind.entry(kind).or_default() += 1;
                } else if *old != status {
                    self.time_only_changes += 1;
                }
            }
            (Seen::Applied, None) if has_status => self.status_changes += 1,
            _ => {}
        }
        self.first_seen.entry((kind, ns.clone())).or_insert(now);
        if kind == Kind::Csv
            && let Some(phase) = status.get("phase").and_then(Value::as_str)
            && !phase.is_empty()
        {
            self.csv_phase_seen
                .entry((ns.clone(), phase.to_owned()))
                .or_insert(now);
            if phase == "Succeeded" {
                self.csv_succeeded.entry(ns).or_insert(now);
            }
        }
        self.last_status.insert(key, status);
    }

    fn og_ready(&self, ns: &str) -> bool {
        self.last_status
            .get(&(Kind::Og, ns.to_owned(), "og".to_owned()))
            .and_then(|s| s.get("namespaces"))
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty())
    }
}

/// The observer shared with the watch tasks, and the wake-up of whoever waits on it.
#[derive(Clone)]
struct Shared {
    state: Arc<Mutex<Observer>>,
    changed: Arc<tokio::sync::Notify>,
}

impl Shared {
    fn with<T>(&self, f: impl FnOnce(&mut Observer) -> T) -> T {
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    fn update(&self, f: impl FnOnce(&mut Observer)) {
        self.with(f);
        self.changed.notify_waiters();
    }

    /// Waits until `pred` holds, up to `timeout`; whether it held.
    async fn wait(&self, pred: impl Fn(&Observer) -> bool, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.with(|o| pred(o)) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.with(|o| pred(o));
            }
        }
    }
}

fn spawn_watch(
    api: Api<DynamicObject>,
    config: watcher::Config,
    shared: Shared,
    handle: impl Fn(&mut Observer, Seen, &Value, Instant) + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut stream = watcher(api, config).boxed();
        while let Some(event) = stream.next().await {
            let now = Instant::now();
            let (seen, obj) = match event {
                Ok(watcher::Event::Apply(obj)) => (Seen::Applied, obj),
                Ok(watcher::Event::InitApply(obj)) => (Seen::Existing, obj),
                Ok(_) => continue,
                // The watcher retries by itself; a fresh cluster answers 429 while new CRDs'
                // storage initialises.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            let Ok(value) = serde_json::to_value(&obj) else {
                continue;
            };
            shared.update(|o| handle(o, seen, &value, now));
        }
    })
}

fn dynamic(value: Value) -> anyhow::Result<DynamicObject> {
    serde_json::from_value(value).context("a bench object does not parse")
}

async fn create(api: &Api<DynamicObject>, value: Value) -> anyhow::Result<()> {
    let obj = dynamic(value)?;
    api.create(&PostParams::default(), &obj)
        .await
        .with_context(|| format!("failed to create {}", obj.metadata.name.unwrap_or_default()))?;
    Ok(())
}

async fn delete_if_there(api: &Api<DynamicObject>, name: &str) -> anyhow::Result<()> {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("failed to delete {name}")),
    }
}

/// The API request counter of the controller now.
async fn requests(controller: &Controller) -> anyhow::Result<metrics_text::Requests> {
    let text = controller.metrics_text().await?;
    let samples = metrics_text::parse(&text)?;
    let requests = metrics_text::api_requests(&samples);
    if requests.is_empty() {
        bail!(
            "the controller's /metrics has no {}: build an olm-controller that counts its API requests",
            metrics_text::API_REQUESTS
        );
    }
    Ok(requests)
}

/// One sequential install's times (seconds).
struct Install {
    total: f64,
    controller: f64,
    rollout: f64,
}

/// What (b) measured.
struct Parallel {
    count: usize,
    done: usize,
    ok: bool,
    created_in: f64,
    all_done: f64,
    all_created: f64,
    all_available: f64,
    rollout: Vec<f64>,
    timeline: Vec<(String, usize, f64, f64)>,
    cpu: Vec<(String, f64)>,
}

struct Bench {
    client: kube::Client,
    shared: Shared,
    prefix: String,
    namespaces: Vec<String>,
    timeout: Duration,
}

impl Bench {
    async fn make_namespace(&mut self, i: usize) -> anyhow::Result<String> {
        let ns = format!("{}{i:03}", self.prefix);
        self.namespaces.push(ns.clone());
        let namespaces: Api<DynamicObject> = Api::all_with(
            self.client.clone(),
            &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Namespace"), "namespaces"),
        );
        create(
            &namespaces,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
        let groups: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &ns, &Kind::Og.resource());
        create(
            &groups,
            json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                   "metadata": {"name": "og", "namespace": ns}, "spec": {"targetNamespaces": [ns]}}),
        )
        .await?;
        Ok(ns)
    }

    async fn subscribe(client: kube::Client, ns: String) -> anyhow::Result<Instant> {
        let subs: Api<DynamicObject> = Api::namespaced_with(client, &ns, &Kind::Sub.resource());
        let t0 = Instant::now();
        create(
            &subs,
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                   "metadata": {"name": PACKAGE, "namespace": ns},
                   "spec": {"name": PACKAGE, "channel": "stable", "installPlanApproval": "Automatic",
                            "source": CATALOG, "sourceNamespace": GLOBAL_NS}}),
        )
        .await?;
        Ok(t0)
    }

    async fn sequential(&mut self, count: usize, failures: &mut Vec<String>) -> anyhow::Result<Vec<Install>> {
        let mut rows = Vec::new();
        for i in 0..count {
            let ns = self.make_namespace(i).await?;
            if !self.shared.wait(|o| o.og_ready(&ns), self.timeout).await {
                failures.push(format!("OperatorGroup {ns}/og never got status.namespaces"));
                continue;
            }
            let t0 = Self::subscribe(self.client.clone(), ns.clone()).await?;
            if !self
                .shared
                .wait(|o| o.csv_succeeded.contains_key(&ns), self.timeout)
                .await
            {
                failures.push(format!(
                    "install {ns} did not reach CSV Succeeded within {:.0}s",
                    self.timeout.as_secs_f64()
                ));
                continue;
            }
            let (created, available, done) = self.shared.with(|o| {
                (
                    o.dep_created.get(&ns).copied(),
                    o.dep_available.get(&ns).copied(),
                    o.csv_succeeded.get(&ns).copied(),
                )
            });
            let (Some(created), Some(available), Some(done)) = (created, available, done) else {
                failures.push(format!(
                    "install {ns}: Deployment creation/availability not observed"
                ));
                continue;
            };
            let secs = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
            let controller = secs(t0, created) + secs(available, done);
            let row = Install {
                total: secs(t0, done),
                controller,
                rollout: secs(created, available),
            };
            println!(
                "  {ns}: total {:7.1} ms  controller {:7.1} ms  rollout {:7.1} ms",
                1000.0 * row.total,
                1000.0 * row.controller,
                1000.0 * row.rollout
            );
            rows.push(row);
        }
        Ok(rows)
    }

    async fn parallel(
        &mut self,
        first: usize,
        count: usize,
        pids: &[(String, u32)],
        failures: &mut Vec<String>,
    ) -> anyhow::Result<Parallel> {
        let mut par = Vec::new();
        for i in 0..count {
            par.push(self.make_namespace(first + i).await?);
        }
        if !self
            .shared
            .wait(|o| par.iter().all(|ns| o.og_ready(ns)), self.timeout)
            .await
        {
            failures.push("not every OperatorGroup of (b) got status.namespaces".to_owned());
        }
        let ticks = cluster::clock_ticks();
        let cpu_before: Vec<(String, u32, Option<f64>)> = pids
            .iter()
            .map(|(name, pid)| (name.clone(), *pid, cluster::cpu_seconds(*pid, ticks)))
            .collect();
        let start = Instant::now();
        // 16 at a time, as the script's thread pool.
        let results: Vec<anyhow::Result<Instant>> = futures::stream::iter(par.clone())
            .map(|ns| Self::subscribe(self.client.clone(), ns))
            .buffer_unordered(16)
            .collect()
            .await;
        for r in results {
            r?;
        }
        let created_in = start.elapsed().as_secs_f64();
        let ok = self
            .shared
            .wait(
                |o| par.iter().all(|ns| o.csv_succeeded.contains_key(ns)),
                self.timeout.max(Duration::from_secs(300)),
            )
            .await;
        let mut cpu = Vec::new();
        for (name, pid, before) in cpu_before {
            if let (Some(before), Some(after)) = (before, cluster::cpu_seconds(pid, ticks)) {
                cpu.push((name, after - before));
            }
        }
        cpu.sort_by(|a, b| b.1.total_cmp(&a.1));
        let since = |t: Instant| t.saturating_duration_since(start).as_secs_f64();
        let measured = self.shared.with(|o| {
            let o: &Observer = o;
            let last = |m: &HashMap<String, Instant>| {
                par.iter()
                    .map(|ns| m.get(ns).map_or(0.0, |t| since(*t)))
                    .fold(0.0, f64::max)
            };
            let rollout: Vec<f64> = par
                .iter()
                .filter_map(|ns| {
                    Some(
                        o.dep_available
                            .get(ns)?
                            .saturating_duration_since(*o.dep_created.get(ns)?)
                            .as_secs_f64(),
                    )
                })
                .collect();
            let done = par.iter().filter(|ns| o.csv_succeeded.contains_key(*ns)).count();
            // Where the time goes: per stage, seconds after the start of (b) (p50 / max over the
            // namespaces), from the first watch event showing each object or CSV phase.
            type At<'a> = Box<dyn Fn(&str) -> Option<Instant> + 'a>;
            let mut stages: Vec<(String, At<'_>)> = vec![
                (
                    "Subscription seen".into(),
                    Box::new(|ns: &str| o.first_seen.get(&(Kind::Sub, ns.to_owned())).copied()),
                ),
                (
                    "InstallPlan seen".into(),
                    Box::new(|ns: &str| o.first_seen.get(&(Kind::Ip, ns.to_owned())).copied()),
                ),
                (
                    "CSV seen".into(),
                    Box::new(|ns: &str| o.first_seen.get(&(Kind::Csv, ns.to_owned())).copied()),
                ),
            ];
            for phase in ["Pending", "InstallReady", "Installing"] {
                stages.push((
                    format!("CSV {phase}"),
                    Box::new(move |ns: &str| {
                        o.csv_phase_seen.get(&(ns.to_owned(), phase.to_owned())).copied()
                    }),
                ));
            }
            stages.push((
                "Deployment created".into(),
                Box::new(|ns: &str| o.dep_created.get(ns).copied()),
            ));
            stages.push((
                "Deployment Available".into(),
                Box::new(|ns: &str| o.dep_available.get(ns).copied()),
            ));
            stages.push((
                "CSV Succeeded".into(),
                Box::new(|ns: &str| o.csv_succeeded.get(ns).copied()),
            ));
            let timeline: Vec<(String, usize, f64, f64)> = stages
                .iter()
                .filter_map(|(label, at)| {
                    let seen: Vec<f64> = par.iter().filter_map(|ns| at(ns)).map(since).collect();
                    let p50 = stats::percentile(&seen, 50.0)?;
                    Some((
                        label.clone(),
                        seen.len(),
                        p50,
                        seen.iter().copied().fold(0.0, f64::max),
                    ))
                })
                .collect();
            (
                last(&o.csv_succeeded),
                last(&o.dep_created),
                last(&o.dep_available),
                rollout,
                done,
                timeline,
            )
        });
        let (all_done, all_created, all_available, rollout, done, timeline) = measured;
        if !ok {
            failures.push(format!("(b): only {done}/{} CSVs Succeeded", par.len()));
        }
        println!(
            "  created in {created_in:.2} s; {done}/{} Succeeded after {all_done:.2} s",
            par.len()
        );
        Ok(Parallel {
            count: par.len(),
            done,
            ok,
            created_in,
            all_done,
            all_created,
            all_available,
            rollout,
            timeline,
            cpu,
        })
    }

    /// Deletes the namespaces (while the controller runs: CSVs carry its finalizer), the
    /// catalog, and the cluster-scoped Operators of this run.
    async fn clean_up(&self, cluster: &Cluster) -> anyhow::Result<()> {
        if !self.namespaces.is_empty() {
            let mut args = vec!["delete", "namespace", "--wait=false", "--ignore-not-found"];
            args.extend(self.namespaces.iter().map(String::as_str));
            let _ = cluster.kubectl().args(&args).output();
        }
        let sources: Api<DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            GLOBAL_NS,
            &olm_resource("v1alpha1", "CatalogSource", "catalogsources"),
        );
        delete_if_there(&sources, CATALOG).await?;
        let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.client.clone(), GLOBAL_NS);
        if let Err(e) = maps.delete(CATALOG, &DeleteParams::default()).await
            && !matches!(&e, kube::Error::Api(s) if s.code == 404)
        {
            return Err(e).context("failed to delete the bench ConfigMap");
        }
        println!("\ndeleting {} namespaces ...", self.namespaces.len());
        let all: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        let deadline = Instant::now() + Duration::from_secs(180);
        while !self.namespaces.is_empty() && Instant::now() < deadline {
            let names: Vec<String> = all
                .list_metadata(&ListParams::default())
                .await?
                .items
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .collect();
            if !names.iter().any(|n| self.namespaces.contains(n)) {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        // The cluster-scoped Operator objects stay when their components go (as upstream's do):
        // delete this run's, or every later run starts by reconciling and caching them all.
        let operators: Api<DynamicObject> =
            Api::all_with(self.client.clone(), &olm_resource("v1", "Operator", "operators"));
        for ns in &self.namespaces {
            delete_if_there(&operators, &format!("{PACKAGE}.{ns}")).await?;
        }
        Ok(())
    }
}

/// Runs the bench; whether every figure met its target.
pub async fn run(repo: &Path, args: ControllerArgs) -> anyhow::Result<bool> {
    let cluster = Cluster::find(repo)?;
    let binary = args
        .controller
        .clone()
        .unwrap_or_else(|| default_binary(repo, "olm-controller"));
    let client = cluster.client().await?;
    let run_id = format!(
        "{:05}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() % 100_000)
    );
    let prefix = format!("bench-{run_id}-");
    let out_dir = repo.join("target/bench-controller");
    let log_path = out_dir.join("controller.log");
    let _ = std::fs::remove_file(&log_path);

    cluster.install_crds(repo)?;
    let _ = cluster
        .kubectl()
        .args(["create", "namespace", GLOBAL_NS])
        .output();

    // The fixture catalog.
    let maps: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        GLOBAL_NS,
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "ConfigMap"), "configmaps"),
    );
    delete_if_there(&maps, CATALOG).await?;
    create(
        &maps,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CATALOG, "namespace": GLOBAL_NS},
               "data": {"catalog.yaml": fixture_catalog()}}),
    )
    .await?;
    let sources: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        GLOBAL_NS,
        &olm_resource("v1alpha1", "CatalogSource", "catalogsources"),
    );
    delete_if_there(&sources, CATALOG).await?;
    create(
        &sources,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": CATALOG, "namespace": GLOBAL_NS},
               "spec": {"sourceType": "configmap", "configMap": CATALOG,
                        "displayName": "bench catalog", "publisher": "olm-rs bench"}}),
    )
    .await?;

    // Extra log directives (e.g. olm_rs::controller=debug) come from OLMRS_BENCH_LOG.
    let mut directives = "info,kube=warn".to_owned();
    if let Ok(extra) = std::env::var("OLMRS_BENCH_LOG")
        && !extra.is_empty()
    {
        directives = format!("{directives},{extra}");
    }
    let mut controller = Controller::start(
        &binary,
        &cluster,
        &["--namespace", GLOBAL_NS],
        &log_path,
        &directives,
    )?;
    println!(
        "olm-controller pid {}, log {}; namespaces {prefix}*",
        controller.pid(),
        log_path.strip_prefix(repo).unwrap_or(&log_path).display()
    );

    let shared = Shared {
        state: Arc::new(Mutex::new(Observer::new(&prefix))),
        changed: Arc::new(tokio::sync::Notify::new()),
    };
    let deployments: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("apps", "v1", "Deployment"), "deployments"),
    );
    let mut watches = vec![spawn_watch(
        deployments,
        watcher::Config::default().labels("olm.owner.kind=ClusterServiceVersion"),
        shared.clone(),
        |o, _, v, now| o.on_deployment(v, now),
    )];
    for kind in Kind::ALL {
        watches.push(spawn_watch(
            Api::all_with(client.clone(), &kind.resource()),
            watcher::Config::default(),
            shared.clone(),
            move |o, seen, v, now| o.on_status(kind, seen, v, now),
        ));
    }

    let mut bench = Bench {
        client: client.clone(),
        shared: shared.clone(),
        prefix: prefix.clone(),
        namespaces: Vec::new(),
        timeout: Duration::from_secs_f64(args.timeout),
    };
    let mut failures = Vec::new();
    let measured = measure(
        &mut bench,
        &mut controller,
        &cluster,
        &sources,
        &args,
        &mut failures,
    )
    .await;
    let cleaned = bench.clean_up(&cluster).await;
    for w in watches {
        w.abort();
    }
    controller.stop(Duration::from_secs(10));
    let m = measured?;
    cleaned?;
    report(&binary, &args, &m, &failures, &out_dir)
}

/// Everything measured, for the report.
struct Measured {
    installs: Vec<Install>,
    requests: metrics_text::Requests,
    status_changes: u64,
    time_only: u64,
    changes_by_kind: BTreeMap<Kind, u64>,
    parallel: Parallel,
    hwm_kib: u64,
}

async fn measure(
    bench: &mut Bench,
    controller: &mut Controller,
    cluster: &Cluster,
    sources: &Api<DynamicObject>,
    args: &ControllerArgs,
    failures: &mut Vec<String>,
) -> anyhow::Result<Measured> {
    // Wait for the controller and the catalog.
    let deadline = Instant::now() + bench.timeout;
    loop {
        let cs = sources.get(CATALOG).await?;
        if cs.data.pointer("/status/connectionState/lastObservedState") == Some(&json!("READY")) {
            break;
        }
        if !controller.running() || Instant::now() > deadline {
            bail!(
                "the bench catalog never became READY; see {}",
                controller.log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Let the start-up pass settle (every existing object is reconciled once): requests made
    // before (a) are not charged to its installs. Quiet = no request counted for 3 s.
    let settle_deadline = Instant::now() + Duration::from_secs(120);
    let mut quiet_since = Instant::now();
    let mut startup = -1.0;
    while Instant::now() < settle_deadline {
        let seen = metrics_text::total(&requests(controller).await?, |_, _, _| true);
        if (seen - startup).abs() > f64::EPSILON {
            startup = seen;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= Duration::from_secs(3) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!("start-up pass: {startup} API requests before (a)");

    // (a) sequential installs.
    println!("\n(a) {} sequential Automatic installs", args.sequential);
    let before = requests(controller).await?;
    let (changes0, time_only0, by_kind0) = bench
        .shared
        .with(|o| (o.status_changes, o.time_only_changes, o.changes_by_kind.clone()));
    let installs = bench.sequential(args.sequential, failures).await?;
    tokio::time::sleep(Duration::from_secs(2)).await; // let trailing status writes land before counting
    let after = requests(controller).await?;
    let requests = metrics_text::delta(&before, &after);
    let (status_changes, time_only, changes_by_kind) = bench.shared.with(|o| {
        (
            o.status_changes - changes0,
            o.time_only_changes - time_only0,
            o.changes_by_kind
                .iter()
                .map(|(k, v)| (*k, v - by_kind0.get(k).copied().unwrap_or(0)))
                .collect(),
        )
    });

    // (b) parallel installs.
    println!("\n(b) {} Subscriptions created at once", args.parallel);
    let mut pids = cluster.pids();
    pids.retain(|(name, _)| name != "olm-controller");
    pids.push(("olm-controller".to_owned(), controller.pid()));
    let parallel = bench
        .parallel(args.sequential, args.parallel, &pids, failures)
        .await?;
    let hwm_kib = controller.vm_hwm_kib();
    Ok(Measured {
        installs,
        requests,
        status_changes,
        time_only,
        changes_by_kind,
        parallel,
        hwm_kib,
    })
}

/// Status PATCHes in the bench namespaces (scope `namespace`).
fn status_patches(requests: &metrics_text::Requests, resource: Option<&str>) -> f64 {
    metrics_text::total(requests, |m, r, s| {
        m == "PATCH"
            && s == "namespace"
            && r.ends_with("/status")
            && resource.is_none_or(|res| r.strip_suffix("/status") == Some(res))
    })
}

/// The figures of a run, with their built-in targets.
fn figures(m: &Measured) -> Vec<Figure> {
    let ms = |f: fn(&Install) -> f64| m.installs.iter().map(|i| 1000.0 * f(i)).collect::<Vec<_>>();
    let (tot, ctl, rol) = (ms(|i| i.total), ms(|i| i.controller), ms(|i| i.rollout));
    let n = m.installs.len().max(1) as f64;
    let sent = status_patches(&m.requests, None);
    let no_op = (sent - m.status_changes as f64).max(0.0) + m.time_only as f64;
    let p = &m.parallel;
    vec![
        Figure::new("a-total-p50", stats::percentile(&tot, 50.0), "ms"),
        Figure::new("a-total-p95", stats::percentile(&tot, 95.0), "ms"),
        Figure::new("a-controller-p50", stats::percentile(&ctl, 50.0), "ms").target(Op::Below, 300.0),
        Figure::new("a-controller-p95", stats::percentile(&ctl, 95.0), "ms"),
        Figure::new("a-rollout-p50", stats::percentile(&rol, 50.0), "ms"),
        Figure::new("a-rollout-p95", stats::percentile(&rol, 95.0), "ms"),
        Figure::new("b-all-succeeded", (p.ok).then_some(p.all_done), "s").target(Op::Below, 15.0),
        Figure::new("c-peak-rss", Some(m.hwm_kib as f64 / 1024.0), "MiB").target(Op::Below, 50.0),
        Figure::new(
            "c-api-requests-per-install",
            Some(metrics_text::total(&m.requests, |_, _, _| true) / n),
            "requests",
        ),
        Figure::new("d-no-op-status-writes", Some(no_op), "writes").target(Op::Equal, 0.0),
    ]
}

fn mark(ok: bool) -> &'static str {
    if ok { "ok" } else { "MISSED" }
}

fn report(
    binary: &Path,
    args: &ControllerArgs,
    m: &Measured,
    failures: &[String],
    out_dir: &Path,
) -> anyhow::Result<bool> {
    let mut figures = figures(m);
    if let Some(path) = &args.expect {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("failed to read {}", path.display()))?;
        summary::apply_expect(&mut figures, &text, &path.display().to_string())?;
    }
    let get = |name: &str| figures.iter().find(|f| f.name == name);
    let val = |name: &str| get(name).and_then(|f| f.value).unwrap_or(f64::NAN);
    let met = |name: &str| get(name).and_then(Figure::met).unwrap_or(true);
    let target = |name: &str| {
        get(name)
            .and_then(|f| f.target)
            .map(|t| t.show())
            .unwrap_or_default()
    };
    let limit = |name: &str| {
        get(name)
            .and_then(|f| f.target)
            .map(|t| t.limit.to_string())
            .unwrap_or_default()
    };
    let n = m.installs.len();
    let all = metrics_text::total(&m.requests, |_, _, _| true);
    let ours = metrics_text::total(&m.requests, |_, _, s| s == "namespace");
    let sent = status_patches(&m.requests, None);
    let p = &m.parallel;
    println!("\n=== olm-controller benchmark ===");
    println!("controller {}; {}", binary.display(), cluster::machine());
    println!("(a) {n} sequential Automatic installs (Subscription create → CSV Succeeded)");
    println!(
        "    total              p50 {:7.1} ms   p95 {:7.1} ms",
        val("a-total-p50"),
        val("a-total-p95")
    );
    println!(
        "    controller share   p50 {:7.1} ms   p95 {:7.1} ms   target p50 {} ms: {}",
        val("a-controller-p50"),
        val("a-controller-p95"),
        target("a-controller-p50"),
        mark(met("a-controller-p50"))
    );
    println!(
        "    cluster rollout    p50 {:7.1} ms   p95 {:7.1} ms   (Deployment created → Available)",
        val("a-rollout-p50"),
        val("a-rollout-p95")
    );
    println!(
        "(b) {} Subscriptions at once: {} Succeeded after {:.2} s   target all within {} s: {}",
        p.count,
        p.done,
        p.all_done,
        limit("b-all-succeeded"),
        mark(met("b-all-succeeded"))
    );
    println!(
        "    created in {:.2} s; last Deployment created after {:.2} s, last Available after {:.2} s; rollout per Deployment p50 {} s p95 {} s",
        p.created_in,
        p.all_created,
        p.all_available,
        stats::show(stats::percentile(&p.rollout, 50.0), 2),
        stats::show(stats::percentile(&p.rollout, 95.0), 2)
    );
    println!("    timeline of (b), seconds after the first Subscription (p50 / max over namespaces):");
    for (label, count, p50, top) in &p.timeline {
        println!("      {label:22} {p50:6.2} / {top:6.2}   ({count} seen)");
    }
    if !p.cpu.is_empty() {
        let cpu: Vec<String> = p.cpu.iter().map(|(k, v)| format!("{k} {v:.1}")).collect();
        println!(
            "    CPU seconds during (b) ({:.1} s wall): {}",
            p.all_done,
            cpu.join(", ")
        );
    }
    println!(
        "(c) peak RSS (VmHWM) {:.1} MiB   target {} MiB: {}",
        val("c-peak-rss"),
        target("c-peak-rss"),
        mark(met("c-peak-rss"))
    );
    println!(
        "    API requests per install {:.1} ({all} during (a), all kinds, from /metrics; {ours} in the bench namespaces)",
        all / n.max(1) as f64
    );
    for (kind, count) in metrics_text::by_kind(&m.requests) {
        println!("      {:5.1}  {kind}", count / n.max(1) as f64);
    }
    println!(
        "(d) status writes during (a): {sent} PATCH .../status; status changes seen by watches: {}; timestamp-only: {}",
        m.status_changes, m.time_only
    );
    println!(
        "    status writes that changed nothing: {}   target {}: {}",
        val("d-no-op-status-writes"),
        target("d-no-op-status-writes"),
        mark(met("d-no-op-status-writes"))
    );
    for kind in Kind::ALL {
        println!(
            "      {}/status: {} written, {} changed",
            kind.plural(),
            status_patches(&m.requests, Some(kind.plural())),
            m.changes_by_kind.get(&kind).copied().unwrap_or(0)
        );
    }
    summary::write(out_dir, &figures)?;
    println!();
    print!(
        "{}",
        summary::table(
            "figures (also in target/bench-controller/figures.tsv and .json)",
            &figures
        )
    );
    if !failures.is_empty() {
        println!("\nfailures:");
        for f in failures {
            println!("  - {f}");
        }
        return Ok(false);
    }
    Ok(summary::verdict(&figures, args.expect.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(ns: &str, name: &str, status: Value) -> Value {
        json!({"metadata": {"namespace": ns, "name": name}, "status": status})
    }

    #[test]
    fn the_fixture_catalog_holds_one_bundle_with_its_csv() {
        use base64::Engine as _;
        let text = fixture_catalog();
        let docs: Vec<Value> = text
            .split("---\n")
            .filter(|d| !d.trim().is_empty())
            .map(|d| serde_json::from_str(d).expect("each document is JSON"))
            .collect();
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[0]["defaultChannel"], "stable");
        let data = docs[2]["properties"][1]["value"]["data"]
            .as_str()
            .expect("bundle object");
        let csv: Value = serde_json::from_slice(
            &base64::engine::general_purpose::STANDARD
                .decode(data)
                .expect("base64"),
        )
        .expect("CSV JSON");
        assert_eq!(csv["metadata"]["name"], "bench-operator.v1.0.0");
    }

    #[test]
    fn status_changes_are_counted_and_timestamp_only_ones_apart() {
        let t = Instant::now();
        let mut o = Observer::new("bench-1-");
        let s1 = json!({"phase": "Pending", "conditions": [{"type": "A", "lastTransitionTime": "1"}]});
        let s2 = json!({"phase": "Pending", "conditions": [{"type": "A", "lastTransitionTime": "2"}]});
        let s3 = json!({"phase": "Succeeded", "conditions": [{"type": "A", "lastTransitionTime": "2"}]});
        // Listed at start: recorded, not counted.
        o.on_status(Kind::Csv, Seen::Existing, &obj("bench-1-000", "c", s1.clone()), t);
        assert_eq!(o.status_changes, 0);
        o.on_status(Kind::Csv, Seen::Applied, &obj("bench-1-000", "c", s2), t);
        assert_eq!((o.status_changes, o.time_only_changes), (0, 1));
        o.on_status(Kind::Csv, Seen::Applied, &obj("bench-1-000", "c", s3), t);
        assert_eq!((o.status_changes, o.time_only_changes), (1, 1));
        assert!(o.csv_succeeded.contains_key("bench-1-000"));
        assert_eq!(o.changes_by_kind.get(&Kind::Csv), Some(&1));
        // Added with a status: a change; without: none.
        o.on_status(
            Kind::Sub,
            Seen::Applied,
            &obj("bench-1-001", "s", json!({"state": "x"})),
            t,
        );
        o.on_status(Kind::Ip, Seen::Applied, &obj("bench-1-001", "i", Value::Null), t);
        assert_eq!(o.status_changes, 2);
        // Other namespaces are not the bench's.
        o.on_status(
            Kind::Sub,
            Seen::Applied,
            &obj("default", "s", json!({"state": "x"})),
            t,
        );
        assert_eq!(o.status_changes, 2);
        assert!(!o.og_ready("bench-1-002"));
        o.on_status(
            Kind::Og,
            Seen::Applied,
            &obj("bench-1-002", "og", json!({"namespaces": ["bench-1-002"]})),
            t,
        );
        assert!(o.og_ready("bench-1-002"));
    }

    #[test]
    fn a_deployment_is_created_then_available() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(5);
        let mut o = Observer::new("bench-1-");
        o.on_deployment(&obj("bench-1-000", "d", json!({})), t0);
        o.on_deployment(
            &obj(
                "bench-1-000",
                "d",
                json!({"conditions": [{"type": "Available", "status": "True"}]}),
            ),
            t1,
        );
        assert_eq!(o.dep_created.get("bench-1-000"), Some(&t0));
        assert_eq!(o.dep_available.get("bench-1-000"), Some(&t1));
    }

    #[test]
    fn the_figures_are_tallied_from_the_installs_and_the_counter() {
        let install = |t: f64, c: f64, r: f64| Install {
            total: t,
            controller: c,
            rollout: r,
        };
        let mut requests = metrics_text::Requests::new();
        let k = |m: &str, res: &str, s: &str| (m.to_owned(), res.to_owned(), s.to_owned());
        requests.insert(k("PATCH", "subscriptions/status", "namespace"), 6.0);
        requests.insert(k("POST", "events", "namespace"), 10.0);
        requests.insert(k("GET", "configmaps", "global"), 4.0);
        let m = Measured {
            installs: vec![install(0.3, 0.1, 0.2), install(0.5, 0.2, 0.3)],
            requests,
            status_changes: 5,
            time_only: 2,
            changes_by_kind: BTreeMap::new(),
            parallel: Parallel {
                count: 2,
                done: 1,
                ok: false,
                created_in: 0.1,
                all_done: 9.0,
                all_created: 1.0,
                all_available: 2.0,
                rollout: vec![],
                timeline: vec![],
                cpu: vec![],
            },
            hwm_kib: 40 * 1024,
        };
        let f = figures(&m);
        let value = |name: &str| f.iter().find(|x| x.name == name).and_then(|x| x.value);
        let near = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        assert!(
            near(value("a-controller-p50"), 150.0),
            "{:?}",
            value("a-controller-p50")
        );
        assert!(near(value("a-total-p50"), 400.0));
        assert_eq!(
            value("c-api-requests-per-install"),
            Some(10.0),
            "20 requests over 2 installs"
        );
        // 6 status PATCHes, 5 changes seen: 1 wrote nothing new, and 2 moved only timestamps.
        assert_eq!(value("d-no-op-status-writes"), Some(3.0));
        assert_eq!(value("b-all-succeeded"), None, "not every CSV of (b) succeeded");
        assert_eq!(value("c-peak-rss"), Some(40.0));
        assert!(!summary::all_met(&f));
    }

    #[test]
    fn status_patches_are_counted_per_resource_in_the_bench_namespaces() {
        let mut r = metrics_text::Requests::new();
        let k = |m: &str, res: &str, s: &str| (m.to_owned(), res.to_owned(), s.to_owned());
        r.insert(k("PATCH", "subscriptions/status", "namespace"), 4.0);
        r.insert(k("PATCH", "clusterserviceversions/status", "namespace"), 3.0);
        r.insert(k("PATCH", "catalogsources/status", "global"), 9.0);
        r.insert(k("PATCH", "subscriptions", "namespace"), 1.0);
        assert_eq!(status_patches(&r, None), 7.0);
        assert_eq!(status_patches(&r, Some("subscriptions")), 4.0);
    }
}
