//! package_manifest: the `packages.operators.coreos.com/v1` `PackageManifest` objects of the
//! catalogs the controller holds, as upstream's packageserver builds and serves them
//! (`pkg/package-server/provider/registry.go`, `storage/reststorage.go`, `storage/printer.go`,
//! `apis/operators/packagemanifest.go`).
//!
//! # The rules this module enforces
//!
//! **One PackageManifest per package of each served CatalogSource** ([`manifests`]), named after
//! the package, in the CatalogSource's namespace, created when the CatalogSource was:
//! - `labels`: the CatalogSource's own labels, then `catalog` (its name) and `catalog-namespace`,
//!   then `provider` and `provider-url` (the provider of the default channel's head CSV), then
//!   every label of that CSV, then `operatorframework.io/os.linux: supported` unless a label
//!   starts with `operatorframework.io/os`, and `operatorframework.io/arch.amd64: supported`
//!   unless one starts with `operatorframework.io/arch`;
//! - `status`: the CatalogSource's name, `spec.displayName`, `spec.publisher` and namespace, the
//!   package name, its default channel, its deprecation (`olm.deprecations`), the provider, and
//!   the channels **sorted by name**, each with `currentCSV` (its head), `currentCSVDesc` (the
//!   head CSV's description fields, its CRD and APIService descriptions cut to name, group,
//!   version, kind, display name and description; `relatedImages` the deployment and related
//!   images of the CSV, sorted here where upstream's order is a Go map's), its deprecation, and
//!   `entries`: every bundle of the channel but the legacy-deprecated ones (`olm.deprecated`),
//!   with its version as written and its deprecation, **highest version first**;
//! - a channel whose head has no CSV (neither inlined nor `olm.csv.metadata`) is left out, as
//!   upstream leaves out a channel whose head it cannot read; when that is the default channel,
//!   the first channel left becomes the default; a package with no channel left is not served.
//!
//! **Who sees what** ([`visible`]): a request for namespace N lists the packages of N's
//! CatalogSources, then those of the global catalog namespace's, each with `metadata.namespace`
//! N (clients reject objects of another namespace); a cluster-wide request lists every package in
//! its CatalogSource's namespace. The same package in two catalogs is two objects of one name, as
//! upstream; a `get` answers the first, so a namespace's own catalog wins over the global one.
//!
//! **Selectors**: label selectors as Kubernetes parses them ([`selector::LabelSelector`]); the
//! only field selector is `metadata.name` (`=`/`==`), as upstream's `nameFor`.
//!
//! **What is served**: icons are stripped from `get` and `list` answers ([`without_icons`]);
//! only the `icon` subresource serves the default channel's first icon ([`icon`]). Tables have
//! upstream's columns, Name, Catalog (the catalog's display name) and Age ([`table`]).
//!
//! Pure: catalogs, CatalogSource facts and the time in, values out.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

use crate::catalog::model::{Bundle, Channel, Model, Package};

pub mod api;
pub mod openapi;
pub mod selector;
pub mod table;

pub use selector::{FieldSelector, LabelSelector, SelectorError};
pub use table::{IncludeObject, table};

/// The API group.
pub const GROUP: &str = "packages.operators.coreos.com";
/// The version served.
pub const VERSION: &str = "v1";
/// `apiVersion` of the objects.
pub const API_VERSION: &str = "packages.operators.coreos.com/v1";
/// The kind.
pub const KIND: &str = "PackageManifest";
/// The kind of a list.
pub const LIST_KIND: &str = "PackageManifestList";
/// The resource (plural).
pub const RESOURCE: &str = "packagemanifests";
/// The singular name.
pub const SINGULAR: &str = "packagemanifest";
/// The icon subresource.
pub const ICON: &str = "icon";
/// The label naming the catalog.
pub const CATALOG_LABEL: &str = "catalog";
/// The label naming the catalog's namespace.
pub const CATALOG_NAMESPACE_LABEL: &str = "catalog-namespace";
/// Prefix of the OS labels.
pub const OS_LABEL_PREFIX: &str = "operatorframework.io/os";
/// Prefix of the architecture labels.
pub const ARCH_LABEL_PREFIX: &str = "operatorframework.io/arch";
/// The OS label a package gets when none says otherwise.
pub const DEFAULT_OS_LABEL: &str = "operatorframework.io/os.linux";
/// The architecture label a package gets when none says otherwise.
pub const DEFAULT_ARCH_LABEL: &str = "operatorframework.io/arch.amd64";
/// The value of both.
pub const SUPPORTED: &str = "supported";

