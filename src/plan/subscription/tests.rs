use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::*;

fn time(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).expect("valid test time"))
}

fn subscription(approval: &str, status: Option<Value>) -> Subscription {
    let mut sub = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "redis", "namespace": "operators"},
        "spec": {"source": "ops", "sourceNamespace": "olm", "name": "redis-operator",
                 "channel": "stable", "installPlanApproval": approval},
    });
    if let (Some(obj), Some(status)) = (sub.as_object_mut(), status) {
        obj.insert("status".to_owned(), status);
    }
    serde_json::from_value(sub).expect("test subscription")
}

fn plan(name: &str, approval: &str, approved: bool, mut status: Value) -> InstallPlan {
    if let Some(obj) = status.as_object_mut() {
        obj.entry("phase").or_insert_with(|| json!(""));
        obj.entry("catalogSources").or_insert_with(|| json!([]));
    }
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "InstallPlan",
        "metadata": {"name": name, "namespace": "operators", "uid": format!("uid-{name}")},
        "spec": {"clusterServiceVersionNames": ["redis-operator.v0.2.0"],
                 "approval": approval, "approved": approved, "generation": 2},
        "status": status,
    }))
    .expect("test install plan")
}

fn healthy_catalogs() -> Vec<CatalogHealthObservation> {
    vec![CatalogHealthObservation {
        catalog: ObjectReference {
            name: Some("ops".to_owned()),
            namespace: Some("olm".to_owned()),
            uid: Some("uid-ops".to_owned()),
            ..ObjectReference::default()
        },
        healthy: true,
    }]
}

/// The status of `sub` alone (healthy catalogs, no CSV, no plan, no resolution): what its spec
/// makes the status say.
fn spec_status(sub: &Subscription) -> SubscriptionStatus {
    next_status(&StatusInput {
        subscription: sub,
        catalog_health: &healthy_catalogs(),
        csvs: &[],
        install_plans: &[],
        resolution: &Outcome::NotRun,
        now: &time(100),
    })
}

fn cond(st: &SubscriptionStatus, t: Cond) -> Option<&SubscriptionCondition> {
    st.condition(&t)
}

fn summary(st: &SubscriptionStatus) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>) {
    (
        st.state.as_ref().map(|s| s.as_str()),
        st.current_csv.as_deref(),
        st.installed_csv.as_deref(),
        st.install_plan_ref.as_ref().and_then(|r| r.name.as_deref()),
    )
}

#[test]
fn a_new_plan_makes_the_subscription_upgrade_pending_with_a_pending_condition() {
    let sub = subscription("Automatic", None);
    let ip = plan("install-1", "Automatic", true, json!({"phase": "Installing"}));
    let health = healthy_catalogs();
    let now = time(100);
    let st = next_status(&StatusInput {
        subscription: &sub,
        catalog_health: &health,
        csvs: &[],
        install_plans: &[],
        resolution: &Outcome::NewPlan {
            csv: "redis-operator.v0.2.0".into(),
            plan: Box::new(ip.clone()),
        },
        now: &now,
    });
    assert_eq!(
        summary(&st),
        (
            Some("UpgradePending"),
            Some("redis-operator.v0.2.0"),
            None,
            Some("install-1")
        )
    );
    assert_eq!(st.install_plan_generation, Some(2));
    assert_eq!(
        st.install_plan.as_ref().map(|r| r.uuid.as_str()),
        Some("uid-install-1")
    );
    let pending = cond(&st, Cond::InstallPlanPending).expect("pending condition");
    assert_eq!(pending.status, ConditionStatus::True);
    assert_eq!(pending.reason.as_deref(), Some("Installing"));
    let health = cond(&st, Cond::CatalogSourcesUnhealthy).expect("health condition");
    assert_eq!(health.status, ConditionStatus::False);
    assert_eq!(health.reason.as_deref(), Some("AllCatalogSourcesHealthy"));
    assert_eq!(st.catalog_health.len(), 1);
    assert_eq!(st.last_updated, now);
}

#[test]
fn the_state_machine_follows_the_plan_and_the_csv() {
    struct Case {
        name: &'static str,
        approval: &'static str,
        status: Value,
        plan: Option<(bool, Value)>,
        csvs: &'static [&'static str],
        expected: (Option<&'static str>, Option<&'static str>, Option<&'static str>),
        condition: Option<(Cond, &'static str)>,
    }
    let pending_upgrade = json!({
        "state": "UpgradePending", "currentCSV": "redis-operator.v0.2.0",
        "installedCSV": "redis-operator.v0.1.0", "lastUpdated": "2026-01-01T00:00:00Z",
        "installPlanRef": {"name": "install-1", "namespace": "operators"}
    });
    let pending_first = json!({
        "state": "UpgradePending", "currentCSV": "redis-operator.v0.2.0",
        "lastUpdated": "2026-01-01T00:00:00Z",
        "installPlanRef": {"name": "install-1", "namespace": "operators"}
    });
    let cases = [
        Case {
            name: "a Manual upgrade waiting for approval is UpgradePending, as upstream",
            approval: "Manual",
            status: pending_upgrade.clone(),
            plan: Some((false, json!({"phase": "RequiresApproval"}))),
            csvs: &["redis-operator.v0.1.0"],
            expected: (
                Some("UpgradePending"),
                Some("redis-operator.v0.2.0"),
                Some("redis-operator.v0.1.0"),
            ),
            condition: Some((Cond::InstallPlanPending, "RequiresApproval")),
        },
        Case {
            name: "an approved upgrade is UpgradePending again",
            approval: "Manual",
            status: pending_upgrade.clone(),
            plan: Some((true, json!({"phase": "Installing"}))),
            csvs: &["redis-operator.v0.1.0"],
            expected: (
                Some("UpgradePending"),
                Some("redis-operator.v0.2.0"),
                Some("redis-operator.v0.1.0"),
            ),
            condition: Some((Cond::InstallPlanPending, "Installing")),
        },
        Case {
            name: "a first install waiting for approval stays UpgradePending",
            approval: "Manual",
            status: pending_first.clone(),
            plan: Some((false, json!({"phase": "RequiresApproval"}))),
            csvs: &[],
            expected: (Some("UpgradePending"), Some("redis-operator.v0.2.0"), None),
            condition: Some((Cond::InstallPlanPending, "RequiresApproval")),
        },
        Case {
            name: "once the CSV exists the Subscription is AtLatestKnown",
            approval: "Automatic",
            status: pending_first.clone(),
            plan: Some((true, json!({"phase": "Complete"}))),
            csvs: &["redis-operator.v0.2.0"],
            expected: (
                Some("AtLatestKnown"),
                Some("redis-operator.v0.2.0"),
                Some("redis-operator.v0.2.0"),
            ),
            condition: None,
        },
        Case {
            name: "a plan with no phase yet is not yet reconciled",
            approval: "Automatic",
            status: pending_first.clone(),
            plan: Some((true, json!({}))),
            csvs: &[],
            expected: (Some("UpgradePending"), Some("redis-operator.v0.2.0"), None),
            condition: Some((Cond::InstallPlanPending, "InstallPlanNotYetReconciled")),
        },
        Case {
            name: "a failed plan reports the Installed condition's reason",
            approval: "Automatic",
            status: pending_first.clone(),
            plan: Some((
                true,
                json!({"phase": "Failed", "conditions": [{
                "type": "Installed", "status": "False", "reason": "InstallComponentFailed",
                "message": "error creating clusterrole redis: forbidden"}]}),
            )),
            csvs: &[],
            expected: (Some("UpgradePending"), Some("redis-operator.v0.2.0"), None),
            condition: Some((Cond::InstallPlanFailed, "InstallComponentFailed")),
        },
        Case {
            name: "a failed plan without an Installed condition reports InstallPlanFailed",
            approval: "Automatic",
            status: pending_first.clone(),
            plan: Some((true, json!({"phase": "Failed"}))),
            csvs: &[],
            expected: (Some("UpgradePending"), Some("redis-operator.v0.2.0"), None),
            condition: Some((Cond::InstallPlanFailed, "InstallPlanFailed")),
        },
        Case {
            name: "a pending plan deleted while UpgradePending clears the reference to resolve again",
            approval: "Automatic",
            status: pending_first.clone(),
            plan: None,
            csvs: &[],
            expected: (Some(""), None, None),
            condition: None,
        },
        Case {
            name: "a plan deleted after the install is reported missing",
            approval: "Automatic",
            status: json!({
                "state": "AtLatestKnown", "currentCSV": "redis-operator.v0.2.0",
                "installedCSV": "redis-operator.v0.2.0", "lastUpdated": "2026-01-01T00:00:00Z",
                "installPlanRef": {"name": "install-1", "namespace": "operators"}
            }),
            plan: None,
            csvs: &["redis-operator.v0.2.0"],
            expected: (
                Some("AtLatestKnown"),
                Some("redis-operator.v0.2.0"),
                Some("redis-operator.v0.2.0"),
            ),
            condition: Some((Cond::InstallPlanMissing, "ReferencedInstallPlanNotFound")),
        },
    ];
    for case in cases {
        let sub = subscription(case.approval, Some(case.status.clone()));
        let ip = case
            .plan
            .as_ref()
            .map(|(approved, status)| plan("install-1", case.approval, *approved, status.clone()));
        let plans: Vec<&InstallPlan> = ip.iter().collect();
        let health = healthy_catalogs();
        let now = time(200);
        let st = next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &health,
            csvs: case.csvs,
            install_plans: &plans,
            resolution: &Outcome::NotRun,
            now: &now,
        });
        let (state, current, installed, _) = summary(&st);
        assert_eq!((state, current, installed), case.expected, "{}", case.name);
        let ip_conditions: Vec<(&Cond, Option<&str>)> = st
            .conditions
            .iter()
            .filter(|c| c.type_ != Cond::CatalogSourcesUnhealthy)
            .map(|c| (&c.type_, c.reason.as_deref()))
            .collect();
        let expected: Vec<(&Cond, Option<&str>)> =
            case.condition.iter().map(|(t, r)| (t, Some(*r))).collect();
        assert_eq!(ip_conditions, expected, "{}", case.name);
    }
}

