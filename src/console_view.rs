//! console_view: the web console's pages ([`olm_console`]) from olm-rs values, pure and shared
//! by both data sources, `kubectl olm console` (`cli::cmd::console`, reading as the user) and
//! `olm-controller run --console` (`controller::console`, reading the controller's caches): a catalog [`Package`] as the first page's
//! summary and as a package page with one upgrade graph per channel, Subscriptions with their
//! CSVs, plans and Events as the installed page, an InstallPlan's [`Preview`] as the plan page.
//!
//! The graph marks follow OLM: the installed entry is the Subscription's `installedCSV` when the
//! Subscription follows this channel (an empty channel is the default one); the path is
//! [`crate::graph::ChannelGraph::upgrade_path`] from it, hop by hop, each hop's edge the one that
//! allows it.

use std::collections::BTreeSet;

use base64::Engine;
use k8s_openapi::api::core::v1::Event;
use olm_console::view::{
    ChannelView, ConditionView, EdgeKind, EventView, FieldView, GrantView, GraphEdge, GraphView, Icon,
    InstalledRef, InstalledView, Node, PackageSummary, PackageView, PendingPlan, PlanView, StepView,
};

use crate::{
    api::v1alpha1::{ClusterServiceVersion, InstallPlan, Subscription},
    catalog::model::{Channel, Package},
    graph::{self, Installed},
    plan::{
        preview::{Approvable, Preview, Scope, approvable},
        subscription::waiting::{install_plan_name, waiting_upgrade},
    },
};

/// The first page's packages of a catalog `key` (`NAMESPACE/NAME`), sorted by name.
pub fn package_summaries(key: &str, model: &crate::catalog::Model) -> Vec<PackageSummary> {
    let mut packages: Vec<PackageSummary> = model.packages().map(|p| summary(key, p)).collect();
    packages.sort_by(|a, b| a.name.cmp(&b.name));
    packages
}

/// A catalog's line on the first page: its display name (else its key), publisher, package
/// count and problem.
pub fn catalog_line(
    key: &str,
    display_name: &str,
    publisher: &str,
    packages: usize,
    problem: Option<String>,
) -> olm_console::view::CatalogSummary {
    olm_console::view::CatalogSummary {
        key: key.to_owned(),
        display_name: if display_name.is_empty() {
            key
        } else {
            display_name
        }
        .to_owned(),
        publisher: publisher.to_owned(),
        packages,
        problem,
    }
}

/// The problems a catalog load left out, as one line (`None`: none).
pub fn joined(problems: &[String]) -> Option<String> {
    match problems {
        [] => None,
        [one] => Some(one.clone()),
        [first, rest @ ..] => Some(format!("{first} (and {} more)", rest.len())),
    }
}

/// How long the first page's one-line summary may be.
const SUMMARY_CHARS: usize = 160;
/// How many Events an operator shows.
const EVENTS_SHOWN: usize = 8;

/// The bundle that speaks for the package: the default channel's head, else the newest.
fn head_bundle(p: &Package) -> Option<&crate::catalog::model::Bundle> {
    p.default_channel()
        .and_then(Channel::head)
        .and_then(|h| p.bundle(h))
        .or_else(|| p.latest_bundle())
}

/// What the first page shows of `p`, in catalog `catalog`.
pub fn summary(catalog: &str, p: &Package) -> PackageSummary {
    let meta = head_bundle(p).and_then(|b| b.csv_metadata());
    let short = meta
        .as_ref()
        .and_then(|m| m.annotations.get("description").cloned())
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| {
            p.description
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with('#'))
                .unwrap_or("")
                .to_string()
        });
    PackageSummary {
        catalog: catalog.to_string(),
        name: p.name.clone(),
        display_name: meta
            .as_ref()
            .map(|m| m.display_name.clone())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| p.name.clone()),
        summary: shorten(&short, SUMMARY_CHARS),
        provider: meta
            .as_ref()
            .and_then(|m| m.provider.as_ref().map(|l| l.name.clone()))
            .unwrap_or_default(),
        default_channel: p.default_channel.clone(),
        latest: p.latest_version().map(ToString::to_string).unwrap_or_default(),
        has_icon: p.icon.is_some(),
        keywords: meta.map(|m| m.keywords.clone()).unwrap_or_default(),
    }
}

/// `text` cut at a character boundary, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let cut: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("{}…", cut.trim_end())
    } else {
        cut
    }
}

