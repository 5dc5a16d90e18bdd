//! `kubectl-olm list [-n NS | -A]`: the operators installed through Subscriptions, one row each.
//!
//! A row joins a Subscription with its installed CSV (`status.installedCSV`: VERSION is the CSV's
//! `spec.version`, CSV PHASE its `status.phase`) and with the InstallPlan it points at. UPGRADE is
//! the CSV waiting for approval: the Subscription's `currentCSV` when it differs from
//! `installedCSV` and the InstallPlan that installs it (`status.installPlanRef`, else any plan of the
//! namespace listing that CSV) is in `RequiresApproval` and not approved yet — the answer to "is
//! something waiting for me?", which upstream's `kubectl get sub` does not give. Rows are sorted by
//! namespace, then package.

use kube::api::Api;
use serde::Serialize;

use crate::{
    api::v1alpha1::{ClusterServiceVersion, InstallPlan, InstallPlanPhase, Subscription},
    cli::{
        CliError, ListArgs, OutputFormat,
        cluster::Cluster,
        cmd::cluster::shared::list_or_olm_missing,
        output::{self, Row, Streams},
    },
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
    /// What is wrong, from the first abnormal condition (`ResolutionFailed`, ...): `Type: message`.
    pub problem: Option<String>,
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
            opt(&self.upgrade),
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

/// The name of the InstallPlan a Subscription points at: `status.installPlanRef`, else the
/// deprecated `status.installplan`.
pub fn install_plan_name(sub: &Subscription) -> Option<&str> {
    let status = sub.status.as_ref()?;
    status
        .install_plan_ref
        .as_ref()
        .and_then(|r| r.name.as_deref())
        .or_else(|| status.install_plan.as_ref().map(|r| r.name.as_str()))
        .filter(|n| !n.is_empty())
}

/// The CSV of `sub` waiting for approval: `currentCSV` ≠ `installedCSV`, installed by an
/// InstallPlan in `RequiresApproval` that is not approved yet.
pub fn waiting_upgrade(sub: &Subscription, plans: &[InstallPlan]) -> Option<String> {
    let status = sub.status.as_ref()?;
    let current = status.current_csv.as_deref().filter(|c| !c.is_empty())?;
    if status.installed_csv.as_deref() == Some(current) {
        return None;
    }
    let ns = ns_of(sub);
    let waiting = |p: &InstallPlan| {
        !p.spec.approved
            && p.status
                .as_ref()
                .is_some_and(|s| s.phase == InstallPlanPhase::RequiresApproval)
    };
    let referenced =
        install_plan_name(sub).and_then(|name| plans.iter().find(|p| ns_of(*p) == ns && name_of(*p) == name));
    let plan = match referenced {
        Some(p) => Some(p).filter(|p| waiting(p)),
        None => plans.iter().find(|p| {
            ns_of(*p) == ns && waiting(p) && p.spec.cluster_service_version_names.iter().any(|c| c == current)
        }),
    };
    plan.map(|_| current.to_string())
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
pub(crate) mod tests {
    use k8s_openapi::{api::core::v1::ObjectReference, apimachinery::pkg::apis::meta::v1::Time};
    use kube::api::ObjectMeta;

    use super::*;
    use crate::api::v1alpha1::{
        Approval, CsvPhase, InstallPlanSpec, InstallPlanStatus, SubscriptionSpec, SubscriptionState,
        SubscriptionStatus,
    };

    fn meta(ns: &str, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..ObjectMeta::default()
        }
    }

    pub(crate) fn sub(
        ns: &str,
        package: &str,
        installed: Option<&str>,
        current: Option<&str>,
        plan: Option<&str>,
    ) -> Subscription {
        let mut status = SubscriptionStatus::new(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        status.installed_csv = installed.map(Into::into);
        status.current_csv = current.map(Into::into);
        status.state = Some(if installed == current {
            SubscriptionState::AtLatestKnown
        } else {
            SubscriptionState::UpgradePending
        });
        status.install_plan_ref = plan.map(|p| ObjectReference {
            name: Some(p.into()),
            namespace: Some(ns.into()),
            kind: Some("InstallPlan".into()),
            ..ObjectReference::default()
        });
        Subscription {
            metadata: meta(ns, package),
            spec: SubscriptionSpec {
                source: "olm-rs-catalog".into(),
                source_namespace: "olm".into(),
                name: package.into(),
                channel: Some("stable".into()),
                starting_csv: None,
                install_plan_approval: Some(Approval::Manual),
                config: None,
            },
            status: Some(status),
        }
    }

    fn csv(ns: &str, name: &str, version: &str, phase: CsvPhase) -> ClusterServiceVersion {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"install": {"strategy": "deployment"}, "displayName": name, "version": version},
            "status": {"phase": phase.as_str()}
        }))
        .unwrap()
    }

    pub(crate) fn plan(
        ns: &str,
        name: &str,
        csvs: &[&str],
        phase: InstallPlanPhase,
        approved: bool,
    ) -> InstallPlan {
        InstallPlan {
            metadata: meta(ns, name),
            spec: InstallPlanSpec {
                source: None,
                source_namespace: None,
                cluster_service_version_names: csvs.iter().map(|c| c.to_string()).collect(),
                approval: Approval::Manual,
                approved,
                generation: Some(1),
            },
            status: Some(InstallPlanStatus {
                phase,
                ..InstallPlanStatus::default()
            }),
        }
    }

    #[test]
    fn a_row_joins_the_subscription_with_its_installed_csv() {
        let subs = [sub(
            "a",
            "redis-operator",
            Some("redis.v1"),
            Some("redis.v1"),
            None,
        )];
        let csvs = [csv("a", "redis.v1", "1.0.0", CsvPhase::Succeeded)];
        let rows = rows(&subs, &csvs, &[]);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(r.version.as_deref(), Some("1.0.0"));
        assert_eq!(r.csv_phase.as_deref(), Some("Succeeded"));
        assert_eq!(r.state.as_deref(), Some("AtLatestKnown"));
        assert_eq!(r.channel.as_deref(), Some("stable"));
        assert_eq!(r.approval, "Manual");
        assert_eq!(r.upgrade, None);
    }

    #[test]
    fn a_csv_of_another_namespace_is_not_joined() {
        let subs = [sub(
            "a",
            "redis-operator",
            Some("redis.v1"),
            Some("redis.v1"),
            None,
        )];
        let csvs = [csv("b", "redis.v1", "1.0.0", CsvPhase::Succeeded)];
        let rows = rows(&subs, &csvs, &[]);
        assert_eq!(rows[0].version, None);
        assert_eq!(rows[0].csv_phase, None);
    }

    #[test]
    fn the_upgrade_column_names_the_csv_whose_plan_waits_for_approval() {
        let subs = [sub(
            "a",
            "redis-operator",
            Some("redis.v1"),
            Some("redis.v2"),
            Some("ip-2"),
        )];
        let waiting = [plan(
            "a",
            "ip-2",
            &["redis.v2"],
            InstallPlanPhase::RequiresApproval,
            false,
        )];
        assert_eq!(rows(&subs, &[], &waiting)[0].upgrade.as_deref(), Some("redis.v2"));

        let approved = [plan(
            "a",
            "ip-2",
            &["redis.v2"],
            InstallPlanPhase::RequiresApproval,
            true,
        )];
        assert_eq!(rows(&subs, &[], &approved)[0].upgrade, None);

        let installing = [plan(
            "a",
            "ip-2",
            &["redis.v2"],
            InstallPlanPhase::Installing,
            true,
        )];
        assert_eq!(rows(&subs, &[], &installing)[0].upgrade, None);
    }

    #[test]
    fn without_a_plan_reference_a_waiting_plan_listing_the_current_csv_is_used() {
        let subs = [sub("a", "redis-operator", None, Some("redis.v1"), None)];
        let plans = [
            plan(
                "b",
                "ip-other-ns",
                &["redis.v1"],
                InstallPlanPhase::RequiresApproval,
                false,
            ),
            plan(
                "a",
                "ip-1",
                &["redis.v1"],
                InstallPlanPhase::RequiresApproval,
                false,
            ),
        ];
        assert_eq!(rows(&subs, &[], &plans)[0].upgrade.as_deref(), Some("redis.v1"));
        assert_eq!(rows(&subs, &[], &plans[..1])[0].upgrade, None);
    }

    #[test]
    fn the_current_csv_phase_shows_while_nothing_is_installed() {
        let subs = [sub("a", "redis-operator", None, Some("redis.v1"), None)];
        let csvs = [csv("a", "redis.v1", "1.0.0", CsvPhase::Installing)];
        let r = &rows(&subs, &csvs, &[])[0];
        assert_eq!(r.csv_phase.as_deref(), Some("Installing"));
        assert_eq!(r.version, None, "VERSION is the installed CSV's only");
    }

    #[test]
    fn rows_are_sorted_by_namespace_then_package_and_an_absent_channel_reads_default() {
        let mut s = sub("b", "zeta", None, None, None);
        s.spec.channel = None;
        let subs = [
            s,
            sub("b", "alpha", None, None, None),
            sub("a", "zeta", None, None, None),
        ];
        let rows = rows(&subs, &[], &[]);
        let order: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.namespace.as_str(), r.package.as_str()))
            .collect();
        assert_eq!(order, [("a", "zeta"), ("b", "alpha"), ("b", "zeta")]);
        assert_eq!(rows[2].cells(false)[2], DEFAULT_CHANNEL_CELL);
    }

    #[test]
    fn an_unresolved_subscription_shows_its_failing_condition() {
        use crate::api::{
            ConditionStatus,
            v1alpha1::{SubscriptionCondition, SubscriptionConditionType},
        };
        let mut s = sub("a", "redis-operator", None, None, None);
        if let Some(st) = s.status.as_mut() {
            st.state = None;
            for (t, m) in [
                (
                    SubscriptionConditionType::CatalogSourcesUnhealthy,
                    "catalog unhealthy",
                ),
                (SubscriptionConditionType::ResolutionFailed, "no channel 'stabel'"),
            ] {
                st.conditions.push(SubscriptionCondition {
                    type_: t,
                    status: ConditionStatus::True,
                    reason: None,
                    message: Some(m.into()),
                    last_heartbeat_time: None,
                    last_transition_time: None,
                });
            }
        }
        let r = &rows(&[s], &[], &[])[0];
        assert_eq!(
            r.problem.as_deref(),
            Some("ResolutionFailed: no channel 'stabel'")
        );
        assert_eq!(r.cells(false)[3], "ResolutionFailed");
    }

    #[test]
    fn every_row_has_one_cell_per_header() {
        let r = &rows(&[sub("a", "p", Some("p.v1"), Some("p.v2"), Some("ip"))], &[], &[])[0];
        for wide in [false, true] {
            assert_eq!(
                r.cells(wide).len(),
                InstalledRow::headers(wide).len(),
                "wide={wide}"
            );
        }
    }

    #[test]
    fn all_namespaces_tables_start_with_a_namespace_column() {
        let subs = [sub("a", "redis-operator", None, None, None)];
        let rows = rows(&subs, &[], &[]);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut streams = Streams {
            out: &mut out,
            err: &mut err,
        };
        print(&rows, true, OutputFormat::Table, &mut streams).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("NAMESPACE   PACKAGE"), "{text}");
    }
}
