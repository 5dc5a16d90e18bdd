//! copies: `cargo xtask bench-copies`: copied CSVs off the install path (issue 22 item 2). One
//! AllNamespaces operator is installed while N namespaces exist, and the figures are printed
//! beside their targets:
//!   succeeded         Subscription created → CSV Succeeded (the cluster's rollout included)
//!   controller-share  the controller's part of it: Subscription created → Deployment created,
//!                     plus Deployment available → CSV Succeeded (kwok's rollout left out).
//!                     Target <= 2 s at 500 namespaces, and no higher than with none (run
//!                     --namespaces 0 to compare).
//!   copies-present    Subscription created → a copy in every namespace (N + the default ones).
//!                     Target <= 60 s.
//!   late-copies       M namespaces created after that → a copy in each of them.
//! Upstream OLM's figures on the same cluster are not taken here: its peer (tests/peers/olm) is
//! not built by this bench. Needs nothing else running an olm-controller against the cluster.
//! Leaves nothing behind: its namespaces (label olmrs-bench-copies=true) are deleted at the end,
//! and its controller stopped.

use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams},
    runtime::watcher,
};
use serde_json::{Value, json};

use crate::{
    args::{CopiesArgs, default_binary},
    cluster::{Cluster, Controller},
    summary::{self, Figure, Op},
};

const LABEL: &str = "olmrs-bench-copies";
const PACKAGE: &str = "bench-copies";

/// The one-bundle AllNamespaces catalog (JSON lines).
pub fn fixture_catalog() -> String {
    use base64::Engine as _;
    let csv_name = format!("{PACKAGE}.v1.0.0");
    let csv = json!({"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":csv_name},
     "spec":{"displayName":"Bench Copies","version":"1.0.0",
      "installModes":[{"type":"OwnNamespace","supported":true},{"type":"SingleNamespace","supported":true},
                      {"type":"MultiNamespace","supported":false},{"type":"AllNamespaces","supported":true}],
      "install":{"strategy":"deployment","spec":{"deployments":[{"name":PACKAGE,"spec":{"replicas":1,
       "selector":{"matchLabels":{"app":PACKAGE}},
       "template":{"metadata":{"labels":{"app":PACKAGE}},"spec":{"containers":[{"name":"manager",
        "image":"registry.example.com/bench:1.0.0","resources":{"requests":{"cpu":"1m","memory":"4Mi"}}}]}}}}]}}}});
    let data = base64::engine::general_purpose::STANDARD.encode(csv.to_string());
    [
        json!({"schema":"olm.package","name":PACKAGE,"defaultChannel":"stable"}),
        json!({"schema":"olm.channel","package":PACKAGE,"name":"stable","entries":[{"name":csv_name}]}),
        json!({"schema":"olm.bundle","name":csv_name,"package":PACKAGE,"image":"registry.example.com/bench-bundle:1.0.0",
               "properties":[{"type":"olm.package","value":{"packageName":PACKAGE,"version":"1.0.0"}},
                             {"type":"olm.bundle.object","value":{"data":data}}]}),
    ]
    .iter()
    .map(|d| format!("{d}\n"))
    .collect()
}

/// `yes`, `NO` or `n/a` (not measured), as the script printed.
pub fn verdict(figure: &Figure) -> &'static str {
    match (figure.value, figure.met()) {
        (None, _) => "n/a",
        (Some(_), Some(true)) => "yes",
        (Some(_), _) => "NO",
    }
}

/// The script's table: figure, seconds, target, met.
pub fn table(figures: &[Figure]) -> String {
    let mut out = format!("{:<18} {:>9} {:>9}  met\n", "figure", "seconds", "target");
    for f in figures {
        let value = f.value.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
        let (target, met) = match f.target {
            Some(t) => (t.limit.to_string(), verdict(f)),
            None => ("-".to_owned(), "-"),
        };
        out.push_str(&format!("{:<18} {value:>9} {target:>9}  {met}\n", f.name));
    }
    out
}

/// First times seen: the Deployment created and available, the CSV Succeeded.
#[derive(Default)]
struct Seen {
    created: Option<Instant>,
    available: Option<Instant>,
    succeeded: Option<Instant>,
}

fn olm(version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("operators.coreos.com", version, kind),
        plural,
    )
}

async fn create(api: &Api<DynamicObject>, value: Value) -> anyhow::Result<()> {
    let obj: DynamicObject = serde_json::from_value(value)?;
    api.create(&PostParams::default(), &obj)
        .await
        .with_context(|| format!("failed to create {}", obj.metadata.name.unwrap_or_default()))?;
    Ok(())
}

