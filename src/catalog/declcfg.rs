//! declcfg: the raw file-based catalog (FBC) blobs, kept as close to the files as possible.
//!
//! # The format
//!
//! A file-based catalog is a set of JSON objects ("blobs"), spread over any number of files, each
//! carrying a `schema` field that says what it is (operator-registry `alpha/declcfg/declcfg.go`):
//!
//! - `olm.package`: one per package: `name`, `defaultChannel`, optional `icon`
//!   (`{base64data, mediatype}`), `description`, `properties`;
//! - `olm.channel`: `package`, `name`, and `entries`, each `{name, replaces?, skips?, skipRange?}`.
//!   In FBC the upgrade graph lives *only* here;
//! - `olm.bundle`: `package`, `name`, `image`, `properties` (typed in
//!   [`crate::catalog::property`]), `relatedImages` (`{name, image}`);
//! - `olm.deprecations`: `package` and `entries` of `{reference: {schema, name}, message}`;
//! - anything else with a `schema` is kept verbatim as a [`Meta`] ("others"): opm allows custom
//!   schemas, and so do we; they are written back unchanged by render.
//!
//! An object without `schema` is an error ("object ... is missing root schema field"), as in opm.
//!
//! # Decoding rules and the choices we made
//!
//! Blobs are decoded from [`serde_json::Value`]s (see [`crate::codec`]) by hand rather than with a
//! derived `Deserialize`, for two reasons: error messages name the exact field that is wrong
//! (`entries[2].skips[0]: expected a string, found a number`), and we can follow Go's
//! `encoding/json`, which opm uses:
//!
//! - **unknown fields are ignored** (and not written back), as Go drops them;
//! - **keys match case-insensitively**: an exact match of the canonical camelCase key wins,
//!   otherwise the first key equal to it ignoring ASCII case is used (`DefaultChannel` works);
//! - **`null` or a missing field means the zero value** (an empty string or list), as in Go; a
//!   value of the wrong type is an error;
//! - property lists are kept as raw `{type, value}` pairs here; unknown property types are kept.
//!
//! Every blob remembers its [`Origin`] (display path of the file, document index, and line when
//! known) so that validation can say where a problem lives. Decoding never panics: a document that
//! cannot be decoded produces a [`DecodeError`] and is skipped, and the caller reports it.

use std::{fmt, sync::Arc};

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{
    catalog::{
        csv_shape,
        packed::PackedText,
        raw::{Interner, RawJson},
    },
    codec,
};

mod fast;

/// Schema of package blobs.
pub const SCHEMA_PACKAGE: &str = "olm.package";
/// Schema of channel blobs.
pub const SCHEMA_CHANNEL: &str = "olm.channel";
/// Schema of bundle blobs.
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
/// Schema of deprecation blobs.
pub const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// Where a blob came from: the file it was read from and its position in that file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    /// Display path of the file (relative to the catalog root when loaded from a directory).
    pub path: Arc<str>,
    /// 0-based index of the document within the file.
    pub document: usize,
    /// 1-based line the document starts on, when known.
    pub line: Option<usize>,
}

impl Origin {
    /// An origin for blobs built in memory (tests, render) rather than read from a file.
    #[must_use]
    pub fn new(path: &str, document: usize) -> Self {
        Self {
            path: Arc::from(path),
            document,
            line: None,
        }
    }
}

impl Default for Origin {
    fn default() -> Self {
        Self::new("<memory>", 0)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line} (document {})", self.path, self.document),
            None => write!(f, "{} (document {})", self.path, self.document),
        }
    }
}

/// A raw property: a type name and an arbitrary JSON value (typed in
/// [`crate::catalog::property`]), kept as compact JSON text until it is parsed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Property {
    /// The property type, such as `olm.package` or `olm.gvk`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The property value; `null` when the blob had none.
    pub value: RawJson,
}

impl Property {
    /// A property of type `type_` holding `value`.
    #[must_use]
    pub fn new(type_: &str, value: &Value) -> Self {
        Self {
            type_: type_.to_owned(),
            value: RawJson::from_value(value),
        }
    }
}

