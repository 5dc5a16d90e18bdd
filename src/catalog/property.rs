//! property: typed bundle properties, parsed from the raw `{type, value}` pairs of a blob.
//!
//! # What properties are
//!
//! In a file-based catalog everything the resolver knows about a bundle, beyond its name, image
//! and channel entries, is a property: a `type` string and an arbitrary JSON `value`
//! (operator-registry `alpha/property/property.go`). The types OLM understands are:
//!
//! | type | value | meaning |
//! |---|---|---|
//! | `olm.package` | `{packageName, version, release?}` | the bundle's package and version; exactly one per bundle |
//! | `olm.gvk` | `{group, version, kind}` | an API the bundle provides (an owned CRD or APIService) |
//! | `olm.gvk.required` | `{group, version, kind}` | an API the bundle needs someone to provide |
//! | `olm.package.required` | `{packageName, versionRange}` | a package (in a version range) the bundle needs |
//! | `olm.bundle.object` | `{data: base64}` (or `{ref: path}`) | one manifest of the bundle, inlined |
//! | `olm.csv.metadata` | a subset of the CSV spec | what UIs show, used instead of inlining the whole CSV |
//! | `olm.constraint` | `{failureMessage, cel/all/any/not/gvk/package...}` | a generic dependency constraint |
//! | `olm.deprecated` | anything | legacy marker: the bundle must never be installed |
//!
//! Any other type (`olm.maxOpenShiftVersion`, `olm.label`, vendor types) is kept as
//! [`Property::Other`] and carried through unchanged.
//!
//! # Parsing rules
//!
//! opm decodes known property values with Go's `encoding/json` into typed structs, so a value of
//! the wrong JSON type is an error while missing fields are simply empty. [`parse`] does the same
//! (keys match case-insensitively, exact match first, as in Go) and adds what the resolver relies
//! on: `olm.package.required`'s `versionRange` must parse as a blang range
//! ([`crate::version_range::Range`]), and `olm.bundle.object` data must be valid base64. Errors
//! are collected, never fatal, and each names the property index, its type and the bad field; the
//! caller adds the bundle. A property with no `value` at all is an error for every type, as in
//! opm, where an absent value is not valid JSON.
//!
//! # Cost
//!
//! `olm.bundle.object` values can be megabytes of base64. They are kept packed (as the deflated
//! bytes they encode, [`PackedText`], shared with the other bundles of the file that inline the
//! same manifest) and decoded only when asked ([`BundleObject::decode`]). Validation checks the
//! base64 alphabet and length without allocating ([`BundleObject::check`]).
//!
//! `olm.csv.metadata` values are most of the bytes of a large catalog (descriptions, examples,
//! spec descriptors) and are read only by `catalog describe`. [`parse`] checks that each one has
//! the shape the typed [`CsvMetadata`] needs, with zero-sized mirror types that build nothing, and
//! keeps its compact JSON text in a [`LazyCsvMetadata`], typed on first use. A value that fails
//! the check is typed at once, field by field, so its error is reported exactly as before.

use std::{collections::BTreeMap, fmt};

use base64::Engine as _;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

use crate::{
    catalog::{declcfg, packed::PackedText, raw::RawJson},
    codec,
    version_range::{self, Range},
};

mod fast;

use fast::{FastCsvMetadata, csv_metadata_fits_fast_path, parse_fast};

/// `olm.package`.
pub const TYPE_PACKAGE: &str = "olm.package";
/// `olm.gvk`.
pub const TYPE_GVK: &str = "olm.gvk";
/// `olm.gvk.required`.
pub const TYPE_GVK_REQUIRED: &str = "olm.gvk.required";
/// `olm.package.required`.
pub const TYPE_PACKAGE_REQUIRED: &str = "olm.package.required";
/// `olm.bundle.object`.
pub const TYPE_BUNDLE_OBJECT: &str = "olm.bundle.object";
/// `olm.csv.metadata`.
pub const TYPE_CSV_METADATA: &str = crate::catalog::csv_shape::PROPERTY_TYPE;
/// `olm.constraint`.
pub const TYPE_CONSTRAINT: &str = "olm.constraint";
/// `olm.deprecated`.
pub const TYPE_DEPRECATED: &str = "olm.deprecated";

