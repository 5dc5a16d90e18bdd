//! `kubectl-olm list [-n NS | -A]`: the operators installed through Subscriptions, one row each.
//!
//! A row joins a Subscription with its installed CSV (`status.installedCSV`: VERSION is the CSV's
//! `spec.version`, CSV PHASE its `status.phase`) and with the InstallPlan it points at. UPGRADE is
//! the CSV waiting for approval: the Subscription's `currentCSV` when it differs from
//! `installedCSV` and the InstallPlan that installs it (`status.installPlanRef`, else any plan of the
//! namespace listing that CSV) is in `RequiresApproval` and not approved yet — the answer to "is
//! something waiting for me?", which upstream's `kubectl get sub` does not give. For a Subscription
//! pinned by `olm-rs.io/version-ceiling` (`state: UpgradeAvailable`, `UpgradeHeld=True` reason
//! `VersionPinned`), UPGRADE names the bundle the ceiling holds back and the ceiling instead
//! (`redis-operator.v1.1.0 (held by ceiling 1.0.0)`): an upgrade exists, but no approval takes it.
//! Rows are sorted by namespace, then package.

use kube::api::Api;
use serde::Serialize;

use crate::{
    api::v1alpha1::{ClusterServiceVersion, InstallPlan, Subscription},
    cli::{
        CliError, ListArgs, OutputFormat,
        cluster::Cluster,
        cmd::cluster::shared::list_or_olm_missing,
        output::{self, Row, Streams},
    },
    plan::subscription::pin::PinnedUpgrade,
};

/// What the CHANNEL column shows when the Subscription follows the package's default channel.
pub const DEFAULT_CHANNEL_CELL: &str = "<default>";

/// One installed operator.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstalledRow {
    /// Namespace of the Subscription.
    pub namespace: String,
    /// The Subscription's name.
    pub subscription: String,
    /// The package (`spec.name`).
    pub package: String,
    /// The channel; `None` follows the package's default channel.
    pub channel: Option<String>,
    /// The CatalogSource.
    pub catalog_source: String,
    /// The CatalogSource's namespace.
    pub catalog_source_namespace: String,
    /// `Automatic` or `Manual`.
    pub approval: String,
    /// `status.installedCSV`.
    #[serde(rename = "installedCSV")]
    pub installed_csv: Option<String>,
    /// The installed CSV's `spec.version`.
    pub version: Option<String>,
    /// `status.state`.
    pub state: Option<String>,
    /// The installed CSV's phase (the current CSV's while nothing is installed yet).
    pub csv_phase: Option<String>,
    /// `status.currentCSV`.
    #[serde(rename = "currentCSV")]
    pub current_csv: Option<String>,
    /// The InstallPlan the Subscription points at.
    pub install_plan: Option<String>,
    /// The CSV waiting for approval, if any.
    pub upgrade: Option<String>,
    /// A newer bundle the version ceiling holds back, if any (not planned, nothing to approve).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_upgrade: Option<HeldUpgrade>,
    /// What is wrong, from the first abnormal condition (`ResolutionFailed`, ...): `Type: message`.
    pub problem: Option<String>,
}

/// A newer bundle a pinned Subscription's version ceiling holds back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldUpgrade {
    /// The bundle (CSV) available above the ceiling.
    pub csv: String,
    /// The ceiling (annotation `olm-rs.io/version-ceiling`).
    pub ceiling: String,
}

impl HeldUpgrade {
    /// The UPGRADE cell: `CSV (held by ceiling V)`.
    pub fn cell(&self) -> String {
        format!("{} (held by ceiling {})", self.csv, self.ceiling)
    }
}

impl Row for InstalledRow {
    const KIND: &'static str = "subscription.operators.coreos.com";

    fn name(&self) -> &str {
        &self.subscription
    }

