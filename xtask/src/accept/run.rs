//! run: `cargo xtask accept` in the order of its steps: the catalog served and read, the
//! controller started, every install at once, the report, the walks, the clean-up (see the
//! module above for the steps).

use std::{
    collections::{BTreeMap, BTreeSet},
    io::BufRead as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use serde_json::{Value, json};

use super::{
    cleanup::cleanup,
    client::{Kube, OPS, SetupError},
    observe::{POLL, Settled, check_installed_webhooks, explain_requirements, wait_settled},
    plan::{self, Facts, WebhookCheck, clean},
    setup::{ARCHIVE, SOURCE_NAME, create_catalog_source, subscribe},
    walks::{PlanRecorder, check_and_report_walks, run_walks, walk_plan},
    webhooks,
};
use crate::{
    args::{AcceptArgs, Source},
    catalog::{self, Catalog},
    cluster::{Cluster, Controller},
};

/// `kubectl-olm catalog serve` on loopback gRPC and HTTP.
pub(crate) struct Serve {
    child: Child,
    grpc: String,
    http: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// The two addresses `kubectl-olm catalog serve` prints.
pub fn serve_addresses(lines: &[String]) -> (Option<String>, Option<String>) {
    let mut grpc = None;
    let mut http = None;
    for line in lines {
        if let Some((_, rest)) = line.split_once(" on http://") {
            http = rest.split_whitespace().next().map(str::to_owned);
        } else if let Some((_, rest)) = line.split_once(" on ")
            && rest.contains("(gRPC")
        {
            grpc = rest.split_whitespace().next().map(str::to_owned);
        }
    }
    (grpc, http)
}

pub(crate) fn start_serve(cli: &Path, catalog: &str, log: &Path) -> anyhow::Result<Serve> {
    let mut child = Command::new(cli)
        .args([
            "catalog",
            "serve",
            "--catalog",
            catalog,
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log)?)
        .spawn()
        .with_context(|| format!("failed to start {}", cli.display()))?;
    let Some(stdout) = child.stdout.take() else {
        bail!(SetupError("kubectl-olm catalog serve has no stdout".into()));
    };
    let mut reader = std::io::BufReader::new(stdout);
    let mut lines = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        lines.push(line);
    }
    // Keep reading its stdout so it never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = String::new();
        while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    let (grpc, http) = serve_addresses(&lines);
    let (Some(grpc), Some(http)) = (grpc, http) else {
        let _ = child.kill();
        let _ = child.wait();
        bail!(SetupError(format!(
            "kubectl-olm catalog serve did not print its addresses; see {}",
            log.display()
        )));
    };
    Ok(Serve { child, grpc, http })
}

pub(crate) async fn load_blobs(http: &str) -> anyhow::Result<Vec<Value>> {
    let addr = http.parse().with_context(|| format!("catalogd address {http}"))?;
    let text = crate::cluster::http_get_within(addr, "/api/v1/all", Duration::from_secs(300)).await?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).context("a catalogd line is not JSON"))
        .collect()
}

pub(crate) async fn install_crds(
    cluster: &Cluster,
    repo: &Path,
    kube: &Kube,
    namespace: &str,
) -> anyhow::Result<()> {
    cluster
        .install_crds(repo)
        .map_err(|e| SetupError(format!("{e:#}")))?;
    kube.create("/api/v1/namespaces", json!({"metadata": {"name": namespace}}))
        .await
}

