//! `kubectl-olm uninstall PKG [--delete-crds]`: deletes the package's Subscription(s) and the CSVs
//! they installed (or are installing), then waits until they are gone.
//!
//! Rules, which follow OLM's own advice for uninstalling ("delete the Subscription, then the CSV"):
//! - The Subscriptions are those of the namespace whose `spec.name` is the package (a
//!   Subscription named like the package counts too); their `installedCSV` and `currentCSV` are
//!   the CSVs to delete. Deleting a CSV lets the garbage collector remove what it owns
//!   (Deployments, namespaced RBAC); the controller's finalizer removes its cluster-scoped RBAC.
//! - CRDs hold users' data, so they are kept. `--delete-crds` deletes the CRDs the CSVs own, but
//!   only when no custom resource of them remains anywhere in the cluster; otherwise nothing at all
//!   is deleted and the error lists the remaining objects. A CRD another CSV (outside this
//!   uninstall, not a copy) also owns is kept and reported.
//! - The OperatorGroup stays: other operators of the namespace may rely on it.

use std::{
    collections::BTreeSet,
    time::{Duration, Instant},
};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Resource,
    api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams},
};
use serde::Serialize;

use crate::{
    api::{
        labels,
        v1alpha1::{ClusterServiceVersion, Subscription},
    },
    cli::{
        CliError, OutputFormat, UninstallArgs,
        cluster::{Cluster, is_not_found},
        cmd::cluster::shared::{list_or_olm_missing, qualified},
        error::known_list,
        output::{self, Streams},
    },
};

/// How many remaining custom resources an error lists per CRD.
const MAX_LISTED: usize = 10;

/// The Subscriptions of `package` among the namespace's: by `spec.name`, else one named `package`.
///
/// # Errors
/// [`CliError::NotFound`] listing the packages that are subscribed.
pub fn select_for_package<'a>(
    subs: &'a [Subscription],
    package: &str,
    namespace: &str,
) -> Result<Vec<&'a Subscription>, CliError> {
    let mut chosen: Vec<&Subscription> = subs.iter().filter(|s| s.spec.name == package).collect();
    if chosen.is_empty() {
        chosen = subs
            .iter()
            .filter(|s| s.metadata.name.as_deref() == Some(package))
            .collect();
    }
    if chosen.is_empty() {
        let known: BTreeSet<&str> = subs.iter().map(|s| s.spec.name.as_str()).collect();
        return Err(CliError::NotFound(format!(
            "package {package} is not installed in namespace {namespace}: no Subscription for it; installed packages: {}; pass -n NAMESPACE, or see `kubectl olm list -A`",
            known_list(known)
        )));
    }
    Ok(chosen)
}

/// The CSVs the Subscriptions installed or are installing (`installedCSV`, `currentCSV`), deduplicated.
pub fn csv_names(subs: &[&Subscription]) -> Vec<String> {
    let mut names = BTreeSet::new();
    for s in subs {
        if let Some(st) = &s.status {
            for n in [&st.installed_csv, &st.current_csv].into_iter().flatten() {
                if !n.is_empty() {
                    names.insert(n.clone());
                }
            }
        }
    }
    names.into_iter().collect()
}

