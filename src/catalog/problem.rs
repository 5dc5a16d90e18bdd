//! problem: one broken catalog rule ([`Violation`]) and where it is ([`Problem`]).
//!
//! These are the values [`super::model`] (problems met while linking) and [`validate`](mod@super::validate)
//! (every `opm validate` rule) both produce, so they live apart from either: the model builder and
//! the validator depend on this module and never on each other. The rules themselves, and how a
//! report is drawn, are documented in [`validate`](mod@super::validate).

use std::fmt;

use serde::{Serialize, Serializer, ser::SerializeStruct};

use crate::{
    catalog::{
        declcfg::{DecodeError, Origin},
        property::PropertyError,
    },
    graph::GraphError,
};

/// One broken rule. Messages say what is wrong and, where possible, how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Violation {
    /// A document could not be decoded into a blob.
    #[error("{0}")]
    Decode(DecodeError),
    /// An `olm.package` blob has no name.
    #[error("config contains package with no name; set `name` on the olm.package blob")]
    PackageWithoutName,
    /// Two `olm.package` blobs share a name.
    #[error("duplicate package {name:?}: another olm.package blob has the same name; remove or rename one")]
    DuplicatePackage {
        /// The repeated name.
        name: String,
    },
    /// The package name is not a DNS-1123 label.
    #[error(
        "invalid package name {name:?}: {reason} (package names must be DNS-1123 labels: lowercase \
         letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)"
    )]
    InvalidPackageName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The package icon is not base64.
    #[error("invalid icon: base64data is not valid base64 ({reason}); encode the image with base64")]
    InvalidIcon {
        /// The decoder's message.
        reason: String,
    },
    /// The package has no channel at all.
    #[error(
        "package must contain at least one channel; add an olm.channel blob whose `package` is this package"
    )]
    NoChannels,
    /// `defaultChannel` is empty.
    #[error("default channel must be set; set defaultChannel to one of: {}", .channels.join(", "))]
    DefaultChannelNotSet {
        /// The package's channels.
        channels: Vec<String>,
    },
    /// `defaultChannel` names no channel of the package.
    #[error(
        "default channel {name:?} not found in channels list (channels: {}); set defaultChannel to \
         an existing channel or add an olm.channel blob named {name:?}",
        .channels.join(", ")
    )]
    DefaultChannelNotFound {
        /// The name in `defaultChannel`.
        name: String,
        /// The package's channels.
        channels: Vec<String>,
    },
    /// Several bundles of the package share a version.
    #[error(
        "duplicate versions found in bundles: [{}]; every bundle of a package needs its own version \
         (olm.package version, plus release)",
        .dupes.iter().map(|(v, names)| format!("{{{v}: [{}]}}", names.join(", "))).collect::<Vec<_>>().join(" ")
    )]
    DuplicateVersions {
        /// Each shared version with the bundles that have it.
        dupes: Vec<(String, Vec<String>)>,
    },
    /// Channel entries name bundles that have no `olm.bundle` blob.
    #[error(
        "no olm.bundle blobs found in package {package:?} for olm.channel entries [{}]; add the \
         olm.bundle blobs or remove the entries",
        .names.join(" ")
    )]
    EntriesWithoutBundles {
        /// The package.
        package: String,
        /// The entry names, sorted.
        names: Vec<String>,
    },
    /// A channel or bundle names a package that has no `olm.package` blob.
    #[error(
        "unknown package {package:?} for {kind} {name:?}; add an olm.package blob named {package:?} \
         or fix the `package` field"
    )]
    UnknownPackage {
        /// `channel` or `bundle`.
        kind: &'static str,
        /// The channel or bundle name.
        name: String,
        /// The package it names.
        package: String,
    },
    /// A channel has no `package`.
    #[error("channel {channel:?} has no package; set `package` on the olm.channel blob")]
    ChannelWithoutPackage {
        /// The channel.
        channel: String,
    },
    /// A channel has no name.
    #[error("package contains channel with no name; set `name` on the olm.channel blob")]
    ChannelWithoutName,
    /// Two channels of a package share a name.
    #[error("duplicate channel {name:?}; merge the two olm.channel blobs into one")]
    DuplicateChannel {
        /// The repeated name.
        name: String,
    },
    /// A channel has no entries.
    #[error("channel must contain at least one bundle; add entries or remove the channel")]
    EmptyChannel,
    /// A channel graph rule is broken.
    #[error("{0}")]
    Graph(GraphError),
    /// A bundle has no `package`.
    #[error("package name must be set; set `package` on the olm.bundle blob")]
    BundleWithoutPackage,
    /// A bundle has no name.
    #[error("bundle name must be set; set `name` on the olm.bundle blob")]
    BundleWithoutName,
    /// Two bundles of a package share a name.
    #[error("duplicate bundle: another olm.bundle blob of this package has the same name; remove one")]
    DuplicateBundle,
    /// A property value does not parse.
    #[error("parse properties: {0}")]
    InvalidProperty(PropertyError),
    /// Not exactly one `olm.package` property.
    #[error(
        "must have exactly 1 \"olm.package\" property, found {found}; {}",
        if *.found == 0 { "add `{type: olm.package, value: {packageName: PACKAGE, version: VERSION}}`" } else { "keep only one" }
    )]
    PackagePropertyCount {
        /// How many there are.
        found: usize,
    },
    /// The `olm.package` property names another package.
    #[error(
        "package {package:?} does not match \"olm.package\" property {property:?}; make the \
         property's packageName equal the bundle's package"
    )]
    PackagePropertyMismatch {
        /// The bundle's `package`.
        package: String,
        /// The property's `packageName`.
        property: String,
    },
    /// The `olm.package` version is not strict semver.
    #[error("error parsing version {version:?}: {reason}")]
    InvalidVersion {
        /// The version as written.
        version: String,
        /// What is wrong.
        reason: String,
    },
    /// The `olm.package` release is invalid.
    #[error(
        "invalid release {release:?}: {reason}; a release is at most 20 characters of dot-separated \
         identifiers made of letters, digits and '-'"
    )]
    InvalidRelease {
        /// The release as written.
        release: String,
        /// What is wrong.
        reason: String,
    },
    /// A release together with build metadata.
    #[error(
        "cannot use build metadata in version with a release version; drop the '+build' part or the release"
    )]
    BuildMetadataWithRelease,
    /// A bundle with a release is not named `<package>-v<version>-<release>`.
    #[error(
        "name {name:?} does not match normalized name {expected:?}; bundles with a release must be \
         named <package>-v<version>-<release>"
    )]
    NameNotNormalized {
        /// The bundle name.
        name: String,
        /// The required name.
        expected: String,
    },
    /// An image reference does not parse.
    #[error("{field}: invalid image pull spec {image:?}: {reason}")]
    InvalidImage {
        /// `image` or `relatedImages[i].image`.
        field: String,
        /// The reference.
        image: String,
        /// What is wrong.
        reason: String,
    },
    /// Neither an image nor inlined objects.
    #[error("bundle image must be set (or the bundle's manifests inlined as olm.bundle.object properties)")]
    NoImageOrObjects,
    /// An empty `skips` item.
    #[error("skip[{index}] is empty in channel {channel:?}; remove the empty item")]
    EmptySkip {
        /// Index in `skips`.
        index: usize,
        /// The channel.
        channel: String,
    },
    /// A `skipRange` that does not parse.
    #[error("invalid skipRange {range:?} in channel {channel:?}: {reason}")]
    InvalidSkipRange {
        /// The range as written.
        range: String,
        /// The channel.
        channel: String,
        /// What is wrong.
        reason: String,
    },
    /// A bundle in no channel.
    #[error("not found in any channel entries; add it to the entries of a channel or remove the bundle")]
    NotInAnyChannel,
    /// An `olm.bundle.object` that is not base64.
    #[error("olm.bundle.object [{index}]: {reason}")]
    InvalidBundleObject {
        /// Index among the bundle's objects.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// An `olm.deprecations` blob without `package`.
    #[error(
        "package name must be set for deprecation item {index}; set `package` on the olm.deprecations blob"
    )]
    DeprecationWithoutPackage {
        /// Index of the blob among deprecation blobs.
        index: usize,
    },
    /// An `olm.deprecations` blob for an unknown package.
    #[error("cannot apply deprecations to an unknown package {package:?}; fix `package` or add the package")]
    DeprecationUnknownPackage {
        /// The package named.
        package: String,
    },
    /// Several `olm.deprecations` blobs for one package.
    #[error("expected a maximum of one deprecation per package; merge the olm.deprecations blobs")]
    DuplicateDeprecations,
    /// A deprecation entry without `reference.schema`.
    #[error("schema must be set for deprecation entry [{index}]; use olm.package, olm.channel or olm.bundle")]
    DeprecationEntryWithoutSchema {
        /// Entry index.
        index: usize,
    },
    /// A deprecation entry without message.
    #[error("deprecation entry [{index}] must have a message")]
    DeprecationEntryWithoutMessage {
        /// Entry index.
        index: usize,
    },
    /// The same object deprecated twice.
    #[error("duplicate deprecation entry for {schema} {name:?}; keep one")]
    DuplicateDeprecationEntry {
        /// Referenced schema.
        schema: String,
        /// Referenced name.
        name: String,
    },
    /// A deprecated bundle that does not exist.
    #[error("cannot deprecate bundle {name:?}: bundle not found; fix the reference name")]
    DeprecatedBundleNotFound {
        /// The name.
        name: String,
    },
    /// A deprecated channel that does not exist.
    #[error("cannot deprecate channel {name:?}: channel not found; fix the reference name")]
    DeprecatedChannelNotFound {
        /// The name.
        name: String,
    },
    /// A package deprecation that names something.
    #[error("package name must be empty for deprecated package (specified {name:?}); remove reference.name")]
    DeprecatedPackageWithName {
        /// The name given.
        name: String,
    },
    /// A deprecation entry with an unknown schema.
    #[error(
        "cannot deprecate object of schema {schema:?} referenced by entry [{index}]: object schema \
         unknown; use olm.package, olm.channel or olm.bundle"
    )]
    DeprecationUnknownSchema {
        /// The schema given.
        schema: String,
        /// Entry index.
        index: usize,
    },
}

