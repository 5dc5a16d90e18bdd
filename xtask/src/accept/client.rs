//! client: the acceptance benches' door to the API server: the kube client spoken to by path,
//! answers as JSON values (what the outcome rules read), a missing object as `None`.

use anyhow::Context as _;
use serde_json::Value;

/// The path prefix of the OLM API group.
pub(crate) const OPS: &str = "/apis/operators.coreos.com";
/// The path of the CustomResourceDefinitions.
pub(crate) const CRD_PATH: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// A set-up failure (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SetupError(pub String);

/// The kube client, spoken to by path as the outcomes are read (JSON values throughout).
#[derive(Clone)]
pub(crate) struct Kube(pub kube::Client);

impl Kube {
    async fn send(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, kube::Error> {
        self.send_as(method, path, body, "application/json").await
    }

    async fn send_as(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
        content_type: &str,
    ) -> Result<Value, kube::Error> {
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let mut request = http::Request::builder().method(method).uri(path);
        if body.is_some() {
            request = request.header("Content-Type", content_type);
        }
        let request = request
            .body(bytes)
            .map_err(|e| kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e)))?;
        let text = self.0.request_text(request).await?;
        Ok(if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::Null)
        })
    }

    /// GET `path`; `None` when it is not found.
    pub async fn get(&self, path: &str) -> anyhow::Result<Option<Value>> {
        match self.send(http::Method::GET, path, None).await {
            Ok(v) => Ok(Some(v)),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(e).with_context(|| format!("GET {path}")),
        }
    }

    /// The items of a list at `path`.
    pub async fn list(&self, path: &str) -> anyhow::Result<Vec<Value>> {
        Ok(self
            .get(path)
            .await?
            .and_then(|v| v.get("items").and_then(Value::as_array).cloned())
            .unwrap_or_default())
    }

    /// POST `body` to `path`; an object already there is fine.
    pub async fn create(&self, path: &str, body: Value) -> anyhow::Result<()> {
        match self.send(http::Method::POST, path, Some(&body)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(e).with_context(|| format!("POST {path}")),
        }
    }

    /// Server-side apply of `body` at `path` (which carries the fieldManager).
    pub async fn apply(&self, path: &str, body: &Value) -> anyhow::Result<()> {
        self.send_as(
            http::Method::PATCH,
            path,
            Some(body),
            "application/apply-patch+yaml",
        )
        .await
        .with_context(|| format!("PATCH {path}"))?;
        Ok(())
    }

    /// DELETE `path`; an object already gone is fine.
    pub async fn delete(&self, path: &str) -> anyhow::Result<()> {
        match self.send(http::Method::DELETE, path, None).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e).with_context(|| format!("DELETE {path}")),
        }
    }
}

pub(crate) fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}
