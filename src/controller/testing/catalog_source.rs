//! Reconciles of a `sourceType: grpc` CatalogSource against a registry served in process (our
//! own gRPC server on loopback) and the mock API server.

use std::{net::SocketAddr, sync::Arc};

use http::Method;
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::*;
use crate::{
    catalog::{DeclarativeConfig, Model},
    controller::catalog_source,
    grpc::{Registry, ServeOptions, server},
};

const CATALOG_SOURCES: &str = "/apis/operators.coreos.com/v1alpha1/namespaces/olm/catalogsources";

/// Package `a` with bundles `a.v1` … `a.v{count}` in channel `stable`.
fn config(count: usize) -> DeclarativeConfig {
    let mut text = String::from(r#"{"schema":"olm.package","name":"a","defaultChannel":"stable"}"#);
    let entries: Vec<String> = (1..=count)
        .map(|i| match i {
            1 => r#"{"name":"a.v1"}"#.to_owned(),
            _ => format!(r#"{{"name":"a.v{i}","replaces":"a.v{}"}}"#, i - 1),
        })
        .collect();
    text.push_str(&format!(
        r#"{{"schema":"olm.channel","package":"a","name":"stable","entries":[{}]}}"#,
        entries.join(",")
    ));
    for i in 1..=count {
        text.push_str(&format!(
            r#"{{"schema":"olm.bundle","package":"a","name":"a.v{i}","image":"quay.io/a/bundle:v{i}","properties":[{{"type":"olm.package","value":{{"packageName":"a","version":"{i}.0.0"}}}}]}}"#
        ));
    }
    let (cfg, problems) = DeclarativeConfig::from_str_with_problems("c.json", &text);
    assert!(problems.is_empty(), "{problems:?}");
    cfg
}

/// [`config`] as a gRPC registry.
fn registry(count: usize) -> Arc<Registry> {
    Arc::new(Registry::new(Model::from_config(config(count))).expect("a servable catalog"))
}

/// Serves `registry` on `addr` until the returned sender is dropped or fired.
async fn serve(registry: Arc<Registry>, addr: SocketAddr) -> (SocketAddr, oneshot::Sender<()>) {
    let listener = server::bind(addr).await.expect("a free loopback port");
    let bound = listener.local_addr().expect("a bound address");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server::serve(
        registry,
        listener,
        ServeOptions::default(),
        async {
            let _ = stopped.await;
        },
    ));
    (bound, stop)
}

fn catalog_source(address: &str, status: Value) -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "reg", "namespace": "olm", "uid": "reg-uid", "resourceVersion": "1"},
        "spec": {"sourceType": "grpc", "address": address},
        "status": status})
}

async fn reconcile_once(fixture: &Fixture, server: &mut ApiServerVerifier, cs: Value) -> Value {
    reconcile_maybe(fixture, server, cs, true).await.1
}

