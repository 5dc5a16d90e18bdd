use std::sync::Arc;

use super::*;
use crate::view::{
    CatalogSummary, ConditionView, EventView, GraphView, InstalledRef, Node, PendingPlan, StepView,
};

fn pkg(catalog: &str, name: &str, provider: &str, summary: &str) -> PackageSummary {
    PackageSummary {
        catalog: catalog.into(),
        name: name.into(),
        display_name: name.to_uppercase(),
        summary: summary.into(),
        provider: provider.into(),
        default_channel: "stable".into(),
        latest: "1.0.0".into(),
        has_icon: name.starts_with('r'),
        keywords: vec!["cache".into()],
    }
}

fn overview_of(packages: Vec<PackageSummary>) -> Overview {
    Overview {
        catalogs: vec![
            CatalogSummary {
                key: "olm/builtin".into(),
                display_name: "Built-in".into(),
                publisher: "olm-rs".into(),
                packages: 2,
                problem: None,
            },
            CatalogSummary {
                key: "olm/broken".into(),
                display_name: "Broken".into(),
                publisher: String::new(),
                packages: 0,
                problem: Some("configmap broken not found".into()),
            },
        ],
        packages: Arc::from(packages),
    }
}

#[test]
fn the_filter_matches_every_word_in_name_provider_summary_or_keywords() {
    let redis = pkg("a", "redis-operator", "Example Inc", "A Redis cluster");
    let f = |q: &str| Filter {
        q: q.into(),
        ..Filter::default()
    };
    assert!(f("redis example").keeps(&redis));
    assert!(f("CACHE").keeps(&redis));
    assert!(!f("redis postgres").keeps(&redis));
    let by_catalog = Filter {
        catalog: "b".into(),
        ..Filter::default()
    };
    assert!(!by_catalog.keeps(&redis));
    let by_provider = Filter {
        provider: "Example Inc".into(),
        ..Filter::default()
    };
    assert!(by_provider.keeps(&redis));
}

