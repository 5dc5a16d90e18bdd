//! decode: a bundle's manifests as upstream OLM's typed decoding sees them, before they are applied.
//!
//! # The rule this module enforces
//!
//! Upstream never sends a bundle manifest to the API server as the bundle wrote it. The resolver
//! decodes the CSV into its Go type (`resolver/steps.go`) and the InstallPlan executor decodes
//! ClusterServiceVersions, ServiceAccounts, Services, ConfigMaps, Secrets and RBAC into typed objects
//! (`catalog/operator.go:ExecutePlan`), CRDs into apiextensions types (its CRD stepper). Go's
//! `encoding/json` drops fields the type does not declare, reads `null` as absent (a nil pointer,
//! list or map, or the field's zero value) and reads a missing required field as its zero value,
//! which it writes back (`""`, `false`). The API server only ever sees that re-encoded object.
//!
//! olm-rs applies with server-side apply, which is stricter than upstream's create/update: an
//! apply patch naming a field the schema does not declare is refused, and explicit nulls are taken
//! literally. Real bundles carry both (a Deployment `labels` where OLM reads `label`,
//! `skipRange` in the CSV spec, `containers` beside the pod spec, `affinity: null`, `skips: null`).
//! So every manifest goes through the same typed round trip before it becomes a step:
//!
//! - **ClusterServiceVersion** ([`csv`]): object members that are `null` are dropped, then the
//!   manifest is decoded into [`ClusterServiceVersion`] (which accepts Go's zero values, see
//!   [`crate::api`]) and encoded again. Unknown fields anywhere in it, including inside the install
//!   strategy's DeploymentSpecs (typed by k8s-openapi), are gone; a missing required string such as
//!   a CRD description's `resources[].name` is written as `""`, as Go writes it.
//! - **ServiceAccount, Service, ConfigMap, Secret, Role, RoleBinding, ClusterRole,
//!   ClusterRoleBinding** (`v1`) **and CustomResourceDefinition** (`apiextensions.k8s.io/v1`)
//!   ([`object`]): a round trip through the k8s-openapi type, which like Go reads `null` as absent,
//!   ignores unknown fields, and keeps free-form JSON (a CRD schema's `default`, `enum: [.., null]`)
//!   as written.
//! - **Member names** ([`go_names`]): before either round trip, a member whose name matches a
//!   field only case-insensitively (`nativeApis`) is renamed to that field (`nativeAPIs`), as Go's
//!   decoder fills it.
//! - **Every other kind** is applied unstructured by upstream too (ServiceMonitor, PodDisruptionBudget,
//!   ...): only its `metadata`, which the API server always decodes as ObjectMeta, loses its nulls.
//!
//! # Where we differ from upstream
//!
//! - Go keeps a descriptor's `value` as raw JSON, nulls inside included; here the CSV loses every
//!   `null` member before decoding, inside descriptor values too (they are UI hints; no CSV in the
//!   certified-operators corpus has one).
//! - Go writes a zero struct for its non-pointer struct fields; so does [`csv`] for the CSV spec's
//!   (`customresourcedefinitions: {}`, `apiservicedefinitions: {}`, `provider: {}`,
//!   `cleanup: {enabled: false}`, as upstream's installed CSVs show them), but not inside other
//!   kinds or deeper structs, where an absent one stays absent. Nothing reads the difference.
//! - A `null` *element* of a list (`args: [null]`) reads as `""` in Go; here it is an error naming
//!   the object.
//!
//! Everything here is pure.

pub mod go_names;

use std::sync::LazyLock;

