//! The pod network harness (`crates/test-support/src/pod_net.rs`): kwok pods get an IP but
//! nothing runs, so a test that needs the API server to call a pod (a webhook, an APIService)
//! makes a network namespace holding the pod's IP and serves from inside it.
//!
//! - `a_server_inside_a_pod_network_answers_the_host` and the three tests after it need root only:
//!   a namespace on a test IP, a command run inside it, an HTTPS server on a socket bound inside
//!   it and a program run inside it, both reached from the host, nothing left once it drops (the
//!   program killed), overlapping IPs refused, and a crashed run's leftovers removed.
//! - `the_api_server_calls_a_webhook_served_from_a_pod_ip` needs root and the local cluster
//!   (`tests/cluster/up`, whose API server runs with `--enable-aggregator-routing=true`): a
//!   Deployment whose kwok pod gets an IP, a Service selecting it, a serving certificate for
//!   `<svc>.<ns>.svc`, an AdmissionReview server on `<pod IP>:8443` inside the namespace, and a
//!   ValidatingWebhookConfiguration naming the Service. A guarded ConfigMap is denied with the
//!   server's message, then allowed once the server allows: API server → Service → endpoints →
//!   pod IP → namespace, for real.
//!
//! - `the_api_server_converts_through_a_crd_webhook_served_from_a_pod_ip`: the same for a CRD's
//!   conversion webhook: a `v1alpha1` Widget (`spec.size`) is stored as `v1` (`spec.replicas`)
//!   and read back in both versions, converted by the server in the pod.
//!
//! Without root (or `ip`), all skip with the reason; under `CI=true` they fail instead.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};

use crate::support::cluster::{TestCluster, WAIT, wait_for};
use crate::support::https::{self, HttpsServer, Reply};
use crate::support::pod_net::{self, PodNetwork};
use base64::Engine as _;
use k8s_openapi::api::{
    admissionregistration::v1::ValidatingWebhookConfiguration,
    apps::v1::Deployment,
    core::v1::{ConfigMap, Service},
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

/// Whether this process may make pod networks; skips (or fails under `CI=true`) with the reason.
fn pod_network_available() -> bool {
    pod_net::available() && crate::support::tool_answers("openssl", &["version"], "openssl")
}

#[test]
fn a_server_inside_a_pod_network_answers_the_host() {
    if !pod_network_available() {
        return;
    }
    let ip = test_ip(1);
    let net = PodNetwork::create(IpAddr::V4(ip)).expect("making the pod network");
    let name = net.name().to_owned();

    // A command inside sees the pod IP on its eth0.
    let out = net
        .run(pod_net::IP, &["-4", "-o", "addr", "show", "eth0"])
        .expect("running ip inside");
    let addrs = String::from_utf8_lossy(&out.stdout);
    assert!(addrs.contains(&format!("{ip}/32")), "inside: {addrs}");

    // An HTTPS server on a socket bound inside, reached from the host through the route.
    let cert = https::openssl_serving_cert(&["pod.test"]);
    let listener = net.bind_tcp(0).expect("binding inside the pod network");
    let server = HttpsServer::start(
        listener,
        &cert,
        Arc::new(|req: &https::Request| Reply::json(&json!({ "path": req.path, "echo": req.json() }))),
    )
    .expect("starting the server");
    let port = server.addr().port();
    assert_eq!(server.addr().ip(), IpAddr::V4(ip));
    let (status, body) = https::request(
        server.addr(),
        "pod.test",
        &cert.ca_pem,
        "POST",
        "/validate",
        br#"{"n":1}"#,
    )
    .expect("calling the server inside from the host");
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).expect("JSON reply"),
        json!({"path": "/validate", "echo": {"n": 1}})
    );
    assert_eq!(server.served().len(), 1);
    // The certificate is checked: another name is refused.
    assert!(https::request(server.addr(), "other.test", &cert.ca_pem, "GET", "/", b"").is_err());

    // The same server cannot be reached on the host's own addresses: it is inside.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());

    drop(server);
    drop(net);
    let list = std::process::Command::new(pod_net::IP)
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&name));
    let routes = std::process::Command::new(pod_net::IP)
        .args(["-4", "route", "show"])
        .output()
        .expect("ip route");
    assert!(!String::from_utf8_lossy(&routes.stdout).contains(&ip.to_string()));
}

/// A test address for this process: 198.18.0.0/15 is reserved for benchmarks, so no host routes
/// it; the third octet comes from the pid so that two test processes do not collide.
fn test_ip(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(198, 18, (std::process::id() % 250) as u8, n)
}

