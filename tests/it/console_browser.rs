//! The web console (`kubectl olm console`) in a real browser: headless Chromium driven over the
//! DevTools protocol (`crate::support::browser`), against the built `kubectl-olm`.
//!
//! - A package page draws its upgrade graph (the shipped catalog, no cluster needed).
//! - On the local cluster, a Manual Subscription to the shipped Redis operator: its InstallPlan
//!   is approved by clicking Approve on the plan page; the page follows the plan live (server-sent
//!   events) and the CSV reaches `Succeeded`.
//! - Accessibility basics on every page: one `<h1>`, a label for every form control, `alt` on every
//!   image, a named graph, and the keyboard reaching the search field and the links.
//!
//! - Neither binary serves the console beyond loopback by accident: `kubectl olm console` refuses
//!   another address without `--allow-remote`, `olm-controller run --console` refuses to start.
//!
//! Screenshots of each page go to `target/console-screens/`. Without Chromium the browser tests
//! skip (fail under `CI=true`); the cluster test also needs the local cluster (`tests/cluster/up`).

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use crate::support::{
    browser::Browser,
    cluster::{TestCluster, repo_root, wait_for},
    e2e::{Controller, tmp_path},
};
use kube::{Api, api::PostParams};
use olm_rs::api::{
    v1::OperatorGroup,
    v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
};
use serde_json::{Value, json};

/// How long an install on the local cluster may take.
const WAIT: Duration = Duration::from_secs(120);

/// `kubectl-olm console` as a child process, killed when dropped.
struct Console {
    child: Child,
    url: String,
}

impl Console {
    /// Starts the console on a free loopback port with `args`, and reads the URL it prints.
    fn start(args: &[&str]) -> Console {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
            .args(["console", "--address", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting kubectl-olm console");
        let stdout = child.stdout.take().expect("the console's stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("reading the console's first line");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in the console's first line: {line:?}"))
            .trim_end_matches('/')
            .to_string();
        Console { child, url }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `target/console-screens/<name>.png`.
fn screen(name: &str) -> PathBuf {
    repo_root()
        .join("target/console-screens")
        .join(format!("{name}.png"))
}

/// The accessibility basics every page must meet; returns what fails, one line each.
async fn accessibility_problems(browser: &mut Browser) -> Vec<String> {
    let found = browser
        .eval(
            r#"(() => {
  const problems = [];
  const h1 = document.querySelectorAll('h1').length;
  if (h1 !== 1) problems.push(`${h1} h1 elements`);
  for (const e of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
    if (!e.labels || e.labels.length === 0) problems.push(`no label for #${e.id || e.name}`);
  }
  for (const img of document.querySelectorAll('img')) {
    if (!img.hasAttribute('alt')) problems.push(`img without alt: ${img.src}`);
  }
  for (const svg of document.querySelectorAll('svg')) {
    const ids = (svg.getAttribute('aria-labelledby') || '').split(' ').filter(Boolean);
    if (svg.getAttribute('role') !== 'img' || ids.length === 0 || !ids.every((id) => document.getElementById(id)))
      problems.push('svg without a role and an accessible name');
  }
  for (const b of document.querySelectorAll('button, a')) {
    if (!b.textContent.trim() && !b.getAttribute('aria-label')) problems.push(`unnamed ${b.tagName}`);
  }
  if (!document.documentElement.lang) problems.push('no lang on html');
  return problems;
})()"#,
        )
        .await;
    found
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// What the keyboard focuses after each of `presses` Tab presses from the top of the page.
async fn tab_stops(browser: &mut Browser, presses: usize) -> Vec<String> {
    browser
        .eval("document.activeElement && document.activeElement.blur()")
        .await;
    let mut stops = Vec::new();
    for _ in 0..presses {
        browser.press("Tab").await;
        let stop = browser
            .eval("(() => { const e = document.activeElement; return e ? (e.id ? '#' + e.id : e.tagName.toLowerCase() + ':' + e.textContent.trim().slice(0, 40)) : ''; })()")
            .await;
        stops.push(stop.as_str().unwrap_or("").to_string());
    }
    stops
}

#[test]
fn olm_controller_refuses_to_serve_the_console_and_names_the_way_to_reach_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_olm-controller"))
        .args([
            "run",
            "--console",
            "0.0.0.0:8443",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ])
        .output()
        .expect("running olm-controller");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: --console 0.0.0.0:8443: olm-controller does not serve the web console"),
        "{stderr}"
    );
    assert!(stderr.contains("kubectl olm console"), "{stderr}");
}

#[test]
fn kubectl_olm_console_refuses_a_non_loopback_address_unless_allowed() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["console", "--address", "10.1.2.3:8422"])
        .output()
        .expect("running kubectl-olm");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a loopback address"), "{stderr}");
    assert!(stderr.contains("--allow-remote"), "{stderr}");
}

