//! convert: the catalog model to registry messages (server side) and registry messages back to
//! FBC blobs (client side). Pure functions: no socket, no clock.
//!
//! # Model → messages, as `opm serve` fills them
//!
//! operator-registry turns each bundle of each channel into one `api.Bundle`
//! (`pkg/api/model_to_api.go`, stored per package/channel/bundle by `pkg/cache`). We follow it
//! field by field:
//!
//! - `object`: every `olm.bundle.object` manifest as JSON text (opm converts each with
//!   `yaml.ToJSON`, which sorts keys; so do we); `csvJson`: the first of them whose `kind` is
//!   `ClusterServiceVersion`;
//! - a bundle without an inlined CSV but with exactly one `olm.csv.metadata` gets a stub CSV built
//!   from the metadata (name, version, related images, the package icon, the package description
//!   when the metadata has none, an install strategy named `deployment` with no deployments),
//!   which also becomes its only `object` when it has none;
//! - `properties`: every property but `olm.bundle.object` and `olm.csv.metadata` (upstream leaves
//!   those out so that clients projecting properties into CSV annotations do not double the CSV's
//!   size); values are compact JSON with sorted keys, as opm re-encodes them. Our model groups
//!   properties by type, so they come grouped by type rather than in file order;
//! - `dependencies`: `olm.gvk.required` as type `olm.gvk`, `olm.package.required` as type
//!   `olm.package` with `{packageName, version: <range>}`;
//! - `providedApis`/`requiredApis` from `olm.gvk`/`olm.gvk.required` (`plural` left empty);
//!   `version` as written in `olm.package`; `replaces`, `skips`, `skipRange` from the channel
//!   entry; `deprecation` from `olm.deprecations`.
//!
//! Two views of that message are served: [`listed`] (`ListBundles`: no `csvJson`/`object` when the
//! bundle has an image, clients pull the image instead) and [`trimmed`] (the single-bundle
//! queries: no `replaces`/`skips`).
//!
//! # Messages → blobs
//!
//! [`catalog_from_messages`] rebuilds `olm.package`, `olm.channel`, `olm.bundle` and
//! `olm.deprecations` blobs from `GetPackage` and `ListBundles` answers, the way
//! operator-registry's `api_to_model.go` does: the properties listed, plus `olm.package`,
//! `olm.gvk`, `olm.gvk.required` and `olm.package.required` rebuilt from the typed fields when the
//! list lacks them, plus one `olm.bundle.object` per `object` (so an inlined CSV becomes an
//! inlined manifest again); related images come from the CSV. What the API does not carry is not
//! invented: a package's description and icon, the properties of channels, and the manifests of a
//! bundle served with an image.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::{
    catalog::{
        declcfg::{self, DeclarativeConfig, Origin},
        model::{Bundle, Channel, ChannelEntry, Package},
        property::{self, ObjectError},
        raw::RawJson,
    },
    grpc::api,
};

/// `kind` of the manifest that becomes `csvJson`.
const CSV_KIND: &str = "ClusterServiceVersion";

/// A bundle of the model that cannot become a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// An inlined manifest does not decode (the catalog should have been validated first).
    #[error("package {package:?} bundle {bundle:?}: olm.bundle.object [{index}]: {source}")]
    DecodeObject {
        /// Package.
        package: String,
        /// Bundle.
        bundle: String,
        /// Index among the bundle's objects.
        index: usize,
        /// Why it does not decode.
        #[source]
        source: ObjectError,
    },
}

