//! Subscription controller: observe → resolve ([`crate::resolve`]) → create this Subscription's
//! own InstallPlan → write the status computed by [`crate::resolve::status`].
//!
//! # One reconcile
//!
//! 1. **Observe** (reflector stores, no API reads): the CatalogSources the namespace can see (its
//!    own and the global catalog namespace's) with their parsed models from the catalog cache
//!    ([`super::cache`], built once per ConfigMap `resourceVersion` and shared by `Arc`), the
//!    CSVs, Subscriptions, InstallPlans and OperatorGroups of the namespace.
//! 2. **Resolve**, unless the Subscription waits on an InstallPlan it references
//!    ([`status::needs_resolution`]): exactly one OperatorGroup must exist (else
//!    `ResolutionFailed`, naming the fix), then [`resolve::resolve`] picks the next bundle and the
//!    dependencies that come with it. One rule of the shell stays on top: an upgrade starts only
//!    from a CSV in phase `Succeeded`. Its replacement re-owns the shared ServiceAccounts, so a
//!    CSV still `Pending` would never succeed, and the replacement would wait forever for it to
//!    become `Replacing` (which needs `Succeeded`).
//! 3. **Plan**: the InstallPlan has a deterministic name
//!    ([`crate::plan::steps::install_plan_name`], from the Subscription's uid and the CSV), is
//!    looked up in the store and created (a create, so an existing plan is never overwritten:
//!    a conflict reads it instead), is owned by the Subscription, and lists the bundle's steps ([`crate::plan::steps::bundle_steps`],
//!    from the bundle's inlined objects in the catalog model). A controller that crashes after
//!    creating it finds it again instead of making a second one.
//! 4. **Status**: [`status::next_status`] (conditions keep their `lastTransitionTime` while their
//!    status does not flip); the write is skipped when nothing but timestamps changed
//!    ([`status::status_changed`]). A new `ResolutionFailed` message is also a Warning Event, once
//!    per new message.
//!
//! # Dependencies: a Subscription step in the parent's InstallPlan
//!
//! When resolution returns [`resolve::Dependency`]s (`olm.package.required`,
//! `olm.gvk.required`), the parent's InstallPlan gets one extra step per dependency: a
//! `Subscription` step ([`crate::plan::steps::subscription_step`]) whose manifest is the generated
//! Subscription (upstream's name `<package>-<channel>-<catsrc>-<catsrcNamespace>`, `startingCSV`
//! the chosen bundle, `Automatic` approval, the `olm.generated-by: <plan>` annotation and the
//! Operator-API component label). This is upstream's shape (a Subscription step, §2.6 and §2.9 of
//! the semantics notes) and fits our executor as is: the step is applied with the plan, after
//! approval, like any other object; only, a Subscription is not owned by the parent's CSV (an
//! upgrade of the parent deletes the old CSV, which must not take the dependency with it). The
//! generated Subscription then resolves and installs its bundle like any other Subscription,
//! with its own (Automatic) InstallPlan. A Manual parent therefore gates its dependencies until
//! it is approved, and no longer. While the generated Subscription is installing, resolution of
//! the parent sees it (a Subscription of the namespace already installing a satisfying bundle)
//! and generates nothing more.
//!
//! Approval is per Subscription: each gets its own InstallPlans
//! ([`status::plan_approval`]), so a Manual Subscription never gates another one's installs
//! (upstream shares one plan per namespace).

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::core::v1::ObjectReference,
    apimachinery::pkg::apis::meta::v1::{OwnerReference, Time},
    jiff::Timestamp,
};
use kube::{
    Api, Resource, ResourceExt,
    api::PostParams,
    runtime::{controller::Action, reflector::ObjectRef},
};
use serde_json::Value;

use super::{Context, Error, Result, cache::LoadedCatalog, instrumented};
use crate::{
    api::{
        reasons::subscription as reason,
        v1alpha1::{
            CatalogSource, CsvPhase, InstallPlan, InstallPlanSpec, InstallPlanStatus, Subscription,
            SubscriptionConditionType as T, connection_state,
        },
    },
    catalog::model::Bundle,
    k8s::apply,
    plan::steps::{self, StepsInput},
    resolve::{
        self, Catalog, CatalogKey, Catalogs, ExistingSubscription, Installed, InstalledCsv, Request,
        Resolution, Selected,
        status::{self, CatalogHealthObservation, ResolutionStep, StatusInput},
    },
};

/// Reconciles one Subscription.
pub async fn reconcile(sub: Arc<Subscription>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(Arc::clone(&sub), Arc::clone(&ctx), reconcile_inner(sub, ctx)).await
}

