//! error: why a Subscription could not be resolved, in plain language.
//!
//! Upstream OLM reports resolution failures as "constraints not satisfiable: " followed by the
//! messages of a minimal unsatisfiable set of SAT clauses, full of internal variable names
//! (`@existing/ns//csv`, "originate from package"); users cannot act on them (reference §5 #1).
//! Every [`ResolutionError`] message instead says, in this order: what the Subscription asked
//! for, what the catalog actually has, and what to change. Lists in messages are sorted, so the
//! same inputs always produce the same text (and an unchanged failure never rewrites a status).
//!
//! Each error maps to the upstream `ResolutionFailed` condition reason ([`ResolutionError::reason`]):
//! `ConstraintsNotSatisfiable` when the request cannot be met by the catalogs as they are (unknown
//! package, channel, catalog or startingCSV, missing dependency, conflicts), and
//! `ErrorPreventedResolution` when the catalog itself is broken (unreadable catalog, broken
//! channel graph). Upstream requeues the second kind and waits for a change on the first.

use semver::Version;

use crate::{
    api::reasons::subscription::{CONSTRAINTS_NOT_SATISFIABLE, ERROR_PREVENTED_RESOLUTION},
    catalog::property::Gvk,
    graph::GraphError,
    version_range::Range,
};

use super::CatalogKey;

/// A dependency a bundle declares.
#[derive(Debug, Clone, PartialEq)]
pub enum Requirement {
    /// `olm.package.required`: a package in a version range.
    Package {
        /// Required package.
        package: String,
        /// Versions that satisfy the requirement.
        range: Range,
    },
    /// `olm.gvk.required`: some bundle providing this API.
    Gvk(Gvk),
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Requirement::Package { package, range } => {
                write!(f, "package {package} in version range '{}'", range.as_str())
            }
            Requirement::Gvk(gvk) => write!(f, "API {}", gvk_text(gvk)),
        }
    }
}

/// `Kind (group/version)`, the way users read an API.
pub(crate) fn gvk_text(gvk: &Gvk) -> String {
    if gvk.group.is_empty() {
        format!("{} ({})", gvk.kind, gvk.version)
    } else {
        format!("{} ({}/{})", gvk.kind, gvk.group, gvk.version)
    }
}

/// A bundle named in a message: which catalog, package and bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleRef {
    /// The catalog holding it.
    pub catalog: CatalogKey,
    /// Its package.
    pub package: String,
    /// Its name.
    pub bundle: String,
}

impl std::fmt::Display for BundleRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bundle {} (package {}, CatalogSource {})",
            self.bundle, self.package, self.catalog
        )
    }
}

