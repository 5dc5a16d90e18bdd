//! model: the linked catalog (packages → channels → bundles) built from the raw blobs.
//!
//! # From blobs to a model
//!
//! operator-registry turns a `DeclarativeConfig` into a `model.Model` (`ConvertToModel`) in which
//! every package owns its channels, every channel its entries, and every entry is joined to the
//! `olm.bundle` blob of the same name. This module does the same, with two differences that come
//! from Rust and from our users:
//!
//! - **children do not point at their parents.** A [`Bundle`] knows the *name* of its package and
//!   of the channels it is in; lookups go through [`Model::package`] and [`Package::bundle`];
//! - **building never fails.** opm stops at the first referential error; [`Model::build`] keeps
//!   going, leaves out what cannot be linked, and returns every problem it met as a
//!   [`Problem`] for the validation report. Later rules ([`catalog::validate`](mod@crate::catalog::validate)) run on the
//!   model. So `kubectl-olm catalog ...` can still browse a catalog with a broken corner.
//!
//! What is left out, and why (each is reported):
//! - a second `olm.package` (or channel, or bundle) with a name already taken: the first wins;
//! - a channel or bundle whose package has no `olm.package` blob: there is nothing to attach it to;
//! - a bundle whose `olm.package` version cannot be read even tolerantly: every bundle in the model
//!   has a [`semver::Version`] (a version that is only tolerantly valid, such as `v1.2`, is kept
//!   and reported as invalid by validation).
//!
//! Channel entries stay in file order. Bundles of a package are kept sorted by version (blang
//! ordering, [`crate::version_range::compare`]), then release, then name; channels and packages
//! by name. Nothing depends on hash order, so output is deterministic.
//!
//! # Cost
//!
//! The model takes the `DeclarativeConfig` by value and moves strings and JSON values into place:
//! large property values (inlined manifests) are never copied. Inlined manifests stay base64 until
//! someone asks for them ([`Bundle::objects`], [`Bundle::csv`]). A channel's graph is built on first
//! use and cached.

use std::{
    borrow::Cow,
    cmp::Ordering,
    collections::{BTreeMap, HashMap, HashSet},
    sync::OnceLock,
};

use semver::Version;
use serde::Serialize;
use serde_json::Value;

use crate::{
    catalog::{
        declcfg::{self, DeclarativeConfig, Origin},
        problem::{Problem, Violation},
        property::{
            self, CrdDescription, CsvMetadata, Gvk, InstallMode, ObjectError, PackageRequired, Properties,
        },
    },
    graph::{self, ChannelGraph},
    version_range::{self, Range},
};

mod blobs;

/// The typed properties of one bundle and the errors met typing them ([`property::parse`]).
pub type ParsedProperties = (Properties, Vec<property::PropertyError>);

/// The whole catalog: packages by name.
#[derive(Debug, Clone, Default)]
pub struct Model {
    packages: BTreeMap<String, Package>,
}

/// An `olm.deprecations` blob, indexed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Deprecations {
    /// Message when the whole package is deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Deprecated channels and their messages.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub channels: BTreeMap<String, String>,
    /// Deprecated bundles and their messages.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub bundles: BTreeMap<String, String>,
    /// Where the blob came from.
    #[serde(skip)]
    pub origin: Origin,
}

/// A package with its channels and bundles.
#[derive(Debug, Clone)]
pub struct Package {
    /// Package name.
    pub name: String,
    /// Name of the default channel as written (may name a missing channel; validation says so).
    pub default_channel: String,
    /// Description.
    pub description: String,
    /// Icon, as in the file.
    pub icon: Option<declcfg::Icon>,
    /// Package properties, raw.
    pub properties: Vec<declcfg::Property>,
    /// Deprecations of the package, its channels and bundles.
    pub deprecations: Option<Deprecations>,
    /// Where the `olm.package` blob came from.
    pub origin: Origin,
    channels: Vec<Channel>,
    bundles: Vec<Bundle>,
    bundle_index: HashMap<String, usize>,
}

/// One entry of a channel, with the bundle version joined in and `skipRange` parsed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelEntry {
    /// Bundle name.
    pub name: String,
    /// Version of that bundle, when the bundle exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
    /// The entry it replaces (empty for none).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub replaces: String,
    /// Entries it skips.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// `skipRange` as written (empty for none).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub skip_range: String,
    /// `skipRange` parsed; `None` when absent or invalid (validation reports invalid ones).
    #[serde(skip)]
    pub parsed_skip_range: Option<Range>,
}

