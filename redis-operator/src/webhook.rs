//! webhook: the operator's webhook endpoints, served over TLS by the shared server
//! ([`operator_runtime::https`]) with the certificate OLM mounts into the pod:
//! - `POST /convert`: the CRD conversion webhook ([`crate::convert::review`]);
//! - `POST /validate`: the validating admission webhook ([`crate::validate::review`]).
//!
//! [`route`] is pure (method, path and body in, response out); [`serve`] runs it. A body that is
//! not JSON, or not a review, gets HTTP 400 with the reason; anything else a 404 or 405.

use std::sync::Arc;

use operator_runtime::{
    http::Response,
    https::{self, CertFiles, Handler, TlsError},
};
use tokio::net::TcpListener;

use crate::{convert, validate};

/// The conversion webhook's path (the CSV's `webhookPath`).
pub const CONVERT_PATH: &str = "/convert";
/// The validating webhook's path.
pub const VALIDATE_PATH: &str = "/validate";
/// The container port the webhooks listen on (the CSV's `targetPort`).
pub const WEBHOOK_PORT: u16 = 9443;

const JSON: &str = "application/json";
const TEXT: &str = "text/plain; charset=utf-8";

/// Routes one webhook request.
#[must_use]
pub fn route(method: &str, path: &str, body: &[u8]) -> Response {
    let text = |status, body: String| Response {
        status,
        content_type: TEXT,
        body,
    };
    let review: fn(&serde_json::Value) -> Result<serde_json::Value, String> = match path {
        CONVERT_PATH => convert::review,
        VALIDATE_PATH => validate::review,
        _ => return text(404, "not found\n".into()),
    };
    if method != "POST" {
        return text(405, format!("{path} takes POST\n"));
    }
    let parsed: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return text(400, format!("the body is not JSON: {e}\n")),
    };
    match review(&parsed) {
        Ok(answer) => Response {
            status: 200,
            content_type: JSON,
            body: answer.to_string(),
        },
        Err(reason) => text(400, format!("{reason}\n")),
    }
}

/// The certificate pair to serve: the first candidate whose certificate file exists (`exists`
/// is the file check, passed in). `None`: no certificate mounted, the webhooks are not served
/// (a Deployment without `webhookdefinitions` gets no certificate from OLM).
#[must_use]
pub fn pick_cert(
    candidates: &[(std::path::PathBuf, std::path::PathBuf)],
    exists: impl Fn(&std::path::Path) -> bool,
) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    candidates.iter().find(|(cert, _)| exists(cert)).cloned()
}

struct Routes;

impl Handler for Routes {
    fn handle(&self, method: &str, path: &str, body: &[u8]) -> Response {
        route(method, path, body)
    }
}

/// Serves `/convert` and `/validate` over TLS on `listener` with `certs` until the task is dropped.
///
/// # Errors
/// rustls refuses the configuration.
pub async fn serve(listener: TcpListener, certs: Arc<CertFiles>) -> Result<(), TlsError> {
    let config = https::server_config(certs)?;
    https::serve(listener, config, Arc::new(Routes)).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reviews_are_answered_on_their_paths_and_anything_else_is_refused() {
        let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "1", "operation": "CREATE",
                        "object": {"apiVersion": "cache.example.com/v1", "metadata": {"name": "a"},
                                   "spec": {"size": 1}}}});
        let ok = route("POST", VALIDATE_PATH, body.to_string().as_bytes());
        assert_eq!((ok.status, ok.content_type), (200, JSON));
        assert!(ok.body.contains(r#""allowed":true"#), "{}", ok.body);
        let bad = route("POST", CONVERT_PATH, b"{not json");
        assert_eq!(bad.status, 400);
        assert!(bad.body.starts_with("the body is not JSON"), "{}", bad.body);
        assert_eq!(route("POST", CONVERT_PATH, b"{}").status, 400);
        assert_eq!(route("GET", CONVERT_PATH, b"").status, 405);
        assert_eq!(route("POST", "/mutate", b"{}").status, 404);
    }

    #[test]
    fn the_first_mounted_certificate_is_served() {
        use std::path::{Path, PathBuf};
        let pair = |c: &str, k: &str| (PathBuf::from(c), PathBuf::from(k));
        let candidates = [
            pair("/a/apiserver.crt", "/a/apiserver.key"),
            pair("/b/tls.crt", "/b/tls.key"),
        ];
        assert_eq!(
            pick_cert(&candidates, |p: &Path| p.starts_with("/b")),
            Some(pair("/b/tls.crt", "/b/tls.key"))
        );
        assert_eq!(pick_cert(&candidates, |_| true), Some(candidates[0].clone()));
        assert_eq!(pick_cert(&candidates, |_| false), None);
    }
}
