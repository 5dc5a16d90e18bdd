//! resolve: which bundle a Subscription installs next, and which dependencies come with it.
//!
//! # What resolution decides
//!
//! A Subscription names a package in a catalog (`spec.name`, `spec.source`,
//! `spec.sourceNamespace`), optionally a channel and a `startingCSV`. Resolution answers, for one
//! Subscription at a time: *install this bundle next* ([`Outcome::Install`]) or *nothing to do*
//! ([`Outcome::AtLatestKnown`]), plus the dependencies that must be installed with it, each
//! through a generated Subscription ([`Dependency`]). When the answer is "impossible", the
//! [`ResolutionError`] says in plain language what was asked, what the catalog has and what to
//! change. [`resolve`] is pure: it reads the catalog models, the CSVs and Subscriptions of the
//! namespace, and nothing else (no I/O, no clock), so the same inputs always give the same
//! answer.
//!
//! # The rules (upstream OLM v0, `pkg/controller/registry/resolver`)
//!
//! **Catalog.** Only the Subscription's own catalog is searched for its package (upstream
//! `getSubscriptionVariables`); a Subscription can use catalogs in its own namespace and in the
//! global catalog namespace. An unknown catalog is `ConstraintsNotSatisfiable` upstream ("no
//! operators found from catalog ..."); so it is here, with the catalogs that do exist.
//!
//! **Channel.** `spec.channel` names the channel; when it is empty the package's default channel
//! is searched first, then the other channels by name (upstream sorts default-channel entries
//! first, then by channel name).
//!
//! **First install.** Without an installed CSV, the Subscription gets the channel head: the first
//! entry of the resolver's channel order ([`crate::graph::ChannelGraph::ordered`], upstream
//! `sortChannel`), in which entries skipped by another entry never appear, so a skipped bundle
//! is never installed as a head (upstream test `TestSolveOperatorsWithSkipsPreventingSelection`).
//! With `startingCSV`, exactly that bundle is installed, even a skipped one (upstream filters by
//! name before sorting). Bundles carrying the legacy `olm.deprecated` property are never
//! installed (upstream marks them Prohibited); a head carrying it yields the next entry.
//!
//! **Upgrade.** With an installed CSV (`status.installedCSV`, present in the namespace) the next
//! bundle is the channel's next hop from it ([`crate::graph::ChannelGraph::next_hop`]): an entry
//! that `replaces` it, `skips` it, or whose `skipRange` contains its version, the one nearest the
//! head winning. One hop per resolution, so one InstallPlan per hop; a multi-version jump happens
//! only when a newer entry skips or skipRanges over the intermediates. `startingCSV` no longer
//! matters once something is installed. When nothing can replace the installed CSV, the
//! Subscription is [`Outcome::AtLatestKnown`]. One deliberate guard: a hop to an entry that
//! comes *after* the installed one in channel order (a `skipRange` that covers a newer version,
//! a catalog mistake) is not taken, since it would be a downgrade.
//!
//! **Version ceiling.** A request may carry a version ceiling ([`Request::version_ceiling`],
//! from olm-rs's `olm-rs.io/version-ceiling` annotation): entries above it are skipped both as
//! channel heads and as upgrade hops (so a `skipRange` jump over the ceiling gives way to a
//! nearer hop at or below it), and a `startingCSV` above it is refused
//! ([`ResolutionError::AboveVersionCeiling`]). Upstream has no ceiling.
//!
//! **Upgrades keep other operators' requirements.** Upstream solves all Subscriptions of a
//! namespace together, so an operator installed as a dependency (`db` required by `app` in
//! `>=1.0.0 <2.0.0`) is never upgraded out of the range its dependents need. Resolving one
//! Subscription at a time, we get the same result by looking up the catalog bundles of the other
//! installed operators: an upgrade candidate that would stop satisfying a requirement the
//! installed CSV satisfies (a package range, or an API it provides) is *held back*, the next
//! eligible entry is tried, and if none fits the Subscription stays [`Outcome::AtLatestKnown`]
//! with a note naming the operator that holds it.
//!
//! **Dependencies** (upstream `getBundleVariables`, reference §2.6–2.7). The bundle being
//! installed (or, at latest known, the installed bundle as the catalog describes it) may declare
//! `olm.package.required` (a package in a semver range) and `olm.gvk.required` (an API some
//! bundle must provide). Each requirement is checked in this order and the first match wins:
//!
//! 1. a CSV already in the namespace satisfies it (upstream's `@existing` catalog comes first);
//! 2. a bundle already chosen in this resolution satisfies it (this is what makes dependency
//!    cycles terminate: A requires B, B requires A, and A is already chosen);
//! 3. a Subscription of the namespace is already installing a bundle that satisfies it;
//! 4. otherwise the catalogs are searched in upstream's preference order: the catalog of the
//!    bundle that declares the dependency, then higher `spec.priority`, then catalogs in the
//!    Subscription's namespace before the global namespace, then catalog name; within a catalog
//!    default-channel groups first, then package name, then channel name; within a channel, head
//!    first (channel order, skipped entries left out). The first satisfying bundle is chosen and
//!    a Subscription is generated for it, named `<package>-<channel>-<catsrc>-<catsrcNamespace>`
//!    with `startingCSV` set to the bundle and `Automatic` approval, as upstream's Subscription
//!    step does. The walk continues with the chosen bundle's own requirements (transitively).
//!
//! Upstream runs a SAT solver whose search visits candidates in exactly this preference order and
//! takes the first that leads to a solution; with one Subscription and at most one bundle per
//! package, the first satisfying candidate is what it finds. We do not backtrack: if the first
//! choice's own dependencies cannot be met, resolution fails and names that dependency, rather than
//! silently trying a less preferred provider.
//!
//! **Conflicts** (upstream invariants): a namespace holds one bundle per package and one provider
//! per API. A second Subscription to a package that another Subscription already installs fails
//! with [`ResolutionError::PackageAlreadySubscribed`] (when neither has started, the one whose name
//! sorts first proceeds), unless its own spec is wrong (an unknown catalog, package, channel or
//! `startingCSV`), which is reported first. A bundle that would provide an API an operator of another package in
//! the namespace already provides fails with [`ResolutionError::ApiConflict`].
//!
//! # Where we differ from upstream, on purpose
//!
//! - **A broken catalog blocks only its own Subscriptions.** Upstream fails resolution for the
//!   whole namespace when any visible catalog is unreachable (reference §5 #3). Here only a
//!   Subscription whose own catalog is unreadable fails (`ErrorPreventedResolution`); dependency
//!   lookups skip unreadable catalogs and broken channels, and name them if the dependency cannot
//!   be found elsewhere.
//! - **Orphaned CSVs are adopted.** Upstream makes a new Subscription unsatisfiable when a CSV of
//!   the same package is already in the namespace without a Subscription (reference §5 #2). Here
//!   the Subscription adopts it ([`Resolution::adopted`]) and upgrades from it.
//! - **One Subscription, one InstallPlan.** Upstream resolves every Subscription of a namespace
//!   together and writes one InstallPlan for all of them; if *any* Subscription of the namespace
//!   is `Manual`, that shared plan is Manual (the code calls it "an odd artifact"), so one Manual
//!   Subscription gates every other operator's installs and upgrades, and approving the plan
//!   approves all of them (reference §3.2, §5 #6). Here each Subscription is resolved on its own
//!   and gets its own InstallPlan whose approval is that Subscription's
//!   ([`crate::plan::subscription::plan_approval`]): a Manual Subscription never holds back an Automatic one, and
//!   approving a plan installs exactly what its Subscription asked for. Dependencies are
//!   installed through their own generated (Automatic) Subscriptions, created by the parent's
//!   InstallPlan: a Manual parent therefore gates its dependencies until it is approved, and no
//!   longer.
//! - **Messages** are plain language, deterministic, and name the fix ([`ResolutionError`]).
//!
//! # Subscription status
//!
//! [`crate::plan::subscription`] turns a resolution result, the referenced InstallPlan and the CSVs
//! present into the Subscription's next `status` (state, `currentCSV`, `installedCSV`,
//! `installPlanRef`, `catalogHealth` and the conditions), with upstream's reasons and polarity.

