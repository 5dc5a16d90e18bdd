//! table: the `meta.k8s.io` Table a PackageManifest list or get answers when the client asks
//! for one (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, what `kubectl get` sends),
//! with upstream's columns (`storage/printer.go`): Name, Catalog (the CatalogSource's display
//! name) and Age (the CatalogSource's age, as `kubectl` prints durations).
//!
//! Each row carries the object as `includeObject` asks (`Metadata`, the default: a
//! `PartialObjectMetadata`, which `kubectl get -A` and `--show-labels` read; `Object`; `None`).

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::{PackageManifest, Typed};

/// What each row carries (`?includeObject=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// The object's metadata (the API server's default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the query parameter (`None`, `Metadata`, `Object`; empty: the default).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "" | "Metadata" => Some(Self::Metadata),
            "None" => Some(Self::None),
            "Object" => Some(Self::Object),
            _ => None,
        }
    }
}

/// Go's `duration.HumanDuration` (`k8s.io/apimachinery/pkg/util/duration`): the age kubectl
/// prints, `<invalid>` for a time in the future by more than a second.
#[must_use]
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

fn age(created: Option<Timestamp>, now: Timestamp) -> String {
    created.map_or_else(
        || "<unknown>".to_owned(),
        |t| human_duration(now.as_second() - t.as_second()),
    )
}

fn row(m: &PackageManifest, now: Timestamp, include: IncludeObject) -> Value {
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": m.metadata,
        }),
        IncludeObject::Object => serde_json::to_value(Typed::new(m)).unwrap_or(Value::Null),
    };
    json!({
        "cells": [
            m.metadata.name,
            m.status.catalog_source_display_name,
            age(m.metadata.creation_timestamp, now),
        ],
        "object": object,
    })
}

/// The Table of `items` at `now`, in `meta.k8s.io/<version>` (`v1` or `v1beta1`, as asked).
#[must_use]
pub fn table(items: &[PackageManifest], now: Timestamp, include: IncludeObject, version: &str) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": {},
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names", "priority": 0},
            {"name": "Catalog", "type": "string", "format": "", "description": "The source catalog for this package", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata", "priority": 0},
        ],
        "rows": items.iter().map(|m| row(m, now, include)).collect::<Vec<_>>(),
    })
}
