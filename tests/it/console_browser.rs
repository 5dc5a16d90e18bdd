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
//!   another address without `--allow-remote`, `olm-controller run --console` any but loopback.
//! - `olm-controller run --console 127.0.0.1:PORT` serves the same pages read-only from its
//!   caches: over plain HTTP the catalogs, the installed operators and a waiting plan's preview,
//!   the approval refused, a foreign `Host` refused, and a change told on the event stream; in
//!   the browser, the read-only plan page passes the accessibility checks.
//!
//! Screenshots of each page go to `target/console-screens/`. Without Chromium the browser tests
//! skip (fail under `CI=true`); the cluster test also needs the local cluster (`tests/cluster/up`).

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use crate::support::{
    browser::Browser,
    cluster::{TestCluster, repo_root, wait_for},
    e2e::{Controller, free_port, tmp_path},
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
fn olm_controller_refuses_a_console_address_that_is_not_loopback_and_names_the_way_in() {
    for address in ["0.0.0.0:8443", "10.1.2.3:8443"] {
        let out = Command::new(env!("CARGO_BIN_EXE_olm-controller"))
            .args([
                "run",
                "--console",
                address,
                "--kubeconfig",
                "/nonexistent/kubeconfig",
            ])
            .output()
            .expect("running olm-controller");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("error: --console {address} is not a loopback address")),
            "{stderr}"
        );
        assert!(
            stderr.contains("kubectl -n NAMESPACE port-forward deploy/olm-controller PORT:PORT"),
            "{stderr}"
        );
    }
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

/// The tests that run a controller run one at a time: each controller watches every namespace,
/// so two would act on each other's Subscriptions and plans.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn a_manual_install_plan_is_approved_from_its_page_and_the_csv_succeeds() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let _serial = SERIAL.lock().await;
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
    subscribe_redis_manually(&cluster, &ns_name).await;
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

