//! The Redis operator on a real control plane: the tutorial's verification steps, run with the
//! built `kubectl` against the local cluster (`tests/cluster/up`), with the built `redis-operator`
//! binary running as a child process that watches only the test's namespace.
//!
//! What is proven here and nowhere else:
//! - the tutorial flow (create → StatefulSet, Services, ConfigMap, PodDisruptionBudget and status;
//!   `kubectl patch` to size 5; a refused `redisConfig` line → Warning event and `Degraded`;
//!   `kubectl delete` → the real garbage collector removes everything);
//! - the permissions in the 1.0.0 CSV are enough: the same flow passes with the operator
//!   impersonating a ServiceAccount bound to exactly `spec.install.spec.permissions[0].rules`,
//!   including the finalizer path that deletes PersistentVolumeClaims;
//! - the same flow passes after the OLM controller installed the operator from the shipped catalog
//!   through an OperatorGroup and an Automatic Subscription, with the operator impersonating the
//!   CSV Deployment's ServiceAccount and only the RBAC OLM created for it;
//! - a cluster-mode shrink drains before it lowers the StatefulSet (here the drain cannot reach
//!   kwok's fake pods, so the failure is reported and every pod kept) and is refused below three
//!   primaries;
//! - `/metrics`, `/healthz` and `/readyz` answer, with the reconcile histogram after a reconcile.
//!
//! Pods never really run: kwok marks them Running and Ready. Without a cluster (and without
//! `CI=true`) every test prints why and passes. Operator logs are kept in
//! `$CARGO_TARGET_TMPDIR/redis-operator-<namespace>.log` and printed when a test fails.

use olm_test_support as support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;
use std::time::Duration;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, PostParams};
use kube::config::Kubeconfig;
use serde_json::{Value, json};
use support::cluster::{TestCluster, TestNamespace, WAIT, cluster_bin, wait_for};

const NAME: &str = "example-rediscluster";
const CRD_NAME: &str = "redisclusters.cache.example.com";

/// The operator binary under test: `$REDIS_OPERATOR_BIN` when set, else the one cargo built for
/// this test. (Worktrees sharing one `CARGO_TARGET_DIR` overwrite each other's
/// `target/debug/redis-operator`; a copy named here is immune to that.)
fn operator_bin() -> PathBuf {
    std::env::var_os("REDIS_OPERATOR_BIN")
        .filter(|v| !v.is_empty())
        .map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_redis-operator")),
            PathBuf::from,
        )
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/redis/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Installs the RedisCluster CRD printed by the built binary, once per test run, with server-side
/// apply (idempotent: re-applying the same manifest is a no-op), and waits until it is Established.
fn install_crd(cluster: &TestCluster) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let out = Command::new(operator_bin())
            .arg("crd")
            .output()
            .expect("running redis-operator crd");
        assert!(out.status.success(), "redis-operator crd failed: {out:?}");
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("crd.yaml");
        std::fs::write(&file, &out.stdout).expect("writing the CRD");
        cluster.kubectl_ok([
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=redis-operator-e2e",
            "-f",
            file.to_str().expect("utf-8 path"),
        ]);
        cluster.wait_crds_established(&[CRD_NAME]);
    });
}

/// A running `redis-operator run`, killed when dropped (its log is printed if the test failed).
struct Operator {
    process: support::LoggedChild,
    http_addr: String,
}