fn ip_out(args: &[&str]) -> String {
    let out = std::process::Command::new(pod_net::IP)
        .args(args)
        .output()
        .expect("running ip");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_program_run_inside_serves_the_host_and_dies_with_the_network() {
    if !pod_network_available() {
        return;
    }
    let ip = test_ip(2);
    let net = PodNetwork::create(IpAddr::V4(ip)).expect("making the pod network");
    let cert = https::openssl_serving_cert(&["pod.test"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let (crt, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&crt, &cert.cert_pem).expect("writing the certificate");
    std::fs::write(&key, &cert.key_pem).expect("writing the key");
    // `openssl s_server -www` stands in for an operator binary listening on its containerPort.
    let mut child = net
        .command("openssl")
        .args([
            "s_server",
            "-quiet",
            "-www",
            "-accept",
            &format!("{ip}:4443"),
            "-cert",
        ])
        .arg(&crt)
        .arg("-key")
        .arg(&key)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting openssl s_server inside");
    let reached = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::net::TcpStream::connect_timeout(
            &std::net::SocketAddr::new(IpAddr::V4(ip), 4443),
            std::time::Duration::from_secs(1),
        )
        .is_ok()
    });
    assert!(
        reached,
        "the server inside the pod network is reachable from the host"
    );
    assert!(
        ip_out(&["netns", "pids", net.name()]).contains(&child.id().to_string()),
        "the program runs inside the namespace"
    );
    // Dropping the network kills what still runs inside.
    drop(net);
    let status = child.wait().expect("waiting for the server");
    assert!(!status.success(), "killed, not exited: {status}");
}

#[test]
fn an_ip_the_host_reaches_is_refused_with_what_overlaps() {
    if !pod_network_available() {
        return;
    }
    // lo holds 127.0.0.1/8.
    let err = PodNetwork::create("127.0.0.5".parse().expect("ip")).expect_err("overlaps lo");
    assert!(err.to_string().contains("interface address 127.0.0.1/8"), "{err}");
    // Another live pod network holds the IP (another cluster's test run, say).
    let ip = test_ip(3);
    let first = PodNetwork::create(IpAddr::V4(ip)).expect("the first pod network");
    let err = PodNetwork::create(IpAddr::V4(ip)).expect_err("the IP is taken");
    assert!(
        err.to_string().contains("another pod network holds this IP"),
        "{err}"
    );
    drop(first);
    let err = PodNetwork::create("fd00::5".parse().expect("ip")).expect_err("IPv6");
    assert!(err.to_string().contains("IPv4 pod IPs only"), "{err}");
}

#[test]
fn the_leftovers_of_a_crashed_run_are_removed() {
    if !pod_network_available() {
        return;
    }
    // A process that is gone: its pid names the leftovers, as a crashed test binary's would.
    let mut gone = std::process::Command::new("true").spawn().expect("running true");
    let pid = gone.id();
    gone.wait().expect("true exits");
    let (ns, veth) = (
        format!("{}{pid}-0", pod_net::NETNS_PREFIX),
        format!("{}{pid}-0", pod_net::VETH_PREFIX),
    );
    let ip = test_ip(4).to_string();
    let peer = format!("{veth}p");
    for args in [
        vec!["netns", "add", &ns],
        vec!["link", "add", &veth, "type", "veth", "peer", "name", &peer],
        vec!["link", "set", &peer, "netns", &ns],
        vec!["link", "set", &veth, "up"],
        vec!["route", "add", &ip, "dev", &veth],
    ] {
        let out = std::process::Command::new(pod_net::IP)
            .args(&args)
            .output()
            .expect("running ip");
        assert!(out.status.success(), "ip {args:?}: {out:?}");
    }
    pod_net::clean_leftovers().expect("cleaning leftovers");
    assert!(!ip_out(&["netns", "list"]).contains(&ns));
    assert!(!ip_out(&["-o", "link", "show"]).contains(&veth));
    assert!(!ip_out(&["-4", "route", "show"]).contains(&ip));
}

/// Deletes a cluster-scoped object (`kind`, `name`) when the test ends, even on panic: a
/// `failurePolicy: Fail` webhook or a CRD converting through a gone server left behind would
/// break its namespace's deletion.
struct DeleteOnDrop<'a>(&'a TestCluster, &'static str, String);

impl Drop for DeleteOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self
            .0
            .kubectl(["delete", self.1, &self.2, "--ignore-not-found", "--wait=false"]);
    }
}