/// What a PackageManifest takes from its CatalogSource.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Source {
    /// The CatalogSource's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `spec.displayName`.
    pub display_name: String,
    /// `spec.publisher`.
    pub publisher: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its `metadata.creationTimestamp`.
    pub created: Option<Timestamp>,
}

/// `metadata` of a PackageManifest (Go's `ObjectMeta` field order).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Meta {
    /// The package name.
    pub name: String,
    /// The CatalogSource's namespace, or the namespace asked for.
    pub namespace: String,
    /// The CatalogSource's creation time (`null` when unknown, as Go writes a zero time).
    #[serde(rename = "creationTimestamp", serialize_with = "rfc3339")]
    pub creation_timestamp: Option<Timestamp>,
    /// See the module docs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

fn rfc3339<S: serde::Serializer>(time: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
    match time {
        // Go's metav1.Time: RFC 3339 to the second, UTC.
        Some(t) => s.serialize_str(&t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        None => s.serialize_none(),
    }
}

/// A `PackageManifest` (without `apiVersion`/`kind`: list items carry none, and a `get` answer
/// adds them, see [`Typed`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PackageManifest {
    /// Name, namespace, creation time, labels.
    pub metadata: Meta,
    /// Always `{}`.
    pub spec: Empty,
    /// See the module docs.
    pub status: Status,
}

/// An empty object (`spec: {}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Empty {}

/// A PackageManifest with its `apiVersion` and `kind`, as a `get` answers it.
#[derive(Serialize)]
pub struct Typed<'a> {
    /// [`KIND`].
    pub kind: &'static str,
    /// [`API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    /// The object.
    #[serde(flatten)]
    pub manifest: &'a PackageManifest,
}

impl<'a> Typed<'a> {
    /// `manifest` with its type.
    #[must_use]
    pub fn new(manifest: &'a PackageManifest) -> Self {
        Self {
            kind: KIND,
            api_version: API_VERSION,
            manifest,
        }
    }
}

/// A `PackageManifestList`.
#[derive(Serialize)]
pub struct List<'a> {
    /// [`LIST_KIND`].
    pub kind: &'static str,
    /// [`API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    /// Always `{}`: the list has no resource version, as upstream's.
    pub metadata: Empty,
    /// The items.
    pub items: &'a [PackageManifest],
}

impl<'a> List<'a> {
    /// A list of `items`.
    #[must_use]
    pub fn new(items: &'a [PackageManifest]) -> Self {
        Self {
            kind: LIST_KIND,
            api_version: API_VERSION,
            metadata: Empty {},
            items,
        }
    }
}

/// `status` (Go's field order).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The CatalogSource's name.
    pub catalog_source: String,
    /// Its `spec.displayName`.
    pub catalog_source_display_name: String,
    /// Its `spec.publisher`.
    pub catalog_source_publisher: String,
    /// Its namespace.
    pub catalog_source_namespace: String,
    /// The provider of the default channel's head.
    pub provider: AppLink,
    /// The package name.
    pub package_name: String,
    /// The package's deprecation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    /// The channels, sorted by name.
    pub channels: Vec<PackageChannel>,
    /// The default channel.
    pub default_channel: String,
}

/// A deprecation message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Deprecation {
    /// The message.
    pub message: String,
}

/// A name and a URL (both left out when empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AppLink {
    /// The name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The URL.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// A maintainer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Maintainer {
    /// The name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The e-mail address.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub email: String,
}

/// An icon.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Icon {
    /// The image, base64.
    #[serde(rename = "base64data", skip_serializing_if = "String::is_empty")]
    pub base64_data: String,
    /// Its media type.
    #[serde(rename = "mediatype", skip_serializing_if = "String::is_empty")]
    pub media_type: String,
}

