//! CatalogSource controller (imperative shell: observes, acts and reports): validate the spec,
//! load the catalog (a ConfigMap, a registry server's, or the built-in catalog), cache it, and
//! report `connectionState` / `reason` / `message` as upstream does.
//!
//! Pipeline: validate `sourceType` ([`crate::plan::catalog_source::plan_source`], no client) →
//! read the ConfigMap (client) → load it through the one catalog loader
//! ([`crate::catalog::load::catalog_from_data`]: FBC keys and the legacy
//! `packages`/`clusterServiceVersions`/`customResourceDefinitions` keys, once per ConfigMap
//! `resourceVersion`, no client) → cache ([`super::cache`]) → status (client).
//!
//! `sourceType: grpc` with `spec.address` (no `image`: olm-rs runs no registry pods): the
//! registry is asked for its packages and heads on every reconcile (gRPC client), the whole
//! catalog is read again when [`crate::plan::catalog_source::grpc_refresh`] says so, and linked by
//! the same loader ([`crate::catalog::load::link`]). A registry that stops answering keeps its
//! last good catalog in the cache, with `TRANSIENT_FAILURE` (or `CONNECTING`) and a message
//! saying what is still served.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{Api, Resource, ResourceExt, runtime::controller::Action};

use super::{Context, Error, Result, cache::CatalogCache, instrumented};
use crate::{
    api::{
        reasons::catalog_source as reason,
        v1alpha1::{
            CatalogSource, CatalogSourceStatus, ConfigMapResourceReference, GrpcConnectionState,
            connection_state,
        },
    },
    catalog::load::{self, catalog_from_data},
    grpc::{ClientError, ClientOptions, Connection},
    k8s::apply,
    plan::catalog_source::{
        GrpcObserved, Heads, Reachability, SourcePlan, grpc_refresh, grpc_unreachable_message, heads_of,
        plan_source, served_message,
    },
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
    // A grpc source reports the state its registry answered with, and its address.
    let mut observed_state: Option<&'static str> = None;
    let mut address: Option<String> = None;
    let mut poll_every: Option<Duration> = None;
    let outcome: std::result::Result<Served, (&'static str, String)> = match plan_source(&cs) {
        SourcePlan::Invalid(r, m) => {
            cache.remove(&ns, &name);
            Err((r, m))
        }
        SourcePlan::Grpc { address: addr, poll } => {
            let previous = old
                .connection_state
                .as_ref()
                .map(|c| c.last_observed_state.clone());
            let served = serve_from_registry(cache, &ns, &name, &addr, poll, previous).await;
            observed_state = Some(served.state);
            status.latest_image_registry_poll = served.read_at;
            address = Some(addr);
            poll_every = poll;
            served.result
        }
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
        }
        Err((r, m)) => {
            status.reason = Some(r.into());
            status.message = Some(m);
        }
    }
    let state = observed_state.unwrap_or(if ready {
        connection_state::READY
    } else {
        connection_state::TRANSIENT_FAILURE
    });
    status.connection_state = Some(GrpcConnectionState {
        address,
        last_observed_state: state.into(),
        last_connect: Some(now()),
    });
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
    Ok(match (observed_state.is_some(), ready) {
        // A registry is checked every minute (or every poll interval, when shorter), and soon
        // again when it does not answer.
        (true, true) => Action::requeue(poll_every.map_or(GRPC_CHECK, |p| p.min(GRPC_CHECK))),
        (true, false) => Action::requeue(Duration::from_secs(15)),
        (false, true) => Action::requeue(Duration::from_secs(600)),
        (false, false) => Action::requeue(Duration::from_secs(60)),
    })
}

/// Served: the ConfigMap it came from and what the model builder left out of it.
type Served = (Option<ConfigMapResourceReference>, Vec<String>);

/// How often a registry's packages and heads are checked.
const GRPC_CHECK: Duration = Duration::from_secs(60);