#[test]
fn plan_messages_come_from_the_plan_or_say_how_to_approve() {
    let sub = subscription(
        "Manual",
        Some(
            json!({"state": "UpgradePending", "currentCSV": "redis-operator.v0.2.0",
            "lastUpdated": "2026-01-01T00:00:00Z",
            "installPlanRef": {"name": "install-1", "namespace": "operators"}}),
        ),
    );
    let health = healthy_catalogs();
    let now = time(300);
    let run = |ip: &InstallPlan| {
        let plans = [ip];
        next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &health,
            csvs: &[],
            install_plans: &plans,
            resolution: &Outcome::NotRun,
            now: &now,
        })
    };
    let waiting = run(&plan(
        "install-1",
        "Manual",
        false,
        json!({"phase": "RequiresApproval"}),
    ));
    // No message, as upstream (its e2e suite compares the condition exactly).
    let pending = cond(&waiting, Cond::InstallPlanPending).expect("InstallPlanPending");
    assert_eq!(pending.reason.as_deref(), Some("RequiresApproval"));
    assert!(
        pending.message.as_deref().unwrap_or_default().is_empty(),
        "{pending:?}"
    );
    let failed = run(&plan(
        "install-1",
        "Manual",
        true,
        json!({"phase": "Failed", "conditions": [{"type": "Installed", "status": "False",
            "reason": "InstallComponentFailed", "message": "error creating clusterrole redis"}]}),
    ));
    assert_eq!(
        cond(&failed, Cond::InstallPlanFailed).and_then(|c| c.message.as_deref()),
        Some("error creating clusterrole redis")
    );
    let unpacking = run(&plan(
        "install-1",
        "Manual",
        true,
        json!({"phase": "Installing", "bundleLookups": [{
            "path": "example.com/redis:v0.2.0", "identifier": "redis-operator.v0.2.0",
            "replaces": "", "catalogSourceRef": {"name": "ops", "namespace": "olm"},
            "conditions": [{"type": "BundleLookupPending", "status": "True",
                "reason": "JobIncomplete", "message": "unpack job not completed"}]}]}),
    ));
    assert_eq!(
        cond(&unpacking, Cond::InstallPlanPending).and_then(|c| c.message.as_deref()),
        Some("unpack job not completed.")
    );
}

#[test]
fn unpacking_and_unpack_failures_are_subscription_conditions_cleared_by_the_plan() {
    let health = healthy_catalogs();
    let now = time(500);
    let run = |sub: &Subscription, resolution: &Outcome| {
        next_status(&StatusInput {
            subscription: sub,
            catalog_health: &health,
            csvs: &[],
            install_plans: &[],
            resolution,
            now: &now,
        })
    };
    let sub = subscription("Automatic", None);
    let unpacking = run(
        &sub,
        &Outcome::Unpacking {
            message: "pulling bundle image r/b:1".into(),
        },
    );
    let c = cond(&unpacking, Cond::BundleUnpacking).expect("BundleUnpacking");
    assert_eq!(
        (c.status.clone(), c.reason.as_deref(), c.message.as_deref()),
        (
            ConditionStatus::True,
            Some(reason::UNPACKING_IN_PROGRESS),
            Some("pulling bundle image r/b:1")
        )
    );
    assert_eq!(summary(&unpacking), (None, None, None, None));

    let mut sub = subscription("Automatic", None);
    sub.status = Some(unpacking);
    let failed = run(
        &sub,
        &Outcome::UnpackFailed {
            reason: reason::BUNDLE_UNPACK_FAILED,
            message: "bundle unpacking failed for b.v1 - DeadlineExceeded: slow".into(),
            retry_in: Duration::ZERO,
        },
    );
    assert!(cond(&failed, Cond::BundleUnpacking).is_none());
    let c = cond(&failed, Cond::BundleUnpackFailed).expect("BundleUnpackFailed");
    assert_eq!(c.reason.as_deref(), Some(reason::BUNDLE_UNPACK_FAILED));
    assert_eq!(
        c.message.as_deref(),
        Some("bundle unpacking failed for b.v1 - DeadlineExceeded: slow")
    );

    // A retry is unpacking again, without the old failure; the plan clears both.
    sub.status = Some(failed);
    let retry = run(
        &sub,
        &Outcome::Unpacking {
            message: "pulling".into(),
        },
    );
    assert!(cond(&retry, Cond::BundleUnpackFailed).is_none());
    sub.status = Some(retry);
    let ip = plan("install-1", "Automatic", true, json!({"phase": "Installing"}));
    let planned = run(
        &sub,
        &Outcome::NewPlan {
            csv: "redis-operator.v0.2.0".into(),
            plan: Box::new(ip.clone()),
        },
    );
    assert!(cond(&planned, Cond::BundleUnpacking).is_none());
    assert!(cond(&planned, Cond::BundleUnpackFailed).is_none());
}