impl Operator {
    /// Starts the built binary with `WATCH_NAMESPACE=<ns>` and the given kubeconfig, serving HTTP
    /// on a loopback port the operator picks itself (`--http-addr 127.0.0.1:0`) and logs, so no
    /// other process can take the port between choosing and binding it.
    fn start(ns: &str, kubeconfig: &Path) -> Operator {
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("redis-operator-{ns}.log"));
        let process = support::LoggedChild::spawn(
            Command::new(operator_bin())
                .args(["run", "--http-addr", "127.0.0.1:0"])
                .env("WATCH_NAMESPACE", ns)
                .env("KUBECONFIG", kubeconfig)
                .env("POD_NAME", format!("redis-operator-e2e-{ns}"))
                .env("RUST_LOG", "info"),
            log,
        );
        let mut operator = Operator {
            process,
            http_addr: String::new(),
        };
        let deadline = std::time::Instant::now() + WAIT;
        operator.http_addr = loop {
            let bound = operator.log_text().lines().find_map(|line| {
                let entry: Value = serde_json::from_str(line).ok()?;
                (entry["message"] == "starting redis-operator")
                    .then(|| entry["http_addr"].as_str().map(str::to_owned))?
            });
            if let Some(addr) = bound {
                break addr;
            }
            if let Ok(Some(status)) = operator.process.child.try_wait() {
                panic!("redis-operator exited with {status} before listening");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "redis-operator did not start listening"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        operator
    }

    /// `GET path` on the operator's HTTP port: (status line, body), or `None` if it is not up.
    fn get(&self, path: &str) -> Option<(String, String)> {
        let mut stream = TcpStream::connect(&self.http_addr).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        let (head, body) = response.split_once("\r\n\r\n")?;
        Some((head.lines().next()?.to_owned(), body.to_owned()))
    }

    fn log_text(&self) -> String {
        self.process.log_text()
    }

    /// Fails when the API server refused the operator anything (its permissions fell short).
    fn assert_never_forbidden(&self) {
        let log = self.log_text();
        assert!(
            !log.contains("forbidden"),
            "the operator was refused something:\n{log}"
        );
    }
}

/// `kubectl -n <ns> get <what> -o json`, or `None` when it fails (for example NotFound).
fn get_json(cluster: &TestCluster, ns: &str, what: &[&str]) -> Option<Value> {
    let mut args = vec!["-n", ns, "get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", "json"]);
    let out = cluster.kubectl(&args);
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn condition<'a>(rc: &'a Value, type_: &str) -> Option<&'a Value> {
    rc["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{NAME}-{i}")).collect()
}

/// Waits until the RedisCluster's status describes `size` ready pods for its current generation.
async fn wait_ready(cluster: &TestCluster, ns: &str, size: usize) -> Value {
    wait_for(
        &format!("{NAME} to report {size} ready nodes and phase Ready"),
        WAIT,
        || async move {
            let rc = get_json(cluster, ns, &["rediscluster", NAME])?;
            let status = &rc["status"];
            let nodes: Vec<String> = serde_json::from_value(status["nodes"].clone()).ok()?;
            (nodes == names(size)
                && status["readyReplicas"] == json!(size)
                && status["phase"] == "Ready"
                && status["observedGeneration"] == rc["metadata"]["generation"]
                && condition(&rc, "Ready")?["status"] == "True")
                .then_some(rc)
        },
    )
    .await
}

/// Waits until the StatefulSet wants and has `size` ready replicas.
async fn wait_statefulset(cluster: &TestCluster, ns: &str, size: usize) -> Value {
    wait_for(
        &format!("StatefulSet {NAME} to have {size} ready replicas"),
        WAIT,
        || async move {
            let sts = get_json(cluster, ns, &["statefulset", NAME])?;
            (sts["spec"]["replicas"] == json!(size) && sts["status"]["readyReplicas"] == json!(size))
                .then_some(sts)
        },
    )
    .await
}

