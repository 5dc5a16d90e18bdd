//! walks: each default channel walked from its oldest entry; the CSVs the namespace went through
//! (every InstallPlan seen, watched for the whole phase) compared with the path `kubectl-olm
//! catalog upgrade-path` predicts, or with the stop an install-mode change predicts.

use std::{
    collections::BTreeMap,
    path::Path,
    process::Command,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::Context as _;
use futures::StreamExt as _;
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind},
    runtime::watcher,
};
use serde_json::Value;

use super::{
    client::{Kube, OPS, s},
    observe::{explain_requirements, wait_settled},
    plan::{self, Facts, WebhookCheck, clean},
    setup::subscribe,
};

/// (oldest entry, expected path) for `package`'s `channel`, from the CLI on the package's own
/// directory.
pub(crate) fn walk_plan(
    cli: &Path,
    catalog: &str,
    package: &str,
    channel: &str,
) -> Result<(String, Vec<String>), String> {
    let own = Path::new(catalog).join(package);
    let dir = if own.is_dir() {
        own.to_string_lossy().into_owned()
    } else {
        catalog.to_owned()
    };
    let run = |args: &[&str]| -> Result<String, String> {
        let out = Command::new(cli).args(args).output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let graph = run(&[
        "catalog",
        "graph",
        package,
        "--channel",
        channel,
        "-o",
        "name",
        "--catalog",
        &dir,
    ])
    .map_err(|e| format!("kubectl-olm catalog graph {package}: {e}"))?;
    let tail = graph
        .lines()
        .last()
        .map(|l| l.trim().trim_start_matches("bundle/").to_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("kubectl-olm catalog graph {package}: no output"))?;
    let path = run(&[
        "catalog",
        "upgrade-path",
        package,
        "--from",
        &tail,
        "--channel",
        channel,
        "-o",
        "json",
        "--catalog",
        &dir,
    ])
    .map_err(|e| format!("kubectl-olm catalog upgrade-path {package} --from {tail}: {e}"))?;
    // The head itself prints a sentence, not JSON: a one-entry walk.
    let hops = if path.trim_start().starts_with('{') {
        serde_json::from_str(&path).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    Ok((tail.clone(), plan::expected_walk(&tail, &hops)))
}

/// Every InstallPlan of the namespaces starting with `prefix`, watched while the walks run.
pub(crate) struct PlanRecorder {
    seen: Arc<Mutex<BTreeMap<String, Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PlanRecorder {
    pub(crate) fn start(client: kube::Client, prefix: &str) -> Self {
        let seen: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
        let api: Api<DynamicObject> = Api::all_with(
            client,
            &ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("operators.coreos.com", "v1alpha1", "InstallPlan"),
                "installplans",
            ),
        );
        let prefix = prefix.to_owned();
        let record = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                if let Ok(watcher::Event::Apply(ip) | watcher::Event::InitApply(ip)) = ev
                    && ip
                        .metadata
                        .namespace
                        .as_deref()
                        .is_some_and(|n| n.starts_with(&prefix))
                    && let Some(uid) = ip.metadata.uid.clone()
                    && let Ok(v) = serde_json::to_value(&ip)
                {
                    record
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(uid, plan::slim_plan(&v));
                }
            }
        });
        Self { seen, task }
    }

    fn recorded(&self, namespace: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .filter(|ip| s(ip, "/metadata/namespace") == namespace)
            .cloned()
            .collect()
    }
}

impl Drop for PlanRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One walk: outcome, expected path, observed path, why.
pub(crate) type Walk = (String, Vec<String>, Vec<String>, String);