#[test]
fn a_held_upgrade_says_why_until_resolution_finds_nothing_held() {
    let health = healthy_catalogs();
    let now = time(400);
    let sub = subscription("Automatic", None);
    let hold = UpgradeHold {
        installed: "redis-operator.v1.0.0".into(),
        phase: CsvPhase::Pending,
        next: "redis-operator.v1.1.0".into(),
    };
    let input = |sub: &Subscription, resolution: &Outcome| {
        next_status(&StatusInput {
            subscription: sub,
            catalog_health: &health,
            csvs: &["redis-operator.v1.0.0"],
            install_plans: &[],
            resolution,
            now: &now,
        })
    };
    let held = input(
        &sub,
        &Outcome::Held {
            adopted: None,
            hold: hold.clone(),
        },
    );
    let c = cond(&held, Cond::UpgradeHeld).expect("condition");
    assert_eq!(c.status, ConditionStatus::True);
    assert_eq!(c.reason.as_deref(), Some("InstalledCSVNotSucceeded"));
    assert_eq!(
        c.message.as_deref(),
        Some(
            "the upgrade to redis-operator.v1.1.0 is held: the installed ClusterServiceVersion \
             redis-operator.v1.0.0 is Pending, not Succeeded; it proceeds once \
             redis-operator.v1.0.0 succeeds (see its status for why it has not)"
        )
    );
    let mut sub = sub;
    sub.status = Some(held);
    let free = input(&sub, &Outcome::UpToDate { adopted: None });
    assert!(cond(&free, Cond::UpgradeHeld).is_none());
}

#[test]
fn a_held_upgrade_is_looked_at_less_and_less_often() {
    assert_eq!(held_requeue(Duration::ZERO), HELD_REQUEUE_MIN);
    assert_eq!(held_requeue(Duration::from_secs(20)), Duration::from_secs(20));
    assert_eq!(held_requeue(Duration::from_secs(3600)), HELD_REQUEUE_MAX);
}

#[test]
fn resolution_failures_set_and_successes_clear_resolution_failed() {
    let health = healthy_catalogs();
    let now = time(400);
    let sub = subscription("Automatic", None);
    let failed = next_status(&StatusInput {
        subscription: &sub,
        catalog_health: &health,
        csvs: &[],
        install_plans: &[],
        resolution: &Outcome::Failed {
            reason: reason::CONSTRAINTS_NOT_SATISFIABLE,
            message: "package redis-operator has no channel 'stabel'".into(),
        },
        now: &now,
    });
    let c = cond(&failed, Cond::ResolutionFailed).expect("condition");
    assert_eq!(c.status, ConditionStatus::True);
    assert_eq!(c.reason.as_deref(), Some("ConstraintsNotSatisfiable"));
    assert_eq!(
        c.message.as_deref(),
        Some("package redis-operator has no channel 'stabel'")
    );
    assert_eq!(failed.state, None);

    let mut sub = sub;
    sub.status = Some(failed);
    for step in [&Outcome::NotRun, &Outcome::UpToDate { adopted: None }] {
        let st = next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &health,
            csvs: &[],
            install_plans: &[],
            resolution: step,
            now: &now,
        });
        let kept = matches!(step, Outcome::NotRun);
        assert_eq!(cond(&st, Cond::ResolutionFailed).is_some(), kept, "{step:?}");
    }
}

#[test]
fn an_adopted_csv_becomes_current_and_installed() {
    let sub = subscription("Automatic", None);
    let health = healthy_catalogs();
    let now = time(500);
    let st = next_status(&StatusInput {
        subscription: &sub,
        catalog_health: &health,
        csvs: &["redis-operator.v0.1.0"],
        install_plans: &[],
        resolution: &Outcome::UpToDate {
            adopted: Some("redis-operator.v0.1.0".into()),
        },
        now: &now,
    });
    assert_eq!(
        summary(&st),
        (
            Some("AtLatestKnown"),
            Some("redis-operator.v0.1.0"),
            Some("redis-operator.v0.1.0"),
            None
        )
    );
}

#[test]
fn an_adopted_csv_gets_back_the_plan_its_subscription_owns_for_it() {
    // The plan was created and ran, but the status write that recorded it was lost.
    let mut sub = subscription("Automatic", None);
    sub.metadata.uid = Some("uid-sub".to_owned());
    let owned = |name: &str, owner: &str, csv: &str, generation: i64| {
        let mut p = plan(name, "Automatic", true, json!({"phase": "Complete"}));
        p.metadata.owner_references = Some(vec![OwnerReference {
            api_version: API_VERSION.to_owned(),
            kind: "Subscription".to_owned(),
            name: "redis".to_owned(),
            uid: owner.to_owned(),
            ..OwnerReference::default()
        }]);
        p.spec.cluster_service_version_names = vec![csv.to_owned()];
        p.spec.generation = Some(generation);
        p
    };
    let older = owned("install-old", "uid-sub", "redis-operator.v0.1.0", 1);
    let ours = owned("install-ours", "uid-sub", "redis-operator.v0.1.0", 2);
    let other_csv = owned("install-next", "uid-sub", "redis-operator.v0.2.0", 3);
    let foreign = owned("install-foreign", "uid-other", "redis-operator.v0.1.0", 9);
    let health = healthy_catalogs();
    let now = time(500);
    let adopted = |plans: &[&InstallPlan]| {
        next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &health,
            csvs: &["redis-operator.v0.1.0"],
            install_plans: plans,
            resolution: &Outcome::UpToDate {
                adopted: Some("redis-operator.v0.1.0".into()),
            },
            now: &now,
        })
    };
    let st = adopted(&[&older, &foreign, &ours, &other_csv]);
    assert_eq!(
        summary(&st),
        (
            Some("AtLatestKnown"),
            Some("redis-operator.v0.1.0"),
            Some("redis-operator.v0.1.0"),
            Some("install-ours")
        )
    );
    assert_eq!(
        st.install_plan.as_ref().map(|p| p.name.as_str()),
        Some("install-ours")
    );
    assert_eq!(st.install_plan_generation, Some(2));
    assert!(cond(&st, Cond::InstallPlanPending).is_none());
    // Another Subscription's plan is never taken.
    assert_eq!(summary(&adopted(&[&foreign])).3, None);
}

