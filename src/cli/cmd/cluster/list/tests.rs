use k8s_openapi::{api::core::v1::ObjectReference, apimachinery::pkg::apis::meta::v1::Time};
use kube::api::ObjectMeta;

use super::*;
use crate::api::v1alpha1::{
    Approval, CsvPhase, InstallPlanPhase, InstallPlanSpec, InstallPlanStatus, SubscriptionSpec,
    SubscriptionState, SubscriptionStatus,
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

/// A Subscription kept at its installed CSV by `olm-rs.io/version-ceiling`, as the controller
/// reports it: `UpgradeAvailable`, `UpgradeHeld=True` reason `VersionPinned`.
fn pinned(ns: &str, package: &str, installed: &str, available: &str, ceiling: &str) -> Subscription {
    use crate::{
        api::{
            ConditionStatus,
            v1alpha1::{SubscriptionCondition, SubscriptionConditionType},
        },
        plan::subscription::pin::PinnedUpgrade,
    };
    let mut s = sub(ns, package, Some(installed), Some(installed), Some("ip-1"));
    let version = |v: &str| semver::Version::parse(v).unwrap();
    let message = PinnedUpgrade {
        installed: installed.into(),
        available: available.into(),
        version: version("1.1.0"),
        ceiling: version(ceiling),
    }
    .message();
    if let Some(st) = s.status.as_mut() {
        st.state = Some(SubscriptionState::UpgradeAvailable);
        st.conditions.push(SubscriptionCondition {
            type_: SubscriptionConditionType::UpgradeHeld,
            status: ConditionStatus::True,
            reason: Some("VersionPinned".into()),
            message: Some(message),
            last_heartbeat_time: None,
            last_transition_time: None,
        });
    }
    s
}

#[test]
fn a_pinned_subscription_names_the_upgrade_its_ceiling_holds_back() {
    let subs = [
        pinned(
            "redis",
            "redis-operator",
            "redis-operator.v1.0.0",
            "redis-operator.v1.1.0",
            "1.0.0",
        ),
        sub(
            "team-a",
            "redis-operator",
            Some("redis-operator.v0.3.0"),
            Some("redis-operator.v1.0.0"),
            Some("ip-2"),
        ),
    ];
    let csvs = [
        csv("redis", "redis-operator.v1.0.0", "1.0.0", CsvPhase::Succeeded),
        csv("team-a", "redis-operator.v0.3.0", "0.3.0", CsvPhase::Succeeded),
    ];
    let plans = [plan(
        "team-a",
        "ip-2",
        &["redis-operator.v1.0.0"],
        InstallPlanPhase::RequiresApproval,
        false,
    )];
    let rows = rows(&subs, &csvs, &plans);
    assert_eq!(rows[0].upgrade, None, "nothing waits for approval");
    assert_eq!(
        rows[0].held_upgrade,
        Some(HeldUpgrade {
            csv: "redis-operator.v1.1.0".into(),
            ceiling: "1.0.0".into()
        })
    );
    assert_eq!(rows[1].held_upgrade, None);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut streams = Streams {
        out: &mut out,
        err: &mut err,
    };
    print(&rows, true, OutputFormat::Table, &mut streams).unwrap();
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
    let json = serde_json::to_value(&rows[0]).unwrap();
    assert_eq!(
        json["heldUpgrade"],
        serde_json::json!({"csv": "redis-operator.v1.1.0", "ceiling": "1.0.0"})
    );
    assert!(
        serde_json::to_value(&rows[1])
            .unwrap()
            .get("heldUpgrade")
            .is_none(),
        "left out when nothing is held"
    );
}

#[test]
fn an_upgrade_held_for_another_reason_or_an_unreadable_message_shows_nothing_held() {
    let mut s = pinned("a", "p", "p.v1", "p.v2", "1.0.0");
    let held = |s: &Subscription| rows(std::slice::from_ref(s), &[], &[])[0].held_upgrade.clone();
    assert!(held(&s).is_some());
    if let Some(c) = s.status.as_mut().and_then(|st| st.conditions.first_mut()) {
        c.reason = Some("InstalledCSVNotSucceeded".into());
    }
    assert_eq!(held(&s), None, "not the ceiling: the upgrade waits on the CSV");
    let mut s = pinned("a", "p", "p.v1", "p.v2", "1.0.0");
    if let Some(c) = s.status.as_mut().and_then(|st| st.conditions.first_mut()) {
        c.message = Some("held".into());
    }
    assert_eq!(held(&s), None);
}