/// One channel.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageChannel {
    /// The channel name.
    pub name: String,
    /// Its head.
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
    /// The head CSV's description.
    #[serde(rename = "currentCSVDesc")]
    pub current_csv_desc: CsvDescription,
    /// The channel's deprecation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    /// Every bundle but the legacy-deprecated ones, highest version first (`null` when none,
    /// as Go writes a nil slice).
    pub entries: Option<Vec<ChannelEntry>>,
}

/// One entry of a channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChannelEntry {
    /// The bundle name.
    pub name: String,
    /// Its version, as written.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Its deprecation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
}

/// `CustomResourceDefinitions` / `APIServiceDefinitions`: owned and required descriptions.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Definitions {
    /// Owned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<Value>,
    /// Required.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<Value>,
}

/// `currentCSVDesc` (Go's field order and omissions).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvDescription {
    /// `spec.displayName`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// `spec.icon` (stripped from `get` and `list` answers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub icon: Vec<Icon>,
    /// `spec.version` (`0.0.0` when absent, as Go's zero semver prints).
    pub version: String,
    /// `spec.provider`.
    pub provider: AppLink,
    /// `metadata.annotations`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// `spec.keywords`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// `spec.links`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<AppLink>,
    /// `spec.maintainers`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// `spec.maturity`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub maturity: String,
    /// `spec.description`.
    #[serde(rename = "description", skip_serializing_if = "String::is_empty")]
    pub long_description: String,
    /// `spec.installModes`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub install_modes: Vec<Value>,
    /// `spec.customresourcedefinitions`, cut down.
    #[serde(rename = "customresourcedefinitions")]
    pub custom_resource_definitions: Definitions,
    /// `spec.apiservicedefinitions`, cut down.
    #[serde(rename = "apiservicedefinitions")]
    pub api_service_definitions: Definitions,
    /// `spec.nativeAPIs`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub native_apis: Vec<Value>,
    /// `spec.minKubeVersion`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub min_kube_version: String,
    /// Deployment images and `spec.relatedImages`, sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related_images: Vec<String>,
}

/// A field as Go's `encoding/json` finds it for upstream's typed CSV
/// ([`crate::catalog::property::go_json_field`]).
fn go_field<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    crate::catalog::property::go_json_field(value.as_object()?, key)
}

fn text(value: &Value, path: &[&str]) -> String {
    let mut at = value;
    for key in path {
        match go_field(at, key) {
            Some(next) => at = next,
            None => return String::new(),
        }
    }
    at.as_str().unwrap_or_default().to_owned()
}

fn array<'v>(value: &'v Value, path: &[&str]) -> &'v [Value] {
    let mut at = value;
    for key in path {
        match go_field(at, key) {
            Some(next) => at = next,
            None => return &[],
        }
    }
    at.as_array().map_or(&[], Vec::as_slice)
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn app_link(value: &Value) -> AppLink {
    AppLink {
        name: text(value, &["name"]),
        url: text(value, &["url"]),
    }
}

/// Keeps only the listed keys of each description (upstream's `descriptionsForCRDs` and
/// `descriptionsForAPIServices`); the always-written keys become `""` when absent.
fn cut(list: &[Value], always: &[&str], optional: &[&str]) -> Vec<Value> {
    list.iter()
        .map(|d| {
            let mut out = serde_json::Map::new();
            for key in always {
                out.insert((*key).to_owned(), Value::String(text(d, &[key])));
            }
            for key in optional {
                let v = text(d, &[key]);
                if !v.is_empty() {
                    out.insert((*key).to_owned(), Value::String(v));
                }
            }
            Value::Object(out)
        })
        .collect()
}

