//! Helpers of the root package's cluster suites (`olm_e2e`, `faults`, `webhooks_e2e`,
//! `operator_condition_e2e`, `catalog_image_e2e`): `olm-controller run` as a child process, the
//! YAML fixtures of `tests/fixtures/e2e`, and namespaced objects as JSON.
//!
//! The rule it enforces: every suite starts the controller with the same base flags and
//! environment (`run --kubeconfig … --metrics-bind …`, `RUST_LOG=info,olm_rs=debug`), so a
//! difference between suites is only the extra flags each one names.

use std::{
    ffi::OsString,
    io::{Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DynamicObject, PostParams},
};
use serde_json::Value;

use super::cluster::repo_root;

/// A free loopback port (bound, then released for the child to bind).
pub fn free_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding a free port");
    listener.local_addr().expect("local address")
}

/// `target/tmp/<name>` (the log files and caches of the suites).
pub fn tmp_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// `olm-controller run` as a child process: its output appended to `log`, SIGKILLed when dropped
/// (the tail of its log printed if the test is failing).
pub struct Controller {
    child: Option<Child>,
    /// The log file (stdout and stderr of every spawn).
    pub log: PathBuf,
    /// `--metrics-bind`: `/metrics`, `/readyz`, `/healthz`.
    pub metrics: SocketAddr,
    kubeconfig: PathBuf,
    /// Flags after `--metrics-bind`.
    args: Vec<OsString>,
    /// Environment besides `RUST_LOG`.
    envs: Vec<(String, String)>,
}

impl Controller {
    /// Starts `olm-controller run --kubeconfig <kubeconfig> --metrics-bind <free port> <args…>`
    /// with `envs`, logging to a fresh `log`.
    pub fn start(kubeconfig: &Path, log: PathBuf, args: Vec<OsString>, envs: &[(&str, &str)]) -> Self {
        let _ = std::fs::remove_file(&log);
        let mut controller = Self {
            child: None,
            log,
            metrics: free_port(),
            kubeconfig: kubeconfig.to_owned(),
            args,
            envs: envs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        controller.spawn();
        controller
    }

    /// Spawns the process again with the same flags (after [`Controller::kill`]).
    pub fn spawn(&mut self) {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("opening the controller log");
        let err = out.try_clone().expect("cloning the log handle");
        let child = Command::new(env!("CARGO_BIN_EXE_olm-controller"))
            .arg("run")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--metrics-bind")
            .arg(self.metrics.to_string())
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .env("RUST_LOG", "info,olm_rs=debug")
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("starting olm-controller");
        self.child = Some(child);
    }

    /// SIGKILL (no graceful shutdown), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// [`Controller::kill`], then [`Controller::spawn`].
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// What the process has logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The whole response (status line, headers, body) of `GET path` on the metrics address;
    /// empty if unreachable or if no answer comes within `read_timeout`.
    pub fn get(&self, path: &str, read_timeout: Duration) -> String {
        let Ok(mut stream) = TcpStream::connect(self.metrics) else {
            return String::new();
        };
        // A connection the server drops (it is still starting, or busy) reads as unreachable:
        // callers poll until the answer they expect.
        if stream.set_read_timeout(Some(read_timeout)).is_err()
            || write!(
                stream,
                "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
            )
            .is_err()
        {
            return String::new();
        }
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text);
        text
    }

    /// The last 60 lines of the log, each cut at 400 characters.
    pub fn log_tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<String> = text
            .lines()
            .map(|l| l.chars().take(400).collect::<String>())
            .collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "--- controller log {} (tail, lines cut at 400 characters) ---\n{}",
                self.log.display(),
                self.log_tail()
            );
        }
    }
}

/// The first document of the fixture `tests/fixtures/e2e/<path>`.
pub fn fixture(path: &str) -> Value {
    let full = repo_root().join("tests/fixtures/e2e").join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("reading {}: {e}", full.display()));
    let decoded = olm_rs::codec::decode_documents(path, &text);
    assert!(decoded.error.is_none(), "{path}: {:?}", decoded.error);
    decoded
        .documents
        .into_iter()
        .next()
        .map(|d| d.value)
        .unwrap_or_else(|| panic!("{path} is empty"))
}

/// The string at `pointer` in `v`, empty if absent.
pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The objects of kind `K` in namespace `ns`, as dynamic objects.
pub fn dynamic<K: kube::Resource<DynamicType = ()>>(client: Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client, ns, &ApiResource::erase::<K>(&()))
}

/// A test's namespace on the cluster, with the objects in it as JSON (the `Env` of a suite).
pub trait InNamespace {
    /// The cluster and the test's namespace.
    fn parts(&self) -> (&super::cluster::TestCluster, &super::cluster::TestNamespace);

    /// The admin client.
    fn client(&self) -> Client {
        self.parts().0.client()
    }

    /// The namespace's name.
    fn ns(&self) -> &str {
        self.parts().1.name()
    }

    /// The objects of kind `K` in the namespace.
    fn dynamic<K: kube::Resource<DynamicType = ()>>(&self) -> Api<DynamicObject> {
        dynamic::<K>(self.client(), self.ns())
    }