/// A property value that could not be parsed. The bundle name is added by the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("property [{index}] of type {type_:?}: {}{message}", field_prefix(.field))]
pub struct PropertyError {
    /// Index of the property in the blob's `properties` list.
    pub index: usize,
    /// The property's type.
    pub type_: String,
    /// The field that is wrong, if one is.
    pub field: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

fn field_prefix(field: &Option<String>) -> String {
    field
        .as_ref()
        .map(|f| format!("field `{f}`: "))
        .unwrap_or_default()
}

/// Errors decoding the manifest inside an `olm.bundle.object`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    /// The object is a file reference, which only makes sense next to the catalog's files.
    #[error("bundle object refers to file {0:?}; inline it as base64 `data` instead")]
    Reference(String),
    /// The data is not base64.
    #[error("bundle object data is not valid base64: {0}")]
    Base64(String),
    /// The decoded bytes are not UTF-8 text.
    #[error("bundle object data is not UTF-8 text")]
    NotText,
    /// The decoded text is not one YAML or JSON object.
    #[error("bundle object is not a YAML or JSON object: {0}")]
    NotAnObject(String),
}

/// `olm.package`: the bundle's package and version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct PackageProperty {
    /// Package name; must equal the bundle's `package`.
    pub package_name: String,
    /// Version, as written (validation parses it as strict semver).
    pub version: String,
    /// Optional release, a dot-separated list of prerelease-like identifiers.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub release: String,
}

/// `olm.gvk` and `olm.gvk.required`: a Kubernetes group/version/kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Default)]
pub struct Gvk {
    /// API group (empty for the core group).
    pub group: String,
    /// API version, such as `v1`.
    pub version: String,
    /// Kind, such as `RedisCluster`.
    pub kind: String,
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.version, self.kind)
        } else {
            write!(f, "{}/{}/{}", self.group, self.version, self.kind)
        }
    }
}

/// `olm.package.required`: a dependency on a package in a version range.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRequired {
    /// The required package.
    pub package_name: String,
    /// Versions of it that satisfy the dependency.
    pub version_range: Range,
}

/// `olm.bundle.object`: one manifest of the bundle, inlined as base64 or referenced by path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum BundleObject {
    /// Base64 of the manifest (YAML or JSON), packed; shared with the other bundles of the file
    /// that inline the same manifest ([`RawJson::string_member`]).
    Data(PackedText),
    /// A path relative to the catalog file (opm resolves it at load time).
    Ref(String),
}

impl BundleObject {
    /// Checks that inline data is valid base64, without keeping the decoded bytes.
    ///
    /// # Errors
    /// [`ObjectError::Base64`] when it is not.
    pub fn check(&self) -> Result<(), ObjectError> {
        match self {
            BundleObject::Ref(_) => Ok(()),
            // Canonical base64 was checked when it was packed.
            BundleObject::Data(data) if data.is_base64() => Ok(()),
            BundleObject::Data(data) => check_base64(&data.text()),
        }
    }

    /// Decodes the manifest into a JSON value.
    ///
    /// # Errors
    /// An [`ObjectError`] when the object is a reference, not base64, not text, or not an object.
    pub fn decode(&self) -> Result<Value, ObjectError> {
        let data = match self {
            BundleObject::Ref(path) => return Err(ObjectError::Reference(path.clone())),
            BundleObject::Data(data) => data,
        };
        let bytes = match data.base64_bytes() {
            Some(bytes) => bytes.into_owned(),
            None => GO_STD_BASE64
                .decode(without_line_breaks(&data.text()).as_bytes())
                .map_err(|err| ObjectError::Base64(err.to_string()))?,
        };
        let text = String::from_utf8(bytes).map_err(|_| ObjectError::NotText)?;
        let decoded = codec::decode_documents("olm.bundle.object", &text);
        if let Some(err) = decoded.error {
            return Err(ObjectError::NotAnObject(err.to_string()));
        }
        let mut docs = decoded.documents.into_iter();
        match (docs.next(), docs.next()) {
            (Some(doc), None) if doc.value.is_object() => Ok(doc.value),
            (None, _) => Err(ObjectError::NotAnObject("it is empty".to_owned())),
            (Some(_), Some(_)) => Err(ObjectError::NotAnObject("it holds several documents".to_owned())),
            (Some(_), None) => Err(ObjectError::NotAnObject("it is not a map".to_owned())),
        }
    }
}