#[tokio::test]
async fn a_package_page_draws_the_upgrade_graph_of_each_channel() {
    let Some(mut browser) = Browser::launch().await else {
        return;
    };
    let catalog = repo_root()
        .join("catalog")
        .canonicalize()
        .expect("the shipped catalog");
    let console = Console::start(&[
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--catalog",
        catalog.to_str().expect("utf-8 path"),
    ]);
    browser.goto(&format!("{}/", console.url)).await;
    assert_eq!(
        browser
            .eval("document.querySelectorAll('ul.packages li').length")
            .await,
        json!(1)
    );
    assert_eq!(accessibility_problems(&mut browser).await, Vec::<String>::new());
    let stops = tab_stops(&mut browser, 6).await;
    assert_eq!(stops[0], "a:Skip to content", "{stops:?}");
    assert!(
        stops.contains(&"#q".to_string()),
        "the search field is reachable by keyboard: {stops:?}"
    );
    browser.screenshot(&screen("catalogs")).await;

    // Searching filters as one types; a word no package has hides them all.
    browser.eval("document.getElementById('q').focus()").await;
    browser.type_text("no-such-thing").await;
    browser
        .wait_until(
            "the list to be filtered",
            "document.querySelectorAll('ul.packages li:not([hidden])').length === 0",
            Duration::from_secs(5),
        )
        .await;
    browser.eval("document.getElementById('q').value = ''; document.getElementById('q').dispatchEvent(new Event('input'))").await;

    browser.click("ul.packages li a").await;
    browser
        .wait_until(
            "the package page",
            "location.pathname === '/package' && document.readyState === 'complete'",
            Duration::from_secs(10),
        )
        .await;
    let channels = browser
        .eval("[...document.querySelectorAll('section.channel h3')].map((h) => h.textContent)")
        .await;
    assert_eq!(channels, json!(["stable (default)", "alpha", "candidate"]));
    let stable_nodes = browser
        .eval("[...document.querySelectorAll('section.channel')[0].querySelectorAll('g.node:not(.missing)')].map((g) => g.dataset.name)")
        .await;
    assert_eq!(
        stable_nodes,
        json!([
            "redis-operator.v1.0.0",
            "redis-operator.v0.3.0",
            "redis-operator.v0.2.1"
        ]),
        "head first"
    );
    assert_eq!(
        browser
            .eval("document.querySelector('section.channel g.node.head').dataset.name")
            .await,
        json!("redis-operator.v1.0.0")
    );
    let edge_kinds = browser
        .eval("[...new Set([...document.querySelectorAll('section.channel path.edge')].map((p) => p.classList[1]))].sort()")
        .await;
    assert_eq!(edge_kinds, json!(["replaces", "skipRange", "skips"]));
    let icon_loaded = browser
        .eval("(() => { const i = document.querySelector('img.icon'); return i && i.complete && i.naturalWidth > 0; })()")
        .await;
    assert_eq!(icon_loaded, json!(true), "the package icon is served");
    assert_eq!(accessibility_problems(&mut browser).await, Vec::<String>::new());
    browser.screenshot(&screen("package")).await;
}

/// Creates `object` in `ns`.
async fn create<K>(cluster: &TestCluster, ns: &str, object: Value)
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(cluster.client(), ns);
    let object: K = serde_json::from_value(object).expect("a valid object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("creating an object");
}

