//! `kubectl-olm rollback SUB`: returns a Subscription to the CSV it had installed before, when
//! that is safe, after showing the plan and asking (`--yes` for scripts; `--dry-run` only
//! checks). Everything is read and written **as the user** (their kubeconfig).
//!
//! The checks and the new Subscription are decided by [`crate::plan::subscription::rollback`]:
//! an earlier CSV in the `olm-rs.io/installed-csvs` history, its bundle still in the catalog, its
//! dependencies found in a catalog the namespace sees (every CatalogSource of the namespace and
//! of the global catalog namespace is read, as `why` reads them), no CRD version dropped while
//! objects of the CRD exist, no existing object the older schema rejects. The preview is the
//! plan the older bundle makes, shown as `kubectl olm plan show` shows one
//! ([`super::approve`]: each step new, changed or unchanged against the cluster, the
//! RBAC, the images), except that a step whose object the rollback deletes (the CSVs, and what
//! they own) reads `reinstalled` ([`rollback::reinstalled_by`]): it is created again, whatever it
//! looks like now.
//!
//! Then, as upstream users do a downgrade by hand: the CRDs' `status.storedVersions` lose the
//! versions the older CRDs drop (none of their objects is left), the Subscription and the
//! installed CSV are deleted (and the earlier CSV, when the upgrade left it `Replacing`: it would
//! stay so; the custom resources and CRDs stay), and the Subscription is
//! created again with `startingCSV` at the earlier CSV and `olm-rs.io/version-ceiling` at its
//! version, so it stays there; its InstallPlan is approved (the user approved the preview).

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams},
};
use serde::Serialize;

use crate::{
    api::v1alpha1::{ClusterServiceVersion, InstallPlan, Subscription},
    cli::{
        CliError, OutputFormat, RollbackArgs,
        cluster::{Cluster, is_not_found},
        cmd::cluster::{
            approve::{self, Preview},
            shared::{FIELD_MANAGER, qualified},
            why,
        },
    },
    plan::subscription::{self as status, Install, rollback},
    resolve::{CatalogKey, Selected, Selection},
};

/// What `rollback` shows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RollbackView {
    /// `namespace/name` of the Subscription.
    pub subscription: String,
    /// The installed CSV.
    pub from: String,
    /// The CSV it goes back to.
    pub to: String,
    /// CRDs whose `status.storedVersions` are trimmed first: name and the versions kept.
    pub stored_versions: BTreeMap<String, Vec<String>>,
    /// The plan the older bundle makes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
    /// Why there is no preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The catalogs the namespace sees that could not be read or listed (no dependency can come
    /// from them): `namespace/name: reason`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread_catalogs: Vec<String>,
}

fn refused(e: &rollback::Refusal, sub: &str) -> CliError {
    CliError::Refused(format!("rollback of subscription {sub} refused: {e}"))
}