#![allow(
    clippy::result_large_err,
    reason = "a resolution error is built at most once per reconcile and carries the lists its \
              message needs; boxing it would only make callers' matches noisier"
)]

mod error;
mod input;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use semver::Version;

pub use error::{BundleRef, Requirement, ResolutionError};
pub use input::{Catalog, CatalogKey, Catalogs, ExistingSubscription, Installed, InstalledCsv, Request};

use crate::{
    api::{
        labels,
        v1alpha1::{Approval, Subscription, SubscriptionSpec},
    },
    catalog::{
        Model,
        model::{Bundle, Channel, Package},
    },
    graph::{self, EdgeKind},
};

/// Why a bundle was selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// First install: the channel head (the first installable entry in channel order).
    Head,
    /// First install: the Subscription's `startingCSV`.
    StartingCsv,
    /// Upgrade of `replaces` (the installed CSV), allowed by `edge`.
    Upgrade {
        /// The installed CSV the new bundle replaces (its `spec.replaces` is set to this name).
        replaces: String,
        /// The edge of the new bundle that allows the hop.
        edge: EdgeKind,
    },
    /// Chosen to satisfy a dependency.
    Dependency,
}

/// A bundle chosen for installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selected {
    /// The catalog it comes from.
    pub catalog: CatalogKey,
    /// Its package.
    pub package: String,
    /// The channel it was found in.
    pub channel: String,
    /// The bundle (CSV) name.
    pub bundle: String,
    /// Its version.
    pub version: Version,
    /// Why it was chosen.
    pub selection: Selection,
}

impl Selected {
    /// The bundle in the catalog model (for building the InstallPlan's steps).
    pub fn lookup<'m>(&self, catalogs: &Catalogs<'m>) -> Option<&'m Bundle> {
        catalogs
            .get(&self.catalog)?
            .model?
            .package(&self.package)?
            .bundle(&self.bundle)
    }

    /// The CSV this bundle replaces, when it is an upgrade.
    pub fn replaces(&self) -> Option<&str> {
        match &self.selection {
            Selection::Upgrade { replaces, .. } => Some(replaces),
            _ => None,
        }
    }
}

/// What the Subscription itself needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Install this bundle next (first install or one upgrade hop).
    Install(Selected),
    /// The installed CSV is the newest the channel offers over it: nothing to install.
    AtLatestKnown {
        /// The installed CSV.
        csv: String,
        /// Why no upgrade exists although the CSV is not the channel head, when that is worth
        /// telling (for example: the CSV is not in the channel at all).
        note: Option<String>,
    },
}

