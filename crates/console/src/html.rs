//! html: the pages, rendered on the server from the view types (pure: values in, HTML text out).
//!
//! Every text that comes from a catalog or the cluster goes through [`escape`]; nothing else
//! builds markup from data. Pages work without JavaScript (links, a GET form for search, a POST
//! form for approval); the script only filters the package list as one types and replaces
//! `<main>` when the server says something changed. Accessibility: one `<h1>` per page, every
//! form control has a `<label>`, tables have header cells, the graph has a title and a
//! description in words, and a skip link leads to the content.

use std::fmt::Write;

pub use crate::escape::{escape, query_value};
use crate::view::{
    ChannelView, InstalledPage, InstalledView, Overview, PackageSummary, PackageView, PlanView,
};

/// The link to a package's page.
pub fn package_href(catalog: &str, name: &str) -> String {
    format!(
        "/package?catalog={}&amp;name={}",
        query_value(catalog),
        query_value(name)
    )
}

/// The link to an InstallPlan's page.
pub fn plan_href(namespace: &str, name: &str) -> String {
    format!(
        "/plan?namespace={}&amp;name={}",
        query_value(namespace),
        query_value(name)
    )
}

/// Which tab of the navigation is current.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nav {
    /// Catalogs and packages.
    Catalogs,
    /// Installed operators and their plans.
    Installed,
}

/// A whole page around `main` (already HTML).
pub fn page(title: &str, nav: Nav, main: &str) -> String {
    let current = |n| if n == nav { r#" aria-current="page""# } else { "" };
    format!(
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · olm-rs console</title><link rel="stylesheet" href="/static/console.css"><script src="/static/console.js" defer></script></head>
<body><a class="skip" href="#main">Skip to content</a>
<header><span class="brand">olm-rs console</span><nav aria-label="Sections"><a href="/"{c}>Catalogs</a><a href="/installed"{i}>Installed operators</a></nav><span id="live" role="status" aria-live="polite">Static</span></header>
<main id="main" tabindex="-1">{main}</main></body></html>
"##,
        title = escape(title),
        c = current(Nav::Catalogs),
        i = current(Nav::Installed),
    )
}

/// The filter of the first page (query parameters `q`, `catalog`, `provider`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub struct Filter {
    /// Words every shown package must contain (name, display name, provider, description, keywords).
    #[serde(default)]
    pub q: String,
    /// Only this catalog (its key).
    #[serde(default)]
    pub catalog: String,
    /// Only this provider.
    #[serde(default)]
    pub provider: String,
}

impl Filter {
    /// Whether `p` passes the filter.
    pub fn keeps(&self, p: &PackageSummary) -> bool {
        if !self.catalog.is_empty() && p.catalog != self.catalog {
            return false;
        }
        if !self.provider.is_empty() && p.provider != self.provider {
            return false;
        }
        let words: Vec<String> = self.q.split_whitespace().map(str::to_lowercase).collect();
        if words.is_empty() {
            return true;
        }
        let text = search_text(p);
        words.iter().all(|w| text.contains(w.as_str()))
    }
}

/// What the search looks in, lowercased.
fn search_text(p: &PackageSummary) -> String {
    let mut text = String::with_capacity(p.name.len() + p.display_name.len() + p.summary.len() + 32);
    for part in [&p.name, &p.display_name, &p.provider, &p.summary] {
        text.push_str(&part.to_lowercase());
        text.push(' ');
    }
    for k in &p.keywords {
        text.push_str(&k.to_lowercase());
        text.push(' ');
    }
    text
}