/// `METHOD path` on `addr` with `Host: host` (and `body` as a form when not empty): the status
/// code and the body; `(0, why)` while nothing listens (the controller is still starting).
/// Plain HTTP/1.1 over a socket, as a browser would send it.
fn http(addr: SocketAddr, host: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = match TcpStream::connect(addr) {
        Ok(stream) => stream,
        Err(e) => return (0, format!("cannot connect to {addr}: {e}")),
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let form = if body.is_empty() {
        String::new()
    } else {
        format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        )
    };
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{form}Connection: close\r\n\r\n{body}"
    )
    .expect("sending the request");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("reading the answer");
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn the_controller_serves_the_pages_read_only_from_its_caches_on_loopback() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let _serial = SERIAL.lock().await;
    cluster.install_olm_crds("console-browser-test");
    let ns = cluster.namespace("console-ro").await;
    let ns_name = ns.name().to_string();
    let addr = free_port();
    let host = addr.to_string();
    let controller = Controller::start(
        cluster.kubeconfig_path(),
        tmp_path("console-controller.log"),
        vec!["--console".into(), host.clone().into()],
        &[],
    );
    subscribe_redis_manually(&cluster, &ns_name).await;

    // The first page: the CatalogSource, once the controller has loaded it, with its packages.
    let catalog = format!("{ns_name}/olm-rs-catalog");
    let overview = wait_for("the catalog on the first page", WAIT, || {
        let (status, body) = http(addr, &host, "GET", "/", "");
        let loaded = status == 200
            && body.contains("olm-rs catalog")
            && body.contains(&format!("/package?catalog={}", catalog.replace('/', "%2F")));
        async move { loaded.then_some(body) }
    })
    .await;
    assert!(overview.contains("redis-operator"), "{overview}");

    // The installed page: the Subscription with its waiting plan, from the stores.
    let plans: Api<InstallPlan> = Api::namespaced(cluster.client(), &ns_name);
    let row = format!("data-subscription=\"{ns_name}/redis-operator\"");
    let installed = wait_for(
        "the Subscription's waiting plan on the installed page",
        WAIT,
        || {
            let (status, body) = http(addr, &host, "GET", "/installed", "");
            let shown = status == 200 && body.contains(&row) && body.contains("class=\"pending\"");
            async move { shown.then_some(body) }
        },
    )
    .await;
    assert!(installed.contains("Events are not shown"), "{installed}");
    let plan_name = plans
        .list(&Default::default())
        .await
        .expect("listing InstallPlans")
        .items
        .into_iter()
        .find(|p| {
            p.status
                .as_ref()
                .is_some_and(|s| s.phase.as_str() == "RequiresApproval")
        })
        .and_then(|p| p.metadata.name)
        .expect("a plan waiting for approval");
    assert!(installed.contains(&plan_name), "{installed}");

    // The plan page: the pure preview, no form; the approval is refused and nothing changes.
    let plan_path = format!("/plan?namespace={ns_name}&name={plan_name}");
    let (status, page) = http(addr, &host, "GET", &plan_path, "");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("redis-operator.v0.2.1"), "{page}");
    assert!(page.contains("Permissions granted"), "{page}");
    assert!(page.contains("ghcr.io/olm-rs/redis-operator"), "{page}");
    assert!(page.contains("This console is read-only"), "{page}");
    assert!(page.contains("not compared here (no API request)"), "{page}");
    assert!(!page.contains("<form class=\"approve\""), "{page}");
    let (status, refused) = http(
        addr,
        &host,
        "POST",
        "/plan/approve",
        &format!("namespace={ns_name}&name={plan_name}&csrf=guess"),
    );
    assert_eq!(status, 403, "{refused}");
    assert!(refused.contains("kubectl olm approve"), "{refused}");
    assert!(refused.contains("kubectl olm console"), "{refused}");
    let plan = plans.get(&plan_name).await.expect("the plan");
    assert!(!plan.spec.approved, "the console approved nothing");

    // The console's guards stay: another name in Host is refused (DNS rebinding).
    let (status, _) = http(addr, "evil.example:80", "GET", "/", "");
    assert_eq!(status, 421);

    // Pages follow the stores: approving with the API tells the event stream.
    let mut events = TcpStream::connect(addr).expect("connecting to the event stream");
    events
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    write!(events, "GET /events HTTP/1.1\r\nHost: {host}\r\n\r\n").expect("asking for events");
    let mut head = [0u8; 512];
    let n = events.read(&mut head).expect("the event stream's head");
    let head = String::from_utf8_lossy(&head[..n]).to_string();
    assert!(head.contains("text/event-stream"), "{head}");
    plans
        .patch(
            &plan_name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"approved": true}})),
        )
        .await
        .expect("approving with the API");
    let mut told = String::new();
    let mut buf = [0u8; 1024];
    while !told.contains("event: change") {
        let n = events.read(&mut buf).expect("an event within 30 s");
        assert!(n > 0, "the event stream ended: {told}");
        told.push_str(&String::from_utf8_lossy(&buf[..n]));
    }

    // The installed page then shows the CSV it installed Succeeded.
    wait_for("the installed CSV Succeeded on the installed page", WAIT, || {
        let (_, body) = http(addr, &host, "GET", "/installed", "");
        async move {
            body.contains("<span class=\"phase Succeeded\">Succeeded</span>")
                .then_some(())
        }
    })
    .await;

    // In the browser, when there is one: the read-only plan page has no Approve button and
    // passes the accessibility checks.
    if let Some(mut browser) = Browser::launch().await {
        browser.goto(&format!("http://{host}{plan_path}")).await;
        browser.wait_for_load("the read-only plan page").await;
        assert_eq!(
            browser.eval("document.getElementById('approve') === null").await,
            json!(true)
        );
        assert_eq!(accessibility_problems(&mut browser).await, Vec::<String>::new());
        browser.screenshot(&screen("controller-plan-read-only")).await;
    }
    drop(events);
    // The namespace goes while the controller runs: its CSV's cleanup finalizer needs it.
    ns.delete_and_wait().await;
    drop(controller);
}

/// The built-in catalog as the CatalogSource `olm-rs-catalog`, an OwnNamespace group and a Manual
/// Subscription to redis-operator starting at 0.2.1, in `ns_name`.
async fn subscribe_redis_manually(cluster: &TestCluster, ns_name: &str) {
    create::<CatalogSource>(
        cluster,
        ns_name,
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "olm-rs-catalog"},
            "spec": {"sourceType": "builtin", "displayName": "olm-rs catalog", "publisher": "olm-rs"},
        }),
    )
    .await;
    create::<OperatorGroup>(
        cluster,
        ns_name,
        json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "redis-og"},
            "spec": {"targetNamespaces": [ns_name]},
        }),
    )
    .await;
    create::<Subscription>(
        cluster,
        ns_name,
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
}
