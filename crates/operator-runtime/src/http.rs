//! http: the probe and metrics endpoints every binary serves: `/metrics` (OpenMetrics text),
//! `/healthz` (the process is alive) and `/readyz` (see [`ReadyState`]).
//!
//! # What "ready" means
//!
//! A controller is ready once every reflector store it reads has seen its initial list (until
//! then a reconcile could mistake a cold cache for a missing object). A *standby* replica
//! (leader election on, lease held by another replica) is ready too: nothing routes traffic to a
//! controller, so readiness only gates rollouts, and a standby that reported not-ready would
//! stall a rolling update of a two-replica Deployment forever (the new pod cannot take the lease
//! until the old one leaves, and the old one does not leave until the new pod is ready). A
//! replica that just won the lease is not ready while its caches sync, and one that is shutting
//! down is not ready.
//!
//! [`route`] is the pure part (a request line and the state in, a response out); [`serve`] runs
//! it on hyper's HTTP/1.1 server, with a read timeout so a slow client cannot hold a connection.

use std::{
    convert::Infallible,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU8, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, body::Incoming, header::CONTENT_TYPE, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

/// The content type of `/metrics` (what `prometheus-client` encodes).
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
/// How long a client may take to send its request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a replica is in its life, as far as `/readyz` is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadyState {
    /// Starting up: nothing known yet.
    Starting,
    /// Waiting for the leader lease held by another replica (ready: it can take over).
    Standby,
    /// Leader (or alone), reflector stores still loading their initial lists.
    Syncing,
    /// Every store synced.
    Ready,
    /// Shutting down.
    Stopping,
}

impl ReadyState {
    /// Whether `/readyz` answers 200.
    pub fn is_ready(self) -> bool {
        matches!(self, Self::Standby | Self::Ready)
    }

    /// The body `/readyz` answers with.
    pub fn text(self) -> &'static str {
        match self {
            Self::Starting => "not ready: starting\n",
            Self::Standby => "ok: standby, waiting for the leader lease\n",
            Self::Syncing => "not ready: waiting for the caches to sync\n",
            Self::Ready => "ok\n",
            Self::Stopping => "not ready: shutting down\n",
        }
    }

    fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Standby,
            2 => Self::Syncing,
            3 => Self::Ready,
            4 => Self::Stopping,
            _ => Self::Starting,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            Self::Starting => 0,
            Self::Standby => 1,
            Self::Syncing => 2,
            Self::Ready => 3,
            Self::Stopping => 4,
        }
    }
}

/// The shared readiness of this replica: its [`ReadyState`] and the watches that went stale
/// (see [`crate::watch`]).
#[derive(Debug, Default)]
pub struct Readiness(AtomicU8, Mutex<Vec<String>>);

impl Readiness {
    /// Moves to `state`.
    pub fn set(&self, state: ReadyState) {
        self.0.store(state.to_u8(), Ordering::Release);
    }

    /// The current state.
    pub fn get(&self) -> ReadyState {
        ReadyState::from_u8(self.0.load(Ordering::Acquire))
    }

    /// Replaces the stale watches (one line each, naming the watch; empty: none).
    pub fn set_stale(&self, stale: Vec<String>) {
        match self.1.lock() {
            Ok(mut guard) => *guard = stale,
            Err(poisoned) => *poisoned.into_inner() = stale,
        }
    }

    /// The stale watches.
    pub fn stale(&self) -> Vec<String> {
        match self.1.lock() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// A routed response.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Content type.
    pub content_type: &'static str,
    /// Body.
    pub body: String,
}

/// What `/metrics` serves: the binary's registry rendered as OpenMetrics text.
pub trait MetricsText: Send + Sync {
    /// The current metrics.
    fn render(&self) -> String;
}

/// Routes one request (`GET`, `/metrics`), no watch stale.
pub fn route(method: &str, path: &str, ready: ReadyState, metrics: &dyn MetricsText) -> Response {
    route_with(method, path, ready, &[], metrics)
}

/// What `/readyz` answers: a replica that is [`ReadyState::Ready`] but has stale watches is not
/// ready, and the body names them (pure).
pub fn readyz(ready: ReadyState, stale: &[String]) -> (u16, String) {
    if ready == ReadyState::Ready && !stale.is_empty() {
        let mut body = String::from("not ready: stale watches:\n");
        for line in stale {
            body.push_str("  ");
            body.push_str(line);
            body.push('\n');
        }
        return (503, body);
    }
    (if ready.is_ready() { 200 } else { 503 }, ready.text().to_owned())
}

/// Routes one request; `stale` names the stale watches (see [`readyz`]).
pub fn route_with(
    method: &str,
    path: &str,
    ready: ReadyState,
    stale: &[String],
    metrics: &dyn MetricsText,
) -> Response {
    let path = path.split('?').next().unwrap_or("");
    let text = |status, body: &str| Response {
        status,
        content_type: TEXT,
        body: body.to_owned(),
    };
    match (method, path) {
        ("GET", "/metrics") => Response {
            status: 200,
            content_type: OPENMETRICS,
            body: metrics.render(),
        },
        ("GET", "/healthz") => text(200, "ok\n"),
        ("GET", "/readyz") => {
            let (status, body) = readyz(ready, stale);
            text(status, &body)
        }
        ("GET", _) => text(404, "not found\n"),
        _ => text(405, "method not allowed\n"),
    }
}

/// Binds `addr` (`host:port`; port 0 picks a free one).
///
/// # Errors
/// The bind error.
pub async fn bind(addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves the endpoints on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<dyn MetricsText>, ready: Arc<Readiness>) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(err) => {
                tracing::warn!(error = %err, "failed to accept a probe or metrics connection");
                continue;
            }
        };
        let (metrics, ready) = (Arc::clone(&metrics), Arc::clone(&ready));
        tokio::spawn(async move {
            let route = move |req: Request<Incoming>| {
                std::future::ready(route_with(
                    req.method().as_str(),
                    req.uri().path(),
                    ready.get(),
                    &ready.stale(),
                    &*metrics,
                ))
            };
            serve_connection(TokioIo::new(stream), route, "probe or metrics").await;
        });
    }
}

