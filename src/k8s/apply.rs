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
