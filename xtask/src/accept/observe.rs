//! observe: what the cluster shows of each install, read into [`super::plan::classify`] every
//! poll until settled, with the API server's view of a CRD and the webhook objects of an install.

use std::{
    collections::{BTreeMap, HashMap},
    time::{Duration, Instant},
};

use futures::StreamExt as _;
use serde_json::{Value, json};

use super::{
    client::{CRD_PATH, Kube, OPS, s},
    plan::{self, Class, WebhookCheck, clean},
    webhooks,
};

pub(crate) async fn unschedulable_pod(kube: &Kube, namespace: &str) -> anyhow::Result<Option<String>> {
    let pods = kube
        .list(&format!(
            "/api/v1/namespaces/{namespace}/pods?fieldSelector=status.phase%3DPending"
        ))
        .await?;
    for pod in &pods {
        if let Some(c) = plan::condition(Some(pod), "PodScheduled")
            && c["status"] == "False"
            && c["reason"] == "Unschedulable"
        {
            return Ok(Some(format!(
                "{} Unschedulable: {}",
                s(pod, "/metadata/name"),
                clean(s(c, "/message"), 200)
            )));
        }
    }
    Ok(None)
}

/// classify() of one namespace now. With `target` (walks), only that CSV Succeeded is final.
pub(crate) async fn observe(
    kube: &Kube,
    namespace: &str,
    sub: Option<&Value>,
    target: Option<&str>,
) -> anyhow::Result<Class> {
    let null = Value::Null;
    let sub_v = sub.unwrap_or(&null);
    let name = [s(sub_v, "/status/currentCSV"), s(sub_v, "/status/installedCSV")]
        .into_iter()
        .find(|n| !n.is_empty());
    let mut csv = None;
    if let Some(name) = name {
        csv = kube
            .get(&format!(
                "{OPS}/v1alpha1/namespaces/{namespace}/clusterserviceversions/{name}"
            ))
            .await?
            .filter(|c| !plan::is_copy(Some(c)));
    }
    let ip_name = [
        s(sub_v, "/status/installPlanRef/name"),
        s(sub_v, "/status/installplan/name"),
    ]
    .into_iter()
    .find(|n| !n.is_empty());
    let csv_phase = csv.as_ref().map_or("", |c| s(c, "/status/phase")).to_owned();
    let plan_failed = plan::condition(sub, "InstallPlanFailed").is_some_and(|c| c["status"] == "True");
    let mut ip = None;
    if let Some(ip_name) = ip_name
        && (csv_phase == "Succeeded" || plan_failed)
    {
        ip = kube
            .get(&format!(
                "{OPS}/v1alpha1/namespaces/{namespace}/installplans/{ip_name}"
            ))
            .await?;
    }
    let pending = if matches!(csv_phase.as_str(), "InstallReady" | "Installing") {
        unschedulable_pod(kube, namespace).await?
    } else {
        None
    };
    let mut class = plan::classify(sub, csv.as_ref(), ip.as_ref(), pending.as_deref());
    if let Some(target) = target
        && class.is_final
        && name != Some(target)
    {
        class = Class {
            outcome: "InProgress".into(),
            why: format!("at {}, on the way to {target}", name.unwrap_or("?")),
            is_final: false,
        };
    }
    Ok(class)
}

/// How often every install is observed.
pub(crate) const POLL: Duration = Duration::from_secs(2);

/// One settled install: outcome, why, seconds.
pub(crate) type Settled = (String, String, f64);

