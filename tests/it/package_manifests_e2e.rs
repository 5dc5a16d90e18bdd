//! The `packages.operators.coreos.com/v1` API served by `olm-controller run --serve-packages`
//! (`src/controller/package_server.rs`), called for real by the local cluster's API server
//! through the aggregation layer (root and the local cluster; skipped with the reason
//! otherwise, a failure under `CI=true`).
//!
//! How the API server reaches the controller: the APIService the controller applies names a
//! Service whose endpoint is a kwok pod's IP; a [`PodNetwork`] makes that IP real, and a TCP
//! relay bound inside it on the pod's containerPort forwards each connection, bytes unchanged
//! (TLS end to end), to the controller's `--serve-packages` address on the host's loopback. So
//! the API server's front-proxy client certificate, the serving certificate the controller
//! issued for `<svc>.<ns>.svc` and the CA bundle it wrote into the APIService are all checked,
//! as they would be in a pod.
//!
//! `kubectl_lists_gets_and_selects_package_manifests_through_the_api_server`: a global catalog
//! namespace with the built-in catalog (`redis-operator`), a namespace with its own ConfigMap
//! catalog (`etcd`, `metadata-only`), and a namespace with none:
//! - `kubectl get packagemanifests -n OWN` prints upstream's columns (NAME, CATALOG, AGE) and
//!   lists both catalogs' packages;
//! - `-o jsonpath='{.status.defaultChannel}'` on one package, from the namespace without a
//!   catalog (it sees the global catalog);
//! - `-l catalog=NAME` keeps one catalog's packages;
//! - the namespace without a catalog does not see the other namespace's packages (`get` is
//!   NotFound);
//! - discovery lists `packagemanifests` with `get` and `list`, and the icon subresource serves
//!   the CSV's icon;
//! - `kubectl explain packagemanifests.status.channels` reads the OpenAPI the aggregator merged;
//! - `-A` lists each package in its catalog's namespace; a caller without the front-proxy
//!   certificate is refused;
//! - a new display name of the CatalogSource is served, and a deleted CatalogSource's packages
//!   are gone.

use std::{
    io::{Read, Write},
    net::{IpAddr, SocketAddr, TcpListener, TcpStream},
};

use crate::support::{
    cluster::{TestCluster, WAIT, running_pod_ip, wait_for, wait_service_endpoint},
    e2e,
    pod_net::{self, PodNetwork},
};
use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::Service},
    kube_aggregator::pkg::apis::apiregistration::v1::APIService,
};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

const APISERVICE: &str = "v1.packages.operators.coreos.com";

/// The APIService is cluster-wide: the tests of this file take turns.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
const PORT: u16 = 5443;

/// Forwards every connection accepted on `listener` (inside the pod network) to `to` (the
/// controller on the host's loopback), both ways, until either side closes.
fn relay(listener: TcpListener, to: SocketAddr) {
    std::thread::spawn(move || {
        for inbound in listener.incoming() {
            let Ok(inbound) = inbound else { continue };
            let Ok(outbound) = TcpStream::connect(to) else {
                continue;
            };
            let pipe = |mut from: TcpStream, mut into: TcpStream| {
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || into.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = into.shutdown(std::net::Shutdown::Write);
                });
            };
            if let (Ok(a), Ok(b)) = (inbound.try_clone(), outbound.try_clone()) {
                pipe(a, outbound);
                pipe(b, inbound);
            }
        }
    });
}

/// Deletes the APIService when the test ends, even on panic: an unavailable APIService left
/// behind slows every discovery on the cluster.
struct DeleteApiService<'a>(&'a TestCluster);

impl Drop for DeleteApiService<'_> {
    fn drop(&mut self) {
        let _ = self.0.kubectl([
            "delete",
            "apiservice",
            APISERVICE,
            "--ignore-not-found",
            "--wait=false",
        ]);
    }
}

/// The package server, reachable by the API server: a Deployment `packageserver` in `ns` (its
/// kwok pod's IP made real by a pod network holding a relay to the controller), the Service
/// `olm-rs-packageserver` selecting it, and `olm-controller run --namespace NS --serve-packages`
/// naming that Service, until the APIService is Available.
struct Served {
    /// The controller's `--serve-packages` address on the host.
    addr: SocketAddr,
    _controller: e2e::Controller,
    _net: PodNetwork,
}

