use k8s_openapi::api::core::v1::ObjectReference;

use super::*;
use crate::{
    api::v1alpha1::InstallPlanPhase,
    catalog::Model,
    cli::cmd::cluster::list::tests::{plan as install_plan, sub},
    plan::preview as approve,
};

fn builtin() -> Model {
    crate::catalog::load::embedded_builtin().unwrap().model
}

fn redis(model: &Model) -> &Package {
    model.package("redis-operator").unwrap()
}

#[test]
fn the_summary_of_the_shipped_package_has_its_name_provider_version_and_icon() {
    let model = builtin();
    let s = summary("olm/olm-rs-catalog", redis(&model));
    assert_eq!(s.name, "redis-operator");
    assert_eq!(s.catalog, "olm/olm-rs-catalog");
    assert_eq!(s.default_channel, "stable");
    assert_eq!(s.latest, "1.2.0");
    assert!(s.has_icon);
    assert!(!s.display_name.is_empty());
    assert!(!s.summary.is_empty());
    let icon = icon(redis(&model)).unwrap();
    assert_eq!(icon.media_type, "image/svg+xml");
    assert!(icon.data.starts_with(b"<svg"));
}

#[test]
fn long_summaries_are_cut_at_a_character_with_an_ellipsis() {
    assert_eq!(shorten("short", 10), "short");
    assert_eq!(shorten("ééééé", 3), "ééé…");
}

#[test]
fn the_graph_marks_the_head_the_installed_entry_and_the_path_olm_would_take() {
    let model = builtin();
    let p = redis(&model);
    let stable = p.channel("alpha").unwrap();
    let view = channel(p, stable, Some("redis-operator.v0.2.1"));
    let marked = |f: fn(&Node) -> bool| -> Vec<&str> {
        view.graph
            .nodes
            .iter()
            .filter(|n| f(n))
            .map(|n| n.name.as_str())
            .collect()
    };
    let head = stable.head().unwrap();
    assert_eq!(view.head.as_deref(), Some(head));
    assert_eq!(marked(|n| n.head), [head]);
    assert_eq!(marked(|n| n.installed), ["redis-operator.v0.2.1"]);
    let hops = stable
        .graph()
        .upgrade_path(&Installed {
            name: Some("redis-operator.v0.2.1".into()),
            version: "0.2.1".parse().unwrap(),
        })
        .unwrap();
    let mut path: Vec<&str> = hops.iter().map(|h| h.name.as_str()).collect();
    path.push("redis-operator.v0.2.1");
    let mut on_path = marked(|n| n.on_path);
    on_path.sort_unstable();
    path.sort_unstable();
    assert_eq!(on_path, path);
    let path_edges = view.graph.edges.iter().filter(|e| e.on_path).count();
    assert_eq!(path_edges, hops.len(), "one edge per hop");
    assert_eq!(view.problem, None);
}

#[test]
fn without_an_installed_entry_nothing_is_on_a_path_and_edges_to_absent_entries_get_ghost_nodes() {
    let model = builtin();
    let p = redis(&model);
    let view = channel(p, p.channel("stable").unwrap(), None);
    assert!(view.graph.nodes.iter().all(|n| !n.on_path && !n.installed));
    assert!(view.graph.edges.iter().all(|e| !e.on_path));
    for e in &view.graph.edges {
        assert!(
            view.graph.nodes.iter().any(|n| n.name == e.to),
            "{} has no node",
            e.to
        );
    }
    let kinds: BTreeSet<&str> = view.graph.edges.iter().map(|e| e.kind.as_str()).collect();
    assert!(
        kinds.contains("skipRange") && kinds.contains("replaces"),
        "{kinds:?}"
    );
}

