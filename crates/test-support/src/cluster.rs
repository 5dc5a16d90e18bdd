//! Connection to the local control plane that `tests/cluster/up` starts, for every cluster test.
//!
//! The rule this module enforces: a cluster test runs against a real apiserver or, only when no
//! cluster is configured and the run is not CI, skips loudly. Under `CI=true` a missing or
//! unreachable cluster fails the test, so a broken setup can never pass as "all skipped".
//!
//! Which cluster: `KUBECONFIG` when set (its first path), else `$OLMRS_CLUSTER_DIR/kubeconfig`,
//! else `<repo>/target/cluster/run/kubeconfig` (where `tests/cluster/up` writes it). Each test
//! works in its own namespace ([`TestCluster::namespace`]), deleted when the guard drops (set
//! `OLMRS_KEEP_NAMESPACES=1` to keep them for a post-mortem). Component logs are in
//! `<cluster dir>/logs/*.log`; failure messages point there.
//!
//! ```ignore
//! mod support;
//! use support::cluster::{TestCluster, wait_for, WAIT};
//!
//! #[tokio::test]
//! async fn something_real_happens() {
//!     let Some(cluster) = TestCluster::connect().await else { return };
//!     let ns = cluster.namespace("something").await;
//!     let cms: Api<ConfigMap> = ns.api();
//!     // ...
//! }
//! ```

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::suite_gate::{Pass, SuiteGate};

/// A generous default timeout for [`wait_for`] on a 2-core machine.
pub const WAIT: Duration = Duration::from_secs(90);

/// Label put on every namespace this module creates, so leftovers can be found and removed
/// (`kubectl delete ns -l olm-rs.test/namespace=true`).
pub const NAMESPACE_LABEL: &str = "olm-rs.test/namespace";

/// The repository root (the workspace root, two levels above this crate).
pub fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The data directory of the launcher's cluster: `$OLMRS_CLUSTER_DIR` or
/// `<repo>/target/cluster/run`.
pub fn cluster_dir() -> PathBuf {
    match std::env::var_os("OLMRS_CLUSTER_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join("target/cluster/run"),
    }
}

/// The directory with the built binaries (`kubectl`, `kube-apiserver`, ...):
/// `$OLMRS_CLUSTER_BIN` or `<repo>/target/cluster/bin`.
pub fn cluster_bin() -> PathBuf {
    match std::env::var_os("OLMRS_CLUSTER_BIN") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join("target/cluster/bin"),
    }
}

/// The kubeconfig the tests use: the first path in `KUBECONFIG`, else `<cluster_dir>/kubeconfig`.
pub fn kubeconfig_path() -> PathBuf {
    if let Some(value) = std::env::var_os("KUBECONFIG") {
        let value = value.to_string_lossy().into_owned();
        if let Some(first) = value.split(':').find(|p| !p.is_empty()) {
            return PathBuf::from(first);
        }
    }
    cluster_dir().join("kubeconfig")
}

fn is_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Where to look when something in the cluster misbehaves.
fn logs_hint() -> String {
    format!("component logs: {}/*.log", cluster_dir().join("logs").display())
}

/// A connection to the running test cluster.
#[derive(Clone)]
pub struct TestCluster {
    client: Client,
    config: Config,
    kubeconfig: PathBuf,
    /// This test's share of the cluster (see [`crate::suite_gate`]): released when the last clone
    /// drops.
    _pass: Arc<Pass<'static>>,
}

/// The gate between the suites of one test binary (see [`crate::suite_gate`]).
static CLUSTER: SuiteGate = SuiteGate::new();

impl TestCluster {
    /// Connects to the configured cluster.
    ///
    /// Returns `None` (after printing why) when no kubeconfig exists and `CI` is not `"true"`;
    /// panics when `CI=true` and there is none, or when a configured cluster cannot be reached.
    ///
    /// Waits while a test of another suite (another file) holds the cluster: the suites of one
    /// test binary take turns, as separate binaries did (see [`crate::suite_gate`]).
    #[track_caller]
    pub fn connect() -> impl Future<Output = Option<TestCluster>> {
        let suite = std::panic::Location::caller().file();
        Self::connect_for(suite)
    }