use k8s_openapi::{
    api::{
        core::v1::{ConfigMap, Secret, Service, ServiceAccount},
        rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use self::go_names::GoNames;
use crate::api::v1alpha1::ClusterServiceVersion;

/// The field names of the CSV, `ObjectMeta` (the CSV's schema leaves `metadata` out) and each kind
/// [`object`] decodes into a type.
static NAMES: LazyLock<GoNames> = LazyLock::new(GoNames::embedded);

/// Removes every object member whose value is `null`, at any depth (list elements are kept).
pub fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

fn round_trip<T: DeserializeOwned + Serialize>(manifest: Value) -> Result<Value, serde_json::Error> {
    let typed: T = serde_json::from_value(manifest)?;
    serde_json::to_value(&typed)
}

/// The CSV as upstream's typed decoding reads it, and its JSON as upstream would send it: nulls
/// read as absent, members named in another case renamed to their field ([`go_names`]), unknown
/// fields dropped, missing required fields as Go's zero values.
///
/// # Errors
/// What the decoder reports when a field has the wrong type (a string where a list belongs).
pub fn csv(manifest: &Value) -> Result<(ClusterServiceVersion, Value), serde_json::Error> {
    let mut manifest = manifest.clone();
    drop_nulls(&mut manifest);
    NAMES.rename("ClusterServiceVersion", &mut manifest);
    if let Some(metadata) = manifest.get_mut("metadata") {
        NAMES.rename("ObjectMeta", metadata);
    }
    let mut typed: ClusterServiceVersion = serde_json::from_value(manifest)?;
    // Go writes a zero struct for an absent non-pointer struct field of CSVSpec.
    let spec = &mut typed.spec;
    spec.custom_resource_definitions
        .get_or_insert_with(Default::default);
    spec.api_service_definitions.get_or_insert_with(Default::default);
    spec.provider.get_or_insert_with(Default::default);
    spec.cleanup.get_or_insert_with(Default::default);
    let value = serde_json::to_value(&typed)?;
    Ok((typed, value))
}

/// Whether upstream's executor decodes objects of this group, version and kind into a Go type
/// (so [`object`] round-trips them through the k8s-openapi type).
pub fn is_typed(group: &str, version: &str, kind: &str) -> bool {
    matches!(
        (group, version, kind),
        ("", "v1", "ServiceAccount" | "Service" | "ConfigMap" | "Secret")
            | (
                "rbac.authorization.k8s.io",
                "v1",
                "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding"
            )
            | ("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
    )
}

/// A bundle object other than the CSV as upstream's executor sends it: the typed kinds
/// ([`is_typed`]) round-trip through their k8s-openapi type; any other kind only loses the nulls
/// of its `metadata`.
///
/// # Errors
/// What the decoder reports when a field of a typed kind has the wrong type.
pub fn object(group: &str, version: &str, kind: &str, manifest: &Value) -> Result<Value, serde_json::Error> {
    let mut manifest = manifest.clone();
    if !is_typed(group, version, kind) {
        if let Some(metadata) = manifest.get_mut("metadata") {
            drop_nulls(metadata);
        }
        return Ok(manifest);
    }
    NAMES.rename(kind, &mut manifest);
    match kind {
        "ServiceAccount" => round_trip::<ServiceAccount>(manifest),
        "Service" => round_trip::<Service>(manifest),
        "ConfigMap" => round_trip::<ConfigMap>(manifest),
        "Secret" => round_trip::<Secret>(manifest),
        "Role" => round_trip::<Role>(manifest),
        "RoleBinding" => round_trip::<RoleBinding>(manifest),
        "ClusterRole" => round_trip::<ClusterRole>(manifest),
        "ClusterRoleBinding" => round_trip::<ClusterRoleBinding>(manifest),
        _ => round_trip::<CustomResourceDefinition>(manifest),
    }
}

/// Paths (`a.b[].c`) of every `null` in `value`; empty when there is none.
#[cfg(test)]
pub fn null_paths(value: &Value) -> Vec<String> {
    fn walk(value: &Value, path: &str, out: &mut Vec<String>) {
        match value {
            Value::Null => out.push(path.to_owned()),
            Value::Object(map) => {
                for (k, v) in map {
                    walk(v, &format!("{path}.{k}"), out);
                }
            }
            Value::Array(items) => {
                for v in items {
                    walk(v, &format!("{path}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, "", &mut out);
    out
}

#[cfg(test)]
mod tests;
