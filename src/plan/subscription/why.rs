//! why: the answer to "why is my operator on this version, and why did nothing (else) install",
//! computed purely from a Subscription, what its namespace holds and its catalog, with the same
//! resolution the controller runs ([`crate::resolve::resolve`], with the Subscription's
//! [`super::pin`] annotations) and the channel graph of [`crate::graph`].
//!
//! The answer ([`Why`]) says:
//! - which catalog (and its `spec.priority`) and channel the Subscription follows;
//! - which bundle is installed and the edge that brought it (`replaces`, `skips` or `skipRange`
//!   from the CSV installed before it, read from the `olm-rs.io/installed-csvs` history), or that
//!   it was the channel head or the `startingCSV` of a first install;
//! - what comes next: nothing (at the latest the channel offers over it), one hop and its edge,
//!   or a newer bundle kept out by the version ceiling;
//! - every other entry of the channel and why it was not chosen (older, no edge from the
//!   installed CSV, above the ceiling, `olm.deprecated`, further from the head);
//! - the dependencies of the chosen bundle and where they come from, resolved against every
//!   catalog the namespace sees (its own and the global catalog namespace's, with their
//!   priorities, as the controller's resolver reads them: [`other_sources`]); each other catalog
//!   is listed, and one that could not be read is named with the reason, never skipped silently;
//! - for a failure, the cause in one sentence and its fix (the resolver's own message, split at
//!   its fix, or the failed InstallPlan, unpack or CSV).

use semver::Version;
use serde::Serialize;

use crate::{
    api::{
        ConditionStatus,
        v1alpha1::{CatalogSource, CsvPhase, Subscription, SubscriptionConditionType as Cond},
    },
    catalog::{
        Model,
        model::{Channel, Package},
    },
    graph::EdgeKind,
    resolve::{self, Catalog, CatalogKey, Catalogs, Installed, Outcome, Request, Selection},
};

/// What [`explain`] looks at.
#[derive(Debug, Clone, Copy)]
pub struct WhyInput<'a> {
    /// The Subscription (spec, status, annotations).
    pub subscription: &'a Subscription,
    /// The catalogs it can use (at least its own).
    pub catalogs: &'a Catalogs<'a>,
    /// What its namespace holds.
    pub installed: &'a Installed,
    /// The phase, reason and message of its installed (or current) CSV, when it exists.
    pub csv: Option<(&'a str, &'a CsvPhase, &'a str, &'a str)>,
    /// The namespaces whose CatalogSources could not be listed, and why.
    pub unlisted: &'a [(String, String)],
}

/// A CatalogSource as the user could read it.
#[derive(Debug)]
pub struct ReadCatalog {
    /// Which CatalogSource.
    pub key: CatalogKey,
    /// Its `spec.priority`.
    pub priority: i32,
    /// Its content, or why it could not be read.
    pub content: Result<Model, String>,
}

impl ReadCatalog {
    /// The catalog as resolution reads it: one not read keeps its reason as its problem, so
    /// resolution names it where it looked for a dependency.
    pub fn catalog(&self) -> Catalog<'_> {
        Catalog {
            key: self.key.clone(),
            priority: self.priority,
            model: self.content.as_ref().ok(),
            problem: self.content.as_ref().err().cloned(),
        }
    }
}

