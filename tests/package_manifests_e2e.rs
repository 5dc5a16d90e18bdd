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
//! - `-A` lists each package in its catalog's namespace; a caller without the front-proxy
//!   certificate is refused;
//! - a new display name of the CatalogSource is served, and a deleted CatalogSource's packages
//!   are gone.

mod support;

use std::{
    io::{Read, Write},
    net::{IpAddr, SocketAddr, TcpListener, TcpStream},
};

use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::Service},
    kube_aggregator::pkg::apis::apiregistration::v1::APIService,
};
use kube::api::{Api, PostParams};
use serde_json::json;
use support::{
    cluster::{TestCluster, WAIT, wait_for},
    e2e,
    pod_net::{self, PodNetwork},
};

const APISERVICE: &str = "v1.packages.operators.coreos.com";
const PORT: u16 = 5443;

fn available() -> bool {
    match pod_net::check_host() {
        Ok(()) => true,
        Err(e) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {e}");
            eprintln!("skipping: {e}");
            false
        }
    }
}

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

fn etcd_catalog() -> String {
    std::fs::read_to_string(
        support::cluster::repo_root().join("tests/fixtures/package-manifests/etcd/catalog.json"),
    )
    .expect("reading the etcd fixture catalog")
}

#[tokio::test]
async fn kubectl_lists_gets_and_selects_package_manifests_through_the_api_server() {
    if !available() {
        return;
    }
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    cluster.install_olm_crds("olm-rs-e2e");
    let global = cluster.namespace("pkg-global").await;
    let own = cluster.namespace("pkg-own").await;
    let none = cluster.namespace("pkg-none").await;
    let (g, o, n) = (
        global.name().to_owned(),
        own.name().to_owned(),
        none.name().to_owned(),
    );

    // The "pod" the Service selects, its IP made real, and the relay to the controller.
    let deployments: Api<Deployment> = global.api();
    let deployment = serde_json::from_value(json!({
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
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("creating the deployment");
    let services: Api<Service> = global.api();
    let service = serde_json::from_value(json!({
        "metadata": {"name": "olm-rs-packageserver"},
        "spec": {"selector": {"app": "packageserver"}, "ports": [{"port": 443, "targetPort": PORT}]},
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &service)
        .await
        .expect("creating the service");
    let pod_ip: IpAddr = global.running_pod_ip("app=packageserver").await;
    global.wait_service_endpoint("olm-rs-packageserver", pod_ip).await;
    let net = PodNetwork::create(pod_ip).expect("making the pod network");
    let serve = e2e::free_port();
    relay(
        net.bind_tcp(PORT).expect("binding the containerPort inside"),
        serve,
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

    let _apiservice = DeleteApiService(&cluster);
    let _controller = e2e::Controller::start(
        cluster.kubeconfig_path(),
        e2e::tmp_path(&format!("package-manifests-{g}.log")),
        vec![
            "--namespace".into(),
            g.clone().into(),
            "--serve-packages".into(),
            serve.to_string().into(),
            "--packages-service".into(),
            format!("{g}/olm-rs-packageserver").into(),
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

    drop(net);
}
