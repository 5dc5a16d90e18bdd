//! Server-side apply helpers: the one place the controllers call `Api::patch`.
//!
//! Every write is a server-side apply with `force`, under a field manager named for the
//! controller that owns the field (`olm-rs/<controller>`), so two controllers never fight over
//! a field and a re-apply after a crash is a no-op. Status goes to the `/status` subresource
//! as a minimal object (apiVersion, kind, status); [`same_ignoring_time`] lets callers skip a
//! write that would only move timestamps. [`delete_if_present`] is the controllers' one delete:
//! an object already gone is not an error.

use kube::{
    Api, Resource,
    api::{DeleteParams, DynamicObject, Patch, PatchParams},
    core::ApiResource,
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

/// Prefix of every field manager this controller uses.
pub const MANAGER_PREFIX: &str = "olm-rs/";

/// The field manager of one controller: `olm-rs/<controller>`.
pub fn field_manager(controller: &str) -> String {
    format!("{MANAGER_PREFIX}{controller}")
}

/// Patch parameters of a forced server-side apply under `manager`.
pub fn apply_params(manager: &str) -> PatchParams {
    PatchParams::apply(manager).force()
}

/// Server-side applies `object` (a full object with apiVersion/kind/metadata) named `name`.
pub async fn apply<K>(
    api: &Api<K>,
    name: &str,
    object: &(impl Serialize + std::fmt::Debug),
    manager: &str,
) -> kube::Result<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &apply_params(manager), &Patch::Apply(object))
        .await
}

/// Deletes `name` (background propagation); returns whether it was there. A 404 is not an error:
/// the object is gone already, which is what the caller wanted.
pub async fn delete_if_present<K>(api: &Api<K>, name: &str) -> kube::Result<bool>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Deletes the object `name` only if it is still the one observed (`uid`, a precondition the API
/// server checks): `Ok(false)` when it is gone or the name now holds another object (`409`), so a
/// decision taken on an old event never deletes an object re-created under the same name.
pub async fn delete_observed<K>(api: &Api<K>, name: &str, uid: &str) -> kube::Result<bool>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Sends a JSON merge patch under `manager`: only for the rare change a server-side apply cannot
/// make, such as removing a field the API server defaulted and no manager owns
/// ([`crate::plan::csv::strategy_switch_patch`]).
pub async fn merge_patch<K>(api: &Api<K>, name: &str, patch: &Value, manager: &str) -> kube::Result<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let params = PatchParams {
        field_manager: Some(manager.to_owned()),
        ..Default::default()
    };
    api.patch(name, &params, &Patch::Merge(patch)).await
}

/// Removes `finalizer` from the object `name`, whose finalizers read `finalizers` at
/// `resource_version`: a merge patch of the list without it, refused (409) if the object changed
/// since it was read. A 404 is not an error (the object is gone).
pub async fn remove_finalizer<K>(
    api: &Api<K>,
    name: &str,
    resource_version: Option<&str>,
    finalizers: &[String],
    finalizer: &str,
) -> kube::Result<()>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let rest: Vec<&String> = finalizers.iter().filter(|f| *f != finalizer).collect();
    let patch = json!({"metadata": {"finalizers": rest, "resourceVersion": resource_version}});
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Server-side applies `status` to the `/status` subresource of `name`, as the minimal object
/// `{apiVersion, kind, status}`.
pub async fn apply_status<K>(
    api: &Api<K>,
    name: &str,
    status: &impl Serialize,
    manager: &str,
) -> kube::Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let body = status_body::<K>(status);
    api.patch_status(name, &apply_params(manager), &Patch::Apply(&body))
        .await
}

/// [`apply_status`] guarded by `resource_version`: refused (409) when the object is no longer the
/// one the caller wrote (replaced, or changed by someone else).
pub async fn apply_status_at<K>(
    api: &Api<K>,
    name: &str,
    resource_version: &str,
    status: &impl Serialize,
    manager: &str,
) -> kube::Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut body = status_body::<K>(status);
    body["metadata"] = json!({"name": name, "resourceVersion": resource_version});
    api.patch_status(name, &apply_params(manager), &Patch::Apply(&body))
        .await
}

/// The minimal object written by [`apply_status`].
pub fn status_body<K: Resource<DynamicType = ()>>(status: &impl Serialize) -> Value {
    json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    })
}

/// Server-side applies an arbitrary object through the dynamic API.
pub async fn apply_dynamic(
    api: &Api<DynamicObject>,
    name: &str,
    object: &Value,
    manager: &str,
) -> kube::Result<DynamicObject> {
    api.patch(name, &apply_params(manager), &Patch::Apply(object))
        .await
}

/// An InstallPlan step's object as the API server wrote it, with the warnings it answered
/// with (`Warning: 299` headers: a deprecated API version, an unknown field), which upstream
/// turns into an `AppliedWithWarnings` Event.
#[derive(Debug)]
pub struct Written {
    /// The object after the write.
    pub object: DynamicObject,
    /// The warnings' texts, in the order the API server sent them.
    pub warnings: Vec<String>,
}

