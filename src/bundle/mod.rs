//! bundle: registry+v1 bundle directories, read from an in-memory file tree, and their FBC rendering.
//!
//! # The format
//!
//! A registry+v1 bundle is one version of one operator, laid out as two directories (the layout of
//! a bundle image, and of the `bundles/` tree in this repository):
//!
//! ```text
//! manifests/   the ClusterServiceVersion (exactly one), the CRDs it owns, and other supported objects
//! metadata/    annotations.yaml (required), dependencies.yaml and properties.yaml (optional)
//! ```
//!
//! `metadata/annotations.yaml` has a single top-level `annotations:` map with the keys OLM also reads
//! from bundle image labels (operator-registry `pkg/lib/bundle`):
//!
//! | key (`operators.operatorframework.io.bundle.` + ...) | rule |
//! |---|---|
//! | `mediatype.v1` | required, must be `registry+v1` (`plain` and `helm` bundles are not supported) |
//! | `manifests.v1` | required (the path of the manifests directory, conventionally `manifests/`) |
//! | `metadata.v1` | required (conventionally `metadata/`) |
//! | `package.v1` | required, the package the bundle belongs to |
//! | `channels.v1` | required, comma-separated, at least one non-empty channel name |
//! | `channel.default.v1` | optional, not empty when present |
//!
//! Like opm, we read the manifests from `manifests/` and the metadata from `metadata/`; the two path
//! annotations must be present but their values are not used (operator-registry does not use them
//! either).
//!
//! Every file directly in `manifests/` is decoded as a stream of YAML or JSON documents. Each
//! document must be a Kubernetes object with `apiVersion` and `kind`, and the kind must be one of the
//! kinds OLM can install from a registry+v1 bundle ([`SUPPORTED_KINDS`], from operator-registry's
//! `supported_resources.go` plus `ConsolePlugin`, which OLM's step executor also applies). There must
//! be exactly one `ClusterServiceVersion`; its `metadata.name` is the bundle name and its
//! `spec.version` (strict semver) the bundle version. Every CRD the CSV lists under
//! `spec.customresourcedefinitions.owned` must be shipped in the bundle with that group, kind and
//! version (operator-registry's `AllProvidedAPIsInBundle`).
//!
//! # Rendering to FBC (what `opm render <bundle-dir>` produces)
//!
//! [`Bundle::render`] builds the `olm.bundle` document of a file-based catalog. Its properties are
//! derived exactly as operator-registry's `ObjectsAndPropertiesFromBundle` does for a bundle without
//! an image:
//!
//! - `olm.package {packageName, version}`: the package annotation and the CSV version, unless
//!   `metadata/properties.yaml` (or the CSV's `olm.properties` annotation) already carries one;
//! - `olm.gvk {group, kind, version}` for every version of every CRD in the bundle, and for every
//!   owned APIService of the CSV; plus any `olm.gvk` declared as a property;
//! - `olm.gvk.required` for every CRD and APIService the CSV lists as required, and every `olm.gvk`
//!   entry of `metadata/dependencies.yaml`;
//! - `olm.package.required {packageName, versionRange}` for every `olm.package` dependency;
//! - every other dependency (`olm.label`, `olm.constraint`) and property kept as written;
//! - one `olm.bundle.object {data}` per manifest: the object as JSON (keys sorted, as Go's encoder
//!   writes maps) in base64. A bundle directory has no image, and the FBC rule is "image or objects":
//!   the inlined objects are what lets the catalog install without pulling a bundle image.
//!
//! Duplicate `olm.gvk`/`olm.gvk.required` values are dropped, properties are sorted by type and then
//! by their compact JSON value, and the `olm.bundle.object` properties are moved to the end, so the
//! output is deterministic and matches opm's order. `relatedImages` lists the CSV's
//! `spec.relatedImages` and every container and init-container image of the CSV's deployments, once
//! each, sorted by image. The channel entries are not part of a bundle's rendering: channels live in
//! their own `olm.channel` documents (see `bundles/redis-operator/channels.yaml`).
//!
//! Everything here is pure: the caller reads the directory into a [`FileTree`].

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::codec;