    async fn connect_for(suite: &'static str) -> Option<TestCluster> {
        let path = kubeconfig_path();
        if !path.is_file() {
            let why = format!(
                "no cluster configured: {} does not exist (start one with `tests/cluster/up`, or set KUBECONFIG)",
                path.display()
            );
            if is_ci() {
                panic!("CI=true but {why}");
            }
            static SKIP_NOTICE: Once = Once::new();
            SKIP_NOTICE.call_once(|| {
                // Written to the real stderr so the notice shows even when libtest captures output.
                let _ = writeln!(std::io::stderr(), "SKIPPING cluster tests: {why}");
            });
            eprintln!("skipped: {why}");
            return None;
        }
        let pass = Arc::new(CLUSTER.enter(suite).await);
        let kubeconfig = Kubeconfig::read_from(&path)
            .unwrap_or_else(|e| panic!("reading kubeconfig {}: {e}", path.display()));
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap_or_else(|e| panic!("loading kubeconfig {}: {e}", path.display()));
        let client = Client::try_from(config.clone())
            .unwrap_or_else(|e| panic!("building a client from {}: {e}", path.display()));
        match tokio::time::timeout(Duration::from_secs(15), client.apiserver_version()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => panic!(
                "the cluster in {} does not answer: {e}\n(is it running? `tests/cluster/up` starts it; {})",
                path.display(),
                logs_hint()
            ),
            Err(_) => panic!(
                "the cluster in {} did not answer within 15s\n(is it running? `tests/cluster/up` starts it; {})",
                path.display(),
                logs_hint()
            ),
        }
        Some(TestCluster {
            client,
            config,
            kubeconfig: path,
            _pass: pass,
        })
    }

    /// An admin client (`system:masters`).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The admin client configuration, e.g. to derive clients with other credentials.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The kubeconfig file this connection was made from (to hand to a controller under test).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The directory with the control plane's logs (meaningful for the launcher's cluster).
    pub fn logs_dir(&self) -> PathBuf {
        cluster_dir().join("logs")
    }

    /// A client that impersonates `user` with `groups`: requests are authorized as that user,
    /// so RBAC applies (the admin may impersonate anyone).
    pub fn client_as(&self, user: &str, groups: &[&str]) -> Client {
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(user.to_owned());
        config.auth_info.impersonate_groups = Some(groups.iter().map(|g| (*g).to_owned()).collect());
        Client::try_from(config).unwrap_or_else(|e| panic!("building a client impersonating {user}: {e}"))
    }

    /// A client that acts as the ServiceAccount `namespace/name`, with the groups the apiserver
    /// gives ServiceAccount tokens.
    pub fn client_as_service_account(&self, namespace: &str, name: &str) -> Client {
        let user = format!("system:serviceaccount:{namespace}:{name}");
        let ns_group = format!("system:serviceaccounts:{namespace}");
        self.client_as(
            &user,
            &[
                "system:serviceaccounts",
                ns_group.as_str(),
                "system:authenticated",
            ],
        )
    }

    /// Creates a fresh namespace named `<prefix>-<random>`, deleted when the guard drops.
    pub async fn namespace(&self, prefix: &str) -> TestNamespace {
        let api: Api<Namespace> = Api::all(self.client.clone());
        for _ in 0..5 {
            let name = unique_name(prefix);
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    labels: Some([(NAMESPACE_LABEL.to_owned(), "true".to_owned())].into()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            };
            match api.create(&PostParams::default(), &ns).await {
                Ok(_) => {
                    return TestNamespace {
                        name,
                        client: self.client.clone(),
                        config: self.config.clone(),
                        deleted: false,
                    };
                }
                Err(kube::Error::Api(status)) if status.is_already_exists() => continue,
                Err(e) => panic!("creating test namespace {name}: {e}"),
            }
        }
        panic!("could not find a free namespace name for prefix {prefix:?}");
    }