/// The CatalogSources other than the Subscription's own (`own`) that resolution in `namespace`
/// reads, as the controller's resolver does: those of `namespace` and of the global catalog
/// namespace, sorted by namespace and name.
pub fn other_sources<'s>(
    sources: &'s [CatalogSource],
    namespace: &str,
    global_namespace: &str,
    own: &CatalogKey,
) -> Vec<&'s CatalogSource> {
    let mut visible: Vec<&CatalogSource> = sources
        .iter()
        .filter(|cs| {
            let ns = cs.metadata.namespace.as_deref().unwrap_or_default();
            let key = CatalogKey::new(ns, cs.metadata.name.as_deref().unwrap_or_default());
            (ns == namespace || ns == global_namespace) && key != *own
        })
        .collect();
    visible.sort_by_key(|cs| (cs.metadata.namespace.clone(), cs.metadata.name.clone()));
    visible.dedup_by_key(|cs| (cs.metadata.namespace.clone(), cs.metadata.name.clone()));
    visible
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Why {
    /// `namespace/name` of the Subscription.
    pub subscription: String,
    /// The package.
    pub package: String,
    /// The catalog, `namespace/name`.
    pub catalog: String,
    /// Its `spec.priority`.
    pub catalog_priority: i32,
    /// The channel followed (`spec.channel`, else the package's default).
    pub channel: String,
    /// `spec.installPlanApproval`, with the upgrade approval of the annotation, if any.
    pub approval: String,
    /// The version ceiling, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_ceiling: Option<String>,
    /// `status.state`.
    pub state: String,
    /// The installed CSV and how it was chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed: Option<Chosen>,
    /// What resolution does next.
    pub next: String,
    /// The other entries of the channel and why they were not chosen, head first.
    pub candidates: Vec<Candidate>,
    /// The dependencies of the chosen bundle and where they come from.
    pub dependencies: Vec<String>,
    /// The other catalogs the namespace sees (dependencies may come from them), and those that
    /// could not be read or listed, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_catalogs: Vec<OtherCatalog>,
    /// The failure, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// A chosen bundle and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chosen {
    /// The bundle (CSV) name.
    pub bundle: String,
    /// Its version, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// How it was chosen: `channel head`, `startingCSV`, `replaces X`, `skips X`, `skipRange R
    /// covers X (v)`.
    pub how: String,
}

/// One channel entry and the verdict on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The bundle name.
    pub bundle: String,
    /// Its version, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `installed`, `next`, or why not.
    pub verdict: String,
}

/// A catalog besides the Subscription's own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OtherCatalog {
    /// `namespace/name`, or `catalogsources in namespace NS` for a namespace not listed.
    pub catalog: String,
    /// Its `spec.priority`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Why it was not read, if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// A failure: what went wrong in one sentence, and what to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    /// The cause.
    pub cause: String,
    /// The fix.
    pub fix: String,
}

/// Splits a message written as "cause; fix" (the house style of resolution messages) at its last
/// `; ` that starts an instruction; a message without one gets `fallback` as its fix.
pub fn split_cause(message: &str, fallback: &str) -> Failure {
    const VERBS: [&str; 14] = [
        "set ", "choose ", "pick ", "create ", "delete ", "raise ", "remove ", "fix ", "add ", "ask ",
        "wait ", "check ", "install ", "pass ",
    ];
    let cut = message
        .match_indices("; ")
        .map(|(i, _)| i)
        .find(|&i| VERBS.iter().any(|v| message[i + 2..].starts_with(v)));
    match cut {
        Some(i) => Failure {
            cause: message[..i].to_owned(),
            fix: message[i + 2..].to_owned(),
        },
        None => Failure {
            cause: message.to_owned(),
            fix: fallback.to_owned(),
        },
    }
}

/// The effective channel of `req` in `package`.
fn channel_of<'m>(req: &Request, package: &'m Package) -> Option<&'m Channel> {
    match req.channel.as_deref().filter(|c| !c.is_empty()) {
        Some(name) => package.channel(name),
        None => package.default_channel(),
    }
}

fn edge_text(
    kind: EdgeKind,
    entry: &crate::graph::Entry,
    from: &str,
    from_version: Option<&Version>,
) -> String {
    match kind {
        EdgeKind::Replaces => format!("replaces {from}"),
        EdgeKind::Skips => format!("skips {from}"),
        EdgeKind::SkipRange => format!(
            "skipRange '{}' covers {from}{}",
            entry.skip_range.as_ref().map(|r| r.as_str()).unwrap_or_default(),
            from_version.map(|v| format!(" ({v})")).unwrap_or_default()
        ),
    }
}

/// The edge of `entry` over `from` (name and version), most specific first.
fn edge_over(entry: &crate::graph::Entry, from: &str, from_version: Option<&Version>) -> Option<EdgeKind> {
    if entry.replaces.as_deref() == Some(from) {
        Some(EdgeKind::Replaces)
    } else if entry.skips.iter().any(|s| s == from) {
        Some(EdgeKind::Skips)
    } else {
        match (&entry.skip_range, from_version) {
            (Some(r), Some(v)) if r.contains(v) => Some(EdgeKind::SkipRange),
            _ => None,
        }
    }
}

