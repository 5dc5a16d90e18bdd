//! setup: the cluster objects every acceptance phase starts from: the CatalogSource (awaited
//! READY while the controllers live) and, per package, its namespaces, OperatorGroup and Automatic
//! Subscription.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use anyhow::bail;
use serde_json::{Value, json};

use super::client::{Kube, OPS, SetupError, s};

/// The default catalog of the acceptance benches (shared corpus).
pub(crate) const ARCHIVE: &str = "certified-operators-v4.16.tar.zst";
/// The benches' CatalogSource.
pub(crate) const SOURCE_NAME: &str = "accept-catalog";

pub(crate) async fn create_catalog_source(
    kube: &Kube,
    namespace: &str,
    source: (&str, String),
    alive: &mut dyn FnMut() -> Result<(), String>,
    timeout: Duration,
    log: &Path,
) -> anyhow::Result<()> {
    let path = format!("{OPS}/v1alpha1/namespaces/{namespace}/catalogsources");
    kube.delete(&format!("{path}/{SOURCE_NAME}")).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while kube.get(&format!("{path}/{SOURCE_NAME}")).await?.is_some() {
        if Instant::now() > deadline {
            bail!(SetupError(format!(
                "an old CatalogSource {namespace}/{SOURCE_NAME} was never deleted"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    kube.create(
        &path,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": SOURCE_NAME},
               "spec": {"sourceType": source.0, "address": source.1,
                        "displayName": "accept-catalog"}}),
    )
    .await?;
    let deadline = Instant::now() + timeout;
    loop {
        let cs = kube
            .get(&format!("{path}/{SOURCE_NAME}"))
            .await?
            .unwrap_or(Value::Null);
        if s(&cs, "/status/connectionState/lastObservedState") == "READY" {
            return Ok(());
        }
        if let Err(dead) = alive() {
            bail!(SetupError(dead));
        }
        if Instant::now() > deadline {
            bail!(SetupError(format!(
                "CatalogSource {namespace}/{SOURCE_NAME} never became READY ({}); see {}",
                cs.get("status").cloned().unwrap_or(Value::Null),
                log.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Namespace (and the OperatorGroup's other target namespaces), OperatorGroup `og`, Automatic
/// Subscription; every namespace created.
pub(crate) async fn subscribe(
    kube: &Kube,
    package: &str,
    channel: &str,
    namespace: &str,
    og: &Value,
    catalog_ns: &str,
    starting_csv: Option<&str>,
) -> anyhow::Result<Vec<String>> {
    let mut namespaces = vec![namespace.to_owned()];
    for t in og
        .get("targetNamespaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = t.as_str()
            && t != namespace
        {
            namespaces.push(t.to_owned());
        }
    }
    for ns in &namespaces {
        kube.create(
            "/api/v1/namespaces",
            json!({"metadata": {"name": ns, "labels": {"olm-rs/accept": "true"}}}),
        )
        .await?;
    }
    kube.create(
        &format!("{OPS}/v1/namespaces/{namespace}/operatorgroups"),
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
               "metadata": {"name": "og"}, "spec": og}),
    )
    .await?;
    let mut spec = json!({"name": package, "channel": channel, "installPlanApproval": "Automatic",
                          "source": SOURCE_NAME, "sourceNamespace": catalog_ns});
    if let Some(start) = starting_csv {
        spec["startingCSV"] = json!(start);
    }
    kube.create(
        &format!("{OPS}/v1alpha1/namespaces/{namespace}/subscriptions"),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": package}, "spec": spec}),
    )
    .await?;
    Ok(namespaces)
}