/// A package icon: base64 data and its media type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Icon {
    /// The image, base64 encoded (kept packed: icons are a tenth of a large catalog).
    #[serde(rename = "base64data")]
    pub base64data: PackedText,
    /// The media type, such as `image/svg+xml`.
    #[serde(rename = "mediatype")]
    pub mediatype: String,
}

/// An `olm.package` blob.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// Always `olm.package`.
    pub schema: String,
    /// Package name (a DNS-1123 label).
    pub name: String,
    /// Name of the channel subscriptions use when they name none.
    pub default_channel: String,
    /// Optional icon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
    /// Free-text description.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Package properties, kept raw.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
    /// Where the blob came from.
    #[serde(skip)]
    pub origin: Origin,
}

/// One entry of an `olm.channel`: a bundle name and its upgrade edges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ChannelEntry {
    /// Name of the bundle this entry places in the channel.
    pub name: String,
    /// The bundle this one replaces (may name a bundle not in the catalog).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub replaces: String,
    /// Bundles this one skips.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// Versions this one upgrades from directly, as a blang/semver range.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub skip_range: String,
}

/// An `olm.channel` blob.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Channel {
    /// Always `olm.channel`.
    pub schema: String,
    /// Channel name.
    pub name: String,
    /// Package the channel belongs to.
    pub package: String,
    /// Entries in file order.
    pub entries: Vec<ChannelEntry>,
    /// Channel properties, kept raw.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
    /// Where the blob came from.
    #[serde(skip)]
    pub origin: Origin,
}

/// A related image of a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelatedImage {
    /// Optional name of the image.
    pub name: String,
    /// Image pull spec.
    pub image: String,
}

/// An `olm.bundle` blob.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    /// Always `olm.bundle`.
    pub schema: String,
    /// Bundle name (usually the CSV name).
    pub name: String,
    /// Package the bundle belongs to.
    pub package: String,
    /// Bundle image pull spec (may be empty when the objects are inlined).
    pub image: String,
    /// Bundle properties, kept raw.
    pub properties: Vec<Property>,
    /// Images the bundle uses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related_images: Vec<RelatedImage>,
    /// Where the blob came from.
    #[serde(skip)]
    pub origin: Origin,
}

/// What a deprecation entry points at.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct PackageScopedReference {
    /// `olm.package`, `olm.channel` or `olm.bundle`.
    pub schema: String,
    /// Channel or bundle name; empty for the package itself.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// One entry of an `olm.deprecations` blob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeprecationEntry {
    /// The deprecated object.
    pub reference: PackageScopedReference,
    /// Message shown to users.
    pub message: String,
}

/// An `olm.deprecations` blob.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deprecation {
    /// Always `olm.deprecations`.
    pub schema: String,
    /// Package the deprecations apply to.
    pub package: String,
    /// Deprecated objects.
    pub entries: Vec<DeprecationEntry>,
    /// Where the blob came from.
    #[serde(skip)]
    pub origin: Origin,
}

/// A blob with a schema this crate does not model, kept verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    /// Its schema.
    pub schema: String,
    /// Its `package` field, if a string.
    pub package: String,
    /// Its `name` field, if a string.
    pub name: String,
    /// The whole object, unchanged.
    pub blob: Value,
    /// Where the blob came from.
    pub origin: Origin,
}

impl Serialize for Meta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.blob.serialize(serializer)
    }
}

/// Everything read from a catalog, grouped by schema, in the order it was read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeclarativeConfig {
    /// `olm.package` blobs.
    pub packages: Vec<Package>,
    /// `olm.channel` blobs.
    pub channels: Vec<Channel>,
    /// `olm.bundle` blobs.
    pub bundles: Vec<Bundle>,
    /// `olm.deprecations` blobs.
    pub deprecations: Vec<Deprecation>,
    /// Blobs of any other schema.
    pub others: Vec<Meta>,
}