/// What this reconcile decided, before the status is computed.
enum Decision {
    NotRun,
    Failed(&'static str, String),
    UpToDate(Option<String>),
    /// An upgrade waits for the installed CSV to succeed (the adopted CSV, if any).
    WaitingForSucceeded(Option<String>),
    NewPlan(String, Box<InstallPlan>),
}

async fn reconcile_inner(sub: Arc<Subscription>, ctx: Arc<Context>) -> Result<Action> {
    let ns = sub
        .namespace()
        .ok_or_else(|| Error::InvalidObject("Subscription without namespace".into()))?;
    let name = sub.name_any();
    let stores = &ctx.shared.stores;
    let global = ctx.shared.config.global_namespace.clone();
    let now = Time(Timestamp::now());
    let old = sub.status.clone();
    let approval = sub.spec.approval();
    ctx.shared
        .metrics
        .subscription_sync_total
        .get_or_create(&crate::metrics::SubscriptionLabels {
            name: name.clone(),
            installed: old
                .as_ref()
                .and_then(|s| s.installed_csv.clone())
                .unwrap_or_default(),
            channel: sub.spec.channel.clone().unwrap_or_default(),
            package: sub.spec.name.clone(),
            approval: approval.as_str().to_owned(),
        })
        .inc();

    // Observe: the catalogs the namespace can see, with their models from the cache.
    let mut sources: Vec<Arc<CatalogSource>> = stores
        .catalog_sources
        .state()
        .into_iter()
        .filter(|c| c.namespace().is_some_and(|n| n == ns || n == global))
        .collect();
    sources.sort_by_key(|c| (c.namespace(), c.name_any()));
    let loaded: Vec<(Arc<CatalogSource>, Option<Arc<LoadedCatalog>>)> = sources
        .into_iter()
        .map(|cs| {
            let model = ctx
                .shared
                .catalogs
                .get(&cs.namespace().unwrap_or_default(), &cs.name_any());
            (cs, model)
        })
        .collect();
    let health: Vec<CatalogHealthObservation> = loaded
        .iter()
        .map(|(cs, model)| CatalogHealthObservation {
            catalog: ObjectReference {
                api_version: Some("operators.coreos.com/v1alpha1".into()),
                kind: Some("CatalogSource".into()),
                name: Some(cs.name_any()),
                namespace: cs.namespace(),
                uid: cs.uid(),
                ..Default::default()
            },
            healthy: model.is_some(),
        })
        .collect();
    let catalogs = Catalogs {
        global_namespace: global.clone(),
        catalogs: loaded
            .iter()
            .map(|(cs, model)| Catalog {
                key: CatalogKey::new(cs.namespace().unwrap_or_default(), cs.name_any()),
                priority: cs
                    .spec
                    .priority
                    .and_then(|p| i32::try_from(p).ok())
                    .unwrap_or_default(),
                model: model.as_deref().map(|m| &m.model),
                problem: model.is_none().then(|| catalog_problem(cs)),
            })
            .collect(),
    };

    // Observe: what the namespace holds.
    let in_ns = |n: Option<String>| n.as_deref() == Some(ns.as_str());
    let csv_objects: Vec<_> = stores
        .csvs
        .state()
        .into_iter()
        .filter(|c| in_ns(c.namespace()))
        .collect();
    let installed = Installed {
        csvs: csv_objects.iter().map(|c| InstalledCsv::from_csv(c)).collect(),
        subscriptions: stores
            .subscriptions
            .state()
            .iter()
            .filter(|s| in_ns(s.namespace()))
            .map(|s| ExistingSubscription::from_subscription(s))
            .collect(),
    };
    let mut plans: Vec<Arc<InstallPlan>> = stores
        .install_plans
        .state()
        .into_iter()
        .filter(|p| in_ns(p.namespace()))
        .collect();
    // A plan created by the previous reconcile may not have reached the store yet: read it, so
    // the status does not mistake it for a deleted plan.
    if let Some(referenced) = old
        .as_ref()
        .and_then(|s| s.install_plan_ref.as_ref())
        .and_then(|r| r.name.clone())
        && !plans.iter().any(|p| p.name_any() == referenced)
    {
        let api: Api<InstallPlan> = Api::namespaced(ctx.client(), &ns);
        if let Some(plan) = api
            .get_opt(&referenced)
            .await
            .map_err(Error::observe(format!("InstallPlan {ns}/{referenced}")))?
        {
            plans.push(Arc::new(plan));
        }
    }

    // Resolve and plan.
    let decision = if status::needs_resolution(old.as_ref()) {
        decide(&sub, &ctx, &ns, &catalogs, &installed, &csv_objects).await?
    } else {
        Decision::NotRun
    };
    let action = match &decision {
        Decision::NotRun => Action::requeue(Duration::from_secs(30)),
        // The CSV event that woke us may be ahead of the shared CSV store: look again soon.
        Decision::WaitingForSucceeded(_) => Action::requeue(Duration::from_secs(3)),
        Decision::Failed(..) => Action::requeue(Duration::from_secs(60)),
        Decision::UpToDate(_) => Action::requeue(Duration::from_secs(300)),
        Decision::NewPlan(..) => Action::requeue(Duration::from_secs(30)),
    };

    // Status.
    let csv_names: Vec<String> = csv_objects.iter().map(|c| c.name_any()).collect();
    let csv_refs: Vec<&str> = csv_names.iter().map(String::as_str).collect();
    let plan_refs: Vec<&InstallPlan> = plans.iter().map(AsRef::as_ref).collect();
    let resolution = match &decision {
        Decision::NotRun => ResolutionStep::NotRun,
        Decision::Failed(reason, message) => ResolutionStep::Failed { reason, message },
        Decision::UpToDate(adopted) | Decision::WaitingForSucceeded(adopted) => ResolutionStep::UpToDate {
            adopted: adopted.as_deref(),
        },
        Decision::NewPlan(csv, plan) => ResolutionStep::NewPlan { csv, plan },
    };
    let next = status::next_status(&StatusInput {
        subscription: &sub,
        catalog_health: &health,
        csvs: &csv_refs,
        install_plans: &plan_refs,
        resolution,
        now: &now,
    });
    if let Decision::Failed(_, message) = &decision {
        let is_new = old
            .as_ref()
            .and_then(|o| o.condition(&T::ResolutionFailed))
            .is_none_or(|c| c.message.as_deref() != Some(message.as_str()));
        if is_new {
            ctx.warning(
                &sub.object_ref(&()),
                "ResolutionFailed",
                "Resolve",
                message.clone(),
            );
        }
    }
    // Skip a write that changes nothing, and one that repeats our last write while the store
    // still shows the Subscription as it was before that write (the watch lags behind).
    ctx.write_status(&*sub, status::status_changed(old.as_ref(), &next), &next)
        .await?;
    Ok(action)
}

/// Why a visible catalog has no model: its CatalogSource's status message, else "not loaded yet".
fn catalog_problem(cs: &CatalogSource) -> String {
    let status = cs.status.as_ref();
    let ready = status
        .and_then(|s| s.connection_state.as_ref())
        .is_some_and(|c| c.last_observed_state == connection_state::READY);
    match status.and_then(|s| s.message.clone()).filter(|m| !m.is_empty()) {
        Some(message) if !ready => message,
        _ => "its content has not been loaded yet".to_owned(),
    }
}

/// Resolution for a Subscription that needs it, and the InstallPlan it leads to.
async fn decide(
    sub: &Subscription,
    ctx: &Context,
    ns: &str,
    catalogs: &Catalogs<'_>,
    installed: &Installed,
    csvs: &[Arc<crate::api::v1alpha1::ClusterServiceVersion>],
) -> Result<Decision> {
    let mut groups: Vec<String> = ctx
        .shared
        .stores
        .operator_groups
        .state()
        .iter()
        .filter(|g| g.namespace().as_deref() == Some(ns))
        .map(|g| g.name_any())
        .collect();
    groups.sort();
    if groups.len() != 1 {
        let found = if groups.is_empty() {
            "none".to_owned()
        } else {
            groups.join(", ")
        };
        return Ok(Decision::Failed(
            reason::ERROR_PREVENTED_RESOLUTION,
            format!(
                "expected 1 OperatorGroup in namespace {ns}, found {}: {found}; {}",
                groups.len(),
                if groups.is_empty() {
                    "create one (e.g. manifests/samples/operatorgroup.yaml)"
                } else {
                    "delete all but one"
                }
            ),
        ));
    }

    let request = Request::from_subscription(sub);
    let resolution = match resolve::resolve(&request, catalogs, installed) {
        Ok(r) => r,
        Err(e) => return Ok(Decision::Failed(e.reason(), e.to_string())),
    };
    let Some(selected) = resolution.install() else {
        return Ok(Decision::UpToDate(resolution.adopted.clone()));
    };
    if let Some(replaces) = selected.replaces() {
        let succeeded = csvs.iter().any(|c| {
            c.name_any() == replaces
                && c.status.as_ref().and_then(|s| s.phase.clone()) == Some(CsvPhase::Succeeded)
        });
        if !succeeded {
            return Ok(Decision::WaitingForSucceeded(resolution.adopted.clone()));
        }
    }
    let Some(bundle) = selected.lookup(catalogs) else {
        return Ok(Decision::Failed(
            reason::ERROR_PREVENTED_RESOLUTION,
            format!(
                "bundle {} is no longer in catalog {}; resolution will run again",
                selected.bundle, selected.catalog
            ),
        ));
    };
    match create_plan(sub, ctx, ns, &resolution, selected, bundle).await? {
        Ok(plan) => Ok(Decision::NewPlan(selected.bundle.clone(), Box::new(plan))),
        Err(message) => Ok(Decision::Failed(reason::ERROR_PREVENTED_RESOLUTION, message)),
    }
}

/// The bundle's inlined objects and its other properties (for the CSV's
/// `operatorframework.io/properties` annotation); a broken inlined object is an error naming it.
pub fn bundle_manifests(bundle: &Bundle) -> std::result::Result<(Vec<Value>, Vec<Value>), String> {
    let mut objects = Vec::new();
    for (i, object) in bundle.objects().into_iter().enumerate() {
        match object {
            Ok(v) => objects.push(v),
            Err(e) => return Err(format!("inlined object #{} (olm.bundle.object): {e}", i + 1)),
        }
    }
    let properties = bundle
        .properties
        .to_list()
        .into_iter()
        .filter(|p| !matches!(p, crate::catalog::property::Property::BundleObject(_)))
        .filter_map(|p| serde_json::to_value(p).ok())
        .collect();
    Ok((objects, properties))
}

/// Creates (or finds again) this Subscription's InstallPlan for `selected`, with a Subscription
/// step per dependency. `Ok(Err(message))` is a planning failure to report on the Subscription.
async fn create_plan(
    sub: &Subscription,
    ctx: &Context,
    ns: &str,
    resolution: &Resolution,
    selected: &Selected,
    bundle: &Bundle,
) -> Result<std::result::Result<InstallPlan, String>> {
    let csv = selected.bundle.as_str();
    let uid = sub.uid().unwrap_or_default();
    let sub_name = sub.name_any();
    let api: Api<InstallPlan> = Api::namespaced(ctx.client(), ns);
    // The deterministic name; a plan of that name for another CSV (a hash collision) moves us
    // to the next attempt. The store answers without a round trip; a plan it has not seen yet
    // (created by a reconcile whose watch event is still on its way) makes the create below
    // fail with a conflict, and is then read.
    // A plan that still has no status on the API server (its creator stopped before writing
    // it) gets its status below, like a new one.
    let mut ip_name = steps::install_plan_name(&uid, csv);
    let mut existing = None;
    for attempt in 0..8u32 {
        ip_name = steps::install_plan_name_attempt(&uid, csv, attempt);
        let key = ObjectRef::<InstallPlan>::new(&ip_name).within(ns);
        match ctx.shared.stores.install_plans.get(&key) {
            Some(ip) if !plans_csv(&ip, csv) => continue,
            Some(ip) if ip.status.is_some() => return Ok(Ok(ip.as_ref().clone())),
            Some(_) => {
                // The store may just lag behind the status write: ask the API server.
                let live = api
                    .get_opt(&ip_name)
                    .await
                    .map_err(Error::observe(format!("InstallPlan {ns}/{ip_name}")))?;
                match live {
                    Some(ip) if ip.status.is_some() => return Ok(Ok(ip)),
                    found => existing = found,
                }
                break;
            }
            None => break,
        }
    }
    let catalog = &selected.catalog;
    let mut plan = match bundle_manifests(bundle).and_then(|(objects, properties)| {
        steps::bundle_steps(&StepsInput {
            manifests: &objects,
            namespace: ns,
            replaces: selected.replaces(),
            package: &selected.package,
            source_name: &catalog.name,
            source_namespace: &catalog.namespace,
            properties: &properties,
        })
        .map_err(|e| e.to_string())
    }) {
        Ok(plan) => plan,
        Err(e) => return Ok(Err(format!("bundle {csv} in catalog {catalog}: {e}"))),
    };
    for dependency in &resolution.dependencies {
        let generated = dependency.subscription(ns, &ip_name);
        match steps::subscription_step(&generated, &dependency.bundle.bundle) {
            Ok(step) => plan.push(step),
            Err(e) => return Ok(Err(format!("dependency {}: {e}", dependency.subscription_name))),
        }
    }
    let approval = status::plan_approval(&sub.spec);
    let mut new_plan = InstallPlan::new(
        &ip_name,
        InstallPlanSpec {
            source: Some(catalog.name.clone()),
            source_namespace: Some(catalog.namespace.clone()),
            cluster_service_version_names: vec![csv.to_owned()],
            approval: approval.approval.clone(),
            approved: approval.approved,
            generation: None,
        },
    );
    new_plan.metadata.namespace = Some(ns.to_owned());
    new_plan.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "operators.coreos.com/v1alpha1".into(),
        kind: "Subscription".into(),
        name: sub_name,
        uid: uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(false),
    }]);
    // A create, not an apply: a plan of this name that already exists (the store lags behind
    // it) is read rather than overwritten, so a user's approval or another CSV's plan is never
    // reset.
    let params = PostParams {
        field_manager: Some(ctx.manager.clone()),
        ..PostParams::default()
    };
    let mut created = match existing {
        Some(ip) => ip,
        None => match api.create(&params, &new_plan).await {
            Ok(created) => created,
            Err(kube::Error::Api(conflict)) if conflict.code == 409 => {
                let found = api
                    .get_opt(&ip_name)
                    .await
                    .map_err(Error::observe(format!("InstallPlan {ns}/{ip_name}")))?;
                match found {
                    Some(ip) if plans_csv(&ip, csv) && ip.status.is_some() => return Ok(Ok(ip)),
                    Some(ip) if plans_csv(&ip, csv) => ip,
                    // Deleted meanwhile, or another CSV's plan: retry, by then from the store.
                    _ => {
                        return Err(Error::apply(format!("InstallPlan {ns}/{ip_name}"))(
                            kube::Error::Api(conflict),
                        ));
                    }
                }
            }
            Err(e) => return Err(Error::apply(format!("InstallPlan {ns}/{ip_name}"))(e)),
        },
    };
    let ip_status = InstallPlanStatus {
        phase: approval.phase,
        catalog_sources: vec![catalog.name.clone()],
        plan,
        ..Default::default()
    };
    apply::apply_status(&api, &ip_name, &ip_status, &ctx.manager)
        .await
        .map_err(Error::status(format!("InstallPlan {ns}/{ip_name}")))?;
    created.status = Some(ip_status);
    ctx.shared.metrics.install_plan_count.inc();
    let with = if resolution.dependencies.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = resolution
            .dependencies
            .iter()
            .map(|d| d.subscription_name.as_str())
            .collect();
        format!(" (with Subscriptions for its dependencies: {})", names.join(", "))
    };
    ctx.normal(
        &sub.object_ref(&()),
        "InstallPlanCreated",
        "Resolve",
        format!("created InstallPlan {ip_name} for {csv}{with}"),
    );
    Ok(Ok(created))
}