/// Step 4: every package at once; {package: (outcome, why, seconds)} and the namespaces used.
pub(crate) async fn run_installs(
    kube: &Kube,
    facts: &BTreeMap<String, Facts>,
    packages: &[String],
    catalog_ns: &str,
    timeout: Duration,
) -> anyhow::Result<(BTreeMap<String, Settled>, Vec<String>)> {
    let namespaces: BTreeMap<String, String> = packages
        .iter()
        .map(|p| (p.clone(), plan::namespace_for("acc", p)))
        .collect();
    let mut results = BTreeMap::new();
    let mut used = Vec::new();
    let created: Vec<(String, anyhow::Result<Option<Vec<String>>>)> =
        futures::stream::iter(packages.to_vec())
            .map(|package| {
                let f = &facts[&package];
                let ns = namespaces[&package].clone();
                async move {
                    let got = match plan::choose_operator_group(f.csv.as_ref(), &ns) {
                        None => Ok(None),
                        Some((_, og)) => subscribe(kube, &package, &f.channel, &ns, &og, catalog_ns, None)
                            .await
                            .map(Some),
                    };
                    (package, got)
                }
            })
            .buffer_unordered(8)
            .collect()
            .await;
    for (package, got) in created {
        match got? {
            Some(ns) => used.extend(ns),
            None if facts[&package].csv.is_none() => {
                results.insert(
                    package.clone(),
                    (
                        "NoInlinedCSV".into(),
                        format!(
                            "the head bundle {} carries no inlined CSV (its manifests are only in its bundle image): this bench reads install modes from inlined CSVs",
                            facts[&package].head.as_deref().unwrap_or("<none>")
                        ),
                        0.0,
                    ),
                );
            }
            None => {
                results.insert(
                    package.clone(),
                    (
                        "NoInstallMode".into(),
                        "the head CSV supports no install mode".into(),
                        0.0,
                    ),
                );
            }
        }
    }
    let waiting: BTreeMap<String, String> = namespaces
        .into_iter()
        .filter(|(p, _)| !results.contains_key(p))
        .collect();
    println!(
        "{} Subscriptions created; polling every {:.0} s (timeout {:.0} s)",
        waiting.len(),
        POLL.as_secs_f64(),
        timeout.as_secs_f64()
    );
    for (package, (outcome, why, secs)) in wait_settled(kube, &waiting, timeout, &BTreeMap::new()).await? {
        let why = explain_requirements(kube, &outcome, &why).await;
        results.insert(package, (outcome, why, secs));
    }
    Ok((results, used))
}

/// Prints and writes the installs; whether every outcome is as expected.
pub(crate) fn report_installs(
    results: &BTreeMap<String, Settled>,
    expected: &BTreeMap<String, (String, String)>,
    out: &Path,
    webhooks: &BTreeMap<String, WebhookCheck>,
    compare: bool,
) -> anyhow::Result<bool> {
    let width = results.keys().map(String::len).max().unwrap_or(10);
    println!();
    for (package, (outcome, why, secs)) in results {
        let wanted = expected.get(package).map_or("<not listed>", |(o, _)| o.as_str());
        let mark = if outcome == wanted || !compare {
            String::new()
        } else {
            format!("   [expected {wanted}]")
        };
        let hooks = webhooks
            .get(package)
            .map(|(_, t)| format!(" [{t}]"))
            .unwrap_or_default();
        println!("{package:width$}  {outcome:24} {secs:6.1} s  {why}{hooks}{mark}");
    }
    let succeeded = results.values().filter(|(o, _, _)| o == "Succeeded").count();
    println!("\n{succeeded} of {} Succeeded", results.len());
    if !webhooks.is_empty() {
        let good: Vec<&String> = webhooks
            .iter()
            .filter(|(_, (ok, _))| *ok)
            .map(|(p, _)| p)
            .collect();
        let objects: usize = good.iter().map(|p| webhooks::ok_count(&webhooks[*p].1)).sum();
        println!(
            "webhook objects: {} of {} Succeeded packages with webhookdefinitions have every object present and correct ({objects} objects)",
            good.len(),
            webhooks.len()
        );
        for (package, (ok, text)) in webhooks {
            if !ok {
                println!("  {package}: {text}");
            }
        }
    }
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut tsv = "package\toutcome\twhy\tseconds\twebhooks\n".to_owned();
    for (package, (outcome, why, secs)) in results {
        let hooks = webhooks.get(package).map_or("", |(_, t)| t.as_str());
        tsv.push_str(&format!(
            "{package}\t{outcome}\t{}\t{secs}\t{hooks}\n",
            clean(why, 300)
        ));
    }
    std::fs::write(out, tsv).with_context(|| format!("failed to write {}", out.display()))?;
    println!("written {}", out.display());
    if !compare {
        println!("no --expect: outcomes reported, not compared");
        return Ok(true);
    }
    let outcomes: BTreeMap<String, String> = results
        .iter()
        .map(|(p, (o, _, _))| (p.clone(), o.clone()))
        .collect();
    let mismatches = plan::compare(&outcomes, expected, webhooks);
    for (package, got, wanted) in &mismatches {
        let why = expected.get(package).map_or("", |(_, w)| w.as_str());
        println!("MISMATCH {package}: got {got}, expected {wanted} ({why})");
    }
    println!(
        "{} of {} as expected",
        results.len() - mismatches.len(),
        results.len()
    );
    Ok(mismatches.is_empty())
}

