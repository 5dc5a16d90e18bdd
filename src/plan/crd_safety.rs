//! crd_safety: whether an InstallPlan may replace a CRD that already exists, as upstream's
//! catalog operator decides before its CRD update (`catalog/step.go`,
//! `lib/crd/storage.go:SafeStorageVersionUpgrade`, `catalog/operator.go:validateV1CRDCompatibility`).
//!
//! The rules it enforces:
//! - **No stored version is dropped.** Every version in the existing CRD's
//!   `status.storedVersions` must still be in the new CRD's `spec.versions` (served or not):
//!   objects may still be stored in it, and the API server could not decode them any more.
//!   Refused with upstream's message, `risk of data loss updating "<crd>": new CRD removes version
//!   <v> that is listed as a stored version on the existing CRD`. The fix is a storage migration
//!   (rewrite every object, then drop the version from `status.storedVersions`).
//! - **Existing objects stay valid.** For each version served by both the old and the new CRD
//!   whose schema changed, every existing object (read in that version) must pass the new
//!   schema; otherwise `error validating existing CRs against new CRD's schema for "<crd>": error
//!   validating <group/version, Kind=kind> "<ns/name>": updated validation is too restrictive:
//!   <field errors>`, each field error as the API server words it from the root path `[]`
//!   (`[].spec.size: Invalid value: ...`). A new CRD converted by a webhook only gets a warning
//!   Event, as upstream ([`uses_webhook_conversion`]): the new webhook, which starts after the
//!   update, is trusted to convert the objects into a valid shape.
//!
//! [`validate`] is the structural-schema subset of the API server's validation that these checks
//! need (types, required, enum, numeric and length bounds, items, nested properties, nullable,
//! `x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`); `pattern` and CEL rules
//! are not evaluated. Pure: the shell lists the objects and passes them in.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

/// Why a CRD update was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdSafetyError {
    /// The new CRD drops a version objects may still be stored in.
    #[error(
        "risk of data loss updating {crd:?}: new CRD removes version {version} that is listed as a stored version on the existing CRD"
    )]
    RemovesStoredVersion {
        /// The CRD's name.
        crd: String,
        /// The stored version the new CRD lacks.
        version: String,
    },
    /// An existing object fails the new schema.
    #[error(
        "error validating existing CRs against new CRD's schema for {crd:?}: error validating {gvk} {object:?}: updated validation is too restrictive: {}",
        aggregate(.errors)
    )]
    TooRestrictive {
        /// The CRD's name.
        crd: String,
        /// `<group>/<version>, Kind=<kind>` of the object, as Go prints a GroupVersionKind (the
        /// version is the one it was read in).
        gvk: String,
        /// `namespace/name` (or `name` when cluster-scoped).
        object: String,
        /// One message per field, as the API server words them (paths from the root `[]`).
        errors: Vec<String>,
    },
}

/// Upstream's aggregate error text: one error alone, several in brackets. Upstream validates
/// from the root path `field.NewPath("")`, which prints as `[]`: every field error starts with
/// `[].` (the detail after it keeps the plain path).
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => format!("[].{one}"),
        many => {
            let rooted: Vec<String> = many.iter().map(|e| format!("[].{e}")).collect();
            format!("[{}]", rooted.join(", "))
        }
    }
}

/// Checks that `new` keeps every version listed in `existing`'s `status.storedVersions`.
///
/// # Errors
/// [`CrdSafetyError::RemovesStoredVersion`] naming the first version dropped.
pub fn stored_versions_kept(
    existing: &CustomResourceDefinition,
    new: &CustomResourceDefinition,
) -> Result<(), CrdSafetyError> {
    let stored = existing
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.as_deref())
        .unwrap_or_default();
    match stored
        .iter()
        .find(|v| !new.spec.versions.iter().any(|n| &n.name == *v))
    {
        Some(version) => Err(CrdSafetyError::RemovesStoredVersion {
            crd: existing.metadata.name.clone().unwrap_or_default(),
            version: version.clone(),
        }),
        None => Ok(()),
    }
}

/// Whether `crd` is converted by a webhook (`spec.conversion.strategy: Webhook`).
pub fn uses_webhook_conversion(crd: &CustomResourceDefinition) -> bool {
    crd.spec
        .conversion
        .as_ref()
        .is_some_and(|c| c.strategy == "Webhook")
}

/// The versions whose existing objects must be validated, with the new schema of each: served by
/// both CRDs, and with a schema that changed (an unchanged schema cannot reject what it admitted).
pub fn versions_to_validate(
    existing: &CustomResourceDefinition,
    new: &CustomResourceDefinition,
) -> Vec<(String, Value)> {
    new.spec
        .versions
        .iter()
        .filter(|n| n.served)
        .filter_map(|n| {
            let old = existing
                .spec
                .versions
                .iter()
                .find(|o| o.name == n.name && o.served)?;
            let schema = |v: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion| {
                v.schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                    .and_then(|s| serde_json::to_value(s).ok())
            };
            let new_schema = schema(n)?;
            (schema(old).as_ref() != Some(&new_schema)).then(|| (n.name.clone(), new_schema))
        })
        .collect()
}