/// One problem and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// File and document, when known.
    pub origin: Option<Origin>,
    /// Package concerned, if any.
    pub package: Option<String>,
    /// Channel concerned, if any.
    pub channel: Option<String>,
    /// Bundle concerned, if any.
    pub bundle: Option<String>,
    /// The broken rule.
    pub violation: Violation,
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

impl Problem {
    /// A catalog-wide problem.
    #[must_use]
    pub fn root(violation: Violation, origin: Option<Origin>) -> Self {
        Self {
            origin,
            package: None,
            channel: None,
            bundle: None,
            violation,
        }
    }

    /// A problem of package `package`.
    #[must_use]
    pub fn package(package: &str, violation: Violation, origin: Origin) -> Self {
        Self {
            origin: Some(origin),
            package: non_empty(package),
            channel: None,
            bundle: None,
            violation,
        }
    }

    /// A problem of a channel.
    #[must_use]
    pub fn channel(package: &str, channel: &str, violation: Violation, origin: Origin) -> Self {
        Self {
            origin: Some(origin),
            package: non_empty(package),
            channel: Some(channel.to_owned()),
            bundle: None,
            violation,
        }
    }

    /// A problem of a bundle.
    #[must_use]
    pub fn bundle(package: &str, bundle: &str, violation: Violation, origin: Origin) -> Self {
        Self {
            origin: Some(origin),
            package: non_empty(package),
            channel: None,
            bundle: Some(bundle.to_owned()),
            violation,
        }
    }