    fn headers(wide: bool) -> Vec<&'static str> {
        let mut h = vec!["PACKAGE", "VERSION", "CHANNEL", "STATE", "CSV PHASE", "UPGRADE"];
        if wide {
            h.extend([
                "SUBSCRIPTION",
                "INSTALLED CSV",
                "APPROVAL",
                "CATALOG",
                "INSTALLPLAN",
                "PROBLEM",
            ]);
        }
        h
    }

    fn cells(&self, wide: bool) -> Vec<String> {
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        let mut c = vec![
            self.package.clone(),
            opt(&self.version),
            self.channel
                .clone()
                .unwrap_or_else(|| DEFAULT_CHANNEL_CELL.to_string()),
            self.state.clone().unwrap_or_else(|| {
                // Not resolved: name the failing condition instead of an empty cell.
                self.problem
                    .as_deref()
                    .and_then(|p| p.split(':').next())
                    .unwrap_or_default()
                    .to_string()
            }),
            opt(&self.csv_phase),
            self.upgrade
                .clone()
                .or_else(|| self.held_upgrade.as_ref().map(HeldUpgrade::cell))
                .unwrap_or_default(),
        ];
        if wide {
            c.extend([
                self.subscription.clone(),
                opt(&self.installed_csv),
                self.approval.clone(),
                format!("{}/{}", self.catalog_source_namespace, self.catalog_source),
                opt(&self.install_plan),
                opt(&self.problem),
            ]);
        }
        c
    }
}

fn ns_of<K: kube::Resource>(k: &K) -> &str {
    k.meta().namespace.as_deref().unwrap_or("")
}

fn name_of<K: kube::Resource>(k: &K) -> &str {
    k.meta().name.as_deref().unwrap_or("")
}

pub use crate::plan::subscription::waiting::{install_plan_name, waiting_upgrade};

/// The newer bundle a pinned Subscription's ceiling holds back: its status is `UpgradeAvailable`
/// with `UpgradeHeld=True` reason `VersionPinned`, whose message names the bundle and the ceiling
/// ([`PinnedUpgrade::message`]).
pub fn held_upgrade(sub: &Subscription) -> Option<HeldUpgrade> {
    use crate::api::{
        ConditionStatus, reasons,
        v1alpha1::{SubscriptionConditionType as T, SubscriptionState},
    };
    let status = sub.status.as_ref()?;
    if status.state != Some(SubscriptionState::UpgradeAvailable) {
        return None;
    }
    let held = status.conditions.iter().find(|c| {
        c.type_ == T::UpgradeHeld
            && c.status == ConditionStatus::True
            && c.reason.as_deref() == Some(reasons::subscription::VERSION_PINNED)
    })?;
    let (csv, ceiling) = PinnedUpgrade::read_message(held.message.as_deref().unwrap_or_default())?;
    Some(HeldUpgrade { csv, ceiling })
}

/// The first abnormal condition of a Subscription (status `True`; ResolutionFailed first), as
/// `Type: message`.
pub fn problem(sub: &Subscription) -> Option<String> {
    use crate::api::{ConditionStatus, v1alpha1::SubscriptionConditionType as T};
    let status = sub.status.as_ref()?;
    let abnormal: Vec<_> = status
        .conditions
        .iter()
        .filter(|c| c.status == ConditionStatus::True && !matches!(c.type_, T::BundleUnpacking))
        .collect();
    let first = abnormal
        .iter()
        .find(|c| c.type_ == T::ResolutionFailed)
        .or_else(|| abnormal.first())?;
    Some(match first.message.as_deref().filter(|m| !m.is_empty()) {
        Some(m) => format!("{}: {m}", first.type_),
        None => first.type_.to_string(),
    })
}