fn bundles_served(fixture: &Fixture) -> Vec<String> {
    let catalog = fixture
        .shared
        .catalogs
        .get("olm", "reg")
        .expect("a catalog is served");
    let package = catalog.model.package("a").expect("package a");
    package.bundles().iter().map(|b| b.name.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_source_serves_the_registrys_catalog_keeps_it_when_the_registry_goes_and_rereads_it_when_it_returns()
 {
    let (fixture, mut server) = Fixture::new();
    let (address, stop) = serve(registry(2), "127.0.0.1:0".parse().expect("an address")).await;
    let address_text = address.to_string();

    // First read: READY, with the address.
    let status = reconcile_once(&fixture, &mut server, catalog_source(&address_text, json!({}))).await;
    assert_eq!(
        status["connectionState"]["lastObservedState"], "READY",
        "{status:#}"
    );
    assert_eq!(status["connectionState"]["address"], address_text.as_str());
    // Upstream writes latestImageRegistryPoll only when it polls a catalog image.
    assert!(status.get("latestImageRegistryPoll").is_none(), "{status:#}");
    assert!(status.get("reason").is_none_or(Value::is_null), "{status:#}");
    assert_eq!(bundles_served(&fixture), ["a.v1", "a.v2"]);

    // The registry goes away: TRANSIENT_FAILURE, the last good catalog still served, and said so.
    stop.send(()).expect("the server is running");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let status = reconcile_once(&fixture, &mut server, catalog_source(&address_text, status)).await;
    assert_eq!(
        status["connectionState"]["lastObservedState"], "TRANSIENT_FAILURE",
        "{status:#}"
    );
    assert_eq!(status["reason"], "RegistryServerError");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("registry {address_text} is unreachable"))
            && message.contains("still serving the catalog read from it at"),
        "{message}"
    );
    assert_eq!(bundles_served(&fixture), ["a.v1", "a.v2"]);

    // It comes back (restarted, with a new bundle): read again, READY.
    let (_, _running) = serve(registry(3), address).await;
    let status = reconcile_once(&fixture, &mut server, catalog_source(&address_text, status)).await;
    assert_eq!(
        status["connectionState"]["lastObservedState"], "READY",
        "{status:#}"
    );
    assert!(status.get("message").is_none_or(Value::is_null), "{status:#}");
    assert_eq!(bundles_served(&fixture), ["a.v1", "a.v2", "a.v3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_source_whose_registry_never_answered_says_no_catalog_was_read() {
    let (fixture, mut server) = Fixture::new();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let address = format!("127.0.0.1:{port}");
    let status = reconcile_once(&fixture, &mut server, catalog_source(&address, json!({}))).await;
    assert_eq!(
        status["connectionState"]["lastObservedState"], "TRANSIENT_FAILURE",
        "{status:#}"
    );
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no catalog has been read from it yet"),
        "{message}"
    );
    assert!(fixture.shared.catalogs.get("olm", "reg").is_none());
}

// ---------------------------------------------------------------------------------------------
// sourceType: http, against our catalogd HTTP server in process.
// ---------------------------------------------------------------------------------------------

/// [`config`] as catalogd content, loaded at `loaded`.
fn content(count: usize, loaded: std::time::SystemTime) -> Arc<crate::catalogd::Content> {
    Arc::new(crate::catalogd::Content::from_config(&config(count), loaded).expect("renderable"))
}

/// Serves `content` over HTTP on `addr`, counting requests, until the sender fires.
async fn serve_http(
    content: Arc<crate::catalogd::Content>,
    addr: SocketAddr,
) -> (SocketAddr, oneshot::Sender<()>) {
    let listener = crate::catalogd::server::bind(addr)
        .await
        .expect("a free loopback port");
    let bound = listener.local_addr().expect("a bound address");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(crate::catalogd::serve(content, listener, async {
        let _ = stopped.await;
    }));
    (bound, stop)
}

fn http_source(url: &str, status: Value) -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "reg", "namespace": "olm", "uid": "reg-uid", "resourceVersion": "1"},
        "spec": {"sourceType": "http", "address": url, "updateStrategy": {"registryPoll": {"interval": "5m"}}},
        "status": status})
}

/// One reconcile that may or may not write the status; the action and the status written.
async fn reconcile_maybe(
    fixture: &Fixture,
    server: &mut ApiServerVerifier,
    cs: Value,
    writes: bool,
) -> (Action, Value) {
    // The store has seen every write so far.
    let mut cs = cs;
    cs["metadata"]["resourceVersion"] = json!(server.last_version());
    let source: CatalogSource = object(cs.clone());
    let scenario = if writes {
        Scenario::StatusWritten {
            collection: CATALOG_SOURCES.into(),
            object: cs.clone(),
            manager: "olm-rs/catalogsource",
        }
    } else {
        Scenario::NothingWritten
    };
    let (result, received) = server
        .run(
            scenario,
            catalog_source::reconcile(Arc::new(source), fixture.context("catalogsource")),
        )
        .await;
    let action = result.expect("the reconcile succeeds");
    let status = bodies(&received, &Method::PATCH, CATALOG_SOURCES)
        .first()
        .map_or(cs["status"].clone(), |b| b["status"].clone());
    (action, status)
}