#[test]
fn catalog_health_names_the_targeted_or_other_unhealthy_catalogs() {
    let obs = |ns: &str, name: &str, healthy: bool| CatalogHealthObservation {
        catalog: ObjectReference {
            name: Some(name.to_owned()),
            namespace: Some(ns.to_owned()),
            ..ObjectReference::default()
        },
        healthy,
    };
    let cases = [
        (
            vec![],
            true,
            "NoCatalogSourcesFound",
            "dependency resolution requires at least one catalogsource",
        ),
        (
            vec![obs("olm", "other", true)],
            true,
            "UnhealthyCatalogSourceFound",
            "targeted catalogsource olm/ops missing",
        ),
        (
            vec![obs("olm", "ops", false)],
            true,
            "UnhealthyCatalogSourceFound",
            "targeted catalogsource olm/ops unhealthy",
        ),
        (
            vec![
                obs("olm", "ops", true),
                obs("operators", "zeta", false),
                obs("olm", "beta", false),
            ],
            true,
            "UnhealthyCatalogSourceFound",
            "catalogsource olm/beta, operators/zeta unhealthy; the targeted catalogsource \
             olm/ops is healthy and unhealthy catalogs are skipped when looking up dependencies",
        ),
        (
            vec![obs("olm", "ops", true)],
            false,
            "AllCatalogSourcesHealthy",
            "all available catalogsources are healthy",
        ),
    ];
    let sub = subscription("Automatic", None);
    let now = time(600);
    for (observed, unhealthy, reason, message) in cases {
        let st = next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &observed,
            csvs: &[],
            install_plans: &[],
            resolution: &Outcome::NotRun,
            now: &now,
        });
        let c = cond(&st, Cond::CatalogSourcesUnhealthy).expect("condition");
        assert_eq!(c.status, ConditionStatus::from_bool(unhealthy), "{message}");
        assert_eq!(c.reason.as_deref(), Some(reason));
        assert_eq!(c.message.as_deref(), Some(message));
        let listed: Vec<(String, String)> = st
            .catalog_health
            .iter()
            .map(|h| ref_key(&h.catalog_source_ref))
            .collect();
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(listed, sorted, "catalogHealth is sorted");
    }
}

#[test]
fn an_unchanged_world_gives_an_unchanged_status_with_its_old_times() {
    let ip = plan("install-1", "Automatic", true, json!({"phase": "Installing"}));
    let health = healthy_catalogs();
    let first_time = time(700);
    let first = next_status(&StatusInput {
        subscription: &subscription("Automatic", None),
        catalog_health: &health,
        csvs: &[],
        install_plans: &[],
        resolution: &Outcome::NewPlan {
            csv: "redis-operator.v0.2.0".into(),
            plan: Box::new(ip.clone()),
        },
        now: &first_time,
    });
    let mut sub = subscription("Automatic", None);
    sub.status = Some(first.clone());
    let later = time(900);
    let plans = [&ip];
    let second = next_status(&StatusInput {
        subscription: &sub,
        catalog_health: &health,
        csvs: &[],
        install_plans: &plans,
        resolution: &Outcome::NotRun,
        now: &later,
    });
    assert!(!status_changed(Some(&first), &second));
    assert_eq!(second, first, "times are kept too");

    // The CSV appearing changes the state, stamps lastUpdated, keeps untouched conditions'
    // transition times.
    let csvs = ["redis-operator.v0.2.0"];
    let third = next_status(&StatusInput {
        subscription: &sub,
        catalog_health: &health,
        csvs: &csvs,
        install_plans: &plans,
        resolution: &Outcome::NotRun,
        now: &later,
    });
    assert!(status_changed(Some(&first), &third));
    assert_eq!(third.last_updated, later);
    assert_eq!(
        cond(&third, Cond::CatalogSourcesUnhealthy).and_then(|c| c.last_transition_time.clone()),
        Some(first_time)
    );
}

#[test]
fn resolution_waits_while_a_referenced_plan_is_pending() {
    let mut st = SubscriptionStatus::new(time(0));
    assert!(needs_resolution(None));
    assert!(needs_resolution(Some(&st)));
    st.state = Some(SubscriptionState::UpgradePending);
    assert!(needs_resolution(Some(&st)), "pending without a plan resolves");
    st.install_plan_ref = Some(ObjectReference {
        name: Some("install-1".to_owned()),
        ..ObjectReference::default()
    });
    assert!(!needs_resolution(Some(&st)));
    st.state = Some(SubscriptionState::UpgradeAvailable);
    assert!(!needs_resolution(Some(&st)));
    st.state = Some(SubscriptionState::AtLatestKnown);
    assert!(needs_resolution(Some(&st)), "at latest known looks for upgrades");
}

#[test]
fn a_config_selector_is_reported_as_not_applied_until_it_is_removed() {
    let mut sub = subscription("Automatic", None);
    sub.spec.config =
        Some(serde_json::from_value(json!({"selector": {"matchLabels": {"app": "x"}}})).unwrap());
    let st = spec_status(&sub);
    let c = cond(&st, Cond::ConfigIgnored).expect("the condition");
    assert_eq!(c.status, ConditionStatus::True);
    assert_eq!(
        c.reason.as_deref(),
        Some(crate::api::reasons::subscription::CONFIG_FIELD_NOT_APPLIED)
    );
    let message = c.message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("spec.config.selector is not applied") && message.contains("remove it"),
        "{message}"
    );
    sub.status = Some(st);
    sub.spec.config = Some(serde_json::from_value(json!({"nodeSelector": {"disk": "ssd"}})).unwrap());
    assert!(cond(&spec_status(&sub), Cond::ConfigIgnored).is_none());
}

#[test]
fn an_unknown_approval_value_is_reported_naming_the_field_until_it_is_fixed() {
    let mut sub = subscription("Sometimes", None);
    let st = spec_status(&sub);
    let c = cond(&st, Cond::InstallPlanApprovalInvalid).expect("the condition");
    assert_eq!(c.status, ConditionStatus::True);
    assert_eq!(
        c.reason.as_deref(),
        Some(reason::UNKNOWN_APPROVAL_TREATED_AS_MANUAL)
    );
    let message = c.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("spec.installPlanApproval \"Sometimes\"") && message.contains("treated as Manual"),
        "{message}"
    );
    sub.status = Some(st);
    sub.spec.install_plan_approval = Some(Approval::Manual);
    let fixed = spec_status(&sub);
    assert!(cond(&fixed, Cond::InstallPlanApprovalInvalid).is_none());
}

#[test]
fn each_subscription_plan_takes_that_subscription_approval() {
    let manual = subscription("Manual", None);
    let automatic = subscription("Automatic", None);
    let odd = subscription("manual", None);
    // A value OLM does not know (a typo of Manual) waits for approval like Manual; upstream
    // would install it automatically.
    for spec in [&manual.spec, &odd.spec] {
        assert_eq!(
            plan_approval(spec),
            PlanApproval {
                approval: Approval::Manual,
                approved: false,
                phase: InstallPlanPhase::RequiresApproval
            }
        );
    }
    assert_eq!(
        plan_approval(&automatic.spec),
        PlanApproval {
            approval: Approval::Automatic,
            approved: true,
            phase: InstallPlanPhase::Installing
        }
    );
}

#[test]
fn a_bundles_objects_are_unpacked_and_its_other_properties_kept_for_the_annotation() {
    use crate::catalog::{DeclarativeConfig, Model, declcfg::Origin};

    let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "a.v1"}});
    let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, csv.to_string());
    let mut cfg = DeclarativeConfig::default();
    for (i, doc) in [
        json!({"schema": "olm.package", "name": "a", "defaultChannel": "s"}),
        json!({"schema": "olm.channel", "package": "a", "name": "s", "entries": [{"name": "a.v1"}]}),
        json!({"schema": "olm.bundle", "package": "a", "name": "a.v1", "image": "", "properties": [
            {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}},
            {"type": "olm.package.required", "value": {"packageName": "b", "versionRange": ">=1.0.0"}},
            {"type": "olm.bundle.object", "value": {"data": data}},
        ]}),
    ]
    .into_iter()
    .enumerate()
    {
        cfg.add_value(Origin::new("c.json", i + 1), doc).unwrap();
    }
    let model = Model::from_config(cfg);
    let bundle = model.package("a").unwrap().bundle("a.v1").unwrap();
    let (objects, properties) = bundle_manifests(bundle).unwrap();
    assert_eq!(objects, [csv]);
    let types: Vec<&str> = properties.iter().filter_map(|p| p["type"].as_str()).collect();
    assert_eq!(types, ["olm.package", "olm.package.required"]);
    assert_eq!(properties[0]["value"]["packageName"], "a");
    assert_eq!(properties[1]["value"]["versionRange"], ">=1.0.0");
}