/// The CRDs the CSVs own (`spec.customresourcedefinitions.owned[].name`), deduplicated and sorted.
pub fn owned_crds(csvs: &[ClusterServiceVersion]) -> Vec<String> {
    csvs.iter()
        .filter_map(|c| c.spec.custom_resource_definitions.as_ref())
        .flat_map(|d| d.owned.iter().map(|o| o.name.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Other CSVs owning `crd`: not among `deleting` (`namespace/name`) and not copies.
pub fn other_owners(crd: &str, all: &[ClusterServiceVersion], deleting: &[String]) -> Vec<String> {
    all.iter()
        .filter(|c| c.spec.owns_crd(crd))
        .filter(|c| {
            !c.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(labels::COPIED_FROM))
        })
        .map(|c| {
            format!(
                "{}/{}",
                c.metadata.namespace.as_deref().unwrap_or(""),
                c.metadata.name.as_deref().unwrap_or("")
            )
        })
        .filter(|key| !deleting.contains(key))
        .collect()
}

/// The refusal for custom resources that remain, or `None` when none do.
pub fn remaining_refusal(package: &str, remaining: &[(String, Vec<String>)]) -> Option<CliError> {
    let remaining: Vec<&(String, Vec<String>)> =
        remaining.iter().filter(|(_, crs)| !crs.is_empty()).collect();
    if remaining.is_empty() {
        return None;
    }
    let listed: Vec<String> = remaining
        .iter()
        .map(|(crd, crs)| {
            let mut shown: Vec<String> = crs.iter().take(MAX_LISTED).cloned().collect();
            if crs.len() > MAX_LISTED {
                shown.push(format!("and {} more", crs.len() - MAX_LISTED));
            }
            format!("{crd}: {}", shown.join(", "))
        })
        .collect();
    let deletes: Vec<String> = remaining
        .iter()
        .map(|(crd, _)| format!("kubectl delete {crd} --all -A"))
        .collect();
    Some(CliError::Refused(format!(
        "refusing to delete the CRDs of {package}: custom resources remain ({}); nothing was deleted. Delete them first ({}), or uninstall without --delete-crds to keep the CRDs",
        listed.join("; "),
        deletes.join(" && ")
    )))
}

/// The API of a CRD's custom resources, at its storage version (else the first served one).
pub fn crd_resource(crd: &CustomResourceDefinition) -> Option<ApiResource> {
    let spec = &crd.spec;
    let version = spec
        .versions
        .iter()
        .find(|v| v.storage)
        .or_else(|| spec.versions.iter().find(|v| v.served))?;
    Some(ApiResource {
        group: spec.group.clone(),
        version: version.name.clone(),
        api_version: format!("{}/{}", spec.group, version.name),
        kind: spec.names.kind.clone(),
        plural: spec.names.plural.clone(),
    })
}

/// One deleted object, for the output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deleted {
    /// `resource.group` (`subscription.operators.coreos.com`).
    pub kind: String,
    /// The name.
    pub name: String,
    /// The namespace (`None` for CRDs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl Deleted {
    fn qualified(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }
}

/// What `uninstall` did, for `-o json|yaml`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The package.
    pub package: String,
    /// The namespace.
    pub namespace: String,
    /// The objects deleted.
    pub deleted: Vec<Deleted>,
    /// CRDs kept, each with why.
    pub kept_crds: Vec<String>,
}

fn kind_of<K: Resource<DynamicType = ()>>() -> String {
    let q = qualified::<K>("");
    q.trim_end_matches('/').to_string()
}

