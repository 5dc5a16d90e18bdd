//! http: serves `/metrics`, `/healthz` and `/readyz` on the operator's HTTP port, with the
//! workspace's shared server ([`operator_runtime::http`]); this module only plugs the operator's
//! [`Metrics`] into it.

use std::sync::Arc;

use operator_runtime::http::{MetricsText, Readiness};
use tokio::net::TcpListener;

use super::metrics::Metrics;

impl MetricsText for Metrics {
    fn render(&self) -> String {
        Metrics::render(self)
    }
}

/// Serves until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>, ready: Arc<Readiness>) {
    operator_runtime::http::serve(listener, metrics, ready).await;
}

#[cfg(test)]
mod tests {
    use operator_runtime::http::{ReadyState, route};

    use super::*;

    #[test]
    fn routes_answer_metrics_health_and_readiness() {
        let m = Metrics::default();
        assert_eq!(route("GET", "/healthz", ReadyState::Starting, &m).status, 200);
        assert_eq!(route("GET", "/readyz", ReadyState::Syncing, &m).status, 503);
        assert_eq!(route("GET", "/readyz", ReadyState::Ready, &m).status, 200);
        assert!(
            route("GET", "/metrics", ReadyState::Ready, &m)
                .body
                .contains("redis_operator_managed_clusters 0")
        );
        assert_eq!(route("GET", "/nope", ReadyState::Ready, &m).status, 404);
        assert_eq!(route("POST", "/metrics", ReadyState::Ready, &m).status, 405);
    }
}
