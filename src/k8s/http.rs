//! The controller's HTTP endpoints: `/metrics` (Prometheus text), `/healthz` (the process is
//! alive) and `/readyz` (see [`ReadyState`]).
//!
//! # What "ready" means
//!
//! The leader is ready once every reflector store it reads has seen its initial list (until
//! then a reconcile could mistake a cold cache for a missing object). A *standby* replica
//! (leader election on, lease held by another replica) is ready too: nothing routes traffic to
//! the controller, so readiness only gates rollouts, and a standby that reported not-ready
//! would stall a rolling update of a two-replica Deployment forever (the new pod cannot take
//! the lease until the old one leaves, and the old one does not leave until the new pod is
//! ready). A replica that just won the lease is not ready while its caches sync, and one that
//! is shutting down is not ready.
//!
//! Three GET routes do not justify a web framework: this is a minimal HTTP/1.1 responder on a
//! tokio listener (one request per connection, `Connection: close`), which keeps the binary
//! and its memory small.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use crate::metrics::Metrics;

/// Where a replica is in its life, as far as `/readyz` is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadyState {
    /// Starting up: nothing known yet.
    Starting,
    /// Waiting for the leader lease held by another replica (ready: it can take over).
    Standby,
    /// Leader, reflector stores still loading their initial lists.
    Syncing,
    /// Leader with every store synced.
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
            Self::Syncing => "not ready: leader, waiting for the caches to sync\n",
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
}

/// The shared, lock-free readiness of this replica.
#[derive(Debug, Default)]
pub struct Readiness(AtomicU8);

impl Readiness {
    /// Moves to `state`.
    pub fn set(&self, state: ReadyState) {
        let v = match state {
            ReadyState::Starting => 0,
            ReadyState::Standby => 1,
            ReadyState::Syncing => 2,
            ReadyState::Ready => 3,
            ReadyState::Stopping => 4,
        };
        self.0.store(v, Ordering::Release);
    }

    /// The current state.
    pub fn get(&self) -> ReadyState {
        ReadyState::from_u8(self.0.load(Ordering::Acquire))
    }
}

/// A routed response: status line, content type, body.
#[derive(Debug, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Content type.
    pub content_type: &'static str,
    /// Body.
    pub body: String,
}

/// Routes one request line (`GET /metrics HTTP/1.1`).
pub fn route(request_line: &str, ready: ReadyState, metrics: &Metrics) -> Response {
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("");
    let path = parts.next().unwrap_or("").split('?').next().unwrap_or("");
    let text = "text/plain; charset=utf-8";
    match (method, path) {
        ("GET", "/metrics") => Response {
            status: 200,
            content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8",
            body: metrics.render(),
        },
        ("GET", "/healthz") => Response {
            status: 200,
            content_type: text,
            body: "ok\n".into(),
        },
        ("GET", "/readyz") => Response {
            status: if ready.is_ready() { 200 } else { 503 },
            content_type: text,
            body: ready.text().into(),
        },
        ("GET", _) => Response {
            status: 404,
            content_type: text,
            body: "not found\n".into(),
        },
        _ => Response {
            status: 405,
            content_type: text,
            body: "method not allowed\n".into(),
        },
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Service Unavailable",
    }
}

/// Serves the endpoints on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>, ready: Arc<Readiness>) {
    loop {
        let (mut stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(err) => {
                tracing::warn!(error = %err, "failed to accept a metrics connection");
                continue;
            }
        };
        let metrics = Arc::clone(&metrics);
        let ready = Arc::clone(&ready);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let Ok(Ok(n)) =
                tokio::time::timeout(std::time::Duration::from_secs(5), stream.read(&mut buf)).await
            else {
                return;
            };
            let request = String::from_utf8_lossy(&buf[..n]);
            let line = request.lines().next().unwrap_or("");
            let response = route(line, ready.get(), &metrics);
            let head = format!(
                "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                response.status,
                reason(response.status),
                response.content_type,
                response.body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(response.body.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

/// Binds `addr`.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readyz_answers_503_until_the_caches_synced_and_200_for_a_standby() {
        let metrics = Metrics::new();
        let readiness = Readiness::default();
        let status = |r: &Readiness| route("GET /readyz HTTP/1.1", r.get(), &metrics).status;
        assert_eq!(status(&readiness), 503, "starting");
        readiness.set(ReadyState::Standby);
        assert_eq!(status(&readiness), 200, "a standby can take over");
        readiness.set(ReadyState::Syncing);
        assert_eq!(status(&readiness), 503, "the leader's caches are still loading");
        readiness.set(ReadyState::Ready);
        assert_eq!(status(&readiness), 200);
        readiness.set(ReadyState::Stopping);
        assert_eq!(status(&readiness), 503);
        assert_eq!(
            route("GET /healthz HTTP/1.1", ReadyState::Starting, &metrics).status,
            200
        );
    }

    #[test]
    fn metrics_are_served_and_unknown_paths_are_404() {
        let metrics = Metrics::new();
        let response = route("GET /metrics HTTP/1.1", ReadyState::Ready, &metrics);
        assert_eq!(response.status, 200);
        assert!(response.body.contains("install_plan_count"));
        assert_eq!(
            route("GET /nope HTTP/1.1", ReadyState::Ready, &metrics).status,
            404
        );
        assert_eq!(
            route("POST /metrics HTTP/1.1", ReadyState::Ready, &metrics).status,
            405
        );
    }
}