/// The package's icon, decoded (`None`: none, or not base64).
pub fn icon(p: &Package) -> Option<Icon> {
    let icon = p.icon.as_ref()?;
    let text = icon.base64data.text();
    let data = base64::engine::general_purpose::STANDARD
        .decode(text.trim().as_bytes())
        .ok()?;
    Some(Icon {
        media_type: icon.mediatype.clone(),
        data,
    })
}

/// The package page of `p`: `subs` are the Subscriptions to it from this catalog.
pub fn package(catalog: &str, p: &Package, subs: &[&Subscription]) -> PackageView {
    let s = summary(catalog, p);
    let description = head_bundle(p)
        .and_then(|b| b.csv_metadata())
        .map(|m| m.description.clone())
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| p.description.clone());
    let installed: Vec<InstalledRef> = subs
        .iter()
        .map(|sub| InstalledRef {
            namespace: sub.metadata.namespace.clone().unwrap_or_default(),
            subscription: sub.metadata.name.clone().unwrap_or_default(),
            channel: sub.spec.channel().unwrap_or_default().to_string(),
            csv: sub
                .status
                .as_ref()
                .and_then(|st| st.installed_csv.clone())
                .filter(|c| !c.is_empty()),
        })
        .collect();
    let mut channels: Vec<&Channel> = p.channels().iter().collect();
    channels.sort_by_key(|c| (c.name != p.default_channel, c.name.clone()));
    PackageView {
        catalog: catalog.to_string(),
        name: p.name.clone(),
        display_name: s.display_name,
        description,
        provider: s.provider,
        default_channel: p.default_channel.clone(),
        has_icon: s.has_icon,
        deprecation: p.deprecation_message().map(str::to_string),
        channels: channels
            .into_iter()
            .map(|c| {
                let on_channel = installed
                    .iter()
                    .filter(|i| {
                        let followed = if i.channel.is_empty() {
                            p.default_channel.as_str()
                        } else {
                            i.channel.as_str()
                        };
                        followed == c.name
                    })
                    .find_map(|i| i.csv.as_deref());
                channel(p, c, on_channel)
            })
            .collect(),
        installed,
        problems: Vec::new(),
    }
}

/// One channel's graph, marked from the installed entry `installed` (a CSV name).
pub fn channel(p: &Package, c: &Channel, installed: Option<&str>) -> ChannelView {
    let g = c.graph();
    // The resolver's order (head first along `replaces`), then every entry that order leaves
    // out (skipped or stranded entries are still entries of the channel, and edges point at them).
    let mut ordered: Vec<&graph::Entry> = g.ordered().unwrap_or_default();
    let listed: BTreeSet<&str> = ordered.iter().map(|e| e.name.as_str()).collect();
    let rest: Vec<&graph::Entry> = g
        .entries()
        .iter()
        .filter(|e| !listed.contains(e.name.as_str()))
        .collect();
    ordered.extend(rest);
    let head = g.head().ok().map(|e| e.name.clone());
    let edges = g.edges();
    let installed = installed.and_then(|name| g.entry(name));
    let mut problem = g.problems().first().map(ToString::to_string);
    let mut path_nodes: BTreeSet<String> = BTreeSet::new();
    let mut path_edges: BTreeSet<(String, String, graph::EdgeKind)> = BTreeSet::new();
    if let Some(entry) = installed {
        path_nodes.insert(entry.name.clone());
        match entry.version.clone() {
            Some(version) => match g.upgrade_path(&Installed {
                name: Some(entry.name.clone()),
                version,
            }) {
                Ok(hops) => {
                    let mut previous = entry.name.clone();
                    for hop in hops {
                        path_edges.insert((hop.name.clone(), previous.clone(), hop.edge));
                        path_nodes.insert(hop.name.clone());
                        previous = hop.name;
                    }
                }
                Err(e) => problem = Some(format!("no upgrade path from {}: {e}", entry.name)),
            },
            None => problem = Some(format!("{} has no version: no upgrade path is drawn", entry.name)),
        }
    }
    let mut nodes: Vec<Node> = ordered
        .iter()
        .map(|e| Node {
            name: e.name.clone(),
            version: e.version.as_ref().map(ToString::to_string).unwrap_or_default(),
            head: head.as_deref() == Some(e.name.as_str()),
            installed: installed.is_some_and(|i| i.name == e.name),
            on_path: path_nodes.contains(&e.name),
            missing: false,
            deprecated: p.bundle_deprecation(&e.name).is_some(),
        })
        .collect();
    let mut missing: BTreeSet<&str> = BTreeSet::new();
    for e in &edges {
        if g.entry(&e.to).is_none() {
            missing.insert(&e.to);
        }
    }
    nodes.extend(missing.into_iter().map(|name| Node {
        name: name.to_string(),
        missing: true,
        ..Node::default()
    }));
    ChannelView {
        name: c.name.clone(),
        head,
        deprecation: p.channel_deprecation(&c.name).map(str::to_string),
        problem,
        graph: GraphView {
            nodes,
            edges: edges
                .into_iter()
                .map(|e| GraphEdge {
                    on_path: path_edges.contains(&(e.from.clone(), e.to.clone(), e.kind)),
                    kind: match e.kind {
                        graph::EdgeKind::Replaces => EdgeKind::Replaces,
                        graph::EdgeKind::Skips => EdgeKind::Skips,
                        graph::EdgeKind::SkipRange => EdgeKind::SkipRange,
                    },
                    from: e.from,
                    to: e.to,
                })
                .collect(),
        },
    }
}