/// A dependency to install through a generated Subscription.
#[derive(Debug, Clone, PartialEq)]
pub struct Dependency {
    /// Name of the Subscription to create: `<package>-<channel>-<catsrc>-<catsrcNamespace>`.
    pub subscription_name: String,
    /// The bundle chosen for it (its `startingCSV`).
    pub bundle: Selected,
    /// The bundle that declared the requirement.
    pub required_by: String,
    /// The requirement it satisfies.
    pub requirement: Requirement,
}

impl Dependency {
    /// The Subscription to create in `namespace`: package, channel, catalog and `startingCSV` of
    /// the chosen bundle, `Automatic` approval, and the `olm.generated-by` annotation set to
    /// `generated_by` (the InstallPlan that creates it, as upstream).
    pub fn subscription(&self, namespace: &str, generated_by: &str) -> Subscription {
        let mut sub = Subscription::new(
            &self.subscription_name,
            SubscriptionSpec {
                source: self.bundle.catalog.name.clone(),
                source_namespace: self.bundle.catalog.namespace.clone(),
                name: self.bundle.package.clone(),
                channel: Some(self.bundle.channel.clone()),
                starting_csv: Some(self.bundle.bundle.clone()),
                install_plan_approval: Some(Approval::Automatic),
                config: None,
            },
        );
        sub.metadata.namespace = Some(namespace.to_owned());
        sub.metadata.annotations = Some(BTreeMap::from([(
            labels::GENERATED_BY.to_owned(),
            generated_by.to_owned(),
        )]));
        sub
    }
}

/// The result of resolving one Subscription.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// What the Subscription itself needs.
    pub outcome: Outcome,
    /// A CSV of the package found in the namespace without any Subscription, which this
    /// Subscription adopts as its installed CSV (upstream would fail instead).
    pub adopted: Option<String>,
    /// Dependencies to install, in the order they were found (breadth first from the
    /// Subscription's bundle).
    pub dependencies: Vec<Dependency>,
}

impl Resolution {
    /// The bundle to install for the Subscription itself, if any.
    pub fn install(&self) -> Option<&Selected> {
        match &self.outcome {
            Outcome::Install(s) => Some(s),
            Outcome::AtLatestKnown { .. } => None,
        }
    }
}

/// The name upstream gives a Subscription generated for a dependency:
/// `<package>-<channel>-<catsrc>-<catsrcNamespace>`. Upstream uses it verbatim; when a part holds
/// characters a Kubernetes object name cannot (channel names may have upper case letters or
/// `_`), they are lowered or replaced by `-` and the name is cut to 253 characters, so the
/// Subscription can actually be created. Valid names are unchanged.
pub fn generated_subscription_name(package: &str, channel: &str, catalog: &CatalogKey) -> String {
    let raw = format!("{package}-{channel}-{}-{}", catalog.name, catalog.namespace);
    let mut name: String = raw
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(253)
        .collect();
    while name.ends_with(['-', '.']) {
        name.pop();
    }
    name
}

/// Resolves one Subscription: the bundle it installs next and the dependencies that come with
/// it. See the module documentation for the rules.
///
/// # Errors
/// A [`ResolutionError`] whose text is the `ResolutionFailed` message and whose
/// [`ResolutionError::reason`] is the condition reason.
pub fn resolve(
    req: &Request,
    catalogs: &Catalogs<'_>,
    installed: &Installed,
) -> Result<Resolution, ResolutionError> {
    let catalog = find_catalog(req, catalogs)?;
    let model = catalog.model.ok_or_else(|| ResolutionError::CatalogUnavailable {
        catalog: catalog.key.clone(),
        problem: catalog
            .problem
            .clone()
            .unwrap_or_else(|| "its content is not available".to_owned()),
    })?;
    let key = &catalog.key;
    let package = find_package(req, key, model)?;
    let channels = channels_to_search(req, key, package)?;
    let (current, adopted) = match current_csv(req, installed) {
        Ok(found) => found,
        Err(conflict) => {
            // A mistake in the Subscription's own spec (an unknown startingCSV) is reported
            // before a conflict with another Subscription: fixing the spec is the first step.
            if req.installed_csv.is_none() {
                first_install(req, key, package, &channels)?;
            }
            return Err(conflict);
        }
    };

    let outcome = match current {
        None => Outcome::Install(first_install(req, key, package, &channels)?),
        Some(cur) => {
            let dependents = dependents(req, catalogs, installed, cur);
            match upgrade(req, key, package, &channels, cur, &dependents)? {
                Ok(selected) => Outcome::Install(selected),
                Err(held_back) => Outcome::AtLatestKnown {
                    csv: cur.name.clone(),
                    note: if held_back.is_empty() {
                        not_in_channel_note(req, package, &channels, cur)
                    } else {
                        Some(format!(
                            "{}; the upgrade happens once that operator accepts it",
                            held_back.join("; ")
                        ))
                    },
                },
            }
        }
    };

    // The bundle whose dependencies must hold: the one being installed, or the installed one.
    let replacee = match &outcome {
        Outcome::Install(s) => s.replaces().map(str::to_owned),
        Outcome::AtLatestKnown { .. } => None,
    };
    let root = match &outcome {
        Outcome::Install(s) => package.bundle(&s.bundle),
        Outcome::AtLatestKnown { csv, .. } => package.bundle(csv),
    };
    let mut walk = DependencyWalk {
        req,
        catalogs,
        installed,
        replacee: replacee.as_deref(),
        chosen: Vec::new(),
        dependencies: Vec::new(),
    };
    if let Some(root) = root {
        walk.run(key, root)?;
    }
    let dependencies = walk.dependencies;

    if let Some(b) = installing_bundle(&outcome, package) {
        check_api_conflicts(req, installed, key, b, replacee.as_deref())?;
    }
    for d in &dependencies {
        if let Some(b) = d.bundle.lookup(catalogs) {
            check_api_conflicts(req, installed, &d.bundle.catalog, b, None)?;
        }
    }

    Ok(Resolution {
        outcome,
        adopted,
        dependencies,
    })
}