/// The version as Go's `OperatorVersion` prints it: parsed tolerantly (a leading `v`, missing
/// minor or patch), `0.0.0` when absent; a version that does not parse is kept as written.
fn operator_version(raw: &str) -> String {
    if raw.is_empty() {
        return "0.0.0".to_owned();
    }
    let trimmed = raw.trim().trim_start_matches('v');
    if let Ok(v) = semver::Version::parse(trimmed) {
        return v.to_string();
    }
    let (core, rest) = trimmed
        .find(['-', '+'])
        .map_or((trimmed, ""), |i| trimmed.split_at(i));
    let mut parts: Vec<&str> = core.split('.').collect();
    while parts.len() < 3 {
        parts.push("0");
    }
    semver::Version::parse(&format!("{}{rest}", parts.join(".")))
        .map_or_else(|_| raw.to_owned(), |v| v.to_string())
}

/// The images of a CSV: its Deployments' containers and init containers (strategy
/// `deployment` only) and `spec.relatedImages`, sorted and without duplicates.
fn images(csv: &Value) -> Vec<String> {
    let mut set = std::collections::BTreeSet::new();
    if text(csv, &["spec", "install", "strategy"]) == "deployment" {
        for d in array(csv, &["spec", "install", "spec", "deployments"]) {
            for key in ["containers", "initContainers"] {
                for c in array(d, &["spec", "template", "spec", key]) {
                    set.insert(text(c, &["image"]));
                }
            }
        }
    }
    for r in array(csv, &["spec", "relatedImages"]) {
        set.insert(text(r, &["image"]));
    }
    set.into_iter().collect()
}

/// `currentCSVDesc` of a CSV (upstream's `CreateCSVDescription`).
#[must_use]
pub fn csv_description(csv: &Value) -> CsvDescription {
    let spec = csv.get("spec").unwrap_or(&Value::Null);
    let crd = |key: &str| {
        cut(
            array(spec, &["customresourcedefinitions", key]),
            &["name", "version", "kind"],
            &["displayName", "description"],
        )
    };
    let api = |key: &str| {
        cut(
            array(spec, &["apiservicedefinitions", key]),
            &["name", "group", "version", "kind"],
            &["displayName", "description"],
        )
    };
    CsvDescription {
        display_name: text(spec, &["displayName"]),
        icon: array(spec, &["icon"])
            .iter()
            .map(|i| Icon {
                base64_data: text(i, &["base64data"]),
                media_type: text(i, &["mediatype"]),
            })
            .collect(),
        version: operator_version(&text(spec, &["version"])),
        provider: app_link(spec.get("provider").unwrap_or(&Value::Null)),
        annotations: string_map(csv.get("metadata").and_then(|m| m.get("annotations"))),
        keywords: array(spec, &["keywords"])
            .iter()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect(),
        links: array(spec, &["links"]).iter().map(app_link).collect(),
        maintainers: array(spec, &["maintainers"])
            .iter()
            .map(|m| Maintainer {
                name: text(m, &["name"]),
                email: text(m, &["email"]),
            })
            .collect(),
        maturity: text(spec, &["maturity"]),
        long_description: text(spec, &["description"]),
        install_modes: array(spec, &["installModes"])
            .iter()
            .map(|m| {
                serde_json::json!({
                    "type": text(m, &["type"]),
                    "supported": m.get("supported").and_then(Value::as_bool).unwrap_or(false),
                })
            })
            .collect(),
        custom_resource_definitions: Definitions {
            owned: crd("owned"),
            required: crd("required"),
        },
        api_service_definitions: Definitions {
            owned: api("owned"),
            required: api("required"),
        },
        native_apis: array(spec, &["nativeAPIs"])
            .iter()
            .map(|g| {
                serde_json::json!({
                    "group": text(g, &["group"]),
                    "version": text(g, &["version"]),
                    "kind": text(g, &["kind"]),
                })
            })
            .collect(),
        min_kube_version: text(spec, &["minKubeVersion"]),
        related_images: images(csv),
    }
}

/// Reads the CSV a channel head serves (its inlined CSV, or the one built from its
/// `olm.csv.metadata`, as the registry API answers `GetBundleForChannel`); `None` when there
/// is none. The shell passes the registry's conversion.
pub type CsvOf<'a> = &'a dyn Fn(&Package, &Channel, &Bundle) -> Option<Value>;

