//! api: one request to the aggregated `packages.operators.coreos.com/v1` API in, its answer out,
//! as upstream's packageserver (a generic Kubernetes API server) answers it.
//!
//! # The rules this module enforces
//!
//! - **OpenAPI**: `/openapi/v2`, `/openapi/v3` and the group-version's v3 document
//!   ([`super::openapi`]), which the aggregator merges into the cluster's.
//! - **Discovery**: `/apis` lists the group, `/apis/packages.operators.coreos.com` the group,
//!   `/apis/packages.operators.coreos.com/v1` the resources: `packagemanifests` (namespaced, kind
//!   `PackageManifest`, verbs `get` and `list`) and `packagemanifests/icon` (verb `get`).
//!   Upstream's storage implements no `Watch`, so discovery lists no `watch` and a
//!   `?watch=true` list is `405 MethodNotSupported`, as the generic API server answers it.
//! - **Reads**: `GET` only (anything else is `405`); list, get and the icon as
//!   [`super`] says; a get of a package the namespace does not see is `404 NotFound`; selectors
//!   that do not parse are `400 BadRequest`, a field selector upstream's storage refuses `500`.
//! - **Views**: an `Accept` asking for `as=Table` (`g=meta.k8s.io`, `v1` or `v1beta1`) gets
//!   [`super::table`], one asking for `as=PartialObjectMetadata` (a get) or
//!   `as=PartialObjectMetadataList` (a list) gets the objects' metadata, as a generic API server
//!   serves metadata-only clients; anything else gets JSON.
//! - **Who may ask**: the shell says whether the caller is authenticated (the aggregator's
//!   front-proxy client certificate); an unauthenticated request for anything but the health
//!   endpoints is `401 Unauthorized`. Authorization is the aggregator's: the API server checks
//!   RBAC before it proxies a request.
//! - **Icons**: a request with `If-None-Match` and a `resourceVersion` parameter is
//!   `304 Not Modified` without a lookup (upstream's cache shortcut); otherwise the default
//!   channel's icon with its ETag, or the default icon.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::{
    DEFAULT_ICON, FieldSelector, GROUP, ICON, IncludeObject, LabelSelector, List, PackageManifest, Query,
    RESOURCE, SINGULAR, Typed, VERSION, icon, table, visible, without_icons,
};

/// The APIService registering the API (`v1.packages.operators.coreos.com`).
pub const API_SERVICE: &str = "v1.packages.operators.coreos.com";
const JSON: &str = "application/json";

/// One HTTP request, as the shell read it.
#[derive(Clone, Debug, Default)]
pub struct Request<'a> {
    /// The method.
    pub method: &'a str,
    /// The path, without the query.
    pub path: &'a str,
    /// The query string, undecoded (empty when none).
    pub query: &'a str,
    /// The `Accept` header.
    pub accept: &'a str,
    /// The `If-None-Match` header.
    pub if_none_match: &'a str,
    /// Whether the caller presented an accepted front-proxy client certificate.
    pub authenticated: bool,
}

/// The answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: String,
    /// `ETag`, when one is sent.
    pub etag: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    fn json(status: u16, value: &Value) -> Self {
        Self {
            status,
            content_type: JSON.to_owned(),
            etag: None,
            body: serde_json::to_vec(value).unwrap_or_default(),
        }
    }
}

/// A `meta.k8s.io/v1` Status of a failure.
fn failure(code: u16, reason: &str, message: &str, details: Option<Value>) -> Reply {
    let mut status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let (Some(details), Some(obj)) = (details, status.as_object_mut()) {
        obj.insert("details".into(), details);
    }
    Reply::json(code, &status)
}

fn not_found_path() -> Reply {
    failure(
        404,
        "NotFound",
        "the server could not find the requested resource",
        Some(json!({})),
    )
}

/// Decodes `%XX` and `+` as Go's `url.ParseQuery` does.
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |c: u8| char::from(c).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of query parameter `key` (the first), decoded.
#[must_use]
pub fn param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (unescape(k) == key).then(|| unescape(v))
    })
}

/// What the `Accept` header asks for first, when it is one of the `meta.k8s.io` views:
/// (`Table`, `PartialObjectMetadata` or `PartialObjectMetadataList`; `v1` or `v1beta1`).
fn asked_view(accept: &str) -> Option<(&'static str, &'static str)> {
    for media in accept.split(',') {
        let mut parts = media.split(';').map(str::trim);
        let kind = parts.next().unwrap_or_default();
        if kind != JSON && kind != "*/*" {
            continue;
        }
        let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        let get = |k: &str| params.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let view = match get("as")? {
            "Table" => "Table",
            "PartialObjectMetadata" => "PartialObjectMetadata",
            "PartialObjectMetadataList" => "PartialObjectMetadataList",
            _ => continue,
        };
        match (get("g"), get("v")) {
            (Some("meta.k8s.io"), Some("v1")) => return Some((view, "v1")),
            (Some("meta.k8s.io"), Some("v1beta1")) => return Some((view, "v1beta1")),
            _ => {}
        }
    }
    None
}