// ---------------------------------------------------------------------------------------------
// The decision and the InstallPlan it leads to
// ---------------------------------------------------------------------------------------------

mod decision {
    use std::collections::BTreeMap;

    use base64::Engine as _;
    use serde_json::json;

    use super::super::*;
    use crate::{
        api::v1alpha1::{InstallPlanPhase, StepStatus},
        catalog::{DeclarativeConfig, Model, declcfg::Origin},
        resolve::{Catalog, CatalogKey, ExistingSubscription, InstalledCsv},
    };

    fn object(value: &serde_json::Value) -> serde_json::Value {
        json!({"type": "olm.bundle.object", "value": {"data":
            base64::engine::general_purpose::STANDARD.encode(value.to_string())}})
    }

    fn csv(name: &str, replaces: Option<&str>) -> serde_json::Value {
        let mut spec = json!({"displayName": "A", "version": name.trim_start_matches("a.v").to_owned() + ".0.0",
            "install": {"strategy": "deployment", "spec": {"deployments": []}},
            "installModes": [{"type": "OwnNamespace", "supported": true},
                             {"type": "AllNamespaces", "supported": true}]});
        if let Some(r) = replaces {
            spec["replaces"] = json!(r);
        }
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
               "metadata": {"name": name}, "spec": spec})
    }

    /// Package `a`, channel `stable`: a.v1 ← a.v2 (replaces), every bundle inlined.
    fn model() -> Model {
        model_of([
            json!({"schema": "olm.package", "name": "a", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "a", "name": "stable",
                   "entries": [{"name": "a.v1"}, {"name": "a.v2", "replaces": "a.v1"}]}),
            json!({"schema": "olm.bundle", "package": "a", "name": "a.v1", "image": "", "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}},
                object(&csv("a.v1", None))]}),
            json!({"schema": "olm.bundle", "package": "a", "name": "a.v2", "image": "", "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "2.0.0"}},
                object(&csv("a.v2", Some("a.v1")))]}),
        ])
    }

    /// The model of the FBC documents `docs`.
    fn model_of(docs: impl IntoIterator<Item = Value>) -> Model {
        let mut cfg = DeclarativeConfig::default();
        for (i, doc) in docs.into_iter().enumerate() {
            cfg.add_value(Origin::new("c.json", i), doc).unwrap();
        }
        Model::from_config(cfg)
    }

    /// The planning error of installing package `a` from `model` (a fresh Automatic Subscription).
    fn plan_error(model: &Model) -> String {
        let (cats, sub) = (catalogs(model), subscription("Automatic"));
        let inst = installed(&sub, None);
        let Decision::Install(install) = decide_with(&sub, &["og"], &cats, &inst, &[]) else {
            panic!("expected an install")
        };
        install_plan(&sub, "ops", "install-abc", &install, None, &super::time(0)).unwrap_err()
    }

    fn subscription(approval: &str) -> Subscription {
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "a", "namespace": "ops", "uid": "u-1"},
            "spec": {"source": "cat", "sourceNamespace": "olm", "name": "a", "channel": "stable",
                     "installPlanApproval": approval}}))
        .unwrap()
    }

    fn catalogs(model: &Model) -> Catalogs<'_> {
        Catalogs {
            global_namespace: "olm".into(),
            catalogs: vec![Catalog {
                key: CatalogKey::new("olm", "cat"),
                priority: 0,
                model: Some(model),
                problem: None,
            }],
        }
    }

    /// The namespace with `installed` (a CSV of package `a` in `phase`) and the Subscription.
    fn installed(sub: &Subscription, csv: Option<(&str, &str)>) -> Installed {
        Installed {
            csvs: csv
                .map(|(name, phase)| InstalledCsv {
                    name: name.into(),
                    version: Some(semver::Version::new(1, 0, 0)),
                    package: Some("a".into()),
                    provided_gvks: Vec::new(),
                    phase: CsvPhase::parse(phase),
                })
                .into_iter()
                .collect(),
            subscriptions: vec![ExistingSubscription::from_subscription(sub)],
        }
    }

    fn decide_with<'a>(
        sub: &'a Subscription,
        groups: &[&str],
        catalogs: &'a Catalogs<'a>,
        installed: &'a Installed,
        phases: &'a [(String, Option<CsvPhase>)],
    ) -> Decision<'a> {
        decide(&Observed {
            subscription: sub,
            namespace: "ops",
            operator_groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            catalogs,
            installed,
            csv_phases: phases,
        })
    }

    #[test]
    fn without_exactly_one_operator_group_resolution_fails_naming_the_fix() {
        let (model, sub) = (model(), subscription("Automatic"));
        let (cats, inst) = (catalogs(&model), installed(&sub, None));
        let Decision::Failed(reason, message) = decide_with(&sub, &[], &cats, &inst, &[]) else {
            panic!("expected a failure")
        };
        assert_eq!(reason, reason::ERROR_PREVENTED_RESOLUTION);
        assert!(message.contains("found 0: none; create one"), "{message}");
        let Decision::Failed(_, message) = decide_with(&sub, &["og-b", "og-a"], &cats, &inst, &[]) else {
            panic!("expected a failure")
        };
        assert!(
            message.contains("found 2: og-a, og-b; delete all but one"),
            "{message}"
        );
    }

    #[test]
    fn a_fresh_subscription_installs_the_channel_head() {
        let (model, sub) = (model(), subscription("Automatic"));
        let (cats, inst) = (catalogs(&model), installed(&sub, None));
        let Decision::Install(install) = decide_with(&sub, &["og"], &cats, &inst, &[]) else {
            panic!("expected an install")
        };
        assert_eq!(install.selected.bundle, "a.v2");
        assert_eq!(install.bundle.name, "a.v2");
        assert!(install.dependencies.is_empty());
    }

    #[test]
    fn an_upgrade_waits_until_the_installed_csv_has_succeeded() {
        let (model, mut sub) = (model(), subscription("Automatic"));
        sub.status = serde_json::from_value(json!({"installedCSV": "a.v1", "currentCSV": "a.v1",
            "state": "AtLatestKnown", "lastUpdated": "2026-01-01T00:00:00Z"}))
        .unwrap();
        let (cats, inst) = (catalogs(&model), installed(&sub, Some(("a.v1", "Installing"))));
        let installing = [("a.v1".to_owned(), Some(CsvPhase::Installing))];
        assert!(matches!(
            decide_with(&sub, &["og"], &cats, &inst, &installing),
            Decision::WaitingForSucceeded(..)
        ));
        let succeeded = [("a.v1".to_owned(), Some(CsvPhase::Succeeded))];
        let Decision::Install(install) = decide_with(&sub, &["og"], &cats, &inst, &succeeded) else {
            panic!("expected the upgrade")
        };
        assert_eq!(install.selected.bundle, "a.v2");
        assert_eq!(install.selected.replaces(), Some("a.v1"));
    }

    #[test]
    fn the_install_plan_is_owned_by_the_subscription_and_approved_as_it_asks() {
        let model = model();
        let cats = catalogs(&model);
        for (approval, approved, phase) in [
            ("Manual", false, InstallPlanPhase::RequiresApproval),
            ("Automatic", true, InstallPlanPhase::Installing),
        ] {
            let sub = subscription(approval);
            let inst = installed(&sub, None);
            let Decision::Install(install) = decide_with(&sub, &["og"], &cats, &inst, &[]) else {
                panic!("expected an install")
            };
            let (ip, status) =
                install_plan(&sub, "ops", "install-abc", &install, None, &super::time(0)).unwrap();
            assert_eq!(ip.metadata.name.as_deref(), Some("install-abc"));
            assert_eq!(ip.metadata.namespace.as_deref(), Some("ops"));
            let owner = &ip.metadata.owner_references.as_ref().unwrap()[0];
            assert_eq!(
                (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
                ("Subscription", "a", "u-1")
            );
            // Owned, not controlled, and labelled for the Operator `a.ops`, as upstream.
            assert_eq!(owner.controller, Some(false));
            assert_eq!(
                ip.metadata.labels,
                Some([("operators.coreos.com/a.ops".to_owned(), String::new())].into())
            );
            assert_eq!(ip.spec.generation, Some(1), "the first plan is generation 1");
            assert_eq!(ip.spec.cluster_service_version_names, ["a.v2"]);
            assert_eq!(
                (ip.spec.source.as_deref(), ip.spec.source_namespace.as_deref()),
                (Some("cat"), Some("olm"))
            );
            assert_eq!(ip.spec.approved, approved, "{approval}");
            assert_eq!(status.phase, phase, "{approval}");
            assert_eq!(status.catalog_sources, ["cat"]);
            let kinds: BTreeMap<&str, &StepStatus> = status
                .plan
                .iter()
                .map(|s| (s.resource.kind.as_str(), &s.status))
                .collect();
            assert!(kinds.contains_key("ClusterServiceVersion"), "{kinds:?}");
        }
    }

    #[test]
    fn a_bundle_pulled_from_its_image_gives_the_steps_of_the_inlined_bundle_and_a_lookup() {
        const IMAGE: &str = "registry.example/a-bundle@sha256:0123";
        let inlined = model();
        let imaged = model_of([
            json!({"schema": "olm.package", "name": "a", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "a", "name": "stable", "entries": [{"name": "a.v1"}]}),
            json!({"schema": "olm.bundle", "package": "a", "name": "a.v1", "image": IMAGE, "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}]}),
        ]);
        let sub = subscription("Automatic");
        let inst = installed(&sub, None);
        let want = {
            let cats = catalogs(&inlined);
            let mut pinned = sub.clone();
            pinned.spec.starting_csv = Some("a.v1".into());
            let Decision::Install(install) = decide_with(&pinned, &["og"], &cats, &inst, &[]) else {
                panic!("expected an install")
            };
            assert_eq!(crate::plan::bundle_lookup::needs_lookup(install.bundle), None);
            install_plan(&pinned, "ops", "install-abc", &install, None, &super::time(0))
                .unwrap()
                .1
        };
        let cats = catalogs(&imaged);
        let Decision::Install(install) = decide_with(&sub, &["og"], &cats, &inst, &[]) else {
            panic!("expected an install")
        };
        assert_eq!(
            crate::plan::bundle_lookup::needs_lookup(install.bundle),
            Some(IMAGE)
        );
        // Without the image's manifests, the error says the image must be pulled.
        let err = install_plan(&sub, "ops", "install-abc", &install, None, &super::time(0)).unwrap_err();
        assert!(err.contains("has no inlined manifests; its image"), "{err}");
        let manifests = [csv("a.v1", None)];
        let (_, status) = install_plan(
            &sub,
            "ops",
            "install-abc",
            &install,
            Some(Unpacked {
                manifests: &manifests,
                image: IMAGE,
            }),
            &super::time(0),
        )
        .unwrap();
        assert_eq!(status.plan, want.plan);
        assert!(want.bundle_lookups.is_empty());
        let [lookup] = status.bundle_lookups.as_slice() else {
            panic!("one lookup: {:?}", status.bundle_lookups)
        };
        assert_eq!(
            (lookup.path.as_str(), lookup.identifier.as_str()),
            (IMAGE, "a.v1")
        );
        assert!(lookup.conditions.is_empty());
        assert_eq!(lookup.catalog_source_ref.name.as_deref(), Some("cat"));
    }

    #[test]
    fn a_bundle_whose_inlined_object_is_broken_is_a_planning_failure_naming_it() {
        let err = plan_error(&model_of([
            json!({"schema": "olm.package", "name": "a", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "a", "name": "stable", "entries": [{"name": "a.v1"}]}),
            json!({"schema": "olm.bundle", "package": "a", "name": "a.v1", "image": "", "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}},
                {"type": "olm.bundle.object", "value": {"data": "bm90IGpzb24gb3IgeWFtbDogWw=="}}]}),
        ]));
        assert!(
            err.starts_with("bundle a.v1 in catalog olm/cat: inlined object #1"),
            "{err}"
        );
    }

    #[test]
    fn a_bundle_with_only_an_image_says_the_image_must_be_pulled() {
        let err = plan_error(&model_of([
            json!({"schema": "olm.package", "name": "a", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "a", "name": "stable", "entries": [{"name": "a.v1"}]}),
            json!({"schema": "olm.bundle", "package": "a", "name": "a.v1", "image": "quay.io/a/bundle:v1",
                "properties": [{"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}]}),
        ]));
        assert_eq!(
            err,
            "bundle a.v1 in catalog olm/cat has no inlined manifests; its image quay.io/a/bundle:v1 \
             must be pulled"
        );
        assert!(!err.contains("no ClusterServiceVersion"));
    }

    fn annotate(sub: &mut Subscription, pairs: &[(&str, &str)]) {
        let annotations = sub.metadata.annotations.get_or_insert_with(Default::default);
        for (k, v) in pairs {
            annotations.insert((*k).to_owned(), (*v).to_owned());
        }
    }

    fn installed_at_v1(sub: &mut Subscription) {
        sub.status = serde_json::from_value(json!({"installedCSV": "a.v1", "currentCSV": "a.v1",
            "state": "AtLatestKnown", "lastUpdated": "2026-01-01T00:00:00Z"}))
        .unwrap();
    }

    #[test]
    fn a_ceiling_keeps_the_installed_csv_and_names_the_newer_bundle() {
        let (model, mut sub) = (model(), subscription("Automatic"));
        annotate(&mut sub, &[(pin::VERSION_CEILING, "1.0.0")]);
        installed_at_v1(&mut sub);
        let cats = catalogs(&model);
        let inst = installed(&sub, Some(("a.v1", "Succeeded")));
        let succeeded = [("a.v1".to_owned(), Some(CsvPhase::Succeeded))];
        let Decision::Pinned(adopted, pinned) = decide_with(&sub, &["og"], &cats, &inst, &succeeded) else {
            panic!("expected the upgrade to be pinned")
        };
        assert_eq!(adopted, None);
        assert_eq!(
            (pinned.installed.as_str(), pinned.available.as_str()),
            ("a.v1", "a.v2")
        );
        assert_eq!(pinned.version, semver::Version::new(2, 0, 0));
        assert!(
            pinned
                .message()
                .contains("a.v2 (2.0.0) is available but the annotation olm-rs.io/version-ceiling"),
            "{}",
            pinned.message()
        );
        // Raised to the newer version: the upgrade is planned.
        annotate(&mut sub, &[(pin::VERSION_CEILING, "2.0.0")]);
        let Decision::Install(install) = decide_with(&sub, &["og"], &cats, &inst, &succeeded) else {
            panic!("expected the upgrade")
        };
        assert_eq!(install.selected.bundle, "a.v2");
    }

    #[test]
    fn a_first_install_under_a_ceiling_takes_the_newest_bundle_at_or_below_it() {
        let (model, mut sub) = (model(), subscription("Automatic"));
        annotate(&mut sub, &[(pin::VERSION_CEILING, "1.5.0")]);
        let (cats, inst) = (catalogs(&model), installed(&sub, None));
        let Decision::Install(install) = decide_with(&sub, &["og"], &cats, &inst, &[]) else {
            panic!("expected an install")
        };
        assert_eq!(install.selected.bundle, "a.v1");
        // Below every bundle: a failure naming the annotation and the fix.
        annotate(&mut sub, &[(pin::VERSION_CEILING, "0.1.0")]);
        let Decision::Failed(reason, message) = decide_with(&sub, &["og"], &cats, &inst, &[]) else {
            panic!("expected a failure")
        };
        assert_eq!(reason, reason::CONSTRAINTS_NOT_SATISFIABLE);
        assert!(
            message.contains("every installable bundle of package a in CatalogSource olm/cat is above the version ceiling 0.1.0 set by the annotation olm-rs.io/version-ceiling"),
            "{message}"
        );
    }

    #[test]
    fn an_unreadable_annotation_fails_the_decision_naming_it() {
        let (model, mut sub) = (model(), subscription("Automatic"));
        annotate(&mut sub, &[(pin::VERSION_CEILING, "latest")]);
        let (cats, inst) = (catalogs(&model), installed(&sub, None));
        let Decision::Failed(reason, message) = decide_with(&sub, &["og"], &cats, &inst, &[]) else {
            panic!("expected a failure")
        };
        assert_eq!(reason, reason::INVALID_ANNOTATION);
        assert!(
            message.starts_with("annotation olm-rs.io/version-ceiling \"latest\""),
            "{message}"
        );
    }

    #[test]
    fn the_first_install_is_automatic_and_upgrades_wait_with_a_manual_upgrade_approval() {
        let model = model();
        let cats = catalogs(&model);
        let mut sub = subscription("Automatic");
        annotate(
            &mut sub,
            &[(pin::UPGRADE_APPROVAL, "Manual"), (pin::VERSION_CEILING, "1.0.0")],
        );
        let inst = installed(&sub, None);
        let Decision::Install(first) = decide_with(&sub, &["og"], &cats, &inst, &[]) else {
            panic!("expected the first install")
        };
        let (ip, status) = install_plan(&sub, "ops", "install-1", &first, None, &super::time(0)).unwrap();
        assert_eq!(first.selected.bundle, "a.v1");
        assert!(ip.spec.approved, "the first install is Automatic");
        assert_eq!(status.phase, InstallPlanPhase::Installing);

        annotate(&mut sub, &[(pin::VERSION_CEILING, "2.0.0")]);
        installed_at_v1(&mut sub);
        let inst = installed(&sub, Some(("a.v1", "Succeeded")));
        let succeeded = [("a.v1".to_owned(), Some(CsvPhase::Succeeded))];
        let Decision::Install(upgrade) = decide_with(&sub, &["og"], &cats, &inst, &succeeded) else {
            panic!("expected the upgrade")
        };
        let (ip, status) = install_plan(&sub, "ops", "install-2", &upgrade, None, &super::time(0)).unwrap();
        assert!(!ip.spec.approved, "the upgrade waits for approval");
        assert_eq!(ip.spec.approval, Approval::Manual);
        assert_eq!(status.phase, InstallPlanPhase::RequiresApproval);
    }
}

#[test]
fn the_next_plan_is_one_generation_after_the_last_one_the_subscription_recorded() {
    let first = subscription("Automatic", None);
    assert_eq!(super::next_plan_generation(&first), 1);
    let upgraded = subscription(
        "Automatic",
        Some(json!({"lastUpdated": "2026-01-01T00:00:00Z", "installPlanGeneration": 2})),
    );
    assert_eq!(super::next_plan_generation(&upgraded), 3);
}

#[test]
fn a_subscription_without_its_component_label_gets_it_once() {
    let sub = subscription("Automatic", None);
    let apply = super::component_label_apply(&sub, "operators").expect("the label is missing");
    assert_eq!(
        apply,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": "redis", "namespace": "operators",
                            "labels": {"operators.coreos.com/redis-operator.operators": ""}}})
    );
    let mut labelled = sub.clone();
    labelled.metadata.labels = Some(
        [(
            "operators.coreos.com/redis-operator.operators".to_owned(),
            String::new(),
        )]
        .into(),
    );
    assert_eq!(super::component_label_apply(&labelled, "operators"), None);
}

#[test]
fn the_properties_annotation_lists_gvks_then_the_package_with_sorted_keys_as_upstream() {
    use crate::catalog::property::{Gvk, PackageProperty, Property};
    let list = vec![
        Property::Package(PackageProperty {
            package_name: "redis-operator".into(),
            version: "1.0.0".into(),
            release: String::new(),
        }),
        Property::Gvk(Gvk {
            group: "cache.example.com".into(),
            version: "v1".into(),
            kind: "RedisCluster".into(),
        }),
    ];
    let text = json!({ "properties": annotation_properties(list) }).to_string();
    assert_eq!(
        text,
        r#"{"properties":[{"type":"olm.gvk","value":{"group":"cache.example.com","kind":"RedisCluster","version":"v1"}},{"type":"olm.package","value":{"packageName":"redis-operator","version":"1.0.0"}}]}"#
    );
}

#[test]
fn planning_a_csv_again_finds_the_subscriptions_own_plan_for_it_the_newest_first() {
    let owned = |name: &str, generation: i64, owner_uid: &str, status: bool| {
        let mut p = plan(name, "Automatic", true, json!({"phase": "Complete"}));
        p.spec.generation = Some(generation);
        if !status {
            p.status = None;
        }
        p.metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                kind: "Subscription".into(),
                name: "redis".into(),
                uid: owner_uid.into(),
                ..Default::default()
            },
        ]);
        p
    };
    let plans = [
        owned("install-a", 1, "sub-uid", true),
        owned("install-b", 2, "sub-uid", true),
        owned("install-c", 3, "other-uid", true),
        owned("install-d", 4, "sub-uid", false),
    ];
    let found = existing_plan_for(plans.iter(), "sub-uid", "redis-operator.v0.2.0");
    assert_eq!(found.and_then(|p| p.metadata.name.as_deref()), Some("install-b"));
    assert!(existing_plan_for(plans.iter(), "sub-uid", "redis-operator.v0.3.0").is_none());
    assert!(existing_plan_for(plans.iter(), "nobody", "redis-operator.v0.2.0").is_none());
}