/// Go's `base64.StdEncoding`, which opm decodes icons and bundle objects with: the standard
/// alphabet, padded, and non-zero bits after the last character accepted (Go only rejects them
/// in `Strict` mode).
const GO_STD_BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// Go's base64 decoder skips line breaks (`\r`, `\n`) anywhere in the data, and nothing else
/// (a space, even a trailing one, is illegal); so do we.
fn without_line_breaks(data: &str) -> std::borrow::Cow<'_, str> {
    let data = data.trim_matches(['\n', '\r']);
    if data.contains(['\n', '\r']) {
        std::borrow::Cow::Owned(data.chars().filter(|c| *c != '\n' && *c != '\r').collect())
    } else {
        std::borrow::Cow::Borrowed(data)
    }
}

/// Validates base64 (standard alphabet, padded) in fixed-size chunks, allocating nothing for the
/// decoded bytes.
fn check_base64(data: &str) -> Result<(), ObjectError> {
    let data = without_line_breaks(data);
    let data = data.as_bytes();
    // Chunks of a multiple of 4 characters decode independently; only the last may carry padding.
    const CHUNK: usize = 4 * 1024;
    let mut buf = [0u8; CHUNK / 4 * 3];
    if !data.len().is_multiple_of(4) {
        return Err(ObjectError::Base64(format!(
            "length {} is not a multiple of 4",
            data.len()
        )));
    }
    for chunk in data.chunks(CHUNK) {
        GO_STD_BASE64
            .decode_slice(chunk, &mut buf)
            .map_err(|err| ObjectError::Base64(err.to_string()))?;
    }
    Ok(())
}

/// Go decodes JSON `null` into any field as "leave the zero value"; so do the CSV metadata types.
fn nullable<'de, D: serde::Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// A string map whose `null` values are empty strings (Go's `map[string]string`).
fn nullable_map<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let map: Option<BTreeMap<String, Option<String>>> = Deserialize::deserialize(d)?;
    Ok(map
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_default()))
        .collect())
}

/// A string list whose `null` items are empty strings (Go's `[]string`).
fn nullable_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let list: Option<Vec<Option<String>>> = Deserialize::deserialize(d)?;
    Ok(list
        .unwrap_or_default()
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect())
}

/// `name`/`url` pair (CSV `links` and `provider`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct AppLink {
    /// Display name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Target URL.
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "nullable")]
    pub url: String,
}

/// A maintainer of the operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Maintainer {
    /// Name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Contact e-mail.
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "nullable")]
    pub email: String,
}

/// One install mode and whether the operator supports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct InstallMode {
    /// `OwnNamespace`, `SingleNamespace`, `MultiNamespace` or `AllNamespaces`.
    #[serde(rename = "type")]
    #[serde(deserialize_with = "nullable")]
    pub type_: String,
    /// Whether the operator supports it.
    #[serde(deserialize_with = "nullable")]
    pub supported: bool,
}

/// One CRD the operator owns or requires, as the CSV describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct CrdDescription {
    /// Full CRD name, `<plural>.<group>`.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Served version.
    #[serde(deserialize_with = "nullable")]
    pub version: String,
    /// Kind.
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
    /// Human name.
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "nullable")]
    pub display_name: String,
    /// Description.
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "nullable")]
    pub description: String,
    /// Kinds the operator creates for this resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<RawJson>,
    /// UI descriptors of the spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_descriptors: Option<RawJson>,
    /// UI descriptors of the status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_descriptors: Option<RawJson>,
    /// UI actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action_descriptors: Option<RawJson>,
}

/// Owned and required CRDs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct CrdDescriptions {
    /// CRDs the operator owns (installs and reconciles).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "nullable")]
    pub owned: Vec<CrdDescription>,
    /// CRDs the operator needs from someone else.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "nullable")]
    pub required: Vec<CrdDescription>,
}

/// A field of a JSON object as Go's `encoding/json` finds it for a typed struct: the key as
/// written, else the last key equal to it ignoring ASCII case. Upstream (opm, OLM) reads CSVs
/// into typed structs, so a CSV spelling `spec.nativeApis` has `nativeAPIs` there.
#[must_use]
pub fn go_json_field<'v>(object: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    object.get(key).or_else(|| {
        object
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