#[tokio::test]
async fn a_manual_install_plan_is_approved_from_its_page_and_the_csv_succeeds() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let Some(mut browser) = Browser::launch().await else {
        return;
    };
    cluster.install_olm_crds("console-browser-test");
    let ns = cluster.namespace("console").await;
    let ns_name = ns.name().to_string();
    let _controller = Controller::start(
        cluster.kubeconfig_path(),
        tmp_path("console-browser-controller.log"),
        vec![],
        &[],
    );
    create::<CatalogSource>(
        &cluster,
        &ns_name,
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "olm-rs-catalog"},
            "spec": {"sourceType": "builtin", "displayName": "olm-rs catalog", "publisher": "olm-rs"},
        }),
    )
    .await;
    create::<OperatorGroup>(
        &cluster,
        &ns_name,
        json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "redis-og"},
            "spec": {"targetNamespaces": [ns_name]},
        }),
    )
    .await;
    create::<Subscription>(
        &cluster,
        &ns_name,
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "redis-operator"},
            "spec": {
                "name": "redis-operator", "channel": "stable", "installPlanApproval": "Manual",
                "source": "olm-rs-catalog", "sourceNamespace": ns_name,
                "startingCSV": "redis-operator.v0.2.1",
            },
        }),
    )
    .await;
    let plans: Api<InstallPlan> = Api::namespaced(cluster.client(), &ns_name);
    let plan = wait_for("the first InstallPlan to wait for approval", WAIT, || {
        let plans = plans.clone();
        async move {
            plans
                .list(&Default::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|p| {
                    p.status
                        .as_ref()
                        .is_some_and(|s| s.phase.as_str() == "RequiresApproval")
                })
        }
    })
    .await;
    let plan_name = plan.metadata.name.clone().expect("a name");

    let kubeconfig = cluster
        .kubeconfig_path()
        .to_str()
        .expect("utf-8 path")
        .to_string();
    let console = Console::start(&["--kubeconfig", &kubeconfig]);

    // The installed page lists the Subscription and links its waiting plan.
    browser.goto(&format!("{}/installed", console.url)).await;
    let row = format!("tr[data-subscription='{ns_name}/redis-operator']");
    browser
        .wait_until(
            "the Subscription's row with its waiting plan",
            &format!("document.querySelector(\"{row} a.pending\")"),
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(accessibility_problems(&mut browser).await, Vec::<String>::new());
    browser.screenshot(&screen("installed-pending")).await;

    // The plan page shows the preview and the Approve button; clicking it approves as the user.
    browser.click(&format!("{row} a.pending")).await;
    browser
        .wait_until(
            "the plan page",
            "location.pathname === '/plan' && document.getElementById('approve')",
            Duration::from_secs(30),
        )
        .await;
    let text = browser.eval("document.querySelector('main').innerText").await;
    let text = text.as_str().unwrap_or("");
    assert!(text.contains(&plan_name), "{text}");
    assert!(text.contains("redis-operator.v0.2.1"), "{text}");
    assert!(text.contains("Permissions granted"), "{text}");
    assert!(text.contains("ghcr.io/olm-rs/redis-operator"), "{text}");
    assert_eq!(accessibility_problems(&mut browser).await, Vec::<String>::new());
    browser.screenshot(&screen("plan")).await;
    browser.click("#approve").await;
    browser
        .wait_until(
            "the plan page after the approval",
            "location.pathname === '/plan' && document.getElementById('plan-approved') && document.getElementById('plan-approved').textContent === 'yes'",
            Duration::from_secs(30),
        )
        .await;
    let approved = plans.get(&plan_name).await.expect("the plan").spec.approved;
    assert!(approved, "the click approved the plan on the cluster");

    // The page follows the plan without a reload (server-sent events) until it is Complete.
    browser
        .wait_until(
            "the plan page to show Complete by itself",
            "document.getElementById('plan-phase').textContent === 'Complete' && Number(document.body.dataset.refreshed || 0) > 0",
            WAIT,
        )
        .await;
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(cluster.client(), &ns_name);
    wait_for("the CSV to succeed", WAIT, || {
        let csvs = csvs.clone();
        async move {
            let csv = csvs.get("redis-operator.v0.2.1").await.ok()?;
            (csv.status?.phase?.as_str() == "Succeeded").then_some(())
        }
    })
    .await;
    browser.screenshot(&screen("plan-complete")).await;

    // The installed page shows it Succeeded; the package page marks the installed version and the
    // path to the head.
    browser.goto(&format!("{}/installed", console.url)).await;
    browser
        .wait_until(
            "the installed CSV to show Succeeded",
            &format!("document.querySelector(\"{row} .phase\").textContent === 'Succeeded'"),
            WAIT,
        )
        .await;
    browser.screenshot(&screen("installed")).await;
    browser.click(&format!("{row} th a")).await;
    browser
        .wait_until(
            "the package page with the installed version",
            "location.pathname === '/package' && document.querySelector('g.node.installed')",
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(
        browser
            .eval("document.querySelector('g.node.installed').dataset.name")
            .await,
        json!("redis-operator.v0.2.1")
    );
    let path = browser
        .eval("[...document.querySelectorAll('section.channel')[0].querySelectorAll('g.node.path')].map((g) => g.dataset.name)")
        .await;
    assert_eq!(
        path,
        json!(["redis-operator.v1.0.0", "redis-operator.v0.2.1"]),
        "skipRange takes 0.2.1 straight to the head"
    );
    browser.screenshot(&screen("package-installed")).await;
    drop(console);
    ns.delete_and_wait().await;
}
