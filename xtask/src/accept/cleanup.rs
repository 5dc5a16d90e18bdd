//! cleanup: what a phase leaves is deleted before the next (namespaces while the controller still
//! runs, for the CSV finalizers; cluster-scoped objects of those namespaces; the catalog's CRDs,
//! awaited; the run's Operator objects), and a CRD that stays is reported with its state.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::{Duration, Instant},
};

use super::{
    client::{CRD_PATH, Kube, OPS, s},
    observe::crd_state,
};

/// Deletes the namespaces (the controller must still run: CSV finalizers), then cluster-scoped
/// objects labelled olm.owner.namespace of them, then the CRDs the catalog owns, awaiting them
/// (bounded); then the run's Operator objects. The CRDs still there, with their state.
pub(crate) async fn cleanup(
    kube: &Kube,
    namespaces: &[String],
    crds: &[String],
    operators: &BTreeSet<String>,
) -> anyhow::Result<BTreeMap<String, String>> {
    let (timeout, crd_timeout) = (Duration::from_secs(240), Duration::from_secs(300));
    let namespaces: BTreeSet<String> = namespaces.iter().cloned().collect();
    let started = Instant::now();
    for ns in &namespaces {
        kube.delete(&format!("/api/v1/namespaces/{ns}")).await?;
    }
    loop {
        let left: BTreeSet<String> = kube
            .list("/api/v1/namespaces")
            .await?
            .iter()
            .map(|n| s(n, "/metadata/name").to_owned())
            .filter(|n| namespaces.contains(n))
            .collect();
        if left.is_empty() {
            break;
        }
        if started.elapsed() > timeout {
            eprintln!(
                "warning: namespaces still terminating after {} s: {}",
                timeout.as_secs(),
                left.into_iter().collect::<Vec<_>>().join(", ")
            );
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let ns_seconds = started.elapsed().as_secs_f64();
    for path in [
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        "/apis/apiregistration.k8s.io/v1/apiservices",
    ] {
        for item in kube
            .list(&format!("{path}?labelSelector=olm.owner.namespace"))
            .await?
        {
            if namespaces.contains(s(&item, "/metadata/labels/olm.owner.namespace")) {
                kube.delete(&format!("{path}/{}", s(&item, "/metadata/name")))
                    .await?;
            }
        }
    }
    let crd_started = Instant::now();
    for crd in crds {
        kube.delete(&format!("{CRD_PATH}/{crd}")).await?;
    }
    let mut left: Vec<String> = crds.to_vec();
    while !left.is_empty() {
        let mut still = Vec::new();
        for c in left {
            if kube.get(&format!("{CRD_PATH}/{c}")).await?.is_some() {
                still.push(c);
            }
        }
        left = still;
        if !left.is_empty() && crd_started.elapsed() > crd_timeout {
            break;
        }
        if !left.is_empty() {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
    // Operator objects stay when their components go (as upstream's do); a later run would start
    // by reconciling and caching them all.
    for name in operators {
        kube.delete(&format!("{OPS}/v1/operators/{name}")).await?;
    }
    let mut states = BTreeMap::new();
    for c in &left {
        if let Some(st) = crd_state(kube, c).await? {
            states.insert(c.clone(), st);
        }
    }
    println!(
        "clean-up: {} namespaces gone after {ns_seconds:.0} s, {} of {} CRDs gone {:.0} s after their deletion",
        namespaces.len(),
        crds.len() - states.len(),
        crds.len(),
        crd_started.elapsed().as_secs_f64()
    );
    for (crd, st) in &states {
        eprintln!(
            "warning: CRD {crd} still there after {} s: {st}",
            crd_timeout.as_secs()
        );
    }
    Ok(states)
}
