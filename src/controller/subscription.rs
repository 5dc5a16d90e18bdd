//! Subscription controller: observe (catalog cache, OperatorGroups, CSVs, InstallPlans) →
//! resolve → create this Subscription's own InstallPlan (deterministic name, owned by the
//! Subscription, so a restart never duplicates it) → Subscription status.
//!
//! Approval is per Subscription: each gets its own InstallPlans, so a Manual Subscription
//! never gates another one's installs (upstream shares one plan per namespace).
//!
//! Resolution currently goes through [`super::interim`] (channel/default channel,
//! startingCSV or head, one hop along replaces/skips) until the `resolve` module lands.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{api::core::v1::ObjectReference, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{Api, Resource, ResourceExt, runtime::controller::Action};
use serde_json::json;

use super::{Context, Error, Result, instrumented, interim};
use crate::{
    api::{
        ConditionStatus,
        reasons::subscription as reason,
        v1alpha1::{
            Approval, InstallPlan, InstallPlanPhase, InstallPlanReference, InstallPlanStatus, Subscription,
            SubscriptionCatalogHealth, SubscriptionCondition, SubscriptionConditionType as T,
            SubscriptionState, SubscriptionStatus,
        },
    },
    k8s::apply,
    plan::steps::{self, StepsInput},
};