/// The tutorial, step by step, against an operator already running for `ns`.
async fn tutorial_flow(cluster: &TestCluster, ns: &TestNamespace) {
    let ns = ns.name();
    let example = fixture("example-rediscluster.yaml");

    // Step 1: create the sample RedisCluster of size 3.
    cluster.kubectl_ok(["-n", ns, "apply", "-f", &example]);
    let sts = wait_statefulset(cluster, ns, 3).await;
    let rc = wait_ready(cluster, ns, 3).await;
    let uid = rc["metadata"]["uid"].clone();

    let owned_by_rc = |obj: &Value| {
        obj["metadata"]["ownerReferences"].as_array().is_some_and(|refs| {
            refs.iter()
                .any(|r| r["kind"] == "RedisCluster" && r["uid"] == uid && r["controller"] == true)
        })
    };
    assert!(owned_by_rc(&sts), "the StatefulSet is owned: {sts}");
    assert_eq!(sts["spec"]["serviceName"], format!("{NAME}-headless"));

    let headless =
        get_json(cluster, ns, &["service", &format!("{NAME}-headless")]).expect("headless Service");
    assert_eq!(headless["spec"]["clusterIP"], "None");
    assert!(owned_by_rc(&headless));
    let client = get_json(cluster, ns, &["service", NAME]).expect("client Service");
    assert_ne!(client["spec"]["clusterIP"], "None");
    assert_eq!(client["spec"]["ports"][0]["port"], 6379);
    assert!(owned_by_rc(&client));
    let cm = get_json(cluster, ns, &["configmap", &format!("{NAME}-config")]).expect("ConfigMap");
    let conf = cm["data"]["redis.conf"].as_str().expect("redis.conf");
    assert!(
        conf.contains("port 6379\n") && conf.contains("maxmemory 100mb\n"),
        "{conf}"
    );
    assert!(owned_by_rc(&cm));
    let pdb = get_json(cluster, ns, &["poddisruptionbudget", NAME]).expect("PodDisruptionBudget");
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    assert!(owned_by_rc(&pdb));

    let table = cluster.kubectl_ok(["-n", ns, "get", "rediscluster", NAME]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SIZE", "READY", "PHASE", "AGE"], "{table}");
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[..4], [NAME, "3", "3", "Ready"], "{table}");

    // Step 2: scale to 5 with the tutorial's exact patch.
    cluster.kubectl_ok([
        "-n",
        ns,
        "patch",
        "rediscluster",
        NAME,
        "-p",
        r#"{"spec":{"size":5}}"#,
        "--type=merge",
    ]);
    wait_statefulset(cluster, ns, 5).await;
    let rc = wait_ready(cluster, ns, 5).await;
    assert_eq!(rc["status"]["observedGeneration"], 2);

    // Step 3: a misconfiguration. rename-command is refused; the running cluster is left alone.
    cluster.kubectl_ok([
        "-n",
        ns,
        "patch",
        "rediscluster",
        NAME,
        "--type=merge",
        "-p",
        r#"{"spec":{"redisConfig":"maxmemory 100mb\nrename-command FLUSHALL \"\"\n"}}"#,
    ]);
    let degraded = wait_for(
        "the Degraded condition naming the refused line",
        WAIT,
        || async move {
            let rc = get_json(cluster, ns, &["rediscluster", NAME])?;
            let c = condition(&rc, "Degraded")?.clone();
            (c["status"] == "True" && rc["status"]["phase"] == "Degraded").then_some(c)
        },
    )
    .await;
    assert_eq!(degraded["reason"], "InvalidRedisConfig");
    let message = degraded["message"].as_str().expect("message");
    assert!(
        message.contains("line 2 `rename-command FLUSHALL \"\"`") && message.contains("not allowed"),
        "{message}"
    );
    let warning = wait_for("a Warning event naming the refused line", WAIT, || async move {
        let events = get_json(
            cluster,
            ns,
            &[
                "events",
                "--field-selector",
                &format!("type=Warning,reason=InvalidRedisConfig,involvedObject.name={NAME}"),
            ],
        )?;
        events["items"]
            .as_array()?
            .iter()
            .find(|e| {
                e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("rename-command"))
            })
            .cloned()
    })
    .await;
    assert_eq!(warning["involvedObject"]["kind"], "RedisCluster");
    let cm = get_json(cluster, ns, &["configmap", &format!("{NAME}-config")]).expect("ConfigMap");
    assert!(
        !cm["data"]["redis.conf"]
            .as_str()
            .unwrap_or_default()
            .contains("rename-command"),
        "nothing is applied from a refused spec"
    );
    assert_eq!(
        get_json(cluster, ns, &["statefulset", NAME]).expect("sts")["spec"]["replicas"],
        5
    );

    // Fixing the line clears Degraded.
    cluster.kubectl_ok([
        "-n",
        ns,
        "patch",
        "rediscluster",
        NAME,
        "--type=merge",
        "-p",
        r#"{"spec":{"redisConfig":"maxmemory 200mb\n"}}"#,
    ]);
    let rc = wait_ready(cluster, ns, 5).await;
    assert_eq!(condition(&rc, "Degraded").expect("Degraded")["status"], "False");
    let cm = get_json(cluster, ns, &["configmap", &format!("{NAME}-config")]).expect("ConfigMap");
    assert!(
        cm["data"]["redis.conf"]
            .as_str()
            .unwrap_or_default()
            .contains("maxmemory 200mb\n")
    );

    // Step 4: delete; the garbage collector removes everything the operator created.
    cluster.kubectl_ok(["-n", ns, "delete", "rediscluster", NAME]);
    wait_for(
        "every object of the deleted RedisCluster to be collected",
        WAIT,
        || async move {
            let left: Vec<&str> = [
                ("statefulset", NAME.to_owned()),
                ("service", NAME.to_owned()),
                ("service", format!("{NAME}-headless")),
                ("configmap", format!("{NAME}-config")),
                ("poddisruptionbudget", NAME.to_owned()),
            ]
            .iter()
            .filter(|(kind, name)| get_json(cluster, ns, &[kind, name]).is_some())
            .map(|(kind, _)| *kind)
            .collect();
            let pods = get_json(
                cluster,
                ns,
                &["pods", "-l", &format!("app.kubernetes.io/instance={NAME}")],
            )?;
            (left.is_empty() && pods["items"].as_array()?.is_empty()).then_some(())
        },
    )
    .await;
}