/// A reference to one blob of any schema, serializable as the blob itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Blob<'a> {
    /// An `olm.package`.
    Package(&'a Package),
    /// An `olm.channel`.
    Channel(&'a Channel),
    /// An `olm.bundle`.
    Bundle(&'a Bundle),
    /// An `olm.deprecations`.
    Deprecation(&'a Deprecation),
    /// Any other schema.
    Other(&'a Meta),
}

impl Serialize for Blob<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Blob::Package(b) => b.serialize(serializer),
            Blob::Channel(b) => b.serialize(serializer),
            Blob::Bundle(b) => b.serialize(serializer),
            Blob::Deprecation(b) => b.serialize(serializer),
            Blob::Other(b) => b.serialize(serializer),
        }
    }
}

/// Why a document could not become a blob. Every variant names the file and document.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The text is not valid YAML or JSON; decoding of the file stopped there.
    #[error("{message}")]
    Syntax {
        /// The file, and the document where decoding stopped.
        origin: Origin,
        /// The decoder's message, with the position.
        message: String,
    },
    /// The document is a scalar or a list, not an object.
    #[error("{origin}: document is {found}, expected an object with a `schema` field")]
    NotAnObject {
        /// The document.
        origin: Origin,
        /// What was found instead ("a list", "a string", ...).
        found: &'static str,
    },
    /// The object has no `schema`.
    #[error(
        "{origin}: object '{snippet}' is missing root schema field; add `schema:` with one of \
         olm.package, olm.channel, olm.bundle, olm.deprecations (or a custom schema)"
    )]
    MissingSchema {
        /// The document.
        origin: Origin,
        /// The beginning of the object, as compact JSON.
        snippet: String,
    },
    /// A field has the wrong type.
    #[error("{origin}: {problem}")]
    InvalidField {
        /// The document.
        origin: Origin,
        /// Which field, and what is wrong with it.
        problem: Box<FieldProblem>,
    },
}

/// A field of a blob whose JSON type is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{schema} {name:?}: field `{field}`: expected {expected}, found {found}")]
pub struct FieldProblem {
    /// The blob's schema.
    pub schema: String,
    /// The blob's name (or package, for deprecations), possibly empty.
    pub name: String,
    /// Path of the field within the blob, such as `entries[2].skips[0]`.
    pub field: String,
    /// What the field should be.
    pub expected: &'static str,
    /// What it was.
    pub found: &'static str,
}

impl DecodeError {
    /// Where the problem is: the file and document.
    #[must_use]
    pub fn origin(&self) -> &Origin {
        match self {
            DecodeError::Syntax { origin, .. }
            | DecodeError::NotAnObject { origin, .. }
            | DecodeError::MissingSchema { origin, .. }
            | DecodeError::InvalidField { origin, .. } => origin,
        }
    }
}

/// Describes the JSON type of a value for messages.
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

/// Field extraction from one object, following Go's `encoding/json` conventions (see module docs).
struct Fields<'o> {
    map: Map<String, Value>,
    origin: &'o Origin,
    schema: &'o str,
    name: String,
    prefix: String,
}

type FieldResult<T> = Result<T, DecodeError>;

impl<'o> Fields<'o> {
    fn new(map: Map<String, Value>, origin: &'o Origin, schema: &'o str) -> Self {
        Self {
            map,
            origin,
            schema,
            name: String::new(),
            prefix: String::new(),
        }
    }

