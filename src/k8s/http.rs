//! The controller's HTTP endpoints: `/metrics` (Prometheus text), `/healthz` (the process is
//! alive) and `/readyz` (this replica holds the leader lease and its caches are synced).
//!
//! Three GET routes do not justify a web framework: this is a minimal HTTP/1.1 responder on a
//! tokio listener (one request per connection, `Connection: close`), which keeps the binary
//! and its memory small.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use crate::metrics::Metrics;

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
pub fn route(request_line: &str, ready: bool, metrics: &Metrics) -> Response {
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
        ("GET", "/readyz") if ready => Response {
            status: 200,
            content_type: text,
            body: "ok\n".into(),
        },
        ("GET", "/readyz") => Response {
            status: 503,
            content_type: text,
            body: "not ready: waiting for the leader lease or the caches\n".into(),
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
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>, ready: Arc<AtomicBool>) {
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
            let response = route(line, ready.load(Ordering::Relaxed), &metrics);
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
    fn readyz_answers_503_until_the_replica_is_ready() {
        let metrics = Metrics::new();
        assert_eq!(route("GET /readyz HTTP/1.1", false, &metrics).status, 503);
        assert_eq!(route("GET /readyz HTTP/1.1", true, &metrics).status, 200);
        assert_eq!(route("GET /healthz HTTP/1.1", false, &metrics).status, 200);
    }

    #[test]
    fn metrics_are_served_and_unknown_paths_are_404() {
        let metrics = Metrics::new();
        let response = route("GET /metrics HTTP/1.1", true, &metrics);
        assert_eq!(response.status, 200);
        assert!(response.body.contains("install_plan_count"));
        assert_eq!(route("GET /nope HTTP/1.1", true, &metrics).status, 404);
        assert_eq!(route("POST /metrics HTTP/1.1", true, &metrics).status, 405);
    }
}