/// A ServiceAccount with a Role of exactly the 1.0.0 CSV's `permissions[0].rules`, and a
/// kubeconfig (in the returned temp dir) that impersonates it with the admin's credentials.
async fn csv_service_account(cluster: &TestCluster, ns: &str) -> (tempfile::TempDir, PathBuf) {
    let csv_path = format!(
        "{}/../bundles/redis-operator/1.0.0/manifests/redis-operator.clusterserviceversion.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&csv_path).expect("reading the 1.0.0 CSV");
    let csv: Value = olm_rs::api::from_yaml_str(&csv_path, &text).expect("parsing the CSV");
    let permissions = &csv["spec"]["install"]["spec"]["permissions"][0];
    let sa_name = permissions["serviceAccountName"]
        .as_str()
        .expect("serviceAccountName");
    let rules = permissions["rules"].clone();
    assert!(
        rules.as_array().is_some_and(|r| !r.is_empty()),
        "the CSV grants rules"
    );

    let sas: Api<ServiceAccount> = Api::namespaced(cluster.client(), ns);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": sa_name}})).expect("sa"),
    )
    .await
    .expect("creating the ServiceAccount");
    let roles: Api<Role> = Api::namespaced(cluster.client(), ns);
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": sa_name}, "rules": rules})).expect("role"),
        )
        .await
        .expect("creating the Role");
    let bindings: Api<RoleBinding> = Api::namespaced(cluster.client(), ns);
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": sa_name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa_name},
                "subjects": [{"kind": "ServiceAccount", "name": sa_name, "namespace": ns}],
            }))
            .expect("binding"),
        )
        .await
        .expect("creating the RoleBinding");

    impersonating_kubeconfig(cluster, ns, sa_name)
}