/// Serves one HTTP/1.1 connection (a read timeout of [`READ_TIMEOUT`] on its headers), each
/// request answered with the [`Response`] `route` makes of it; an error ending the connection is
/// logged at debug level as a `what` connection's.
pub(crate) async fn serve_connection<I, F, Fut>(io: TokioIo<I>, route: F, what: &str)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    F: Fn(Request<Incoming>) -> Fut,
    Fut: Future<Output = Response>,
{
    let service = service_fn(move |req: Request<Incoming>| {
        let routed = route(req);
        async move {
            let routed = routed.await;
            let status = hyper::StatusCode::from_u16(routed.status)
                .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = hyper::Response::new(Full::new(Bytes::from(routed.body)));
            *response.status_mut() = status;
            response.headers_mut().insert(
                CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(routed.content_type),
            );
            Ok::<_, Infallible>(response)
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(READ_TIMEOUT)
        .serve_connection(io, service);
    if let Err(err) = conn.await {
        tracing::debug!(error = %err, "{what} connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    struct Fixed;
    impl MetricsText for Fixed {
        fn render(&self) -> String {
            "up 1\n# EOF\n".into()
        }
    }

    #[test]
    fn readyz_answers_503_until_the_caches_synced_and_200_for_a_standby() {
        let readiness = Readiness::default();
        let status = |r: &Readiness| route("GET", "/readyz", r.get(), &Fixed).status;
        assert_eq!(status(&readiness), 503, "starting");
        readiness.set(ReadyState::Standby);
        assert_eq!(status(&readiness), 200, "a standby can take over");
        readiness.set(ReadyState::Syncing);
        assert_eq!(status(&readiness), 503, "the caches are still loading");
        readiness.set(ReadyState::Ready);
        assert_eq!(status(&readiness), 200);
        readiness.set(ReadyState::Stopping);
        assert_eq!(status(&readiness), 503);
        assert_eq!(route("GET", "/healthz", ReadyState::Starting, &Fixed).status, 200);
    }

    #[test]
    fn readyz_names_the_stale_watches_of_a_ready_replica() {
        let stale = vec!["csvs: no event for 95s".to_owned()];
        let response = route_with("GET", "/readyz", ReadyState::Ready, &stale, &Fixed);
        assert_eq!(response.status, 503);
        assert_eq!(
            response.body,
            "not ready: stale watches:\n  csvs: no event for 95s\n"
        );
        // A standby runs no watches; a syncing replica says so.
        assert_eq!(readyz(ReadyState::Standby, &stale).0, 200);
        assert_eq!(readyz(ReadyState::Syncing, &stale).1, ReadyState::Syncing.text());
        assert_eq!(readyz(ReadyState::Ready, &[]), (200, "ok\n".to_owned()));
    }

    #[test]
    fn metrics_are_served_and_unknown_paths_and_methods_are_refused() {
        let response = route("GET", "/metrics?x=1", ReadyState::Ready, &Fixed);
        assert_eq!((response.status, response.content_type), (200, OPENMETRICS));
        assert_eq!(response.body, "up 1\n# EOF\n");
        assert_eq!(route("GET", "/nope", ReadyState::Ready, &Fixed).status, 404);
        assert_eq!(route("POST", "/metrics", ReadyState::Ready, &Fixed).status, 405);
    }

    async fn get(addr: std::net::SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn the_server_answers_over_tcp_and_drops_a_client_that_sends_nothing() {
        let listener = bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let ready = Arc::new(Readiness::default());
        let server = tokio::spawn(serve(listener, Arc::new(Fixed), Arc::clone(&ready)));
        let answer = get(addr, "/readyz").await;
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        ready.set(ReadyState::Ready);
        let answer = get(addr, "/readyz").await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let answer = get(addr, "/metrics").await;
        assert!(
            answer.contains(OPENMETRICS) && answer.ends_with("up 1\n# EOF\n"),
            "{answer}"
        );

        // A client that connects and says nothing is cut off after the read timeout.
        let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut buf = Vec::new();
        let closed = tokio::time::timeout(READ_TIMEOUT * 3, idle.read_to_end(&mut buf)).await;
        assert!(closed.is_ok(), "the idle connection was not closed");
        server.abort();
    }
}