/// `/apis`: the group list.
#[must_use]
pub fn group_list() -> Value {
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [group()]})
}

/// `/apis/packages.operators.coreos.com`: the group.
#[must_use]
pub fn group() -> Value {
    let version = json!({"groupVersion": format!("{GROUP}/{VERSION}"), "version": VERSION});
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [version],
        "preferredVersion": version,
    })
}

/// `/apis/packages.operators.coreos.com/v1`: the resources.
#[must_use]
pub fn resource_list() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [
            {"name": RESOURCE, "singularName": SINGULAR, "namespaced": true, "kind": super::KIND, "verbs": ["get", "list"]},
            {"name": format!("{RESOURCE}/{ICON}"), "singularName": "", "namespaced": true, "kind": super::KIND, "verbs": ["get"]},
        ],
    })
}

/// The APIService registering the API, served through `service` in `namespace` on port 443,
/// trusting `ca_pem` (upstream's packageserver APIService: group priority 2000, version
/// priority 15).
#[must_use]
pub fn api_service(namespace: &str, service: &str, ca_pem: &str) -> Value {
    use base64::Engine as _;
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": API_SERVICE},
        "spec": {
            "group": GROUP,
            "version": VERSION,
            "groupPriorityMinimum": 2000,
            "versionPriority": 15,
            "service": {"namespace": namespace, "name": service, "port": 443},
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
        },
    })
}

enum Target<'a> {
    Health,
    Discovery(Value),
    List(Option<&'a str>),
    Get(&'a str, &'a str),
    Icon(&'a str, &'a str),
}

fn target(path: &str) -> Option<Target<'_>> {
    let path = path.trim_end_matches('/');
    if matches!(path, "/healthz" | "/livez" | "/readyz") {
        return Some(Target::Health);
    }
    if path == "/apis" {
        return Some(Target::Discovery(group_list()));
    }
    if path == "/openapi/v2" {
        return Some(Target::Discovery(super::openapi::v2()));
    }
    if path == "/openapi/v3" {
        return Some(Target::Discovery(super::openapi::v3_index()));
    }
    if path.strip_prefix("/openapi/v3/") == Some(super::openapi::v3_path().as_str()) {
        return Some(Target::Discovery(super::openapi::v3()));
    }
    let rest = path.strip_prefix("/apis/")?.strip_prefix(GROUP)?;
    if rest.is_empty() {
        return Some(Target::Discovery(group()));
    }
    let rest = rest.strip_prefix('/')?.strip_prefix(VERSION)?;
    if rest.is_empty() {
        return Some(Target::Discovery(resource_list()));
    }
    let parts: Vec<&str> = rest.strip_prefix('/')?.split('/').collect();
    match parts.as_slice() {
        [r] if *r == RESOURCE => Some(Target::List(None)),
        ["namespaces", ns, r] if *r == RESOURCE => Some(Target::List(Some(ns))),
        ["namespaces", ns, r, name] if *r == RESOURCE => Some(Target::Get(ns, name)),
        ["namespaces", ns, r, name, sub] if *r == RESOURCE && *sub == ICON => Some(Target::Icon(ns, name)),
        _ => None,
    }
}

