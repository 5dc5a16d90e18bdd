//! server: the console's HTTP routes over a [`Source`] (imperative shell: it reads from the source,
//! renders with [`crate::html`], writes the approval through the source).
//!
//! # Who may do what
//!
//! The console serves one user, the one whose credentials the [`Source`] reads with. So it must
//! never be reachable by anyone else, and no other web page may drive it:
//!
//! - **Host check** (DNS rebinding): a request is served only when its `Host` header is one of
//!   [`Options::hosts`] (the address it is bound to, and `localhost:PORT` for a loopback bind).
//!   A page of another site that makes its own name resolve to 127.0.0.1 sends its own name, and
//!   gets `421 Misdirected Request`.
//! - **CSRF**: the only write, `POST /plan/approve`, must carry the token this server drew from
//!   the operating system at start and put in its own forms, and an `Origin` header, when the
//!   browser sends one, must be this server's. A cross-site form cannot read the token.
//! - **No script from the data**: every page is sent with a Content-Security-Policy allowing only
//!   this server's own script and style; package icons (catalog data, possibly SVG with script)
//!   are sent with a `sandbox` policy, so opening one as a document runs nothing.
//! - **Read-only mode** ([`Options::read_only`]): no approve form, and the POST route answers
//!   `403`.
//!
//! # Live updates
//!
//! `GET /events` is a server-sent event stream: one `change` event each time the source reports
//! one ([`Source::changes`]: the shell feeds it from watches). The page's script then fetches its
//! own URL again and replaces `<main>`, so no page is refreshed by hand.

use std::{future::Future, sync::Arc, time::Duration};

use axum::{
    Form, Router,
    extract::{Query, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{
        IntoResponse, Redirect, Response,
        sse::{Event, KeepAlive, Sse},
    },
    routing::{get, post},
};
use futures::Stream;
use tokio::sync::broadcast;

use crate::{
    html::{self, Filter, Nav},
    view::{Icon, InstalledPage, Overview, PackageView, PlanView},
};

/// Why the source could not answer.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A read failed (the API server refused it, the cluster is unreachable, a catalog failed).
    #[error("failed to {action}: {message}")]
    Read {
        /// What was being read (`list subscriptions in all namespaces`).
        action: String,
        /// Why.
        message: String,
    },
    /// The approval was refused or failed.
    #[error("failed to approve installplan {name} in namespace {namespace}: {message}")]
    Approve {
        /// The plan's namespace.
        namespace: String,
        /// The plan.
        name: String,
        /// Why.
        message: String,
    },
}

