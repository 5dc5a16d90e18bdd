//! query: the answers of the registry API, computed from a catalog [`Model`] (pure: a server
//! calls these and streams what they return).
//!
//! # Semantics
//!
//! Each function answers one RPC the way operator-registry's `pkg/cache` (what `opm serve` runs)
//! does, including its quirks, so that OLM's catalog-operator sees the same catalog from us:
//!
//! - a bundle is addressed per channel: `GetBundle` needs package, channel and name, and
//!   `ListBundles` lists a bundle once for every channel it is in;
//! - `GetBundleThatReplaces` answers the first entry of the channel (in file order; upstream's
//!   choice among several is random) whose `replaces` or `skips` names the bundle;
//! - `GetChannelEntriesThatReplace` gives one entry per `replaces` or `skips` match, always with
//!   the entry's own `replaces` (upstream does the same);
//! - `GetChannelEntriesThatProvide` gives, for every bundle providing the API, its `replaces` edge
//!   and one edge per skipped name (even one outside the channel); the `Latest` variant looks
//!   only at channel heads and keeps only skips that are in the channel;
//! - `GetDefaultBundleThatProvides` picks, among those heads, the first package by name whose
//!   default channel's head provides the API.
//!
//! Differences, on purpose: answers are in a stable order (packages by name, channels by name,
//! entries in file order) where upstream iterates Go maps; "not found" is `NOT_FOUND` where
//! upstream answers `UNKNOWN` with the same message (clients only look at the message).
//!
//! [`Registry::new`] refuses a model opm would refuse to serve for a reason these answers depend
//! on: a channel entry without its bundle, or a channel without exactly one head. The full
//! `opm validate` rule set is the caller's job (`catalog serve --strict` validates first).
//! [`Registry::lenient`] and [`Registry::shared`] serve such a model without the broken channels
//! instead (the way the controller resolves from a partly broken catalog), and say which.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use crate::{
    catalog::{
        Model,
        load::LoadedCatalog,
        model::{Bundle, Channel, ChannelEntry, Package},
    },
    grpc::{
        api,
        convert::{self, ConvertError, entry_message},
    },
};

/// Why a model cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// A channel entry names a bundle the model does not have.
    #[error(
        "package {package:?} channel {channel:?}: entry {bundle:?} has no olm.bundle blob; add the bundle or remove the entry"
    )]
    MissingBundle {
        /// Package.
        package: String,
        /// Channel.
        channel: String,
        /// Entry name.
        bundle: String,
    },
    /// A channel has no head or several.
    #[error(
        "package {package:?} channel {channel:?}: {reason}; run `kubectl olm catalog validate` for details"
    )]
    NoHead {
        /// Package.
        package: String,
        /// Channel.
        channel: String,
        /// What the graph says.
        reason: String,
    },
}

/// Why a query has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// Nothing matches (the message is upstream's).
    #[error("{0}")]
    NotFound(String),
    /// A bundle cannot be turned into a message.
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

/// A bundle's place in the model: its package, channel and entry.
#[derive(Debug, Clone, Copy)]
struct Slot<'a> {
    package: &'a Package,
    channel: &'a Channel,
    entry: &'a ChannelEntry,
    bundle: &'a Bundle,
}

/// The model a [`Registry`] answers from: its own, or the one of a loaded catalog it shares
/// (the controller's cache), never copied.
#[derive(Debug, Clone)]
enum Held {
    Owned(Model),
    Shared(Arc<LoadedCatalog>),
}

impl Held {
    fn model(&self) -> &Model {
        match self {
            Held::Owned(model) => model,
            Held::Shared(catalog) => &catalog.model,
        }
    }
}

/// A model checked to be servable, answering the registry queries.
#[derive(Debug, Clone)]
pub struct Registry {
    model: Held,
    /// Number of (channel, entry) pairs: the length of `ListBundles`.
    listed: usize,
}

impl Registry {
    /// Checks that every channel entry has its bundle and every channel one head.
    ///
    /// # Errors
    /// Every [`IndexError`] found.
    pub fn new(model: Model) -> Result<Registry, Vec<IndexError>> {
        let (listed, errors) = Self::check(&model);
        if errors.is_empty() {
            Ok(Registry {
                model: Held::Owned(model),
                listed,
            })
        } else {
            Err(errors)
        }
    }