/// `olm.csv.metadata`: the part of a CSV that UIs and `catalog describe` show.
///
/// Fields OLM defines that we do not model (`apiServiceDefinitions`, `nativeAPIs`, and any future
/// field) are kept in [`CsvMetadata::extra`] and written back.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CsvMetadata {
    /// CSV annotations (`alm-examples`, `capabilities`, `categories`, ...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// CSV labels.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Human name of the operator.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// Long description (markdown).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Supported install modes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub install_modes: Vec<InstallMode>,
    /// Search keywords.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Maintainers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// Links (documentation, source).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<AppLink>,
    /// Provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<AppLink>,
    /// Maturity (`alpha`, `stable`, ...).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub maturity: String,
    /// Minimum Kubernetes version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub min_kube_version: String,
    /// Owned and required CRDs.
    #[serde(rename = "crdDescriptions", skip_serializing_if = "is_empty_crds")]
    pub crd_descriptions: CrdDescriptions,
    /// Every other field (`apiServiceDefinitions`, `nativeAPIs`, future fields), kept verbatim.
    #[serde(flatten)]
    pub extra: BTreeMap<String, RawJson>,
}

fn is_empty_crds(c: &CrdDescriptions) -> bool {
    c.owned.is_empty() && c.required.is_empty()
}

impl CsvMetadata {
    /// Builds the metadata from a full `ClusterServiceVersion` manifest (as inlined by
    /// `olm.bundle.object`), mapping `spec.customresourcedefinitions` to `crdDescriptions` and
    /// `metadata.annotations`/`labels` to their fields.
    ///
    /// # Errors
    /// A message naming the CSV field that has the wrong type.
    pub fn from_csv(csv: &Value) -> Result<CsvMetadata, String> {
        let empty = Map::new();
        let metadata = csv.get("metadata").and_then(Value::as_object).unwrap_or(&empty);
        let spec = csv.get("spec").and_then(Value::as_object).unwrap_or(&empty);
        let mut out = CsvMetadata::default();
        let mut field = |source: &Map<String, Value>, key: &str, target: &str, prefix: &str| {
            if let Some(value) = go_json_field(source, key) {
                out.set(target, value.clone())
                    .map_err(|err| format!("{prefix}{key}: {err}"))
            } else {
                Ok(())
            }
        };
        field(metadata, "annotations", "annotations", "metadata.")?;
        field(metadata, "labels", "labels", "metadata.")?;
        for key in [
            "displayName",
            "description",
            "installModes",
            "keywords",
            "maintainers",
            "links",
            "provider",
            "maturity",
            "minKubeVersion",
            "apiservicedefinitions",
            "nativeAPIs",
        ] {
            let target = if key == "apiservicedefinitions" {
                "apiServiceDefinitions"
            } else {
                key
            };
            field(spec, key, target, "spec.")?;
        }
        field(spec, "customresourcedefinitions", "crdDescriptions", "spec.")?;
        Ok(out)
    }

    /// Sets one field from its JSON value, by its canonical key; unknown keys go to `extra`.
    fn set(&mut self, key: &str, value: Value) -> Result<(), String> {
        fn conv<T: DeserializeOwned + Default>(value: Value) -> Result<T, String> {
            if value.is_null() {
                return Ok(T::default());
            }
            serde_json::from_value(value).map_err(|err| err.to_string())
        }
        match key {
            "annotations" => self.annotations = nullable_map(value).map_err(|e| e.to_string())?,
            "labels" => self.labels = nullable_map(value).map_err(|e| e.to_string())?,
            "displayName" => self.display_name = conv(value)?,
            "description" => self.description = conv(value)?,
            "installModes" => self.install_modes = conv(value)?,
            "keywords" => self.keywords = nullable_list(value).map_err(|e| e.to_string())?,
            "maintainers" => self.maintainers = conv(value)?,
            "links" => self.links = conv(value)?,
            "provider" => self.provider = conv(value)?,
            "maturity" => self.maturity = conv(value)?,
            "minKubeVersion" => self.min_kube_version = conv(value)?,
            "crdDescriptions" => self.crd_descriptions = conv(value)?,
            _ => {
                self.extra.insert(key.to_owned(), RawJson::from_value(&value));
            }
        }
        Ok(())
    }
}