#[test]
fn a_pinned_subscription_reports_upgrade_available_and_keeps_resolving() {
    let sub = subscription(
        "Automatic",
        Some(
            json!({"installedCSV": "redis-operator.v0.1.0", "currentCSV": "redis-operator.v0.1.0",
                    "state": "AtLatestKnown", "lastUpdated": "1970-01-01T00:00:10Z",
                    "installPlanRef": {"name": "install-old", "namespace": "operators"}}),
        ),
    );
    // The plan that installed it, complete: the pinned state is not mistaken for an old
    // olm-rs's "upgrade waits for approval".
    let done = plan("install-old", "Automatic", true, json!({"phase": "Complete"}));
    let plans = [&done];
    let pinned = pin::PinnedUpgrade {
        installed: "redis-operator.v0.1.0".into(),
        available: "redis-operator.v0.2.0".into(),
        version: semver::Version::new(0, 2, 0),
        ceiling: semver::Version::new(0, 1, 0),
    };
    let now = time(100);
    fn input<'a>(
        sub: &'a Subscription,
        plans: &'a [&'a InstallPlan],
        resolution: &'a Outcome,
        now: &'a Time,
    ) -> StatusInput<'a> {
        StatusInput {
            subscription: sub,
            catalog_health: &[],
            csvs: &["redis-operator.v0.1.0"],
            install_plans: plans,
            resolution,
            now,
        }
    }
    let st = next_status(&input(
        &sub,
        &plans,
        &Outcome::Pinned {
            adopted: None,
            pinned: pinned.clone(),
        },
        &now,
    ));
    assert_eq!(
        summary(&st),
        (
            Some("UpgradeAvailable"),
            Some("redis-operator.v0.1.0"),
            Some("redis-operator.v0.1.0"),
            Some("install-old")
        )
    );
    let held = cond(&st, Cond::UpgradeHeld).expect("UpgradeHeld");
    assert_eq!(held.reason.as_deref(), Some(reason::VERSION_PINNED));
    assert_eq!(held.message.as_deref(), Some(pinned.message().as_str()));
    // Nothing waits on a plan: resolution runs again, even with an old plan referenced.
    let mut with_ref = st.clone();
    with_ref.install_plan_ref = Some(ObjectReference {
        name: Some("install-old".into()),
        ..ObjectReference::default()
    });
    assert!(needs_resolution(Some(&with_ref)));
    // Written, then read back by a reconcile that does not resolve: still pinned (a fixed
    // point, so the controller does not write again).
    let mut again = sub.clone();
    again.status = Some(st.clone());
    let same = next_status(&input(&again, &plans, &Outcome::NotRun, &now));
    assert_eq!(same, st);
    let same = next_status(&input(
        &again,
        &plans,
        &Outcome::Pinned {
            adopted: None,
            pinned: pinned.clone(),
        },
        &now,
    ));
    assert_eq!(same, st);
    // The ceiling raised and the upgrade planned elsewhere: up to date clears the hold.
    let mut next = sub.clone();
    next.status = Some(st);
    let st = next_status(&input(&next, &plans, &Outcome::UpToDate { adopted: None }, &now));
    assert_eq!(st.state, Some(SubscriptionState::AtLatestKnown));
    assert!(cond(&st, Cond::UpgradeHeld).is_none());
}