/// The answer to `req` from `catalogs` (every served catalog's PackageManifests, icons
/// stripped or not), at `now`; `full` gives the PackageManifest an `icon` request picked with
/// its icons (the shell builds it again from its catalog).
#[must_use]
pub fn respond<'m>(
    req: &Request<'_>,
    catalogs: impl IntoIterator<Item = &'m [PackageManifest]>,
    global_namespace: &str,
    now: Timestamp,
    full: &dyn Fn(&PackageManifest) -> Option<PackageManifest>,
) -> Reply {
    let Some(target) = target(req.path) else {
        return not_found_path();
    };
    if let Target::Health = target {
        return Reply {
            status: 200,
            content_type: "text/plain; charset=utf-8".to_owned(),
            etag: None,
            body: b"ok".to_vec(),
        };
    }
    if !req.authenticated {
        return failure(401, "Unauthorized", "Unauthorized", None);
    }
    if req.method != "GET" {
        return failure(
            405,
            "MethodNotAllowed",
            &format!(
                "{} is not supported on {RESOURCE}.{GROUP}: the API serves get and list only",
                req.method
            ),
            Some(json!({})),
        );
    }
    let details = |name: &str| json!({"name": name, "group": GROUP, "kind": RESOURCE});
    let not_found = |name: &str| {
        failure(
            404,
            "NotFound",
            &format!("{RESOURCE}.{GROUP} \"{name}\" not found"),
            Some(details(name)),
        )
    };
    match target {
        Target::Health => not_found_path(),
        Target::Discovery(doc) => Reply::json(200, &doc),
        Target::List(namespace) => {
            if param(req.query, "watch").is_some_and(|w| w == "true" || w == "1") {
                return failure(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                    Some(json!({"group": GROUP, "kind": RESOURCE})),
                );
            }
            let labels = match LabelSelector::parse(&param(req.query, "labelSelector").unwrap_or_default()) {
                Ok(l) => l,
                Err(e) => return failure(400, "BadRequest", &e.to_string(), None),
            };
            let name = match FieldSelector::parse(&param(req.query, "fieldSelector").unwrap_or_default()) {
                Ok(f) => f.name,
                Err(e @ super::SelectorError::Unsupported(_)) => {
                    return failure(500, "InternalError", &e.to_string(), None);
                }
                Err(e) => return failure(400, "BadRequest", &e.to_string(), None),
            };
            let query = Query {
                namespace,
                labels,
                name,
            };
            let items: Vec<PackageManifest> = visible(catalogs, global_namespace, &query)
                .into_iter()
                .map(without_icons)
                .collect();
            answer(req, &items, None, now)
        }
        Target::Get(namespace, name) => {
            let query = Query {
                namespace: Some(namespace),
                labels: LabelSelector::default(),
                name: Some(name.to_owned()),
            };
            match visible(catalogs, global_namespace, &query).into_iter().next() {
                Some(m) => answer(req, &[without_icons(m)], Some(()), now),
                None => not_found(name),
            }
        }
        Target::Icon(namespace, name) => {
            if !req.if_none_match.is_empty()
                && param(req.query, "resourceVersion").is_some_and(|v| !v.is_empty())
            {
                return Reply {
                    status: 304,
                    content_type: String::new(),
                    etag: None,
                    body: Vec::new(),
                };
            }
            let query = Query {
                namespace: Some(namespace),
                labels: LabelSelector::default(),
                name: Some(name.to_owned()),
            };
            let Some(m) = visible(catalogs, global_namespace, &query).into_iter().next() else {
                // Upstream answers a bare 404 here (no Status body).
                return Reply {
                    status: 404,
                    content_type: String::new(),
                    etag: None,
                    body: Vec::new(),
                };
            };
            let m = full(&m).unwrap_or(m);
            let (body, content_type, etag) = icon(&m).unwrap_or_else(|| {
                (
                    DEFAULT_ICON.as_bytes().to_vec(),
                    "image/svg+xml".to_owned(),
                    String::new(),
                )
            });
            Reply {
                status: 200,
                content_type,
                etag: Some(etag),
                body,
            }
        }
    }
}

/// A list (or, with `single`, one object) as JSON, as the Table asked for, or as
/// `PartialObjectMetadata(List)` (what metadata-only clients ask for).
fn answer(req: &Request<'_>, items: &[PackageManifest], single: Option<()>, now: Timestamp) -> Reply {
    let partial = |m: &PackageManifest, version: &str| json!({"kind": "PartialObjectMetadata", "apiVersion": format!("meta.k8s.io/{version}"), "metadata": m.metadata});
    match asked_view(req.accept) {
        Some(("Table", version)) => {
            let Some(include) = IncludeObject::parse(&param(req.query, "includeObject").unwrap_or_default())
            else {
                return failure(
                    400,
                    "BadRequest",
                    "includeObject must be None, Metadata or Object",
                    None,
                );
            };
            return Reply::json(200, &table(items, now, include, version));
        }
        Some(("PartialObjectMetadata", version)) if single.is_some() => {
            if let Some(m) = items.first() {
                return Reply::json(200, &partial(m, version));
            }
        }
        Some(("PartialObjectMetadataList", version)) if single.is_none() => {
            let items: Vec<Value> = items.iter().map(|m| partial(m, version)).collect();
            return Reply::json(
                200,
                &json!({"kind": "PartialObjectMetadataList", "apiVersion": format!("meta.k8s.io/{version}"), "metadata": {}, "items": items}),
            );
        }
        _ => {}
    }
    let value = match (single, items.first()) {
        (Some(()), Some(m)) => serde_json::to_value(Typed::new(m)),
        _ => serde_json::to_value(List::new(items)),
    };
    Reply::json(200, &value.unwrap_or(Value::Null))
}