async fn serve_packages(cluster: &TestCluster, ns: &str) -> Served {
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), ns);
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "packageserver"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "packageserver"}},
            "template": {
                "metadata": {"labels": {"app": "packageserver"}},
                "spec": {"containers": [{
                    "name": "olm-controller",
                    "image": "ghcr.io/olm-rs/olm-controller:0.1.0",
                    "ports": [{"name": "packages", "containerPort": PORT}],
                }]},
            },
        },
    }))
    .expect("deployment");
    // Applied, not created: in `olm` (upstream's specs) a previous run's objects may remain.
    let apply = PatchParams::apply("olm-rs-e2e").force();
    deployments
        .patch("packageserver", &apply, &Patch::Apply(&deployment))
        .await
        .expect("applying the deployment");
    let services: Api<Service> = Api::namespaced(cluster.client(), ns);
    let service: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "olm-rs-packageserver"},
        "spec": {"selector": {"app": "packageserver"}, "ports": [{"port": 443, "targetPort": PORT}]},
    }))
    .expect("service");
    services
        .patch("olm-rs-packageserver", &apply, &Patch::Apply(&service))
        .await
        .expect("applying the service");
    let pod_ip: IpAddr = running_pod_ip(cluster.client(), ns, "app=packageserver").await;
    // The endpoint the API server's service resolver reads.
    wait_service_endpoint(cluster.client(), ns, "olm-rs-packageserver", pod_ip).await;
    let net = wait_for(&format!("a pod network for {pod_ip}"), WAIT, || async move {
        match PodNetwork::create(pod_ip) {
            Ok(net) => Some(net),
            // Another cluster's test run on this host may hold the same kwok IP for a while.
            Err(e) if e.to_string().contains("another pod network holds this IP") => None,
            Err(e) => panic!("making the pod network for {pod_ip}: {e}"),
        }
    })
    .await;
    let addr = e2e::free_port();
    relay(
        net.bind_tcp(PORT).expect("binding the containerPort inside"),
        addr,
    );

    let controller = e2e::Controller::start(
        cluster.kubeconfig_path(),
        e2e::tmp_path(&format!("package-manifests-{ns}.log")),
        vec![
            "--namespace".into(),
            ns.into(),
            "--serve-packages".into(),
            addr.to_string().into(),
            "--packages-service".into(),
            format!("{ns}/olm-rs-packageserver").into(),
        ],
        &[],
    );

    // The controller registers the API; the aggregator finds it available through the Service.
    let apiservices: Api<APIService> = Api::all(cluster.client());
    wait_for(
        "APIService v1.packages.operators.coreos.com Available",
        WAIT,
        || {
            let apiservices = apiservices.clone();
            async move {
                let s = apiservices.get(APISERVICE).await.ok()?;
                let available = s
                    .status?
                    .conditions?
                    .iter()
                    .any(|c| c.type_ == "Available" && c.status == "True");
                available.then_some(())
            }
        },
    )
    .await;
    Served {
        addr,
        _controller: controller,
        _net: net,
    }
}

/// Deletes the package server's Deployment and Service from `olm` (not a test namespace) when
/// the test ends.
struct DeleteInOlm<'a>(&'a TestCluster);

impl Drop for DeleteInOlm<'_> {
    fn drop(&mut self) {
        let _ = self.0.kubectl([
            "delete",
            "-n",
            "olm",
            "deployment/packageserver",
            "service/olm-rs-packageserver",
            "--ignore-not-found",
            "--wait=false",
        ]);
    }
}

fn etcd_catalog() -> String {
    std::fs::read_to_string(
        crate::support::cluster::repo_root().join("tests/fixtures/package-manifests/etcd/catalog.json"),
    )
    .expect("reading the etcd fixture catalog")
}