    /// Serves `model` without the channels [`Registry::new`] would refuse it for (and without the
    /// packages left with no channel or without their default channel), returning what was left
    /// out, one message each.
    #[must_use]
    pub fn lenient(model: Model) -> (Registry, Vec<String>) {
        Self::without_broken(Held::Owned(model))
    }

    /// Like [`Registry::lenient`], sharing the model of a loaded catalog when nothing has to be
    /// left out (a trimmed copy otherwise).
    #[must_use]
    pub fn shared(catalog: Arc<LoadedCatalog>) -> (Registry, Vec<String>) {
        Self::without_broken(Held::Shared(catalog))
    }

    fn without_broken(held: Held) -> (Registry, Vec<String>) {
        let (listed, errors) = Self::check(held.model());
        if errors.is_empty() {
            return (Registry { model: held, listed }, Vec::new());
        }
        let (trimmed, skipped) = Self::trim(held.model(), &errors);
        let (listed, _) = Self::check(&trimmed);
        (
            Registry {
                model: Held::Owned(trimmed),
                listed,
            },
            skipped,
        )
    }

    /// The model without the channels of `errors`, and one message per channel or package left out.
    fn trim(model: &Model, errors: &[IndexError]) -> (Model, Vec<String>) {
        let drop: BTreeSet<(String, String)> = errors
            .iter()
            .map(|e| match e {
                IndexError::MissingBundle { package, channel, .. }
                | IndexError::NoHead { package, channel, .. } => (package.clone(), channel.clone()),
            })
            .collect();
        let (trimmed, packages) = model.without_channels(&drop);
        let mut skipped: Vec<String> = errors.iter().map(|e| format!("channel left out: {e}")).collect();
        skipped.extend(
            packages.iter().map(|p| {
                format!("package {p:?} left out: its default channel (or every channel) was left out")
            }),
        );
        (trimmed, skipped)
    }

    /// The number of `ListBundles` messages and what makes the model unservable.
    fn check(model: &Model) -> (usize, Vec<IndexError>) {
        let mut errors = Vec::new();
        let mut listed = 0;
        for package in model.packages() {
            for channel in package.channels() {
                for entry in &channel.entries {
                    listed += 1;
                    if package.bundle(&entry.name).is_none() {
                        errors.push(IndexError::MissingBundle {
                            package: package.name.clone(),
                            channel: channel.name.clone(),
                            bundle: entry.name.clone(),
                        });
                    }
                }
                if let Err(err) = channel.graph().head() {
                    errors.push(IndexError::NoHead {
                        package: package.name.clone(),
                        channel: channel.name.clone(),
                        reason: err.to_string(),
                    });
                }
            }
        }
        (listed, errors)
    }

    /// The model served.
    #[must_use]
    pub fn model(&self) -> &Model {
        self.model.model()
    }

    /// How many messages `ListBundles` streams (one per bundle per channel).
    #[must_use]
    pub fn listed_len(&self) -> usize {
        self.listed
    }