async fn create_namespaces(client: &kube::Client, names: &[String]) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(names.to_vec())
        .map(|name| {
            let api = api.clone();
            async move {
                let ns: Namespace =
                    serde_json::from_value(json!({"metadata": {"name": name, "labels": {LABEL: "true"}}}))?;
                api.create(&PostParams::default(), &ns)
                    .await
                    .with_context(|| format!("failed to create namespace {name}"))?;
                Ok(())
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    results.into_iter().collect()
}

/// Active (not Terminating) namespaces.
async fn active(client: &kube::Client) -> anyhow::Result<usize> {
    let api: Api<Namespace> = Api::all(client.clone());
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|n| n.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating"))
        .count())
}

/// The namespaces holding a copy of `opns`'s CSV.
async fn copies(client: &kube::Client, opns: &str) -> anyhow::Result<Vec<String>> {
    let api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &olm("v1alpha1", "ClusterServiceVersion", "clusterserviceversions"),
    );
    Ok(api
        .list_metadata(&ListParams::default().labels(&format!("olm.copiedFrom={opns}")))
        .await?
        .items
        .into_iter()
        .filter_map(|c| c.metadata.namespace)
        .collect())
}

/// Runs the bench; whether every figure met its target.
pub async fn run(repo: &Path, args: CopiesArgs) -> anyhow::Result<bool> {
    let binary = args
        .controller
        .clone()
        .unwrap_or_else(|| default_binary(repo, "olm-controller"));
    let cluster = Cluster::find(repo)?;
    let client = cluster.client().await?;
    let run_id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let opns = format!("bench-copies-op-{run_id}");
    let out_dir = repo.join("target/bench-copies");
    std::fs::create_dir_all(&out_dir)?;
    measure(repo, &args, &binary, &cluster, &client, run_id, &opns, &out_dir).await
}

