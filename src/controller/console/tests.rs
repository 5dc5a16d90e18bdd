use serde_json::json;

use super::*;
use crate::{
    api::v1alpha1::{ClusterServiceVersion, InstallPlan, InstallPlanPhase, Step, StepResource, StepStatus},
    cli::cmd::cluster::list::tests::{plan as install_plan, sub},
    controller::testing::{Fixture, object},
};

/// A CatalogSource `ns/name` of `sourceType: builtin`, with `status` when given.
fn catalog_source(ns: &str, name: &str, status: Option<serde_json::Value>) -> CatalogSource {
    let mut cs = json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"), "resourceVersion": "1"},
        "spec": {"sourceType": "builtin", "displayName": "olm-rs catalog", "publisher": "olm-rs"},
    });
    if let Some(status) = status {
        cs["status"] = status;
    }
    object(cs)
}

#[test]
fn only_loopback_addresses_are_served_and_the_refusal_names_the_flag_and_the_way_in() {
    assert_eq!(refuse_address("127.0.0.1:9090".parse().unwrap()), None);
    assert_eq!(refuse_address("[::1]:9090".parse().unwrap()), None);
    for refused in ["0.0.0.0:9090", "10.1.2.3:9090", "[::]:9090"] {
        let why = refuse_address(refused.parse().unwrap()).expect(refused);
        assert!(
            why.starts_with(&format!("--console {refused} is not a loopback address")),
            "{why}"
        );
        assert!(why.contains("Bind 127.0.0.1:PORT"), "{why}");
        assert!(
            why.contains("kubectl -n NAMESPACE port-forward deploy/olm-controller PORT:PORT"),
            "{why}"
        );
    }
}

#[tokio::test]
async fn the_overview_lists_each_catalog_source_with_the_cached_catalog_or_why_it_is_not_there() {
    let (mut f, _server) = Fixture::new();
    Fixture::store(
        &mut f.writers.catalog_sources,
        &catalog_source("olm", "olm-rs-catalog", None),
    );
    Fixture::store(
        &mut f.writers.catalog_sources,
        &catalog_source(
            "apps",
            "broken",
            Some(json!({"reason": "ConfigMapError", "message": "configmap x not found"})),
        ),
    );
    f.shared
        .catalogs
        .insert("olm", "olm-rs-catalog", f.shared.catalogs.builtin().unwrap());
    let source = StoreSource::new(f.shared.stores.clone(), Arc::clone(&f.shared.catalogs));

    let ov = source.overview().await.unwrap();
    let keys: Vec<&str> = ov.catalogs.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(
        keys,
        ["apps/broken", "olm/olm-rs-catalog"],
        "sorted by namespace, name"
    );
    assert_eq!(
        ov.catalogs[0].problem.as_deref(),
        Some("not loaded by the controller yet: ConfigMapError: configmap x not found")
    );
    assert_eq!(ov.catalogs[0].packages, 0);
    let loaded = &ov.catalogs[1];
    assert_eq!(loaded.display_name, "olm-rs catalog");
    assert_eq!(loaded.publisher, "olm-rs");
    assert_eq!(loaded.problem, None);
    assert_eq!(loaded.packages, ov.packages.len());
    assert!(
        ov.packages
            .iter()
            .any(|p| p.name == "redis-operator" && p.catalog == "olm/olm-rs-catalog"),
        "{:?}",
        ov.packages
    );

    // The summaries are built once per load and handed out again.
    let again = source.overview().await.unwrap();
    assert_eq!(again.packages.len(), ov.packages.len());
    let memo = lock(&source.summaries);
    assert_eq!(memo.len(), 1);
}

#[tokio::test]
async fn a_package_page_marks_what_a_stored_subscription_installed_and_unknown_ones_are_none() {
    let (mut f, _server) = Fixture::new();
    f.shared
        .catalogs
        .insert("olm", "olm-rs-catalog", f.shared.catalogs.builtin().unwrap());
    Fixture::store(
        &mut f.writers.subscriptions,
        &sub(
            "redis",
            "redis-operator",
            Some("redis-operator.v0.3.0"),
            Some("redis-operator.v0.3.0"),
            None,
        ),
    );
    let source = StoreSource::new(f.shared.stores.clone(), Arc::clone(&f.shared.catalogs));

    let page = source
        .package("olm/olm-rs-catalog", "redis-operator")
        .await
        .unwrap()
        .expect("the package");
    assert_eq!(page.installed.len(), 1);
    let stable = &page.channels[0];
    assert_eq!(stable.name, "stable");
    let installed: Vec<&str> = stable
        .graph
        .nodes
        .iter()
        .filter(|n| n.installed)
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(installed, ["redis-operator.v0.3.0"]);
    assert!(stable.graph.nodes.iter().any(|n| n.on_path && n.head));
    assert!(
        source
            .icon("olm/olm-rs-catalog", "redis-operator")
            .await
            .unwrap()
            .is_some()
    );

    assert_eq!(source.package("olm/olm-rs-catalog", "nope").await.unwrap(), None);
    assert_eq!(
        source.package("olm/not-loaded", "redis-operator").await.unwrap(),
        None
    );
    assert_eq!(source.package("no-slash", "redis-operator").await.unwrap(), None);
}