/// Runs `uninstall`.
///
/// # Errors
/// An unknown package, remaining custom resources with `--delete-crds`, API errors, objects still
/// present after `--timeout`.
pub async fn run(
    cluster: &Cluster,
    args: &UninstallArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let ns = cluster.namespace(args.namespace.as_deref());
    let client = cluster.client.clone();
    let subs_api: Api<Subscription> = Api::namespaced(client.clone(), &ns);
    let csv_api: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), &ns);
    let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());

    let all_subs = list_or_olm_missing(cluster, &subs_api, "subscriptions", &ns).await?;
    let subs = select_for_package(&all_subs, &args.package, &ns)?;
    let mut csvs = Vec::new();
    for name in csv_names(&subs) {
        match csv_api.get_opt(&name).await {
            Ok(Some(c)) => csvs.push(c),
            Ok(None) => {}
            Err(e) => return Err(cluster.api_error(&format!("get csv {name} in namespace {ns}"), e)),
        }
    }
    let deleting: Vec<String> = csvs
        .iter()
        .map(|c| format!("{ns}/{}", c.metadata.name.as_deref().unwrap_or("")))
        .collect();

    let crds = owned_crds(&csvs);
    let mut kept_crds = Vec::new();
    let mut delete_crds = Vec::new();
    if args.delete_crds && !crds.is_empty() {
        let all_csvs = Api::<ClusterServiceVersion>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map_err(|e| cluster.api_error("list csvs in all namespaces", e))?
            .items;
        let mut remaining = Vec::new();
        for crd_name in &crds {
            let others = other_owners(crd_name, &all_csvs, &deleting);
            if !others.is_empty() {
                kept_crds.push(format!("{crd_name} (also owned by csv {})", others.join(", ")));
                continue;
            }
            let crd = match crd_api.get_opt(crd_name).await {
                Ok(Some(crd)) => crd,
                Ok(None) => continue,
                Err(e) => return Err(cluster.api_error(&format!("get crd {crd_name}"), e)),
            };
            let Some(resource) = crd_resource(&crd) else {
                continue;
            };
            let crs: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            let items = crs
                .list(&ListParams::default())
                .await
                .map_err(|e| cluster.api_error(&format!("list {crd_name} in all namespaces"), e))?
                .items;
            let names: Vec<String> = items
                .iter()
                .map(|o| match (&o.metadata.namespace, &o.metadata.name) {
                    (Some(n), Some(name)) => format!("{n}/{name}"),
                    (None, Some(name)) => name.clone(),
                    _ => String::new(),
                })
                .collect();
            remaining.push((crd_name.clone(), names));
            delete_crds.push(crd_name.clone());
        }
        if let Some(refusal) = remaining_refusal(&args.package, &remaining) {
            return Err(refusal);
        }
    } else if !crds.is_empty() {
        kept_crds.extend(
            crds.iter()
                .map(|c| format!("{c} (pass --delete-crds to delete it)")),
        );
    }

    let mut deleted = Vec::new();
    let dp = DeleteParams::background();
    for sub in &subs {
        let name = sub.metadata.name.clone().unwrap_or_default();
        match subs_api.delete(&name, &dp).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                return Err(cluster.api_error(&format!("delete subscription {name} in namespace {ns}"), e));
            }
        }
        deleted.push(Deleted {
            kind: kind_of::<Subscription>(),
            name,
            namespace: Some(ns.clone()),
        });
    }
    for csv in &csvs {
        let name = csv.metadata.name.clone().unwrap_or_default();
        match csv_api.delete(&name, &dp).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(cluster.api_error(&format!("delete csv {name} in namespace {ns}"), e)),
        }
        deleted.push(Deleted {
            kind: kind_of::<ClusterServiceVersion>(),
            name,
            namespace: Some(ns.clone()),
        });
    }
    for crd in &delete_crds {
        match crd_api.delete(crd, &dp).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(cluster.api_error(&format!("delete crd {crd}"), e)),
        }
        deleted.push(Deleted {
            kind: "customresourcedefinition.apiextensions.k8s.io".to_string(),
            name: crd.clone(),
            namespace: None,
        });
    }

    wait_gone(cluster, &subs_api, &csv_api, &crd_api, &deleted, args.timeout).await?;

    let report = Report {
        package: args.package.clone(),
        namespace: ns,
        deleted,
        kept_crds,
    };
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &report)?,
        OutputFormat::Name => {
            for d in &report.deleted {
                writeln!(streams.out, "{}", d.qualified())?;
            }
        }
        OutputFormat::Table | OutputFormat::Wide => {
            for d in &report.deleted {
                writeln!(streams.out, "{} deleted", d.qualified())?;
            }
            for k in &report.kept_crds {
                writeln!(streams.err, "kept crd {k}")?;
            }
        }
    }
    Ok(())
}