/// The outcome of asking a registry.
struct FromRegistry {
    /// `connectionState.lastObservedState`.
    state: &'static str,
    /// When the catalog served was read (`status.latestImageRegistryPoll`).
    read_at: Option<Time>,
    result: std::result::Result<Served, (&'static str, String)>,
}

/// The cache tag of a catalog read from `address` at `secs` (Unix seconds): the address, so a
/// changed `spec.address` reads again, and the time, for `registryPoll`.
fn registry_tag(address: &str, secs: i64) -> String {
    format!("grpc://{address}#{secs}")
}

/// The read time of a cached catalog when it came from `address`.
fn read_from(tag: &str, address: &str) -> Option<Timestamp> {
    let prefix = format!("grpc://{address}#");
    tag.strip_prefix(&prefix)
        .and_then(|secs| secs.parse::<i64>().ok())
        .and_then(|secs| Timestamp::from_second(secs).ok())
}

fn reachability(err: &ClientError) -> Reachability {
    let text = operator_runtime::error_chain(err);
    match err {
        ClientError::Timeout { .. } => Reachability::Connecting(text),
        _ => Reachability::Failed(text),
    }
}

/// The registry's [`Heads`], sorted.
async fn registry_heads(conn: &Connection) -> std::result::Result<Heads, ClientError> {
    let mut names = conn.list_packages().await?;
    names.sort();
    let mut heads = Vec::with_capacity(names.len());
    for name in names {
        let p = conn.get_package(&name).await?;
        let mut channels: Vec<(String, String)> =
            p.channels.into_iter().map(|c| (c.name, c.csv_name)).collect();
        channels.sort();
        heads.push((p.name, p.default_channel_name, channels));
    }
    Ok(heads)
}

/// Checks the registry at `address`, reads its catalog when [`grpc_refresh`] says so, and
/// caches it; a registry that does not answer leaves the cached catalog in place.
async fn serve_from_registry(
    cache: &CatalogCache,
    ns: &str,
    name: &str,
    address: &str,
    poll: Option<Duration>,
    previous_state: Option<String>,
) -> FromRegistry {
    let cached = cache
        .get(ns, name)
        .and_then(|c| read_from(&c.resource_version, address).map(|at| (c, at)));
    let read_at = cached.as_ref().map(|(_, at)| Time(*at));
    let options = ClientOptions {
        timeout: Duration::from_secs(20),
        ..ClientOptions::default()
    };
    let unreachable = |err: &ClientError, read_at: Option<Time>| {
        let reach = reachability(err);
        let error = match &reach {
            Reachability::Connecting(e) | Reachability::Failed(e) => e.clone(),
        };
        let at = read_at.as_ref().map(|t| t.0.to_string());
        FromRegistry {
            state: reach.state(),
            result: Err((
                reason::REGISTRY_SERVER_ERROR,
                grpc_unreachable_message(address, &error, at.as_deref()),
            )),
            read_at,
        }
    };
    let conn = match Connection::connect(address, &options).await {
        Ok(conn) => conn,
        Err(err) => return unreachable(&err, read_at),
    };
    let heads = match registry_heads(&conn).await {
        Ok(heads) => heads,
        Err(err) => return unreachable(&err, read_at),
    };
    let observed = GrpcObserved {
        cached: cached.is_some(),
        previous_state,
        since_read: cached
            .as_ref()
            .and_then(|(_, at)| Duration::try_from(Timestamp::now().duration_since(*at)).ok()),
        poll,
        heads_changed: cached.as_ref().is_none_or(|(c, _)| heads_of(&c.model) != heads),
    };
    let Some(why) = grpc_refresh(&observed) else {
        let left_out = cached.map(|(c, _)| c.problems.clone()).unwrap_or_default();
        return FromRegistry {
            state: connection_state::READY,
            read_at,
            result: Ok((None, left_out)),
        };
    };
    tracing::info!(catalogsource = %format!("{ns}/{name}"), registry = address, "reading the catalog: {why}");
    let fetched = match conn.fetch().await {
        Ok(fetched) => fetched,
        Err(err) => return unreachable(&err, read_at),
    };
    let now = Timestamp::now();
    match load::link(
        fetched.config,
        Vec::new(),
        &registry_tag(address, now.as_second()),
    ) {
        Ok(mut catalog) => {
            catalog.problems.extend(fetched.problems);
            let left_out = catalog.problems.clone();
            cache.insert(ns, name, Arc::new(catalog));
            FromRegistry {
                state: connection_state::READY,
                read_at: Some(Time(now)),
                result: Ok((None, left_out)),
            }
        }
        Err(refused) => FromRegistry {
            state: connection_state::READY,
            read_at,
            result: Err((
                reason::REGISTRY_SERVER_ERROR,
                format!(
                    "registry {address} serves no usable catalog: {refused}{}",
                    if cached.is_some() {
                        "; still serving the catalog read from it before"
                    } else {
                        ""
                    }
                ),
            )),
        },
    }
}
