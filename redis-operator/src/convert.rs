//! convert: `RedisCluster` conversion between `cache.example.com/v1alpha1` and `v1`, and the
//! `apiextensions.k8s.io/v1` ConversionReview the API server sends to `POST /convert`.
//!
//! The rule it enforces: conversion is lossless both ways, so an object can be written in one
//! version, stored in the other and read back unchanged.
//! - `v1alpha1.spec.replicas` is `v1.spec.size`.
//! - `v1alpha1`'s flat `storageSize`, `storageClassName`, `deleteClaimOnDelete` are `v1`'s
//!   `storage.{size, storageClassName, deleteClaimOnDelete}`. A `v1alpha1` object that sets
//!   `storageClassName` or `deleteClaimOnDelete` without `storageSize` has no `v1` equivalent
//!   (`storage.size` is required); those fields ride in the [`ALPHA_STORAGE_ANNOTATION`].
//! - `v1alpha1` has no cluster mode: `v1`'s `mode` and `replicasPerPrimary` ride in the
//!   [`CLUSTER_ANNOTATION`] while the object is seen as `v1alpha1`.
//!
//! Conversion works on the JSON objects, not on the typed structs, so fields this operator does
//! not know (and `status`, which both versions share) pass through untouched. Pure: no I/O.

use serde_json::{Map, Value, json};

/// The group of `RedisCluster`.
pub const GROUP: &str = "cache.example.com";
/// `apiVersion` of the storage version.
pub const V1: &str = "cache.example.com/v1";
/// `apiVersion` of the flat, deprecated version.
pub const V1ALPHA1: &str = "cache.example.com/v1alpha1";
/// Holds `v1`'s `mode` and `replicasPerPrimary` (JSON) while the object is seen as `v1alpha1`.
pub const CLUSTER_ANNOTATION: &str = "cache.example.com/v1-cluster";
/// Holds `v1alpha1`'s `storageClassName` / `deleteClaimOnDelete` (JSON) when `storageSize` is
/// missing, while the object is seen as `v1`.
pub const ALPHA_STORAGE_ANNOTATION: &str = "cache.example.com/v1alpha1-storage";

/// Why an object could not be converted. The message names the object and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// The object is not a JSON object with an `apiVersion` this webhook converts.
    #[error(
        "RedisCluster {object}: cannot convert from apiVersion {from:?}; this webhook converts {V1ALPHA1} and {V1}"
    )]
    UnknownFrom {
        /// `namespace/name` of the object.
        object: String,
        /// Its `apiVersion`.
        from: String,
    },
    /// The review asks for a version this webhook does not serve.
    #[error(
        "cannot convert RedisClusters to desiredAPIVersion {0:?}; this webhook converts {V1ALPHA1} and {V1}"
    )]
    UnknownTo(String),
    /// A conversion annotation does not hold the JSON object conversion wrote.
    #[error(
        "RedisCluster {object}: annotation {annotation} is not a JSON object ({detail}); remove it or restore its value"
    )]
    BadAnnotation {
        /// `namespace/name` of the object.
        object: String,
        /// The annotation key.
        annotation: &'static str,
        /// The parser's message.
        detail: String,
    },
}

/// `namespace/name` of an object, for messages.
#[must_use]
pub fn object_name(obj: &Value) -> String {
    let meta = &obj["metadata"];
    let name = meta["name"].as_str().unwrap_or("<unnamed>");
    match meta["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

/// Converts one RedisCluster to `desired` (`cache.example.com/v1` or `.../v1alpha1`).
///
/// # Errors
/// An unknown source or target version, or a damaged conversion annotation.
pub fn convert(obj: &Value, desired: &str) -> Result<Value, ConvertError> {
    let from = obj["apiVersion"].as_str().unwrap_or_default().to_owned();
    if desired != V1 && desired != V1ALPHA1 {
        return Err(ConvertError::UnknownTo(desired.to_owned()));
    }
    if !obj.is_object() || (from != V1 && from != V1ALPHA1) {
        return Err(ConvertError::UnknownFrom {
            object: object_name(obj),
            from,
        });
    }
    let mut out = obj.clone();
    if from != desired {
        if desired == V1 {
            alpha_to_v1(&mut out)?;
        } else {
            v1_to_alpha(&mut out)?;
        }
    }
    out["apiVersion"] = json!(desired);
    Ok(out)
}

fn spec_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.get_mut("spec").and_then(Value::as_object_mut)
}

fn annotations_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj.get_mut("metadata")?
        .get_mut("annotations")
        .and_then(Value::as_object_mut)
}