fn condition(type_: T, status: bool, reason: &str, message: impl Into<String>) -> SubscriptionCondition {
    let now = Time(Timestamp::now());
    SubscriptionCondition {
        type_,
        status: ConditionStatus::from_bool(status),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

/// Sets a condition, keeping the old transition time when only the timestamps would change.
fn set(status: &mut SubscriptionStatus, old: Option<&SubscriptionStatus>, cond: SubscriptionCondition) {
    let mut cond = cond;
    if let Some(prev) = old.and_then(|o| o.condition(&cond.type_))
        && prev.status == cond.status
    {
        cond.last_transition_time = prev.last_transition_time.clone();
    }
    status.set_condition(cond);
}

/// Reconciles one Subscription.
pub async fn reconcile(sub: Arc<Subscription>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(Arc::clone(&sub), Arc::clone(&ctx), reconcile_inner(sub, ctx)).await
}

async fn reconcile_inner(sub: Arc<Subscription>, ctx: Arc<Context>) -> Result<Action> {
    let ns = sub
        .namespace()
        .ok_or_else(|| Error::InvalidObject("Subscription without namespace".into()))?;
    let name = sub.name_any();
    let stores = &ctx.shared.stores;
    let now = Time(Timestamp::now());
    let old = sub.status.clone();
    let mut status = old
        .clone()
        .unwrap_or_else(|| SubscriptionStatus::new(now.clone()));
    status.last_updated = now.clone();
    let (cat_ns, cat_name) = (sub.spec.source_namespace.clone(), sub.spec.source.clone());
    let reference = sub.object_ref(&());
    let approval = sub.spec.approval();
    ctx.shared
        .metrics
        .subscription_sync_total
        .get_or_create(&crate::metrics::SubscriptionLabels {
            name: name.clone(),
            installed: status.installed_csv.clone().unwrap_or_default(),
            channel: sub.spec.channel.clone().unwrap_or_default(),
            package: sub.spec.name.clone(),
            approval: approval.as_str().to_owned(),
        })
        .inc();

    // Catalog health.
    let catsrc = stores
        .catalog_sources
        .state()
        .into_iter()
        .find(|c| c.namespace().as_deref() == Some(cat_ns.as_str()) && c.name_any() == cat_name);
    let catalog = catsrc
        .as_ref()
        .and_then(|_| ctx.shared.catalogs.get(&cat_ns, &cat_name));
    status.catalog_health = vec![SubscriptionCatalogHealth {
        catalog_source_ref: ObjectReference {
            api_version: Some("operators.coreos.com/v1alpha1".into()),
            kind: Some("CatalogSource".into()),
            name: Some(cat_name.clone()),
            namespace: Some(cat_ns.clone()),
            uid: catsrc.as_ref().and_then(|c| c.uid()),
            ..Default::default()
        },
        last_updated: now.clone(),
        healthy: catalog.is_some(),
    }];
    let health = match (&catsrc, &catalog) {
        (_, Some(_)) => condition(
            T::CatalogSourcesUnhealthy,
            false,
            reason::ALL_CATALOG_SOURCES_HEALTHY,
            "all available catalogsources are healthy",
        ),
        (None, _) => condition(
            T::CatalogSourcesUnhealthy,
            true,
            reason::UNHEALTHY_CATALOG_SOURCE_FOUND,
            format!("targeted catalogsource {cat_ns}/{cat_name} missing"),
        ),
        (Some(_), None) => condition(
            T::CatalogSourcesUnhealthy,
            true,
            reason::UNHEALTHY_CATALOG_SOURCE_FOUND,
            format!("targeted catalogsource {cat_ns}/{cat_name} unhealthy"),
        ),
    };
    set(&mut status, old.as_ref(), health);

    let outcome = decide_and_act(&sub, &ctx, &ns, &mut status, old.as_ref(), catalog.as_deref()).await;
    let action = match outcome {
        Ok(action) => {
            status.remove_conditions(&[T::ResolutionFailed]);
            action
        }
        Err(Failure::Resolution(reason_, message)) => {
            let is_new = old
                .as_ref()
                .and_then(|o| o.condition(&T::ResolutionFailed))
                .is_none_or(|c| c.message.as_deref() != Some(message.as_str()));
            if is_new {
                ctx.events
                    .warning(&reference, "ResolutionFailed", "Resolve", message.clone())
                    .await;
            }
            set(
                &mut status,
                old.as_ref(),
                condition(T::ResolutionFailed, true, reason_, message),
            );
            Action::requeue(Duration::from_secs(60))
        }
        Err(Failure::Api(err)) => return Err(err),
    };
    let changed = old
        .as_ref()
        .is_none_or(|o| !apply::same_ignoring_time(&apply::to_value(o), &apply::to_value(&status)));
    if changed {
        let api: Api<Subscription> = Api::namespaced(ctx.client(), &ns);
        apply::apply_status(&api, &name, &status, &ctx.manager)
            .await
            .map_err(Error::status(format!("Subscription {ns}/{name}")))?;
    }
    Ok(action)
}

enum Failure {
    Resolution(&'static str, String),
    Api(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::Api(e)
    }
}

async fn decide_and_act(
    sub: &Subscription,
    ctx: &Context,
    ns: &str,
    status: &mut SubscriptionStatus,
    old: Option<&SubscriptionStatus>,
    catalog: Option<&super::cache::LoadedCatalog>,
) -> std::result::Result<Action, Failure> {
    let stores = &ctx.shared.stores;
    let mut groups: Vec<String> = stores
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
        return Err(Failure::Resolution(
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

    // Follow the InstallPlan we created last.
    if let Some(current) = status.current_csv.clone() {
        let ip_name = status.install_plan_ref.as_ref().and_then(|r| r.name.clone());
        let ip = ip_name.as_ref().and_then(|n| {
            stores
                .install_plans
                .state()
                .into_iter()
                .find(|i| i.namespace().as_deref() == Some(ns) && &i.name_any() == n)
        });
        let installed = stores
            .csvs
            .state()
            .into_iter()
            .find(|c| c.namespace().as_deref() == Some(ns) && c.name_any() == current);
        let csv_exists = installed.is_some();
        // Upgrade only from a CSV that finished installing: its replacement re-owns the shared
        // ServiceAccounts, which would stop a CSV still in Pending from ever succeeding (and
        // the replacement waits for it to be Replacing, which needs Succeeded).
        let installed_succeeded = installed
            .as_ref()
            .and_then(|c| c.status.as_ref())
            .and_then(|s| s.phase.clone())
            == Some(crate::api::v1alpha1::CsvPhase::Succeeded);
        status.remove_conditions(&[T::InstallPlanPending, T::InstallPlanFailed, T::InstallPlanMissing]);
        match ip
            .as_ref()
            .and_then(|i| i.status.as_ref())
            .map(|s| s.phase.clone())
        {
            Some(InstallPlanPhase::Failed) => {
                let msg = ip
                    .as_ref()
                    .and_then(|i| i.status.as_ref())
                    .and_then(|s| s.message.clone())
                    .unwrap_or_default();
                set(
                    status,
                    old,
                    condition(T::InstallPlanFailed, true, "InstallComponentFailed", msg),
                );
            }
            Some(phase @ (InstallPlanPhase::RequiresApproval | InstallPlanPhase::Installing)) => {
                set(
                    status,
                    old,
                    condition(T::InstallPlanPending, true, phase.as_str(), ""),
                );
            }
            Some(_) => {}
            None if ip_name.is_some() && !csv_exists => {
                set(
                    status,
                    old,
                    condition(
                        T::InstallPlanMissing,
                        true,
                        reason::REFERENCED_INSTALL_PLAN_NOT_FOUND,
                        format!("install plan {} not found", ip_name.unwrap_or_default()),
                    ),
                );
            }
            None => {}
        }
        if !csv_exists {
            status.state = Some(SubscriptionState::UpgradePending);
            return Ok(Action::requeue(Duration::from_secs(30)));
        }
        status.installed_csv = Some(current.clone());
        status.state = Some(SubscriptionState::AtLatestKnown);
        // Upgrade: one hop from what is installed.
        if !installed_succeeded {
            return Ok(Action::requeue(Duration::from_secs(30)));
        }
        let Some(catalog) = catalog else {
            return Ok(Action::requeue(Duration::from_secs(60)));
        };
        let (_, entries) = interim::channel(
            &catalog.blobs,
            &sub.spec.name,
            sub.spec.channel(),
            &sub.spec.source,
        )
        .map_err(|m| Failure::Resolution(reason::CONSTRAINTS_NOT_SATISFIABLE, m))?;
        if let Some(next) = interim::next_hop(&catalog.blobs, &sub.spec.name, &entries, &current) {
            let next = next.to_owned();
            install(sub, ctx, ns, status, catalog, &next, Some(&current)).await?;
            status.state = Some(SubscriptionState::UpgradePending);
        }
        return Ok(Action::requeue(Duration::from_secs(300)));
    }

    // First install.
    let Some(catalog) = catalog else {
        return Err(Failure::Resolution(
            reason::ERROR_PREVENTED_RESOLUTION,
            format!(
                "catalogsource {}/{} is missing or unhealthy; check `kubectl get catsrc -n {}` and spec.source/spec.sourceNamespace",
                sub.spec.source_namespace, sub.spec.source, sub.spec.source_namespace
            ),
        ));
    };
    let (channel, entries) = interim::channel(
        &catalog.blobs,
        &sub.spec.name,
        sub.spec.channel(),
        &sub.spec.source,
    )
    .map_err(|m| Failure::Resolution(reason::CONSTRAINTS_NOT_SATISFIABLE, m))?;
    let target = match sub.spec.starting_csv.as_deref().filter(|s| !s.is_empty()) {
        Some(start) if entries.iter().any(|e| e["name"] == start) => start.to_owned(),
        Some(start) => {
            let names: Vec<&str> = entries.iter().filter_map(|e| e["name"].as_str()).collect();
            return Err(Failure::Resolution(
                reason::CONSTRAINTS_NOT_SATISFIABLE,
                format!(
                    "startingCSV {start} is not in channel {channel} of package {}; entries: {}",
                    sub.spec.name,
                    names.join(", ")
                ),
            ));
        }
        None => match interim::head(&entries) {
            Some(h) => h.to_owned(),
            None => {
                return Err(Failure::Resolution(
                    reason::CONSTRAINTS_NOT_SATISFIABLE,
                    format!("channel {channel} of package {} has no head", sub.spec.name),
                ));
            }
        },
    };
    install(sub, ctx, ns, status, catalog, &target, None).await?;
    status.state = Some(SubscriptionState::UpgradePending);
    Ok(Action::requeue(Duration::from_secs(30)))
}

async fn install(
    sub: &Subscription,
    ctx: &Context,
    ns: &str,
    status: &mut SubscriptionStatus,
    catalog: &super::cache::LoadedCatalog,
    csv: &str,
    replaces: Option<&str>,
) -> std::result::Result<(), Failure> {
    let uid = sub.uid().unwrap_or_default();
    let sub_name = sub.name_any();
    let api: Api<InstallPlan> = Api::namespaced(ctx.client(), ns);
    // The deterministic name; a plan of that name for another CSV (a hash collision) moves
    // us to the next attempt.
    let mut ip_name = steps::install_plan_name(&uid, csv);
    let mut existing = None;
    for attempt in 0..8u32 {
        ip_name = steps::install_plan_name_attempt(&uid, csv, attempt);
        let found = api
            .get_opt(&ip_name)
            .await
            .map_err(Error::observe(format!("InstallPlan {ns}/{ip_name}")))?;
        match found {
            Some(ip) if !ip.spec.cluster_service_version_names.iter().any(|n| n == csv) => continue,
            found => {
                existing = found;
                break;
            }
        }
    }
    let ip = match existing {
        Some(ip) => ip,
        None => {
            let (objects, properties) = interim::bundle_objects(&catalog.blobs, &sub.spec.name, csv);
            let plan = steps::bundle_steps(&StepsInput {
                manifests: &objects,
                namespace: ns,
                replaces,
                package: &sub.spec.name,
                source_name: &sub.spec.source,
                source_namespace: &sub.spec.source_namespace,
                properties: &properties,
            })
            .map_err(|e| {
                Failure::Resolution(
                    reason::ERROR_PREVENTED_RESOLUTION,
                    format!(
                        "bundle {csv} in catalog {}/{}: {e}",
                        sub.spec.source_namespace, sub.spec.source
                    ),
                )
            })?;
            let approval = sub.spec.approval();
            let body = json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "InstallPlan",
                "metadata": {
                    "name": ip_name,
                    "namespace": ns,
                    "ownerReferences": [{
                        "apiVersion": "operators.coreos.com/v1alpha1",
                        "kind": "Subscription",
                        "name": sub_name,
                        "uid": uid,
                        "controller": true,
                        "blockOwnerDeletion": false,
                    }],
                },
                "spec": {
                    "clusterServiceVersionNames": [csv],
                    "approval": approval.as_str(),
                    "approved": approval == Approval::Automatic,
                    "source": sub.spec.source,
                    "sourceNamespace": sub.spec.source_namespace,
                },
            });
            let created = apply::apply(&api, &ip_name, &body, &ctx.manager)
                .await
                .map_err(Error::apply(format!("InstallPlan {ns}/{ip_name}")))?;
            let ip_status = InstallPlanStatus {
                phase: if approval == Approval::Manual {
                    InstallPlanPhase::RequiresApproval
                } else {
                    InstallPlanPhase::Installing
                },
                catalog_sources: vec![sub.spec.source.clone()],
                plan,
                ..Default::default()
            };
            apply::apply_status(&api, &ip_name, &ip_status, &ctx.manager)
                .await
                .map_err(Error::status(format!("InstallPlan {ns}/{ip_name}")))?;
            ctx.shared.metrics.install_plan_count.inc();
            ctx.events
                .normal(
                    &sub.object_ref(&()),
                    "InstallPlanCreated",
                    "Resolve",
                    format!("created InstallPlan {ip_name} for {csv}"),
                )
                .await;
            created
        }
    };
    status.current_csv = Some(csv.to_owned());
    status.install_plan_ref = Some(ObjectReference {
        api_version: Some("operators.coreos.com/v1alpha1".into()),
        kind: Some("InstallPlan".into()),
        name: Some(ip_name.clone()),
        namespace: Some(ns.to_owned()),
        uid: ip.uid(),
        resource_version: None,
        field_path: None,
    });
    status.install_plan = Some(InstallPlanReference {
        api_version: "operators.coreos.com/v1alpha1".into(),
        kind: "InstallPlan".into(),
        name: ip_name,
        uuid: ip.uid().unwrap_or_default(),
    });
    Ok(())
}