/// The annotation key prefix of registry+v1 bundles.
pub const ANNOTATION_PREFIX: &str = "operators.operatorframework.io.bundle.";
/// Annotation key: the bundle media type.
pub const MEDIATYPE_KEY: &str = "operators.operatorframework.io.bundle.mediatype.v1";
/// Annotation key: the manifests directory.
pub const MANIFESTS_KEY: &str = "operators.operatorframework.io.bundle.manifests.v1";
/// Annotation key: the metadata directory.
pub const METADATA_KEY: &str = "operators.operatorframework.io.bundle.metadata.v1";
/// Annotation key: the package name.
pub const PACKAGE_KEY: &str = "operators.operatorframework.io.bundle.package.v1";
/// Annotation key: the channels (comma-separated).
pub const CHANNELS_KEY: &str = "operators.operatorframework.io.bundle.channels.v1";
/// Annotation key: the default channel.
pub const DEFAULT_CHANNEL_KEY: &str = "operators.operatorframework.io.bundle.channel.default.v1";
/// The only media type supported.
pub const REGISTRY_V1: &str = "registry+v1";

/// Kinds a registry+v1 bundle may ship (operator-registry `supported_resources.go` + ConsolePlugin).
pub const SUPPORTED_KINDS: &[&str] = &[
    "ClusterServiceVersion",
    "CustomResourceDefinition",
    "Secret",
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "ServiceAccount",
    "Service",
    "Role",
    "RoleBinding",
    "PrometheusRule",
    "ServiceMonitor",
    "PodDisruptionBudget",
    "PriorityClass",
    "VerticalPodAutoscaler",
    "ConsoleYAMLSample",
    "ConsoleQuickStart",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsolePlugin",
    "NetworkPolicy",
    "PodMonitor",
];

const CSV_KIND: &str = "ClusterServiceVersion";
const CRD_KIND: &str = "CustomResourceDefinition";

/// Result alias for this module.
pub type Result<T, E = BundleError> = std::result::Result<T, E>;

/// Why a directory is not a valid registry+v1 bundle. Paths are relative to the bundle root.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// `metadata/annotations.yaml` is absent.
    #[error(
        "metadata/annotations.yaml not found; a registry+v1 bundle needs metadata/annotations.yaml \
         with an `annotations:` map holding the {ANNOTATION_PREFIX}* keys"
    )]
    MissingAnnotations,

    /// A file could not be decoded as YAML or JSON.
    #[error("failed to decode {path}: {message}")]
    Decode {
        /// The file.
        path: String,
        /// The decoder's message.
        message: String,
    },

    /// A metadata file does not have the expected shape.
    #[error("{path}: {message}")]
    MetadataShape {
        /// The file.
        path: String,
        /// What is wrong and the expected shape.
        message: String,
    },

    /// A required annotation is missing or empty.
    #[error("metadata/annotations.yaml: annotation {key} is missing or empty; set it ({hint})")]
    MissingAnnotation {
        /// The annotation key.
        key: &'static str,
        /// What the value should be.
        hint: &'static str,
    },

    /// The media type is not registry+v1.
    #[error(
        "metadata/annotations.yaml: annotation {MEDIATYPE_KEY} is {found:?}; only \"{REGISTRY_V1}\" \
         bundles are supported"
    )]
    UnsupportedMediaType {
        /// The media type found.
        found: String,
    },

    /// `manifests/` holds no files.
    #[error("manifests/ holds no files; a registry+v1 bundle ships its ClusterServiceVersion and CRDs there")]
    NoManifests,

    /// A manifest document is not a Kubernetes object.
    #[error("{path} (document {document}): not a Kubernetes object: {message}")]
    NotAnObject {
        /// The file.
        path: String,
        /// 0-based document index.
        document: usize,
        /// What is missing.
        message: String,
    },

    /// A manifest has a kind OLM cannot install from a bundle.
    #[error(
        "{path}: kind {kind} ({name}) is not supported in a registry+v1 bundle; supported kinds: {}",
        SUPPORTED_KINDS.join(", ")
    )]
    UnsupportedKind {
        /// The file.
        path: String,
        /// The kind.
        kind: String,
        /// The object name.
        name: String,
    },

    /// No ClusterServiceVersion in `manifests/`.
    #[error("manifests/ holds no ClusterServiceVersion; a registry+v1 bundle needs exactly one")]
    NoClusterServiceVersion,

    /// More than one ClusterServiceVersion.
    #[error(
        "manifests/ holds {} ClusterServiceVersions ({}); a registry+v1 bundle needs exactly one",
        .paths.len(),
        .paths.join(", ")
    )]
    MultipleClusterServiceVersions {
        /// Where each was found.
        paths: Vec<String>,
    },

    /// A required CSV field is absent.
    #[error("{path}: ClusterServiceVersion field {field} is missing or empty; set it")]
    MissingCsvField {
        /// The file.
        path: String,
        /// The dotted field path.
        field: &'static str,
    },

    /// The CSV version is not strict semver.
    #[error("{path}: ClusterServiceVersion spec.version {version:?} is not a semantic version: {message}")]
    InvalidVersion {
        /// The file.
        path: String,
        /// The value found.
        version: String,
        /// The parser's message.
        message: String,
    },

    /// The CSV owns CRDs the bundle does not ship.
    #[error(
        "{path}: spec.customresourcedefinitions.owned lists {} not shipped in manifests/; add the \
         CustomResourceDefinition manifests or remove the entries",
        .missing.join(", ")
    )]
    OwnedCrdMissing {
        /// The CSV file.
        path: String,
        /// `plural.group/version (Kind)` of each missing one.
        missing: Vec<String>,
    },

    /// A CRD manifest lacks group, kind or versions.
    #[error("{path}: CustomResourceDefinition {name} lacks {field}")]
    InvalidCrd {
        /// The file.
        path: String,
        /// The CRD name.
        name: String,
        /// The missing field.
        field: &'static str,
    },
}