/// Types a CSV metadata object field by field (the precise path: keys match case-insensitively,
/// unknown keys go to `extra`); the error names the canonical field.
fn csv_metadata_precise(map: Map<String, Value>) -> Result<CsvMetadata, (String, String)> {
    let mut meta = CsvMetadata::default();
    for (key, value) in map {
        let canonical = CSV_METADATA_KEYS
            .iter()
            .find(|k| k.eq_ignore_ascii_case(&key))
            .copied();
        let target = canonical.unwrap_or(key.as_str()).to_owned();
        meta.set(&target, value).map_err(|err| (target, err))?;
    }
    Ok(meta)
}

/// Types a CSV metadata value the way [`parse_one`] does (fast path, else the precise one).
/// `None` when it does not type at all (never the case for a value [`parse_one`] accepted).
fn type_csv_metadata(value: &RawJson) -> Option<CsvMetadata> {
    if let Ok(fast) = value.parse::<FastCsvMetadata>() {
        return Some(fast.into());
    }
    match value.to_value() {
        Value::Object(map) => csv_metadata_precise(map).ok(),
        _ => None,
    }
}

/// An `olm.csv.metadata` value, kept as its compact JSON text and typed into [`CsvMetadata`] on
/// first use (it dereferences to it).
///
/// CSV metadata is most of the bytes of a large catalog (descriptions, examples, descriptors) and
/// almost nothing reads it: validation only needs to know that it has the right shape, which
/// [`parse`] checks without building it. Typing every bundle's metadata up front was the second
/// largest cost of loading the largest public catalog.
#[derive(Clone, Default)]
pub struct LazyCsvMetadata {
    /// The value as read, when it has not been typed yet.
    raw: Option<RawJson>,
    /// Boxed: most bundles are never typed, and the empty cell then costs one pointer rather
    /// than the size of a [`CsvMetadata`] (hundreds of bytes, times every bundle).
    typed: std::sync::OnceLock<Box<CsvMetadata>>,
}

impl LazyCsvMetadata {
    /// A value already checked to fit the fast path (see [`csv_metadata_fits_fast_path`]).
    fn unparsed(raw: RawJson) -> Self {
        Self {
            raw: Some(raw),
            typed: std::sync::OnceLock::new(),
        }
    }

    /// The typed metadata (typed now if this is the first use).
    #[must_use]
    pub fn get(&self) -> &CsvMetadata {
        self.typed
            .get_or_init(|| Box::new(self.raw.as_ref().and_then(type_csv_metadata).unwrap_or_default()))
    }
}

impl From<CsvMetadata> for LazyCsvMetadata {
    fn from(meta: CsvMetadata) -> Self {
        Self {
            raw: None,
            typed: std::sync::OnceLock::from(Box::new(meta)),
        }
    }
}

impl std::ops::Deref for LazyCsvMetadata {
    type Target = CsvMetadata;

    fn deref(&self) -> &CsvMetadata {
        self.get()
    }
}

impl PartialEq for LazyCsvMetadata {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl fmt::Debug for LazyCsvMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for LazyCsvMetadata {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(serializer)
    }
}

/// One parsed property.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", content = "value")]
pub enum Property {
    /// `olm.package`.
    #[serde(rename = "olm.package")]
    Package(PackageProperty),
    /// `olm.gvk`.
    #[serde(rename = "olm.gvk")]
    Gvk(Gvk),
    /// `olm.gvk.required`.
    #[serde(rename = "olm.gvk.required")]
    GvkRequired(Gvk),
    /// `olm.package.required`.
    #[serde(rename = "olm.package.required")]
    PackageRequired(PackageRequired),
    /// `olm.bundle.object`.
    #[serde(rename = "olm.bundle.object")]
    BundleObject(BundleObject),
    /// `olm.csv.metadata`.
    #[serde(rename = "olm.csv.metadata")]
    CsvMetadata(Box<LazyCsvMetadata>),
    /// `olm.constraint`, kept as its JSON value.
    #[serde(rename = "olm.constraint")]
    Constraint(RawJson),
    /// `olm.deprecated`, kept as its JSON value.
    #[serde(rename = "olm.deprecated")]
    Deprecated(RawJson),
    /// Any other type, unchanged.
    #[serde(untagged)]
    Other(declcfg::Property),
}