    /// Runs the built `kubectl` against this cluster (`--kubeconfig` is added).
    pub fn kubectl<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let kubectl = cluster_bin().join("kubectl");
        Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "running {}: {e} (build it with tests/cluster/build)",
                    kubectl.display()
                )
            })
    }

    /// Runs the built `kubectl` and returns its stdout; panics with its stderr if it fails.
    pub fn kubectl_ok<I, S>(&self, args: I) -> String
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let out = self.kubectl(&args);
        if !out.status.success() {
            panic!(
                "kubectl {:?} failed ({}): {}",
                args,
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Applies OLM's CRDs (`manifests/crds`, server-side, as `field_manager`) and waits until all
    /// seven are Established.
    pub fn install_olm_crds(&self, field_manager: &str) {
        let dir = repo_root().join("manifests/crds");
        self.kubectl_ok([
            "apply",
            "--server-side",
            "--force-conflicts",
            &format!("--field-manager={field_manager}"),
            "-f",
            dir.to_str().expect("utf-8 path"),
        ]);
        self.wait_crds_established(&[
            "subscriptions.operators.coreos.com",
            "installplans.operators.coreos.com",
            "clusterserviceversions.operators.coreos.com",
            "catalogsources.operators.coreos.com",
            "operatorgroups.operators.coreos.com",
            "operators.operators.coreos.com",
            "operatorconditions.operators.coreos.com",
        ]);
    }

    /// Waits until every named CRD reports `Established=True`, polling with `kubectl get`.
    ///
    /// Not `kubectl wait --for condition=Established`: right after a create, before the apiserver
    /// has written any status, `kubectl wait` fails at once ("`.status.conditions` accessor
    /// error: <nil>") instead of waiting, which made CI flaky.
    pub fn wait_crds_established(&self, crds: &[&str]) {
        let start = Instant::now();
        for crd in crds {
            loop {
                let out = self.kubectl([
                    "get",
                    "crd",
                    crd,
                    "-o",
                    r#"jsonpath={.status.conditions[?(@.type=="Established")].status}"#,
                ]);
                if out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "True" {
                    break;
                }
                if start.elapsed() >= WAIT {
                    panic!(
                        "timed out after {WAIT:?} waiting for CRD {crd} to be Established: {} ({})",
                        String::from_utf8_lossy(&out.stderr).trim(),
                        logs_hint()
                    );
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Whether the configured cluster is the launcher's (its `state.json` is in [`cluster_dir`] and
/// the kubeconfig in use is that cluster's), so that its components can be restarted.
pub fn is_launcher_cluster() -> bool {
    let dir = cluster_dir();
    dir.join("state.json").is_file()
        && std::fs::canonicalize(kubeconfig_path()).ok() == std::fs::canonicalize(dir.join("kubeconfig")).ok()
}

/// Restarts one component of the launcher's cluster (`etcd`, `kube-apiserver`,
/// `kube-controller-manager`, `kube-scheduler` or `kwok`) with
/// `olmrs-cluster restart COMPONENT --grace GRACE`: SIGTERM, `grace` to exit, SIGKILL, then the
/// same command line again (same ports and data), and returns once its health endpoint answers
/// (for the apiserver, `/readyz`). A zero `grace` is a crash.
///
/// # Errors
/// When the cluster is not the launcher's, or the launcher fails (its message names the
/// component's log).
pub fn restart_component(component: &str, grace: Duration) -> Result<(), String> {
    if !is_launcher_cluster() {
        return Err(format!(
            "the cluster in use ({}) was not started by tests/cluster/up in {}, so its components cannot be restarted",
            kubeconfig_path().display(),
            cluster_dir().display()
        ));
    }
    let launcher = cluster_bin().join("olmrs-cluster");
    let out = Command::new(&launcher)
        .arg("restart")
        .arg(component)
        .arg("--dir")
        .arg(cluster_dir())
        .arg(format!("--grace={}ms", grace.as_millis()))
        .output()
        .map_err(|e| {
            format!(
                "running {}: {e} (build it with tests/cluster/build)",
                launcher.display()
            )
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "olmrs-cluster restart {component} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `<prefix>-<8 hex>`: a valid DNS-1123 label (lowercase alphanumerics and `-`, at most 63).
fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut clean: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    clean.truncate(40);
    let clean = clean.trim_matches('-');
    let clean = if clean.is_empty() { "test" } else { clean };
    // RandomState is seeded randomly per instance; mix in pid, counter and time for good measure.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    format!("{clean}-{:08x}", h.finish() as u32)
}

/// A namespace owned by one test; deleted (without waiting) when dropped, even on panic.
pub struct TestNamespace {
    name: String,
    client: Client,
    config: Config,
    deleted: bool,
}

impl TestNamespace {
    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A namespaced API in this namespace, with the admin client.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// Waits until a pod matching `selector` (`app=webhook`) runs, and returns its IP (kwok
    /// assigns one from the cluster's pod CIDR): the address a
    /// [`crate::pod_net::PodNetwork`] makes real. See [`running_pod_ip`].
    pub async fn running_pod_ip(&self, selector: &str) -> std::net::IpAddr {
        running_pod_ip(self.client.clone(), &self.name, selector).await
    }

    /// Waits until the endpointslice controller lists `ip` as a ready endpoint of `service`
    /// (see [`wait_service_endpoint`]).
    pub async fn wait_service_endpoint(&self, service: &str, ip: std::net::IpAddr) {
        wait_service_endpoint(self.client.clone(), &self.name, service, ip).await;
    }

    /// Deletes the namespace now and waits until it is gone (the namespace controller empties
    /// it first).
    pub async fn delete_and_wait(mut self) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        match api.delete(&self.name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => panic!("deleting namespace {}: {e}", self.name),
        }
        self.deleted = true;
        let name = self.name.clone();
        wait_for(&format!("namespace {name} to be deleted"), WAIT, || {
            let api = api.clone();
            let name = name.clone();
            async move {
                match api.get_opt(&name).await {
                    Ok(None) => Some(()),
                    _ => None,
                }
            }
        })
        .await;
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if self.deleted {
            return;
        }
        if std::env::var_os("OLMRS_KEEP_NAMESPACES").is_some_and(|v| !v.is_empty() && v != "0") {
            let _ = writeln!(std::io::stderr(), "keeping test namespace {}", self.name);
            return;
        }
        // Drop cannot await, and the test's runtime is busy dropping us: delete from a thread
        // with its own runtime and its own client.
        let name = self.name.clone();
        let config = self.config.clone();
        let handle = std::thread::spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return Err(format!("building a runtime: {e}")),
            };
            runtime.block_on(async move {
                let client = Client::try_from(config).map_err(|e| e.to_string())?;
                let api: Api<Namespace> = Api::all(client);
                match api.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
                    Err(e) => Err(e.to_string()),
                }
            })
        });
        if let Ok(Err(e)) = handle.join() {
            let _ = writeln!(
                std::io::stderr(),
                "warning: could not delete test namespace {}: {e}",
                self.name
            );
        }
    }
}

/// Waits until a pod matching `selector` (`app=webhook`) runs in `namespace`, and returns its IP
/// (kwok assigns one from the cluster's pod CIDR): the address a [`crate::pod_net::PodNetwork`]
/// makes real.
pub async fn running_pod_ip(client: Client, namespace: &str, selector: &str) -> std::net::IpAddr {
    let pods: Api<Pod> = Api::namespaced(client, namespace);
    let what = format!("a Running pod with an IP matching {selector} in {namespace}");
    wait_for(&what, WAIT, || {
        let pods = pods.clone();
        async move {
            let list = pods.list(&ListParams::default().labels(selector)).await.ok()?;
            list.items.iter().find_map(|p| {
                let status = p.status.as_ref()?;
                if status.phase.as_deref() != Some("Running") {
                    return None;
                }
                status.pod_ip.as_deref()?.parse().ok()
            })
        }
    })
    .await
}

/// Waits until the endpointslice controller lists `ip` as a ready endpoint of `service` in
/// `namespace`: from then on the API server's service resolver (aggregator routing) sends the
/// Service's webhook and APIService calls there.
pub async fn wait_service_endpoint(client: Client, namespace: &str, service: &str, ip: std::net::IpAddr) {
    let slices: Api<EndpointSlice> = Api::namespaced(client, namespace);
    let selector = format!("kubernetes.io/service-name={service}");
    let what = format!("Service {namespace}/{service} to list {ip} as a ready endpoint");
    let ip = ip.to_string();
    wait_for(&what, WAIT, || {
        let (slices, selector, ip) = (slices.clone(), selector.clone(), ip.clone());
        async move {
            let list = slices.list(&ListParams::default().labels(&selector)).await.ok()?;
            list.items
                .iter()
                .filter_map(|s| s.endpoints.as_ref())
                .flatten()
                .any(|e| {
                    e.addresses.contains(&ip) && e.conditions.as_ref().and_then(|c| c.ready) == Some(true)
                })
                .then_some(())
        }
    })
    .await;
}

/// Polls `check` (every 250 ms) until it returns `Some`, and returns that value; panics naming
/// `what` (and where the logs are) once `timeout` has passed.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if start.elapsed() >= timeout {
            panic!("timed out after {timeout:?} waiting for {what} ({})", logs_hint());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