/// Step 8: {package: walk} and the namespaces used.
#[allow(clippy::too_many_arguments, reason = "the walk phase's whole input")]
pub(crate) async fn run_walks(
    kube: &Kube,
    cli: &Path,
    catalog: &str,
    facts: &BTreeMap<String, Facts>,
    packages: &[String],
    catalog_ns: &str,
    timeout: Duration,
    leftover: &BTreeMap<String, String>,
    recorder: &PlanRecorder,
) -> anyhow::Result<(BTreeMap<String, Walk>, Vec<String>)> {
    let mut results: BTreeMap<String, Walk> = BTreeMap::new();
    let mut plans: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for package in packages {
        let stuck: Vec<&String> = facts[package]
            .crds
            .iter()
            .filter(|c| leftover.contains_key(*c))
            .collect();
        if !stuck.is_empty() {
            let text: Vec<String> = stuck.iter().map(|c| format!("{c}: {}", leftover[*c])).collect();
            results.insert(
                package.clone(),
                (
                    "CRDsTerminating".into(),
                    vec![],
                    vec![],
                    clean(
                        &format!(
                            "not walked: the first phase's CRD(s) still there after the clean-up: {}",
                            text.join("; ")
                        ),
                        900,
                    ),
                ),
            );
            continue;
        }
        match walk_plan(cli, catalog, package, &facts[package].channel) {
            Ok(p) => {
                plans.insert(package.clone(), p);
            }
            Err(e) => {
                results.insert(
                    package.clone(),
                    ("PathUnknown".into(), vec![], vec![], clean(&e, 300)),
                );
            }
        }
    }
    let mut namespaces = BTreeMap::new();
    let mut groups = BTreeMap::new();
    let mut used = Vec::new();
    for (package, (tail, path)) in &plans {
        let ns = plan::namespace_for("accw", package);
        let Some((mode, og, halt)) = plan::choose_walk_group(path, &facts[package].csvs, &ns) else {
            results.insert(
                package.clone(),
                (
                    "NoInstallMode".into(),
                    path.clone(),
                    vec![],
                    format!("the walk's start {tail} supports no install mode"),
                ),
            );
            continue;
        };
        let note = match &halt {
            Some((entry, modes)) => format!(
                " (group {mode}; expected to stop at {entry}, which supports {})",
                if modes.is_empty() {
                    "none".to_owned()
                } else {
                    modes.join(", ")
                }
            ),
            None => format!(" (group {mode})"),
        };
        println!("  walk {package}: {}{note}", path.join(" -> "));
        used.extend(
            subscribe(
                kube,
                package,
                &facts[package].channel,
                &ns,
                &og,
                catalog_ns,
                Some(tail),
            )
            .await?,
        );
        namespaces.insert(package.clone(), ns);
        groups.insert(package.clone(), (mode, halt));
    }
    let targets: BTreeMap<String, String> = plans
        .iter()
        .filter(|(p, _)| namespaces.contains_key(*p))
        .filter_map(|(p, (_, path))| Some((p.clone(), path.last()?.clone())))
        .collect();
    let settled = wait_settled(kube, &namespaces, timeout, &targets).await?;
    for (package, (outcome, why, _)) in settled {
        let path = &plans[&package].1;
        let (mode, halt) = &groups[&package];
        let ns = &namespaces[&package];
        let expected: Vec<String> = match halt {
            Some((entry, _)) => {
                let end = path.iter().position(|e| e == entry).map_or(path.len(), |i| i + 1);
                path[..end].to_vec()
            }
            None => path.clone(),
        };
        let current = kube
            .list(&format!("{OPS}/v1alpha1/namespaces/{ns}/installplans"))
            .await?;
        let observed = plan::observed_walk(&plan::merge_plans(&recorder.recorded(ns), &current));
        let (outcome, why) = if let Some(halt) = halt {
            let (changed, stop_why) =
                walk_stop_outcome(kube, ns, &path[0], mode, halt, &expected, &observed).await?;
            match changed {
                Some(c) => (c, stop_why),
                None => (outcome, format!("{why} (expected: {stop_why})")),
            }
        } else if outcome == "Succeeded" {
            (
                (if observed == expected { "match" } else { "mismatch" }).to_owned(),
                why,
            )
        } else {
            (outcome, why)
        };
        let why = explain_requirements(kube, &outcome, &why).await;
        results.insert(package, (outcome, expected, observed, why));
    }
    Ok((results, used))
}