#[test]
fn a_decision_that_needs_no_action_is_its_own_outcome() {
    let hold = UpgradeHold {
        installed: "a.v1".into(),
        phase: CsvPhase::Installing,
        next: "a.v2".into(),
    };
    assert_eq!(Decision::NotRun.outcome().ok(), Some(Outcome::NotRun));
    assert_eq!(
        Decision::Failed(reason::CONSTRAINTS_NOT_SATISFIABLE, "no channel".into())
            .outcome()
            .ok(),
        Some(Outcome::Failed {
            reason: reason::CONSTRAINTS_NOT_SATISFIABLE,
            message: "no channel".into()
        })
    );
    assert_eq!(
        Decision::WaitingForSucceeded(Some("a.v1".into()), hold.clone())
            .outcome()
            .ok(),
        Some(Outcome::Held {
            adopted: Some("a.v1".into()),
            hold
        })
    );
    assert_eq!(
        Decision::UpToDate(None).outcome().ok(),
        Some(Outcome::UpToDate { adopted: None })
    );
}

#[test]
fn each_outcome_is_looked_at_again_on_its_own_schedule() {
    let secs = Duration::from_secs;
    let failed = Outcome::Failed {
        reason: reason::CONSTRAINTS_NOT_SATISFIABLE,
        message: String::new(),
    };
    assert_eq!(failed.requeue_after(Duration::ZERO), secs(60));
    assert_eq!(
        Outcome::UpToDate { adopted: None }.requeue_after(Duration::ZERO),
        secs(300)
    );
    assert_eq!(
        Outcome::Unpacking {
            message: String::new()
        }
        .requeue_after(Duration::ZERO),
        secs(5),
        "upstream resyncs an unpacking namespace every 5 s"
    );
    let unpack_failed = |retry_in| Outcome::UnpackFailed {
        reason: reason::BUNDLE_UNPACK_FAILED,
        message: String::new(),
        retry_in,
    };
    assert_eq!(unpack_failed(secs(300)).requeue_after(Duration::ZERO), secs(300));
    assert_eq!(
        unpack_failed(Duration::ZERO).requeue_after(Duration::ZERO),
        secs(5),
        "never busy-loops"
    );
    let held = Outcome::Held {
        adopted: None,
        hold: UpgradeHold {
            installed: "a.v1".into(),
            phase: CsvPhase::Installing,
            next: "a.v2".into(),
        },
    };
    assert_eq!(held.requeue_after(Duration::ZERO), HELD_REQUEUE_MIN);
    assert_eq!(held.requeue_after(secs(3600)), HELD_REQUEUE_MAX);
}