/// A "pod" serving HTTPS for real: a Deployment `name` whose kwok pod gets an IP, a Service
/// `name` (port 443 → 8443) selecting it, a serving certificate for `<name>.<ns>.svc`, and an
/// [`HttpsServer`] answering with `handler` on `<pod IP>:8443` inside a [`PodNetwork`].
async fn serve_pod(
    ns: &crate::support::cluster::TestNamespace,
    name: &str,
    handler: https::Handler,
) -> (PodNetwork, HttpsServer, https::ServingCert) {
    let deployments: Api<Deployment> = ns.api();
    let deployment = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "server",
                    "image": "example.invalid/webhook:1",
                    "ports": [{"name": "https", "containerPort": 8443}],
                }]},
            },
        },
    }))
    .expect("deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("creating the deployment");
    let services: Api<Service> = ns.api();
    let service = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 443, "targetPort": 8443}]},
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &service)
        .await
        .expect("creating the service");
    let pod_ip = ns.running_pod_ip(&format!("app={name}")).await;
    // The endpointslice controller publishes the kwok pod as a ready endpoint of the Service:
    // what the API server's service resolver reads with aggregator routing.
    ns.wait_service_endpoint(name, pod_ip).await;

    let net = PodNetwork::create(pod_ip).expect("making the pod network");
    let nsn = ns.name();
    let cert = https::openssl_serving_cert(&[
        &format!("{name}.{nsn}.svc"),
        &format!("{name}.{nsn}.svc.cluster.local"),
    ]);
    let listener = net.bind_tcp(8443).expect("binding the containerPort inside");
    let server = HttpsServer::start(listener, &cert, handler).expect("starting the server");
    (net, server, cert)
}

#[tokio::test]
async fn the_api_server_calls_a_webhook_served_from_a_pod_ip() {
    if !pod_network_available() {
        return;
    }
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let ns = cluster.namespace("pod-net").await;
    let nsn = ns.name().to_owned();

    // The AdmissionReview server, denying until told otherwise.
    let deny: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(Some(
        "pod-net test webhook says no: ConfigMaps labelled olm-rs.test/guarded are refused".to_owned(),
    )));
    let handler = {
        let deny = deny.clone();
        Arc::new(move |req: &https::Request| {
            if req.path_only() != "/validate" {
                return Reply::error(404, "only /validate is served");
            }
            let review = req.json();
            let denial = deny.lock().map(|d| d.clone()).unwrap_or_default();
            Reply::json(&https::admission_review_reply(
                &review,
                denial.is_none(),
                denial.as_deref().unwrap_or_default(),
            ))
        })
    };
    let (net, server, cert) = serve_pod(&ns, "webhook-service", handler).await;
    let pod_ip = net.ip();

    // The webhook, naming the Service (not a URL), scoped to this namespace and guarded objects.
    let webhook_name = format!("pod-net-{nsn}");
    let _cleanup = DeleteOnDrop(&cluster, "validatingwebhookconfiguration", webhook_name.clone());
    let vwcs: Api<ValidatingWebhookConfiguration> = Api::all(cluster.client());
    let vwc = serde_json::from_value(json!({
        "metadata": {"name": webhook_name},
        "webhooks": [{
            "name": "guard.pod-net.olm-rs.test",
            "clientConfig": {
                "service": {"namespace": nsn, "name": "webhook-service", "path": "/validate", "port": 443},
                "caBundle": base64::engine::general_purpose::STANDARD.encode(&cert.ca_pem),
            },
            "rules": [{
                "operations": ["CREATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
                "scope": "Namespaced",
            }],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": nsn}},
            "objectSelector": {"matchLabels": {"olm-rs.test/guarded": "true"}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10,
        }],
    }))
    .expect("webhook configuration");
    vwcs.create(&PostParams::default(), &vwc)
        .await
        .expect("creating the webhook configuration");

    let cms: Api<ConfigMap> = ns.api();
    let guarded = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"olm-rs.test/guarded": "true"}},
            "data": {"k": "v"},
        }))
        .expect("configmap")
    };
    // The API server picks the new configuration up within a moment: until then creates pass.
    let attempt = std::sync::atomic::AtomicU32::new(0);
    let denied = wait_for("the webhook to deny a guarded ConfigMap", WAIT, || {
        let (cms, n) = (
            cms.clone(),
            attempt.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        let cm = guarded(&format!("early-{n}"));
        async move {
            match cms.create(&PostParams::default(), &cm).await {
                Ok(_) => {
                    let _ = cms
                        .delete(&cm.metadata.name.unwrap_or_default(), &DeleteParams::default())
                        .await;
                    None
                }
                Err(e) => Some(e.to_string()),
            }
        }
    })
    .await;
    assert!(
        denied.contains("admission webhook \"guard.pod-net.olm-rs.test\" denied the request")
            && denied.contains("pod-net test webhook says no"),
        "the denial should carry the server's message, got: {denied}"
    );
    eprintln!("denied through {pod_ip}:8443 in {}: {denied}", net.name());
    let reviews = server.served();
    let last = reviews.last().expect("the server saw the request").json();
    assert_eq!(last["kind"], "AdmissionReview");
    assert_eq!(last["request"]["namespace"], nsn);
    assert_eq!(last["request"]["kind"]["kind"], "ConfigMap");

    // The server allows from now on: the same request passes, through the same path.
    *deny.lock().expect("deny flag") = None;
    let before = server.served().len();
    cms.create(&PostParams::default(), &guarded("allowed"))
        .await
        .expect("the webhook allows now");
    assert!(server.served().len() > before, "the allowed create was reviewed");
    // An unguarded ConfigMap is not sent to the webhook at all (objectSelector).
    let served = server.served().len();
    let plain: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "plain"}})).expect("configmap");
    cms.create(&PostParams::default(), &plain)
        .await
        .expect("an unguarded ConfigMap");
    assert_eq!(server.served().len(), served);

    drop(server);
    drop(net);
}