/// Explains `input.subscription` (see the module documentation).
pub fn explain(input: &WhyInput<'_>) -> Why {
    let sub = input.subscription;
    let status = sub.status.as_ref();
    let pins = super::pin::pins(sub);
    let mut request = Request::from_subscription(sub);
    request.version_ceiling = pins.as_ref().ok().and_then(|p| p.ceiling.clone());
    let catalog = input.catalogs.get(&request.catalog);
    let package = catalog
        .and_then(|c| c.model)
        .and_then(|m| m.package(&request.package));
    let channel = package.and_then(|p| channel_of(&request, p));
    let installed_name = request.installed_csv.clone();
    let version_of = |name: &str| -> Option<Version> {
        package
            .and_then(|p| p.bundle(name))
            .map(|b| b.version.clone())
            .or_else(|| input.installed.csv(name).and_then(|c| c.version.clone()))
    };

    // How the installed CSV was chosen: the edge over the CSV installed before it.
    let installed = installed_name.as_ref().map(|name| {
        let history = super::pin::history(sub);
        let at = history.iter().rposition(|h| h == name);
        let previous = at.and_then(|i| i.checked_sub(1)).and_then(|i| history.get(i));
        let rolled_back = at.is_some_and(|i| history[..i].contains(name));
        let entry = channel.and_then(|c| c.graph().entry(name));
        let how = match (previous, entry) {
            (Some(prev), _) if rolled_back => {
                format!("rolled back from {prev} (it was installed before {prev})")
            }
            (Some(prev), Some(entry)) => {
                let prev_version = version_of(prev);
                match edge_over(entry, prev, prev_version.as_ref()) {
                    Some(kind) => format!("upgrade: {}", edge_text(kind, entry, prev, prev_version.as_ref())),
                    None => format!(
                        "installed after {prev}, with no edge from it in this channel (a rollback, or \
                         a catalog changed since)"
                    ),
                }
            }
            (None, _) if request.starting_csv.as_deref() == Some(name.as_str()) => {
                "first install: spec.startingCSV".to_owned()
            }
            (None, Some(_)) => "first install: the channel head at the time".to_owned(),
            (_, None) => format!(
                "not in channel '{}' of the catalog now",
                channel.map(|c| c.name.as_str()).unwrap_or("?")
            ),
        };
        Chosen {
            bundle: name.clone(),
            version: version_of(name).map(|v| v.to_string()),
            how,
        }
    });

    // What resolution does now.
    let resolution = resolve::resolve(&request, input.catalogs, input.installed);
    let mut failure = None;
    let mut next_bundle: Option<String> = None;
    let mut dependencies = Vec::new();
    let next = match (&pins, &resolution) {
        (Err(e), _) => {
            failure = Some(Failure {
                cause: e.cause(),
                fix: e.fix().to_owned(),
            });
            "nothing: an annotation does not read".to_owned()
        }
        (Ok(_), Err(e)) => {
            failure = Some(split_cause(&e.to_string(), "see the Subscription's conditions"));
            "nothing: resolution fails".to_owned()
        }
        (Ok(pins), Ok(r)) => {
            for d in &r.dependencies {
                dependencies.push(format!(
                    "{} (required by {}): {} {} from catalog {} channel {}, through Subscription {}",
                    d.requirement,
                    d.required_by,
                    d.bundle.bundle,
                    d.bundle.version,
                    d.bundle.catalog,
                    d.bundle.channel,
                    d.subscription_name
                ));
            }
            match &r.outcome {
                Outcome::Install(s) => {
                    next_bundle = Some(s.bundle.clone());
                    let how = match &s.selection {
                        Selection::Head => "the channel head".to_owned(),
                        Selection::StartingCsv => "spec.startingCSV".to_owned(),
                        Selection::Upgrade { replaces, edge } => {
                            let entry = channel.and_then(|c| c.graph().entry(&s.bundle));
                            match entry {
                                Some(entry) => {
                                    edge_text(*edge, entry, replaces, version_of(replaces).as_ref())
                                }
                                None => format!("{edge} {replaces}"),
                            }
                        }
                        Selection::Dependency => "a dependency".to_owned(),
                    };
                    let waits = match status.and_then(|s| s.state.as_ref()).map(|s| s.as_str()) {
                        Some("UpgradePending") => " (its InstallPlan is pending)",
                        _ => "",
                    };
                    format!("install {} {} ({how}){waits}", s.bundle, s.version)
                }
                Outcome::AtLatestKnown { csv, note } => {
                    let unpinned = Request {
                        version_ceiling: None,
                        ..request.clone()
                    };
                    let above = pins.ceiling.as_ref().and_then(|c| {
                        let free = resolve::resolve(&unpinned, input.catalogs, input.installed).ok()?;
                        let s = free.install()?.clone();
                        Some(format!(
                            "nothing: {} {} is available, but the annotation {} keeps this \
                             Subscription at or below {c} (state UpgradeAvailable)",
                            s.bundle,
                            s.version,
                            super::pin::VERSION_CEILING
                        ))
                    });
                    above.unwrap_or_else(|| match note {
                        Some(note) => format!("nothing: {csv} is the latest reachable ({note})"),
                        None => format!(
                            "nothing: no entry of the channel replaces or skips {csv}, or has a \
                             skipRange covering its version"
                        ),
                    })
                }
            }
        }
    };

    // Every entry of the channel, with its verdict.
    let mut candidates = Vec::new();
    if let (Some(channel), Some(package)) = (channel, package) {
        let graph = channel.graph();
        let order: Vec<&crate::graph::Entry> = graph
            .ordered()
            .unwrap_or_else(|_| graph.entries().iter().collect());
        let installed_version = installed_name.as_deref().and_then(version_of);
        let installed_at = installed_name
            .as_deref()
            .and_then(|n| order.iter().position(|e| e.name == n));
        for (i, entry) in order.iter().enumerate() {
            let bundle = package.bundle(&entry.name);
            let version = entry
                .version
                .clone()
                .or_else(|| bundle.map(|b| b.version.clone()));
            let verdict = if Some(entry.name.as_str()) == installed_name.as_deref() {
                "installed".to_owned()
            } else if Some(&entry.name) == next_bundle.as_ref() {
                "next".to_owned()
            } else if bundle.is_some_and(|b| b.is_legacy_deprecated()) {
                "rejected: carries olm.deprecated, never installed".to_owned()
            } else if version.as_ref().is_some_and(|v| !request.within_ceiling(v)) {
                format!(
                    "rejected: above the version ceiling {}",
                    request
                        .version_ceiling
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                )
            } else if let Some(at) = installed_at.filter(|at| i > *at) {
                let _ = at;
                "older than the installed version".to_owned()
            } else if let Some(name) = installed_name.as_deref() {
                match edge_over(entry, name, installed_version.as_ref()) {
                    Some(kind) => format!(
                        "rejected: also {}, but the hop nearest the head is taken",
                        edge_text(kind, entry, name, installed_version.as_ref())
                    ),
                    None => format!(
                        "rejected: no edge from {name} (neither replaces nor skips it, and no \
                         skipRange covering its version)"
                    ),
                }
            } else if graph.is_skipped(&entry.name) {
                "rejected: skipped by a newer entry".to_owned()
            } else {
                "rejected: not the channel head".to_owned()
            };
            candidates.push(Candidate {
                bundle: entry.name.clone(),
                version: version.map(|v| v.to_string()),
                verdict,
            });
        }
        // Entries the resolver's order leaves out: skipped by a newer entry, never installed.
        for entry in graph.entries() {
            if order.iter().any(|e| e.name == entry.name) {
                continue;
            }
            let version = entry
                .version
                .clone()
                .or_else(|| package.bundle(&entry.name).map(|b| b.version.clone()));
            let by: Vec<&str> = graph
                .entries()
                .iter()
                .filter(|e| e.skips.contains(&entry.name))
                .map(|e| e.name.as_str())
                .collect();
            candidates.push(Candidate {
                bundle: entry.name.clone(),
                version: version.map(|v| v.to_string()),
                verdict: format!(
                    "rejected: skipped by {}, never installed from this channel",
                    by.join(", ")
                ),
            });
        }
    }

    // A failure reported on the Subscription or its CSV, when resolution itself succeeds.
    if failure.is_none() {
        let failed = status.and_then(|s| {
            s.conditions.iter().find(|c| {
                c.status == ConditionStatus::True
                    && matches!(
                        c.type_,
                        Cond::ResolutionFailed
                            | Cond::InstallPlanFailed
                            | Cond::BundleUnpackFailed
                            | Cond::InstallPlanMissing
                    )
            })
        });
        failure = failed
            .map(|c| {
                let message = c.message.clone().unwrap_or_default();
                let mut f = split_cause(
                    &format!("{}: {message}", c.type_.as_str()),
                    "see `kubectl describe subscription` and its InstallPlan",
                );
                if c.type_ == Cond::InstallPlanFailed {
                    f.fix = "fix what the InstallPlan names, then delete the failed InstallPlan so \
                             the Subscription plans again"
                        .to_owned();
                }
                f
            })
            .or_else(|| {
                input.csv.and_then(|(name, phase, reason, message)| {
                    (*phase == CsvPhase::Failed).then(|| Failure {
                        cause: format!("ClusterServiceVersion {name} failed ({reason}): {message}"),
                        fix: format!(
                            "see `kubectl describe csv {name}` and its events; the CSV recovers by \
                             itself once the cause is fixed"
                        ),
                    })
                })
            });
    }

    let mut other_catalogs: Vec<OtherCatalog> = input
        .catalogs
        .catalogs
        .iter()
        .filter(|c| c.key != request.catalog)
        .map(|c| OtherCatalog {
            catalog: c.key.to_string(),
            priority: Some(c.priority),
            problem: c.model.is_none().then(|| {
                c.problem
                    .clone()
                    .unwrap_or_else(|| "its content is not available".to_owned())
            }),
        })
        .collect();
    other_catalogs.sort_by(|a, b| a.catalog.cmp(&b.catalog));
    other_catalogs.extend(input.unlisted.iter().map(|(ns, why)| OtherCatalog {
        catalog: format!("catalogsources in namespace {ns}"),
        priority: None,
        problem: Some(why.clone()),
    }));

    let approval = match pins.as_ref().ok().and_then(|p| p.upgrade_approval.clone()) {
        Some(up) => format!(
            "{} (upgrades: {}, annotation {})",
            sub.spec.approval().as_str(),
            up.as_str(),
            super::pin::UPGRADE_APPROVAL
        ),
        None => sub.spec.approval().as_str().to_owned(),
    };
    Why {
        subscription: format!("{}/{}", request.namespace, request.name),
        package: request.package.clone(),
        catalog: request.catalog.to_string(),
        catalog_priority: catalog.map(|c| c.priority).unwrap_or_default(),
        channel: channel
            .map(|c| c.name.clone())
            .or_else(|| request.channel.clone())
            .unwrap_or_default(),
        approval,
        version_ceiling: request.version_ceiling.as_ref().map(ToString::to_string),
        state: status
            .and_then(|s| s.state.as_ref())
            .map(|s| s.as_str().to_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "not resolved yet".to_owned()),
        installed,
        next,
        candidates,
        dependencies,
        other_catalogs,
        failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_split_at_its_fix() {
        let f = split_cause(
            "channel 'fast' of package a in CatalogSource olm/c has no installable bundle; choose another channel (stable)",
            "x",
        );
        assert_eq!(
            f.cause,
            "channel 'fast' of package a in CatalogSource olm/c has no installable bundle"
        );
        assert_eq!(f.fix, "choose another channel (stable)");
        let f = split_cause("it broke; badly", "look at the events");
        assert_eq!(
            (f.cause.as_str(), f.fix.as_str()),
            ("it broke; badly", "look at the events")
        );
    }
}