    fn nested(&self, map: Map<String, Value>, prefix: String) -> Fields<'o> {
        Fields {
            map,
            origin: self.origin,
            schema: self.schema,
            name: self.name.clone(),
            prefix,
        }
    }

    fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    fn error(&self, field: String, expected: &'static str, found: &Value) -> DecodeError {
        DecodeError::InvalidField {
            origin: self.origin.clone(),
            problem: Box::new(FieldProblem {
                schema: self.schema.to_owned(),
                name: self.name.clone(),
                field,
                expected,
                found: kind_of(found),
            }),
        }
    }

    /// Removes the value of `key`: exact match first, then the first key equal ignoring case.
    fn take(&mut self, key: &str) -> Option<Value> {
        if let Some(value) = self.map.shift_remove(key) {
            return Some(value);
        }
        let folded = self.map.keys().find(|k| k.eq_ignore_ascii_case(key)).cloned()?;
        self.map.shift_remove(&folded)
    }

    fn string(&mut self, key: &str) -> FieldResult<String> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(self.error(self.path(key), "a string", &other)),
        }
    }

    fn list(&mut self, key: &str) -> FieldResult<Vec<Value>> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.error(self.path(key), "a list", &other)),
        }
    }

    fn object(&mut self, key: &str) -> FieldResult<Option<Map<String, Value>>> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(other) => Err(self.error(self.path(key), "an object", &other)),
        }
    }

    fn string_list(&mut self, key: &str) -> FieldResult<Vec<String>> {
        let items = self.list(key)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            match item {
                Value::String(s) => out.push(s),
                Value::Null => out.push(String::new()),
                other => return Err(self.error(format!("{}[{i}]", self.path(key)), "a string", &other)),
            }
        }
        Ok(out)
    }

    /// Each element of the list `key` as an object, with its field path.
    fn object_list(&mut self, key: &str) -> FieldResult<Vec<(String, Map<String, Value>)>> {
        let items = self.list(key)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let path = format!("{}[{i}]", self.path(key));
            match item {
                Value::Object(map) => out.push((path, map)),
                other => return Err(self.error(path, "an object", &other)),
            }
        }
        Ok(out)
    }

    fn properties(&mut self) -> FieldResult<Vec<Property>> {
        let items = self.object_list("properties")?;
        let mut out = Vec::with_capacity(items.len());
        for (path, map) in items {
            let mut f = self.nested(map, path);
            let type_ = f.string("type")?;
            let value = f
                .take("value")
                .map_or_else(RawJson::absent, |v| RawJson::from_value(&v));
            out.push(Property { type_, value });
        }
        Ok(out)
    }
}

fn decode_package(mut f: Fields<'_>, schema: String) -> FieldResult<Package> {
    f.name = f.string("name")?;
    let default_channel = f.string("defaultChannel")?;
    let icon = match f.object("icon")? {
        None => None,
        Some(map) => {
            let mut icon = f.nested(map, "icon".to_owned());
            Some(Icon {
                base64data: PackedText::from(icon.string("base64data")?),
                mediatype: icon.string("mediatype")?,
            })
        }
    };
    let description = f.string("description")?;
    let properties = f.properties()?;
    Ok(Package {
        schema,
        name: std::mem::take(&mut f.name),
        default_channel,
        icon,
        description,
        properties,
        origin: f.origin.clone(),
    })
}

fn decode_channel(mut f: Fields<'_>, schema: String) -> FieldResult<Channel> {
    f.name = f.string("name")?;
    let package = f.string("package")?;
    let mut entries = Vec::new();
    for (path, map) in f.object_list("entries")? {
        let mut e = f.nested(map, path);
        entries.push(ChannelEntry {
            name: e.string("name")?,
            replaces: e.string("replaces")?,
            skips: e.string_list("skips")?,
            skip_range: e.string("skipRange")?,
        });
    }
    let properties = f.properties()?;
    Ok(Channel {
        schema,
        name: std::mem::take(&mut f.name),
        package,
        entries,
        properties,
        origin: f.origin.clone(),
    })
}

fn decode_bundle(mut f: Fields<'_>, schema: String) -> FieldResult<Bundle> {
    f.name = f.string("name")?;
    let package = f.string("package")?;
    let image = f.string("image")?;
    let properties = f.properties()?;
    let mut related_images = Vec::new();
    for (path, map) in f.object_list("relatedImages")? {
        let mut r = f.nested(map, path);
        related_images.push(RelatedImage {
            name: r.string("name")?,
            image: r.string("image")?,
        });
    }
    Ok(Bundle {
        schema,
        name: std::mem::take(&mut f.name),
        package,
        image,
        properties,
        related_images,
        origin: f.origin.clone(),
    })
}

fn decode_deprecation(mut f: Fields<'_>, schema: String) -> FieldResult<Deprecation> {
    let package = f.string("package")?;
    f.name.clone_from(&package);
    let mut entries = Vec::new();
    for (path, map) in f.object_list("entries")? {
        let mut e = f.nested(map, path.clone());
        let reference = match e.object("reference")? {
            None => PackageScopedReference {
                schema: String::new(),
                name: String::new(),
            },
            Some(map) => {
                let mut r = e.nested(map, format!("{path}.reference"));
                PackageScopedReference {
                    schema: r.string("schema")?,
                    name: r.string("name")?,
                }
            }
        };
        entries.push(DeprecationEntry {
            reference,
            message: e.string("message")?,
        });
    }
    Ok(Deprecation {
        schema,
        package,
        entries,
        origin: f.origin.clone(),
    })
}