/// The bundle being installed for the Subscription itself, if any.
fn installing_bundle<'m>(outcome: &Outcome, package: &'m Package) -> Option<&'m Bundle> {
    match outcome {
        Outcome::Install(s) => package.bundle(&s.bundle),
        Outcome::AtLatestKnown { .. } => None,
    }
}

fn find_catalog<'c, 'm>(
    req: &Request,
    catalogs: &'c Catalogs<'m>,
) -> Result<&'c Catalog<'m>, ResolutionError> {
    if let Some(c) = catalogs.get(&req.catalog) {
        return Ok(c);
    }
    let wanted_ns = &req.catalog.namespace;
    let visible = *wanted_ns == req.namespace || *wanted_ns == catalogs.global_namespace;
    let mut available: Vec<String> = catalogs
        .catalogs
        .iter()
        .filter(|c| {
            if visible {
                c.key.namespace == *wanted_ns
            } else {
                c.key.namespace == req.namespace || c.key.namespace == catalogs.global_namespace
            }
        })
        .map(|c| {
            if visible {
                c.key.name.clone()
            } else {
                c.key.to_string()
            }
        })
        .collect();
    available.sort();
    available.dedup();
    Err(ResolutionError::CatalogNotFound {
        catalog: req.catalog.clone(),
        visible,
        available,
        subscription_namespace: req.namespace.clone(),
        global_namespace: catalogs.global_namespace.clone(),
    })
}

fn find_package<'m>(
    req: &Request,
    key: &CatalogKey,
    model: &'m Model,
) -> Result<&'m Package, ResolutionError> {
    model
        .package(&req.package)
        .ok_or_else(|| ResolutionError::PackageNotFound {
            catalog: key.clone(),
            package: req.package.clone(),
            suggestions: error::close_matches(&req.package, model.packages().map(|p| p.name.as_str()), 3),
            packages: model.packages().map(|p| p.name.clone()).collect(),
        })
}

/// Channel names of a package, sorted, with the default one marked.
fn channel_list(package: &Package) -> Vec<String> {
    package
        .channels()
        .iter()
        .map(|c| {
            if c.name == package.default_channel {
                format!("{} (default)", c.name)
            } else {
                c.name.clone()
            }
        })
        .collect()
}

fn channels_to_search<'m>(
    req: &Request,
    key: &CatalogKey,
    package: &'m Package,
) -> Result<Vec<&'m Channel>, ResolutionError> {
    if package.channels().is_empty() {
        return Err(ResolutionError::NoChannels {
            catalog: key.clone(),
            package: package.name.clone(),
        });
    }
    if let Some(name) = req.channel() {
        return match package.channel(name) {
            Some(c) => Ok(vec![c]),
            None => Err(ResolutionError::ChannelNotFound {
                catalog: key.clone(),
                package: package.name.clone(),
                channel: name.to_owned(),
                channels: package.channels().iter().map(|c| c.name.clone()).collect(),
                default_channel: package.default_channel.clone(),
                suggestion: error::close_matches(name, package.channels().iter().map(|c| c.name.as_str()), 1)
                    .into_iter()
                    .next(),
            }),
        };
    }
    let mut channels: Vec<&Channel> = package.default_channel().into_iter().collect();
    channels.extend(
        package
            .channels()
            .iter()
            .filter(|c| c.name != package.default_channel),
    );
    Ok(channels)
}

/// The installed CSV upgrades start from, and whether it was adopted. The Subscription's
/// `status.installedCSV`, when the namespace holds it, whatever its package (upstream's
/// resolver looks it up by name alone): a Subscription switched to another package upgrades
/// from it to the entry of the new package that replaces or skips it.
fn current_csv<'i>(
    req: &Request,
    installed: &'i Installed,
) -> Result<(Option<&'i InstalledCsv>, Option<String>), ResolutionError> {
    if let Some(csv) = req.installed_csv.as_deref().and_then(|n| installed.csv(n)) {
        return Ok((Some(csv), None));
    }
    // Another Subscription to the same package wins if it has started, or if neither has and
    // its name sorts first.
    let mut others: Vec<&ExistingSubscription> = installed
        .subscriptions
        .iter()
        .filter(|s| s.name != req.name && s.package == req.package)
        .collect();
    others.sort_by(|a, b| a.name.cmp(&b.name));
    let blocking = others
        .iter()
        .find(|s| s.installed_csv.is_some() || s.current_csv.is_some())
        .or_else(|| others.iter().find(|s| s.name < req.name));
    if let Some(other) = blocking {
        return Err(ResolutionError::PackageAlreadySubscribed {
            namespace: req.namespace.clone(),
            package: req.package.clone(),
            subscription: other.name.clone(),
            csv: other.installed_csv.clone().or_else(|| other.current_csv.clone()),
        });
    }
    // Adopt an orphaned CSV of the package: the newest one, then by name.
    let mut orphans: Vec<&InstalledCsv> = installed
        .csvs
        .iter()
        .filter(|c| !c.leaving())
        .filter(|c| installed.package_of(c).as_deref() == Some(req.package.as_str()))
        .filter(|c| installed.owner_of(&c.name, &req.name).is_none())
        .collect();
    orphans.sort_by(|a, b| {
        let by_version = match (&a.version, &b.version) {
            (Some(x), Some(y)) => crate::version_range::compare(y, x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        };
        by_version.then_with(|| a.name.cmp(&b.name))
    });
    match orphans.first() {
        Some(csv) => Ok((Some(csv), Some(csv.name.clone()))),
        None => Ok((None, None)),
    }
}

fn broken(key: &CatalogKey, channel: &Channel, error: graph::GraphError) -> ResolutionError {
    ResolutionError::BrokenChannel {
        catalog: key.clone(),
        package: channel.package.clone(),
        channel: channel.name.clone(),
        error,
    }
}

fn installable<'m>(package: &'m Package, name: &str) -> Option<&'m Bundle> {
    package.bundle(name).filter(|b| !b.is_legacy_deprecated())
}