/// Runs `rollback`.
///
/// # Errors
/// A refusal naming why the rollback is unsafe; lookup and API errors (a 403 names what the user
/// may not read or change).
pub async fn run(
    cluster: &Cluster,
    args: &RollbackArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let ns = cluster.namespace(args.namespace.as_deref());
    let sources = why::Sources {
        catalog: args.catalog.as_deref(),
        global_namespace: &args.global_catalog_namespace,
        registry: &args.registry,
    };
    let observed = why::observe(cluster, &ns, &args.subscription, &sources, streams.err).await?;
    let sub = &observed.subscription;
    let sub_name = sub.name_any();
    let full = format!("{ns}/{sub_name}");
    let (from, to) = rollback::target(sub).map_err(|e| refused(&e, &full))?;
    let package = observed.model.package(&sub.spec.name);
    let channel = sub
        .spec
        .channel
        .clone()
        .filter(|c| !c.is_empty())
        .or_else(|| package.map(|p| p.default_channel.clone()))
        .unwrap_or_default();
    let catalog_key = CatalogKey::new(&sub.spec.source_namespace, &sub.spec.source);
    let bundle = rollback::earlier_bundle(package, &sub.spec.name, &channel, &catalog_key.to_string(), &to)
        .map_err(|e| refused(&e, &full))?;
    let installed_version = observed
        .csvs
        .iter()
        .find(|c| c.name_any() == from)
        .and_then(|c| crate::resolve::InstalledCsv::from_csv(c).version)
        .or_else(|| package.and_then(|p| p.bundle(&from)).map(|b| b.version.clone()));
    rollback::older_than_installed(bundle, &from, installed_version.as_ref())
        .map_err(|e| refused(&e, &full))?;

    // CRD safety, per CRD the older bundle ships that the cluster has.
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
    let mut stored_versions = BTreeMap::new();
    for older in rollback::bundle_crds(bundle) {
        let crd_name = older.name_any();
        let live = match crds.get(&crd_name).await {
            Ok(live) => live,
            Err(e) if is_not_found(&e) => continue,
            Err(e) => return Err(cluster.api_error(&format!("get customresourcedefinition {crd_name}"), e)),
        };
        let mut objects = BTreeMap::new();
        for version in rollback::versions_to_read(&live, &older) {
            let gvk = kube::core::GroupVersionKind::gvk(&live.spec.group, &version, &live.spec.names.kind);
            let resource = ApiResource::from_gvk_with_plural(&gvk, &live.spec.names.plural);
            let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource);
            let list = api.list(&ListParams::default()).await.map_err(|e| {
                cluster.api_error(
                    &format!(
                        "list {}.{} (version {version}) in all namespaces",
                        live.spec.names.plural, live.spec.group
                    ),
                    e,
                )
            })?;
            let values = list
                .items
                .iter()
                .filter_map(|o| serde_json::to_value(o).ok())
                .collect();
            objects.insert(version, values);
        }
        if let Some(kept) =
            rollback::crd_rollback(&live, &older, &objects, &to).map_err(|e| refused(&e, &full))?
        {
            stored_versions.insert(crd_name, kept);
        }
    }

    // The preview: the plan the older bundle makes, compared with the cluster.
    let next = rollback::rollback_subscription(sub, &to, &bundle.version);
    // What the controller will resolve for the new Subscription, against every catalog the
    // namespace sees: the dependencies the earlier bundle brings (or why it cannot be installed).
    let catalogs = observed.catalogs();
    let dependencies = rollback::resolve_again(&next, &catalogs, &observed.installed(), &from, &to)
        .map_err(|e| refused(&e, &full))?;
    let install = Install {
        selected: Selected {
            catalog: catalog_key.clone(),
            package: sub.spec.name.clone(),
            channel: channel.clone(),
            bundle: to.clone(),
            version: bundle.version.clone(),
            selection: Selection::StartingCsv,
        },
        dependencies,
        bundle,
    };
    // The CSVs the rollback deletes (name, uid): what they take with them is created again.
    let deleted: Vec<(String, String)> = observed
        .csvs
        .iter()
        .filter(|c| c.name_any() == from || c.name_any() == to)
        .map(|c| (c.name_any(), c.uid().unwrap_or_default()))
        .collect();
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let (preview, note) = match status::install_plan(&next, &ns, "rollback-preview", &install, None, &now) {
        Ok((mut plan, plan_status)) => {
            plan.status = Some(plan_status);
            let mut shown = approve::preview(&plan);
            approve::compare_steps(cluster, &plan, &mut shown).await;
            reinstalled_steps(&ns, &deleted, &mut shown);
            shown.phase = "not created yet: the plan the Subscription will get".to_owned();
            (Some(shown), None)
        }
        Err(message) => (
            None,
            Some(format!(
                "no preview: {message}; the controller pulls the bundle when it plans"
            )),
        ),
    };
    let view = RollbackView {
        subscription: full.clone(),
        from: from.clone(),
        to: to.clone(),
        stored_versions,
        preview,
        note,
        unread_catalogs: observed
            .others
            .iter()
            .filter_map(|c| c.content.as_ref().err().map(|e| format!("{}: {e}", c.key)))
            .chain(
                observed
                    .unlisted
                    .iter()
                    .map(|(n, e)| format!("catalogsources in namespace {n}: {e}")),
            )
            .collect(),
    };
    let left_over = observed.csvs.iter().find(|c| c.name_any() == to).map(|c| {
        let phase = c
            .status
            .as_ref()
            .and_then(|s| s.phase.as_ref())
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        (c.name_any(), phase)
    });
    let text = matches!(format, OutputFormat::Table | OutputFormat::Wide);
    if text {
        writeln!(streams.out, "rollback of subscription {full}: {from} -> {to}")?;
        for (crd, kept) in &view.stored_versions {
            writeln!(
                streams.out,
                "  CRD {crd}: status.storedVersions becomes [{}] (no object is left in the versions {to} drops)",
                kept.join(", ")
            )?;
        }
        let also = left_over
            .as_ref()
            .map(|(name, phase)| format!(" and csv {name} (left {phase} by the upgrade)"))
            .unwrap_or_default();
        writeln!(
            streams.out,
            "  then: delete subscription {sub_name} and csv {from}{also} (custom resources and CRDs \
             stay), and subscribe again with startingCSV {to}, pinned by olm-rs.io/version-ceiling={}",
            bundle.version
        )?;
        for unread in &view.unread_catalogs {
            writeln!(
                streams.out,
                "  not read (no dependency can come from it): {unread}"
            )?;
        }
        if let Some(p) = &view.preview {
            approve::write_preview(streams.out, p, format == OutputFormat::Wide)?;
        }
        if let Some(n) = &view.note {
            writeln!(streams.out, "  {n}")?;
        }
    } else {
        crate::cli::output::print_object(streams.out, format, &view)?;
    }
    if args.dry_run {
        if text {
            writeln!(streams.out, "rollback is safe; nothing changed (dry run)")?;
        }
        return Ok(());
    }
    if text && !args.yes && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        write!(streams.err, "roll back {full} to {to}? [y/N] ")?;
        streams.err.flush()?;
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            return Err(CliError::Refused(format!(
                "{full} left at {from}; answer y to roll back, or pass --yes"
            )));
        }
    }

    // Act.
    for (crd, kept) in &view.stored_versions {
        let patch = serde_json::json!({"status": {"storedVersions": kept}});
        crds.patch_status(crd, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| {
                cluster.api_error(&format!("update the status of customresourcedefinition {crd}"), e)
            })?;
    }
    let subs: Api<Subscription> = Api::namespaced(cluster.client.clone(), &ns);
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(cluster.client.clone(), &ns);
    delete_and_wait(
        cluster,
        &subs,
        &sub_name,
        &format!("subscription {sub_name} in namespace {ns}"),
    )
    .await?;
    delete_and_wait(cluster, &csvs, &from, &format!("csv {from} in namespace {ns}")).await?;
    // The earlier CSV, when the upgrade left it (Replacing, waiting to be deleted): it would
    // stay Replacing; the new plan installs it again from its bundle.
    if let Some((left, _)) = &left_over {
        delete_and_wait(cluster, &csvs, left, &format!("csv {left} in namespace {ns}")).await?;
    }
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    subs.create(&params, &next)
        .await
        .map_err(|e| cluster.api_error(&format!("create subscription {sub_name} in namespace {ns}"), e))?;
    // Approve its plan (the preview was approved), once the controller has made it.
    let plans: Api<InstallPlan> = Api::namespaced(cluster.client.clone(), &ns);
    let mut approved = None;
    let deadline = std::time::Instant::now() + args.timeout;
    while std::time::Instant::now() < deadline {
        let current = subs
            .get(&sub_name)
            .await
            .map_err(|e| cluster.api_error(&format!("get subscription {sub_name} in namespace {ns}"), e))?;
        let status = current.status.as_ref();
        let plan = status
            .filter(|s| s.current_csv.as_deref() == Some(to.as_str()))
            .and_then(|s| s.install_plan_ref.as_ref())
            .and_then(|r| r.name.clone());
        if let Some(plan) = plan {
            let found = plans
                .get(&plan)
                .await
                .map_err(|e| cluster.api_error(&format!("get installplan {plan} in namespace {ns}"), e))?;
            if !found.spec.approved {
                let patch = serde_json::json!({"spec": {"approved": true}});
                let params = PatchParams {
                    field_manager: Some(FIELD_MANAGER.to_owned()),
                    ..PatchParams::default()
                };
                plans
                    .patch(&plan, &params, &Patch::Merge(&patch))
                    .await
                    .map_err(|e| {
                        cluster.api_error(&format!("approve installplan {plan} in namespace {ns}"), e)
                    })?;
            }
            approved = Some(plan);
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if text {
        match approved {
            Some(plan) => writeln!(
                streams.out,
                "{} rolled back: installplan {plan} installs {to}; it stays there until the annotation \
                 olm-rs.io/version-ceiling is raised or removed",
                qualified::<Subscription>(&sub_name)
            )?,
            None => writeln!(
                streams.out,
                "{} created again at startingCSV {to}; its InstallPlan is not there yet: approve it \
                 with `kubectl olm approve --subscription {sub_name} -n {ns}` when it is (a Manual \
                 Subscription's plan waits for it)",
                qualified::<Subscription>(&sub_name)
            )?,
        }
    }
    Ok(())
}

use crate::cli::output::Streams;

/// Marks `reinstalled` the compared steps whose live object the rollback deletes: the deleted
/// CSVs themselves, and what they own ([`rollback::reinstalled_by`]), read from the live
/// metadata [`approve::compare_steps`] kept (no second read).
fn reinstalled_steps(ns: &str, deleted: &[(String, String)], shown: &mut Preview) {
    for step in &mut shown.steps {
        if !matches!(step.change.as_deref(), Some("changed" | "unchanged")) {
            continue;
        }
        let live = serde_json::json!({ "metadata": step.live_metadata.clone().unwrap_or_default() });
        if let Some(csv) = rollback::reinstalled_by(&step.kind, &step.name, &live, ns, deleted) {
            step.change = Some(rollback::REINSTALLED.to_owned());
            step.fields.clear();
            step.note = Some(if step.name == csv {
                "the rollback deletes it; the plan creates it again from its bundle".to_owned()
            } else {
                format!("deleted with csv {csv} by the rollback; the plan creates it again")
            });
        }
    }
}

/// Deletes `name` and waits (up to a minute) until it is gone.
async fn delete_and_wait<K>(cluster: &Cluster, api: &Api<K>, name: &str, what: &str) -> Result<(), CliError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(e) if is_not_found(&e) => return Ok(()),
        Err(e) => return Err(cluster.api_error(&format!("delete {what}"), e)),
    }
    for _ in 0..120 {
        match api.get_opt(name).await {
            Ok(None) => return Ok(()),
            Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(500)).await,
            Err(e) => return Err(cluster.api_error(&format!("get {what}"), e)),
        }
    }
    Err(CliError::WaitTimedOut(format!(
        "{what} is still there a minute after it was deleted (a finalizer?); check `kubectl get` it"
    )))
}