/// A directory as an in-memory map of relative paths (with `/` separators) to file contents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileTree {
    files: BTreeMap<String, Vec<u8>>,
}

impl FileTree {
    /// An empty tree.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file; `path` is relative to the root, `/`-separated.
    pub fn insert(&mut self, path: impl Into<String>, contents: impl Into<Vec<u8>>) {
        self.files.insert(path.into(), contents.into());
    }

    /// The contents of a file.
    #[must_use]
    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    /// Files directly inside `dir` (not in subdirectories), in path order.
    pub fn files_in<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = (&'a str, &'a [u8])> + 'a {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        self.files.iter().filter_map(move |(path, data)| {
            let rest = path.strip_prefix(&prefix)?;
            (!rest.is_empty() && !rest.contains('/')).then_some((path.as_str(), data.as_slice()))
        })
    }
}

impl<P: Into<String>, C: Into<Vec<u8>>> FromIterator<(P, C)> for FileTree {
    fn from_iter<T: IntoIterator<Item = (P, C)>>(iter: T) -> Self {
        let mut tree = FileTree::new();
        for (p, c) in iter {
            tree.insert(p, c);
        }
        tree
    }
}

/// The validated `metadata/annotations.yaml` of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotations {
    /// The package the bundle belongs to.
    pub package: String,
    /// The channels the bundle is published in.
    pub channels: Vec<String>,
    /// The package's default channel, when the bundle names one.
    pub default_channel: Option<String>,
}

/// One manifest of `manifests/`.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The file it came from.
    pub path: String,
    /// The object.
    pub object: Value,
}