/// The first page: catalogs, the search form, and the packages that pass `filter`.
pub fn overview(ov: &Overview, filter: &Filter) -> String {
    let mut out = String::with_capacity(1024 + ov.packages.len() * 420);
    out.push_str("<h1>Catalogs</h1>");
    if ov.catalogs.is_empty() {
        out.push_str(r#"<p class="empty">No catalog: the cluster has no CatalogSource you may read, and no <code>--catalog</code> was given.</p>"#);
    } else {
        out.push_str(r#"<table class="catalogs"><caption>Catalogs</caption><thead><tr><th scope="col">Catalog</th><th scope="col">Publisher</th><th scope="col">Packages</th><th scope="col">Status</th></tr></thead><tbody>"#);
        for c in &ov.catalogs {
            let _ = write!(
                out,
                r#"<tr><th scope="row">{name} <span class="key">{key}</span></th><td>{publisher}</td><td>{n}</td><td>{status}</td></tr>"#,
                name = escape(&c.display_name),
                key = escape(&c.key),
                publisher = escape(&c.publisher),
                n = c.packages,
                status = c.problem.as_deref().map_or_else(
                    || r#"<span class="ok">read</span>"#.to_string(),
                    |p| format!(r#"<span class="problem">{}</span>"#, escape(p))
                ),
            );
        }
        out.push_str("</tbody></table>");
    }
    let mut providers: Vec<&str> = ov
        .packages
        .iter()
        .map(|p| p.provider.as_str())
        .filter(|p| !p.is_empty())
        .collect();
    providers.sort_unstable();
    providers.dedup();
    out.push_str(r#"<h2 id="packages-h">Packages</h2><form class="filters" role="search" method="get" action="/" aria-labelledby="packages-h">"#);
    let _ = write!(
        out,
        r#"<label for="q">Search</label><input id="q" name="q" type="search" value="{}" placeholder="name, provider, keyword" autocomplete="off">"#,
        escape(&filter.q)
    );
    out.push_str(r#"<label for="catalog">Catalog</label><select id="catalog" name="catalog"><option value="">All catalogs</option>"#);
    for c in &ov.catalogs {
        option(&mut out, &c.key, &c.display_name, filter.catalog == c.key);
    }
    out.push_str(r#"</select><label for="provider">Provider</label><select id="provider" name="provider"><option value="">All providers</option>"#);
    for p in providers {
        option(&mut out, p, p, filter.provider == p);
    }
    out.push_str(r#"</select><button type="submit">Filter</button></form>"#);
    let shown: Vec<&PackageSummary> = ov.packages.iter().filter(|p| filter.keeps(p)).collect();
    let _ = write!(
        out,
        r#"<p id="count" role="status">{} of {} packages</p><ul class="packages" aria-labelledby="packages-h">"#,
        shown.len(),
        ov.packages.len()
    );
    for p in shown {
        package_item(&mut out, p);
    }
    out.push_str("</ul>");
    out
}

/// An `<option>`.
fn option(out: &mut String, value: &str, label: &str, selected: bool) {
    let _ = write!(
        out,
        r#"<option value="{}"{}>{}</option>"#,
        escape(value),
        if selected { " selected" } else { "" },
        escape(label)
    );
}

/// One package of the list.
fn package_item(out: &mut String, p: &PackageSummary) {
    let _ = write!(
        out,
        r#"<li data-text="{text}" data-catalog="{cat}" data-provider="{prov}">{icon}<div><a href="{href}">{display}</a> <span class="version">{latest}</span><div class="meta">{provider} · {name} · {catshort}</div><p>{summary}</p></div></li>"#,
        text = escape(&search_text(p)),
        cat = escape(&p.catalog),
        prov = escape(&p.provider),
        icon = icon(&p.catalog, &p.name, p.has_icon, 32),
        href = package_href(&p.catalog, &p.name),
        display = escape(&p.display_name),
        latest = escape(&p.latest),
        provider = if p.provider.is_empty() {
            "unknown provider".to_string()
        } else {
            escape(&p.provider)
        },
        name = escape(&p.name),
        catshort = escape(&p.catalog),
        summary = escape(&p.summary),
    );
}

/// A package icon (decorative: the name is next to it), or a placeholder of the same size.
fn icon(catalog: &str, name: &str, has_icon: bool, size: u32) -> String {
    if has_icon {
        format!(
            r#"<img class="icon" src="/icon?catalog={}&amp;name={}" alt="" width="{size}" height="{size}" loading="lazy">"#,
            query_value(catalog),
            query_value(name)
        )
    } else {
        format!(r#"<span class="icon none s{size}" aria-hidden="true"></span>"#)
    }
}

/// A package's page: what it is, its channels and each channel's graph.
pub fn package(p: &PackageView) -> String {
    let mut out = String::with_capacity(4096 + p.channels.len() * 8192);
    let _ = write!(
        out,
        r#"<nav aria-label="Breadcrumb" class="crumbs"><a href="/">Catalogs</a> › <a href="/?catalog={}">{}</a> › {}</nav><div class="title">{}<h1>{}</h1></div>"#,
        query_value(&p.catalog),
        escape(&p.catalog),
        escape(&p.name),
        icon(&p.catalog, &p.name, p.has_icon, 48),
        escape(&p.display_name),
    );
    let _ = write!(
        out,
        r#"<dl class="facts"><dt>Package</dt><dd>{}</dd><dt>Provider</dt><dd>{}</dd><dt>Catalog</dt><dd>{}</dd><dt>Default channel</dt><dd>{}</dd>"#,
        escape(&p.name),
        escape(&p.provider),
        escape(&p.catalog),
        escape(&p.default_channel)
    );
    if p.installed.is_empty() {
        out.push_str("<dt>Installed</dt><dd>not installed</dd>");
    }
    for i in &p.installed {
        let _ = write!(
            out,
            "<dt>Installed</dt><dd>{} in namespace {} (Subscription {}, channel {})</dd>",
            escape(i.csv.as_deref().unwrap_or("nothing yet")),
            escape(&i.namespace),
            escape(&i.subscription),
            escape(if i.channel.is_empty() {
                "default"
            } else {
                &i.channel
            }),
        );
    }
    out.push_str("</dl>");
    for problem in &p.problems {
        let _ = write!(out, r#"<p class="problem">{}</p>"#, escape(problem));
    }
    if let Some(d) = &p.deprecation {
        let _ = write!(out, r#"<p class="problem">Deprecated: {}</p>"#, escape(d));
    }
    let _ = write!(
        out,
        r#"<details class="description"><summary>Description</summary><pre>{}</pre></details>"#,
        escape(&p.description)
    );
    out.push_str(r#"<h2>Channels</h2><p class="legend" aria-hidden="true"><span class="l-head">head</span> <span class="l-installed">installed</span> <span class="l-path">path to the head</span> <span class="l-replaces">replaces</span> <span class="l-skips">skips</span> <span class="l-skipRange">skipRange</span></p>"#);
    for (i, c) in p.channels.iter().enumerate() {
        channel(&mut out, p, c, i);
    }
    out
}

/// One channel: its facts and its graph.
fn channel(out: &mut String, p: &PackageView, c: &ChannelView, index: usize) {
    let default = if c.name == p.default_channel {
        " (default)"
    } else {
        ""
    };
    let _ = write!(
        out,
        r#"<section class="channel" aria-labelledby="ch{index}"><h3 id="ch{index}">{}{default}</h3><p>Head: {} · {} entries</p>"#,
        escape(&c.name),
        escape(c.head.as_deref().unwrap_or("none")),
        c.graph.nodes.iter().filter(|n| !n.missing).count(),
    );
    if let Some(d) = &c.deprecation {
        let _ = write!(out, r#"<p class="problem">Deprecated: {}</p>"#, escape(d));
    }
    if let Some(problem) = &c.problem {
        let _ = write!(out, r#"<p class="problem">{}</p>"#, escape(problem));
    }
    let title = format!("Upgrade graph of {} channel {}", p.name, c.name);
    let _ = write!(
        out,
        r#"<div class="graph-box">{}</div></section>"#,
        crate::graph::svg(&c.graph, &format!("g{index}"), &title)
    );
}

/// The installed-operators page.
pub fn installed(page: &InstalledPage) -> String {
    let mut out = String::from("<h1>Installed operators</h1>");
    for p in &page.problems {
        let _ = write!(out, r#"<p class="problem">{}</p>"#, escape(p));
    }
    if page.operators.is_empty() {
        out.push_str(r#"<p class="empty">No Subscription in any namespace you may read. Install one with <code>kubectl olm install PACKAGE -n NAMESPACE</code>.</p>"#);
        return out;
    }
    out.push_str(r#"<table class="installed"><caption>Subscriptions in every namespace</caption><thead><tr><th scope="col">Namespace</th><th scope="col">Package</th><th scope="col">Channel</th><th scope="col">State</th><th scope="col">Installed CSV</th><th scope="col">Phase</th><th scope="col">Upgrade</th></tr></thead><tbody>"#);
    for op in &page.operators {
        operator_row(&mut out, op);
    }
    out.push_str("</tbody></table>");
    for op in &page.operators {
        operator_details(&mut out, op);
    }
    out
}

/// One row of the installed table.
fn operator_row(out: &mut String, op: &InstalledView) {
    let upgrade = match &op.pending_plan {
        Some(plan) => format!(
            r#"<a class="pending" href="{}">{} waits for approval: {}</a>"#,
            plan_href(&op.namespace, &plan.name),
            escape(&plan.name),
            escape(&plan.csvs.join(", "))
        ),
        None if op.state == "UpgradeAvailable" || op.state == "UpgradePending" => escape(&op.current_csv),
        None => "—".to_string(),
    };
    let _ = write!(
        out,
        r#"<tr data-subscription="{ns}/{sub}"><td>{ns}</td><th scope="row"><a href="{href}">{pkg}</a> <span class="key">{sub}</span></th><td>{ch}</td><td><span class="state {state}">{state}</span></td><td>{csv}</td><td><span class="phase {phase}">{phase}</span></td><td>{upgrade}</td></tr>"#,
        ns = escape(&op.namespace),
        sub = escape(&op.subscription),
        href = package_href(&op.catalog, &op.package),
        pkg = escape(&op.package),
        ch = escape(if op.channel.is_empty() {
            "default"
        } else {
            &op.channel
        }),
        state = escape(if op.state.is_empty() { "Unknown" } else { &op.state }),
        csv = escape(or_dash(&op.installed_csv)),
        phase = escape(or_dash(&op.csv_phase)),
    );
}

/// `text`, or a dash when it is empty.
fn or_dash(text: &str) -> &str {
    if text.is_empty() { "—" } else { text }
}

/// The conditions and Events of one operator.
fn operator_details(out: &mut String, op: &InstalledView) {
    let _ = write!(
        out,
        r#"<details class="operator"><summary>{} in {}: conditions and recent events</summary>"#,
        escape(&op.subscription),
        escape(&op.namespace)
    );
    if op.conditions.is_empty() {
        out.push_str("<p>No conditions.</p>");
    } else {
        out.push_str(r#"<table><caption>Conditions</caption><thead><tr><th scope="col">Of</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Message</th></tr></thead><tbody>"#);
        for c in &op.conditions {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&c.owner),
                escape(&c.type_),
                escape(&c.status),
                escape(&c.reason),
                escape(&c.message)
            );
        }
        out.push_str("</tbody></table>");
    }
    if op.events.is_empty() {
        out.push_str("<p>No recent events.</p>");
    } else {
        out.push_str(r#"<table><caption>Recent events</caption><thead><tr><th scope="col">Last seen</th><th scope="col">Type</th><th scope="col">Object</th><th scope="col">Reason</th><th scope="col">Message</th></tr></thead><tbody>"#);
        for e in &op.events {
            let _ = write!(
                out,
                r#"<tr class="{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                escape(&e.type_),
                escape(&e.last_seen),
                escape(&e.type_),
                escape(&e.object),
                escape(&e.reason),
                escape(&e.message)
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("</details>");
}

/// An InstallPlan's page: the preview, and the Approve form when it can be approved (`csrf` is
/// the token the form carries; `None` serves the page read-only).
pub fn plan(p: &PlanView, csrf: Option<&str>) -> String {
    let mut out = String::with_capacity(4096);
    let _ = write!(
        out,
        r#"<nav aria-label="Breadcrumb" class="crumbs"><a href="/installed">Installed operators</a> › {ns} › {name}</nav><h1>InstallPlan {name}</h1><dl class="facts"><dt>Namespace</dt><dd>{ns}</dd><dt>Phase</dt><dd><span class="phase {phase}" id="plan-phase">{phase}</span></dd><dt>Approval</dt><dd>{approval}</dd><dt>Approved</dt><dd id="plan-approved">{approved}</dd><dt>Installs</dt><dd>{csvs}</dd></dl>"#,
        ns = escape(&p.namespace),
        name = escape(&p.name),
        phase = escape(if p.phase.is_empty() { "Pending" } else { &p.phase }),
        approval = escape(&p.approval),
        approved = if p.approved { "yes" } else { "no" },
        csvs = escape(&p.csvs.join(", ")),
    );
    match (&p.not_approvable, csrf) {
        (None, Some(token)) => {
            let _ = write!(
                out,
                r#"<form class="approve" method="post" action="/plan/approve"><input type="hidden" name="namespace" value="{}"><input type="hidden" name="name" value="{}"><input type="hidden" name="csrf" value="{}"><p>Approving runs every step below with the controller's rights. The approval is written as you, through your kubeconfig.</p><button type="submit" id="approve">Approve {}</button></form>"#,
                escape(&p.namespace),
                escape(&p.name),
                escape(token),
                escape(&p.name),
            );
        }
        (None, None) => out.push_str(
            r#"<p class="note">This console is read-only: approve with <code>kubectl olm approve</code>, or in <code>kubectl olm console</code> on your machine.</p>"#,
        ),
        (Some(why), _) => {
            let _ = write!(out, r#"<p class="note">{}</p>"#, escape(why));
        }
    }
    out.push_str(r#"<h2>Steps</h2><table class="steps"><caption>What each step does to the cluster</caption><thead><tr><th scope="col">Kind</th><th scope="col">Name</th><th scope="col">Change</th><th scope="col">Status</th><th scope="col">Details</th></tr></thead><tbody>"#);
    for s in &p.steps {
        let mut details = String::new();
        for f in &s.fields {
            let _ = write!(
                details,
                "<div><code>{}</code>: <del>{}</del> → <ins>{}</ins></div>",
                escape(&f.path),
                escape(if f.before.is_empty() {
                    "(absent)"
                } else {
                    &f.before
                }),
                escape(if f.after.is_empty() { "(removed)" } else { &f.after }),
            );
        }
        if let Some(n) = &s.note {
            let _ = write!(details, "<div>{}</div>", escape(n));
        }
        if let Some(v) = &s.crd_verdict {
            let _ = write!(details, r#"<div class="verdict">CRD: {}</div>"#, escape(v));
        }
        let _ = write!(
            out,
            r#"<tr><td>{}</td><td>{}</td><td><span class="change {c}">{c}</span></td><td>{}</td><td>{}</td></tr>"#,
            escape(&s.kind),
            escape(&s.name),
            escape(&s.status),
            details,
            c = escape(&s.change),
        );
    }
    out.push_str("</tbody></table>");
    out.push_str("<h2>Permissions granted</h2>");
    if p.grants.is_empty() {
        out.push_str("<p>No Role or ClusterRole.</p>");
    } else {
        out.push_str(r#"<table class="grants"><caption>RBAC rules the plan grants; flagged powers in the last column</caption><thead><tr><th scope="col">Role</th><th scope="col">Scope</th><th scope="col">API groups</th><th scope="col">Resources</th><th scope="col">Verbs</th><th scope="col">Flags</th></tr></thead><tbody>"#);
        for g in &p.grants {
            let list = |v: &[String]| escape(&v.join(", "));
            let _ = write!(
                out,
                r#"<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                if g.flags.is_empty() {
                    ""
                } else {
                    r#" class="flagged""#
                },
                escape(&g.role),
                escape(&g.scope),
                list(&g.api_groups),
                list(&g.resources),
                list(&g.verbs),
                list(&g.flags),
            );
        }
        out.push_str("</tbody></table>");
    }
    out.push_str("<h2>Images</h2>");
    if p.images.is_empty() {
        out.push_str("<p>No image.</p>");
    } else {
        out.push_str(r#"<ul class="images">"#);
        for i in &p.images {
            let _ = write!(out, "<li><code>{}</code></li>", escape(i));
        }
        out.push_str("</ul>");
    }
    out
}

/// An error's page content.
pub fn error(heading: &str, message: &str) -> String {
    format!(
        r#"<h1>{}</h1><p class="problem" role="alert">{}</p><p><a href="/">Back to the catalogs</a></p>"#,
        escape(heading),
        escape(message)
    )
}

#[cfg(test)]
mod tests;