fn selected(key: &CatalogKey, channel: &Channel, bundle: &Bundle, selection: Selection) -> Selected {
    Selected {
        catalog: key.clone(),
        package: bundle.package.clone(),
        channel: channel.name.clone(),
        bundle: bundle.name.clone(),
        version: bundle.version.clone(),
        selection,
    }
}

/// The first installable entry of a channel in resolver order (head first) at or below the
/// request's version ceiling (any, without one).
fn channel_head<'m>(
    req: &Request,
    key: &CatalogKey,
    package: &'m Package,
    channel: &Channel,
) -> Result<Option<&'m Bundle>, ResolutionError> {
    if channel.entries.is_empty() {
        return Ok(None);
    }
    let order = channel.graph().ordered().map_err(|e| broken(key, channel, e))?;
    Ok(order
        .iter()
        .find_map(|e| installable(package, &e.name).filter(|b| req.within_ceiling(&b.version))))
}

fn first_install(
    req: &Request,
    key: &CatalogKey,
    package: &Package,
    channels: &[&Channel],
) -> Result<Selected, ResolutionError> {
    if let Some(wanted) = req.starting_csv() {
        for channel in channels {
            if channel.entry(wanted).is_none() {
                continue;
            }
            let Some(bundle) = package.bundle(wanted) else {
                continue;
            };
            if bundle.is_legacy_deprecated() {
                return Err(ResolutionError::BundleProhibited {
                    catalog: key.clone(),
                    package: package.name.clone(),
                    bundle: wanted.to_owned(),
                });
            }
            if let Some(ceiling) = req
                .version_ceiling
                .as_ref()
                .filter(|_| !req.within_ceiling(&bundle.version))
            {
                return Err(ResolutionError::AboveVersionCeiling {
                    catalog: key.clone(),
                    package: package.name.clone(),
                    bundle: Some((wanted.to_owned(), bundle.version.clone())),
                    ceiling: ceiling.clone(),
                });
            }
            return Ok(selected(key, channel, bundle, Selection::StartingCsv));
        }
        let mut bundles: Vec<&Bundle> = channels
            .iter()
            .flat_map(|c| c.entries.iter())
            .filter_map(|e| package.bundle(&e.name))
            .collect();
        bundles.sort_by(|a, b| {
            crate::version_range::compare(&a.version, &b.version).then_with(|| a.name.cmp(&b.name))
        });
        bundles.dedup_by(|a, b| a.name == b.name);
        let head = channels
            .first()
            .and_then(|c| channel_head(req, key, package, c).ok().flatten())
            .map(|b| b.name.clone());
        return Err(ResolutionError::StartingCsvNotFound {
            catalog: key.clone(),
            package: package.name.clone(),
            channel: req.channel().map(str::to_owned),
            starting_csv: wanted.to_owned(),
            bundles: bundles
                .iter()
                .map(|b| (b.name.clone(), b.version.clone()))
                .collect(),
            head,
        });
    }
    for channel in channels {
        if let Some(bundle) = channel_head(req, key, package, channel)? {
            return Ok(selected(key, channel, bundle, Selection::Head));
        }
    }
    if let Some(ceiling) = &req.version_ceiling {
        let unpinned = Request {
            version_ceiling: None,
            ..req.clone()
        };
        for channel in channels {
            if channel_head(&unpinned, key, package, channel)?.is_some() {
                return Err(ResolutionError::AboveVersionCeiling {
                    catalog: key.clone(),
                    package: package.name.clone(),
                    bundle: None,
                    ceiling: ceiling.clone(),
                });
            }
        }
    }
    let channel = channels.first().map(|c| c.name.clone()).unwrap_or_default();
    Err(ResolutionError::NoInstallableBundle {
        catalog: key.clone(),
        package: package.name.clone(),
        channel,
        channels: channel_list(package),
    })
}

/// A requirement another installed operator of the namespace places on this Subscription's
/// package (or on an API its installed CSV provides).
struct Dependent {
    /// The installed bundle declaring it.
    bundle: String,
    requirement: Requirement,
}