/// A channel: ordered entries and their upgrade graph.
#[derive(Debug, Clone)]
pub struct Channel {
    /// Channel name.
    pub name: String,
    /// Package name.
    pub package: String,
    /// Entries in file order.
    pub entries: Vec<ChannelEntry>,
    /// Channel properties, raw.
    pub properties: Vec<declcfg::Property>,
    /// Where the `olm.channel` blob came from (the empty placeholder for a missing default channel
    /// has the package's origin).
    pub origin: Origin,
    graph: OnceLock<ChannelGraph>,
}

/// A bundle: one installable version of a package.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// Bundle name (usually the CSV name).
    pub name: String,
    /// Package name.
    pub package: String,
    /// Bundle image (may be empty when objects are inlined).
    pub image: String,
    /// Version from the `olm.package` property.
    pub version: Version,
    /// Release from the `olm.package` property (empty for none).
    pub release: String,
    /// Typed properties.
    pub properties: Properties,
    /// Related images.
    pub related_images: Vec<declcfg::RelatedImage>,
    /// Names of the channels the bundle is in, sorted.
    pub channels: Vec<String>,
    /// Where the `olm.bundle` blob came from.
    pub origin: Origin,
}

impl Model {
    /// Builds the model from raw blobs, collecting referential problems instead of failing.
    /// See the module docs for what is left out.
    #[must_use]
    pub fn build(cfg: DeclarativeConfig) -> (Model, Vec<Problem>) {
        Builder::default().build(cfg, Vec::new())
    }

    /// Like [`Model::build`], with the properties of the bundles already typed: `parsed[i]` is
    /// [`property::parse`] of the properties of `cfg.bundles[i]` (whose own list is then ignored).
    /// Typing bundle properties is the costliest step of the build and each bundle's is independent,
    /// so a caller with several cores (the loader in [`crate::source`]) can do it in parallel.
    /// Bundles beyond `parsed.len()` are typed here, so any prefix (or none) may be given.
    #[must_use]
    pub fn build_parsed(cfg: DeclarativeConfig, parsed: Vec<ParsedProperties>) -> (Model, Vec<Problem>) {
        Builder::default().build(cfg, parsed)
    }

    /// Builds the model and drops the problems (for callers that validated already).
    #[must_use]
    pub fn from_config(cfg: DeclarativeConfig) -> Model {
        Self::build(cfg).0
    }

    /// The package named `name`.
    #[must_use]
    pub fn package(&self, name: &str) -> Option<&Package> {
        self.packages.get(name)
    }

    /// Every package, sorted by name.
    pub fn packages(&self) -> impl ExactSizeIterator<Item = &Package> {
        self.packages.values()
    }

    /// Number of packages.
    #[must_use]
    pub fn len(&self) -> usize {
        self.packages.len()
    }

    /// True when the catalog has no package.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
    }
}

impl Package {
    /// The channel named `name`.
    #[must_use]
    pub fn channel(&self, name: &str) -> Option<&Channel> {
        self.channels
            .binary_search_by(|c| c.name.as_str().cmp(name))
            .ok()
            .and_then(|i| self.channels.get(i))
    }

    /// Every channel, sorted by name.
    #[must_use]
    pub fn channels(&self) -> &[Channel] {
        &self.channels
    }

    /// The default channel, when it exists.
    #[must_use]
    pub fn default_channel(&self) -> Option<&Channel> {
        self.channel(&self.default_channel)
    }

    /// The bundle named `name`.
    #[must_use]
    pub fn bundle(&self, name: &str) -> Option<&Bundle> {
        self.bundle_index.get(name).and_then(|i| self.bundles.get(*i))
    }

    /// Every bundle, sorted by version (lowest first), then release, then name.
    #[must_use]
    pub fn bundles(&self) -> &[Bundle] {
        &self.bundles
    }

    /// The bundle with version `version` (build metadata ignored, as in blang's ordering); the
    /// first by release and name if several share it.
    #[must_use]
    pub fn bundle_by_version(&self, version: &Version) -> Option<&Bundle> {
        self.bundles
            .iter()
            .find(|b| version_range::compare(&b.version, version) == Ordering::Equal)
    }