#[tokio::test]
async fn the_installed_page_joins_the_stores_and_says_events_are_not_shown() {
    let (mut f, _server) = Fixture::new();
    Fixture::store(
        &mut f.writers.subscriptions,
        &sub(
            "redis",
            "redis-operator",
            Some("r.v1"),
            Some("r.v2"),
            Some("ip-2"),
        ),
    );
    Fixture::store(
        &mut f.writers.install_plans,
        &install_plan(
            "redis",
            "ip-2",
            &["r.v2"],
            InstallPlanPhase::RequiresApproval,
            false,
        ),
    );
    Fixture::store(
        &mut f.writers.csvs,
        &object::<ClusterServiceVersion>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "r.v1", "namespace": "redis"},
            "spec": {"displayName": "r", "version": "1.0.0",
                "install": {"strategy": "deployment", "spec": {"deployments": []}}},
            "status": {"phase": "Succeeded"},
        })),
    );
    let source = StoreSource::new(f.shared.stores.clone(), Arc::clone(&f.shared.catalogs));

    let page = source.installed().await.unwrap();
    assert_eq!(page.problems, [NO_EVENTS]);
    let [op] = page.operators.as_slice() else {
        panic!("one operator: {:?}", page.operators);
    };
    assert_eq!(op.subscription, "redis-operator");
    assert_eq!(op.csv_phase, "Succeeded");
    assert_eq!(op.pending_plan.as_ref().map(|p| p.name.as_str()), Some("ip-2"));
    assert!(op.events.is_empty());
}

#[tokio::test]
async fn a_plan_page_shows_the_pure_preview_without_a_comparison_and_approval_is_refused() {
    let (mut f, _server) = Fixture::new();
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "r-role"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}],
    });
    let mut plan: InstallPlan = install_plan(
        "redis",
        "ip-2",
        &["r.v2"],
        InstallPlanPhase::RequiresApproval,
        false,
    );
    if let Some(status) = plan.status.as_mut() {
        status.plan.push(Step {
            resolving: "r.v2".into(),
            resource: StepResource {
                group: "rbac.authorization.k8s.io".into(),
                version: "v1".into(),
                kind: "ClusterRole".into(),
                name: "r-role".into(),
                manifest: Some(role.to_string()),
                ..StepResource::default()
            },
            optional: false,
            status: StepStatus::Unknown,
        });
    }
    Fixture::store(&mut f.writers.install_plans, &plan);
    let source = StoreSource::new(f.shared.stores.clone(), Arc::clone(&f.shared.catalogs));

    let view = source.plan("redis", "ip-2").await.unwrap().expect("the plan");
    let [step] = view.steps.as_slice() else {
        panic!("one step: {:?}", view.steps);
    };
    assert_eq!(step.kind, "ClusterRole");
    assert_eq!(step.change, "unknown");
    assert_eq!(step.note.as_deref(), Some(NOT_COMPARED));
    let [grant] = view.grants.as_slice() else {
        panic!("one grant: {:?}", view.grants);
    };
    assert_eq!(grant.scope, "cluster-wide");
    assert_eq!(grant.resources, ["secrets"]);
    assert!(!grant.flags.is_empty(), "wildcard verbs on secrets are flagged");
    // Once finished, there is nothing left to compare.
    plan.status.as_mut().unwrap().phase = InstallPlanPhase::Complete;
    Fixture::store(&mut f.writers.install_plans, &plan);
    let done = source.plan("redis", "ip-2").await.unwrap().expect("the plan");
    assert_eq!(done.steps[0].note, None);
    assert_eq!(source.plan("redis", "other").await.unwrap(), None);
    assert_eq!(source.plan("elsewhere", "ip-2").await.unwrap(), None);

    let refused = source.approve("redis", "ip-2").await.unwrap_err().to_string();
    assert!(refused.contains("kubectl olm approve"), "{refused}");
    assert!(refused.contains("kubectl olm console"), "{refused}");
}

#[test]
fn the_fingerprint_follows_additions_changes_and_removals_in_any_order() {
    let meta = |name: &str, rv: &str| kube::api::ObjectMeta {
        name: Some(name.into()),
        namespace: Some("ns".into()),
        uid: Some(format!("uid-{name}")),
        resource_version: Some(rv.into()),
        ..Default::default()
    };
    let (a, b, b2, c) = (meta("a", "1"), meta("b", "1"), meta("b", "2"), meta("c", "1"));
    let of = |objects: &[&kube::api::ObjectMeta]| fingerprint(objects.iter().copied());
    assert_eq!(of(&[&a, &b]), of(&[&b, &a]));
    assert_ne!(of(&[&a, &b]), of(&[&a, &b2]), "a change");
    assert_ne!(of(&[&a, &b]), of(&[&a, &b, &c]), "an addition");
    assert_ne!(of(&[&a, &b]), of(&[&a]), "a removal");
    assert_ne!(of(&[]), of(&[&a]));
}

#[tokio::test]
async fn a_store_change_is_told_to_open_pages() {
    tokio::time::pause();
    let (mut f, _server) = Fixture::new();
    let source = StoreSource::new(f.shared.stores.clone(), Arc::clone(&f.shared.catalogs));
    let mut changes = source.changes();
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let follow = tokio::spawn(source.follow(stop));
    tokio::time::sleep(POLL * 2).await;
    assert!(changes.try_recv().is_err(), "nothing changed yet");
    Fixture::store(&mut f.writers.catalog_sources, &catalog_source("olm", "c", None));
    tokio::time::sleep(POLL * 2).await;
    assert!(changes.try_recv().is_ok(), "the new CatalogSource is told");
    f.shared
        .catalogs
        .insert("olm", "c", f.shared.catalogs.builtin().unwrap());
    tokio::time::sleep(POLL / 10).await;
    assert!(changes.try_recv().is_ok(), "the catalog load is told");
    stop_tx.send(true).unwrap();
    follow.await.unwrap();
}