/// A kubeconfig (in the returned temp dir) that acts as `system:serviceaccount:<ns>:<sa>` with the
/// admin's credentials; checks that it really is refused what a ServiceAccount is not granted.
fn impersonating_kubeconfig(cluster: &TestCluster, ns: &str, sa_name: &str) -> (tempfile::TempDir, PathBuf) {
    let mut kubeconfig = Kubeconfig::read_from(cluster.kubeconfig_path()).expect("reading the kubeconfig");
    for named in &mut kubeconfig.auth_infos {
        if let Some(user) = named.auth_info.as_mut() {
            user.impersonate = Some(format!("system:serviceaccount:{ns}:{sa_name}"));
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, serde_json::to_vec(&kubeconfig).expect("kubeconfig json"))
        .expect("writing kubeconfig");

    // The kubeconfig really acts as the ServiceAccount: what the CSV does not grant is refused.
    let denied = Command::new(cluster_bin().join("kubectl"))
        .arg("--kubeconfig")
        .arg(&path)
        .args(["-n", ns, "get", "secrets"])
        .output()
        .expect("running kubectl");
    assert!(
        !denied.status.success() && String::from_utf8_lossy(&denied.stderr).contains("forbidden"),
        "listing secrets as the ServiceAccount must be forbidden: {denied:?}"
    );
    (dir, path)
}

#[tokio::test]
async fn the_tutorial_flow_creates_scales_degrades_and_deletes_a_redis_cluster() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    install_crd(&cluster);
    let ns = cluster.namespace("redis-tutorial").await;
    let _operator = Operator::start(ns.name(), cluster.kubeconfig_path());
    tutorial_flow(&cluster, &ns).await;
}

#[tokio::test]
async fn the_csv_permissions_alone_are_enough_for_the_tutorial_flow() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    install_crd(&cluster);
    let ns = cluster.namespace("redis-csv-rbac").await;
    let (_dir, kubeconfig) = csv_service_account(&cluster, ns.name()).await;
    let operator = Operator::start(ns.name(), &kubeconfig);
    tutorial_flow(&cluster, &ns).await;
    operator.assert_never_forbidden();
}

#[tokio::test]
async fn deleting_a_cluster_with_delete_claim_on_delete_removes_its_claims_with_csv_permissions() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    install_crd(&cluster);
    let ns = cluster.namespace("redis-claims").await;
    let (_dir, kubeconfig) = csv_service_account(&cluster, ns.name()).await;
    let operator = Operator::start(ns.name(), &kubeconfig);
    let (cluster, ns) = (&cluster, ns.name());

    cluster.kubectl_ok([
        "-n",
        ns,
        "apply",
        "-f",
        &fixture("example-rediscluster-storage.yaml"),
    ]);
    // There is no storage provisioner: the claim stays Pending and so does pod 0, but the
    // StatefulSet controller has created the claim, which is what the finalizer must clean up.
    let claim = format!("data-{NAME}-0");
    wait_for("the cleanup finalizer and the first claim", WAIT, || {
        let claim = claim.clone();
        async move {
            let rc = get_json(cluster, ns, &["rediscluster", NAME])?;
            let has_finalizer = rc["metadata"]["finalizers"]
                .as_array()?
                .iter()
                .any(|f| f == "cache.example.com/cleanup");
            (has_finalizer && get_json(cluster, ns, &["pvc", &claim]).is_some()).then_some(())
        }
    })
    .await;

    cluster.kubectl_ok(["-n", ns, "delete", "rediscluster", NAME, "--wait=false"]);
    wait_for(
        "the RedisCluster, its pods and its claims to be gone",
        WAIT,
        || async move {
            let rc_gone = get_json(cluster, ns, &["rediscluster", NAME]).is_none();
            let selector = format!("app.kubernetes.io/instance={NAME}");
            let claims = get_json(cluster, ns, &["pvc", "-l", &selector])?;
            let pods = get_json(cluster, ns, &["pods", "-l", &selector])?;
            let sts_gone = get_json(cluster, ns, &["statefulset", NAME]).is_none();
            (rc_gone
                && sts_gone
                && claims["items"].as_array()?.is_empty()
                && pods["items"].as_array()?.is_empty())
            .then_some(())
        },
    )
    .await;
    let events = get_json(
        cluster,
        ns,
        &["events", "--field-selector", "reason=ClaimsDeleted"],
    )
    .expect("events");
    let note = events["items"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        note.starts_with("deleted ") && note.ends_with("PersistentVolumeClaims"),
        "{events}"
    );
    operator.assert_never_forbidden();
}