#[allow(clippy::too_many_arguments, reason = "one call, the bench's whole set-up")]
async fn measure(
    repo: &Path,
    args: &CopiesArgs,
    binary: &Path,
    cluster: &Cluster,
    client: &kube::Client,
    run_id: u64,
    opns: &str,
    out_dir: &Path,
) -> anyhow::Result<bool> {
    cluster.install_crds(repo)?;
    eprintln!("creating {} namespaces", args.namespaces);
    let names: Vec<String> = (1..=args.namespaces)
        .map(|i| format!("bench-copies-{run_id}-{i}"))
        .collect();
    let mut controller: Option<Controller> = None;
    let outcome = async {
        create_namespaces(client, &names).await?;
        create_namespaces(client, &[opns.to_owned()]).await?;
        let maps: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            opns,
            &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "ConfigMap"), "configmaps"),
        );
        create(&maps, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "catalog", "namespace": opns},
                              "data": {"catalog.json": fixture_catalog()}}))
        .await?;
        let sources: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), opns, &olm("v1alpha1", "CatalogSource", "catalogsources"));
        create(&sources, json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                                 "metadata": {"name": "bench", "namespace": opns},
                                 "spec": {"sourceType": "configmap", "configMap": "catalog", "displayName": "bench"}}))
        .await?;
        let groups: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), opns, &olm("v1", "OperatorGroup", "operatorgroups"));
        create(&groups, json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                                "metadata": {"name": "all", "namespace": opns}, "spec": {}}))
        .await?;

        let log = repo.join(format!("target/tmp/bench-copies-{run_id}.log"));
        let cache = repo.join("target/tmp/bench-copies-cache");
        let rust_log = std::env::var("RUST_LOG").unwrap_or_else(|_| "info,olm_rs::controller::copied_csv=debug".into());
        let started = controller.insert(Controller::start(
            binary,
            cluster,
            &["--cache-dir", &cache.to_string_lossy()],
            &log,
            &rust_log,
        )?);
        eprintln!("olm-controller ({}) pid {}, log {}", binary.display(), started.pid(), log.display());
        started.wait_ready(Duration::from_secs(60)).await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let cs = sources.get("bench").await?;
            if cs.data.pointer("/status/connectionState/lastObservedState") == Some(&json!("READY")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Every namespace's copy: the active ones of the cluster, minus the operator's own.
        let expected = active(client).await?.saturating_sub(1);

        // Watches, each event stamped with the local clock.
        let seen = Arc::new(Mutex::new(Seen::default()));
        let deployments: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            opns,
            &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("apps", "v1", "Deployment"), "deployments"),
        );
        let s = Arc::clone(&seen);
        let w1 = tokio::spawn(async move {
            let mut stream = watcher::watcher(deployments, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                let now = Instant::now();
                if let Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) = ev
                    && d.metadata.name.as_deref() == Some(PACKAGE)
                {
                    let mut s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    s.created.get_or_insert(now);
                    if d.data.pointer("/status/availableReplicas").and_then(Value::as_i64).unwrap_or(0) > 0 {
                        s.available.get_or_insert(now);
                    }
                }
            }
        });
        let csvs: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), opns, &olm("v1alpha1", "ClusterServiceVersion", "clusterserviceversions"));
        let s = Arc::clone(&seen);
        let w2 = tokio::spawn(async move {
            let mut stream = watcher::watcher(csvs, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                let now = Instant::now();
                if let Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) = ev
                    && c.data.pointer("/status/phase") == Some(&json!("Succeeded"))
                {
                    let mut s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    s.succeeded.get_or_insert(now);
                }
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;

        let t0 = Instant::now();
        let subs: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), opns, &olm("v1alpha1", "Subscription", "subscriptions"));
        create(&subs, json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                              "metadata": {"name": PACKAGE, "namespace": opns},
                              "spec": {"name": PACKAGE, "source": "bench", "sourceNamespace": opns}}))
        .await?;
        eprintln!("subscribed; waiting for Succeeded and {expected} copies");
        let deadline = Instant::now() + Duration::from_secs(600);
        let mut copies_at = None;
        while Instant::now() < deadline {
            let have = copies(client, opns).await?.len();
            // (another run's namespaces may go meanwhile)
            if copies_at.is_none() && (have >= expected || have >= active(client).await?.saturating_sub(1)) {
                copies_at = Some(Instant::now());
            }
            let succeeded = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).succeeded.is_some();
            if copies_at.is_some() && succeeded {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let (created, available, succeeded) = {
            let s = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            (s.created, s.available, s.succeeded)
        };
        w1.abort();
        w2.abort();

        let mut late_s = None;
        if copies_at.is_some() && args.late > 0 {
            let late: Vec<String> = (1..=args.late).map(|i| format!("bench-copies-{run_id}-late-{i}")).collect();
            let t1 = Instant::now();
            create_namespaces(client, &late).await?;
            let late_deadline = Instant::now() + Duration::from_secs(120);
            while Instant::now() < late_deadline {
                let have = copies(client, opns).await?.iter().filter(|n| n.contains("-late-")).count();
                if have >= args.late {
                    late_s = Some(t1.elapsed().as_secs_f64());
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        let secs = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
        let share = match (created, available, succeeded) {
            (Some(c), Some(a), Some(s)) => Some(secs(t0, c) + secs(a, s)),
            _ => None,
        };
        let figures = vec![
            Figure::new("succeeded", succeeded.map(|s| secs(t0, s)), "s"),
            Figure::new("controller-share", share, "s").target(Op::AtMost, 2.0),
            Figure::new("copies-present", copies_at.map(|c| secs(t0, c)), "s").target(Op::AtMost, 60.0),
            Figure::new(&format!("late-copies({})", args.late), late_s, "s"),
        ];
        anyhow::Ok((expected, figures))
    }
    .await;

    // Clean-up: the namespaces go while the controller still runs (its CSV's finalizer is the
    // controller's), then the controller stops.
    let _ = cluster
        .kubectl()
        .args(["delete", "ns", "-l", &format!("{LABEL}=true"), "--wait=false"])
        .output();
    let _ = cluster
        .kubectl()
        .args(["wait", "--for=delete", &format!("ns/{opns}"), "--timeout=120s"])
        .output();
    if let Some(mut c) = controller {
        c.stop(Duration::from_secs(10));
    }
    let (expected, mut figures) = outcome?;
    if let Some(path) = &args.expect {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("failed to read {}", path.display()))?;
        summary::apply_expect(&mut figures, &text, &path.display().to_string())?;
    }
    println!();
    println!(
        "bench-copies: {} namespaces ({expected} copies expected), controller {}",
        args.namespaces,
        binary.display()
    );
    print!("{}", table(&figures));
    println!(
        "upstream OLM v0 on the same cluster: not run (its peer in tests/peers/olm is not built by this bench)"
    );
    summary::write(out_dir, &figures)?;
    println!("figures in {}", out_dir.join("figures.tsv").display());
    Ok(summary::verdict(&figures, args.expect.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_each_figure_beside_its_target() {
        let figures = vec![
            Figure::new("succeeded", Some(3.456), "s"),
            Figure::new("controller-share", Some(2.5), "s").target(Op::AtMost, 2.0),
            Figure::new("copies-present", Some(12.0), "s").target(Op::AtMost, 60.0),
            Figure::new("late-copies(20)", None, "s"),
        ];
        assert_eq!(
            table(&figures),
            "figure               seconds    target  met\n\
             succeeded               3.46         -  -\n\
             controller-share        2.50         2  NO\n\
             copies-present         12.00        60  yes\n\
             late-copies(20)            -         -  -\n"
        );
        assert_eq!(
            verdict(&Figure::new("x", None, "s").target(Op::AtMost, 2.0)),
            "n/a"
        );
        assert_eq!(
            verdict(&Figure::new("x", Some(5.0), "s").target(Op::Below, 5.0)),
            "NO",
            "the op counts"
        );
    }

    #[test]
    fn the_fixture_catalog_is_three_json_lines() {
        let text = fixture_catalog();
        let docs: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect();
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[2]["name"], "bench-copies.v1.0.0");
    }
}