/// Whether `ip` is the plan for `csv`.
fn plans_csv(ip: &InstallPlan, csv: &str) -> bool {
    ip.spec.cluster_service_version_names.iter().any(|n| n == csv)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::{DeclarativeConfig, Model, declcfg::Origin};

    #[test]
    fn a_bundles_objects_are_unpacked_and_its_other_properties_kept_for_the_annotation() {
        let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "a.v1"}});
        let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, csv.to_string());
        let mut cfg = DeclarativeConfig::default();
        for (i, doc) in [
            json!({"schema": "olm.package", "name": "a", "defaultChannel": "s"}),
            json!({"schema": "olm.channel", "package": "a", "name": "s", "entries": [{"name": "a.v1"}]}),
            json!({"schema": "olm.bundle", "package": "a", "name": "a.v1", "image": "", "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}},
                {"type": "olm.package.required", "value": {"packageName": "b", "versionRange": ">=1.0.0"}},
                {"type": "olm.bundle.object", "value": {"data": data}},
            ]}),
        ]
        .into_iter()
        .enumerate()
        {
            cfg.add_value(Origin::new("c.json", i + 1), doc).unwrap();
        }
        let model = Model::from_config(cfg);
        let bundle = model.package("a").unwrap().bundle("a.v1").unwrap();
        let (objects, properties) = bundle_manifests(bundle).unwrap();
        assert_eq!(objects, [csv]);
        let types: Vec<&str> = properties.iter().filter_map(|p| p["type"].as_str()).collect();
        assert_eq!(types, ["olm.package", "olm.package.required"]);
        assert_eq!(properties[0]["value"]["packageName"], "a");
        assert_eq!(properties[1]["value"]["versionRange"], ">=1.0.0");
    }
}
