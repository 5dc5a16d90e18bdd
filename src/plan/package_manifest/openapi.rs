//! openapi: the OpenAPI documents of `packages.operators.coreos.com/v1`, which the API server's
//! aggregator downloads from every APIService (`/openapi/v2`, and `/openapi/v3` with one document
//! per group-version) and merges into the cluster's own, so that `kubectl explain
//! packagemanifests` works and the aggregator does not retry a missing spec.
//!
//! The rule: each schema carries `x-kubernetes-group-version-kind` (what `kubectl explain` looks
//! up), is named as upstream's generated one
//! (`com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.*`),
//! and is self-contained (the v3 document of a group-version may refer to nothing outside it), so
//! `metadata` is described, not referenced. The operations are the two the API serves (list and
//! get; the icon subresource is a GET answering an image).

use serde_json::{Value, json};

use super::{GROUP, KIND, LIST_KIND, RESOURCE, VERSION};

const PREFIX: &str =
    "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1";

fn gvk(kind: &str) -> Value {
    json!([{"group": GROUP, "version": VERSION, "kind": kind}])
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

/// The PackageManifest schema, with `$ref`s under `prefix` (`#/definitions/` or
/// `#/components/schemas/`).
fn schemas(prefix: &str) -> Value {
    let name = |n: &str| format!("{PREFIX}.{n}");
    let r = |n: &str| json!({"$ref": format!("{prefix}{}", name(n))});
    let app_link = json!({"type": "object", "description": "AppLink defines a link to an application", "properties": {"name": {"type": "string"}, "url": {"type": "string"}}});
    let deprecation = json!({"type": "object", "description": "Deprecation conveys information regarding a deprecated resource.", "required": ["message"], "properties": {"message": string("Message is a human readable message describing the deprecation.")}});
    let metadata = json!({"type": "object", "description": "Standard object's metadata: the package name, the namespace asked for (or the CatalogSource's), the CatalogSource's creation time, and the labels catalog, catalog-namespace, provider, provider-url and the default channel head CSV's."});
    let mut out = serde_json::Map::new();
    out.insert(name("PackageManifest"), json!({
        "type": "object",
        "description": "PackageManifest holds information about a package, which is a reference to one (or more) channels under a single package.",
        "properties": {
            "apiVersion": string("APIVersion defines the versioned schema of this representation of an object."),
            "kind": string("Kind is a string value representing the REST resource this object represents."),
            "metadata": metadata,
            "spec": {"type": "object", "description": "PackageManifestSpec defines the desired state of PackageManifest (always empty)."},
            "status": r("PackageManifestStatus"),
        },
        "x-kubernetes-group-version-kind": gvk(KIND),
    }));
    out.insert(name("PackageManifestList"), json!({
        "type": "object",
        "description": "PackageManifestList is a list of PackageManifest objects.",
        "required": ["items"],
        "properties": {
            "apiVersion": string("APIVersion defines the versioned schema of this representation of an object."),
            "kind": string("Kind is a string value representing the REST resource this object represents."),
            "metadata": {"type": "object", "description": "Standard list metadata."},
            "items": {"type": "array", "items": r("PackageManifest")},
        },
        "x-kubernetes-group-version-kind": gvk(LIST_KIND),
    }));
    out.insert(name("PackageManifestStatus"), json!({
        "type": "object",
        "description": "PackageManifestStatus represents the current status of the PackageManifest",
        "required": ["catalogSource", "catalogSourceDisplayName", "catalogSourcePublisher", "catalogSourceNamespace", "packageName", "channels", "defaultChannel"],
        "properties": {
            "catalogSource": string("CatalogSource is the name of the CatalogSource this package belongs to"),
            "catalogSourceDisplayName": {"type": "string"},
            "catalogSourcePublisher": {"type": "string"},
            "catalogSourceNamespace": string("CatalogSourceNamespace is the namespace of the owning CatalogSource"),
            "provider": {"description": "Provider is the provider of the PackageManifest's default CSV", "allOf": [r("AppLink")]},
            "packageName": string("PackageName is the name of the overall package, ala `etcd`."),
            "deprecation": {"description": "Deprecation is an optional field which contains information if the package is deprecated.", "allOf": [r("Deprecation")]},
            "channels": {"type": "array", "description": "Channels are the declared channels for the package, ala `stable` or `alpha`.", "items": r("PackageChannel")},
            "defaultChannel": string("DefaultChannel is, if specified, the name of the default channel for the package. The default channel will be installed if no other channel is explicitly given. If the package has a single channel, then that channel is implicitly the default."),
        },
    }));
    out.insert(name("PackageChannel"), json!({
        "type": "object",
        "description": "PackageChannel defines a single channel under a package, pointing to a version of that package.",
        "required": ["name", "currentCSV", "entries"],
        "properties": {
            "name": string("Name is the name of the channel, e.g. `alpha` or `stable`"),
            "currentCSV": string("CurrentCSV defines a reference to the CSV holding the version of this package currently for the channel."),
            "currentCSVDesc": {"description": "CurrentCSVSpec holds the spec of the current CSV", "allOf": [r("CSVDescription")]},
            "deprecation": {"description": "Deprecation is an optional field which contains information if the channel is deprecated.", "allOf": [r("Deprecation")]},
            "entries": {"type": "array", "description": "Entries lists all CSVs in the channel, with their upgrade edges.", "items": r("ChannelEntry")},
        },
    }));
    out.insert(name("ChannelEntry"), json!({
        "type": "object",
        "description": "ChannelEntry defines a member of a package channel.",
        "required": ["name"],
        "properties": {
            "name": string("Name is the name of the bundle for this entry."),
            "version": string("Version is the version of the bundle for this entry."),
            "deprecation": {"description": "Deprecation is an optional field which contains information if the channel entry is deprecated.", "allOf": [r("Deprecation")]},
        },
    }));
    out.insert(name("CSVDescription"), json!({
        "type": "object",
        "description": "CSVDescription defines a description of a CSV",
        "properties": {
            "displayName": string("DisplayName is the CSV's display name"),
            "icon": {"type": "array", "description": "Icon is the CSV's base64 encoded icon", "items": {"type": "object", "properties": {"base64data": {"type": "string"}, "mediatype": {"type": "string"}}}},
            "version": string("Version is the CSV's semantic version"),
            "provider": {"description": "Provider is the CSV's provider", "allOf": [r("AppLink")]},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "keywords": {"type": "array", "items": {"type": "string"}},
            "links": {"type": "array", "items": r("AppLink")},
            "maintainers": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"}}}},
            "maturity": {"type": "string"},
            "description": string("LongDescription is the CSV's description"),
            "installModes": {"type": "array", "description": "InstallModes specify supported installation types", "items": {"type": "object", "required": ["type", "supported"], "properties": {"type": {"type": "string"}, "supported": {"type": "boolean"}}}},
            "customresourcedefinitions": {"type": "object", "description": "The owned and required CRDs (name, version, kind, display name, description)."},
            "apiservicedefinitions": {"type": "object", "description": "The owned and required APIServices (name, group, version, kind, display name, description)."},
            "nativeApis": {"type": "array", "items": {"type": "object", "properties": {"group": {"type": "string"}, "version": {"type": "string"}, "kind": {"type": "string"}}}},
            "minKubeVersion": string("Minimum Kubernetes version for operator installation"),
            "relatedImages": {"type": "array", "description": "List of related images", "items": {"type": "string"}},
        },
    }));
    out.insert(name("AppLink"), app_link);
    out.insert(name("Deprecation"), deprecation);
    Value::Object(out)
}

fn operations(prefix: &str, content: bool) -> Value {
    let schema = |n: &str| json!({"$ref": format!("{prefix}{PREFIX}.{n}")});
    let ok = |n: &str| {
        if content {
            json!({"200": {"description": "OK", "content": {"application/json": {"schema": schema(n)}}}})
        } else {
            json!({"200": {"description": "OK", "schema": schema(n)}})
        }
    };
    let param = |name: &str| {
        if content {
            json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
        } else {
            json!({"name": name, "in": "path", "required": true, "type": "string"})
        }
    };
    let gvk = json!({"group": GROUP, "version": VERSION, "kind": KIND});
    let base = format!("/apis/{GROUP}/{VERSION}");
    json!({
        format!("{base}/{RESOURCE}"): {"get": {
            "description": "list objects of kind PackageManifest", "operationId": "listPackagesV1PackageManifestForAllNamespaces",
            "responses": ok("PackageManifestList"), "x-kubernetes-action": "list", "x-kubernetes-group-version-kind": gvk,
        }},
        format!("{base}/namespaces/{{namespace}}/{RESOURCE}"): {
            "get": {
                "description": "list objects of kind PackageManifest", "operationId": "listPackagesV1NamespacedPackageManifest",
                "responses": ok("PackageManifestList"), "x-kubernetes-action": "list", "x-kubernetes-group-version-kind": gvk,
            },
            "parameters": [param("namespace")],
        },
        format!("{base}/namespaces/{{namespace}}/{RESOURCE}/{{name}}"): {
            "get": {
                "description": "read the specified PackageManifest", "operationId": "readPackagesV1NamespacedPackageManifest",
                "responses": ok("PackageManifest"), "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk,
            },
            "parameters": [param("name"), param("namespace")],
        },
    })
}

/// `/openapi/v2`: Swagger 2.0.
#[must_use]
pub fn v2() -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": "olm-rs package server", "version": VERSION},
        "paths": operations("#/definitions/", false),
        "definitions": schemas("#/definitions/"),
    })
}

/// The path of the group-version's v3 document, relative to `/openapi/v3/`.
#[must_use]
pub fn v3_path() -> String {
    format!("apis/{GROUP}/{VERSION}")
}

/// `/openapi/v3`: the index naming the group-version's document (its `hash` changes when the
/// document does, as clients cache by it).
#[must_use]
pub fn v3_index() -> Value {
    let hash = crate::plan::hash_json(&v3());
    json!({"paths": {v3_path(): {"serverRelativeURL": format!("/openapi/v3/{}?hash={hash:016X}", v3_path())}}})
}

/// `/openapi/v3/apis/packages.operators.coreos.com/v1`: OpenAPI 3.0.
#[must_use]
pub fn v3() -> Value {
    json!({
        "openapi": "3.0.0",
        "info": {"title": "olm-rs package server", "version": VERSION},
        "paths": operations("#/components/schemas/", true),
        "components": {"schemas": schemas("#/components/schemas/")},
    })
}