    /// The highest version among the package's bundles.
    #[must_use]
    pub fn latest_version(&self) -> Option<&Version> {
        self.bundles.last().map(|b| &b.version)
    }

    /// The bundle with the highest version.
    #[must_use]
    pub fn latest_bundle(&self) -> Option<&Bundle> {
        self.bundles.last()
    }

    /// Deprecation message of the package itself.
    #[must_use]
    pub fn deprecation_message(&self) -> Option<&str> {
        self.deprecations.as_ref().and_then(|d| d.package.as_deref())
    }

    /// Deprecation message of channel `name`.
    #[must_use]
    pub fn channel_deprecation(&self, name: &str) -> Option<&str> {
        self.deprecations
            .as_ref()
            .and_then(|d| d.channels.get(name))
            .map(String::as_str)
    }

    /// Deprecation message of bundle `name`.
    #[must_use]
    pub fn bundle_deprecation(&self, name: &str) -> Option<&str> {
        self.deprecations
            .as_ref()
            .and_then(|d| d.bundles.get(name))
            .map(String::as_str)
    }
}

impl Channel {
    /// The channel's upgrade graph (built on first call, then cached).
    pub fn graph(&self) -> &ChannelGraph {
        self.graph.get_or_init(|| {
            ChannelGraph::new(
                self.entries
                    .iter()
                    .map(|e| graph::Entry {
                        name: e.name.clone(),
                        version: e.version.clone(),
                        replaces: (!e.replaces.is_empty()).then(|| e.replaces.clone()),
                        skips: e.skips.clone(),
                        skip_range: e.parsed_skip_range.clone(),
                    })
                    .collect(),
            )
        })
    }

    /// The head entry's name, when the channel has exactly one head.
    #[must_use]
    pub fn head(&self) -> Option<&str> {
        self.graph().head().ok().map(|e| e.name.as_str())
    }

    /// The entry named `name`.
    #[must_use]
    pub fn entry(&self, name: &str) -> Option<&ChannelEntry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

impl Bundle {
    /// APIs the bundle provides (`olm.gvk`).
    #[must_use]
    pub fn provided_gvks(&self) -> &[Gvk] {
        &self.properties.gvks
    }

    /// APIs the bundle requires (`olm.gvk.required`).
    #[must_use]
    pub fn required_gvks(&self) -> &[Gvk] {
        &self.properties.gvks_required
    }

    /// Packages the bundle requires (`olm.package.required`).
    #[must_use]
    pub fn required_packages(&self) -> &[PackageRequired] {
        &self.properties.packages_required
    }

    /// True when the bundle carries the legacy `olm.deprecated` property (never installable).
    #[must_use]
    pub fn is_legacy_deprecated(&self) -> bool {
        !self.properties.deprecated.is_empty()
    }

    /// Decodes every inlined manifest (`olm.bundle.object`), in property order.
    #[must_use]
    pub fn objects(&self) -> Vec<Result<Value, ObjectError>> {
        self.properties
            .bundle_objects
            .iter()
            .map(property::BundleObject::decode)
            .collect()
    }

    /// The inlined `ClusterServiceVersion` manifest, if any.
    #[must_use]
    pub fn csv(&self) -> Option<Value> {
        self.properties
            .bundle_objects
            .iter()
            .filter_map(|o| o.decode().ok())
            .find(|v| v.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion"))
    }

    /// CSV metadata: the `olm.csv.metadata` property, or else derived from the inlined CSV.
    #[must_use]
    pub fn csv_metadata(&self) -> Option<Cow<'_, CsvMetadata>> {
        if let Some(meta) = self.properties.csv_metadata.first() {
            return Some(Cow::Borrowed(meta.get()));
        }
        self.csv()
            .and_then(|csv| CsvMetadata::from_csv(&csv).ok())
            .map(Cow::Owned)
    }

    /// Install modes the CSV declares.
    #[must_use]
    pub fn install_modes(&self) -> Vec<InstallMode> {
        self.csv_metadata()
            .map(|m| m.install_modes.clone())
            .unwrap_or_default()
    }

    /// CRDs the operator owns.
    #[must_use]
    pub fn owned_crds(&self) -> Vec<CrdDescription> {
        self.csv_metadata()
            .map(|m| m.crd_descriptions.owned.clone())
            .unwrap_or_default()
    }