/// The properties of one blob, grouped by type (order within a type is the file order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Properties {
    /// `olm.package` values (a valid bundle has exactly one).
    pub packages: Vec<PackageProperty>,
    /// Provided APIs.
    pub gvks: Vec<Gvk>,
    /// Required APIs.
    pub gvks_required: Vec<Gvk>,
    /// Required packages.
    pub packages_required: Vec<PackageRequired>,
    /// Inlined manifests.
    pub bundle_objects: Vec<BundleObject>,
    /// CSV metadata (normally at most one), typed on first use.
    pub csv_metadata: Vec<LazyCsvMetadata>,
    /// Generic constraints.
    pub constraints: Vec<RawJson>,
    /// Legacy deprecation markers.
    pub deprecated: Vec<RawJson>,
    /// Every other property, raw.
    pub others: Vec<declcfg::Property>,
}

impl Properties {
    /// All properties back as a flat list (grouped by type), e.g. for JSON output.
    #[must_use]
    pub fn to_list(&self) -> Vec<Property> {
        let mut out = Vec::new();
        out.extend(self.packages.iter().cloned().map(Property::Package));
        out.extend(self.gvks.iter().cloned().map(Property::Gvk));
        out.extend(self.gvks_required.iter().cloned().map(Property::GvkRequired));
        out.extend(
            self.packages_required
                .iter()
                .cloned()
                .map(Property::PackageRequired),
        );
        out.extend(self.bundle_objects.iter().cloned().map(Property::BundleObject));
        out.extend(
            self.csv_metadata
                .iter()
                .cloned()
                .map(|m| Property::CsvMetadata(Box::new(m))),
        );
        out.extend(self.constraints.iter().cloned().map(Property::Constraint));
        out.extend(self.deprecated.iter().cloned().map(Property::Deprecated));
        out.extend(self.others.iter().cloned().map(Property::Other));
        out
    }
}

/// Field access on one property value, case-insensitive like Go.
struct Fields<'a> {
    index: usize,
    type_: &'a str,
    map: Map<String, Value>,
}