/// Why resolution failed. The `Display` text is the `ResolutionFailed` condition message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolutionError {
    /// `spec.source` / `spec.sourceNamespace` name no visible CatalogSource.
    #[error("{}", catalog_not_found(.catalog, *.visible, .available, .subscription_namespace, .global_namespace))]
    CatalogNotFound {
        /// The catalog asked for.
        catalog: CatalogKey,
        /// Whether the requested namespace is one the Subscription can use at all.
        visible: bool,
        /// Catalogs in the requested namespace when it is visible, else every visible catalog
        /// (`namespace/name`), sorted.
        available: Vec<String>,
        /// The Subscription's namespace.
        subscription_namespace: String,
        /// The global catalog namespace.
        global_namespace: String,
    },
    /// The Subscription's catalog exists but its content could not be read.
    #[error(
        "CatalogSource {catalog} cannot be used: {problem}; fix the catalog (its status.message \
         says more); Subscriptions using other catalogs are not affected"
    )]
    CatalogUnavailable {
        /// The catalog.
        catalog: CatalogKey,
        /// What is wrong with it.
        problem: String,
    },
    /// The catalog has no such package.
    #[error("{}", package_not_found(.catalog, .package, .suggestions, .packages))]
    PackageNotFound {
        /// The catalog searched.
        catalog: CatalogKey,
        /// The package asked for.
        package: String,
        /// Package names close to the one asked for, nearest first.
        suggestions: Vec<String>,
        /// Every package name of the catalog, sorted.
        packages: Vec<String>,
    },
    /// The package has no channel at all.
    #[error(
        "package {package} in CatalogSource {catalog} has no channels, so nothing of it can be \
         installed; fix the catalog (every package needs a channel with at least one bundle)"
    )]
    NoChannels {
        /// The catalog.
        catalog: CatalogKey,
        /// The package.
        package: String,
    },
    /// The package has no channel of that name.
    #[error("{}", channel_not_found(.package, .channel, .channels, .default_channel, .suggestion))]
    ChannelNotFound {
        /// The catalog.
        catalog: CatalogKey,
        /// The package.
        package: String,
        /// The channel asked for.
        channel: String,
        /// The package's channels, sorted.
        channels: Vec<String>,
        /// The package's default channel.
        default_channel: String,
        /// The closest channel name, if one is close.
        suggestion: Option<String>,
    },
    /// The channel has no installable entry.
    #[error(
        "channel '{channel}' of package {package} in CatalogSource {catalog} has no installable \
         bundle (it is empty, or every entry lacks its bundle or carries the legacy \
         olm.deprecated property); choose another channel ({}) or fix the catalog",
        .channels.join(", ")
    )]
    NoInstallableBundle {
        /// The catalog.
        catalog: CatalogKey,
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The package's channels, sorted, the default one marked.
        channels: Vec<String>,
    },
    /// `startingCSV` names no bundle of the channel(s) searched.
    #[error("{}", starting_csv_not_found(.package, .channel.as_deref(), .starting_csv, .bundles, .head.as_deref()))]
    StartingCsvNotFound {
        /// The catalog.
        catalog: CatalogKey,
        /// The package.
        package: String,
        /// The channel asked for; `None` when every channel was searched.
        channel: Option<String>,
        /// The startingCSV asked for.
        starting_csv: String,
        /// The bundles that could be asked for (name and version), sorted by version.
        bundles: Vec<(String, Version)>,
        /// The head that would be installed without a startingCSV.
        head: Option<String>,
    },
    /// The version ceiling leaves nothing to install first: `startingCSV` (or, without one,
    /// every installable entry of the channels searched) is above it.
    #[error(
        "{} of package {package} in CatalogSource {catalog} is above the version ceiling \
         {ceiling} set by the annotation olm-rs.io/version-ceiling, so nothing can be installed; \
         {}",
        .bundle.as_ref().map_or_else(|| "every installable bundle".to_owned(), |(b, v)| format!("spec.startingCSV {b} ({v})")),
        if .bundle.is_some() { "set spec.startingCSV to a bundle at or below the ceiling, or raise the ceiling" } else { "raise the ceiling or remove the annotation" }
    )]
    AboveVersionCeiling {
        /// The catalog.
        catalog: CatalogKey,
        /// The package.
        package: String,
        /// The startingCSV asked for and its version; `None` when no startingCSV was given.
        bundle: Option<(String, Version)>,
        /// The ceiling.
        ceiling: Version,
    },
    /// `startingCSV` names a bundle that can never be installed.
    #[error(
        "bundle {bundle} of package {package} in CatalogSource {catalog} carries the legacy \
         olm.deprecated property and can never be installed; set spec.startingCSV to another \
         bundle, or remove it to install the channel head"
    )]
    BundleProhibited {
        /// The catalog.
        catalog: CatalogKey,
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
    },
    /// A channel's upgrade graph cannot be ordered.
    #[error(
        "channel '{channel}' of package {package} in CatalogSource {catalog} has a broken upgrade \
         graph: {error}"
    )]
    BrokenChannel {
        /// The catalog.
        catalog: CatalogKey,
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// What is wrong with the graph (its text says how to fix it).
        error: GraphError,
    },
    /// Another Subscription of the namespace already installs this package.
    #[error(
        "package {package} is already subscribed in namespace {namespace} by Subscription \
         {subscription}{}; a namespace holds one version of a package, so delete one of the two \
         Subscriptions",
        .csv.as_ref().map(|c| format!(" (CSV {c})")).unwrap_or_default()
    )]
    PackageAlreadySubscribed {
        /// The namespace.
        namespace: String,
        /// The package.
        package: String,
        /// The other Subscription.
        subscription: String,
        /// The CSV it installed or is installing.
        csv: Option<String>,
    },
    /// A bundle would provide an API that another operator in the namespace already provides.
    #[error(
        "{bundle} provides API {}, which CSV {csv}{} already provides in namespace {namespace}; \
         an API can have only one provider per namespace, so uninstall {csv} first or install \
         package {} in another namespace",
        gvk_text(.gvk),
        .csv_package.as_ref().map(|p| format!(" (package {p})")).unwrap_or_default(),
        .bundle.package
    )]
    ApiConflict {
        /// The bundle that would be installed.
        bundle: BundleRef,
        /// The API.
        gvk: Gvk,
        /// The namespace.
        namespace: String,
        /// The CSV already providing it.
        csv: String,
        /// That CSV's package, when known.
        csv_package: Option<String>,
    },
    /// No catalog offers a bundle satisfying a dependency.
    #[error("{}", dependency_not_found(.required_by, .requirement, .offers, .skipped))]
    DependencyNotFound {
        /// The bundle declaring the dependency.
        required_by: BundleRef,
        /// The dependency.
        requirement: Requirement,
        /// What the catalogs offer that comes close (sorted).
        offers: Vec<String>,
        /// Candidates or catalogs left out, and why (sorted).
        skipped: Vec<String>,
    },
    /// A dependency's package is already subscribed at a version that does not satisfy it.
    #[error(
        "{required_by} requires {requirement}, but package {package} is already subscribed by \
         Subscription {subscription}{}, which does not satisfy it; change Subscription \
         {subscription} (channel or catalog) so it does, or choose a version of {} whose \
         requirement it meets",
        .csv.as_ref().map(|c| format!(" at CSV {c}")).unwrap_or_default(),
        .required_by.package
    )]
    DependencyConflict {
        /// The bundle declaring the dependency.
        required_by: BundleRef,
        /// The dependency.
        requirement: Requirement,
        /// The subscribed package.
        package: String,
        /// The Subscription that owns it.
        subscription: String,
        /// Its installed or current CSV.
        csv: Option<String>,
    },
}