/// The rows of `list` from the objects of the namespaces listed, sorted by namespace and package.
pub fn rows(
    subs: &[Subscription],
    csvs: &[ClusterServiceVersion],
    plans: &[InstallPlan],
) -> Vec<InstalledRow> {
    let csv = |ns: &str, name: Option<&str>| {
        name.and_then(|n| csvs.iter().find(|c| ns_of(*c) == ns && name_of(*c) == n))
    };
    let mut rows: Vec<InstalledRow> = subs
        .iter()
        .map(|sub| {
            let ns = ns_of(sub);
            let status = sub.status.as_ref();
            let installed_name = status
                .and_then(|s| s.installed_csv.clone())
                .filter(|c| !c.is_empty());
            let current_name = status
                .and_then(|s| s.current_csv.clone())
                .filter(|c| !c.is_empty());
            let installed = csv(ns, installed_name.as_deref());
            let shown = installed.or_else(|| csv(ns, current_name.as_deref()));
            InstalledRow {
                namespace: ns.to_string(),
                subscription: name_of(sub).to_string(),
                package: sub.spec.name.clone(),
                channel: sub.spec.channel().map(str::to_string),
                catalog_source: sub.spec.source.clone(),
                catalog_source_namespace: sub.spec.source_namespace.clone(),
                approval: sub.spec.approval().to_string(),
                installed_csv: installed_name,
                version: installed.and_then(|c| c.spec.version.clone()),
                state: status
                    .and_then(|s| s.state.as_ref())
                    .map(|s| s.as_str().to_string())
                    .filter(|s| !s.is_empty()),
                csv_phase: shown
                    .and_then(|c| c.status.as_ref())
                    .and_then(|s| s.phase.as_ref())
                    .map(|p| p.as_str().to_string())
                    .filter(|s| !s.is_empty()),
                current_csv: current_name,
                install_plan: install_plan_name(sub).map(str::to_string),
                upgrade: waiting_upgrade(sub, plans),
                held_upgrade: held_upgrade(sub),
                problem: problem(sub),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        (&a.namespace, &a.package, &a.subscription).cmp(&(&b.namespace, &b.package, &b.subscription))
    });
    rows
}

/// Prints rows; with `all_namespaces` the tables get a NAMESPACE column first, like kubectl.
///
/// # Errors
/// The write error.
pub fn print(
    rows: &[InstalledRow],
    all_namespaces: bool,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> std::io::Result<()> {
    match format {
        OutputFormat::Table | OutputFormat::Wide if all_namespaces && !rows.is_empty() => {
            let wide = format == OutputFormat::Wide;
            let mut headers = vec!["NAMESPACE"];
            headers.extend(InstalledRow::headers(wide));
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    let mut c = vec![r.namespace.clone()];
                    c.extend(r.cells(wide));
                    c
                })
                .collect();
            streams.out.write_all(output::table(&headers, &cells).as_bytes())
        }
        _ => output::print_list(streams, format, rows),
    }
}

/// Runs `list`.
///
/// # Errors
/// API errors, [`CliError::OlmNotInstalled`].
pub async fn run(
    cluster: &Cluster,
    args: &ListArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let client = cluster.client.clone();
    let ns = if args.all_namespaces {
        String::new()
    } else {
        cluster.namespace(args.namespace.as_deref())
    };
    fn api<K>(client: kube::Client, ns: &str) -> Api<K>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
    {
        if ns.is_empty() {
            Api::all(client)
        } else {
            Api::namespaced(client, ns)
        }
    }
    let subs = list_or_olm_missing(
        cluster,
        &api::<Subscription>(client.clone(), &ns),
        "subscriptions",
        &ns,
    )
    .await?;
    let csvs = if subs.is_empty() {
        Vec::new()
    } else {
        list_or_olm_missing(
            cluster,
            &api::<ClusterServiceVersion>(client.clone(), &ns),
            "clusterserviceversions",
            &ns,
        )
        .await?
    };
    let plans = if subs.is_empty() {
        Vec::new()
    } else {
        list_or_olm_missing(cluster, &api::<InstallPlan>(client, &ns), "installplans", &ns).await?
    };
    let rows = rows(&subs, &csvs, &plans);
    if rows.is_empty()
        && matches!(
            format,
            OutputFormat::Table | OutputFormat::Wide | OutputFormat::Name
        )
    {
        if args.all_namespaces {
            writeln!(streams.err, "{}", output::NO_RESOURCES)?;
        } else {
            writeln!(streams.err, "{} in {ns} namespace.", output::NO_RESOURCES)?;
        }
        return Ok(());
    }
    print(&rows, args.all_namespaces, format, streams)?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