impl Fields<'_> {
    fn error(&self, field: Option<&str>, message: String) -> PropertyError {
        PropertyError {
            index: self.index,
            type_: self.type_.to_owned(),
            field: field.map(str::to_owned),
            message,
        }
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        if let Some(value) = self.map.shift_remove(key) {
            return Some(value);
        }
        let folded = self.map.keys().find(|k| k.eq_ignore_ascii_case(key)).cloned()?;
        self.map.shift_remove(&folded)
    }

    fn string(&mut self, key: &str) -> Result<String, PropertyError> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s),
            Some(other) => {
                Err(self.error(Some(key), format!("expected a string, found {}", kind_of(&other))))
            }
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Parses one raw property (at `index` in its list).
///
/// # Errors
/// A [`PropertyError`] when a known type's value does not have the expected shape.
pub fn parse_one(index: usize, raw: declcfg::Property) -> Result<Property, PropertyError> {
    let declcfg::Property { type_, value } = raw;
    let known = matches!(
        type_.as_str(),
        TYPE_PACKAGE
            | TYPE_GVK
            | TYPE_GVK_REQUIRED
            | TYPE_PACKAGE_REQUIRED
            | TYPE_BUNDLE_OBJECT
            | TYPE_CSV_METADATA
            | TYPE_CONSTRAINT
            | TYPE_DEPRECATED
    );
    // opm refuses a missing `value`, and accepts an explicit `null` for the types it does not
    // model (a known type needs its fields).
    if value.is_absent() || (known && value.is_null()) {
        return Err(PropertyError {
            index,
            type_,
            field: None,
            message: "value must be set; add `value:` to the property".to_owned(),
        });
    }
    if !known {
        return Ok(Property::Other(declcfg::Property { type_, value }));
    }
    if matches!(type_.as_str(), TYPE_CONSTRAINT | TYPE_DEPRECATED) {
        return Ok(if type_ == TYPE_CONSTRAINT {
            Property::Constraint(value)
        } else {
            Property::Deprecated(value)
        });
    }
    // A shared value was checked before it was shared ([`crate::catalog::csv_shape`]).
    if type_ == TYPE_CSV_METADATA && (value.is_shared() || csv_metadata_fits_fast_path(&value)) {
        // Checked now (so that a bad value is reported where it is read), typed on first use.
        return Ok(Property::CsvMetadata(Box::new(LazyCsvMetadata::unparsed(value))));
    }
    if let Some(parsed) = parse_fast(&type_, &value) {
        return parsed.map_err(|(field, message)| PropertyError {
            index,
            type_: type_.clone(),
            field,
            message,
        });
    }
    let map = match value.to_value() {
        Value::Object(map) => map,
        other => {
            return Err(PropertyError {
                index,
                field: None,
                message: format!("expected an object, found {}", kind_of(&other)),
                type_,
            });
        }
    };
    let mut v = Fields {
        index,
        type_: &type_,
        map,
    };
    let parsed = match type_.as_str() {
        TYPE_PACKAGE => Property::Package(PackageProperty {
            package_name: v.string("packageName")?,
            version: v.string("version")?,
            release: v.string("release")?,
        }),
        TYPE_GVK | TYPE_GVK_REQUIRED => {
            let gvk = Gvk {
                group: v.string("group")?,
                version: v.string("version")?,
                kind: v.string("kind")?,
            };
            if type_ == TYPE_GVK {
                Property::Gvk(gvk)
            } else {
                Property::GvkRequired(gvk)
            }
        }
        TYPE_PACKAGE_REQUIRED => {
            let package_name = v.string("packageName")?;
            let raw_range = v.string("versionRange")?;
            let version_range = Range::parse(&raw_range).map_err(|err| {
                v.error(
                    Some("versionRange"),
                    format!("invalid range {raw_range:?}: {err}"),
                )
            })?;
            Property::PackageRequired(PackageRequired {
                package_name,
                version_range,
            })
        }
        TYPE_BUNDLE_OBJECT => {
            let data = v.string("data")?;
            let reference = v.string("ref")?;
            match (data.is_empty(), reference.is_empty()) {
                (false, false) => {
                    return Err(v.error(
                        None,
                        "fields `ref` and `data` are mutually exclusive; keep one".to_owned(),
                    ));
                }
                (true, false) => Property::BundleObject(BundleObject::Ref(reference)),
                _ => Property::BundleObject(BundleObject::Data(data.into())),
            }
        }
        _ => {
            // olm.csv.metadata: typed field by field, so errors name the field.
            let meta = csv_metadata_precise(std::mem::take(&mut v.map))
                .map_err(|(field, message)| v.error(Some(&field), message))?;
            Property::CsvMetadata(Box::new(LazyCsvMetadata::from(meta)))
        }
    };
    Ok(parsed)
}

const CSV_METADATA_KEYS: &[&str] = &[
    "annotations",
    "labels",
    "displayName",
    "description",
    "installModes",
    "keywords",
    "maintainers",
    "links",
    "provider",
    "maturity",
    "minKubeVersion",
    "crdDescriptions",
    "apiServiceDefinitions",
    "nativeAPIs",
];

/// Parses every property of a blob, keeping the good ones and collecting an error for each bad one.
#[must_use]
pub fn parse(raw: Vec<declcfg::Property>) -> (Properties, Vec<PropertyError>) {
    let mut out = Properties::default();
    let mut errors = Vec::new();
    for (index, prop) in raw.into_iter().enumerate() {
        match parse_one(index, prop) {
            Ok(Property::Package(p)) => out.packages.push(p),
            Ok(Property::Gvk(p)) => out.gvks.push(p),
            Ok(Property::GvkRequired(p)) => out.gvks_required.push(p),
            Ok(Property::PackageRequired(p)) => out.packages_required.push(p),
            Ok(Property::BundleObject(p)) => out.bundle_objects.push(p),
            Ok(Property::CsvMetadata(p)) => out.csv_metadata.push(*p),
            Ok(Property::Constraint(p)) => out.constraints.push(p),
            Ok(Property::Deprecated(p)) => out.deprecated.push(p),
            Ok(Property::Other(p)) => out.others.push(p),
            Err(err) => errors.push(err),
        }
    }
    (out, errors)
}

/// Parses a version the way the catalog requires it (strict semver, as opm's `semver.Parse`).
///
/// # Errors
/// The range module's error, which names the problem.
pub fn parse_version(version: &str) -> Result<semver::Version, version_range::RangeError> {
    version_range::parse_version_strict(version)
}

#[cfg(test)]
mod tests;