/// Removes and parses a conversion annotation.
fn take_annotation(obj: &mut Value, key: &'static str) -> Result<Option<Map<String, Value>>, ConvertError> {
    let object = object_name(obj);
    let Some(annotations) = annotations_mut(obj) else {
        return Ok(None);
    };
    let Some(raw) = annotations.remove(key) else {
        return Ok(None);
    };
    let parsed = match raw.as_str().map(serde_json::from_str::<Value>) {
        Some(Ok(Value::Object(map))) => Ok(Some(map)),
        Some(Ok(_)) => Err("not an object".to_owned()),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("not a string".to_owned()),
    };
    if annotations.is_empty()
        && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("annotations");
    }
    parsed.map_err(|detail| ConvertError::BadAnnotation {
        object,
        annotation: key,
        detail,
    })
}

fn put_annotation(obj: &mut Value, key: &str, value: &Map<String, Value>) {
    let text = Value::Object(value.clone()).to_string();
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    if !obj["metadata"]["annotations"].is_object() {
        obj["metadata"]["annotations"] = json!({});
    }
    obj["metadata"]["annotations"][key] = json!(text);
}

fn rename(spec: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = spec.remove(from) {
        spec.insert(to.to_owned(), v);
    }
}

fn v1_to_alpha(obj: &mut Value) -> Result<(), ConvertError> {
    // Only an object without `storage` can carry v1alpha1 storage fields in the annotation.
    let restored_storage = if obj["spec"].get("storage").is_some() {
        None
    } else {
        take_annotation(obj, ALPHA_STORAGE_ANNOTATION)?
    };
    let mut cluster = Map::new();
    if let Some(spec) = spec_mut(obj) {
        rename(spec, "size", "replicas");
        if let Some(Value::Object(storage)) = spec.remove("storage") {
            for (from, to) in [
                ("size", "storageSize"),
                ("storageClassName", "storageClassName"),
                ("deleteClaimOnDelete", "deleteClaimOnDelete"),
            ] {
                if let Some(v) = storage.get(from) {
                    spec.insert(to.to_owned(), v.clone());
                }
            }
        } else if let Some(restored) = restored_storage {
            spec.extend(restored);
        }
        for key in ["mode", "replicasPerPrimary"] {
            if let Some(v) = spec.remove(key) {
                cluster.insert(key.to_owned(), v);
            }
        }
    }
    if !cluster.is_empty() {
        put_annotation(obj, CLUSTER_ANNOTATION, &cluster);
    }
    Ok(())
}

fn alpha_to_v1(obj: &mut Value) -> Result<(), ConvertError> {
    let cluster = take_annotation(obj, CLUSTER_ANNOTATION)?;
    let mut orphans = Map::new();
    if let Some(spec) = spec_mut(obj) {
        rename(spec, "replicas", "size");
        let size = spec.remove("storageSize");
        let class = spec.remove("storageClassName");
        let delete = spec.remove("deleteClaimOnDelete");
        if let Some(size) = size {
            let mut storage = Map::new();
            storage.insert("size".into(), size);
            if let Some(class) = class {
                storage.insert("storageClassName".into(), class);
            }
            if let Some(delete) = delete {
                storage.insert("deleteClaimOnDelete".into(), delete);
            }
            spec.insert("storage".into(), Value::Object(storage));
        } else {
            if let Some(class) = class {
                orphans.insert("storageClassName".into(), class);
            }
            if let Some(delete) = delete {
                orphans.insert("deleteClaimOnDelete".into(), delete);
            }
        }
        if let Some(cluster) = cluster {
            spec.extend(cluster);
        }
    }
    if !orphans.is_empty() {
        put_annotation(obj, ALPHA_STORAGE_ANNOTATION, &orphans);
    }
    Ok(())
}

/// Answers an `apiextensions.k8s.io/v1` ConversionReview: every object converted to
/// `request.desiredAPIVersion`, or a `Failure` naming the first object that could not be.
/// A body that is not a ConversionReview gets `Err` with the reason (answered with HTTP 400).
///
/// # Errors
/// The body is not a ConversionReview with a `request`.
pub fn review(body: &Value) -> Result<Value, String> {
    let request = body
        .get("request")
        .filter(|r| r.is_object())
        .ok_or("the body is not a ConversionReview: it has no request")?;
    let uid = request["uid"].clone();
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let converted: Result<Vec<Value>, ConvertError> = objects.iter().map(|o| convert(o, desired)).collect();
    let response = match converted {
        Ok(objects) => json!({
            "uid": uid,
            "convertedObjects": objects,
            "result": {"status": "Success"}
        }),
        Err(e) => json!({
            "uid": uid,
            "convertedObjects": [],
            "result": {"status": "Failure", "message": e.to_string()}
        }),
    };
    Ok(json!({
        "apiVersion": body["apiVersion"].as_str().unwrap_or("apiextensions.k8s.io/v1"),
        "kind": "ConversionReview",
        "response": response
    }))
}

#[cfg(test)]
mod tests;