#[tokio::test]
async fn metrics_and_health_endpoints_answer_with_the_reconcile_histogram() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    install_crd(&cluster);
    let ns = cluster.namespace("redis-metrics").await;
    let operator = Operator::start(ns.name(), cluster.kubeconfig_path());
    let operator = &operator;
    let health = wait_for(
        "/healthz to answer",
        WAIT,
        || async move { operator.get("/healthz") },
    )
    .await;
    assert_eq!(health, ("HTTP/1.1 200 OK".to_owned(), "ok\n".to_owned()));
    // Retried as well: on a loaded machine one request can time out (seen in a CI run).
    let ready = wait_for("/readyz to answer 200", WAIT, || async move {
        operator
            .get("/readyz")
            .filter(|(status, _)| status == "HTTP/1.1 200 OK")
    })
    .await;
    assert_eq!(ready.0, "HTTP/1.1 200 OK");

    cluster.kubectl_ok([
        "-n",
        ns.name(),
        "apply",
        "-f",
        &fixture("example-rediscluster.yaml"),
    ]);
    wait_ready(&cluster, ns.name(), 3).await;
    let (status, body) = wait_for("/metrics to count a successful reconcile", WAIT, || async move {
        let (status, body) = operator.get("/metrics")?;
        let count = body
            .lines()
            .find_map(|l| {
                l.strip_prefix("redis_operator_reconcile_duration_seconds_count{result=\"success\"} ")
            })?
            .parse::<u64>()
            .ok()?;
        (count >= 1).then_some((status, body))
    })
    .await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.contains("# TYPE redis_operator_reconcile_duration_seconds histogram"));
    assert!(
        body.contains("redis_operator_reconcile_duration_seconds_bucket{le=\"+Inf\",result=\"success\"}")
    );
    assert!(body.contains("redis_operator_managed_clusters 1\n"), "{body}");
    // Retried like /healthz and /readyz above.
    let missing = wait_for("/nope to answer", WAIT, || async move { operator.get("/nope") }).await;
    assert_eq!(missing.0, "HTTP/1.1 404 Not Found");
}