impl Manifest {
    /// The object's `kind`.
    #[must_use]
    pub fn kind(&self) -> &str {
        self.object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The object's `metadata.name`.
    #[must_use]
    pub fn name(&self) -> &str {
        self.object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// A parsed and validated registry+v1 bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    /// Bundle name: the CSV's `metadata.name`.
    pub name: String,
    /// Bundle version: the CSV's `spec.version`.
    pub version: semver::Version,
    /// The annotations.
    pub annotations: Annotations,
    /// Every manifest, the CSV included, in file order.
    pub manifests: Vec<Manifest>,
    /// Index of the CSV in `manifests`.
    csv_index: usize,
    /// `metadata/properties.yaml` and the CSV's `olm.properties` annotation.
    pub properties: Vec<Value>,
    /// `metadata/dependencies.yaml`.
    pub dependencies: Vec<Value>,
}

fn decode(path: &str, bytes: &[u8]) -> Result<Vec<Value>> {
    let text = std::str::from_utf8(bytes).map_err(|e| BundleError::Decode {
        path: path.to_string(),
        message: format!("not UTF-8 text: {e}"),
    })?;
    let decoded = codec::decode_documents(path, text);
    if let Some(err) = decoded.error {
        return Err(BundleError::Decode {
            path: path.to_string(),
            message: err.to_string(),
        });
    }
    Ok(decoded
        .documents
        .into_iter()
        .map(|d| d.value)
        .filter(|v| !v.is_null())
        .collect())
}

fn single_document(path: &str, bytes: &[u8]) -> Result<Value> {
    let mut docs = decode(path, bytes)?;
    match docs.len() {
        1 => Ok(docs.remove(0)),
        n => Err(BundleError::MetadataShape {
            path: path.to_string(),
            message: format!("expected one YAML document, found {n}"),
        }),
    }
}

fn metadata_file<'a>(tree: &'a FileTree, stem: &str) -> Option<(String, &'a [u8])> {
    ["yaml", "yml", "json"].iter().find_map(|ext| {
        let path = format!("metadata/{stem}.{ext}");
        tree.get(&path).map(|data| (path, data))
    })
}

fn parse_annotations(tree: &FileTree) -> Result<Annotations> {
    let (path, data) = metadata_file(tree, "annotations").ok_or(BundleError::MissingAnnotations)?;
    let doc = single_document(&path, data)?;
    let map =
        doc.get("annotations")
            .and_then(Value::as_object)
            .ok_or_else(|| BundleError::MetadataShape {
                path: path.clone(),
                message: "expected a top-level `annotations:` map of string keys to string values"
                    .to_string(),
            })?;
    let get = |key: &'static str| -> Option<String> {
        map.get(key).and_then(|v| match v {
            Value::String(s) => Some(s.trim().to_string()),
            Value::Null => None,
            other => Some(other.to_string()),
        })
    };
    let required = |key: &'static str, hint: &'static str| -> Result<String> {
        get(key)
            .filter(|v| !v.is_empty())
            .ok_or(BundleError::MissingAnnotation { key, hint })
    };
    let mediatype = required(MEDIATYPE_KEY, "\"registry+v1\"")?;
    if mediatype != REGISTRY_V1 {
        return Err(BundleError::UnsupportedMediaType { found: mediatype });
    }
    required(MANIFESTS_KEY, "\"manifests/\"")?;
    required(METADATA_KEY, "\"metadata/\"")?;
    let package = required(PACKAGE_KEY, "the package name")?;
    let channels: Vec<String> = required(CHANNELS_KEY, "a comma-separated list of channels")?
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    if channels.is_empty() {
        return Err(BundleError::MissingAnnotation {
            key: CHANNELS_KEY,
            hint: "a comma-separated list of channels",
        });
    }
    let default_channel = match get(DEFAULT_CHANNEL_KEY) {
        Some(v) if v.is_empty() => {
            return Err(BundleError::MissingAnnotation {
                key: DEFAULT_CHANNEL_KEY,
                hint: "a channel name, or remove the key",
            });
        }
        other => other,
    };
    Ok(Annotations {
        package,
        channels,
        default_channel,
    })
}

fn property_list(tree: &FileTree, stem: &str, key: &str) -> Result<Vec<Value>> {
    let Some((path, data)) = metadata_file(tree, stem) else {
        return Ok(Vec::new());
    };
    let doc = single_document(&path, data)?;
    let shape_error = || BundleError::MetadataShape {
        path: path.clone(),
        message: format!("expected a top-level `{key}:` list of {{type, value}} objects"),
    };
    let list = match doc.get(key) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list.clone(),
        Some(_) => return Err(shape_error()),
    };
    for item in &list {
        if item.get("type").and_then(Value::as_str).is_none_or(str::is_empty) || item.get("value").is_none() {
            return Err(shape_error());
        }
    }
    Ok(list)
}

