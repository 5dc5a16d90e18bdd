//! counted: every request the controller's client sends is counted in
//! `olmrs_api_requests_total{method, resource, scope}` ([`crate::metrics::ApiRequests`]), by a
//! tower layer on the client, so benches read API requests from `/metrics` instead of logs.
//!
//! The rule: a request is counted once, when it is sent (a watch is one request however long it
//! streams; a retried request is counted again), by what its path names, never by its payload.
//! Only the controller's own client is counted: the clients of scoped installs, which act as a
//! group's ServiceAccount ([`crate::k8s::scoped`]), are not.

use std::task::{Context, Poll};

use tower::{Layer, Service};

use crate::metrics::{ApiRequestLabels, ApiRequests};

/// The layer counting requests into `requests`; `global_namespace` is the controller's catalog
/// namespace (scope `global`).
#[derive(Clone)]
pub struct CountRequests {
    requests: ApiRequests,
    global_namespace: String,
}

impl CountRequests {
    /// A layer counting into `requests`.
    pub fn new(requests: ApiRequests, global_namespace: impl Into<String>) -> Self {
        Self {
            requests,
            global_namespace: global_namespace.into(),
        }
    }

    fn count(&self, method: &http::Method, path: &str) {
        let labels = labels(method.as_str(), path, &self.global_namespace);
        self.requests.get_or_create(&labels).inc();
    }
}

impl<S> Layer<S> for CountRequests {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Counted {
            inner,
            counter: self.clone(),
        }
    }
}

/// A client service whose requests are counted ([`CountRequests`]).
#[derive(Clone)]
pub struct Counted<S> {
    inner: S,
    counter: CountRequests,
}

impl<S, B> Service<http::Request<B>> for Counted<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        self.counter.count(request.method(), request.uri().path());
        self.inner.call(request)
    }
}

/// The labels of a request: its method, the resource its path names (with the subresource:
/// `subscriptions/status`) and its scope (`cluster`, `global` for `global_namespace`, else
/// `namespace`). A path that names no resource (`/version`, `/apis`) is its own resource.
pub fn labels(method: &str, path: &str, global_namespace: &str) -> ApiRequestLabels {
    let parts: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|p| !p.is_empty())
        .collect();
    // /api/v1/... or /apis/<group>/<version>/...
    let rest: &[&str] = match parts.first() {
        Some(&"api") => parts.get(2..).unwrap_or_default(),
        Some(&"apis") => parts.get(3..).unwrap_or_default(),
        _ => &[],
    };
    let (scope, rest) = match rest {
        ["namespaces", namespace, tail @ ..] if !tail.is_empty() => {
            let scope = if *namespace == global_namespace {
                "global"
            } else {
                "namespace"
            };
            (scope, tail)
        }
        _ => ("cluster", rest),
    };
    let resource = match rest {
        [] => format!("/{}", parts.join("/")),
        [resource, _name, subresource, ..] => format!("{resource}/{subresource}"),
        [resource, ..] => (*resource).to_owned(),
    };
    ApiRequestLabels {
        method: method.to_owned(),
        resource,
        scope: scope.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(method: &str, path: &str) -> (String, String, String) {
        let got = labels(method, path, "olm");
        (got.method, got.resource, got.scope)
    }

    fn t(method: &str, resource: &str, scope: &str) -> (String, String, String) {
        (method.into(), resource.into(), scope.into())
    }

    #[test]
    fn a_path_is_counted_by_resource_subresource_and_scope() {
        assert_eq!(
            l(
                "PATCH",
                "/apis/operators.coreos.com/v1alpha1/namespaces/b-1/subscriptions/s/status"
            ),
            t("PATCH", "subscriptions/status", "namespace")
        );
        assert_eq!(
            l(
                "GET",
                "/apis/operators.coreos.com/v1alpha1/namespaces/olm/catalogsources/c"
            ),
            t("GET", "catalogsources", "global")
        );
        assert_eq!(
            l("GET", "/api/v1/namespaces/olm/configmaps"),
            t("GET", "configmaps", "global")
        );
        assert_eq!(l("GET", "/api/v1/namespaces"), t("GET", "namespaces", "cluster"));
        assert_eq!(
            l("GET", "/api/v1/namespaces/b-1"),
            t("GET", "namespaces", "cluster")
        );
        assert_eq!(
            l("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
            t("GET", "customresourcedefinitions", "cluster")
        );
        assert_eq!(
            l("PATCH", "/apis/operators.coreos.com/v1/operators/o/status"),
            t("PATCH", "operators/status", "cluster")
        );
        assert_eq!(l("GET", "/version"), t("GET", "/version", "cluster"));
        assert_eq!(l("GET", "/apis"), t("GET", "/apis", "cluster"));
    }

    #[tokio::test]
    async fn the_layer_counts_each_request_once() {
        let requests = ApiRequests::default();
        let mut service = CountRequests::new(requests.clone(), "olm").layer(tower::service_fn(
            |_: http::Request<()>| async { Ok::<_, std::convert::Infallible>(()) },
        ));
        for _ in 0..2 {
            let request = http::Request::get("/api/v1/namespaces/olm/configmaps/c")
                .body(())
                .expect("a valid request");
            service.call(request).await.expect("the inner service answers");
        }
        let labels = labels("GET", "/api/v1/namespaces/olm/configmaps/c", "olm");
        assert_eq!(requests.get_or_create(&labels).get(), 2);
    }
}