#[tokio::test]
async fn cluster_mode_shrink_drains_before_lowering_the_statefulset_and_refuses_below_three_primaries() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    install_crd(&cluster);
    let ns = cluster.namespace("redis-shrink").await;
    let _operator = Operator::start(ns.name(), cluster.kubeconfig_path());
    let (cluster, ns) = (&cluster, ns.name());
    let manifest = json!({
        "apiVersion": "cache.example.com/v1",
        "kind": "RedisCluster",
        "metadata": {"name": NAME},
        "spec": {"size": 6, "mode": "cluster", "replicasPerPrimary": 0},
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("cluster.json");
    std::fs::write(&file, manifest.to_string()).expect("writing the manifest");
    cluster.kubectl_ok(["-n", ns, "apply", "-f", file.to_str().expect("utf-8 path")]);
    // kwok's pods are Ready with addresses nothing listens on, so no Redis protocol step can
    // succeed here (tests/it/redis_cluster_mode.rs drains real redis-server processes). What is
    // observable on a control plane: the drain is attempted with all six pods, its failure is
    // reported honestly, and the StatefulSet is not lowered before a drain reports done.
    wait_statefulset(cluster, ns, 6).await;

    let patch = |size: u32| {
        cluster.kubectl_ok([
            "-n",
            ns,
            "patch",
            "rediscluster",
            NAME,
            "-p",
            &format!(r#"{{"spec":{{"size":{size}}}}}"#),
            "--type=merge",
        ]);
    };
    patch(3);
    let rc = wait_for("the drain of pods 3 to 5 to be reported", WAIT, || async move {
        let rc = get_json(cluster, ns, &["rediscluster", NAME])?;
        let d = condition(&rc, "Degraded")?;
        (d["reason"] == "DrainFailed" && d["observedGeneration"] == rc["metadata"]["generation"])
            .then_some(rc)
    })
    .await;
    let degraded = condition(&rc, "Degraded").expect("Degraded");
    assert_eq!(degraded["status"], "True");
    let message = degraded["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("pods {NAME}-3 to {NAME}-5"))
            && message.contains("the StatefulSet keeps 6 pods")
            && message.contains("failed to talk to node"),
        "{message}"
    );
    let progressing = condition(&rc, "Progressing").expect("Progressing");
    assert_eq!(
        (&progressing["status"], &progressing["reason"]),
        (&json!("True"), &json!("Draining")),
        "{progressing}"
    );
    assert!(
        progressing["message"]
            .as_str()
            .is_some_and(|m| m.contains("scaling from 6 to 3")),
        "{progressing}"
    );
    assert_eq!(rc["status"]["phase"], "Degraded");
    assert_eq!(rc["status"]["nodes"], json!(names(6)), "every pod is kept");
    let sts = get_json(cluster, ns, &["statefulset", NAME]).expect("sts");
    assert_eq!(
        sts["spec"]["replicas"], 6,
        "the StatefulSet keeps the undrained pods"
    );
    wait_for("a DrainFailed Warning event", WAIT, || async move {
        let events = get_json(
            cluster,
            ns,
            &[
                "events",
                "--field-selector",
                &format!("type=Warning,reason=DrainFailed,involvedObject.name={NAME}"),
            ],
        )?;
        (!events["items"].as_array()?.is_empty()).then_some(())
    })
    .await;

    // Below three primaries the shrink is refused outright, and still no pod is removed.
    patch(2);
    let rc = wait_for(
        "the shrink below the minimum to be refused",
        WAIT,
        || async move {
            let rc = get_json(cluster, ns, &["rediscluster", NAME])?;
            let d = condition(&rc, "Degraded")?;
            (d["reason"] == "ShrinkBelowMinimum" && d["observedGeneration"] == rc["metadata"]["generation"])
                .then_some(rc)
        },
    )
    .await;
    let message = condition(&rc, "Degraded").expect("Degraded")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains("minimum of 3") && message.contains("majority of primaries"),
        "{message}"
    );
    let sts = get_json(cluster, ns, &["statefulset", NAME]).expect("sts");
    assert_eq!(sts["spec"]["replicas"], 6, "no pod is removed");
}

// ---------------------------------------------------------------------------------------------
// Installed by OLM: the olm-controller installs the shipped catalog's redis-operator package
// through a Subscription, and the operator runs with the RBAC OLM created for its Deployment.

/// A running `olm-controller run` against the test cluster, killed when dropped.
struct OlmController {
    _process: support::LoggedChild,
}

impl OlmController {
    fn start(cluster: &TestCluster, ns: &str) -> OlmController {
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("olm-controller-{ns}.log"));
        let metrics = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let process = support::LoggedChild::spawn(
            Command::new(support::workspace_bin("olm-controller"))
                .arg("run")
                .arg("--kubeconfig")
                .arg(cluster.kubeconfig_path())
                .arg("--metrics-bind")
                .arg(metrics.to_string())
                .env("RUST_LOG", "info"),
            log,
        );
        OlmController { _process: process }
    }
}