/// `value` as compact JSON with object keys sorted at every level (what Go's `encoding/json`
/// writes for the maps opm decodes catalogs into).
#[must_use]
pub fn canonical_json(value: &Value) -> String {
    sorted(value).to_string()
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for key in keys {
                if let Some(v) = map.get(key) {
                    out.insert(key.clone(), sorted(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn raw_canonical(raw: &RawJson) -> String {
    canonical_json(&raw.to_value())
}

fn gvk_message(gvk: &property::Gvk) -> api::GroupVersionKind {
    api::GroupVersionKind {
        group: gvk.group.clone(),
        version: gvk.version.clone(),
        kind: gvk.kind.clone(),
        plural: String::new(),
    }
}

fn gvk_value(gvk: &property::Gvk) -> String {
    canonical_json(&json!({"group": gvk.group, "version": gvk.version, "kind": gvk.kind}))
}

fn deprecation(message: Option<&str>) -> Option<api::Deprecation> {
    message.map(|m| api::Deprecation {
        message: m.to_owned(),
    })
}

/// `GetPackage`'s answer: the channels sorted by name with their heads, the default channel and
/// the package's deprecation.
#[must_use]
pub fn package_message(package: &Package) -> api::Package {
    api::Package {
        name: package.name.clone(),
        channels: package
            .channels()
            .iter()
            .map(|c| api::Channel {
                name: c.name.clone(),
                csv_name: c.head().unwrap_or_default().to_owned(),
                deprecation: deprecation(package.channel_deprecation(&c.name)),
            })
            .collect(),
        default_channel_name: package.default_channel.clone(),
        deprecation: deprecation(package.deprecation_message()),
    }
}

/// The full message of `bundle` as entry `entry` of `channel` (see the module docs).
///
/// # Errors
/// [`ConvertError::DecodeObject`] when an inlined manifest does not decode.
pub fn bundle_message(
    package: &Package,
    channel: &Channel,
    entry: &ChannelEntry,
    bundle: &Bundle,
) -> Result<api::Bundle, ConvertError> {
    bundle_message_with(package, channel, entry, bundle, true)
}

/// [`bundle_message`], leaving `csvJson` and `object` empty unless `manifests` (what [`listed`]
/// would drop need not be decoded).
///
/// # Errors
/// [`ConvertError::DecodeObject`] when an inlined manifest does not decode.
pub fn bundle_message_with(
    package: &Package,
    channel: &Channel,
    entry: &ChannelEntry,
    bundle: &Bundle,
    manifests: bool,
) -> Result<api::Bundle, ConvertError> {
    let props = &bundle.properties;
    let mut objects = Vec::with_capacity(props.bundle_objects.len());
    let mut csv_json = String::new();
    let inlined = if manifests {
        props.bundle_objects.as_slice()
    } else {
        &[]
    };
    for (index, object) in inlined.iter().enumerate() {
        let value = object.decode().map_err(|source| ConvertError::DecodeObject {
            package: package.name.clone(),
            bundle: bundle.name.clone(),
            index,
            source,
        })?;
        let text = canonical_json(&value);
        if csv_json.is_empty() && value.get("kind").and_then(Value::as_str) == Some(CSV_KIND) {
            csv_json.clone_from(&text);
        }
        objects.push(text);
    }
    let version = props
        .packages
        .first()
        .map_or_else(|| bundle.version.to_string(), |p| p.version.clone());
    if manifests
        && csv_json.is_empty()
        && let [metadata] = props.csv_metadata.as_slice()
    {
        csv_json = canonical_json(&stub_csv(package, bundle, metadata.get()));
        if objects.is_empty() {
            objects.push(csv_json.clone());
        }
    }

    let mut dependencies = Vec::new();
    for gvk in &props.gvks_required {
        dependencies.push(api::Dependency {
            r#type: property::TYPE_GVK.to_owned(),
            value: gvk_value(gvk),
        });
    }
    for required in &props.packages_required {
        dependencies.push(api::Dependency {
            r#type: property::TYPE_PACKAGE.to_owned(),
            value: canonical_json(&json!({
                "packageName": required.package_name,
                "version": required.version_range.to_string(),
            })),
        });
    }

    Ok(api::Bundle {
        csv_name: bundle.name.clone(),
        package_name: package.name.clone(),
        channel_name: channel.name.clone(),
        csv_json,
        object: objects,
        bundle_path: bundle.image.clone(),
        provided_apis: props.gvks.iter().map(gvk_message).collect(),
        required_apis: props.gvks_required.iter().map(gvk_message).collect(),
        version,
        skip_range: entry.skip_range.clone(),
        dependencies,
        properties: property_messages(props),
        replaces: entry.replaces.clone(),
        skips: entry.skips.clone(),
        deprecation: deprecation(package.bundle_deprecation(&bundle.name)),
    })
}

/// Every property but the inlined manifests and the CSV metadata, values as canonical JSON, in
/// the order of [`property::Properties::to_list`] (grouped by type). Read in place: the manifests
/// (megabytes of base64) are never copied.
fn property_messages(props: &property::Properties) -> Vec<api::Property> {
    fn typed<T: serde::Serialize>(type_: &str, value: &T) -> api::Property {
        api::Property {
            r#type: type_.to_owned(),
            // Serializing these plain structs cannot fail; `null` would be visible if it did.
            value: canonical_json(&serde_json::to_value(value).unwrap_or(Value::Null)),
        }
    }
    fn raw(type_: &str, value: &RawJson) -> api::Property {
        api::Property {
            r#type: type_.to_owned(),
            value: raw_canonical(value),
        }
    }
    let mut out = Vec::new();
    out.extend(props.packages.iter().map(|v| typed(property::TYPE_PACKAGE, v)));
    out.extend(props.gvks.iter().map(|v| typed(property::TYPE_GVK, v)));
    out.extend(
        props
            .gvks_required
            .iter()
            .map(|v| typed(property::TYPE_GVK_REQUIRED, v)),
    );
    out.extend(
        props
            .packages_required
            .iter()
            .map(|v| typed(property::TYPE_PACKAGE_REQUIRED, v)),
    );
    out.extend(
        props
            .constraints
            .iter()
            .map(|v| raw(property::TYPE_CONSTRAINT, v)),
    );
    out.extend(props.deprecated.iter().map(|v| raw(property::TYPE_DEPRECATED, v)));
    out.extend(props.others.iter().map(|p| raw(&p.type_, &p.value)));
    out
}

/// The CSV opm builds for a bundle that has only `olm.csv.metadata` (`model_to_api.go`).
fn stub_csv(package: &Package, bundle: &Bundle, metadata: &property::CsvMetadata) -> Value {
    let mut spec = Map::new();
    spec.insert(
        "install".into(),
        json!({"strategy": "deployment", "spec": {"deployments": null}}),
    );
    spec.insert("version".into(), json!(bundle.version.to_string()));
    spec.insert("displayName".into(), json!(metadata.display_name));
    spec.insert("cleanup".into(), json!({"enabled": false}));
    let description = if metadata.description.is_empty() {
        &package.description
    } else {
        &metadata.description
    };
    if !description.is_empty() {
        spec.insert("description".into(), json!(description));
    }
    let mut put = |key: &str, value: Value| {
        let empty = match &value {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        };
        if !empty {
            spec.insert(key.into(), value);
        }
    };
    put("keywords", json!(metadata.keywords));
    put("maintainers", json!(metadata.maintainers));
    put("links", json!(metadata.links));
    put("installModes", json!(metadata.install_modes));
    put("maturity", json!(metadata.maturity));
    put("minKubeVersion", json!(metadata.min_kube_version));
    put(
        "provider",
        metadata.provider.as_ref().map_or(Value::Null, |p| json!(p)),
    );
    put(
        "customresourcedefinitions",
        serde_json::to_value(&metadata.crd_descriptions).unwrap_or(Value::Null),
    );
    for (from, to) in [
        ("apiServiceDefinitions", "apiservicedefinitions"),
        ("nativeAPIs", "nativeAPIs"),
    ] {
        if let Some(raw) = metadata.extra.get(from) {
            put(to, raw.to_value());
        }
    }
    if let Some(icon) = &package.icon {
        put(
            "icon",
            json!([{"base64data": icon.base64data, "mediatype": icon.mediatype}]),
        );
    } else if let Some(icon) = metadata.extra.get("icon") {
        // Kept from the CSV a registry gave for a channel head ([`head_csv_metadata`]).
        put("icon", icon.to_value());
    }
    put(
        "relatedImages",
        Value::Array(
            bundle
                .related_images
                .iter()
                .map(|r| json!({"name": r.name, "image": r.image}))
                .collect(),
        ),
    );
    let mut meta = Map::new();
    meta.insert("name".into(), json!(bundle.name));
    meta.insert("creationTimestamp".into(), Value::Null);
    if !metadata.annotations.is_empty() {
        meta.insert("annotations".into(), json!(metadata.annotations));
    }
    if !metadata.labels.is_empty() {
        meta.insert("labels".into(), json!(metadata.labels));
    }
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": CSV_KIND,
        "metadata": meta,
        "spec": spec,
        "status": {"cleanup": {}},
    })
}

/// The message as `ListBundles` streams it: a bundle with an image carries no manifests.
#[must_use]
pub fn listed(mut bundle: api::Bundle) -> api::Bundle {
    if !bundle.bundle_path.is_empty() {
        bundle.csv_json.clear();
        bundle.object.clear();
    }
    bundle
}

/// The message as the single-bundle queries answer it: no `replaces`, no `skips`.
#[must_use]
pub fn trimmed(mut bundle: api::Bundle) -> api::Bundle {
    bundle.replaces.clear();
    bundle.skips.clear();
    bundle
}

/// One channel entry message.
#[must_use]
pub fn entry_message(package: &str, channel: &str, bundle: &str, replaces: &str) -> api::ChannelEntry {
    api::ChannelEntry {
        package_name: package.to_owned(),
        channel_name: channel.to_owned(),
        bundle_name: bundle.to_owned(),
        replaces: replaces.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Messages → blobs
// ---------------------------------------------------------------------------------------------

/// FBC blobs rebuilt from a server's answers, and what did not fit (each naming the package and
/// bundle).
#[derive(Debug, Default)]
pub struct Rebuilt {
    /// The blobs, ready for [`crate::catalog::Model::build`].
    pub config: DeclarativeConfig,
    /// Answers that could not be used as they were.
    pub problems: Vec<String>,
}

/// Rebuilds the catalog from `GetPackage` answers and the `ListBundles` stream (see the module
/// docs). `source` names the server in the blobs' origins.
#[must_use]
pub fn catalog_from_messages(source: &str, packages: &[api::Package], bundles: &[api::Bundle]) -> Rebuilt {
    let mut out = Rebuilt::default();
    let origin = |document: usize| Origin::new(source, document);
    let mut doc = 0usize;
    let mut next = || {
        doc += 1;
        origin(doc)
    };

    // Entries per (package, channel), and one bundle per (package, name): a bundle is listed once
    // per channel it is in.
    let mut entries: BTreeMap<(&str, &str), Vec<declcfg::ChannelEntry>> = BTreeMap::new();
    let mut first: BTreeMap<(&str, &str), &api::Bundle> = BTreeMap::new();
    for b in bundles {
        let key = (b.package_name.as_str(), b.channel_name.as_str());
        let list = entries.entry(key).or_default();
        if list.iter().any(|e| e.name == b.csv_name) {
            out.problems.push(format!(
                "package {:?} channel {:?}: bundle {:?} was listed twice; the first is kept",
                b.package_name, b.channel_name, b.csv_name
            ));
            continue;
        }
        list.push(declcfg::ChannelEntry {
            name: b.csv_name.clone(),
            replaces: b.replaces.clone(),
            skips: b.skips.clone(),
            skip_range: b.skip_range.clone(),
        });
        first
            .entry((b.package_name.as_str(), b.csv_name.as_str()))
            .or_insert(b);
    }

    let mut deprecations: BTreeMap<&str, Vec<declcfg::DeprecationEntry>> = BTreeMap::new();

    let mut channels_seen: BTreeSet<(&str, &str)> = BTreeSet::new();
    for p in packages {
        out.config.packages.push(declcfg::Package {
            schema: declcfg::SCHEMA_PACKAGE.to_owned(),
            name: p.name.clone(),
            default_channel: p.default_channel_name.clone(),
            icon: None,
            description: String::new(),
            properties: Vec::new(),
            origin: next(),
        });
        if let Some(d) = &p.deprecation {
            let entry = deprecation_entry(declcfg::SCHEMA_PACKAGE, "", &d.message);
            deprecations.entry(p.name.as_str()).or_default().push(entry);
        }
        for c in &p.channels {
            channels_seen.insert((p.name.as_str(), c.name.as_str()));
            let mut list = entries
                .remove(&(p.name.as_str(), c.name.as_str()))
                .unwrap_or_default();
            list.sort_by(|a, b| a.name.cmp(&b.name));
            out.config
                .channels
                .push(channel_blob(&p.name, &c.name, list, next()));
            if let Some(d) = &c.deprecation {
                let entry = deprecation_entry(declcfg::SCHEMA_CHANNEL, &c.name, &d.message);
                deprecations.entry(p.name.as_str()).or_default().push(entry);
            }
        }
    }
    // Channels the bundles name but GetPackage did not list.
    for ((package, channel), mut list) in entries {
        out.problems.push(format!(
            "package {package:?}: channel {channel:?} has bundles but GetPackage does not list it; \
             it is kept"
        ));
        list.sort_by(|a, b| a.name.cmp(&b.name));
        out.config
            .channels
            .push(channel_blob(package, channel, list, next()));
    }

    for ((package, name), b) in &first {
        let (blob, problems) = bundle_blob(b, next());
        out.problems.extend(problems);
        out.config.bundles.push(blob);
        if let Some(d) = bundles
            .iter()
            .filter(|x| x.package_name == *package && x.csv_name == *name)
            .find_map(|x| x.deprecation.as_ref())
        {
            let entry = deprecation_entry(declcfg::SCHEMA_BUNDLE, name, &d.message);
            deprecations.entry(package).or_default().push(entry);
        }
    }
    for (package, list) in deprecations {
        out.config.deprecations.push(declcfg::Deprecation {
            schema: declcfg::SCHEMA_DEPRECATIONS.to_owned(),
            package: package.to_owned(),
            entries: list,
            origin: next(),
        });
    }
    out
}

fn deprecation_entry(schema: &str, name: &str, message: &str) -> declcfg::DeprecationEntry {
    declcfg::DeprecationEntry {
        reference: declcfg::PackageScopedReference {
            schema: schema.to_owned(),
            name: name.to_owned(),
        },
        message: message.to_owned(),
    }
}

fn channel_blob(
    package: &str,
    name: &str,
    entries: Vec<declcfg::ChannelEntry>,
    origin: Origin,
) -> declcfg::Channel {
    declcfg::Channel {
        schema: declcfg::SCHEMA_CHANNEL.to_owned(),
        name: name.to_owned(),
        package: package.to_owned(),
        entries,
        properties: Vec::new(),
        origin,
    }
}

/// `{group, version, kind}` of a GVK property or dependency value.
fn gvk_of(value: &Value) -> (String, String, String) {
    let field = |k: &str| {
        value
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (field("group"), field("version"), field("kind"))
}

fn bundle_blob(b: &api::Bundle, origin: Origin) -> (declcfg::Bundle, Vec<String>) {
    let mut problems = Vec::new();
    let mut properties: Vec<declcfg::Property> = Vec::new();
    for (i, p) in b.properties.iter().enumerate() {
        if p.r#type == property::TYPE_BUNDLE_OBJECT || p.r#type == property::TYPE_CSV_METADATA {
            continue;
        }
        match serde_json::from_str::<Value>(&p.value) {
            Ok(value) => properties.push(declcfg::Property::new(&p.r#type, &value)),
            Err(err) => problems.push(format!(
                "package {:?} bundle {:?}: property [{i}] of type {:?} is not JSON ({err}); it is left out",
                b.package_name, b.csv_name, p.r#type
            )),
        }
    }
    let values_of = |props: &[declcfg::Property], type_: &str| -> Vec<Value> {
        props
            .iter()
            .filter(|p| p.type_ == type_)
            .map(|p| p.value.to_value())
            .collect()
    };
    if values_of(&properties, property::TYPE_PACKAGE).is_empty() {
        properties.push(declcfg::Property::new(
            property::TYPE_PACKAGE,
            &json!({"packageName": b.package_name, "version": b.version}),
        ));
    }
    let mut provided: BTreeSet<_> = values_of(&properties, property::TYPE_GVK)
        .iter()
        .map(gvk_of)
        .collect();
    for g in &b.provided_apis {
        let key = (g.group.clone(), g.version.clone(), g.kind.clone());
        if provided.insert(key) {
            properties.push(declcfg::Property::new(
                property::TYPE_GVK,
                &json!({"group": g.group, "version": g.version, "kind": g.kind}),
            ));
        }
    }
    let mut required: BTreeSet<_> = values_of(&properties, property::TYPE_GVK_REQUIRED)
        .iter()
        .map(gvk_of)
        .collect();
    let dependency_gvks = b
        .dependencies
        .iter()
        .filter(|d| d.r#type == property::TYPE_GVK)
        .filter_map(|d| serde_json::from_str::<Value>(&d.value).ok())
        .map(|v| gvk_of(&v));
    let api_gvks = b
        .required_apis
        .iter()
        .map(|g| (g.group.clone(), g.version.clone(), g.kind.clone()));
    for key in api_gvks.chain(dependency_gvks).collect::<Vec<_>>() {
        if required.insert(key.clone()) {
            let (group, version, kind) = key;
            properties.push(declcfg::Property::new(
                property::TYPE_GVK_REQUIRED,
                &json!({"group": group, "version": version, "kind": kind}),
            ));
        }
    }
    let mut packages_required: BTreeSet<(String, String)> =
        values_of(&properties, property::TYPE_PACKAGE_REQUIRED)
            .iter()
            .map(|v| {
                let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                (field("packageName"), field("versionRange"))
            })
            .collect();
    for d in b
        .dependencies
        .iter()
        .filter(|d| d.r#type == property::TYPE_PACKAGE)
    {
        match serde_json::from_str::<Value>(&d.value) {
            Ok(v) => {
                let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                let key = (field("packageName"), field("version"));
                if packages_required.insert(key.clone()) {
                    properties.push(declcfg::Property::new(
                        property::TYPE_PACKAGE_REQUIRED,
                        &json!({"packageName": key.0, "versionRange": key.1}),
                    ));
                }
            }
            Err(err) => problems.push(format!(
                "package {:?} bundle {:?}: dependency of type olm.package is not JSON ({err}); it is left out",
                b.package_name, b.csv_name
            )),
        }
    }
    if b.object.is_empty()
        && !b.csv_json.is_empty()
        && let Some(metadata) = head_csv_metadata(&b.csv_json)
    {
        properties.push(declcfg::Property::new(property::TYPE_CSV_METADATA, &metadata));
    }
    for object in &b.object {
        let data = base64::engine::general_purpose::STANDARD.encode(object.as_bytes());
        properties.push(declcfg::Property::new(
            property::TYPE_BUNDLE_OBJECT,
            &json!({ "data": data }),
        ));
    }
    let related_images = related_images(&b.csv_json);
    let blob = declcfg::Bundle {
        schema: declcfg::SCHEMA_BUNDLE.to_owned(),
        name: b.csv_name.clone(),
        package: b.package_name.clone(),
        image: b.bundle_path.clone(),
        properties,
        related_images,
        origin,
    };
    (blob, problems)
}

/// The `olm.csv.metadata` of a bundle served with an image whose CSV the registry gave alone
/// (`GetBundle` for a channel head: [`super::client`]), with the CSV's `spec.icon`: what
/// upstream's packageserver reads from that CSV for a PackageManifest's `currentCSVDesc`. The
/// bundle's manifests stay in its image (no `olm.bundle.object` is made, so installing it still
/// pulls the image). `None` when the text is not a CSV.
fn head_csv_metadata(csv_json: &str) -> Option<Value> {
    let csv: Value = serde_json::from_str(csv_json).ok()?;
    if csv.get("kind").and_then(Value::as_str) != Some(CSV_KIND) {
        return None;
    }
    let mut metadata = serde_json::to_value(property::CsvMetadata::from_csv(&csv).ok()?).ok()?;
    if let (Some(icon), Some(object)) = (csv.pointer("/spec/icon"), metadata.as_object_mut()) {
        object.insert("icon".into(), icon.clone());
    }
    Some(metadata)
}

/// `spec.relatedImages` of a CSV given as JSON text (none when empty or unreadable).
fn related_images(csv_json: &str) -> Vec<declcfg::RelatedImage> {
    let Ok(csv) = serde_json::from_str::<Value>(csv_json) else {
        return Vec::new();
    };
    csv.pointer("/spec/relatedImages")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|r| declcfg::RelatedImage {
                    name: r
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    image: r
                        .get("image")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}