/// {package: (outcome, why, seconds)} once every install is settled or the deadline passed.
pub(crate) async fn wait_settled(
    kube: &Kube,
    namespaces: &BTreeMap<String, String>,
    timeout: Duration,
    targets: &BTreeMap<String, String>,
) -> anyhow::Result<BTreeMap<String, Settled>> {
    let start = Instant::now();
    let mut settler = plan::Settler::new(plan::SETTLE_SECONDS);
    let mut results = BTreeMap::new();
    let mut last: HashMap<String, (String, String)> = HashMap::new();
    let mut pending = namespaces.clone();
    let mut cycles = 0;
    while !pending.is_empty() {
        let mut subs: HashMap<(String, String), Value> = HashMap::new();
        for item in kube.list(&format!("{OPS}/v1alpha1/subscriptions")).await? {
            subs.insert(
                (
                    s(&item, "/metadata/namespace").to_owned(),
                    s(&item, "/spec/name").to_owned(),
                ),
                item,
            );
        }
        let now = Instant::now();
        let observed: Vec<(String, Class)> = futures::stream::iter(pending.clone())
            .map(|(package, ns)| {
                let sub = subs.get(&(ns.clone(), package.clone())).cloned();
                let target = targets.get(&package).cloned();
                async move {
                    let class = observe(kube, &ns, sub.as_ref(), target.as_deref())
                        .await
                        .unwrap_or_else(|e| Class {
                            outcome: "InProgress".into(),
                            why: format!("observing failed: {}", clean(&format!("{e:#}"), 300)),
                            is_final: false,
                        });
                    (package, class)
                }
            })
            .buffer_unordered(8)
            .collect()
            .await;
        let t = now.duration_since(start).as_secs_f64();
        for (package, class) in observed {
            last.insert(package.clone(), (class.outcome.clone(), class.why.clone()));
            if settler.observe(&package, &class, t) {
                results.insert(package.clone(), (class.outcome, class.why, round1(t)));
                pending.remove(&package);
            }
        }
        if !pending.is_empty() && start.elapsed() > timeout {
            let secs = timeout.as_secs_f64();
            for package in pending.keys() {
                // A failure seen but not yet stable keeps its class.
                let (outcome, why) = last
                    .get(package)
                    .cloned()
                    .unwrap_or(("InProgress".into(), "never observed".into()));
                let (outcome, why) = if outcome == "InProgress" {
                    ("Timeout".to_owned(), format!("after {secs:.0} s: {why}"))
                } else {
                    (outcome, format!("{why} (at the {secs:.0} s deadline)"))
                };
                results.insert(
                    package.clone(),
                    (outcome, clean(&why, 300), round1(start.elapsed().as_secs_f64())),
                );
            }
            break;
        }
        if !pending.is_empty() {
            cycles += 1;
            if cycles % 10 == 0 {
                println!(
                    "  {} settled, {} in progress after {:.0} s",
                    results.len(),
                    pending.len(),
                    start.elapsed().as_secs_f64()
                );
            }
            tokio::time::sleep(POLL.saturating_sub(now.elapsed())).await;
        }
    }
    Ok(results)
}

pub(crate) fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// What the API server shows of a CRD (`None` when it is gone): deletion, finalizers, its
/// conditions, and the custom resources still stored when it is being deleted.
pub(crate) async fn crd_state(kube: &Kube, crd: &str) -> anyhow::Result<Option<String>> {
    let Some(obj) = kube.get(&format!("{CRD_PATH}/{crd}")).await? else {
        return Ok(None);
    };
    let mut parts = vec![format!("created {}", s(&obj, "/metadata/creationTimestamp"))];
    let deleting = s(&obj, "/metadata/deletionTimestamp");
    if !deleting.is_empty() {
        parts.push(format!("deleting since {deleting}"));
    }
    let finalizers: Vec<&str> = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !finalizers.is_empty() {
        parts.push(format!("finalizers {}", finalizers.join(",")));
    }
    for kind in ["Terminating", "NamesAccepted", "Established"] {
        if let Some(c) = plan::condition(Some(&obj), kind) {
            let mut text = format!(
                "{kind}={} {} since {}",
                s(c, "/status"),
                s(c, "/reason"),
                s(c, "/lastTransitionTime")
            );
            if kind == "Terminating" && !s(c, "/message").is_empty() {
                text.push_str(&format!(" ({})", clean(s(c, "/message"), 120)));
            }
            parts.push(text);
        }
    }
    let version = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str());
    let plural = s(&obj, "/spec/names/plural");
    if !deleting.is_empty()
        && let Some(version) = version
        && !plural.is_empty()
    {
        let path = format!("/apis/{}/{version}/{plural}?limit=20", s(&obj, "/spec/group"));
        match kube.get(&path).await {
            Err(e) => parts.push(format!(
                "listing its resources failed: {}",
                clean(&format!("{e:#}"), 150)
            )),
            Ok(got) => {
                let got = got.unwrap_or(Value::Null);
                let items: Vec<&Value> = got
                    .get("items")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .collect();
                if items.is_empty() {
                    parts.push("no resources left".into());
                } else {
                    let more = if s(&got, "/metadata/continue").is_empty() {
                        ""
                    } else {
                        "+"
                    };
                    let left: Vec<String> = items
                        .iter()
                        .take(3)
                        .map(|i| {
                            let ns = s(i, "/metadata/namespace");
                            let name = s(i, "/metadata/name");
                            let id = if ns.is_empty() {
                                name.to_owned()
                            } else {
                                format!("{ns}/{name}")
                            };
                            format!(
                                "{id} finalizers {}",
                                i.pointer("/metadata/finalizers").cloned().unwrap_or(json!([]))
                            )
                        })
                        .collect();
                    parts.push(format!(
                        "{}{more} resources left: {}",
                        items.len(),
                        left.join(", ")
                    ));
                }
            }
        }
    }
    Ok(Some(clean(&parts.join("; "), 600)))
}