/// Requirements of the other installed operators that the current CSV satisfies: an upgrade must
/// keep satisfying them (upstream gets this from solving the whole namespace at once).
fn dependents(
    req: &Request,
    catalogs: &Catalogs<'_>,
    installed: &Installed,
    current: &InstalledCsv,
) -> Vec<Dependent> {
    let mut out = Vec::new();
    for sub in &installed.subscriptions {
        if sub.name == req.name {
            continue;
        }
        let Some(csv) = sub.installed_csv.as_deref() else {
            continue;
        };
        if installed.csv(csv).is_none_or(InstalledCsv::leaving) {
            continue;
        }
        let Some(bundle) = catalogs
            .get(&sub.catalog)
            .and_then(|c| c.model)
            .and_then(|m| m.package(&sub.package))
            .and_then(|p| p.bundle(csv))
        else {
            continue;
        };
        for requirement in requirements(bundle) {
            if requirement.satisfied_by_csv(current, Some(req.package.as_str())) {
                out.push(Dependent {
                    bundle: bundle.name.clone(),
                    requirement,
                });
            }
        }
    }
    out
}

/// The requirements a bundle declares, package requirements first, in property order.
fn requirements(bundle: &Bundle) -> Vec<Requirement> {
    bundle
        .required_packages()
        .iter()
        .map(|p| Requirement::Package {
            package: p.package_name.clone(),
            range: p.version_range.clone(),
        })
        .chain(bundle.required_gvks().iter().cloned().map(Requirement::Gvk))
        .collect()
}

/// Every entry of `order` that can replace the installed CSV in one step, in channel order (head
/// first), with the most specific edge: the predicate of [`crate::graph::ChannelGraph::next_hop`]
/// (whose answer is the first element), listed in full so that a candidate held back by another
/// operator's requirement can give way to the next one, as upstream's solver does.
fn eligible_hops<'g>(
    order: &[&'g graph::Entry],
    name: &str,
    version: Option<&Version>,
) -> Vec<(&'g graph::Entry, EdgeKind)> {
    order
        .iter()
        .filter(|e| e.name != name)
        .filter_map(|e| {
            if e.replaces.as_deref() == Some(name) {
                Some((*e, EdgeKind::Replaces))
            } else if e.skips.iter().any(|s| s == name) {
                Some((*e, EdgeKind::Skips))
            } else {
                match (&e.skip_range, version) {
                    (Some(range), Some(v)) if range.contains(v) => Some((*e, EdgeKind::SkipRange)),
                    _ => None,
                }
            }
        })
        .collect()
}

/// The upgrade taken, or why none was (a note for the AtLatestKnown outcome).
fn upgrade(
    req: &Request,
    key: &CatalogKey,
    package: &Package,
    channels: &[&Channel],
    current: &InstalledCsv,
    dependents: &[Dependent],
) -> Result<Result<Selected, Vec<String>>, ResolutionError> {
    let version = current
        .version
        .clone()
        .or_else(|| package.bundle(&current.name).map(|b| b.version.clone()));
    let mut held_back = Vec::new();
    for channel in channels {
        if channel.entries.is_empty() {
            continue;
        }
        let order = channel.graph().ordered().map_err(|e| broken(key, channel, e))?;
        let from = order.iter().position(|e| e.name == current.name);
        for (entry, edge) in eligible_hops(&order, &current.name, version.as_ref()) {
            // Never hop to an entry older (later in channel order) than the installed one.
            let to = order.iter().position(|e| e.name == entry.name);
            if let (Some(to), Some(from)) = (to, from)
                && to > from
            {
                continue;
            }
            let Some(bundle) = installable(package, &entry.name) else {
                continue;
            };
            // Above the Subscription's version ceiling: not taken (a nearer hop may be).
            if !req.within_ceiling(&bundle.version) {
                continue;
            }
            if let Some(d) = dependents
                .iter()
                .find(|d| !d.requirement.satisfied_by_bundle(bundle))
            {
                held_back.push(format!(
                    "{} is held back because installed bundle {} requires {}, which {} does not \
                     satisfy",
                    bundle.name, d.bundle, d.requirement, bundle.name
                ));
                continue;
            }
            return Ok(Ok(selected(
                key,
                channel,
                bundle,
                Selection::Upgrade {
                    replaces: current.name.clone(),
                    edge,
                },
            )));
        }
    }
    Ok(Err(held_back))
}

fn not_in_channel_note(
    req: &Request,
    package: &Package,
    channels: &[&Channel],
    current: &InstalledCsv,
) -> Option<String> {
    if channels.iter().any(|c| c.entry(&current.name).is_some()) {
        return None;
    }
    let where_ = match req.channel() {
        Some(c) => format!("channel '{c}'"),
        None => "any channel".to_owned(),
    };
    Some(format!(
        "installed CSV {} is not in {where_} of package {} and no entry there replaces, skips or \
         has a skipRange covering it, so no upgrade is offered; pick a channel that contains it, \
         or ask the catalog author for an upgrade edge",
        current.name, package.name
    ))
}

fn check_api_conflicts(
    req: &Request,
    installed: &Installed,
    key: &CatalogKey,
    bundle: &Bundle,
    replacee: Option<&str>,
) -> Result<(), ResolutionError> {
    for gvk in bundle.provided_gvks() {
        let clash = installed.csvs.iter().find(|c| {
            !c.leaving()
                && Some(c.name.as_str()) != replacee
                && c.name != bundle.name
                && c.provided_gvks.contains(gvk)
                && installed.package_of(c).as_deref() != Some(bundle.package.as_str())
        });
        if let Some(csv) = clash {
            return Err(ResolutionError::ApiConflict {
                bundle: BundleRef {
                    catalog: key.clone(),
                    package: bundle.package.clone(),
                    bundle: bundle.name.clone(),
                },
                gvk: gvk.clone(),
                namespace: req.namespace.clone(),
                csv: csv.name.clone(),
                csv_package: installed.package_of(csv),
            });
        }
    }
    Ok(())
}