/// The first `max` characters of the compact JSON form of `value`, for messages.
fn snippet(value: &Value, max: usize) -> String {
    let text = value.to_string();
    if text.chars().count() <= max {
        text
    } else {
        let mut cut: String = text.chars().take(max).collect();
        cut.push_str("...");
        cut
    }
}

impl DeclarativeConfig {
    /// Decodes `text` (displayed as `path`) and adds its blobs; returns every problem found.
    /// Documents that fail are skipped; the others are kept.
    ///
    /// Well-formed files take a fast path that decodes blobs straight from the text; a file with
    /// anything unusual in it is decoded again document by document through JSON values, which
    /// gives the Go-compatible treatment and precise messages described in the module docs.
    pub fn decode_str(&mut self, path: &str, text: &str) -> Vec<DecodeError> {
        self.decode_str_with(codec::YamlDecoder::Fast, path, text)
    }

    /// [`DeclarativeConfig::decode_str`] with the YAML decoder chosen (benchmarks and tests
    /// compare the two; results are the same).
    pub fn decode_str_with(&mut self, yaml: codec::YamlDecoder, path: &str, text: &str) -> Vec<DecodeError> {
        if let Ok(docs) = codec::decode_documents_as::<fast::FastBlob>(yaml, path, text) {
            let shared: Arc<str> = Arc::from(path);
            let mut staged = DeclarativeConfig::default();
            let all_fast = docs.into_iter().all(|doc| {
                let origin = Origin {
                    path: Arc::clone(&shared),
                    document: doc.index,
                    line: doc.line,
                };
                staged.add_fast(origin, doc.value)
            });
            if all_fast {
                staged.share_values_from([0; 3]);
                self.merge(staged);
                return Vec::new();
            }
        }
        self.decode_str_precise(yaml, path, text)
    }

    /// The precise path of [`DeclarativeConfig::decode_str`]: documents as JSON values, then blobs.
    pub fn decode_str_precise(
        &mut self,
        yaml: codec::YamlDecoder,
        path: &str,
        text: &str,
    ) -> Vec<DecodeError> {
        let decoded = codec::decode_documents_with(yaml, path, text);
        let marks = [self.packages.len(), self.channels.len(), self.bundles.len()];
        let path: Arc<str> = Arc::from(path);
        let mut problems = Vec::new();
        for doc in decoded.documents {
            let origin = Origin {
                path: Arc::clone(&path),
                document: doc.index,
                line: doc.line,
            };
            if let Err(err) = self.add_value(origin, doc.value) {
                problems.push(err);
            }
        }
        if let Some(err) = decoded.error {
            let (document, line) = match &err {
                codec::Error::InvalidYaml { location, .. }
                | codec::Error::InvalidJson { location, .. }
                | codec::Error::NotJsonCompatible { location, .. } => (location.document, location.line),
                _ => (0, None),
            };
            problems.push(DecodeError::Syntax {
                origin: Origin {
                    path: Arc::clone(&path),
                    document,
                    line,
                },
                message: err.to_string(),
            });
        }
        self.share_values_from(marks);
        problems
    }

    /// Shares the large property values of the packages, channels and bundles from `marks` on
    /// (indexes into the three lists) through one [`Interner`]: the blobs of one file, that is
    /// of one package, whose bundles repeat most of their `olm.csv.metadata` (see
    /// [`RawJson::share`]).
    fn share_values_from(&mut self, marks: [usize; 3]) {
        let mut interner = Interner::default();
        let [packages, channels, bundles] = marks;
        let properties = self
            .packages
            .get_mut(packages..)
            .unwrap_or_default()
            .iter_mut()
            .flat_map(|p| &mut p.properties)
            .chain(
                self.channels
                    .get_mut(channels..)
                    .unwrap_or_default()
                    .iter_mut()
                    .flat_map(|c| &mut c.properties),
            )
            .chain(
                self.bundles
                    .get_mut(bundles..)
                    .unwrap_or_default()
                    .iter_mut()
                    .flat_map(|b| &mut b.properties),
            );
        for property in properties {
            // A shared value is packed: the shape of CSV metadata is checked now, while its text
            // is at hand, and only a value that fits is shared (see [`csv_shape`]).
            if property.type_ == csv_shape::PROPERTY_TYPE && !csv_shape::fits(&property.value) {
                continue;
            }
            property.value.share(&mut interner);
        }
    }