    /// [`create`] in the namespace.
    fn create<K: kube::Resource<DynamicType = ()>>(&self, body: Value) -> impl Future<Output = ()> {
        create::<K>(self.client(), self.ns(), body)
    }

    /// [`get`] in the namespace.
    fn get<K: kube::Resource<DynamicType = ()>>(&self, name: &str) -> impl Future<Output = Option<Value>> {
        get::<K>(self.client(), self.ns(), name)
    }
}

/// Creates `body` (an object of kind `K`) in `ns`; panics naming the object if refused.
pub async fn create<K: kube::Resource<DynamicType = ()>>(client: Client, ns: &str, body: Value) {
    let obj: DynamicObject = serde_json::from_value(body).expect("a valid object");
    let name = obj.name_any();
    dynamic::<K>(client, ns)
        .create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("creating {} {name}: {e}", K::kind(&())));
}

/// The object `name` of kind `K` in `ns` as JSON; `None` if absent or unreadable.
pub async fn get<K: kube::Resource<DynamicType = ()>>(client: Client, ns: &str, name: &str) -> Option<Value> {
    dynamic::<K>(client, ns)
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .map(|o| serde_json::to_value(o).unwrap_or_default())
}

/// The CA bundle OLM keeps in a webhook's cert Secret (`olmCAKey`); empty when it has none.
pub fn webhook_ca(secret: &k8s_openapi::api::core::v1::Secret) -> Vec<u8> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get("olmCAKey"))
        .map(|b| b.0.clone())
        .unwrap_or_default()
}

/// `blobs` as a `catalog.json` file: one JSON document a line.
pub fn catalog_json(blobs: &[Value]) -> String {
    let text: Vec<String> = blobs.iter().map(Value::to_string).collect();
    text.join("\n")
}

/// Server-side applies (as field manager `manager`) the ConfigMap `name` in `ns` holding
/// `catalog_json` as its `catalog.json` (what a `sourceType: configmap` CatalogSource serves).
pub async fn apply_catalog_config_map(
    ns: &super::cluster::TestNamespace,
    manager: &str,
    name: &str,
    catalog_json: &str,
) {
    let cm = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns.name()},
        "data": {"catalog.json": catalog_json},
    });
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = ns.api();
    api.patch(
        name,
        &kube::api::PatchParams::apply(manager).force(),
        &kube::api::Patch::Apply(&cm),
    )
    .await
    .expect("applying the catalog ConfigMap");
}

/// Deletes the object `name` of kind `K` (in `ns`, or cluster-scoped when `ns` is `None`), then
/// waits, at most `within` from the deletion, until an object of that name exists again with
/// another uid and the CSV `csv` of `csv_ns` is `Succeeded` after a transition made since the
/// deletion (it noticed, and healed). Then waits a little more for an Event on the CSV whose
/// message names the object. Panics naming what did not happen; returns the time it took.
pub async fn delete_and_wait_healed<K: kube::Resource<DynamicType = ()>>(
    client: Client,
    ns: Option<&str>,
    name: &str,
    csv_ns: &str,
    csv: &str,
    within: Duration,
) -> Duration {
    use k8s_openapi::jiff::Timestamp;
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let what = format!(
        "{} {}{name}",
        K::kind(&()),
        ns.map(|n| format!("{n}/")).unwrap_or_default()
    );
    let before = api
        .get(name)
        .await
        .unwrap_or_else(|e| panic!("reading {what} before deleting it: {e}"));
    let old_uid = before.metadata.uid.clone();
    let deleted_at = Timestamp::now();
    let started = std::time::Instant::now();
    api.delete(name, &kube::api::DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("deleting {what}: {e}"));
    let since = Timestamp::from_second(deleted_at.as_second()).unwrap_or(deleted_at);
    let csvs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        csv_ns,
        &ApiResource::erase::<olm_rs::api::v1alpha1::ClusterServiceVersion>(&()),
    );
    let mut last = String::new();
    loop {
        let back = api.get_opt(name).await.ok().flatten();
        let recreated = back.as_ref().is_some_and(|o| o.metadata.uid != old_uid);
        let csv_obj = csvs.get_opt(csv).await.ok().flatten();
        let status = csv_obj
            .as_ref()
            .map(|c| c.data["status"].clone())
            .unwrap_or_default();
        let transitioned = status["lastTransitionTime"]
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
            .is_some_and(|t| t >= since);
        let healed = status["phase"] == "Succeeded" && transitioned;
        if recreated && healed {
            break;
        }
        last = format!(
            "{what} recreated: {recreated}; CSV {csv}: {} {} {:?} (transitioned since the deletion: {transitioned})",
            status["phase"], status["reason"], status["message"]
        );
        assert!(
            started.elapsed() < within,
            "{what} not healed within {within:?} of its deletion: {last}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let took = started.elapsed();
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client, csv_ns);
    let named = async {
        for _ in 0..40 {
            let found = events
                .list(&kube::api::ListParams::default())
                .await
                .map(|l| l.items)
                .unwrap_or_default()
                .into_iter()
                .any(|e| {
                    e.involved_object.name.as_deref() == Some(csv)
                        && e.message.as_deref().is_some_and(|m| m.contains(name))
                });
            if found {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        false
    };
    assert!(named.await, "no Event of CSV {csv} names {what} ({last})");
    took
}