impl Requirement {
    fn satisfied_by_bundle(&self, bundle: &Bundle) -> bool {
        match self {
            Requirement::Package { package, range } => {
                bundle.package == *package && range.contains(&bundle.version)
            }
            Requirement::Gvk(gvk) => bundle.provided_gvks().contains(gvk),
        }
    }

    fn satisfied_by_csv(&self, csv: &InstalledCsv, package: Option<&str>) -> bool {
        match self {
            Requirement::Package {
                package: wanted,
                range,
            } => package == Some(wanted.as_str()) && csv.version.as_ref().is_some_and(|v| range.contains(v)),
            Requirement::Gvk(gvk) => csv.provided_gvks.contains(gvk),
        }
    }
}

/// A bundle chosen during the dependency walk.
struct Chosen<'m> {
    catalog: CatalogKey,
    bundle: &'m Bundle,
    /// The Subscription that installs it (the requester, or a generated one).
    subscription: String,
}

/// One candidate found in the catalogs for a requirement.
struct Candidate<'m> {
    catalog: CatalogKey,
    channel: &'m Channel,
    bundle: &'m Bundle,
}

struct DependencyWalk<'a, 'm> {
    req: &'a Request,
    catalogs: &'a Catalogs<'m>,
    installed: &'a Installed,
    replacee: Option<&'a str>,
    chosen: Vec<Chosen<'m>>,
    dependencies: Vec<Dependency>,
}