fn ns_of<K: kube::Resource>(k: &K) -> &str {
    k.meta().namespace.as_deref().unwrap_or("")
}

fn name_of<K: kube::Resource>(k: &K) -> &str {
    k.meta().name.as_deref().unwrap_or("")
}

/// The installed page's operators from every Subscription, CSV, InstallPlan and Event read,
/// sorted by namespace and Subscription.
pub fn installed(
    subs: &[Subscription],
    csvs: &[ClusterServiceVersion],
    plans: &[InstallPlan],
    events: &[Event],
) -> Vec<InstalledView> {
    let mut out: Vec<InstalledView> = subs
        .iter()
        .map(|sub| {
            let ns = ns_of(sub);
            let status = sub.status.as_ref();
            let installed_csv = status.and_then(|s| s.installed_csv.clone()).unwrap_or_default();
            let current_csv = status.and_then(|s| s.current_csv.clone()).unwrap_or_default();
            let csv = |name: &str| {
                csvs.iter()
                    .find(|c| ns_of(*c) == ns && name_of(*c) == name && !name.is_empty())
            };
            let shown = csv(&installed_csv).or_else(|| csv(&current_csv));
            let pending_plan = waiting_upgrade(sub, plans).and_then(|csv_name| {
                let plan = install_plan_name(sub)
                    .and_then(|n| plans.iter().find(|p| ns_of(*p) == ns && name_of(*p) == n))
                    .or_else(|| {
                        plans.iter().find(|p| {
                            ns_of(*p) == ns && p.spec.cluster_service_version_names.contains(&csv_name)
                        })
                    })?;
                Some(PendingPlan {
                    name: name_of(plan).to_string(),
                    csvs: plan.spec.cluster_service_version_names.clone(),
                })
            });
            let mut conditions: Vec<ConditionView> = status
                .map(|s| {
                    s.conditions
                        .iter()
                        .map(|c| ConditionView {
                            owner: "Subscription".into(),
                            type_: c.type_.to_string(),
                            status: c.status.to_string(),
                            reason: c.reason.clone().unwrap_or_default(),
                            message: c.message.clone().unwrap_or_default(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            if let Some(st) = shown.and_then(|c| c.status.as_ref()) {
                conditions.extend(st.conditions.iter().rev().take(3).map(|c| {
                    ConditionView {
                        owner: "ClusterServiceVersion".into(),
                        type_: c
                            .phase
                            .as_ref()
                            .map(|p| p.as_str().to_string())
                            .unwrap_or_default(),
                        status: String::new(),
                        reason: c
                            .reason
                            .as_ref()
                            .map(|r| r.as_str().to_string())
                            .unwrap_or_default(),
                        message: c.message.clone().unwrap_or_default(),
                    }
                }));
            }
            let mut related: BTreeSet<(&str, &str)> = BTreeSet::new();
            related.insert(("Subscription", name_of(sub)));
            for name in [&installed_csv, &current_csv] {
                related.insert(("ClusterServiceVersion", name.as_str()));
            }
            if let Some(p) = install_plan_name(sub) {
                related.insert(("InstallPlan", p));
            }
            let events = events_of(events, ns, &related);
            InstalledView {
                namespace: ns.to_string(),
                subscription: name_of(sub).to_string(),
                package: sub.spec.name.clone(),
                channel: sub.spec.channel().unwrap_or_default().to_string(),
                catalog: format!("{}/{}", sub.spec.source_namespace, sub.spec.source),
                state: status
                    .and_then(|s| s.state.as_ref())
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_default(),
                installed_csv,
                current_csv,
                csv_phase: shown
                    .and_then(|c| c.status.as_ref())
                    .and_then(|s| s.phase.as_ref())
                    .map(|p| p.as_str().to_string())
                    .unwrap_or_default(),
                approval: sub.spec.approval().to_string(),
                pending_plan,
                conditions,
                events,
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.namespace, &a.subscription).cmp(&(&b.namespace, &b.subscription)));
    out
}

/// When an Event was last seen (RFC 3339), for sorting and showing.
fn last_seen(e: &Event) -> String {
    e.last_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string()))
        .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0.to_string()))
        .unwrap_or_default()
}

/// The newest Events of namespace `ns` about the objects `related` (kind, name).
fn events_of(events: &[Event], ns: &str, related: &BTreeSet<(&str, &str)>) -> Vec<EventView> {
    let mut mine: Vec<(String, &Event)> = events
        .iter()
        .filter(|e| {
            let o = &e.involved_object;
            o.namespace.as_deref() == Some(ns)
                && related.contains(&(o.kind.as_deref().unwrap_or(""), o.name.as_deref().unwrap_or("")))
        })
        .map(|e| (last_seen(e), e))
        .collect();
    mine.sort_by(|a, b| b.0.cmp(&a.0));
    mine.into_iter()
        .take(EVENTS_SHOWN)
        .map(|(seen, e)| EventView {
            type_: e.type_.clone().unwrap_or_default(),
            reason: e.reason.clone().unwrap_or_default(),
            object: format!(
                "{}/{}",
                e.involved_object.kind.as_deref().unwrap_or(""),
                e.involved_object.name.as_deref().unwrap_or("")
            ),
            message: e.message.clone().unwrap_or_default(),
            last_seen: seen,
        })
        .collect()
}

/// The plan page of `plan` with its compared `preview`; `approval` is the Subscription's mode
/// when known.
pub fn plan(plan: &InstallPlan, preview: &Preview) -> PlanView {
    let not_approvable = match approvable(plan) {
        Ok(Approvable::Yes) => None,
        Ok(Approvable::AlreadyApproved) => Some(format!(
            "{} is approved; the controller runs its steps (phase {}).",
            preview.install_plan,
            if preview.phase.is_empty() {
                "not reconciled yet"
            } else {
                &preview.phase
            }
        )),
        Err(e) => Some(e.to_string()),
    };
    PlanView {
        namespace: preview.namespace.clone(),
        name: preview.install_plan.clone(),
        phase: preview.phase.clone(),
        approval: plan.spec.approval.to_string(),
        approved: preview.approved,
        csvs: preview.cluster_service_version_names.clone(),
        steps: preview
            .steps
            .iter()
            .map(|s| StepView {
                kind: s.kind.clone(),
                name: s.name.clone(),
                status: s.status.clone(),
                change: s.change.clone().unwrap_or_else(|| "unknown".into()),
                fields: s
                    .fields
                    .iter()
                    .map(|f| FieldView {
                        path: f.path.clone(),
                        before: f.before.as_ref().map(ToString::to_string).unwrap_or_default(),
                        after: f.after.as_ref().map(ToString::to_string).unwrap_or_default(),
                    })
                    .collect(),
                note: s.note.clone(),
                crd_verdict: s.crd_verdict.clone(),
            })
            .collect(),
        grants: preview
            .grants
            .iter()
            .map(|g| GrantView {
                role: g.role.clone(),
                scope: match &g.scope {
                    Scope::Cluster => "cluster-wide".into(),
                    Scope::Namespace(ns) => format!("namespace {ns}"),
                },
                api_groups: g
                    .api_groups
                    .iter()
                    .map(|group| {
                        if group.is_empty() {
                            "core".to_string()
                        } else {
                            group.clone()
                        }
                    })
                    .collect(),
                resources: g.resources.clone(),
                verbs: g.verbs.clone(),
                flags: g.flags.iter().map(|f| f.label().to_string()).collect(),
            })
            .collect(),
        images: preview.images.clone(),
        not_approvable,
    }
}

#[cfg(test)]
mod tests;