fn served_tag(fixture: &Fixture) -> crate::catalog::load::CatalogOrigin {
    fixture
        .shared
        .catalogs
        .get("olm", "reg")
        .expect("a catalog is served")
        .origin
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_source_reads_catalogd_keeps_the_catalog_on_304_and_when_the_server_goes() {
    use std::time::{Duration, SystemTime};
    let (fixture, mut server) = Fixture::new();
    let loaded = SystemTime::now() - Duration::from_secs(3600);
    let (address, stop) = serve_http(content(2, loaded), "127.0.0.1:0".parse().expect("an address")).await;
    let url = format!("http://{address}");

    // First read: READY, the URL as the address, requeued at the poll interval.
    let (action, status) = reconcile_maybe(&fixture, &mut server, http_source(&url, json!({})), true).await;
    assert_eq!(
        status["connectionState"]["lastObservedState"], "READY",
        "{status:#}"
    );
    assert_eq!(status["connectionState"]["address"], url.as_str());
    // Upstream writes latestImageRegistryPoll only when it polls a catalog image.
    assert!(status.get("latestImageRegistryPoll").is_none(), "{status:#}");
    assert!(status.get("reason").is_none_or(Value::is_null), "{status:#}");
    assert_eq!(action, Action::requeue(Duration::from_secs(300)));
    assert_eq!(bundles_served(&fixture), ["a.v1", "a.v2"]);
    let first_tag = served_tag(&fixture);
    let read = first_tag.http_read(&url);
    assert!(read.is_some(), "read from {url}: {first_tag:?}");
    assert!(
        read.and_then(|(_, last_modified)| last_modified)
            .is_some_and(|l| l.ends_with(" GMT")),
        "the Last-Modified is kept: {first_tag:?}"
    );

    // Again: the conditional GET gets 304, the same catalog (same tag) is kept, nothing to write.
    let (_, status) = reconcile_maybe(&fixture, &mut server, http_source(&url, status), false).await;
    assert_eq!(served_tag(&fixture), first_tag);
    assert_eq!(status["connectionState"]["lastObservedState"], "READY");

    // The server goes away: TRANSIENT_FAILURE, the last good catalog still served, and said so.
    stop.send(()).expect("the server is running");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (action, status) = reconcile_maybe(&fixture, &mut server, http_source(&url, status), true).await;
    assert_eq!(
        status["connectionState"]["lastObservedState"], "TRANSIENT_FAILURE",
        "{status:#}"
    );
    assert_eq!(status["reason"], "RegistryServerError");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("catalog server {url} failed"))
            && message.contains("still serving the catalog read from it at"),
        "{message}"
    );
    assert_eq!(action, Action::requeue(Duration::from_secs(15)));
    assert_eq!(bundles_served(&fixture), ["a.v1", "a.v2"]);

    // It comes back with new content (loaded later): read again, READY.
    let (_, _running) = serve_http(content(3, SystemTime::now()), address).await;
    let (_, status) = reconcile_maybe(&fixture, &mut server, http_source(&url, status), true).await;
    assert_eq!(
        status["connectionState"]["lastObservedState"], "READY",
        "{status:#}"
    );
    assert!(status.get("message").is_none_or(Value::is_null), "{status:#}");
    assert_eq!(bundles_served(&fixture), ["a.v1", "a.v2", "a.v3"]);
}

/// Answers every connection with `response` (a whole HTTP/1.1 response) and closes it.
async fn serve_raw(response: &'static str) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("a bound address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf).await;
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_source_on_a_server_that_is_not_catalogd_or_cuts_the_body_serves_nothing_and_says_why() {
    let cases = [
        (
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\r\n<html></html>",
            "not a catalogd catalog API",
        ),
        (
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 19\r\n\r\n404 page not found\n",
            "answered 404 Not Found: no catalog at this URL",
        ),
        (
            "HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: 500\r\n\r\n{\"schema\":\"olm.package\",\"name\":\"a\"}\n",
            "the body broke off",
        ),
    ];
    for (response, expected) in cases {
        let (fixture, mut server) = Fixture::new();
        let url = format!("http://{}", serve_raw(response).await);
        let (_, status) = reconcile_maybe(&fixture, &mut server, http_source(&url, json!({})), true).await;
        assert_eq!(
            status["connectionState"]["lastObservedState"], "TRANSIENT_FAILURE",
            "{status:#}"
        );
        let message = status["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(expected) && message.contains("no catalog has been read from it yet"),
            "{expected}: {message}"
        );
        assert!(fixture.shared.catalogs.get("olm", "reg").is_none());
    }
}

#[tokio::test]
async fn an_http_source_refuses_plain_http_to_a_remote_host_as_an_invalid_spec() {
    let (fixture, mut server) = Fixture::new();
    let (_, status) = reconcile_maybe(
        &fixture,
        &mut server,
        http_source("http://catalogd.example:8080/catalogs/x", json!({})),
        true,
    )
    .await;
    assert_eq!(status["reason"], "SpecInvalidError", "{status:#}");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("refusing plain HTTP to catalogd.example:8080")
            && message.contains("--insecure-registry"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_source_with_an_interval_that_does_not_parse_is_served_with_the_default_and_says_so() {
    let (fixture, mut server) = Fixture::new();
    let (address, _running) = serve(registry(1), "127.0.0.1:0".parse().expect("an address")).await;
    let mut cs = catalog_source(&address.to_string(), json!({}));
    cs["spec"]["updateStrategy"] = json!({"registryPoll": {"interval": "soon"}});
    let status = reconcile_once(&fixture, &mut server, cs).await;
    assert_eq!(
        status["connectionState"]["lastObservedState"], "READY",
        "{status:#}"
    );
    assert_eq!(status["reason"], "InvalidIntervalError");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("registryPoll.interval \"soon\"") && message.contains("15m0s"),
        "{message}"
    );
    assert_eq!(bundles_served(&fixture), ["a.v1"]);
}