    /// Places the problem on channel `channel` of `package`.
    #[must_use]
    pub fn in_channel(mut self, package: &str, channel: &str) -> Self {
        self.package = non_empty(package);
        self.channel = Some(channel.to_owned());
        self
    }

    /// Sort key: catalog-wide first, then package, then package-level, channels, bundles.
    pub(super) fn key(&self) -> (bool, &str, u8, &str) {
        let (level, name) = match (&self.bundle, &self.channel) {
            (Some(b), _) => (2, b.as_str()),
            (None, Some(c)) => (1, c.as_str()),
            (None, None) => (0, ""),
        };
        (
            self.package.is_some(),
            self.package.as_deref().unwrap_or(""),
            level,
            name,
        )
    }

    /// The leaf text: the message, then the file it concerns (decode messages carry it already).
    pub(super) fn leaf(&self) -> String {
        match (&self.violation, &self.origin) {
            (Violation::Decode(_), _) | (_, None) => self.violation.to_string(),
            (violation, Some(origin)) => format!("{violation} [{origin}]"),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.package {
            write!(f, "package {p:?}: ")?;
        }
        if let Some(c) = &self.channel {
            write!(f, "channel {c:?}: ")?;
        }
        if let Some(b) = &self.bundle {
            write!(f, "bundle {b:?}: ")?;
        }
        f.write_str(&self.leaf())
    }
}

impl Serialize for Problem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Problem", 6)?;
        s.serialize_field("file", &self.origin.as_ref().map(|o| o.path.as_ref()))?;
        s.serialize_field("document", &self.origin.as_ref().map(|o| o.document))?;
        s.serialize_field("package", &self.package)?;
        s.serialize_field("channel", &self.channel)?;
        s.serialize_field("bundle", &self.bundle)?;
        s.serialize_field("message", &self.violation.to_string())?;
        s.end()
    }
}