    /// Maintainers.
    #[must_use]
    pub fn maintainers(&self) -> Vec<property::Maintainer> {
        self.csv_metadata()
            .map(|m| m.maintainers.clone())
            .unwrap_or_default()
    }

    /// Links.
    #[must_use]
    pub fn links(&self) -> Vec<property::AppLink> {
        self.csv_metadata().map(|m| m.links.clone()).unwrap_or_default()
    }
}

/// Orders bundles by version (blang ordering), then release, then name.
fn bundle_order(a: &Bundle, b: &Bundle) -> Ordering {
    version_range::compare(&a.version, &b.version)
        .then_with(|| compare_release(&a.release, &b.release))
        .then_with(|| a.name.cmp(&b.name))
}

/// Releases compare like prerelease identifiers; no release sorts before any release.
fn compare_release(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => match (semver::Prerelease::new(a), semver::Prerelease::new(b)) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => a.cmp(b),
        },
    }
}

#[derive(Default)]
struct Builder {
    problems: Vec<Problem>,
    /// Bundles left out of the model for want of a usable version, by package: their channel
    /// entries are not reported again as "entries without bundles".
    unversioned: HashMap<String, HashSet<String>>,
}

impl Builder {
    fn push(&mut self, problem: Problem) {
        self.problems.push(problem);
    }

