//! http: serves `/metrics`, `/healthz` and `/readyz` on the operator's HTTP port.
//!
//! A tiny HTTP/1.1 responder on a tokio listener (GET only, one response per connection) is all
//! the kubelet probes and a Prometheus scrape need, so no web framework is pulled in.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use super::metrics::Metrics;

/// The response for a request line: (status line, content type, body).
#[must_use]
pub fn respond(request_line: &str, metrics: &Metrics, ready: bool) -> (&'static str, &'static str, String) {
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    if method != "GET" {
        return ("405 Method Not Allowed", "text/plain", "only GET\n".into());
    }
    match path {
        "/metrics" => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.render(),
        ),
        "/healthz" => ("200 OK", "text/plain", "ok\n".into()),
        "/readyz" if ready => ("200 OK", "text/plain", "ok\n".into()),
        "/readyz" => ("503 Service Unavailable", "text/plain", "not ready\n".into()),
        _ => ("404 Not Found", "text/plain", "not found\n".into()),
    }
}

/// Serves until the listener fails.
///
/// # Errors
/// The listener's accept error.
pub async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
) -> std::io::Result<()> {
    loop {
        let (mut stream, _) = listener.accept().await?;
        let (metrics, ready) = (metrics.clone(), ready.clone());
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let Ok(n) = stream.read(&mut buf).await else {
                return;
            };
            let text = String::from_utf8_lossy(&buf[..n]);
            let line = text.lines().next().unwrap_or_default();
            let (status, ctype, body) = respond(line, &metrics, ready.load(Ordering::Relaxed));
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_answer_metrics_health_and_readiness() {
        let m = Metrics::default();
        assert_eq!(respond("GET /healthz HTTP/1.1", &m, false).0, "200 OK");
        assert_eq!(
            respond("GET /readyz HTTP/1.1", &m, false).0,
            "503 Service Unavailable"
        );
        assert_eq!(respond("GET /readyz HTTP/1.1", &m, true).0, "200 OK");
        assert!(
            respond("GET /metrics HTTP/1.1", &m, true)
                .2
                .contains("redis_operator_managed_clusters 0")
        );
        assert_eq!(respond("GET /nope HTTP/1.1", &m, true).0, "404 Not Found");
        assert_eq!(
            respond("POST /metrics HTTP/1.1", &m, true).0,
            "405 Method Not Allowed"
        );
    }
}
