use std::sync::Mutex;

use axum::body::Body;
use http_body_util::BodyExt;
use tower::ServiceExt;

use super::*;
use crate::view::PackageSummary;

/// A source answering from memory, recording approvals.
struct Fake {
    approved: Arc<Mutex<Vec<String>>>,
    changes: broadcast::Sender<()>,
}

impl Source for Fake {
    async fn overview(&self) -> Result<Overview, SourceError> {
        Ok(Overview {
            catalogs: vec![],
            packages: Arc::from(vec![PackageSummary {
                catalog: "c".into(),
                name: "redis".into(),
                ..PackageSummary::default()
            }]),
        })
    }
    async fn package(&self, _: &str, name: &str) -> Result<Option<PackageView>, SourceError> {
        Ok((name == "redis").then(|| PackageView {
            name: "redis".into(),
            ..PackageView::default()
        }))
    }
    async fn icon(&self, _: &str, _: &str) -> Result<Option<Icon>, SourceError> {
        Ok(Some(Icon {
            media_type: "image/svg+xml".into(),
            data: b"<svg/>".to_vec(),
        }))
    }
    async fn installed(&self) -> Result<InstalledPage, SourceError> {
        Err(SourceError::Read {
            action: "list subscriptions in all namespaces".into(),
            message: "forbidden".into(),
        })
    }
    async fn plan(&self, namespace: &str, name: &str) -> Result<Option<PlanView>, SourceError> {
        Ok(Some(PlanView {
            namespace: namespace.into(),
            name: name.into(),
            ..PlanView::default()
        }))
    }
    async fn approve(&self, namespace: &str, name: &str) -> Result<(), SourceError> {
        self.approved
            .lock()
            .map_err(|_| SourceError::Read {
                action: "lock".into(),
                message: "poisoned".into(),
            })?
            .push(format!("{namespace}/{name}"));
        Ok(())
    }
    fn changes(&self) -> broadcast::Receiver<()> {
        self.changes.subscribe()
    }
}

fn app(read_only: bool) -> (Router, Arc<Mutex<Vec<String>>>) {
    let approved = Arc::new(Mutex::new(Vec::new()));
    let (changes, _) = broadcast::channel(4);
    let mut options = Options::for_address("127.0.0.1:7777".parse().unwrap(), "t0k".into());
    options.read_only = read_only;
    (
        router(
            Fake {
                approved: approved.clone(),
                changes,
            },
            options,
        ),
        approved,
    )
}

async fn call(app: &Router, req: axum::http::Request<Body>) -> (StatusCode, HeaderMap, String) {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

fn get_req(path: &str, host: &str) -> axum::http::Request<Body> {
    axum::http::Request::get(path)
        .header("host", host)
        .body(Body::empty())
        .unwrap()
}

fn approve_req(body: &str, origin: Option<&str>) -> axum::http::Request<Body> {
    let mut b = axum::http::Request::post("/plan/approve")
        .header("host", "127.0.0.1:7777")
        .header("content-type", "application/x-www-form-urlencoded");
    if let Some(o) = origin {
        b = b.header("origin", o);
    }
    b.body(Body::from(body.to_string())).unwrap()
}

#[test]
fn a_loopback_console_answers_to_its_address_and_localhost() {
    let o = Options::for_address("127.0.0.1:7777".parse().unwrap(), String::new());
    assert_eq!(o.hosts, ["127.0.0.1:7777", "[::1]:7777", "localhost:7777"]);
    let wide = Options::for_address("10.0.0.5:80".parse().unwrap(), String::new());
    assert_eq!(wide.hosts, ["10.0.0.5:80"]);
}

#[test]
fn tokens_are_64_hex_digits_and_differ() {
    let (a, b) = (new_token().unwrap(), new_token().unwrap());
    assert_eq!(a.len(), 64);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
    assert!(same_token(&a, &a.clone()));
    assert!(!same_token(&a, &b));
    assert!(!same_token("ab", "abc"));
}

#[tokio::test]
async fn pages_are_served_with_a_content_security_policy() {
    let (app, _) = app(false);
    let (status, headers, body) = call(&app, get_req("/", "localhost:7777")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("1 of 1 packages"), "{body}");
    assert!(
        headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .contains("script-src 'self'")
    );
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
}

#[tokio::test]
async fn another_host_name_is_refused_against_dns_rebinding() {
    let (app, _) = app(false);
    let (status, _, body) = call(&app, get_req("/", "evil.example:7777")).await;
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST);
    assert!(body.contains("answers only to"), "{body}");
}

#[tokio::test]
async fn icons_are_sandboxed_and_unknown_packages_are_404() {
    let (app, _) = app(false);
    let (status, headers, _) = call(&app, get_req("/icon?catalog=c&name=redis", "127.0.0.1:7777")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .contains("sandbox")
    );
    let (status, _, body) = call(&app, get_req("/package?catalog=c&name=nope", "127.0.0.1:7777")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("catalog c has no package nope"), "{body}");
}

#[tokio::test]
async fn a_source_error_is_shown_with_its_cause() {
    let (app, _) = app(false);
    let (status, _, body) = call(&app, get_req("/installed", "127.0.0.1:7777")).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
    assert!(
        body.contains("failed to list subscriptions in all namespaces: forbidden"),
        "{body}"
    );
}

#[tokio::test]
async fn approval_needs_the_token_and_a_same_origin() {
    let (app, approved) = app(false);
    let (status, _, _) = call(&app, approve_req("namespace=ns&name=ip&csrf=wrong", None)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = call(
        &app,
        approve_req("namespace=ns&name=ip&csrf=t0k", Some("http://evil.example")),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(approved.lock().unwrap().is_empty());
    let (status, headers, _) = call(
        &app,
        approve_req("namespace=ns&name=ip&csrf=t0k", Some("http://127.0.0.1:7777")),
    )
    .await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/plan?namespace=ns&name=ip");
    assert_eq!(*approved.lock().unwrap(), ["ns/ip"]);
}

#[tokio::test]
async fn a_read_only_console_has_no_form_and_refuses_approval() {
    let (app, approved) = app(true);
    let (_, _, body) = call(&app, get_req("/plan?namespace=ns&name=ip", "127.0.0.1:7777")).await;
    assert!(!body.contains("<form class=\"approve\""), "{body}");
    let (status, _, _) = call(&app, approve_req("namespace=ns&name=ip&csrf=t0k", None)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(approved.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_assets_are_embedded() {
    let (app, _) = app(false);
    let (status, headers, body) = call(&app, get_req("/static/console.js", "127.0.0.1:7777")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(body.contains("EventSource"));
}