fn entries(package: &Package, channel: &Channel) -> Option<Vec<ChannelEntry>> {
    let mut out: Vec<(semver::Version, ChannelEntry)> = channel
        .entries
        .iter()
        .filter_map(|e| {
            let bundle = package.bundle(&e.name)?;
            if bundle.is_legacy_deprecated() {
                return None;
            }
            let version = bundle
                .properties
                .packages
                .first()
                .map_or_else(|| bundle.version.to_string(), |p| p.version.clone());
            let parsed = semver::Version::parse(&version).unwrap_or(semver::Version::new(0, 0, 0));
            Some((
                parsed,
                ChannelEntry {
                    name: bundle.name.clone(),
                    version,
                    deprecation: deprecation(package.bundle_deprecation(&bundle.name)),
                },
            ))
        })
        .collect();
    // Highest first; equal versions keep the channel's order.
    out.sort_by(|a, b| b.0.cmp(&a.0));
    (!out.is_empty()).then(|| out.into_iter().map(|(_, e)| e).collect())
}

fn deprecation(message: Option<&str>) -> Option<Deprecation> {
    message.map(|m| Deprecation {
        message: m.to_owned(),
    })
}

/// The PackageManifest of `package` served by `source`, or `None` when none of its channels
/// has a readable head (see the module docs).
#[must_use]
pub fn manifest(source: &Source, package: &Package, csv_of: CsvOf<'_>) -> Option<PackageManifest> {
    let mut labels = source.labels.clone();
    labels.insert(CATALOG_LABEL.to_owned(), source.name.clone());
    labels.insert(CATALOG_NAMESPACE_LABEL.to_owned(), source.namespace.clone());
    let mut status = Status {
        catalog_source: source.name.clone(),
        catalog_source_display_name: source.display_name.clone(),
        catalog_source_publisher: source.publisher.clone(),
        catalog_source_namespace: source.namespace.clone(),
        package_name: package.name.clone(),
        default_channel: package.default_channel.clone(),
        deprecation: deprecation(package.deprecation_message()),
        ..Status::default()
    };
    let mut channels: Vec<&Channel> = package.channels().iter().collect();
    channels.sort_by(|a, b| a.name.cmp(&b.name));
    let (mut provider_set, mut default_elided) = (false, false);
    let mut default_csv: Option<Value> = None;
    for channel in channels {
        let is_default = channel.name == status.default_channel;
        let csv = channel
            .head()
            .and_then(|head| package.bundle(head))
            .and_then(|bundle| csv_of(package, channel, bundle));
        let Some(csv) = csv else {
            default_elided |= is_default;
            continue;
        };
        let desc = csv_description(&csv);
        if !provider_set || (!status.default_channel.is_empty() && is_default) {
            status.provider = desc.provider.clone();
            labels.insert("provider".to_owned(), status.provider.name.clone());
            labels.insert("provider-url".to_owned(), status.provider.url.clone());
            provider_set = true;
        }
        status.channels.push(PackageChannel {
            name: channel.name.clone(),
            current_csv: text(&csv, &["metadata", "name"]),
            current_csv_desc: desc,
            deprecation: deprecation(package.channel_deprecation(&channel.name)),
            entries: entries(package, channel),
        });
        if default_csv.is_none() || is_default {
            default_csv = Some(csv);
        }
    }
    let first = status.channels.first()?.name.clone();
    if default_elided {
        status.default_channel = first;
    }
    if let Some(csv) = &default_csv {
        labels.extend(string_map(csv.get("metadata").and_then(|m| m.get("labels"))));
    }
    if !labels.keys().any(|k| k.starts_with(OS_LABEL_PREFIX)) {
        labels.insert(DEFAULT_OS_LABEL.to_owned(), SUPPORTED.to_owned());
    }
    if !labels.keys().any(|k| k.starts_with(ARCH_LABEL_PREFIX)) {
        labels.insert(DEFAULT_ARCH_LABEL.to_owned(), SUPPORTED.to_owned());
    }
    Some(PackageManifest {
        metadata: Meta {
            name: package.name.clone(),
            namespace: source.namespace.clone(),
            creation_timestamp: source.created,
            labels,
        },
        spec: Empty {},
        status,
    })
}

