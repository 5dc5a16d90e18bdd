//! CatalogSource controller (imperative shell: observes, acts and reports): validate the spec,
//! load the catalog (a ConfigMap, or the built-in catalog), cache it, and report
//! `connectionState` / `reason` / `message` as upstream does.
//!
//! Pipeline: validate `sourceType` ([`crate::plan::catalog_source::plan_source`], no client) →
//! read the ConfigMap (client) → load it through the one catalog loader
//! ([`crate::catalog::load::catalog_from_data`]: FBC keys and the legacy
//! `packages`/`clusterServiceVersions`/`customResourceDefinitions` keys, once per ConfigMap
//! `resourceVersion`, no client) → cache ([`super::cache`]) → status (client).
//!
//! `grpc` sources with `spec.image` are catalog images, pulled by the controller itself (no
//! registry pods): the reconcile asks [`super::image_puller`] for a pull when one is due (first
//! sight, or `registryPoll.interval` passed) and serves what the last good pull loaded; it never
//! waits on the registry, and is reconciled again as soon as the pull finishes
//! ([`super::image_puller::ImagePuller::finished`]; a 2 s requeue while a pull runs is the
//! fallback). The catalog switches only when
//! the digest changes, with an Event naming both digests. `grpc` with only `spec.address` is
//! handled below.
//!
//! `sourceType: grpc` with `spec.address` (and no `image`): the registry is asked for its packages
//! and heads on every reconcile (gRPC client), the whole catalog is read again when
//! [`crate::plan::catalog_source::grpc_refresh`] says so, and linked by the same loader
//! ([`crate::catalog::load::link`]). A registry that stops answering keeps its last good catalog in
//! the cache, with `TRANSIENT_FAILURE` (or `CONNECTING`) and a message saying what is still served.
//!
//! `sourceType: http` (olm-rs only) with `spec.address`, the base URL of a catalogd HTTP API: every
//! reconcile GETs `/api/v1/all` through [`crate::catalogd::client`] with `If-Modified-Since` set to
//! the `Last-Modified` of the catalog served ([`crate::plan::catalog_source::http_if_modified_since`]);
//! a `304` keeps it, a `200` is linked by the same loader. TLS is verified against the system
//! roots plus `--registry-ca`; plain HTTP only to loopback or an `--insecure-registry`. A server
//! that fails keeps the last good catalog, as the grpc arm does.
//!
//! Status timestamps (`configMapReference.lastUpdateTime`, `connectionState.lastConnect`,
//! `registryService.createdAt`) are decided by the plan from the status before, what this
//! reconcile saw (the cache holding another catalog than when it started counts as a reload) and
//! the time now; when one cannot be recorded yet the reconcile is requeued for the next second.
//! The status is written through [`Context::write_status`], so a reconcile from a store that has
//! not seen the last write does not write a status built on an older one.

use std::{sync::Arc, time::Duration};

use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{Api, Resource, ResourceExt, runtime::controller::Action};

use super::wiring::{self, Wiring};
use super::{
    Context, Error, Result,
    cache::{CatalogCache, LoadedCatalog},
    instrumented,
};
use crate::{
    api::{
        reasons::catalog_source as reason,
        v1alpha1::{CatalogSource, CatalogSourceStatus, connection_state},
    },
    catalog::load::{self, CatalogOrigin, catalog_from_data},
    catalogd,
    grpc::{ClientError, ClientOptions, Connection},
    k8s::apply,
    plan::catalog_source::{
        ConfigMapSeen, ConnectionSeen, GrpcObserved, Heads, ImagePlan, Reachability, SourcePlan,
        config_map_reference, connection, decided_times_changed, grpc_refresh, grpc_unreachable_message,
        heads_of, http_unreachable_message, image_status, plan_source, poll_due, registry_service,
        source_status, unapplied_spec_note, with_note,
    },
};

/// Whether the cache now holds another catalog for the CatalogSource than `before` (the one it
/// held when the reconcile started): the first load in this process, or new content.
fn reloaded(cache: &CatalogCache, ns: &str, name: &str, before: Option<&Arc<LoadedCatalog>>) -> bool {
    match (before, cache.get(ns, name)) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(before), Some(now)) => !Arc::ptr_eq(before, &now),
    }
}