#[tokio::test]
async fn kubectl_lists_gets_and_selects_package_manifests_through_the_api_server() {
    if !pod_net::available() {
        return;
    }
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let _turn = ONE_AT_A_TIME.lock().await;
    cluster.install_olm_crds("olm-rs-e2e");
    let global = cluster.namespace("pkg-global").await;
    let own = cluster.namespace("pkg-own").await;
    let none = cluster.namespace("pkg-none").await;
    let (g, o, n) = (
        global.name().to_owned(),
        own.name().to_owned(),
        none.name().to_owned(),
    );

    // Catalogs: the built-in one in the global namespace, a ConfigMap one in `own`.
    e2e::create::<olm_rs::api::v1alpha1::CatalogSource>(
        cluster.client(),
        &g,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": "olm-rs-catalog"},
               "spec": {"sourceType": "builtin", "displayName": "olm-rs catalog", "publisher": "olm-rs"}}),
    )
    .await;
    e2e::apply_catalog_config_map(&own, "olm-rs-e2e", "team-catalog", &etcd_catalog()).await;
    e2e::create::<olm_rs::api::v1alpha1::CatalogSource>(
        cluster.client(),
        &o,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": "team-catalog", "labels": {"team": "a"}},
               "spec": {"sourceType": "configmap", "configMap": "team-catalog", "displayName": "Team catalog", "publisher": "Team A"}}),
    )
    .await;

    let apiservice = DeleteApiService(&cluster);
    let served = serve_packages(&cluster, &g).await;
    let serve = served.addr;

    // `kubectl get packagemanifests -n OWN`: both catalogs, upstream's columns.
    let table = wait_for("both catalogs' packages listed", WAIT, || {
        let out = cluster.kubectl(["get", "packagemanifests", "-n", &o]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        async move {
            (text.contains("etcd") && text.contains("redis-operator") && text.contains("metadata-only"))
                .then_some(text)
        }
    })
    .await;
    eprintln!("$ kubectl get packagemanifests -n {o}\n{table}");
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    assert_eq!(header, ["NAME", "CATALOG", "AGE"]);
    let rows: Vec<Vec<String>> = lines
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // NAME, then the catalog's display name (may hold spaces), then AGE.
            vec![cols[0].to_owned(), cols[1..cols.len() - 1].join(" ")]
        })
        .collect();
    assert_eq!(
        rows,
        [
            vec!["etcd".to_owned(), "Team catalog".to_owned()],
            vec!["metadata-only".to_owned(), "Team catalog".to_owned()],
            vec!["redis-operator".to_owned(), "olm-rs catalog".to_owned()],
        ]
    );

    // One field of one package, from a namespace with no catalog of its own.
    let default_channel = cluster.kubectl_ok([
        "get",
        "packagemanifest",
        "redis-operator",
        "-n",
        &n,
        "-o",
        "jsonpath={.status.defaultChannel}",
    ]);
    assert_eq!(default_channel, "stable");
    eprintln!(
        "$ kubectl get packagemanifest redis-operator -n {n} -o yaml\n{}",
        cluster.kubectl_ok(["get", "packagemanifest", "redis-operator", "-n", &n, "-o", "yaml"])
    );
    let status: serde_json::Value =
        serde_json::from_str(&cluster.kubectl_ok(["get", "packagemanifest", "etcd", "-n", &o, "-o", "json"]))
            .expect("JSON");
    assert_eq!(status["metadata"]["namespace"], o.as_str());
    assert_eq!(status["metadata"]["labels"]["catalog"], "team-catalog");
    assert_eq!(status["metadata"]["labels"]["catalog-namespace"], o.as_str());
    assert_eq!(
        status["metadata"]["labels"]["team"], "storage",
        "the head CSV's label"
    );
    assert_eq!(status["status"]["catalogSourcePublisher"], "Team A");
    assert_eq!(status["status"]["defaultChannel"], "singlenamespace-alpha");
    assert_eq!(status["status"]["channels"][1]["currentCSV"], "etcd.v0.9.2");

    // A label selector on the catalog.
    let selected = cluster.kubectl_ok([
        "get",
        "packagemanifests",
        "-n",
        &o,
        "-l",
        "catalog=team-catalog",
        "-o",
        "name",
    ]);
    assert_eq!(
        selected.lines().collect::<Vec<_>>(),
        [
            "packagemanifest.packages.operators.coreos.com/etcd",
            "packagemanifest.packages.operators.coreos.com/metadata-only"
        ]
    );

    // The namespace without a catalog sees the global packages only.
    let theirs = cluster.kubectl_ok(["get", "packagemanifests", "-n", &n, "-o", "name"]);
    assert_eq!(
        theirs.lines().collect::<Vec<_>>(),
        ["packagemanifest.packages.operators.coreos.com/redis-operator"]
    );
    let missing = cluster.kubectl(["get", "packagemanifest", "etcd", "-n", &n]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("packagemanifests.packages.operators.coreos.com \"etcd\" not found"),
        "{stderr}"
    );

    // The OpenAPI the aggregator merged: kubectl explain finds the kind and its fields.
    let explained = wait_for("kubectl explain packagemanifests.status.channels", WAIT, || {
        let out = cluster.kubectl(["explain", "packagemanifests.status.channels"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        async move { text.contains("currentCSV").then_some(text) }
    })
    .await;
    assert!(explained.contains("KIND:       PackageManifest"), "{explained}");

    // Discovery and the icon subresource.
    let resources = cluster.kubectl_ok(["get", "--raw", "/apis/packages.operators.coreos.com/v1"]);
    let resources: serde_json::Value = serde_json::from_str(&resources).expect("JSON");
    assert_eq!(resources["resources"][0]["verbs"], json!(["get", "list"]));
    let icon = cluster.kubectl_ok([
        "get",
        "--raw",
        &format!("/apis/packages.operators.coreos.com/v1/namespaces/{o}/packagemanifests/etcd/icon"),
    ]);
    assert_eq!(icon, "<svg/>");

    // Every namespace: each package in its catalog's namespace, kubectl's NAMESPACE column first.
    let all = cluster.kubectl_ok(["get", "packagemanifests", "-A"]);
    eprintln!("$ kubectl get packagemanifests -A (this test's lines)");
    let mine: Vec<Vec<&str>> = all
        .lines()
        .filter(|l| l.starts_with("NAMESPACE") || l.starts_with(&g) || l.starts_with(&o))
        .inspect(|l| eprintln!("{l}"))
        .map(|l| l.split_whitespace().take(2).collect())
        .collect();
    assert_eq!(
        mine,
        [
            vec!["NAMESPACE", "NAME"],
            vec![o.as_str(), "etcd"],
            vec![o.as_str(), "metadata-only"],
            vec![g.as_str(), "redis-operator"],
        ]
    );

    // Straight to the server, without the API server's front-proxy certificate: refused, but
    // the health endpoint answers (a kubelet probe has no client certificate).
    let curl = |path: &str| {
        let out = std::process::Command::new("curl")
            .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("https://{serve}{path}"))
            .output()
            .expect("running curl");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(
        curl("/apis/packages.operators.coreos.com/v1/packagemanifests"),
        "401"
    );
    assert_eq!(curl("/healthz"), "200");

    // The CatalogSource's display name changes: the PackageManifests follow (upstream's e2e
    // "should successfully update the CatalogSource field").
    cluster.kubectl_ok([
        "patch",
        "catalogsource",
        "team-catalog",
        "-n",
        &o,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"displayName":"updated Name"}}"#,
    ]);
    wait_for("the new display name served", WAIT, || {
        let out = cluster.kubectl([
            "get",
            "packagemanifest",
            "etcd",
            "-n",
            &o,
            "-o",
            "jsonpath={.status.catalogSourceDisplayName}",
        ]);
        async move { (String::from_utf8_lossy(&out.stdout) == "updated Name").then_some(()) }
    })
    .await;

    // The CatalogSource goes: so do its packages.
    cluster.kubectl_ok(["delete", "catalogsource", "team-catalog", "-n", &o]);
    wait_for("the deleted catalog's packages gone", WAIT, || {
        let out = cluster.kubectl(["get", "packagemanifests", "-n", &o, "-o", "name"]);
        async move {
            (String::from_utf8_lossy(&out.stdout).trim()
                == "packagemanifest.packages.operators.coreos.com/redis-operator")
                .then_some(())
        }
    })
    .await;

    // The APIService goes before its server: the API server never sees it unavailable, so
    // namespace deletions elsewhere on the cluster are not held up by a failing discovery.
    drop(apiservice);
    drop(served);
}