    fn build(mut self, cfg: DeclarativeConfig, parsed: Vec<ParsedProperties>) -> (Model, Vec<Problem>) {
        let DeclarativeConfig {
            packages,
            channels,
            bundles,
            deprecations,
            others: _,
        } = cfg;
        let mut model = Model::default();

        for p in packages {
            if p.name.is_empty() {
                self.push(Problem::root(Violation::PackageWithoutName, Some(p.origin)));
                continue;
            }
            if model.packages.contains_key(&p.name) {
                let name = p.name.clone();
                self.push(Problem::package(
                    &name,
                    Violation::DuplicatePackage { name: name.clone() },
                    p.origin,
                ));
                continue;
            }
            model.packages.insert(
                p.name.clone(),
                Package {
                    name: p.name,
                    default_channel: p.default_channel,
                    description: p.description,
                    icon: p.icon,
                    properties: p.properties,
                    deprecations: None,
                    origin: p.origin,
                    channels: Vec::new(),
                    bundles: Vec::new(),
                    bundle_index: HashMap::new(),
                },
            );
        }

        // Channels: attach to their package; names unique per package.
        let mut channel_names: HashMap<String, HashSet<String>> = HashMap::new();
        for c in channels {
            let Some(pkg) = model.packages.get_mut(&c.package) else {
                let violation = if c.package.is_empty() {
                    Violation::ChannelWithoutPackage {
                        channel: c.name.clone(),
                    }
                } else {
                    Violation::UnknownPackage {
                        kind: "channel",
                        name: c.name.clone(),
                        package: c.package.clone(),
                    }
                };
                self.push(Problem::root(violation, Some(c.origin)).in_channel(&c.package, &c.name));
                continue;
            };
            if c.name.is_empty() {
                self.push(Problem::package(
                    &c.package,
                    Violation::ChannelWithoutName,
                    c.origin,
                ));
                continue;
            }
            if !channel_names
                .entry(c.package.clone())
                .or_default()
                .insert(c.name.clone())
            {
                let problem = Problem::package(
                    &c.package,
                    Violation::DuplicateChannel { name: c.name.clone() },
                    c.origin,
                )
                .in_channel(&c.package, &c.name);
                self.push(problem);
                continue;
            }
            let mut entries = Vec::with_capacity(c.entries.len());
            for e in c.entries {
                let parsed_skip_range = if e.skip_range.is_empty() {
                    None
                } else {
                    Range::parse(&e.skip_range).ok()
                };
                entries.push(ChannelEntry {
                    name: e.name,
                    version: None,
                    replaces: e.replaces,
                    skips: e.skips,
                    skip_range: e.skip_range,
                    parsed_skip_range,
                });
            }
            pkg.channels.push(Channel {
                name: c.name,
                package: c.package,
                entries,
                properties: c.properties,
                origin: c.origin,
                graph: OnceLock::new(),
            });
        }

        // Bundles: attach to their package; names unique per package; typed properties.
        let mut parsed = parsed.into_iter();
        for mut b in bundles {
            let typed = parsed
                .next()
                .unwrap_or_else(|| property::parse(std::mem::take(&mut b.properties)));
            let origin = b.origin;
            let Some(pkg) = model.packages.get_mut(&b.package) else {
                let violation = if b.package.is_empty() {
                    Violation::BundleWithoutPackage
                } else {
                    Violation::UnknownPackage {
                        kind: "bundle",
                        name: b.name.clone(),
                        package: b.package.clone(),
                    }
                };
                // The properties were still parsed so that their problems are reported too.
                let (_, errors) = typed;
                let mut problem = Problem::root(violation, Some(origin.clone()));
                problem.package = (!b.package.is_empty()).then(|| b.package.clone());
                problem.bundle = Some(b.name.clone());
                self.push(problem);
                for err in errors {
                    self.push(Problem::bundle(
                        &b.package,
                        &b.name,
                        Violation::InvalidProperty(err),
                        origin.clone(),
                    ));
                }
                continue;
            };
            if b.name.is_empty() {
                self.push(Problem::bundle(
                    &b.package,
                    "",
                    Violation::BundleWithoutName,
                    origin,
                ));
                continue;
            }
            if pkg.bundle_index.contains_key(&b.name) {
                self.push(Problem::bundle(
                    &b.package,
                    &b.name,
                    Violation::DuplicateBundle,
                    origin,
                ));
                continue;
            }
            let (properties, errors) = typed;
            for err in errors {
                self.push(Problem::bundle(
                    &b.package,
                    &b.name,
                    Violation::InvalidProperty(err),
                    origin.clone(),
                ));
            }
            let mut version = None;
            let mut release = String::new();
            match properties.packages.as_slice() {
                [only] => {
                    if only.package_name != b.package {
                        let violation = Violation::PackagePropertyMismatch {
                            package: b.package.clone(),
                            property: only.package_name.clone(),
                        };
                        self.push(Problem::bundle(&b.package, &b.name, violation, origin.clone()));
                    }
                    match version_range::parse_version_strict(&only.version) {
                        Ok(v) => version = Some(v),
                        Err(err) => {
                            let violation = Violation::InvalidVersion {
                                version: only.version.clone(),
                                reason: err.to_string(),
                            };
                            self.push(Problem::bundle(&b.package, &b.name, violation, origin.clone()));
                            version = version_range::parse_version_tolerant(&only.version).ok();
                        }
                    }
                    release.clone_from(&only.release);
                }
                many => {
                    let violation = Violation::PackagePropertyCount { found: many.len() };
                    self.push(Problem::bundle(&b.package, &b.name, violation, origin.clone()));
                }
            }
            let Some(version) = version else {
                // Without any version the bundle cannot be ordered or matched; it stays out of the
                // model, and channel entries naming it keep no version.
                self.unversioned.entry(b.package).or_default().insert(b.name);
                continue;
            };
            pkg.bundle_index.insert(b.name.clone(), pkg.bundles.len());
            pkg.bundles.push(Bundle {
                name: b.name,
                package: b.package,
                image: b.image,
                version,
                release,
                properties,
                related_images: b.related_images,
                channels: Vec::new(),
                origin,
            });
        }

        for (i, d) in deprecations.into_iter().enumerate() {
            self.attach_deprecations(&mut model, i, d);
        }

        for pkg in model.packages.values_mut() {
            self.link_package(pkg);
        }
        (model, self.problems)
    }