/// The shorter of two optional requeues.
fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Reconciles one CatalogSource.
pub async fn reconcile(cs: Arc<CatalogSource>, ctx: Arc<Context>) -> Result<Action> {
    let store = ctx.shared.stores.catalog_sources.clone();
    instrumented(cs, Arc::clone(&ctx), Some(&store), |cs| reconcile_inner(cs, ctx)).await
}

async fn reconcile_inner(cs: Arc<CatalogSource>, ctx: Arc<Context>) -> Result<Action> {
    let ns = cs
        .namespace()
        .ok_or_else(|| Error::InvalidObject("CatalogSource without namespace".into()))?;
    let name = cs.name_any();
    let cache = &ctx.shared.catalogs;
    let now = Timestamp::now();
    let before = cache.get(&ns, &name);
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
    let mut interval_problem: Option<String> = None;
    let plan = plan_source(&cs);
    let valid = !matches!(plan, SourcePlan::Invalid(..));
    let outcome: std::result::Result<Served, (&'static str, String)> = match plan {
        SourcePlan::Image(image) => {
            return reconcile_image(&cs, &ctx, &ns, &name, old, status, &image).await;
        }
        SourcePlan::Invalid(r, m) => Err((r, m)),
        SourcePlan::Grpc {
            address: addr,
            poll,
            interval_problem: problem,
        } => {
            interval_problem = problem;
            let previous = old
                .connection_state
                .as_ref()
                .map(|c| c.last_observed_state.clone());
            let served = serve_from_registry(cache, &ns, &name, &addr, poll, previous).await;
            observed_state = Some(served.state);
            address = Some(addr);
            poll_every = Some(poll.map_or(GRPC_CHECK, |p| p.min(GRPC_CHECK)));
            served.result
        }
        SourcePlan::Http {
            url,
            poll,
            interval_problem: problem,
        } => {
            interval_problem = problem;
            let served = serve_from_http(
                cache,
                ctx.shared.images.options(),
                &ctx.shared.catalogd,
                &ns,
                &name,
                &url,
            )
            .await;
            observed_state = Some(served.state);
            address = Some(url);
            poll_every = Some(poll.unwrap_or(GRPC_CHECK));
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
                    let reference = ConfigMapSeen {
                        name: cm_name.clone(),
                        namespace: ns.clone(),
                        uid: cm.uid(),
                        resource_version: rv.clone(),
                    };
                    let origin = CatalogOrigin::ConfigMap {
                        resource_version: rv.clone(),
                    };
                    let cached = cache.get(&ns, &name).filter(|c| c.origin == origin);
                    let loaded = match cached {
                        Some(c) => Ok(c),
                        None => catalog_from_data(&cm.data.clone().unwrap_or_default(), origin).map(Arc::new),
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
    // Not (or no longer) an image: nothing to keep pulling for it.
    ctx.shared.images.forget(&(ns.clone(), name.clone()));
    status.resolved_image = None;
    let ready = outcome.is_ok();
    let (decided_reason, message) = source_status(
        outcome
            .as_ref()
            .map(|(_, left_out)| left_out.as_slice())
            .map_err(|(r, m)| (*r, m.as_str())),
        interval_problem.as_deref(),
    );
    // Reconcile again this soon when a timestamp could not be recorded yet.
    let mut again = None;
    let mut renewed = false;
    match outcome {
        Ok((seen, _)) => {
            status.config_map_reference = seen.map(|seen| {
                let decided = config_map_reference(old.config_map_reference.as_ref(), seen, now);
                again = decided.again;
                renewed = decided.value.renewed;
                decided.value.reference
            });
        }
        // A registry that went away keeps its last good catalog served (the message says so);
        // an invalid spec serves nothing.
        Err((r, _)) if r == reason::SPEC_INVALID_ERROR => cache.remove(&ns, &name),
        Err(_) => {}
    }
    status.reason = decided_reason.map(Into::into);
    status.message = with_note(message, unapplied_spec_note(&cs));
    let state = observed_state.unwrap_or(if ready {
        connection_state::READY
    } else {
        connection_state::TRANSIENT_FAILURE
    });
    let decided = connection(
        &ConnectionSeen {
            previous: old.connection_state.as_ref(),
            state,
            address,
            reloaded: reloaded(cache, &ns, &name, before.as_ref()),
            not_before: status
                .config_map_reference
                .as_ref()
                .and_then(|r| r.last_update_time.as_ref()),
        },
        now,
    );
    status.connection_state = Some(decided.value);
    status.registry_service = registry_service(old.registry_service.as_ref(), valid, renewed, now);
    report(&cs, &ctx, &ns, &name, &old, &status, ready, None).await?;
    let every = match (observed_state.is_some(), ready) {
        // A registry is checked every minute (or every poll interval, when shorter), a catalogd
        // server every poll interval (default a minute), and both soon again when they do not
        // answer.
        (true, true) => poll_every.unwrap_or(GRPC_CHECK),
        (true, false) => Duration::from_secs(15),
        (false, true) => Duration::from_secs(600),
        (false, false) => Duration::from_secs(60),
    };
    Ok(Action::requeue(
        sooner(Some(every), sooner(again, decided.again)).unwrap_or(every),
    ))
}

/// Writes the status when it changed (metrics, Events on transitions, and the `extra` Event).
#[allow(clippy::too_many_arguments)]
async fn report(
    cs: &CatalogSource,
    ctx: &Context,
    ns: &str,
    name: &str,
    old: &CatalogSourceStatus,
    status: &CatalogSourceStatus,
    ready: bool,
    extra: Option<(&'static str, String)>,
) -> Result<()> {
    ctx.shared
        .metrics
        .catalogsource_ready
        .get_or_create(&crate::metrics::CatalogLabels {
            namespace: ns.to_owned(),
            name: name.to_owned(),
        })
        .set(i64::from(ready));

    // Timestamps that only tick are not written; the ones decided in the plan are. A reconcile
    // from a store that has not seen the last write does not write (its event comes next).
    let changed = !apply::same_ignoring_time(&apply::to_value(old), &apply::to_value(status))
        || decided_times_changed(old, status);
    if ctx.write_status(cs, changed, status).await? {
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
    if let Some((reason, note)) = extra {
        ctx.normal(&cs.object_ref(&()), reason, "Sync", note);
    }
    Ok(())
}

/// A catalog image: start a pull when one is due, serve the last good pull, report.
async fn reconcile_image(
    cs: &CatalogSource,
    ctx: &Context,
    ns: &str,
    name: &str,
    old: CatalogSourceStatus,
    mut status: CatalogSourceStatus,
    plan: &ImagePlan,
) -> Result<Action> {
    let now = Timestamp::now();
    let key = (ns.to_owned(), name.to_owned());
    let puller = &ctx.shared.images;
    let mut view = puller.view(&key, plan);
    let since = view.last_attempt.map(|at| at.elapsed());
    if !view.pulling && poll_due(since, plan.poll, view.served.is_some()) {
        view.pulling = puller.start(&key, plan, ctx.client());
    }
    let cache = &ctx.shared.catalogs;
    let before = cache.get(ns, name);
    let left_out = match &view.served {
        Some(served) => {
            if cache.get(ns, name).is_none_or(|c| {
                c.origin
                    != CatalogOrigin::Image {
                        digest: served.digest.clone(),
                    }
            }) {
                cache.insert(ns, name, Arc::clone(&served.catalog));
            }
            served.catalog.problems.clone()
        }
        None => {
            cache.remove(ns, name);
            Vec::new()
        }
    };
    let decided = image_status(
        plan,
        view.served.as_ref().map(|s| s.digest.as_str()),
        view.last_error.as_deref(),
        view.pulling,
        &left_out,
    );
    let ready = view.served.is_some();
    status.reason = decided.reason.map(Into::into);
    status.message = with_note(decided.message, unapplied_spec_note(cs));
    status.config_map_reference = None;
    status.latest_image_registry_poll = view
        .last_attempt_time
        .map(Time)
        .or(old.latest_image_registry_poll.clone());
    status.resolved_image = view
        .served
        .as_ref()
        .map(|s| resolved_reference(&s.image, &s.digest));
    status.connection_state = Some(
        connection(
            &ConnectionSeen {
                previous: old.connection_state.as_ref(),
                state: decided.state,
                address: None,
                reloaded: reloaded(cache, ns, name, before.as_ref()),
                not_before: None,
            },
            now,
        )
        .value,
    );
    status.registry_service =
        registry_service(old.registry_service.as_ref(), true, view.changed.is_some(), now);
    let extra = view.changed.map(|(from, to)| {
        (
            "CatalogImageUpdated",
            format!(
                "catalog image {} changed from {from} to {to}; serving the new catalog",
                plan.image
            ),
        )
    });
    report(cs, ctx, ns, name, &old, &status, ready, extra).await?;
    let every = plan.poll.unwrap_or(Duration::from_secs(600));
    Ok(Action::requeue(if view.pulling {
        Duration::from_secs(2)
    } else if ready {
        every
            .saturating_sub(view.last_attempt.map(|at| at.elapsed()).unwrap_or_default())
            .clamp(Duration::from_secs(1), Duration::from_secs(600))
    } else {
        puller.wait_left(&key, &plan.image).max(Duration::from_secs(2))
    }))
}

/// `REGISTRY/REPO@sha256:...` for `status.resolvedImage`.
fn resolved_reference(image: &str, digest: &str) -> String {
    match crate::oci::ImageRef::parse(image) {
        Ok(reference) => reference.with_digest(digest).to_string(),
        Err(_) => format!("{image}@{digest}"),
    }
}

/// Served: the ConfigMap it came from and what the model builder left out of it.
type Served = (Option<ConfigMapSeen>, Vec<String>);

/// How often a registry's packages and heads are checked.
const GRPC_CHECK: Duration = Duration::from_secs(60);

/// The outcome of asking a registry.
struct FromRegistry {
    /// `connectionState.lastObservedState`.
    state: &'static str,
    result: std::result::Result<Served, (&'static str, String)>,
}

/// How a registry or catalog server that gave no catalog failed: still `CONNECTING` when it
/// timed out.
fn reachability(err: &(dyn std::error::Error + 'static), timed_out: bool) -> Reachability {
    let text = operator_runtime::error_chain(err);
    if timed_out {
        Reachability::Connecting(text)
    } else {
        Reachability::Failed(text)
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

/// GETs the catalog of the catalogd HTTP API at `url` (conditionally, when one read from it is
/// served) and caches what a `200` brought; a `304` or a failure leaves the cached catalog in
/// place.
async fn serve_from_http(
    cache: &CatalogCache,
    registry: &crate::oci::Options,
    shared_client: &std::sync::OnceLock<reqwest::Client>,
    ns: &str,
    name: &str,
    url: &str,
) -> FromRegistry {
    let cached = cache.get(ns, name);
    let read = cached.as_ref().and_then(|c| c.origin.http_read(url));
    // When the catalog served was read, for the message of a failed read.
    let read_at = read
        .and_then(|(secs, _)| Timestamp::from_second(secs).ok())
        .map(|at| at.to_string());
    let options = catalogd::ClientOptions {
        ca_bundle: registry.ca_bundle.clone(),
        insecure: registry.insecure.clone(),
        connect_timeout: Duration::from_secs(10),
        read_timeout: Duration::from_secs(30),
        ..catalogd::ClientOptions::default()
    };
    let failed = |err: catalogd::ClientError| {
        let invalid_spec = matches!(
            err,
            catalogd::ClientError::InvalidUrl { .. } | catalogd::ClientError::PlainHttp { .. }
        );
        let reach = reachability(&err, matches!(err, catalogd::ClientError::Timeout { .. }));
        let error = reach.error();
        FromRegistry {
            state: reach.state(),
            result: Err(if invalid_spec {
                (reason::SPEC_INVALID_ERROR, error.to_owned())
            } else {
                (
                    reason::REGISTRY_SERVER_ERROR,
                    http_unreachable_message(url, error, read_at.as_deref()),
                )
            }),
        }
    };
    let client = match shared_client.get() {
        Some(client) => client.clone(),
        None => match catalogd::client::client(&options) {
            Ok(client) => shared_client.get_or_init(|| client).clone(),
            Err(err) => return failed(err),
        },
    };
    // The `If-Modified-Since` of the GET: the `Last-Modified` of the catalog served, when it was
    // read from this URL and its server sent one.
    let since = read.and_then(|(_, last_modified)| last_modified);
    let fetched = match catalogd::fetch(&client, url, &options, since).await {
        Ok(fetched) => fetched,
        Err(err) => return failed(err),
    };
    let catalogd::Fetched::Catalog(fetched) = fetched else {
        // 304: what is served is current.
        let left_out = cached.map(|c| c.problems.clone()).unwrap_or_default();
        return FromRegistry {
            state: connection_state::READY,
            result: Ok((None, left_out)),
        };
    };
    let now = Timestamp::now();
    let read = Read {
        config: fetched.config,
        problems: fetched.problems.iter().map(ToString::to_string).collect(),
        origin: CatalogOrigin::Http {
            url: url.to_owned(),
            read_at: now.as_second(),
            last_modified: fetched.last_modified.clone(),
        },
    };
    tracing::info!(catalogsource = %format!("{ns}/{name}"), url, "read the catalog");
    link_and_cache(
        cache,
        ns,
        name,
        read,
        &format!("catalog server {url}"),
        cached.is_some(),
    )
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
    let cached = cache.get(ns, name).and_then(|c| {
        let at = c
            .origin
            .registry_read_at(address)
            .and_then(|secs| Timestamp::from_second(secs).ok())?;
        Some((c, at))
    });
    // When the catalog served was read, for the message of a failed read.
    let read_at = cached.as_ref().map(|(_, at)| at.to_string());
    let options = ClientOptions {
        timeout: Duration::from_secs(20),
        ..ClientOptions::default()
    };
    let unreachable = |err: &ClientError| {
        let reach = reachability(err, matches!(err, ClientError::Timeout { .. }));
        let error = reach.error();
        FromRegistry {
            state: reach.state(),
            result: Err((
                reason::REGISTRY_SERVER_ERROR,
                grpc_unreachable_message(address, error, read_at.as_deref()),
            )),
        }
    };
    let conn = match Connection::connect(address, &options).await {
        Ok(conn) => conn,
        Err(err) => return unreachable(&err),
    };
    let heads = match registry_heads(&conn).await {
        Ok(heads) => heads,
        Err(err) => return unreachable(&err),
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
            result: Ok((None, left_out)),
        };
    };
    tracing::info!(catalogsource = %format!("{ns}/{name}"), registry = address, "reading the catalog: {why}");
    let fetched = match conn.fetch().await {
        Ok(fetched) => fetched,
        Err(err) => return unreachable(&err),
    };
    let now = Timestamp::now();
    let read = Read {
        config: fetched.config,
        problems: fetched.problems,
        origin: CatalogOrigin::Registry {
            address: address.to_owned(),
            read_at: now.as_second(),
        },
    };
    link_and_cache(
        cache,
        ns,
        name,
        read,
        &format!("registry {address}"),
        cached.is_some(),
    )
}

/// A whole catalog read from a registry or a catalogd server.
struct Read {
    config: crate::catalog::DeclarativeConfig,
    /// What did not decode.
    problems: Vec<String>,
    /// Where and when it was read.
    origin: CatalogOrigin,
}

/// Links a catalog read from `source` (`registry HOST:PORT`, `catalog server URL`) and caches
/// it; one that does not link leaves the catalog cached before (when `had_cached`) in place,
/// and says so.
fn link_and_cache(
    cache: &CatalogCache,
    ns: &str,
    name: &str,
    read: Read,
    source: &str,
    had_cached: bool,
) -> FromRegistry {
    match load::link(read.config, Vec::new(), read.origin) {
        Ok(mut catalog) => {
            catalog.problems.extend(read.problems);
            let left_out = catalog.problems.clone();
            cache.insert(ns, name, Arc::new(catalog));
            FromRegistry {
                state: connection_state::READY,
                result: Ok((None, left_out)),
            }
        }
        Err(refused) => FromRegistry {
            state: connection_state::READY,
            result: Err((
                reason::REGISTRY_SERVER_ERROR,
                format!(
                    "{source} serves no usable catalog: {refused}{}",
                    if had_cached {
                        "; still serving the catalog read from it before"
                    } else {
                        ""
                    }
                ),
            )),
        },
    }
}

/// The CatalogSource controller: re-read when the ConfigMap it names changes, and reconciled as
/// soon as the pull of its image finishes (not at the next requeue of the pull's wait).
pub(super) fn controller<S>(
    w: &Wiring<'_>,
    sources: S,
    store: kube::runtime::reflector::Store<CatalogSource>,
) -> impl std::future::Future<Output = ()> + Send + use<S>
where
    S: futures::Stream<Item = std::result::Result<CatalogSource, kube::runtime::watcher::Error>>
        + Send
        + 'static,
{
    use futures::StreamExt as _;
    use kube::runtime::reflector::ObjectRef;
    let by_config_map = w.shared.stores.catalog_sources.clone();
    let controller = kube::runtime::Controller::for_stream(sources, store)
        .with_config(wiring::settings())
        .watches_stream(w.metadata::<ConfigMap>(Wiring::watch()), move |cm| {
            super::mappers::catalog_sources_for_config_map(&by_config_map.state(), &cm)
        })
        .reconcile_on(
            w.shared
                .images
                .finished()
                .map(|(ns, name)| ObjectRef::<CatalogSource>::new(&name).within(&ns)),
        );
    wiring::run(controller, reconcile, w.context("catalogsource"), "catalogsource")
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{
        controller::{
            image_puller::ImagePuller,
            testing::{ApiServerVerifier, Fixture, Scenario, bodies, event_reasons, object},
        },
        oci,
    };

    const NS: &str = "catalogs";
    const COLLECTION: &str = "/apis/operators.coreos.com/v1alpha1/namespaces/catalogs/catalogsources";

    fn catalog_source(name: &str, image: &str, status: Option<Value>) -> Value {
        let mut cs = json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": NS, "resourceVersion": "1", "uid": "u1"},
            "spec": {"sourceType": "grpc", "image": image},
        });
        if let Some(s) = status {
            cs["status"] = s;
        }
        cs
    }

    fn with_puller(fixture: &mut Fixture, cache: &std::path::Path) {
        let shared = Arc::get_mut(&mut fixture.shared).expect("no context made yet");
        shared.images = ImagePuller::new(
            oci::Options {
                cache_dir: cache.to_owned(),
                insecure: vec!["127.0.0.1:1".into()],
                ..oci::Options::default()
            },
            1,
        );
    }

    async fn reconcile_once(
        server: &mut ApiServerVerifier,
        ctx: &Arc<Context>,
        cs: &Value,
        scenario: Scenario,
    ) -> (Action, Value, Vec<String>) {
        // The store has seen every write so far.
        let mut cs = cs.clone();
        cs["metadata"]["resourceVersion"] = json!(server.last_version());
        let (action, received) = server
            .run(scenario, reconcile(Arc::new(object(cs)), Arc::clone(ctx)))
            .await;
        let status = bodies(&received, &http::Method::PATCH, COLLECTION)
            .last()
            .map_or(Value::Null, |b| b["status"].clone());
        (
            action.expect("the reconcile succeeds"),
            status,
            event_reasons(&received),
        )
    }

    async fn until_pulled(ctx: &Context, name: &str, image: &str) {
        let plan = crate::plan::catalog_source::ImagePlan {
            image: image.to_owned(),
            secrets: Vec::new(),
            poll: None,
            interval_problem: None,
        };
        for _ in 0..500 {
            if !ctx
                .shared
                .images
                .view(&(NS.to_owned(), name.to_owned()), &plan)
                .pulling
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the pull of {image} did not finish");
    }

    fn written(cs: &Value) -> Scenario {
        Scenario::StatusWritten {
            collection: COLLECTION.into(),
            object: cs.clone(),
            manager: "olm-rs/catalogsource",
        }
    }

    #[tokio::test]
    async fn a_catalog_image_is_pulled_off_the_reconcile_and_then_served_by_digest() {
        // A digest already in the cache needs no registry: the pull runs without network.
        let cache = tempfile::tempdir().unwrap();
        let manifest = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}"#;
        let digest = oci::sha256_digest(manifest);
        let entry = cache.path().join("sha256").join(&digest[7..]).join("catalog");
        std::fs::create_dir_all(entry.join("root/configs/p")).unwrap();
        std::fs::write(entry.join("manifest.json"), manifest).unwrap();
        std::fs::write(
            entry.join("image.json"),
            json!({"image": "x", "digest": digest, "manifestDigest": digest, "content": "configs"})
                .to_string(),
        )
        .unwrap();
        std::fs::write(
            entry.join("root/configs/p/catalog.json"),
            concat!(
                r#"{"schema":"olm.package","name":"p","defaultChannel":"s"}"#,
                r#"{"schema":"olm.channel","package":"p","name":"s","entries":[{"name":"p.v1.0.0"}]}"#,
                r#"{"schema":"olm.bundle","package":"p","name":"p.v1.0.0","image":"r/p:1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}"#
            ),
        )
        .unwrap();
        let (mut fixture, mut server) = Fixture::new();
        with_puller(&mut fixture, cache.path());
        let ctx = fixture.context("catalogsource");
        let image = format!("127.0.0.1:1/olm/catalog@{digest}");

        let cs = catalog_source("pinned", &image, None);
        let (action, status, _) = reconcile_once(&mut server, &ctx, &cs, written(&cs)).await;
        assert_eq!(
            status["connectionState"]["lastObservedState"], "CONNECTING",
            "{status:#}"
        );
        assert_eq!(status["message"], format!("pulling {image}"));
        assert_eq!(action, Action::requeue(Duration::from_secs(2)));
        assert!(ctx.shared.catalogs.get(NS, "pinned").is_none());

        until_pulled(&ctx, "pinned", &image).await;
        let cs = catalog_source("pinned", &image, Some(status));
        let (_, status, events) = reconcile_once(&mut server, &ctx, &cs, written(&cs)).await;
        assert_eq!(events, ["CatalogReady"]);
        assert_eq!(
            status["connectionState"]["lastObservedState"], "READY",
            "{status:#}"
        );
        assert_eq!(status["resolvedImage"], image);
        assert!(status["latestImageRegistryPoll"].is_string(), "{status:#}");
        assert!(
            status.get("reason").is_none() && status.get("message").is_none(),
            "{status:#}"
        );
        let served = ctx
            .shared
            .catalogs
            .get(NS, "pinned")
            .expect("the catalog is served");
        assert_eq!(
            served.origin,
            CatalogOrigin::Image {
                digest: digest.clone()
            }
        );
        assert!(served.model.package("p").is_some());
    }

    #[tokio::test]
    async fn an_unreachable_registry_fails_the_catalog_and_is_not_hammered() {
        let cache = tempfile::tempdir().unwrap();
        let (mut fixture, mut server) = Fixture::new();
        with_puller(&mut fixture, cache.path());
        let ctx = fixture.context("catalogsource");
        let image = "127.0.0.1:1/olm/catalog:v1";

        let cs = catalog_source("down", image, None);
        let (_, status, _) = reconcile_once(&mut server, &ctx, &cs, written(&cs)).await;
        assert_eq!(status["connectionState"]["lastObservedState"], "CONNECTING");
        until_pulled(&ctx, "down", image).await;

        let cs = catalog_source("down", image, Some(status));
        let (action, status, events) = reconcile_once(&mut server, &ctx, &cs, written(&cs)).await;
        assert_eq!(events, ["RegistryServerError"]);
        assert_eq!(
            status["connectionState"]["lastObservedState"], "TRANSIENT_FAILURE",
            "{status:#}"
        );
        assert_eq!(status["reason"], "RegistryServerError");
        let message = status["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("cannot talk to registry 127.0.0.1:1"),
            "{message}"
        );
        // The next try waits for the registry's backoff (5 s after one failure).
        assert_ne!(action, Action::requeue(Duration::from_secs(600)));

        // Within the registry's backoff nothing is pulled again and nothing changes.
        let cs = catalog_source("down", image, Some(status));
        let _ = reconcile_once(&mut server, &ctx, &cs, Scenario::NothingWritten).await;
        let plan = crate::plan::catalog_source::ImagePlan {
            image: image.to_owned(),
            secrets: Vec::new(),
            poll: None,
            interval_problem: None,
        };
        assert!(
            !ctx.shared
                .images
                .view(&(NS.to_owned(), "down".to_owned()), &plan)
                .pulling
        );
        assert!(!ctx.shared.images.backoff_left(image).is_zero());
    }
}