#[test]
fn the_package_page_puts_the_default_channel_first_and_marks_the_subscribed_channel_only() {
    let model = builtin();
    let p = redis(&model);
    let s = sub(
        "redis",
        "redis-operator",
        Some("redis-operator.v1.0.0"),
        Some("redis-operator.v1.0.0"),
        None,
    );
    let view = package("olm/olm-rs-catalog", p, &[&s]);
    assert_eq!(view.channels[0].name, "stable");
    assert_eq!(view.installed.len(), 1);
    assert_eq!(view.installed[0].csv.as_deref(), Some("redis-operator.v1.0.0"));
    for c in &view.channels {
        let installed = c.graph.nodes.iter().any(|n| n.installed);
        assert_eq!(installed, c.name == "stable", "channel {}", c.name);
    }
}

#[test]
fn an_installed_operator_joins_its_csv_its_waiting_plan_and_its_events() {
    let s = sub(
        "redis",
        "redis-operator",
        Some("r.v1"),
        Some("r.v2"),
        Some("ip-2"),
    );
    let plans = [install_plan(
        "redis",
        "ip-2",
        &["r.v2"],
        InstallPlanPhase::RequiresApproval,
        false,
    )];
    let event = |name: &str, kind: &str, object: &str, at: i64| Event {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("redis".into()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            kind: Some(kind.into()),
            name: Some(object.into()),
            namespace: Some("redis".into()),
            ..ObjectReference::default()
        },
        reason: Some(name.into()),
        last_timestamp: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::from_second(at).unwrap(),
        )),
        ..Event::default()
    };
    let events = [
        event("Old", "Subscription", "redis-operator", 10),
        event("New", "InstallPlan", "ip-2", 20),
        event("Other", "Subscription", "someone-else", 30),
    ];
    let views = installed(&[s], &[], &plans, &events);
    let v = &views[0];
    assert_eq!(v.catalog, "olm/olm-rs-catalog");
    assert_eq!(
        v.pending_plan,
        Some(PendingPlan {
            name: "ip-2".into(),
            csvs: vec!["r.v2".into()]
        })
    );
    let reasons: Vec<&str> = v.events.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(reasons, ["New", "Old"]);
}

#[test]
fn a_plan_waiting_for_approval_is_approvable_and_an_approved_one_says_so() {
    let waiting = install_plan(
        "redis",
        "ip-2",
        &["r.v2"],
        InstallPlanPhase::RequiresApproval,
        false,
    );
    let view = plan(&waiting, &approve::preview(&waiting));
    assert_eq!(view.not_approvable, None);
    assert_eq!(view.csvs, ["r.v2"]);
    assert_eq!(view.approval, "Manual");
    let approved = install_plan("redis", "ip-2", &["r.v2"], InstallPlanPhase::Installing, true);
    let view = plan(&approved, &approve::preview(&approved));
    assert!(view.not_approvable.unwrap().contains("is approved"));
    let done = install_plan("redis", "ip-2", &["r.v2"], InstallPlanPhase::Complete, false);
    let view = plan(&done, &approve::preview(&done));
    assert!(view.not_approvable.unwrap().contains("already Complete"));
}

#[test]
fn every_entry_of_a_channel_is_drawn_skipped_ones_included() {
    // alpha lists v0.2.0 and v1.0.0-rc.1, which v0.2.1 and v1.0.0 skip: the resolver's order
    // leaves them out, the channel does not.
    let model = builtin();
    let p = redis(&model);
    for name in ["alpha", "candidate", "stable"] {
        let c = p.channel(name).unwrap();
        let view = channel(p, c, None);
        let drawn: BTreeSet<&str> = view
            .graph
            .nodes
            .iter()
            .filter(|n| !n.missing)
            .map(|n| n.name.as_str())
            .collect();
        let entries: BTreeSet<&str> = c.graph().entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(drawn, entries, "channel {name}");
        for e in &view.graph.edges {
            assert!(
                view.graph.nodes.iter().any(|n| n.name == e.to),
                "{name}: {} has no node",
                e.to
            );
        }
    }
}