#[test]
fn the_namespaces_one_group_can_leave_the_global_catalogs_out() {
    let group = |name: &str, value: Option<&str>| {
        let mut og: crate::api::v1::OperatorGroup = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": name, "namespace": "team-a"}, "spec": {}
        }))
        .unwrap();
        if let Some(v) = value {
            og.metadata.annotations = Some(
                [(
                    crate::api::labels::EXCLUDE_GLOBAL_NAMESPACE_RESOLUTION.to_owned(),
                    v.to_owned(),
                )]
                .into(),
            );
        }
        og
    };
    let on = group("og", Some("true"));
    assert_eq!(global_catalogs_excluded_by([&on]), Some("og".to_owned()));
    assert_eq!(global_catalogs_excluded_by([&group("og", Some("false"))]), None);
    assert_eq!(
        global_catalogs_excluded_by([&group("og", Some("True"))]),
        None,
        "upstream compares with \"true\""
    );
    assert_eq!(global_catalogs_excluded_by([&group("og", None)]), None);
    assert_eq!(
        global_catalogs_excluded_by([&on, &group("other", None)]),
        None,
        "two groups: resolution fails on the groups first"
    );
    let why = excluded_global_catalog("og", "team-a");
    assert!(
        why.contains("OperatorGroup og") && why.contains("exclude-global-namespace-resolution"),
        "{why}"
    );
}
