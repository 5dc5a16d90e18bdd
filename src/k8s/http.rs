//! http: the controller's `/metrics`, `/healthz` and `/readyz`, served by the workspace's shared
//! runtime ([`operator_runtime::http`], where readiness is explained); this module only plugs the
//! controller's [`Metrics`] into it.

use std::sync::Arc;

use operator_runtime::http::MetricsText;
pub use operator_runtime::http::{Readiness, ReadyState, bind};
use tokio::net::TcpListener;

use crate::metrics::Metrics;

impl MetricsText for Metrics {
    fn render(&self) -> String {
        Metrics::render(self)
    }
}

/// Serves the endpoints on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>, ready: Arc<Readiness>) {
    operator_runtime::http::serve(listener, metrics, ready).await;
}

#[cfg(test)]
mod tests {
    use operator_runtime::http::route;

    use super::*;

    #[test]
    fn the_controller_metrics_are_served_on_metrics() {
        let metrics = Metrics::new();
        let response = route("GET", "/metrics", ReadyState::Ready, &metrics);
        assert_eq!(response.status, 200);
        assert!(response.body.contains("install_plan_count"));
    }
}