#[test]
fn the_first_page_lists_catalogs_with_their_problems_and_the_filtered_packages() {
    let ov = overview_of(vec![
        pkg("olm/builtin", "redis-operator", "Example", "Redis"),
        pkg("olm/builtin", "etcd", "CoreOS", "<b>etcd</b>"),
    ]);
    let all = overview(&ov, &Filter::default());
    assert!(all.contains("configmap broken not found"), "{all}");
    assert!(all.contains("2 of 2 packages"), "{all}");
    assert!(
        all.contains(r#"href="/package?catalog=olm%2Fbuiltin&amp;name=etcd""#),
        "{all}"
    );
    assert!(all.contains("&lt;b&gt;etcd&lt;/b&gt;"), "{all}");
    assert!(all.contains(r#"<img class="icon" src="/icon?catalog=olm%2Fbuiltin&amp;name=redis-operator""#));
    assert!(all.contains(r#"<option value="CoreOS">CoreOS</option>"#), "{all}");
    let one = overview(
        &ov,
        &Filter {
            q: "redis".into(),
            ..Filter::default()
        },
    );
    assert!(one.contains("1 of 2 packages"), "{one}");
    assert!(!one.contains("name=etcd"), "{one}");
    assert!(one.contains(r#"value="redis""#), "{one}");
}

#[test]
fn every_form_control_of_the_first_page_has_a_label() {
    let html = overview(&overview_of(vec![]), &Filter::default());
    for id in ["q", "catalog", "provider"] {
        assert!(html.contains(&format!(r#"<label for="{id}">"#)), "{id}: {html}");
        assert!(html.contains(&format!(r#"id="{id}""#)), "{id}: {html}");
    }
}

#[test]
fn the_package_page_shows_facts_installed_places_and_one_graph_per_channel() {
    let p = PackageView {
        catalog: "olm/builtin".into(),
        name: "redis-operator".into(),
        display_name: "Redis".into(),
        description: "Runs Redis".into(),
        provider: "Example".into(),
        default_channel: "stable".into(),
        has_icon: false,
        deprecation: None,
        channels: vec![
            ChannelView {
                name: "stable".into(),
                head: Some("r.v2".into()),
                deprecation: None,
                problem: None,
                graph: GraphView {
                    nodes: vec![Node {
                        name: "r.v2".into(),
                        head: true,
                        ..Node::default()
                    }],
                    edges: vec![],
                },
            },
            ChannelView {
                name: "candidate".into(),
                deprecation: Some("use stable".into()),
                ..ChannelView::default()
            },
        ],
        installed: vec![InstalledRef {
            namespace: "redis".into(),
            subscription: "redis-operator".into(),
            channel: String::new(),
            csv: Some("r.v1".into()),
        }],
        problems: vec!["installed versions are not shown: forbidden".into()],
    };
    let html = package(&p);
    assert!(html.contains("<h1>Redis</h1>"), "{html}");
    assert!(html.contains("r.v1 in namespace redis (Subscription redis-operator, channel default)"));
    assert!(html.contains(r#"<h3 id="ch0">stable (default)</h3>"#), "{html}");
    assert!(html.contains(r#"<h3 id="ch1">candidate</h3>"#), "{html}");
    assert!(html.contains("Deprecated: use stable"));
    assert!(html.contains("installed versions are not shown: forbidden"));
    assert_eq!(html.matches("<svg ").count(), 2);
    assert!(html.contains("Upgrade graph of redis-operator channel stable"));
}

fn operator(pending: bool) -> InstalledView {
    InstalledView {
        namespace: "redis".into(),
        subscription: "redis-operator".into(),
        package: "redis-operator".into(),
        catalog: "olm/builtin".into(),
        state: if pending {
            "UpgradePending".into()
        } else {
            "AtLatestKnown".into()
        },
        installed_csv: "r.v1".into(),
        csv_phase: "Succeeded".into(),
        approval: "Manual".into(),
        pending_plan: pending.then(|| PendingPlan {
            name: "install-abc".into(),
            csvs: vec!["r.v2".into()],
        }),
        conditions: vec![ConditionView {
            owner: "Subscription".into(),
            type_: "CatalogSourcesUnhealthy".into(),
            status: "False".into(),
            reason: "AllCatalogSourcesHealthy".into(),
            message: String::new(),
        }],
        events: vec![EventView {
            type_: "Normal".into(),
            reason: "InstallPlanCreated".into(),
            object: "Subscription/redis-operator".into(),
            message: "created install-abc".into(),
            last_seen: "2026-11-29T00:00:00Z".into(),
        }],
        ..InstalledView::default()
    }
}

#[test]
fn the_installed_page_links_a_waiting_plan_and_shows_conditions_and_events() {
    let html = installed(&InstalledPage {
        operators: vec![operator(true)],
        problems: vec!["cannot list events: forbidden".into()],
    });
    assert!(
        html.contains(r#"href="/plan?namespace=redis&amp;name=install-abc""#),
        "{html}"
    );
    assert!(html.contains("install-abc waits for approval: r.v2"));
    assert!(html.contains("AllCatalogSourcesHealthy"));
    assert!(html.contains("created install-abc"));
    assert!(html.contains("cannot list events: forbidden"));
    let quiet = installed(&InstalledPage {
        operators: vec![operator(false)],
        problems: vec![],
    });
    assert!(!quiet.contains("waits for approval"), "{quiet}");
}

fn waiting_plan() -> PlanView {
    PlanView {
        namespace: "redis".into(),
        name: "install-abc".into(),
        phase: "RequiresApproval".into(),
        approval: "Manual".into(),
        approved: false,
        csvs: vec!["r.v2".into()],
        steps: vec![StepView {
            kind: "Deployment".into(),
            name: "redis".into(),
            status: "Unknown".into(),
            change: "changed".into(),
            fields: vec![crate::view::FieldView {
                path: "spec.replicas".into(),
                before: "1".into(),
                after: "2".into(),
            }],
            note: None,
            crd_verdict: None,
        }],
        grants: vec![crate::view::GrantView {
            role: "r".into(),
            scope: "cluster-wide".into(),
            api_groups: vec![String::new()],
            resources: vec!["secrets".into()],
            verbs: vec!["get".into()],
            flags: vec!["secrets".into()],
        }],
        images: vec!["quay.io/x/redis:2".into()],
        not_approvable: None,
    }
}

#[test]
fn a_waiting_plan_shows_its_preview_and_an_approve_form_carrying_the_token() {
    let html = plan(&waiting_plan(), Some("tok"));
    assert!(
        html.contains(r#"<form class="approve" method="post" action="/plan/approve">"#),
        "{html}"
    );
    assert!(html.contains(r#"name="csrf" value="tok""#));
    assert!(html.contains(r#"<button type="submit" id="approve">Approve install-abc</button>"#));
    assert!(
        html.contains("<code>spec.replicas</code>: <del>1</del> → <ins>2</ins>"),
        "{html}"
    );
    assert!(html.contains(r#"<tr class="flagged">"#));
    assert!(html.contains("quay.io/x/redis:2"));
}

#[test]
fn an_approved_plan_or_a_read_only_console_shows_no_form() {
    let mut done = waiting_plan();
    done.not_approvable = Some("already approved".into());
    let html = plan(&done, Some("tok"));
    assert!(!html.contains("<form"), "{html}");
    assert!(html.contains("already approved"));
    let read_only = plan(&waiting_plan(), None);
    assert!(!read_only.contains("<form"), "{read_only}");
    assert!(read_only.contains("read-only"));
}

#[test]
fn the_page_frame_has_a_skip_link_navigation_and_one_main() {
    let html = page("A <title>", Nav::Installed, "<h1>x</h1>");
    assert!(html.contains(r##"<a class="skip" href="#main">"##));
    assert!(
        html.contains(r#"<a href="/installed" aria-current="page">"#),
        "{html}"
    );
    assert!(html.contains("A &lt;title&gt; · olm-rs console"));
    assert_eq!(html.matches("<main").count(), 1);
}