    fn slots(&self) -> impl Iterator<Item = Slot<'_>> {
        self.model().packages().flat_map(|package| {
            package.channels().iter().flat_map(move |channel| {
                channel.entries.iter().filter_map(move |entry| {
                    package.bundle(&entry.name).map(|bundle| Slot {
                        package,
                        channel,
                        entry,
                        bundle,
                    })
                })
            })
        })
    }

    fn package(&self, name: &str) -> Result<&Package, QueryError> {
        self.model()
            .package(name)
            .ok_or_else(|| QueryError::NotFound(format!("package {name:?} not found")))
    }

    fn channel<'a>(&self, package: &'a Package, name: &str) -> Result<&'a Channel, QueryError> {
        package.channel(name).ok_or_else(|| {
            QueryError::NotFound(format!("package {:?}, channel {name:?} not found", package.name))
        })
    }

    fn message(slot: Slot<'_>) -> Result<api::Bundle, QueryError> {
        Ok(convert::bundle_message(
            slot.package,
            slot.channel,
            slot.entry,
            slot.bundle,
        )?)
    }

    fn slot<'a>(&'a self, package: &'a Package, channel: &'a Channel, name: &str) -> Option<Slot<'a>> {
        let entry = channel.entry(name)?;
        let bundle = package.bundle(name)?;
        Some(Slot {
            package,
            channel,
            entry,
            bundle,
        })
    }

    /// `ListPackages`: every package name, sorted.
    #[must_use]
    pub fn list_packages(&self) -> Vec<String> {
        self.model().packages().map(|p| p.name.clone()).collect()
    }

    /// `GetPackage`.
    ///
    /// # Errors
    /// [`QueryError::NotFound`] for an unknown package.
    pub fn get_package(&self, name: &str) -> Result<api::Package, QueryError> {
        Ok(convert::package_message(self.package(name)?))
    }

    /// Every `ListBundles` message, in order (for tests and small catalogs).
    ///
    /// # Errors
    /// The first [`QueryError::Convert`].
    pub fn list_bundles(&self) -> Result<Vec<api::Bundle>, QueryError> {
        self.bundle_keys()
            .iter()
            .map(|(p, c, n)| self.listed_bundle(p, c, n))
            .collect()
    }

    /// The keys (package, channel, bundle) of the `ListBundles` messages, in order: a server
    /// streams [`Registry::listed_bundle`] of each, converting one bundle at a time.
    #[must_use]
    pub fn bundle_keys(&self) -> Vec<(String, String, String)> {
        self.slots()
            .map(|s| {
                (
                    s.package.name.clone(),
                    s.channel.name.clone(),
                    s.entry.name.clone(),
                )
            })
            .collect()
    }

    /// The `ListBundles` message of one key of [`Registry::bundle_keys`].
    ///
    /// # Errors
    /// [`QueryError::NotFound`] when the key is not in the catalog, [`QueryError::Convert`].
    pub fn listed_bundle(&self, package: &str, channel: &str, name: &str) -> Result<api::Bundle, QueryError> {
        let slot = self.find(package, channel, name)?;
        // A bundle with an image is listed without its manifests: do not decode them.
        let manifests = slot.bundle.image.is_empty();
        let message =
            convert::bundle_message_with(slot.package, slot.channel, slot.entry, slot.bundle, manifests)?;
        Ok(convert::listed(message))
    }

    fn find(&self, package: &str, channel: &str, name: &str) -> Result<Slot<'_>, QueryError> {
        let pkg = self.package(package)?;
        let ch = self.channel(pkg, channel)?;
        self.slot(pkg, ch, name).ok_or_else(|| {
            QueryError::NotFound(format!(
                "package {package:?}, channel {channel:?}, bundle {name:?} not found"
            ))
        })
    }

    fn get_bundle_untrimmed(
        &self,
        package: &str,
        channel: &str,
        name: &str,
    ) -> Result<api::Bundle, QueryError> {
        Self::message(self.find(package, channel, name)?)
    }

    /// `GetBundle`: the bundle as it appears in the channel, without `replaces`/`skips`.
    ///
    /// # Errors
    /// [`QueryError::NotFound`] for an unknown package, channel or bundle.
    pub fn get_bundle(&self, package: &str, channel: &str, name: &str) -> Result<api::Bundle, QueryError> {
        self.get_bundle_untrimmed(package, channel, name)
            .map(convert::trimmed)
    }

    /// `GetBundleForChannel`: the channel's head.
    ///
    /// # Errors
    /// [`QueryError::NotFound`] for an unknown package or channel.
    pub fn get_bundle_for_channel(&self, package: &str, channel: &str) -> Result<api::Bundle, QueryError> {
        let pkg = self.package(package)?;
        let ch = self.channel(pkg, channel)?;
        let head = ch.head().unwrap_or_default();
        self.get_bundle(package, channel, head)
    }

    /// `GetBundleThatReplaces`: the first entry of the channel that replaces or skips `name`.
    ///
    /// # Errors
    /// [`QueryError::NotFound`] for an unknown package or channel, or when no entry matches.
    pub fn get_bundle_that_replaces(
        &self,
        name: &str,
        package: &str,
        channel: &str,
    ) -> Result<api::Bundle, QueryError> {
        let pkg = self.package(package)?;
        let ch = self.channel(pkg, channel)?;
        let found = ch
            .entries
            .iter()
            .find(|e| e.replaces == name || e.skips.iter().any(|s| s == name))
            .ok_or_else(|| {
                QueryError::NotFound(format!(
                    "no entry found for package {package:?}, channel {channel:?}"
                ))
            })?;
        self.get_bundle(package, channel, &found.name)
    }

    /// `GetChannelEntriesThatReplace`.
    ///
    /// # Errors
    /// [`QueryError::NotFound`] when no entry replaces or skips `name`.
    pub fn get_channel_entries_that_replace(&self, name: &str) -> Result<Vec<api::ChannelEntry>, QueryError> {
        let mut out = Vec::new();
        for slot in self.slots() {
            let e = slot.entry;
            let own = |_: &str| entry_message(&slot.package.name, &slot.channel.name, &e.name, &e.replaces);
            if e.replaces == name {
                out.push(own(name));
            }
            for s in &e.skips {
                if s == name && *s != e.replaces {
                    out.push(own(s));
                }
            }
        }
        if out.is_empty() {
            return Err(QueryError::NotFound(format!(
                "no channel entries found that replace {name}"
            )));
        }
        Ok(out)
    }

    /// The edges of one bundle: its `replaces`, then one per skipped name (not repeating
    /// `replaces`); with `in_channel_only`, only skips that are entries of the channel.
    fn edges(slot: Slot<'_>, in_channel_only: bool) -> Vec<api::ChannelEntry> {
        let (p, c, e) = (&slot.package.name, &slot.channel.name, slot.entry);
        let mut out = vec![entry_message(p, c, &e.name, &e.replaces)];
        for s in &e.skips {
            if *s != e.replaces && (!in_channel_only || slot.channel.entry(s).is_some()) {
                out.push(entry_message(p, c, &e.name, s));
            }
        }
        out
    }

    fn provides(bundle: &Bundle, group: &str, version: &str, kind: &str) -> bool {
        bundle
            .provided_gvks()
            .iter()
            .any(|g| g.group == group && g.version == version && g.kind == kind)
    }

    fn not_provided(group: &str, version: &str, kind: &str) -> QueryError {
        QueryError::NotFound(format!(
            "no channel entries found that provide group:{group:?} version:{version:?} kind:{kind:?}"
        ))
    }

    /// `GetChannelEntriesThatProvide`.
    ///
    /// # Errors
    /// [`QueryError::NotFound`] when no bundle provides the API.
    pub fn get_channel_entries_that_provide(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Vec<api::ChannelEntry>, QueryError> {
        let out: Vec<_> = self
            .slots()
            .filter(|s| Self::provides(s.bundle, group, version, kind))
            .flat_map(|s| Self::edges(s, false))
            .collect();
        if out.is_empty() {
            return Err(Self::not_provided(group, version, kind));
        }
        Ok(out)
    }

    fn head_slots(&self) -> impl Iterator<Item = Slot<'_>> {
        self.model().packages().flat_map(move |package| {
            package
                .channels()
                .iter()
                .filter_map(move |channel| channel.head().and_then(|head| self.slot(package, channel, head)))
        })
    }

    /// `GetLatestChannelEntriesThatProvide`: like [`Registry::get_channel_entries_that_provide`]
    /// for channel heads only.
    ///
    /// # Errors
    /// [`QueryError::NotFound`] when no head provides the API.
    pub fn get_latest_channel_entries_that_provide(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Vec<api::ChannelEntry>, QueryError> {
        let out: Vec<_> = self
            .head_slots()
            .filter(|s| Self::provides(s.bundle, group, version, kind))
            .flat_map(|s| Self::edges(s, true))
            .collect();
        if out.is_empty() {
            return Err(Self::not_provided(group, version, kind));
        }
        Ok(out)
    }

    /// `GetDefaultBundleThatProvides`: the head of a default channel that provides the API, the
    /// first package by name.
    ///
    /// # Errors
    /// [`QueryError::NotFound`] when no such head exists.
    pub fn get_default_bundle_that_provides(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<api::Bundle, QueryError> {
        let latest = self.get_latest_channel_entries_that_provide(group, version, kind)?;
        let mut by_package: BTreeMap<&str, Vec<&api::ChannelEntry>> = BTreeMap::new();
        for e in &latest {
            by_package.entry(e.package_name.as_str()).or_default().push(e);
        }
        for (package, entries) in by_package {
            let Some(pkg) = self.model().package(package) else {
                continue;
            };
            if let Some(e) = entries.iter().find(|e| e.channel_name == pkg.default_channel) {
                return self.get_bundle(&e.package_name, &e.channel_name, &e.bundle_name);
            }
        }
        Err(QueryError::NotFound(format!(
            "no entry found that provides group:{group:?} version:{version:?} kind:{kind:?}"
        )))
    }
}
