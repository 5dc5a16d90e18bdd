//! CatalogSource controller (imperative shell: observes, acts and reports): validate the spec,
//! load the catalog (a ConfigMap, or the built-in catalog), cache it, and report
//! `connectionState` / `reason` / `message` as upstream does.
//!
//! Pipeline: validate `sourceType` ([`crate::plan::catalog_source::plan_source`], no client) →
//! read the ConfigMap (client) → load it through the one catalog loader
//! ([`crate::catalog::load::catalog_from_data`]: FBC keys and the legacy
//! `packages`/`clusterServiceVersions`/`customResourceDefinitions` keys, once per ConfigMap
//! `resourceVersion`, no client) → cache ([`super::cache`]) → status (client).
//! `grpc` sources are not served by olm-rs (no registry pods): they are reported, not ignored.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{Api, Resource, ResourceExt, runtime::controller::Action};

use super::{Context, Error, Result, instrumented};
use crate::{
    api::{
        reasons::catalog_source as reason,
        v1alpha1::{
            CatalogSource, CatalogSourceStatus, ConfigMapResourceReference, GrpcConnectionState,
            connection_state,
        },
    },
    catalog::load::catalog_from_data,
    k8s::apply,
    plan::catalog_source::{SourcePlan, plan_source, served_message},
};

fn now() -> Time {
    Time(Timestamp::now())
}

/// Reconciles one CatalogSource.
pub async fn reconcile(cs: Arc<CatalogSource>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(Arc::clone(&cs), Arc::clone(&ctx), reconcile_inner(cs, ctx)).await
}

async fn reconcile_inner(cs: Arc<CatalogSource>, ctx: Arc<Context>) -> Result<Action> {
    let ns = cs
        .namespace()
        .ok_or_else(|| Error::InvalidObject("CatalogSource without namespace".into()))?;
    let name = cs.name_any();
    let cache = &ctx.shared.catalogs;
    let old = cs.status.clone().unwrap_or_default();
    let mut status = CatalogSourceStatus {
        registry_service: None,
        latest_image_registry_poll: None,
        ..old.clone()
    };
    // Served: the ConfigMap it came from and what the model builder left out of it.
    type Served = (Option<ConfigMapResourceReference>, Vec<String>);
    let outcome: std::result::Result<Served, (&'static str, String)> = match plan_source(&cs) {
        SourcePlan::Invalid(r, m) => Err((r, m)),
        SourcePlan::Builtin => match cache.builtin() {
            Ok(catalog) => {
                let left_out = catalog.problems.clone();
                cache.insert(&ns, &name, catalog);
                Ok((None, left_out))
            }
            Err(refused) => Err((
                reason::CONFIG_MAP_ERROR,
                format!("the built-in catalog is invalid: {refused}"),
            )),
        },
        SourcePlan::ConfigMap(cm_name) => {
            let cms: Api<ConfigMap> = Api::namespaced(ctx.client(), &ns);
            match cms
                .get_opt(&cm_name)
                .await
                .map_err(Error::observe(format!("ConfigMap {ns}/{cm_name}")))?
            {
                None => Err((
                    reason::CONFIG_MAP_ERROR,
                    format!(
                        "configmap {cm_name} not found in namespace {ns}; create it with the catalog's FBC documents, or fix spec.configMap"
                    ),
                )),
                Some(cm) => {
                    let rv = cm.resource_version().unwrap_or_default();
                    let reference = ConfigMapResourceReference {
                        name: cm_name.clone(),
                        namespace: ns.clone(),
                        uid: cm.uid(),
                        resource_version: Some(rv.clone()),
                        last_update_time: Some(now()),
                    };
                    let cached = cache.get(&ns, &name).filter(|c| c.resource_version == rv);
                    let loaded = match cached {
                        Some(c) => Ok(c),
                        None => catalog_from_data(&cm.data.clone().unwrap_or_default(), &rv).map(Arc::new),
                    };
                    match loaded {
                        Ok(catalog) => {
                            let left_out = catalog.problems.clone();
                            cache.insert(&ns, &name, catalog);
                            Ok((Some(reference), left_out))
                        }
                        Err(refused) => {
                            cache.remove(&ns, &name);
                            Err((
                                reason::CONFIG_MAP_ERROR,
                                format!("configmap {cm_name} does not hold a valid catalog: {refused}"),
                            ))
                        }
                    }
                }
            }
        }
    };
    let ready = outcome.is_ok();
    match outcome {
        Ok((reference, left_out)) => {
            status.reason = None;
            status.message = served_message(&left_out);
            status.config_map_reference = reference;
            status.connection_state = Some(GrpcConnectionState {
                address: None,
                last_observed_state: connection_state::READY.into(),
                last_connect: Some(now()),
            });
        }
        Err((r, m)) => {
            if r == reason::SPEC_INVALID_ERROR || r == reason::REGISTRY_SERVER_ERROR {
                cache.remove(&ns, &name);
            }
            status.reason = Some(r.into());
            status.message = Some(m);
            status.connection_state = Some(GrpcConnectionState {
                address: None,
                last_observed_state: connection_state::TRANSIENT_FAILURE.into(),
                last_connect: Some(now()),
            });
        }
    }
    ctx.shared
        .metrics
        .catalogsource_ready
        .get_or_create(&crate::metrics::CatalogLabels {
            namespace: ns.clone(),
            name: name.clone(),
        })
        .set(i64::from(ready));

    // Keep the old configMapReference timestamp when the ConfigMap did not change.
    if let (Some(new), Some(prev)) = (
        status.config_map_reference.as_mut(),
        old.config_map_reference.as_ref(),
    ) && new.resource_version == prev.resource_version
    {
        new.last_update_time = prev.last_update_time.clone();
    }
    if !apply::same_ignoring_time(&apply::to_value(&old), &apply::to_value(&status)) {
        let api: Api<CatalogSource> = Api::namespaced(ctx.client(), &ns);
        apply::apply_status(&api, &name, &status, &ctx.manager)
            .await
            .map_err(Error::status(format!("CatalogSource {ns}/{name}")))?;
        let reference = cs.object_ref(&());
        let was_ready = old
            .connection_state
            .as_ref()
            .map(|c| c.last_observed_state.as_str())
            == Some(connection_state::READY);
        match (&status.reason, was_ready, ready) {
            (Some(r), _, false) if old.reason.as_ref() != Some(r) || old.message != status.message => {
                ctx.warning(&reference, r, "Sync", status.message.clone().unwrap_or_default());
            }
            (None, _, true) if status.message.is_some() && old.message != status.message => {
                ctx.warning(
                    &reference,
                    "CatalogProblems",
                    "Sync",
                    status.message.clone().unwrap_or_default(),
                );
            }
            (_, false, true) => {
                ctx.normal(
                    &reference,
                    "CatalogReady",
                    "Sync",
                    format!("catalog {ns}/{name} is ready"),
                );
            }
            _ => {}
        }
    }
    Ok(if ready {
        Action::requeue(Duration::from_secs(600))
    } else {
        Action::requeue(Duration::from_secs(60))
    })
}