/// Runs the bench: Ok(true) every outcome as expected, Ok(false) not, Err a set-up failure.
pub async fn run(repo: &Path, args: AcceptArgs) -> anyhow::Result<bool> {
    let bin_dir = args.bin_dir.clone().unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| repo.join("target"), PathBuf::from)
            .join("debug")
    });
    let cli = bin_dir.join("kubectl-olm");
    let controller_bin = bin_dir.join("olm-controller");
    for binary in [&cli, &controller_bin] {
        if !binary.is_file() {
            bail!(SetupError(format!(
                "{} is missing: cargo build --bin kubectl-olm --bin olm-controller (or pass --bin-dir)",
                binary.display()
            )));
        }
    }
    let default_expect = repo.join("tests/fixtures/accept-catalog/certified-v4.16.tsv");
    let (expected, compare) = match (&args.expect, &args.catalog) {
        (None, Some(_)) => (BTreeMap::new(), false),
        (path, _) => {
            let path = path.clone().unwrap_or(default_expect);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| SetupError(format!("failed to read {}: {e}", path.display())))?;
            let expected = plan::parse_expected(&text, &path.display().to_string())
                .map_err(|e| SetupError(e.to_string()))?;
            if expected.is_empty() {
                eprintln!(
                    "warning: no expected outcomes in {}: every package counts as a mismatch",
                    path.display()
                );
            }
            (expected, true)
        }
    };
    let log_dir = repo.join("target/accept-catalog");
    std::fs::create_dir_all(&log_dir)?;
    let controller_log = log_dir.join("controller.log");
    let serve_log = log_dir.join("serve.log");
    // Unique per run (as the script's mkdtemp), so two runs never share an unpacked catalog.
    let work = log_dir.join(format!("work-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let (catalog_spec, label) = match &args.catalog {
        None => {
            let archive = catalog::corpus_archive(repo, ARCHIVE).map_err(|e| SetupError(format!("{e:#}")))?;
            (Catalog::Archive(archive), ARCHIVE.to_owned())
        }
        Some(c) => (c.clone(), c.label()),
    };
    let catalog_loc = match &catalog_spec {
        Catalog::Image(image) => image.clone(),
        other => catalog::as_dir(other, &work.join("catalog"))
            .map_err(|e| SetupError(format!("{e:#}")))?
            .to_string_lossy()
            .into_owned(),
    };
    if args.check {
        let outcome = check_catalog(&cli, &catalog_loc, &label, &expected, compare, &serve_log);
        let _ = std::fs::remove_dir_all(&work);
        return outcome;
    }
    let cluster = Cluster::find(repo).map_err(|e| SetupError(format!("{e:#}")))?;
    let outcome = run_phases(
        repo,
        &args,
        &cluster,
        &cli,
        &controller_bin,
        &catalog_loc,
        &label,
        &expected,
        compare,
        &controller_log,
        &serve_log,
        &work,
    )
    .await;
    let _ = std::fs::remove_dir_all(&work);
    match &outcome {
        Ok(true) if !args.keep => {
            let _ = std::fs::remove_file(&controller_log);
            let _ = std::fs::remove_file(&serve_log);
        }
        _ => println!("logs kept: {}, {}", controller_log.display(), serve_log.display()),
    }
    outcome
}