fn csv_properties_annotation(csv: &Manifest) -> Result<Vec<Value>> {
    let Some(raw) = csv.object.pointer("/metadata/annotations/olm.properties") else {
        return Ok(Vec::new());
    };
    let text = raw.as_str().unwrap_or_default();
    let parsed: Value = serde_json::from_str(text).map_err(|e| BundleError::MetadataShape {
        path: csv.path.clone(),
        message: format!("annotation olm.properties is not a JSON list of {{type, value}} objects: {e}"),
    })?;
    match parsed {
        Value::Array(list)
            if list
                .iter()
                .all(|p| p.get("type").and_then(Value::as_str).is_some() && p.get("value").is_some()) =>
        {
            Ok(list)
        }
        _ => Err(BundleError::MetadataShape {
            path: csv.path.clone(),
            message: "annotation olm.properties must be a JSON list of {type, value} objects".to_string(),
        }),
    }
}

fn parse_manifests(tree: &FileTree) -> Result<Vec<Manifest>> {
    let mut manifests = Vec::new();
    let mut any_file = false;
    for (path, data) in tree.files_in("manifests") {
        any_file = true;
        for (document, object) in decode(path, data)?.into_iter().enumerate() {
            let not_object = |message: &str| BundleError::NotAnObject {
                path: path.to_string(),
                document,
                message: message.to_string(),
            };
            if !object.is_object() {
                return Err(not_object("expected a mapping"));
            }
            let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
            if kind.is_empty() {
                return Err(not_object("field kind is missing"));
            }
            if object
                .get("apiVersion")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(not_object("field apiVersion is missing"));
            }
            let manifest = Manifest {
                path: path.to_string(),
                object,
            };
            if !SUPPORTED_KINDS.contains(&manifest.kind()) {
                return Err(BundleError::UnsupportedKind {
                    path: path.to_string(),
                    kind: manifest.kind().to_string(),
                    name: manifest.name().to_string(),
                });
            }
            manifests.push(manifest);
        }
    }
    if !any_file {
        return Err(BundleError::NoManifests);
    }
    Ok(manifests)
}

/// `group`, `version`, `kind` triples.
type Gvk = (String, String, String);

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn crd_apis(manifest: &Manifest) -> Result<(String, String, String, Vec<String>)> {
    let invalid = |field| BundleError::InvalidCrd {
        path: manifest.path.clone(),
        name: manifest.name().to_string(),
        field,
    };
    let spec = &manifest.object["spec"];
    let group = str_at(spec, "/group");
    let kind = str_at(spec, "/names/kind");
    let plural = str_at(spec, "/names/plural");
    if group.is_empty() {
        return Err(invalid("spec.group"));
    }
    if kind.is_empty() {
        return Err(invalid("spec.names.kind"));
    }
    let mut versions: Vec<String> = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    // v1beta1 CRDs may name a single `spec.version` instead of (or as well as) `spec.versions`.
    if let Some(v) = spec
        .get("version")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
    {
        versions.push(v.to_string());
    }
    if versions.is_empty() {
        return Err(invalid("spec.versions"));
    }
    Ok((group.to_string(), plural.to_string(), kind.to_string(), versions))
}

impl Bundle {
    /// Parses and validates a registry+v1 bundle from its files.
    ///
    /// # Errors
    /// A [`BundleError`] naming the file, the field and the fix for the first problem found.
    pub fn parse(tree: &FileTree) -> Result<Bundle> {
        let annotations = parse_annotations(tree)?;
        let manifests = parse_manifests(tree)?;
        let csvs: Vec<usize> = manifests
            .iter()
            .enumerate()
            .filter(|(_, m)| m.kind() == CSV_KIND)
            .map(|(i, _)| i)
            .collect();
        let csv_index = match csvs.as_slice() {
            [] => return Err(BundleError::NoClusterServiceVersion),
            [one] => *one,
            many => {
                return Err(BundleError::MultipleClusterServiceVersions {
                    paths: many.iter().map(|&i| manifests[i].path.clone()).collect(),
                });
            }
        };
        let csv = &manifests[csv_index];
        let name = csv.name().to_string();
        if name.is_empty() {
            return Err(BundleError::MissingCsvField {
                path: csv.path.clone(),
                field: "metadata.name",
            });
        }
        let raw_version = str_at(&csv.object, "/spec/version");
        if raw_version.is_empty() {
            return Err(BundleError::MissingCsvField {
                path: csv.path.clone(),
                field: "spec.version",
            });
        }
        let version = semver::Version::parse(raw_version).map_err(|e| BundleError::InvalidVersion {
            path: csv.path.clone(),
            version: raw_version.to_string(),
            message: e.to_string(),
        })?;

        let mut properties = property_list(tree, "properties", "properties")?;
        properties.extend(csv_properties_annotation(csv)?);
        let dependencies = property_list(tree, "dependencies", "dependencies")?;

        let bundle = Bundle {
            name,
            version,
            annotations,
            manifests,
            csv_index,
            properties,
            dependencies,
        };
        bundle.check_owned_crds_shipped()?;
        Ok(bundle)
    }