impl<'m> DependencyWalk<'_, 'm> {
    fn run(&mut self, key: &CatalogKey, root: &'m Bundle) -> Result<(), ResolutionError> {
        self.chosen.push(Chosen {
            catalog: key.clone(),
            bundle: root,
            subscription: self.req.name.clone(),
        });
        let mut next = 0;
        while let Some(c) = self.chosen.get(next) {
            let (catalog, bundle) = (c.catalog.clone(), c.bundle);
            next += 1;
            for requirement in requirements(bundle) {
                self.satisfy(&catalog, bundle, requirement)?;
            }
        }
        Ok(())
    }

    fn satisfy(
        &mut self,
        catalog: &CatalogKey,
        by: &'m Bundle,
        requirement: Requirement,
    ) -> Result<(), ResolutionError> {
        let required_by = BundleRef {
            catalog: catalog.clone(),
            package: by.package.clone(),
            bundle: by.name.clone(),
        };
        // 1. Installed CSVs.
        let installed = self.installed;
        if installed.csvs.iter().any(|c| {
            !c.leaving()
                && Some(c.name.as_str()) != self.replacee
                && requirement.satisfied_by_csv(c, installed.package_of(c).as_deref())
        }) {
            return Ok(());
        }
        // 2. Bundles chosen in this resolution.
        if self
            .chosen
            .iter()
            .any(|c| requirement.satisfied_by_bundle(c.bundle))
        {
            return Ok(());
        }
        // 3. Bundles other Subscriptions are installing.
        let claims = self.claims();
        if self
            .in_flight()
            .iter()
            .any(|b| requirement.satisfied_by_bundle(b))
        {
            return Ok(());
        }
        if let Requirement::Package { package, .. } = &requirement
            && let Some((subscription, csv)) = claims.get(package)
        {
            return Err(ResolutionError::DependencyConflict {
                required_by,
                requirement: requirement.clone(),
                package: package.clone(),
                subscription: subscription.clone(),
                csv: csv.clone(),
            });
        }
        // 4. The catalogs, in preference order.
        let mut skipped = BTreeSet::new();
        let found = self.search(catalog, &requirement, &claims, &mut skipped);
        let Some(candidate) = found else {
            return Err(ResolutionError::DependencyNotFound {
                offers: self.offers(&requirement),
                required_by,
                requirement,
                skipped: skipped.into_iter().collect(),
            });
        };
        let subscription_name = generated_subscription_name(
            &candidate.bundle.package,
            &candidate.channel.name,
            &candidate.catalog,
        );
        self.dependencies.push(Dependency {
            subscription_name: subscription_name.clone(),
            bundle: selected(
                &candidate.catalog,
                candidate.channel,
                candidate.bundle,
                Selection::Dependency,
            ),
            required_by: by.name.clone(),
            requirement,
        });
        self.chosen.push(Chosen {
            catalog: candidate.catalog,
            bundle: candidate.bundle,
            subscription: subscription_name,
        });
        Ok(())
    }

    /// Packages already taken, with the Subscription taking them and its CSV.
    fn claims(&self) -> BTreeMap<String, (String, Option<String>)> {
        let mut claims = BTreeMap::new();
        for s in &self.installed.subscriptions {
            if s.name != self.req.name {
                let csv = s.installed_csv.clone().or_else(|| s.current_csv.clone());
                claims.entry(s.package.clone()).or_insert((s.name.clone(), csv));
            }
        }
        for c in &self.chosen {
            claims.insert(
                c.bundle.package.clone(),
                (c.subscription.clone(), Some(c.bundle.name.clone())),
            );
        }
        claims
    }

    /// Bundles other Subscriptions are installing (their `currentCSV`, not yet a CSV).
    fn in_flight(&self) -> Vec<&'m Bundle> {
        self.installed
            .subscriptions
            .iter()
            .filter(|s| s.name != self.req.name)
            .filter_map(|s| {
                let csv = s.current_csv.as_deref()?;
                if self.installed.csv(csv).is_some() {
                    return None;
                }
                self.catalogs
                    .get(&s.catalog)?
                    .model?
                    .package(&s.package)?
                    .bundle(csv)
            })
            .collect()
    }

    /// Catalogs with content, in dependency preference order for a bundle from `preferred`.
    fn ordered_catalogs(&self, preferred: &CatalogKey) -> Vec<(&Catalog<'m>, &'m Model)> {
        let mut list: Vec<(&Catalog<'m>, &'m Model)> = self
            .catalogs
            .catalogs
            .iter()
            .filter_map(|c| c.model.map(|m| (c, m)))
            .collect();
        list.sort_by(|(a, _), (b, _)| {
            (a.key != *preferred)
                .cmp(&(b.key != *preferred))
                .then_with(|| b.priority.cmp(&a.priority))
                .then_with(|| {
                    (a.key.namespace != self.req.namespace).cmp(&(b.key.namespace != self.req.namespace))
                })
                .then_with(|| a.key.name.cmp(&b.key.name))
                .then_with(|| a.key.namespace.cmp(&b.key.namespace))
        });
        list
    }

    fn search(
        &self,
        preferred: &CatalogKey,
        requirement: &Requirement,
        claims: &BTreeMap<String, (String, Option<String>)>,
        skipped: &mut BTreeSet<String>,
    ) -> Option<Candidate<'m>> {
        for c in &self.catalogs.catalogs {
            if c.model.is_none() {
                skipped.insert(format!(
                    "CatalogSource {} (unreadable: {})",
                    c.key,
                    c.problem.as_deref().unwrap_or("no content")
                ));
            }
        }
        for (catalog, model) in self.ordered_catalogs(preferred) {
            let packages: Vec<&Package> = match requirement {
                Requirement::Package { package, .. } => model.package(package).into_iter().collect(),
                Requirement::Gvk(gvk) => model
                    .packages()
                    .filter(|p| p.bundles().iter().any(|b| b.provided_gvks().contains(gvk)))
                    .collect(),
            };
            // Default-channel groups first, then package name, then channel name.
            let mut groups: Vec<(bool, &str, &Channel, &Package)> = packages
                .iter()
                .flat_map(|p| {
                    p.channels()
                        .iter()
                        .map(move |c| (c.name != p.default_channel, p.name.as_str(), c, *p))
                })
                .collect();
            groups.sort_by(|a, b| (a.0, a.1, &a.2.name).cmp(&(b.0, b.1, &b.2.name)));
            for (_, _, channel, package) in groups {
                if channel.entries.is_empty() {
                    continue;
                }
                let order = match channel.graph().ordered() {
                    Ok(order) => order,
                    Err(e) => {
                        if channel
                            .entries
                            .iter()
                            .filter_map(|en| package.bundle(&en.name))
                            .any(|b| requirement.satisfied_by_bundle(b))
                        {
                            skipped.insert(format!(
                                "channel '{}' of package {} in CatalogSource {} (broken upgrade \
                                 graph: {e})",
                                channel.name, package.name, catalog.key
                            ));
                        }
                        continue;
                    }
                };
                for entry in order {
                    let Some(bundle) = installable(package, &entry.name) else {
                        continue;
                    };
                    if !requirement.satisfied_by_bundle(bundle) {
                        continue;
                    }
                    if let Some((sub, _)) = claims.get(&package.name) {
                        skipped.insert(format!(
                            "package {} in CatalogSource {} (already subscribed by Subscription \
                             {sub} at a version that does not satisfy it)",
                            package.name, catalog.key
                        ));
                        break;
                    }
                    return Some(Candidate {
                        catalog: catalog.key.clone(),
                        channel,
                        bundle,
                    });
                }
            }
        }
        None
    }

    /// What the catalogs have that comes close to `requirement`, for the failure message.
    fn offers(&self, requirement: &Requirement) -> Vec<String> {
        let mut offers = Vec::new();
        let mut catalogs: Vec<&Catalog<'m>> = self.catalogs.catalogs.iter().collect();
        catalogs.sort_by(|a, b| a.key.cmp(&b.key));
        for c in catalogs {
            let Some(model) = c.model else { continue };
            match requirement {
                Requirement::Package { package, .. } => {
                    if let Some(p) = model.package(package) {
                        let versions: Vec<String> =
                            p.bundles().iter().map(|b| b.version.to_string()).collect();
                        offers.push(format!(
                            "CatalogSource {} has {package} {}",
                            c.key,
                            if versions.is_empty() {
                                "with no bundles".to_owned()
                            } else {
                                versions.join(", ")
                            }
                        ));
                    }
                }
                Requirement::Gvk(gvk) => {
                    // Same kind in another group or version is the usual near miss.
                    let mut near: BTreeSet<String> = BTreeSet::new();
                    for p in model.packages() {
                        for b in p.bundles() {
                            for g in b.provided_gvks() {
                                if g.kind == gvk.kind && g != gvk {
                                    near.insert(format!("{} provides {}", b.name, error::gvk_text(g)));
                                }
                            }
                        }
                    }
                    if !near.is_empty() {
                        offers.push(format!(
                            "in CatalogSource {}: {}",
                            c.key,
                            near.into_iter().collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
            }
        }
        offers
    }
}