/// `namespace/name` of an object, as upstream names it in the message.
fn object_name(obj: &Value) -> String {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    match obj["metadata"]["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

/// Checks the existing `objects` (read in `version`) against that version's new `schema`.
///
/// # Errors
/// [`CrdSafetyError::TooRestrictive`] for the first object that fails.
pub fn existing_objects_valid(
    new: &CustomResourceDefinition,
    version: &str,
    schema: &Value,
    objects: &[Value],
) -> Result<(), CrdSafetyError> {
    for obj in objects {
        let errors = validate(schema, obj);
        if !errors.is_empty() {
            return Err(CrdSafetyError::TooRestrictive {
                crd: new.metadata.name.clone().unwrap_or_default(),
                gvk: format!("{}/{version}, Kind={}", new.spec.group, new.spec.names.kind),
                object: object_name(obj),
                errors,
            });
        }
    }
    Ok(())
}

/// The field errors of `obj` against an `openAPIV3Schema` (empty: valid). `metadata`,
/// `apiVersion` and `kind` at the root are the API server's, not the schema's, and are skipped.
pub fn validate(schema: &Value, obj: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    if let (Some(props), Some(fields)) = (schema["properties"].as_object(), obj.as_object()) {
        for (key, sub) in props {
            if matches!(key.as_str(), "metadata" | "apiVersion" | "kind") {
                continue;
            }
            if let Some(v) = fields.get(key) {
                walk(sub, v, key, &mut errors);
            }
        }
        required(schema, obj, "", &mut errors);
    }
    errors
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn required(schema: &Value, obj: &Value, path: &str, errors: &mut Vec<String>) {
    for key in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if obj.get(key).is_none() {
            errors.push(format!("{}: Required value", join(path, key)));
        }
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn walk(schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    if v.is_null() {
        if schema["nullable"] != true {
            errors.push(format!(
                "{path}: Invalid value: \"null\": {path} in body must be of type {}",
                schema["type"].as_str().unwrap_or("object")
            ));
        }
        return;
    }
    if schema["x-kubernetes-int-or-string"] == true {
        if !(v.is_string() || type_of(v) == "integer") {
            errors.push(format!(
                "{path}: Invalid value: \"{}\": {path} in body must be of type integer or string",
                type_of(v)
            ));
        }
        return;
    }
    if let Some(want) = schema["type"].as_str() {
        let got = type_of(v);
        let ok = got == want || (want == "number" && got == "integer");
        if !ok {
            errors.push(format!(
                "{path}: Invalid value: \"{got}\": {path} in body must be of type {want}: \"{got}\""
            ));
            return;
        }
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(v)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        errors.push(format!(
            "{path}: Unsupported value: {v}: supported values: {}",
            list.join(", ")
        ));
    }
    if let Some(n) = v.as_f64() {
        if let Some(min) = schema["minimum"].as_f64()
            && n < min
        {
            errors.push(format!(
                "{path}: Invalid value: {v}: {path} in body should be greater than or equal to {min}"
            ));
        }
        if let Some(max) = schema["maximum"].as_f64()
            && n > max
        {
            errors.push(format!(
                "{path}: Invalid value: {v}: {path} in body should be less than or equal to {max}"
            ));
        }
    }
    if let Some(s) = v.as_str() {
        let len = s.chars().count() as u64;
        if let Some(min) = schema["minLength"].as_u64()
            && len < min
        {
            errors.push(format!(
                "{path}: Invalid value: {v}: {path} in body should be at least {min} chars long"
            ));
        }
        if let Some(max) = schema["maxLength"].as_u64()
            && len > max
        {
            errors.push(format!("{path}: Too long: may not be more than {max} bytes"));
        }
    }
    if let Some(items) = v.as_array() {
        let len = items.len() as u64;
        if let Some(min) = schema["minItems"].as_u64()
            && len < min
        {
            errors.push(format!(
                "{path}: Invalid value: {len}: {path} in body should have at least {min} items"
            ));
        }
        if let Some(max) = schema["maxItems"].as_u64()
            && len > max
        {
            errors.push(format!("{path}: Too many: {len}: must have at most {max} items"));
        }
        if schema["items"].is_object() {
            for (i, item) in items.iter().enumerate() {
                walk(&schema["items"], item, &format!("{path}[{i}]"), errors);
            }
        }
    }
    if let Some(fields) = v.as_object() {
        if let Some(props) = schema["properties"].as_object() {
            for (key, sub) in props {
                if let Some(fv) = fields.get(key) {
                    walk(sub, fv, &join(path, key), errors);
                }
            }
        }
        if schema["additionalProperties"].is_object() {
            let known = schema["properties"].as_object();
            for (key, fv) in fields {
                if known.is_none_or(|k| !k.contains_key(key)) {
                    walk(&schema["additionalProperties"], fv, &join(path, key), errors);
                }
            }
        }
        required(schema, v, path, errors);
    }
}

#[cfg(test)]
mod tests;