/// Polls until every deleted object is gone, or fails naming those left and their finalizers.
async fn wait_gone(
    cluster: &Cluster,
    subs: &Api<Subscription>,
    csvs: &Api<ClusterServiceVersion>,
    crds: &Api<CustomResourceDefinition>,
    deleted: &[Deleted],
    timeout: Duration,
) -> Result<(), CliError> {
    if timeout.is_zero() {
        return Ok(());
    }
    let start = Instant::now();
    let sub_kind = kind_of::<Subscription>();
    let csv_kind = kind_of::<ClusterServiceVersion>();
    loop {
        let mut left = Vec::new();
        for d in deleted {
            let found = if d.kind == sub_kind {
                subs.get_opt(&d.name)
                    .await
                    .map(|o| o.map(|o| o.metadata.finalizers))
            } else if d.kind == csv_kind {
                csvs.get_opt(&d.name)
                    .await
                    .map(|o| o.map(|o| o.metadata.finalizers))
            } else {
                crds.get_opt(&d.name)
                    .await
                    .map(|o| o.map(|o| o.metadata.finalizers))
            }
            .map_err(|e| cluster.api_error(&format!("check that {} is deleted", d.qualified()), e))?;
            if let Some(finalizers) = found {
                let f = finalizers.unwrap_or_default();
                left.push(if f.is_empty() {
                    d.qualified()
                } else {
                    format!("{} (finalizers: {})", d.qualified(), f.join(", "))
                });
            }
        }
        if left.is_empty() {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(CliError::WaitTimedOut(format!(
                "deletion requested, but after {}s these still exist: {}; a finalizer is removed by the olm-controller (is it running?); raise --timeout to wait longer",
                timeout.as_secs(),
                left.join("; ")
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::cmd::cluster::list::tests::sub;

    fn csv(ns: &str, name: &str, owned: &[&str], copied: bool) -> ClusterServiceVersion {
        let owned: Vec<serde_json::Value> = owned
            .iter()
            .map(|n| serde_json::json!({"name": n, "version": "v1", "kind": "K"}))
            .collect();
        let mut meta = serde_json::json!({"name": name, "namespace": ns});
        if copied {
            meta["labels"] = serde_json::json!({"olm.copiedFrom": "elsewhere"});
        }
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": meta,
            "spec": {
                "install": {"strategy": "deployment"},
                "displayName": name,
                "customresourcedefinitions": {"owned": owned}
            }
        }))
        .unwrap()
    }

    #[test]
    fn the_subscriptions_of_a_package_are_found_by_spec_name() {
        let mut other = sub("ns", "x", None, None, None);
        other.metadata.name = Some("redis-operator".into());
        let mut mine = sub("ns", "redis-operator", None, None, None);
        mine.metadata.name = Some("my-redis".into());
        let subs = [other, mine];
        let chosen = select_for_package(&subs, "redis-operator", "ns").unwrap();
        assert_eq!(chosen.len(), 1);
        assert_eq!(chosen[0].metadata.name.as_deref(), Some("my-redis"));
    }

    #[test]
    fn an_unknown_package_lists_what_is_installed() {
        let subs = [sub("ns", "redis-operator", None, None, None)];
        let err = select_for_package(&subs, "etcd", "ns").unwrap_err();
        assert_eq!(err.exit_code(), 1);
        assert!(
            err.to_string()
                .starts_with("package etcd is not installed in namespace ns: no Subscription for it; installed packages: redis-operator"),
            "{err}"
        );
    }

    #[test]
    fn installed_and_current_csvs_are_both_deleted_once() {
        let a = sub("ns", "p", Some("p.v1"), Some("p.v2"), None);
        let b = sub("ns", "p", Some("p.v1"), Some("p.v1"), None);
        assert_eq!(csv_names(&[&a, &b]), ["p.v1", "p.v2"]);
    }

    #[test]
    fn owned_crds_are_collected_from_every_csv() {
        let csvs = [
            csv("ns", "a", &["b.example.com", "a.example.com"], false),
            csv("ns", "b", &["a.example.com"], false),
        ];
        assert_eq!(owned_crds(&csvs), ["a.example.com", "b.example.com"]);
    }

    #[test]
    fn a_crd_owned_by_another_real_csv_is_reported_but_copies_do_not_count() {
        let all = [
            csv("ns", "mine", &["a.example.com"], false),
            csv("other", "mine", &["a.example.com"], true),
            csv("team", "theirs", &["a.example.com"], false),
        ];
        let deleting = ["ns/mine".to_string()];
        assert_eq!(other_owners("a.example.com", &all, &deleting), ["team/theirs"]);
        assert!(other_owners("a.example.com", &all[..2], &deleting).is_empty());
    }

    #[test]
    fn remaining_custom_resources_refuse_the_deletion_and_are_listed() {
        assert!(remaining_refusal("p", &[("a.example.com".into(), vec![])]).is_none());
        let err = remaining_refusal(
            "p",
            &[
                ("a.example.com".into(), vec!["ns/one".into(), "ns/two".into()]),
                ("b.example.com".into(), vec![]),
            ],
        )
        .unwrap();
        assert_eq!(
            err.to_string(),
            "refusing to delete the CRDs of p: custom resources remain (a.example.com: ns/one, ns/two); \
             nothing was deleted. Delete them first (kubectl delete a.example.com --all -A), or uninstall \
             without --delete-crds to keep the CRDs"
        );
        assert_eq!(err.exit_code(), 1);
    }

    #[test]
    fn long_lists_of_remaining_resources_are_cut() {
        let many: Vec<String> = (0..12).map(|i| format!("ns/r{i}")).collect();
        let err = remaining_refusal("p", &[("a.example.com".into(), many)])
            .unwrap()
            .to_string();
        assert!(err.contains("ns/r9, and 2 more"), "{err}");
        assert!(!err.contains("ns/r10"), "{err}");
    }

    #[test]
    fn the_custom_resource_api_uses_the_storage_version() {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false},
                    {"name": "v1", "served": true, "storage": true}
                ]
            }
        }))
        .unwrap();
        let ar = crd_resource(&crd).unwrap();
        assert_eq!(ar.api_version, "example.com/v1");
        assert_eq!(ar.plural, "widgets");
        assert_eq!(ar.kind, "Widget");
    }
}