/// `--check`: the bench's premises on the catalog, without a cluster (what the script's
/// `--self-test` checked on the real catalog). Prints each check; whether all held.
fn check_catalog(
    cli: &Path,
    catalog: &str,
    label: &str,
    expected: &BTreeMap<String, (String, String)>,
    compare: bool,
    serve_log: &Path,
) -> anyhow::Result<bool> {
    let serve = start_serve(cli, catalog, serve_log)?;
    let runtime = tokio::runtime::Handle::current();
    let blobs = tokio::task::block_in_place(|| runtime.block_on(load_blobs(&serve.http)))?;
    drop(serve);
    let facts = plan::catalog_packages(&blobs);
    let mut ok = true;
    let mut check = |held: bool, what: String| {
        println!("  {}  {what}", if held { "ok" } else { "NO" });
        ok &= held;
    };
    println!("catalog {label}: {} packages", facts.len());
    let (held, what) = plan::heads_premise(&facts);
    check(held, what);
    let mut chosen: BTreeMap<String, usize> = BTreeMap::new();
    for (package, f) in &facts {
        let mode = plan::choose_operator_group(f.csv.as_ref(), &plan::namespace_for("acc", package))
            .map_or_else(|| "none".to_owned(), |(m, _)| m);
        *chosen.entry(mode).or_default() += 1;
    }
    check(
        !chosen.contains_key("none"),
        format!("an OperatorGroup for every package: {chosen:?}"),
    );
    if compare {
        let (held, what) = plan::expect_premise(expected, &facts);
        check(held, what);
        let not: Vec<String> = expected
            .iter()
            .filter(|(_, (o, _))| o != "Succeeded")
            .map(|(p, (o, _))| format!("{p} ({o})"))
            .collect();
        println!("  expected not to succeed: {}", not.join(", "));
    }
    let mut hops = Vec::new();
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    let mut stops = Vec::new();
    for (package, f) in &facts {
        match walk_plan(cli, catalog, package, &f.channel) {
            Err(e) => check(false, format!("walk {package}: {e}")),
            Ok((tail, path)) => {
                let unique: BTreeSet<&String> = path.iter().collect();
                let known = path.iter().all(|e| *e == tail || f.entries.contains(e));
                check(
                    path.last() == f.head.as_ref()
                        && path.first() == Some(&tail)
                        && unique.len() == path.len()
                        && known,
                    format!(
                        "walk {package}: {} hop(s) from {tail} to the head",
                        path.len() - 1
                    ),
                );
                hops.push(path.len() - 1);
                match plan::choose_walk_group(&path, &f.csvs, &plan::namespace_for("accw", package)) {
                    None => *groups.entry("none".into()).or_default() += 1,
                    Some((mode, _, halt)) => {
                        if let Some((entry, modes)) = halt {
                            stops.push(format!(
                                "{package} (group {mode} from {tail}; {entry} supports {})",
                                modes.join(", ")
                            ));
                        }
                        *groups.entry(mode).or_default() += 1;
                    }
                }
            }
        }
    }
    hops.sort_unstable();
    println!(
        "  walks: {} hops in all, longest {}, {} package(s) with a one-entry walk",
        hops.iter().sum::<usize>(),
        hops.last().copied().unwrap_or(0),
        hops.iter().filter(|h| **h == 0).count()
    );
    check(
        !groups.contains_key("none"),
        format!("an OperatorGroup for every walk start: {groups:?}"),
    );
    println!(
        "  walks expected to stop at an install-mode change: {}",
        if stops.is_empty() {
            "none".to_owned()
        } else {
            stops.join(", ")
        }
    );
    println!("{}", if ok { "check passed" } else { "check FAILED" });
    Ok(ok)
}