/// Writes an InstallPlan step's `object` (named `name`, of `resource`, in `namespace` for a
/// namespaced kind) under `manager`: a forced server-side apply; with `create_first`, a POST
/// first and the apply only when the object exists (how a plan run as a ServiceAccount writes,
/// as upstream's step ensurer creates first, so that an account lacking a permission is refused
/// with the verb it lacks, `cannot create resource "services"`, not the `patch` an apply is
/// checked as). The requests go through `client` as `Api` would send them; they are built here
/// because kube's `Api` drops the response headers that carry the warnings.
pub async fn write_step(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    name: &str,
    object: &Value,
    manager: &str,
    create_first: bool,
) -> kube::Result<Written> {
    let request = kube::core::Request::new(DynamicObject::url_path(resource, namespace));
    let mut warnings = Vec::new();
    if create_first {
        let params = kube::api::PostParams {
            field_manager: Some(manager.to_owned()),
            ..Default::default()
        };
        let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
        let post = request.create(&params, body).map_err(kube::Error::BuildRequest)?;
        match send_step(client, post, &mut warnings).await {
            Err(kube::Error::Api(status)) if status.code == 409 && status.reason == "AlreadyExists" => {}
            other => return other.map(|object| Written { object, warnings }),
        }
    }
    let patch = request
        .patch(name, &apply_params(manager), &Patch::Apply(object))
        .map_err(kube::Error::BuildRequest)?;
    let object = send_step(client, patch, &mut warnings).await?;
    Ok(Written { object, warnings })
}

/// Sends one step write, adds the response's warnings to `warnings`, and reads the object (or
/// the API server's refusal, as kube reads it).
async fn send_step(
    client: &kube::Client,
    request: http::Request<Vec<u8>>,
    warnings: &mut Vec<String>,
) -> kube::Result<DynamicObject> {
    let response = client.send(request.map(kube::client::Body::from)).await?;
    warnings.extend(
        response
            .headers()
            .get_all(http::header::WARNING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(warning_text),
    );
    let code = response.status();
    let body = response.into_body().collect_bytes().await?;
    if code.is_client_error() || code.is_server_error() {
        let status = serde_json::from_slice::<kube::core::Status>(&body).unwrap_or_else(|_| {
            let text = String::from_utf8_lossy(&body);
            kube::core::Status::failure(text.trim(), "Failed to parse error data").with_code(code.as_u16())
        });
        return Err(kube::Error::Api(Box::new(status)));
    }
    serde_json::from_slice(&body).map_err(kube::Error::SerdeError)
}

/// The text of a `Warning` header value (RFC 7234: `CODE AGENT "TEXT" ["DATE"]`) with code 299,
/// the one the API server sends; other codes and malformed values give `None`.
pub fn warning_text(header: &str) -> Option<String> {
    let (code, rest) = header.trim().split_once(' ')?;
    if code != "299" {
        return None;
    }
    let (_agent, quoted) = rest.trim_start().split_once(' ')?;
    let mut chars = quoted.trim_start().strip_prefix('"')?.chars();
    let mut text = String::new();
    loop {
        match chars.next()? {
            '"' => return Some(text),
            '\\' => text.push(chars.next()?),
            c => text.push(c),
        }
    }
}

/// The dynamic `Api` for `resource` in `namespace` (`None` for cluster-scoped kinds).
pub fn dynamic_api(
    client: kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client, ns, resource),
        None => Api::all_with(client, resource),
    }
}

/// True when `a` and `b` are equal once every timestamp field
/// ([`crate::status::TIMESTAMP_FIELDS`], the one list) is dropped.
pub fn same_ignoring_time(a: &Value, b: &Value) -> bool {
    strip_time(a) == strip_time(b)
}

fn strip_time(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !crate::status::TIMESTAMP_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), strip_time(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip_time).collect()),
        other => other.clone(),
    }
}

/// Serialises `value` to JSON, mapping failure to `Value::Null` (our types always serialise).
pub fn to_value(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1alpha1::Subscription;

    #[test]
    fn a_299_warning_header_gives_its_text_unescaped() {
        assert_eq!(
            warning_text(r#"299 - "operators.io.operator-framework/v1 Deprecated is deprecated""#).as_deref(),
            Some("operators.io.operator-framework/v1 Deprecated is deprecated")
        );
        assert_eq!(
            warning_text(r#"299 kube-apiserver "say \"hi\" \\ now" "Sat, 28 Nov 2026 10:00:00 GMT""#)
                .as_deref(),
            Some(r#"say "hi" \ now"#)
        );
        assert_eq!(warning_text(r#"199 - "misc""#), None);
        assert_eq!(warning_text("299 - unquoted"), None);
        assert_eq!(warning_text(r#"299 - "unterminated"#), None);
    }

    #[test]
    fn field_managers_are_scoped_per_controller() {
        assert_eq!(field_manager("installplan"), "olm-rs/installplan");
        let params = apply_params("olm-rs/csv");
        assert!(params.force);
        assert_eq!(params.field_manager.as_deref(), Some("olm-rs/csv"));
    }

    #[test]
    fn the_status_body_is_a_minimal_object() {
        let body = status_body::<Subscription>(&json!({"state": "AtLatestKnown"}));
        assert_eq!(
            body,
            json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "Subscription",
                "status": {"state": "AtLatestKnown"},
            })
        );
    }

    #[test]
    fn statuses_that_differ_only_in_timestamps_are_the_same() {
        let a = json!({"phase": "Succeeded", "lastUpdateTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": "A", "status": "True", "lastTransitionTime": "x"}]});
        let b = json!({"phase": "Succeeded", "lastUpdateTime": "2026-02-01T00:00:00Z",
            "conditions": [{"type": "A", "status": "True", "lastTransitionTime": "y"}]});
        assert!(same_ignoring_time(&a, &b));
        let c = json!({"phase": "Failed", "lastUpdateTime": "2026-02-01T00:00:00Z",
            "conditions": [{"type": "A", "status": "True", "lastTransitionTime": "y"}]});
        assert!(!same_ignoring_time(&a, &c));
    }
}