/// Upstream's own `packagemanifest_e2e_test.go` specs against the package server, when a test
/// binary of upstream's `test/e2e` package and its source directory are given
/// (`OLMRS_UPSTREAM_E2E_SUITE`, `OLMRS_UPSTREAM_E2E_SRC`: built by hand beside the checkout, as
/// for `tests/upstream-e2e/run`; this repository builds no upstream code). Skipped otherwise.
/// The suite's namespaces and global catalog are set up as `tests/upstream-e2e/run` sets them
/// (`olm`, `operators`, `olm/operatorhubio-catalog`, the placeholder Deployments); the controller
/// serves `olm` as the global catalog namespace. The two specs of a `grpc` image catalog are
/// skipped: their image is on quay.io (needs the network); the three others must pass.
#[tokio::test]
async fn upstreams_packagemanifest_specs_pass() {
    let (Ok(suite), Ok(src)) = (
        std::env::var("OLMRS_UPSTREAM_E2E_SUITE"),
        std::env::var("OLMRS_UPSTREAM_E2E_SRC"),
    ) else {
        eprintln!(
            "skipping: set OLMRS_UPSTREAM_E2E_SUITE and OLMRS_UPSTREAM_E2E_SRC to run upstream's specs"
        );
        return;
    };
    if !pod_net::available() {
        return;
    }
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let _turn = ONE_AT_A_TIME.lock().await;
    cluster.install_olm_crds("olm-rs-e2e");
    let here = crate::support::cluster::repo_root();
    cluster.kubectl_ok([
        "apply".as_ref(),
        "--server-side".as_ref(),
        "--force-conflicts".as_ref(),
        "-f".as_ref(),
        here.join("manifests/namespace.yaml").as_os_str(),
        "-f".as_ref(),
        here.join("tests/upstream-e2e/global-catalog.yaml").as_os_str(),
        "-f".as_ref(),
        here.join("tests/upstream-e2e/placeholders.yaml").as_os_str(),
    ]);
    let apiservice = DeleteApiService(&cluster);
    let _objects = DeleteInOlm(&cluster);
    let served = serve_packages(&cluster, "olm").await;
    let kubeconfig = cluster.kubeconfig_path().display().to_string();
    let out = std::process::Command::new(&suite)
        .current_dir(&src)
        .env("KUBECONFIG", &kubeconfig)
        .args([
            "-test.timeout",
            "0",
            "-ginkgo.focus-file",
            "packagemanifest_e2e_test.go",
            // Its catalog image is on quay.io, which this machine cannot reach.
            "-ginkgo.skip",
            "gRPC catalog source type",
            "-ginkgo.v",
            "-ginkgo.no-color",
            "-namespace=operators",
            "-olmNamespace=olm",
            "-catalogNamespace=olm",
        ])
        .arg(format!("-kubeconfig={kubeconfig}"))
        .output()
        .expect("running upstream's suite");
    let log = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let path = e2e::tmp_path("upstream-packagemanifest-specs.log");
    std::fs::write(&path, &log).expect("writing the suite's log");
    let verdict = log
        .lines()
        .filter(|l| l.contains("Passed |") || l.starts_with("[FAIL]") || l.contains("[FAIL]"))
        .collect::<Vec<_>>()
        .join("\n");
    eprintln!(
        "upstream packagemanifest specs (log: {}):\n{verdict}",
        path.display()
    );
    assert!(
        log.contains("Ran 3 of ") && log.contains("3 Passed | 0 Failed"),
        "upstream's three ConfigMap-catalog specs should run and pass: {verdict}"
    );
    // The APIService goes before its server: the API server never sees it unavailable, so
    // namespace deletions elsewhere on the cluster are not held up by a failing discovery.
    drop(apiservice);
    drop(served);
}