/// `kubectl apply --server-side` of a JSON object.
fn apply_json(cluster: &TestCluster, ns: &str, obj: &Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("object.json");
    std::fs::write(&file, obj.to_string()).expect("writing the object");
    cluster.kubectl_ok([
        "-n",
        ns,
        "apply",
        "--server-side",
        "--field-manager=redis-operator-e2e",
        "-f",
        file.to_str().expect("utf-8 path"),
    ]);
}

#[tokio::test]
async fn after_olm_installs_the_operator_through_a_subscription_its_service_account_is_enough() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    cluster.install_olm_crds("redis-operator-e2e");
    let ns = cluster.namespace("redis-olm").await;
    let _olm = OlmController::start(&cluster, ns.name());
    let (c, n) = (&cluster, ns.name());

    // The shipped catalog, served from a ConfigMap CatalogSource.
    let path = format!(
        "{}/../catalog/redis-operator/catalog.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("reading the shipped catalog");
    let decoded = olm_rs::codec::decode_documents(&path, &text);
    assert!(decoded.error.is_none(), "{path}: {:?}", decoded.error);
    let lines: Vec<String> = decoded.documents.iter().map(|d| d.value.to_string()).collect();
    apply_json(
        c,
        n,
        &json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "redis-catalog"},
            "data": {"catalog.json": lines.join("\n")},
        }),
    );
    apply_json(
        c,
        n,
        &json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "redis-catalog"},
            "spec": {"sourceType": "configmap", "configMap": "redis-catalog", "displayName": "shipped"},
        }),
    );
    apply_json(
        c,
        n,
        &json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "redis"},
            "spec": {"targetNamespaces": [n]},
        }),
    );
    apply_json(
        c,
        n,
        &json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "redis-operator"},
            "spec": {
                "name": "redis-operator", "channel": "stable", "source": "redis-catalog",
                "sourceNamespace": n, "installPlanApproval": "Automatic",
            },
        }),
    );
    let olm_wait = Duration::from_secs(180);
    let csv_name = wait_for("the Subscription to install a CSV", olm_wait, || async move {
        let sub = get_json(c, n, &["subscriptions.operators.coreos.com", "redis-operator"])?;
        sub["status"]["installedCSV"].as_str().map(str::to_owned)
    })
    .await;
    assert_eq!(
        csv_name, "redis-operator.v1.0.0",
        "the head of the stable channel"
    );
    let csv = wait_for("the CSV to succeed", olm_wait, || {
        let csv_name = csv_name.clone();
        async move {
            let csv = get_json(c, n, &["clusterserviceversions.operators.coreos.com", &csv_name])?;
            (csv["status"]["phase"] == "Succeeded").then_some(csv)
        }
    })
    .await;
    let deployment = &csv["spec"]["install"]["spec"]["deployments"][0];
    let sa = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .expect("the CSV Deployment's serviceAccountName")
        .to_owned();
    let deployed = get_json(
        c,
        n,
        &[
            "deployment",
            deployment["name"].as_str().expect("deployment name"),
        ],
    )
    .expect("OLM created the Deployment");
    assert_eq!(
        deployed["spec"]["template"]["spec"]["serviceAccountName"],
        sa.as_str()
    );
    assert!(
        get_json(c, n, &["serviceaccount", &sa]).is_some(),
        "OLM created the ServiceAccount {sa}"
    );
    // The RBAC is OLM's: the test creates no Role or RoleBinding.
    let bindings = get_json(c, n, &["rolebindings"]).expect("rolebindings");
    assert!(
        bindings["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|b| {
                b["subjects"].as_array().is_some_and(|s| {
                    s.iter()
                        .any(|s| s["kind"] == "ServiceAccount" && s["name"] == sa.as_str())
                })
            })),
        "OLM bound the CSV's permissions to {sa}: {bindings}"
    );

    let (_dir, kubeconfig) = impersonating_kubeconfig(c, n, &sa);
    let operator = Operator::start(n, &kubeconfig);
    tutorial_flow(c, &ns).await;
    operator.assert_never_forbidden();
}