    /// The ClusterServiceVersion manifest.
    #[must_use]
    pub fn csv(&self) -> &Manifest {
        &self.manifests[self.csv_index]
    }

    /// The CustomResourceDefinition manifests.
    pub fn crds(&self) -> impl Iterator<Item = &Manifest> {
        self.manifests.iter().filter(|m| m.kind() == CRD_KIND)
    }

    fn check_owned_crds_shipped(&self) -> Result<()> {
        let mut shipped = BTreeSet::new();
        for crd in self.crds() {
            let (group, plural, kind, versions) = crd_apis(crd)?;
            for v in versions {
                shipped.insert((format!("{plural}.{group}"), v, kind.clone()));
            }
        }
        let csv = self.csv();
        let missing: Vec<String> = csv
            .object
            .pointer("/spec/customresourcedefinitions/owned")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|owned| {
                let key = (
                    str_at(owned, "/name").to_string(),
                    str_at(owned, "/version").to_string(),
                    str_at(owned, "/kind").to_string(),
                );
                (!shipped.contains(&key)).then(|| format!("{}/{} ({})", key.0, key.1, key.2))
            })
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(BundleError::OwnedCrdMissing {
                path: csv.path.clone(),
                missing,
            })
        }
    }

    fn provided_apis(&self) -> BTreeSet<Gvk> {
        let mut provided = BTreeSet::new();
        for crd in self.crds() {
            // parse() already checked every CRD.
            if let Ok((group, _, kind, versions)) = crd_apis(crd) {
                for v in versions {
                    provided.insert((group.clone(), v, kind.clone()));
                }
            }
        }
        for api in self.csv_list("/spec/apiservicedefinitions/owned") {
            provided.insert(api_gvk(api));
        }
        provided
    }

    fn required_apis(&self) -> BTreeSet<Gvk> {
        let mut required = BTreeSet::new();
        for crd in self.csv_list("/spec/customresourcedefinitions/required") {
            let group = str_at(crd, "/name")
                .split_once('.')
                .map(|(_, g)| g)
                .unwrap_or_default();
            required.insert((
                group.to_string(),
                str_at(crd, "/version").to_string(),
                str_at(crd, "/kind").to_string(),
            ));
        }
        for api in self.csv_list("/spec/apiservicedefinitions/required") {
            required.insert(api_gvk(api));
        }
        required
    }

    fn csv_list(&self, pointer: &str) -> impl Iterator<Item = &Value> {
        self.csv()
            .object
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    }

    /// Every property of the rendered `olm.bundle`, in opm's order (see the module docs).
    #[must_use]
    pub fn fbc_properties(&self) -> Vec<Value> {
        let mut provided = self.provided_apis();
        let mut required = self.required_apis();
        let mut package = None;
        let mut others = Vec::new();
        for p in &self.properties {
            match p["type"].as_str() {
                Some("olm.gvk") => {
                    provided.insert(value_gvk(&p["value"]));
                }
                Some("olm.package") => {
                    package = Some(json!({
                        "packageName": str_at(&p["value"], "/packageName"),
                        "version": str_at(&p["value"], "/version"),
                    }));
                }
                _ => others.push(p.clone()),
            }
        }
        let mut package_required = Vec::new();
        for d in &self.dependencies {
            match d["type"].as_str() {
                Some("olm.gvk") => {
                    required.insert(value_gvk(&d["value"]));
                }
                Some("olm.package") => package_required.push(property(
                    "olm.package.required",
                    json!({
                        "packageName": str_at(&d["value"], "/packageName"),
                        "versionRange": str_at(&d["value"], "/version"),
                    }),
                )),
                _ => others.push(d.clone()),
            }
        }
        let package = package.unwrap_or_else(
            || json!({"packageName": self.annotations.package, "version": self.version.to_string()}),
        );

        let mut props = vec![property("olm.package", package)];
        props.extend(provided.into_iter().map(|g| property("olm.gvk", gvk_value(g))));
        props.extend(
            required
                .into_iter()
                .map(|g| property("olm.gvk.required", gvk_value(g))),
        );
        props.extend(package_required);
        props.extend(others);
        props.extend(self.manifests.iter().map(|m| {
            property(
                "olm.bundle.object",
                json!({"data": base64::engine::general_purpose::STANDARD.encode(canonical_json(&m.object).as_bytes())}),
            )
        }));

        let sort_key = |p: &Value| {
            (
                p["type"].as_str().unwrap_or_default().to_string(),
                compact(&p["value"]),
            )
        };
        props.sort_by_cached_key(sort_key);
        // opm moves inlined objects behind every other property, keeping their order.
        let (objects, mut rest): (Vec<Value>, Vec<Value>) = props
            .into_iter()
            .partition(|p| matches!(p["type"].as_str(), Some("olm.bundle.object" | "olm.csv.metadata")));
        rest.extend(objects);
        rest
    }

    /// Images the bundle needs: the CSV's `spec.relatedImages` and every image of its deployments,
    /// once each, sorted by image. Items are `{name, image}`.
    #[must_use]
    pub fn related_images(&self) -> Vec<Value> {
        let mut images: BTreeMap<String, String> = BTreeMap::new();
        for ri in self.csv_list("/spec/relatedImages") {
            let image = str_at(ri, "/image");
            if !image.is_empty() {
                images
                    .entry(image.to_string())
                    .or_insert_with(|| str_at(ri, "/name").to_string());
            }
        }
        if str_at(&self.csv().object, "/spec/install/strategy") == "deployment" {
            for dep in self.csv_list("/spec/install/spec/deployments") {
                for list in ["containers", "initContainers"] {
                    let pointer = format!("/spec/template/spec/{list}");
                    for c in dep
                        .pointer(&pointer)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let image = str_at(c, "/image");
                        if !image.is_empty() {
                            images.entry(image.to_string()).or_default();
                        }
                    }
                }
            }
        }
        images
            .into_iter()
            .map(|(image, name)| json!({"name": name, "image": image}))
            .collect()
    }

    /// The bundle as an FBC `olm.bundle` document (`schema`, `name`, `package`, `properties`,
    /// `relatedImages`; no `image`, the objects are inlined instead).
    #[must_use]
    pub fn render(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("schema".into(), json!("olm.bundle"));
        doc.insert("name".into(), json!(self.name));
        doc.insert("package".into(), json!(self.annotations.package));
        doc.insert("properties".into(), Value::Array(self.fbc_properties()));
        let related = self.related_images();
        if !related.is_empty() {
            doc.insert("relatedImages".into(), Value::Array(related));
        }
        Value::Object(doc)
    }
}

fn api_gvk(api: &Value) -> Gvk {
    (
        str_at(api, "/group").to_string(),
        str_at(api, "/version").to_string(),
        str_at(api, "/kind").to_string(),
    )
}

fn value_gvk(v: &Value) -> Gvk {
    (
        str_at(v, "/group").to_string(),
        str_at(v, "/version").to_string(),
        str_at(v, "/kind").to_string(),
    )
}

fn gvk_value((group, version, kind): Gvk) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

fn property(kind: &str, value: Value) -> Value {
    json!({"type": kind, "value": value})
}

fn compact(v: &Value) -> String {
    v.to_string()
}

/// JSON text with every object's keys sorted, as Go's `encoding/json` writes maps.
fn canonical_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

#[cfg(test)]
mod tests;