/// `why` of a RequirementsNotMet outcome with the API server's view of each CRD not Present.
pub(crate) async fn explain_requirements(kube: &Kube, outcome: &str, why: &str) -> String {
    if outcome != "RequirementsNotMet" {
        return why.to_owned();
    }
    let mut details = Vec::new();
    for crd in plan::missing_crds(why) {
        let state = crd_state(kube, &crd)
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| "absent".into());
        details.push(format!("CRD {crd} on the API server: {state}"));
    }
    if details.is_empty() {
        why.to_owned()
    } else {
        clean(&format!("{why}; {}", details.join("; ")), 900)
    }
}

/// check_webhooks() of the CSV the Subscription `package` in `namespace` installed; `None` when
/// it declares no webhookdefinitions.
pub(crate) async fn package_webhooks(
    kube: &Kube,
    namespace: &str,
    package: &str,
) -> anyhow::Result<Option<WebhookCheck>> {
    let sub = kube
        .get(&format!(
            "{OPS}/v1alpha1/namespaces/{namespace}/subscriptions/{package}"
        ))
        .await?
        .unwrap_or(Value::Null);
    let name = s(&sub, "/status/installedCSV");
    if name.is_empty() {
        return Ok(None);
    }
    let Some(csv) = kube
        .get(&format!(
            "{OPS}/v1alpha1/namespaces/{namespace}/clusterserviceversions/{name}"
        ))
        .await?
    else {
        return Ok(None);
    };
    let defs: Vec<Value> = csv
        .pointer("/spec/webhookdefinitions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if defs.is_empty() {
        return Ok(None);
    }
    let selector = format!("olm.owner.namespace%3D{namespace}");
    let mut objs = webhooks::Objects {
        validating: kube
            .list(&format!(
                "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?labelSelector={selector}"
            ))
            .await?,
        mutating: kube
            .list(&format!(
                "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?labelSelector={selector}"
            ))
            .await?,
        ..Default::default()
    };
    for d in &defs {
        let service = webhooks::webhook_service(s(d, "/deploymentName"));
        if let Some(o) = kube
            .get(&format!("/api/v1/namespaces/{namespace}/services/{service}"))
            .await?
        {
            objs.services.insert(service.clone(), o);
        }
        let secret = format!("{service}-cert");
        if let Some(o) = kube
            .get(&format!("/api/v1/namespaces/{namespace}/secrets/{secret}"))
            .await?
        {
            objs.secrets.insert(secret, o);
        }
        for crd in d
            .get("conversionCRDs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if let Some(o) = kube.get(&format!("{CRD_PATH}/{crd}")).await? {
                objs.crds.insert(crd.to_owned(), o);
            }
        }
    }
    Ok(Some(webhooks::check_webhooks(&csv, namespace, &objs)))
}

/// package_webhooks() of every Succeeded package (or matched walk) in `namespaces`.
pub(crate) async fn check_installed_webhooks(
    kube: &Kube,
    outcomes: &BTreeMap<String, String>,
    namespaces: &BTreeMap<String, String>,
) -> BTreeMap<String, WebhookCheck> {
    let mut out = BTreeMap::new();
    for (package, outcome) in outcomes {
        let Some(ns) = namespaces.get(package) else {
            continue;
        };
        if outcome != "Succeeded" && outcome != "match" {
            continue;
        }
        let got = match package_webhooks(kube, ns, package).await {
            Ok(got) => got,
            Err(e) => Some((
                false,
                format!("webhooks: checking failed: {}", clean(&format!("{e:#}"), 300)),
            )),
        };
        if let Some(got) = got {
            out.insert(package.clone(), got);
        }
    }
    out
}