    /// Decodes one text into a new config; see [`DeclarativeConfig::decode_str`].
    #[must_use]
    pub fn from_str_with_problems(path: &str, text: &str) -> (Self, Vec<DecodeError>) {
        Self::from_str_with_problems_using(codec::YamlDecoder::Fast, path, text)
    }

    /// [`DeclarativeConfig::from_str_with_problems`] with the YAML decoder chosen.
    #[must_use]
    pub fn from_str_with_problems_using(
        yaml: codec::YamlDecoder,
        path: &str,
        text: &str,
    ) -> (Self, Vec<DecodeError>) {
        let mut cfg = Self::default();
        let problems = cfg.decode_str_with(yaml, path, text);
        (cfg, problems)
    }

    /// Adds one decoded document, read from `origin`.
    ///
    /// # Errors
    /// A [`DecodeError`] naming the document when it is not an object, has no `schema`, or has a
    /// field of the wrong type; nothing is added then.
    pub fn add_value(&mut self, origin: Origin, value: Value) -> Result<(), DecodeError> {
        let map = match value {
            Value::Object(map) => map,
            other => {
                return Err(DecodeError::NotAnObject {
                    origin,
                    found: kind_of(&other),
                });
            }
        };
        let mut f = Fields::new(map, &origin, "object");
        let schema = match f.take("schema") {
            Some(Value::String(s)) if !s.is_empty() => s,
            None | Some(Value::Null) | Some(Value::String(_)) => {
                let map = std::mem::take(&mut f.map);
                return Err(DecodeError::MissingSchema {
                    snippet: snippet(&Value::Object(map), 120),
                    origin: origin.clone(),
                });
            }
            Some(other) => return Err(f.error("schema".to_owned(), "a string", &other)),
        };
        match schema.as_str() {
            SCHEMA_PACKAGE => {
                let f = Fields::new(f.map, &origin, SCHEMA_PACKAGE);
                self.packages.push(decode_package(f, schema)?);
            }
            SCHEMA_CHANNEL => {
                let f = Fields::new(f.map, &origin, SCHEMA_CHANNEL);
                self.channels.push(decode_channel(f, schema)?);
            }
            SCHEMA_BUNDLE => {
                let f = Fields::new(f.map, &origin, SCHEMA_BUNDLE);
                self.bundles.push(decode_bundle(f, schema)?);
            }
            SCHEMA_DEPRECATIONS => {
                let f = Fields::new(f.map, &origin, SCHEMA_DEPRECATIONS);
                self.deprecations.push(decode_deprecation(f, schema)?);
            }
            _ => {
                let mut map = f.map;
                let text_field = |map: &Map<String, Value>, key: &str| {
                    map.iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(key))
                        .and_then(|(_, v)| v.as_str())
                        .unwrap_or_default()
                        .to_owned()
                };
                let package = text_field(&map, "package");
                let name = text_field(&map, "name");
                // Put `schema` back first so the blob round-trips with its envelope on top.
                let mut blob = Map::with_capacity(map.len() + 1);
                blob.insert("schema".to_owned(), Value::String(schema.clone()));
                blob.append(&mut map);
                self.others.push(Meta {
                    schema,
                    package,
                    name,
                    blob: Value::Object(blob),
                    origin,
                });
            }
        }
        Ok(())
    }

    /// Appends every blob of `other` (kept in order after the blobs already present).
    pub fn merge(&mut self, other: DeclarativeConfig) {
        self.packages.extend(other.packages);
        self.channels.extend(other.channels);
        self.bundles.extend(other.bundles);
        self.deprecations.extend(other.deprecations);
        self.others.extend(other.others);
    }

    /// True when no blob at all was read.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
            && self.channels.is_empty()
            && self.bundles.is_empty()
            && self.deprecations.is_empty()
            && self.others.is_empty()
    }

    /// Every blob in the order `opm render` writes them: packages sorted by name, each followed by
    /// its channels (by name), bundles (by name), deprecations and other blobs (by schema, then
    /// name); blobs of no known package come last, in the same order.
    #[must_use]
    pub fn blobs(&self) -> Vec<Blob<'_>> {
        use std::collections::BTreeSet;
        let mut names: BTreeSet<&str> = self.packages.iter().map(|p| p.name.as_str()).collect();
        names.extend(self.channels.iter().map(|c| c.package.as_str()));
        names.extend(self.bundles.iter().map(|b| b.package.as_str()));
        names.extend(self.deprecations.iter().map(|d| d.package.as_str()));
        names.extend(self.others.iter().map(|o| o.package.as_str()));
        // The empty package name sorts first; write its blobs last.
        let mut order: Vec<&str> = names.iter().copied().filter(|n| !n.is_empty()).collect();
        if names.contains("") {
            order.push("");
        }
        let mut out = Vec::with_capacity(
            self.packages.len()
                + self.channels.len()
                + self.bundles.len()
                + self.deprecations.len()
                + self.others.len(),
        );
        for pkg in order {
            out.extend(self.packages.iter().filter(|p| p.name == pkg).map(Blob::Package));
            let mut channels: Vec<&Channel> = self.channels.iter().filter(|c| c.package == pkg).collect();
            channels.sort_by(|a, b| a.name.cmp(&b.name));
            out.extend(channels.into_iter().map(Blob::Channel));
            let mut bundles: Vec<&Bundle> = self.bundles.iter().filter(|b| b.package == pkg).collect();
            bundles.sort_by(|a, b| a.name.cmp(&b.name));
            out.extend(bundles.into_iter().map(Blob::Bundle));
            out.extend(
                self.deprecations
                    .iter()
                    .filter(|d| d.package == pkg)
                    .map(Blob::Deprecation),
            );
            let mut others: Vec<&Meta> = self.others.iter().filter(|o| o.package == pkg).collect();
            others.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
            out.extend(others.into_iter().map(Blob::Other));
        }
        out
    }

    /// Writes the catalog as a multi-document YAML stream, in [`DeclarativeConfig::blobs`] order.
    ///
    /// # Errors
    /// A [`codec::Error`] if a blob cannot be encoded.
    pub fn to_yaml(&self) -> codec::Result<String> {
        codec::to_yaml_documents(&self.blobs())
    }

    /// Writes the catalog as a JSON stream, in [`DeclarativeConfig::blobs`] order.
    ///
    /// # Errors
    /// A [`codec::Error`] if a blob cannot be encoded.
    pub fn to_json(&self) -> codec::Result<String> {
        codec::to_json_stream(&self.blobs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const ALL_SCHEMAS: &str = r#"
schema: olm.package
name: etcd
defaultChannel: stable
icon: {base64data: PHN2Zy8+, mediatype: image/svg+xml}
description: key-value store
---
schema: olm.channel
package: etcd
name: stable
entries:
  - name: etcd.v0.9.2
    replaces: etcd.v0.9.0
    skips: [etcd.v0.9.1, null]
    skipRange: '>=0.9.0 <0.9.2'
  - name: etcd.v0.9.0
---
schema: olm.bundle
package: etcd
name: etcd.v0.9.2
image: quay.io/example/etcd:v0.9.2
properties:
  - type: olm.package
    value: {packageName: etcd, version: 0.9.2}
  - type: olm.csv.metadata
    value:
      displayName: etcd
      crdDescriptions:
        owned:
          - {name: a.b, version: v1, kind: A, specDescriptors: [{path: size, x-descriptors: [a]}]}
relatedImages:
  - {name: op, image: quay.io/example/op:v1}
---
schema: olm.deprecations
package: etcd
entries:
  - reference: {schema: olm.bundle, name: etcd.v0.9.0}
    message: use 0.9.2
"#;

    #[test]
    fn keys_in_another_case_match_like_go_and_unknown_fields_are_ignored() {
        let text = "Schema: olm.package\nName: etcd\nDefaultChannel: stable\nunknownField: 3\n";
        let (cfg, problems) = DeclarativeConfig::from_str_with_problems("c.yaml", text);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(cfg.packages[0].name, "etcd");
        assert_eq!(cfg.packages[0].default_channel, "stable");
    }

    #[test]
    fn a_wrongly_typed_field_names_its_path_and_the_document_is_skipped() {
        let text = "schema: olm.channel\npackage: etcd\nname: s\nentries:\n  - name: a\n    skips: [1]\n";
        let (cfg, problems) = DeclarativeConfig::from_str_with_problems("c.yaml", text);
        assert!(cfg.channels.is_empty());
        assert_eq!(
            problems[0].to_string(),
            "c.yaml (document 0): olm.channel \"s\": field `entries[0].skips[0]`: expected a string, found a number"
        );
    }

    #[test]
    fn objects_without_schema_and_non_objects_are_reported_and_the_rest_kept() {
        let text = "name: orphan\n---\n[1, 2]\n---\nschema: olm.package\nname: etcd\n";
        let (cfg, problems) = DeclarativeConfig::from_str_with_problems("c.yaml", text);
        assert_eq!(cfg.packages.len(), 1);
        assert!(
            matches!(&problems[0], DecodeError::MissingSchema { snippet, .. } if snippet == r#"{"name":"orphan"}"#)
        );
        assert!(matches!(
            &problems[1],
            DecodeError::NotAnObject { found: "a list", .. }
        ));
    }

    #[test]
    fn unknown_schemas_are_kept_verbatim_with_their_schema_first() {
        let text = "kind: x\nschema: example.com.notes\npackage: etcd\nname: n\nbody: {a: [1]}\n";
        let (cfg, problems) = DeclarativeConfig::from_str_with_problems("c.yaml", text);
        assert!(problems.is_empty());
        let meta = &cfg.others[0];
        assert_eq!(
            (meta.schema.as_str(), meta.package.as_str(), meta.name.as_str()),
            ("example.com.notes", "etcd", "n")
        );
        let keys: Vec<_> = meta.blob.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, vec!["schema", "kind", "package", "name", "body"]);
        assert!(cfg.to_yaml().unwrap().contains("body:\n  a:\n  - 1\n"));
    }

    #[test]
    fn blobs_are_written_grouped_by_package_in_opm_order() {
        let (cfg, _) = DeclarativeConfig::from_str_with_problems("c", ALL_SCHEMAS);
        let schemas: Vec<_> = cfg
            .blobs()
            .iter()
            .map(|b| match b {
                Blob::Package(_) => "package",
                Blob::Channel(_) => "channel",
                Blob::Bundle(_) => "bundle",
                Blob::Deprecation(_) => "deprecation",
                Blob::Other(_) => "other",
            })
            .collect();
        assert_eq!(schemas, vec!["package", "channel", "bundle", "deprecation"]);
    }
}

#[cfg(test)]
mod fuzz_regressions {
    use super::*;

    /// fuzz/artifacts catalog_load crash (2026-11-28): an `olm.package` property with its
    /// `version` key twice, the first a plain scalar holding `packageName:`.
    #[test]
    fn a_duplicate_key_in_a_property_value_reads_the_same_on_both_paths() {
        let text = "---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v0.9.0\n---\nschema: olm.bundle\npackage: etcd\nname: etcd.v0.9.0\nimage: quay.io/example/etcd-bundle:v0.9.0\nproperties:\n  - type: olm.package\n    value:\n      packageName: etcd\n      version:   packageName:avt lu\n      version: 1.0.0\n";
        let messages = |problems: Vec<DecodeError>| -> Vec<String> {
            problems.iter().map(ToString::to_string).collect()
        };
        let mut fast = DeclarativeConfig::default();
        let fast_problems = messages(fast.decode_str_with(codec::YamlDecoder::Fast, "f.yaml", text));
        let mut precise = DeclarativeConfig::default();
        let precise_problems = messages(precise.decode_str_precise(codec::YamlDecoder::Fast, "f.yaml", text));
        assert_eq!(fast_problems, precise_problems);
        assert_eq!(fast, precise);
    }
}