impl ResolutionError {
    /// The upstream `ResolutionFailed` reason: `ErrorPreventedResolution` for a broken catalog
    /// (unreadable, or a channel graph that cannot be ordered), `ConstraintsNotSatisfiable` for
    /// everything else.
    pub fn reason(&self) -> &'static str {
        if self.is_catalog_error() {
            ERROR_PREVENTED_RESOLUTION
        } else {
            CONSTRAINTS_NOT_SATISFIABLE
        }
    }

    /// True when the catalog is broken (upstream retries these with backoff); false when the
    /// request cannot be met (upstream waits for a change).
    pub fn is_catalog_error(&self) -> bool {
        matches!(
            self,
            ResolutionError::CatalogUnavailable { .. } | ResolutionError::BrokenChannel { .. }
        )
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn catalog_not_found(
    catalog: &CatalogKey,
    visible: bool,
    available: &[String],
    subscription_namespace: &str,
    global_namespace: &str,
) -> String {
    if visible {
        format!(
            "CatalogSource {catalog} not found; catalogs in {}: {}; set spec.source to one of \
             them, or create the CatalogSource",
            catalog.namespace,
            list_or_none(available)
        )
    } else {
        format!(
            "CatalogSource {catalog} not found: a Subscription in namespace \
             {subscription_namespace} can only use catalogs in {subscription_namespace} and in \
             the global catalog namespace {global_namespace}; catalogs there: {}; set \
             spec.sourceNamespace and spec.source to one of them",
            list_or_none(available)
        )
    }
}

fn package_not_found(
    catalog: &CatalogKey,
    package: &str,
    suggestions: &[String],
    packages: &[String],
) -> String {
    let has = match packages.len() {
        0 => "the catalog has no packages".to_owned(),
        1..=5 => format!("packages in the catalog: {}", packages.join(", ")),
        n => format!("the catalog has {n} packages"),
    };
    if suggestions.is_empty() {
        format!(
            "package {package} not found in CatalogSource {catalog} ({has}); set spec.name to a \
             package of the catalog, or spec.source to a catalog that has {package}"
        )
    } else {
        format!(
            "package {package} not found in CatalogSource {catalog}; did you mean {}? ({has}); \
             set spec.name to a package of the catalog",
            suggestions.join(" or ")
        )
    }
}

fn channel_not_found(
    package: &str,
    channel: &str,
    channels: &[String],
    default_channel: &str,
    suggestion: &Option<String>,
) -> String {
    let listed: Vec<String> = channels
        .iter()
        .map(|c| {
            if c == default_channel {
                format!("{c} (default)")
            } else {
                c.clone()
            }
        })
        .collect();
    let hint = suggestion
        .as_ref()
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_default();
    format!(
        "package {package} has no channel '{channel}'; channels: {}; set spec.channel to one of \
         them{hint}, or remove it to follow the default channel",
        list_or_none(&listed)
    )
}

fn starting_csv_not_found(
    package: &str,
    channel: Option<&str>,
    starting_csv: &str,
    bundles: &[(String, Version)],
    head: Option<&str>,
) -> String {
    let listed: Vec<String> = bundles.iter().map(|(n, v)| format!("{n} ({v})")).collect();
    let head = head
        .map(|h| format!(" to install the channel head {h}"))
        .unwrap_or_default();
    match channel {
        Some(c) => format!(
            "channel '{c}' of package {package} has no bundle '{starting_csv}'; bundles in \
             '{c}': {}; set spec.startingCSV to one of them, or remove it{head}",
            list_or_none(&listed)
        ),
        None => format!(
            "package {package} has no bundle '{starting_csv}' in any channel; bundles: {}; set \
             spec.startingCSV to one of them, or remove it{head}",
            list_or_none(&listed)
        ),
    }
}

fn dependency_not_found(
    required_by: &BundleRef,
    requirement: &Requirement,
    offers: &[String],
    skipped: &[String],
) -> String {
    let mut text = format!("{required_by} requires {requirement}, and no catalog offers it");
    if !offers.is_empty() {
        text.push_str(&format!("; the catalogs have: {}", offers.join("; ")));
    }
    if !skipped.is_empty() {
        text.push_str(&format!("; left out: {}", skipped.join("; ")));
    }
    text.push_str(&match requirement {
        Requirement::Package { package, .. } => format!(
            "; add a CatalogSource that offers a matching version of {package}, or install one \
             yourself with a Subscription"
        ),
        Requirement::Gvk(_) => {
            "; add a CatalogSource with an operator that provides this API, or install one \
             yourself"
                .to_owned()
        }
    });
    text
}

/// Levenshtein distance between two strings (by characters).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Names close to `wanted` (edit distance at most a third of its length, at least 1, at most 3;
/// or containing it, or contained in it), nearest first, then by name; at most `max`.
pub(crate) fn close_matches<'a>(
    wanted: &str,
    names: impl IntoIterator<Item = &'a str>,
    max: usize,
) -> Vec<String> {
    let limit = (wanted.chars().count() / 3).clamp(1, 3);
    let mut scored: Vec<(usize, &str)> = names
        .into_iter()
        .filter(|n| *n != wanted)
        .filter_map(|n| {
            let d = edit_distance(wanted, n);
            let contains = wanted.len() >= 3 && n.len() >= 3 && (n.contains(wanted) || wanted.contains(n));
            (d <= limit || contains).then_some((d, n))
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(max).map(|(_, n)| n.to_owned()).collect()
}