/// Every PackageManifest of a catalog, sorted by package name.
#[must_use]
pub fn manifests(source: &Source, model: &Model, csv_of: CsvOf<'_>) -> Vec<PackageManifest> {
    let mut out: Vec<PackageManifest> = model
        .packages()
        .filter_map(|p| manifest(source, p, csv_of))
        .collect();
    out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    out
}

/// `manifest` without its icons, as `get` and `list` answer it.
#[must_use]
pub fn without_icons(mut manifest: PackageManifest) -> PackageManifest {
    for channel in &mut manifest.status.channels {
        channel.current_csv_desc.icon.clear();
    }
    manifest
}

/// What a request asks for.
#[derive(Clone, Debug, Default)]
pub struct Query<'a> {
    /// The namespace of the request; `None` for every namespace.
    pub namespace: Option<&'a str>,
    /// The label selector.
    pub labels: LabelSelector,
    /// The field selector's name.
    pub name: Option<String>,
}

/// The PackageManifests `query` sees among `catalogs` (each catalog's manifests), icons kept
/// (see the module docs for the order and the namespaces).
#[must_use]
pub fn visible<'m>(
    catalogs: impl IntoIterator<Item = &'m [PackageManifest]>,
    global_namespace: &str,
    query: &Query<'_>,
) -> Vec<PackageManifest> {
    // (global catalog: own namespace first, name, catalog namespace, catalog) orders the items.
    let mut found: Vec<(bool, &PackageManifest)> = Vec::new();
    for manifests in catalogs {
        for m in manifests {
            let ns = m.status.catalog_source_namespace.as_str();
            let own = match query.namespace {
                None => true,
                Some(asked) if asked == ns => true,
                Some(_) if ns == global_namespace => false,
                Some(_) => continue,
            };
            if !query.labels.matches(&m.metadata.labels) {
                continue;
            }
            if query.name.as_ref().is_some_and(|n| *n != m.metadata.name) {
                continue;
            }
            found.push((!own, m));
        }
    }
    found.sort_by(|(ga, a), (gb, b)| {
        (
            &a.metadata.name,
            ga,
            &a.status.catalog_source_namespace,
            &a.status.catalog_source,
        )
            .cmp(&(
                &b.metadata.name,
                gb,
                &b.status.catalog_source_namespace,
                &b.status.catalog_source,
            ))
    });
    found
        .into_iter()
        .map(|(_, m)| {
            let mut m = m.clone();
            if let Some(ns) = query.namespace {
                ns.clone_into(&mut m.metadata.namespace);
            }
            m
        })
        .collect()
}

/// The icon the `icon` subresource serves: the default channel's head's first icon (decoded,
/// its media type, and the ETag `"<package>.<channel>.<csv>"`), or `None` for the default icon.
#[must_use]
pub fn icon(manifest: &PackageManifest) -> Option<(Vec<u8>, String, String)> {
    use base64::Engine as _;
    let channel = manifest
        .status
        .channels
        .iter()
        .find(|c| c.name == manifest.status.default_channel)?;
    let first = channel.current_csv_desc.icon.first()?;
    // Go's base64 decoder stops at the first bad byte and keeps what it read; whitespace
    // (line breaks in YAML) is skipped by both.
    let clean: String = first.base64_data.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(clean.as_bytes())
        .unwrap_or_default();
    let etag = format!(
        "\"{}.{}.{}\"",
        manifest.metadata.name, channel.name, channel.current_csv
    );
    Some((bytes, first.media_type.clone(), etag))
}

/// The icon served when a package has none (our own drawing: upstream's is its asset).
pub const DEFAULT_ICON: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><circle cx="32" cy="32" r="28" fill="none" stroke="#8d8d8f" stroke-width="4"/><path d="M22 34h10l-4 14 14-20H32l4-14z" fill="#8d8d8f"/></svg>
"##;

#[cfg(test)]
mod tests;