/// Where the console's data comes from. The implementation reads with the user's credentials;
/// every method may fail with the API server's own answer.
pub trait Source: Send + Sync + 'static {
    /// Every catalog and its packages.
    fn overview(&self) -> impl Future<Output = Result<Overview, SourceError>> + Send;
    /// One package (`None`: no such catalog or package).
    fn package(
        &self,
        catalog: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<PackageView>, SourceError>> + Send;
    /// A package's icon (`None`: it has none).
    fn icon(
        &self,
        catalog: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<Icon>, SourceError>> + Send;
    /// Every Subscription with its CSV, plan, conditions and Events.
    fn installed(&self) -> impl Future<Output = Result<InstalledPage, SourceError>> + Send;
    /// An InstallPlan and its preview (`None`: no such plan).
    fn plan(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<PlanView>, SourceError>> + Send;
    /// Approves an InstallPlan.
    fn approve(&self, namespace: &str, name: &str) -> impl Future<Output = Result<(), SourceError>> + Send;
    /// A receiver told each time something the pages show may have changed.
    fn changes(&self) -> broadcast::Receiver<()>;
}

/// How the server behaves.
#[derive(Clone, Debug)]
pub struct Options {
    /// `Host` header values served (`127.0.0.1:8080`, `localhost:8080`).
    pub hosts: Vec<String>,
    /// No approval: the pages are read-only.
    pub read_only: bool,
    /// The CSRF token of the approve form (see [`new_token`]).
    pub token: String,
}

impl Options {
    /// The options of a console bound to `addr`: that address as `Host`, plus `localhost` and
    /// the other loopback spelling when it is a loopback address.
    pub fn for_address(addr: std::net::SocketAddr, token: String) -> Options {
        let port = addr.port();
        let mut hosts = vec![addr.to_string()];
        if addr.ip().is_loopback() {
            hosts.extend([
                format!("localhost:{port}"),
                format!("127.0.0.1:{port}"),
                format!("[::1]:{port}"),
            ]);
        }
        hosts.sort();
        hosts.dedup();
        Options {
            hosts,
            read_only: false,
            token,
        }
    }
}

/// Failed to draw the CSRF token.
#[derive(Debug, thiserror::Error)]
#[error("failed to read random bytes for the console's CSRF token: {0}")]
pub struct TokenError(String);

/// 32 random bytes from the operating system, as hex: the CSRF token of one server.
///
/// # Errors
/// [`TokenError`] when the operating system gives no random bytes.
pub fn new_token() -> Result<String, TokenError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| TokenError(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Shared by the handlers.
struct Shared<S> {
    source: S,
    options: Options,
}

type St<S> = State<Arc<Shared<S>>>;

/// The console's routes over `source`.
pub fn router<S: Source>(source: S, options: Options) -> Router {
    let shared = Arc::new(Shared { source, options });
    Router::new()
        .route("/", get(overview::<S>))
        .route("/package", get(package::<S>))
        .route("/icon", get(icon::<S>))
        .route("/installed", get(installed::<S>))
        .route("/plan", get(plan::<S>))
        .route("/plan/approve", post(approve::<S>))
        .route("/events", get(events::<S>))
        .route("/static/console.css", get(css))
        .route("/static/console.js", get(js))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(shared.clone(), guard::<S>))
        .with_state(shared)
}

/// Serves `router` on `listener` until `shutdown` completes.
///
/// # Errors
/// The accept loop's I/O error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// The Host check and the security headers of every answer.
async fn guard<S: Source>(State(shared): St<S>, request: axum::extract::Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !shared.options.hosts.iter().any(|h| h == host) {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this console answers only to {}; open it by that address",
                shared.options.hosts.join(", ")
            ),
        )
            .into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(
            "default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // `same-origin`, not `no-referrer`: with no referrer at all, browsers send `Origin: null` on
    // form posts, and the approve route could no longer tell its own form from another site's.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A page as an answer.
fn page(status: StatusCode, title: &str, nav: Nav, main: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        html::page(title, nav, main),
    )
        .into_response()
}

/// A source error as a page.
fn failed(nav: Nav, err: &SourceError) -> Response {
    page(
        StatusCode::BAD_GATEWAY,
        "Error",
        nav,
        &html::error("Could not read the cluster", &err.to_string()),
    )
}

async fn overview<S: Source>(State(shared): St<S>, Query(filter): Query<Filter>) -> Response {
    match shared.source.overview().await {
        Ok(ov) => page(
            StatusCode::OK,
            "Catalogs",
            Nav::Catalogs,
            &html::overview(&ov, &filter),
        ),
        Err(e) => failed(Nav::Catalogs, &e),
    }
}

/// `?catalog=&name=`.
#[derive(serde::Deserialize)]
struct PackageQuery {
    catalog: String,
    name: String,
}

async fn package<S: Source>(State(shared): St<S>, Query(q): Query<PackageQuery>) -> Response {
    match shared.source.package(&q.catalog, &q.name).await {
        Ok(Some(p)) => page(StatusCode::OK, &p.display_name, Nav::Catalogs, &html::package(&p)),
        Ok(None) => page(
            StatusCode::NOT_FOUND,
            "Not found",
            Nav::Catalogs,
            &html::error(
                "No such package",
                &format!(
                    "catalog {} has no package {}; pick one from the list of catalogs",
                    q.catalog, q.name
                ),
            ),
        ),
        Err(e) => failed(Nav::Catalogs, &e),
    }
}

async fn icon<S: Source>(State(shared): St<S>, Query(q): Query<PackageQuery>) -> Response {
    match shared.source.icon(&q.catalog, &q.name).await {
        Ok(Some(Icon { media_type, data })) => {
            let media_type = if media_type.starts_with("image/") {
                media_type
            } else {
                "application/octet-stream".to_string()
            };
            (
                [
                    (header::CONTENT_TYPE, media_type),
                    (
                        header::CONTENT_SECURITY_POLICY,
                        "default-src 'none'; style-src 'unsafe-inline'; sandbox".to_string(),
                    ),
                ],
                data,
            )
                .into_response()
        }
        Ok(None) => StatusCode::NOT_FOUND.into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

async fn installed<S: Source>(State(shared): St<S>) -> Response {
    match shared.source.installed().await {
        Ok(p) => page(
            StatusCode::OK,
            "Installed operators",
            Nav::Installed,
            &html::installed(&p),
        ),
        Err(e) => failed(Nav::Installed, &e),
    }
}

/// `?namespace=&name=`.
#[derive(serde::Deserialize)]
struct PlanQuery {
    namespace: String,
    name: String,
}

async fn plan<S: Source>(State(shared): St<S>, Query(q): Query<PlanQuery>) -> Response {
    match shared.source.plan(&q.namespace, &q.name).await {
        Ok(Some(p)) => {
            let token = (!shared.options.read_only).then_some(shared.options.token.as_str());
            page(
                StatusCode::OK,
                &format!("InstallPlan {}", p.name),
                Nav::Installed,
                &html::plan(&p, token),
            )
        }
        Ok(None) => page(
            StatusCode::NOT_FOUND,
            "Not found",
            Nav::Installed,
            &html::error(
                "No such InstallPlan",
                &format!("installplan {} not found in namespace {}", q.name, q.namespace),
            ),
        ),
        Err(e) => failed(Nav::Installed, &e),
    }
}

/// The approve form.
#[derive(serde::Deserialize)]
struct ApproveForm {
    namespace: String,
    name: String,
    csrf: String,
}

/// Whether two tokens are equal, comparing every byte whatever the first difference.
fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn approve<S: Source>(
    State(shared): St<S>,
    headers: HeaderMap,
    Form(form): Form<ApproveForm>,
) -> Response {
    let refuse = |message: &str| {
        page(
            StatusCode::FORBIDDEN,
            "Refused",
            Nav::Installed,
            &html::error("Approval refused", message),
        )
    };
    if shared.options.read_only {
        return refuse(
            "this console is read-only: approve with `kubectl olm approve`, or in `kubectl olm console` on your machine, which act with your own credentials",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
        let ours = shared
            .options
            .hosts
            .iter()
            .any(|h| origin.strip_prefix("http://") == Some(h.as_str()));
        if !ours {
            return refuse("the request came from another site's page");
        }
    }
    if !same_token(&form.csrf, &shared.options.token) {
        return refuse("the form is not one this console served (stale or forged); open the plan again");
    }
    match shared.source.approve(&form.namespace, &form.name).await {
        Ok(()) => Redirect::to(&format!(
            "/plan?namespace={}&name={}",
            html::query_value(&form.namespace),
            html::query_value(&form.name)
        ))
        .into_response(),
        Err(e) => page(
            StatusCode::BAD_GATEWAY,
            "Approval failed",
            Nav::Installed,
            &html::error("Approval failed", &e.to_string()),
        ),
    }
}

async fn events<S: Source>(
    State(shared): St<S>,
) -> Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>> {
    let rx = shared.source.changes();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await {
            Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                Some((Ok(Event::default().event("change").data("changed")), rx))
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

async fn css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../assets/console.css"),
    )
        .into_response()
}

async fn js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../assets/console.js"),
    )
        .into_response()
}

async fn not_found() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Not found",
        Nav::Catalogs,
        &html::error("Not found", "no such page"),
    )
}

#[cfg(test)]
mod tests;