/// Converts a Widget between `v1alpha1` (`spec.size`) and `v1` (`spec.replicas`).
fn convert_widget(object: &serde_json::Value, desired: &str) -> Result<serde_json::Value, String> {
    let mut out = object.clone();
    let spec = out
        .get_mut("spec")
        .and_then(serde_json::Value::as_object_mut)
        .ok_or("a Widget without spec")?;
    let (from, to) = if desired.ends_with("/v1") {
        ("size", "replicas")
    } else {
        ("replicas", "size")
    };
    if let Some(value) = spec.remove(from) {
        spec.insert(to.to_owned(), value);
    }
    Ok(out)
}

#[tokio::test]
async fn the_api_server_converts_through_a_crd_webhook_served_from_a_pod_ip() {
    if !pod_network_available() {
        return;
    }
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let ns = cluster.namespace("pod-conv").await;
    let nsn = ns.name().to_owned();
    let handler = Arc::new(|req: &https::Request| {
        if req.path_only() != "/convert" {
            return Reply::error(404, "only /convert is served");
        }
        Reply::json(&https::conversion_review_reply(&req.json(), convert_widget))
    });
    let (_net, server, cert) = serve_pod(&ns, "convert-service", handler).await;

    // A CRD serving v1alpha1 and v1 (storage), converted by the server in the pod.
    let group = format!("{nsn}.olm-rs.test");
    let crd_name = format!("widgets.{group}");
    let _cleanup = DeleteOnDrop(&cluster, "customresourcedefinition", crd_name.clone());
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}});
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": crd_name},
        "spec": {
            "group": group,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1alpha1", "served": true, "storage": false, "schema": schema},
                {"name": "v1", "served": true, "storage": true, "schema": schema},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {
                    "service": {"namespace": nsn, "name": "convert-service", "path": "/convert", "port": 443},
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(&cert.ca_pem),
                },
                "conversionReviewVersions": ["v1"],
            }},
        },
    }))
    .expect("crd");
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("creating the CRD");
    cluster.wait_crds_established(&[&crd_name]);

    let resource = |version: &str| {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(&group, version, "Widget"), "widgets")
    };
    let alpha: Api<DynamicObject> = Api::namespaced_with(cluster.client(), &nsn, &resource("v1alpha1"));
    let v1: Api<DynamicObject> = Api::namespaced_with(cluster.client(), &nsn, &resource("v1"));
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1alpha1"), "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"size": 3},
    }))
    .expect("widget");
    // Stored as v1: the API server converts the v1alpha1 object through the webhook (retried
    // while the CRD's handler starts).
    wait_for("a v1alpha1 Widget to be stored", WAIT, || {
        let (alpha, widget) = (alpha.clone(), widget.clone());
        async move {
            alpha
                .create(&PostParams::default(), &widget)
                .await
                .ok()
                .map(|_| ())
        }
    })
    .await;
    let stored = v1.get("w1").await.expect("reading the Widget as v1");
    assert_eq!(
        stored.data["spec"],
        json!({"replicas": 3}),
        "read back as v1: {stored:?}"
    );
    let back = alpha.get("w1").await.expect("reading the Widget as v1alpha1");
    assert_eq!(
        back.data["spec"],
        json!({"size": 3}),
        "read back as v1alpha1: {back:?}"
    );
    let reviews: Vec<_> = server
        .served()
        .iter()
        .filter(|r| r.path_only() == "/convert")
        .map(|r| r.json()["request"]["desiredAPIVersion"].clone())
        .collect();
    assert!(reviews.contains(&json!(format!("{group}/v1"))), "{reviews:?}");
    assert!(
        reviews.contains(&json!(format!("{group}/v1alpha1"))),
        "{reviews:?}"
    );
    // Delete the CRD while the server still answers (its objects are converted on the way out).
    crds.delete(&crd_name, &DeleteParams::default())
        .await
        .expect("deleting the CRD");
}