/// (`InstallModeChange` or none, why) of a walk expected to stop at `halt`.
pub(crate) async fn walk_stop_outcome(
    kube: &Kube,
    namespace: &str,
    start: &str,
    mode: &str,
    halt: &plan::Halt,
    expected: &[String],
    observed: &[String],
) -> anyhow::Result<(Option<String>, String)> {
    let (entry, modes) = halt;
    let csv = kube
        .get(&format!(
            "{OPS}/v1alpha1/namespaces/{namespace}/clusterserviceversions/{entry}"
        ))
        .await?;
    let supported = if modes.is_empty() {
        "no install mode".to_owned()
    } else {
        modes.join(", ")
    };
    let why = format!(
        "{entry} supports {supported}, not the {mode} group chosen from the start {start} (no mode is supported by every entry)"
    );
    if let Some(csv) = csv
        && s(&csv, "/status/phase") == "Failed"
        && s(&csv, "/status/reason") == "UnsupportedOperatorGroup"
        && observed == expected
    {
        return Ok((
            Some("InstallModeChange".into()),
            clean(
                &format!(
                    "{why}: CSV {entry} Failed UnsupportedOperatorGroup: {}",
                    s(&csv, "/status/message")
                ),
                300,
            ),
        ));
    }
    Ok((None, why))
}

/// The end of a walk phase, for either OLM: the webhook objects of each walk's last install
/// checked in its `accw-` namespace, then [`report_walks`] into `<out>-walks.tsv`.
pub(crate) async fn check_and_report_walks(
    kube: &Kube,
    walks: &BTreeMap<String, Walk>,
    walkers: &[String],
    out: &Path,
) -> anyhow::Result<bool> {
    let outcomes: BTreeMap<String, String> = walks.iter().map(|(p, w)| (p.clone(), w.0.clone())).collect();
    let namespaces: BTreeMap<String, String> = walkers
        .iter()
        .map(|p| (p.clone(), plan::namespace_for("accw", p)))
        .collect();
    let hooks = super::observe::check_installed_webhooks(kube, &outcomes, &namespaces).await;
    report_walks(walks, &plan::out_path_for_walks(out), &hooks)
}

/// Prints and writes the walks; whether every walk reached the head along the predicted path (or
/// stopped where an install-mode change predicts) and the heads' webhook objects are right.
pub(crate) fn report_walks(
    results: &BTreeMap<String, Walk>,
    out: &Path,
    webhooks: &BTreeMap<String, WebhookCheck>,
) -> anyhow::Result<bool> {
    println!();
    let mut tsv = "package\toutcome\texpected path\tobserved path\twhy\twebhooks\n".to_owned();
    for (package, (outcome, expected, observed, why)) in results {
        let hooks = webhooks.get(package).map_or("", |(_, t)| t.as_str());
        let mut line = format!("walk {package}: {outcome}  expected {}", expected.join(" -> "));
        if observed != expected {
            let seen = if observed.is_empty() {
                "<none>".to_owned()
            } else {
                observed.join(" -> ")
            };
            line.push_str(&format!("  observed {seen}"));
        }
        if outcome != "match" && outcome != "mismatch" {
            line.push_str(&format!("  ({why})"));
        }
        if !hooks.is_empty() {
            line.push_str(&format!("  [{hooks}]"));
        }
        println!("{line}");
        tsv.push_str(&format!(
            "{package}\t{outcome}\t{}\t{}\t{}\t{hooks}\n",
            expected.join(" "),
            observed.join(" "),
            clean(why, 300)
        ));
    }
    std::fs::write(out, tsv).with_context(|| format!("failed to write {}", out.display()))?;
    let matched = results.values().filter(|r| r.0 == "match").count();
    let changed = results.values().filter(|r| r.0 == "InstallModeChange").count();
    println!(
        "\n{matched} of {} walks reached the head along the predicted path",
        results.len()
    );
    if changed > 0 {
        println!(
            "{changed} stopped where predicted: a later entry does not support the start's install mode (its CSV Failed UnsupportedOperatorGroup, as upstream)"
        );
    }
    let bad: Vec<&String> = webhooks
        .iter()
        .filter(|(_, (ok, _))| !ok)
        .map(|(p, _)| p)
        .collect();
    if !webhooks.is_empty() {
        println!(
            "webhook objects after the walk: {} of {} heads with webhookdefinitions have every object present and correct",
            webhooks.len() - bad.len(),
            webhooks.len()
        );
        for p in &bad {
            println!("  {p}: {}", webhooks[*p].1);
        }
    }
    println!("written {}", out.display());
    Ok(matched + changed == results.len() && bad.is_empty())
}