    fn attach_deprecations(&mut self, model: &mut Model, index: usize, d: declcfg::Deprecation) {
        if d.package.is_empty() {
            self.push(Problem::root(
                Violation::DeprecationWithoutPackage { index },
                Some(d.origin),
            ));
            return;
        }
        let Some(pkg) = model.packages.get_mut(&d.package) else {
            let problem = Problem::root(
                Violation::DeprecationUnknownPackage {
                    package: d.package.clone(),
                },
                Some(d.origin),
            );
            self.push(problem);
            return;
        };
        if pkg.deprecations.is_some() {
            self.push(Problem::package(
                &d.package,
                Violation::DuplicateDeprecations,
                d.origin,
            ));
            return;
        }
        let mut out = Deprecations {
            origin: d.origin.clone(),
            ..Deprecations::default()
        };
        let mut seen = HashSet::new();
        for (j, entry) in d.entries.into_iter().enumerate() {
            let at = |v: Violation| Problem::package(&d.package, v, d.origin.clone());
            let declcfg::DeprecationEntry { reference, message } = entry;
            if reference.schema.is_empty() {
                self.push(at(Violation::DeprecationEntryWithoutSchema { index: j }));
                continue;
            }
            if message.is_empty() {
                self.push(at(Violation::DeprecationEntryWithoutMessage { index: j }));
            }
            if !seen.insert(reference.clone()) {
                self.push(at(Violation::DuplicateDeprecationEntry {
                    schema: reference.schema.clone(),
                    name: reference.name.clone(),
                }));
                continue;
            }
            // Existence of the referenced channel/bundle is checked in `link_package`, once all
            // channels and bundles are attached.
            match reference.schema.as_str() {
                declcfg::SCHEMA_PACKAGE if reference.name.is_empty() => out.package = Some(message),
                declcfg::SCHEMA_PACKAGE => {
                    self.push(at(Violation::DeprecatedPackageWithName { name: reference.name }));
                }
                declcfg::SCHEMA_CHANNEL => {
                    out.channels.insert(reference.name, message);
                }
                declcfg::SCHEMA_BUNDLE => {
                    out.bundles.insert(reference.name, message);
                }
                other => self.push(at(Violation::DeprecationUnknownSchema {
                    schema: other.to_owned(),
                    index: j,
                })),
            }
        }
        pkg.deprecations = Some(out);
    }

    fn link_package(&mut self, pkg: &mut Package) {
        pkg.channels.sort_by(|a, b| a.name.cmp(&b.name));
        pkg.bundles.sort_by(bundle_order);
        pkg.bundle_index = pkg
            .bundles
            .iter()
            .enumerate()
            .map(|(i, b)| (b.name.clone(), i))
            .collect();

        // Join entries to bundles: versions into entries, channel names into bundles.
        let mut entry_names: BTreeMap<&str, ()> = BTreeMap::new();
        let mut memberships: Vec<Vec<String>> = vec![Vec::new(); pkg.bundles.len()];
        for channel in &mut pkg.channels {
            for entry in &mut channel.entries {
                if let Some(&i) = pkg.bundle_index.get(&entry.name) {
                    if let Some(bundle) = pkg.bundles.get(i) {
                        entry.version = Some(bundle.version.clone());
                    }
                    if let Some(m) = memberships.get_mut(i)
                        && m.last() != Some(&channel.name)
                    {
                        m.push(channel.name.clone());
                    }
                }
            }
        }
        for (bundle, channels) in pkg.bundles.iter_mut().zip(memberships) {
            bundle.channels = channels;
        }
        let unversioned = self.unversioned.get(&pkg.name);
        for channel in &pkg.channels {
            for entry in &channel.entries {
                let dropped = unversioned.is_some_and(|names| names.contains(&entry.name));
                if !dropped && !pkg.bundle_index.contains_key(&entry.name) {
                    entry_names.insert(entry.name.as_str(), ());
                }
            }
        }
        // Entries whose bundle blob is missing (or was left out because it had no usable version).
        if !entry_names.is_empty() {
            let names: Vec<String> = entry_names.keys().map(|s| (*s).to_owned()).collect();
            let violation = Violation::EntriesWithoutBundles {
                package: pkg.name.clone(),
                names,
            };
            self.push(Problem::package(&pkg.name, violation, pkg.origin.clone()));
        }

        // A default channel with no olm.channel blob becomes an empty channel, as in opm, so that
        // validation reports it as "must contain at least one bundle".
        if !pkg.default_channel.is_empty()
            && !pkg.channels.is_empty()
            && pkg.channel(&pkg.default_channel).is_none()
        {
            let violation = Violation::DefaultChannelNotFound {
                name: pkg.default_channel.clone(),
                channels: pkg.channels.iter().map(|c| c.name.clone()).collect(),
            };
            self.push(Problem::package(&pkg.name, violation, pkg.origin.clone()));
        }

        if let Some(dep) = &pkg.deprecations {
            for name in dep.channels.keys() {
                if pkg.channel(name).is_none() {
                    let violation = Violation::DeprecatedChannelNotFound { name: name.clone() };
                    self.push(Problem::package(&pkg.name, violation, dep.origin.clone()));
                }
            }
            for name in dep.bundles.keys() {
                if pkg.bundle(name).is_none() {
                    let violation = Violation::DeprecatedBundleNotFound { name: name.clone() };
                    self.push(Problem::package(&pkg.name, violation, dep.origin.clone()));
                }
            }
        }
    }
}