#[allow(clippy::too_many_arguments, reason = "the bench's whole set-up, passed once")]
async fn run_phases(
    repo: &Path,
    args: &AcceptArgs,
    cluster: &Cluster,
    cli: &Path,
    controller_bin: &Path,
    catalog: &str,
    label: &str,
    expected: &BTreeMap<String, (String, String)>,
    compare: bool,
    controller_log: &Path,
    serve_log: &Path,
    work: &Path,
) -> anyhow::Result<bool> {
    let serve = start_serve(cli, catalog, serve_log)?;
    let blobs = load_blobs(&serve.http)
        .await
        .map_err(|e| SetupError(format!("{e:#}")))?;
    let facts = plan::catalog_packages(&blobs);
    let packages = plan::selected_packages(&facts, &args.package, args.limit).map_err(SetupError)?;
    let crds: Vec<String> = packages
        .iter()
        .flat_map(|p| facts[p].crds.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    println!(
        "catalog {label}: {} packages, served on {}; running {}",
        facts.len(),
        serve.grpc,
        packages.len()
    );
    let client = cluster.client().await.map_err(|e| SetupError(format!("{e:#}")))?;
    let kube = Kube(client.clone());
    install_crds(cluster, repo, &kube, &args.namespace).await?;
    let _ = std::fs::remove_file(controller_log);
    let cache = work.join("cache");
    let mut controller = Controller::start(
        controller_bin,
        cluster,
        &[
            "--namespace",
            &args.namespace,
            "--cache-dir",
            &cache.to_string_lossy(),
        ],
        controller_log,
        "info,olm_rs=debug",
    )?;
    println!(
        "olm-controller pid {}, log {}",
        controller.pid(),
        controller_log.display()
    );
    let source = match args.source {
        Source::Grpc => ("grpc", serve.grpc.clone()),
        Source::Http => ("http", format!("http://{}", serve.http)),
    };
    let mut used_ns: Vec<String> = Vec::new();
    let mut operators = BTreeSet::new();
    let phases = async {
        let log = controller.log.clone();
        let mut alive = || {
            if controller.running() {
                Ok(())
            } else {
                Err(format!("olm-controller exited; see {}", controller.log.display()))
            }
        };
        create_catalog_source(
            &kube,
            &args.namespace,
            source,
            &mut alive,
            Duration::from_secs(120),
            &log,
        )
        .await?;
        let timeout = Duration::from_secs_f64(args.timeout);
        let (results, used) = run_installs(&kube, &facts, &packages, &args.namespace, timeout).await?;
        used_ns = used;
        operators = plan::operator_names(&packages, &["acc"]);
        let outcomes: BTreeMap<String, String> = results
            .iter()
            .map(|(p, (o, _, _))| (p.clone(), o.clone()))
            .collect();
        let acc_ns: BTreeMap<String, String> = packages
            .iter()
            .map(|p| (p.clone(), plan::namespace_for("acc", p)))
            .collect();
        let hooks = check_installed_webhooks(&kube, &outcomes, &acc_ns).await;
        let mut ok = report_installs(&results, expected, &args.out, &hooks, compare)?;
        if args.walks {
            println!("\nclean-up before the walks ...");
            let leftover = cleanup(&kube, &used_ns, &crds, &operators).await?;
            used_ns.clear();
            let walkers: Vec<String> = packages
                .iter()
                .filter(|p| outcomes[*p] == "Succeeded")
                .cloned()
                .collect();
            let skipped: Vec<&String> = packages.iter().filter(|p| !walkers.contains(p)).collect();
            if !skipped.is_empty() {
                println!(
                    "walks skipped (no Succeeded install): {}",
                    skipped.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                );
            }
            println!(
                "walking {} default channels from their oldest entry",
                walkers.len()
            );
            operators = plan::operator_names(&walkers, &["accw"]);
            // olm-rs keeps at most five InstallPlans per namespace, as upstream does: record them all.
            let recorder = PlanRecorder::start(client.clone(), "accw-");
            let walk_timeout = Duration::from_secs_f64(args.walk_timeout);
            let (walks, used) = run_walks(
                &kube,
                cli,
                catalog,
                &facts,
                &walkers,
                &args.namespace,
                walk_timeout,
                &leftover,
                &recorder,
            )
            .await?;
            used_ns = used;
            drop(recorder);
            ok = check_and_report_walks(&kube, &walks, &walkers, &args.out).await? && ok;
        }
        anyhow::Ok(ok)
    }
    .await;
    if args.keep {
        println!(
            "\nkept: namespaces {} and CatalogSource {}/{SOURCE_NAME}",
            used_ns.join(", "),
            args.namespace
        );
    } else {
        println!("\ncleaning up ...");
        let cleaned = async {
            kube.delete(&format!(
                "{OPS}/v1alpha1/namespaces/{}/catalogsources/{SOURCE_NAME}",
                args.namespace
            ))
            .await?;
            cleanup(&kube, &used_ns, &crds, &operators).await
        }
        .await;
        if let Err(e) = cleaned {
            eprintln!("warning: clean-up incomplete: {e:#}");
        }
    }
    controller.stop(Duration::from_secs(30));
    drop(serve);
    phases
}
