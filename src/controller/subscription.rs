//! Subscription controller: observe (client) → decide ([`crate::plan::subscription::decide`], no
//! client) → act: create this Subscription's own InstallPlan, built by
//! [`crate::plan::subscription::install_plan`] (client) → report the status computed by
//! [`crate::plan::subscription::next_status`] (no client) and write it (client).
//!
//! # One reconcile
//!
//! 0. **Label**: a Subscription without upstream's Operator component label
//!    `operators.coreos.com/<package>.<namespace>: ""` gets it first
//!    ([`status::component_label_apply`]), once.
//! 1. **Observe** (reflector stores, no API reads): the CatalogSources the namespace can see (its
//!    own and the global catalog namespace's) with their parsed models from the catalog cache
//!    ([`super::cache`], built once per ConfigMap `resourceVersion` and shared by `Arc`), the
//!    CSVs, Subscriptions, InstallPlans and OperatorGroups of the namespace.
//! 2. **Decide**, unless the Subscription waits on an InstallPlan it references
//!    ([`status::needs_resolution`]): the pure [`status::decide`] (exactly one OperatorGroup,
//!    [`crate::resolve::resolve`], an upgrade only from a `Succeeded` CSV, the bundle still in its
//!    catalog; see [`crate::plan::subscription`]).
//! 3. **Plan**: the InstallPlan has a deterministic name
//!    ([`crate::plan::steps::install_plan_name`], from the Subscription's uid and the CSV), is
//!    looked up in the store and created (a create, so an existing plan is never overwritten:
//!    a conflict reads it instead), is owned by the Subscription, and lists the bundle's steps ([`crate::plan::steps::bundle_steps`],
//!    from the bundle's inlined objects in the catalog model). A controller that crashes after
//!    creating it finds it again instead of making a second one.
//!
//!    A bundle without inlined objects (an `opm render` catalog: `image:` and
//!    `olm.csv.metadata`) is pulled from its image first, as upstream unpacks it before creating
//!    the plan: the pull runs in [`super::image_puller`] (the catalog images' permits and registry
//!    backoff, the digest cache under `--cache-dir`, the CatalogSource's `spec.secrets`);
//!    [`lookup::lookup_state`] says where it stands. Meanwhile the Subscription has
//!    `BundleUnpacking=True` with the registry's message (re-checked every 5 s); past the
//!    OperatorGroup's `operatorframework.io/bundle-unpack-timeout` (default 10m), or at once for
//!    an image that is no bundle, `BundleUnpackFailed=True` and a Warning Event, and a new
//!    attempt 5 minutes later. The pulled manifests become the plan's steps exactly as inlined
//!    ones, and the plan's `status.bundleLookups` records the lookup.
//! 4. **Report**: a pinned Subscription ([`status::pin`]) gets a Normal `UpgradeAvailable`
//!    Event once per newer bundle; [`status::next_status`] (conditions keep their `lastTransitionTime` while their
//!    status does not flip); the write is skipped when nothing but timestamps changed
//!    ([`status::status_changed`]). A new `ResolutionFailed` message is also a Warning Event, once
//!    per new message. Last, the installed CSV is recorded in the Subscription's
//!    `olm-rs.io/installed-csvs` annotation ([`status::pin::history_apply`]) when it is new.
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

use k8s_openapi::{api::core::v1::ObjectReference, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api, Resource, ResourceExt,
    api::PostParams,
    runtime::{controller::Action, reflector::ObjectRef},
};

use super::wiring::{self, Wiring};
use super::{Context, Error, Result, cache::LoadedCatalog, image_puller, instrumented};
use crate::api::{v1::OperatorGroup, v1alpha1::ClusterServiceVersion};
use crate::{
    api::{
        reasons::subscription as reason,
        v1alpha1::{
            CatalogSource, InstallPlan, Subscription, SubscriptionConditionType as T, connection_state,
        },
    },
    k8s::apply,
    plan::{
        bundle_lookup as lookup,
        catalog_source::ImagePlan,
        steps,
        subscription::{
            self as status, CatalogHealthObservation, Decision, Install, Observed, Outcome, StatusInput,
        },
    },
    resolve::{Catalog, CatalogKey, Catalogs, ExistingSubscription, Installed, InstalledCsv},
};

/// Reconciles one Subscription.
pub async fn reconcile(sub: Arc<Subscription>, ctx: Arc<Context>) -> Result<Action> {
    let store = ctx.shared.stores.subscriptions.clone();
    instrumented(sub, Arc::clone(&ctx), Some(&store), |sub| {
        reconcile_inner(sub, ctx)
    })
    .await
}

async fn reconcile_inner(sub: Arc<Subscription>, ctx: Arc<Context>) -> Result<Action> {
    let ns = sub
        .namespace()
        .ok_or_else(|| Error::InvalidObject("Subscription without namespace".into()))?;
    let name = sub.name_any();
    // Upstream's Operator component label, once (a label, not a status: written first).
    if let Some(label) = status::component_label_apply(&sub, &ns) {
        let api: Api<Subscription> = Api::namespaced(ctx.client(), &ns);
        apply::apply(&api, &name, &label, &ctx.manager)
            .await
            .map_err(Error::apply(format!("Subscription {ns}/{name}")))?;
    }
    count_sync(&sub, &ctx, &name);
    let now = Time(Timestamp::now());
    let seen = observe(&sub, &ctx, &ns).await?;
    let catalogs = seen.catalogs(&ctx.shared.config.global_namespace, &ns);
    let outcome = match decide(&sub, &ctx, &ns, &seen, &catalogs).outcome() {
        Ok(outcome) => outcome,
        Err(install) => act(&sub, &ctx, &ns, &install, &now).await?,
    };
    report(&sub, &ctx, &ns, &seen, &outcome, &now).await?;
    let held_for = sub
        .status
        .as_ref()
        .and_then(|o| o.condition(&T::UpgradeHeld))
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| now.0.duration_since(t.0))
        .and_then(|d| Duration::try_from(d).ok())
        .unwrap_or_default();
    Ok(Action::requeue(outcome.requeue_after(held_for)))
}

/// Counts the sync on `/metrics` (`subscription_sync_total`, upstream's labels).
fn count_sync(sub: &Subscription, ctx: &Context, name: &str) {
    ctx.shared
        .metrics
        .subscription_sync_total
        .get_or_create(&crate::metrics::SubscriptionLabels {
            name: name.to_owned(),
            installed: sub
                .status
                .as_ref()
                .and_then(|s| s.installed_csv.clone())
                .unwrap_or_default(),
            channel: sub.spec.channel.clone().unwrap_or_default(),
            package: sub.spec.name.clone(),
            approval: sub.spec.approval().as_str().to_owned(),
        })
        .inc();
}

/// What one reconcile observed: the catalogs the namespace can see with their models from the
/// cache, and the CSVs, Subscriptions and InstallPlans of the namespace.
struct Seen {
    /// The visible CatalogSources (sorted by namespace and name) and their loaded models.
    loaded: Vec<(Arc<CatalogSource>, Option<Arc<LoadedCatalog>>)>,
    /// Their health, for `status.catalogHealth`.
    health: Vec<CatalogHealthObservation>,
    /// The namespace's CSVs (copies excluded by the store).
    csvs: Vec<Arc<ClusterServiceVersion>>,
    /// The namespace's InstallPlans, the one the Subscription references included.
    plans: Vec<Arc<InstallPlan>>,
    /// What the namespace has installed (CSVs and Subscriptions), as resolution sees it.
    installed: Installed,
    /// The namespace's CSVs and their phases.
    csv_phases: Vec<(String, Option<crate::api::v1alpha1::CsvPhase>)>,
    /// The names of the namespace's OperatorGroups.
    operator_groups: Vec<String>,
    /// The OperatorGroup that leaves the global catalogs out of resolution here, if any.
    global_excluded_by: Option<String>,
}

impl Seen {
    /// The catalogs as resolution reads them (borrowing the models).
    /// A catalog of the global namespace, in a namespace whose OperatorGroup excludes the global
    /// catalogs ([`status::global_catalogs_excluded_by`]), is there without its model, the
    /// exclusion as its problem, so resolution names it.
    fn catalogs(&self, global: &str, namespace: &str) -> Catalogs<'_> {
        Catalogs {
            global_namespace: global.to_owned(),
            catalogs: self
                .loaded
                .iter()
                .map(|(cs, model)| {
                    let cs_ns = cs.namespace().unwrap_or_default();
                    let excluded = self
                        .global_excluded_by
                        .as_deref()
                        .filter(|_| cs_ns == global && cs_ns != namespace)
                        .map(|group| status::excluded_global_catalog(group, namespace));
                    Catalog {
                        key: CatalogKey::new(cs_ns, cs.name_any()),
                        priority: cs
                            .spec
                            .priority
                            .and_then(|p| i32::try_from(p).ok())
                            .unwrap_or_default(),
                        model: model.as_deref().map(|m| &m.model).filter(|_| excluded.is_none()),
                        problem: excluded.or_else(|| model.is_none().then(|| catalog_problem(cs))),
                    }
                })
                .collect(),
        }
    }
}

/// Observe: the stores, plus one read of the InstallPlan the Subscription references when the
/// store has not seen it yet.
async fn observe(sub: &Subscription, ctx: &Context, ns: &str) -> Result<Seen> {
    let stores = &ctx.shared.stores;
    let global = &ctx.shared.config.global_namespace;
    let mut sources: Vec<Arc<CatalogSource>> = stores
        .catalog_sources
        .state()
        .into_iter()
        .filter(|c| c.namespace().is_some_and(|n| n == ns || n == *global))
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
    let health = loaded
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
    let in_ns = |n: Option<String>| n.as_deref() == Some(ns);
    let csvs: Vec<Arc<ClusterServiceVersion>> = stores
        .csvs
        .state()
        .into_iter()
        .filter(|c| in_ns(c.namespace()))
        .collect();
    let installed = Installed {
        csvs: csvs.iter().map(|c| InstalledCsv::from_csv(c)).collect(),
        subscriptions: stores
            .subscriptions
            .state()
            .iter()
            .filter(|s| in_ns(s.namespace()))
            .map(|s| ExistingSubscription::from_subscription(s))
            .collect(),
    };
    let csv_phases = csvs
        .iter()
        .map(|c| (c.name_any(), c.status.as_ref().and_then(|s| s.phase.clone())))
        .collect();
    let groups: Vec<_> = stores
        .operator_groups
        .state()
        .into_iter()
        .filter(|g| in_ns(g.namespace()))
        .collect();
    let operator_groups = groups.iter().map(|g| g.name_any()).collect();
    let global_excluded_by = status::global_catalogs_excluded_by(groups.iter().map(AsRef::as_ref));
    let mut plans: Vec<Arc<InstallPlan>> = stores
        .install_plans
        .state()
        .into_iter()
        .filter(|p| in_ns(p.namespace()))
        .collect();
    // A plan created by the previous reconcile may not have reached the store yet: read it, so
    // the status does not mistake it for a deleted plan.
    if let Some(referenced) = sub
        .status
        .as_ref()
        .and_then(|s| s.install_plan_ref.as_ref())
        .and_then(|r| r.name.clone())
        && !plans.iter().any(|p| p.name_any() == referenced)
    {
        let api: Api<InstallPlan> = Api::namespaced(ctx.client(), ns);
        if let Some(plan) = api
            .get_opt(&referenced)
            .await
            .map_err(Error::observe(format!("InstallPlan {ns}/{referenced}")))?
        {
            plans.push(Arc::new(plan));
        }
    }
    Ok(Seen {
        loaded,
        health,
        csvs,
        plans,
        installed,
        csv_phases,
        operator_groups,
        global_excluded_by,
    })
}

/// Decide (no client): the pure [`status::decide`], unless the Subscription waits on an
/// InstallPlan it references ([`status::needs_resolution`]); its time is recorded on `/metrics`.
fn decide<'a>(
    sub: &'a Subscription,
    ctx: &Context,
    ns: &'a str,
    seen: &'a Seen,
    catalogs: &'a Catalogs<'a>,
) -> Decision<'a> {
    if !status::needs_resolution(sub.status.as_ref()) {
        return Decision::NotRun;
    }
    let started = std::time::Instant::now();
    let decision = status::decide(&Observed {
        subscription: sub,
        namespace: ns,
        operator_groups: seen.operator_groups.clone(),
        catalogs,
        installed: &seen.installed,
        csv_phases: &seen.csv_phases,
    });
    ctx.shared
        .metrics
        .resolution_duration
        .observe(started.elapsed().as_secs_f64());
    decision
}

/// Act on an install: create its InstallPlan from the bundle's inlined objects, or pull its
/// image first ([`unpack_and_plan`]).
async fn act(
    sub: &Subscription,
    ctx: &Context,
    ns: &str,
    install: &Install<'_>,
    now: &Time,
) -> Result<Outcome> {
    Ok(match lookup::needs_lookup(install.bundle) {
        None => match create_plan(sub, ctx, ns, install, None).await? {
            Ok(plan) => Outcome::NewPlan {
                csv: install.selected.bundle.clone(),
                plan: Box::new(plan),
            },
            Err(message) => Outcome::Failed {
                reason: reason::ERROR_PREVENTED_RESOLUTION,
                message,
            },
        },
        Some(image) => unpack_and_plan(sub, ctx, ns, install, image, now).await?,
    })
}

/// Report: Events for what is new (a resolution failure, a pinned upgrade, an unpack failure,
/// an unknown approval, config OLM never applies), the status ([`status::next_status`], not
/// written when unchanged), and the history of installed CSVs (`olm-rs.io/installed-csvs`).
async fn report(
    sub: &Subscription,
    ctx: &Context,
    ns: &str,
    seen: &Seen,
    outcome: &Outcome,
    now: &Time,
) -> Result<()> {
    let old = sub.status.as_ref();
    let csv_names: Vec<String> = seen.csvs.iter().map(|c| c.name_any()).collect();
    let csv_refs: Vec<&str> = csv_names.iter().map(String::as_str).collect();
    let plan_refs: Vec<&InstallPlan> = seen.plans.iter().map(AsRef::as_ref).collect();
    let next = status::next_status(&StatusInput {
        subscription: sub,
        catalog_health: &seen.health,
        csvs: &csv_refs,
        install_plans: &plan_refs,
        resolution: outcome,
        now,
    });
    let message_is_new = |condition: T, message: &str| {
        old.and_then(|o| o.condition(&condition))
            .is_none_or(|c| c.message.as_deref() != Some(message))
    };
    let me = sub.object_ref(&());
    match outcome {
        Outcome::Failed { message, .. } if message_is_new(T::ResolutionFailed, message) => {
            ctx.warning(&me, "ResolutionFailed", "Resolve", message.clone());
        }
        Outcome::Pinned { pinned, .. } if message_is_new(T::UpgradeHeld, &pinned.message()) => {
            ctx.normal(&me, "UpgradeAvailable", "Resolve", pinned.message());
        }
        Outcome::UnpackFailed { reason, message, .. } if message_is_new(T::BundleUnpackFailed, message) => {
            ctx.warning(&me, reason, "Unpack", message.clone());
        }
        _ => {}
    }
    if let Some(value) = sub.spec.unknown_approval()
        && old
            .and_then(|o| o.condition(&T::InstallPlanApprovalInvalid))
            .is_none()
    {
        ctx.warning(
            &me,
            reason::INSTALL_PLAN_APPROVAL_INVALID,
            "Resolve",
            format!(
                "spec.installPlanApproval {value:?} is neither Automatic nor Manual; treated as Manual: \
                 set it to Automatic or Manual"
            ),
        );
    }
    let unapplied = sub.spec.unapplied_config();
    if !unapplied.is_empty() && old.and_then(|o| o.condition(&T::ConfigIgnored)).is_none() {
        ctx.warning(
            &me,
            reason::CONFIG_FIELD_NOT_APPLIED,
            "Resolve",
            status::unapplied_config_message(&unapplied),
        );
    }
    // Skip a write that changes nothing, and defer one while the store still shows the
    // Subscription as it was before our last write (the watch lags behind).
    ctx.write_status(sub, status::status_changed(old, &next), &next)
        .await?;
    // The history of installed CSVs (`olm-rs.io/installed-csvs`, read by `kubectl olm
    // rollback`), with the component label this manager also owns.
    if let Some(installed) = next.installed_csv.as_deref().filter(|c| !c.is_empty()) {
        let label = crate::api::labels::component_label_key(&sub.spec.name, ns);
        if let Some(apply) = status::pin::history_apply(sub, ns, installed, label.as_deref()) {
            let name = sub.name_any();
            let api: Api<Subscription> = Api::namespaced(ctx.client(), ns);
            apply::apply(&api, &name, &apply, &ctx.manager)
                .await
                .map_err(Error::apply(format!("Subscription {ns}/{name}")))?;
        }
    }
    Ok(())
}

/// Why a visible catalog has no model: its CatalogSource's status message, else "not loaded yet".
fn catalog_problem(cs: &CatalogSource) -> String {
    catalog_failure(cs).unwrap_or_else(|| "its content has not been loaded yet".to_owned())
}

/// The failure a CatalogSource reports (its status message while not READY), if any. A visible
/// catalog without a model and without a failure is still loading (after a restart or a leader
/// change the cache starts empty while the CatalogSource already says READY); its load wakes the
/// Subscriptions that wait for it ([`super::cache::CatalogCache::loads`]).
fn catalog_failure(cs: &CatalogSource) -> Option<String> {
    let status = cs.status.as_ref();
    let ready = status
        .and_then(|s| s.connection_state.as_ref())
        .is_some_and(|c| c.last_observed_state == connection_state::READY);
    status
        .and_then(|s| s.message.clone())
        .filter(|m| !m.is_empty() && !ready)
}

/// A bundle whose manifests live in its image: start or follow the pull
/// ([`super::image_puller`], off the reconcile), decide where the lookup stands
/// ([`lookup::lookup_state`], no client) and create the InstallPlan once the manifests are here.
async fn unpack_and_plan(
    sub: &Subscription,
    ctx: &Context,
    ns: &str,
    install: &Install<'_>,
    image: &str,
    now: &Time,
) -> Result<Outcome> {
    let stores = &ctx.shared.stores;
    let group = stores
        .operator_groups
        .state()
        .into_iter()
        .find(|g| g.namespace().as_deref() == Some(ns));
    let settings = match group.as_ref().map_or(Ok(lookup::UnpackSettings::default()), |g| {
        lookup::unpack_settings(&g.name_any(), g.metadata.annotations.as_ref())
    }) {
        Ok(settings) => settings,
        Err(message) => {
            return Ok(Outcome::UnpackFailed {
                reason: reason::ERROR_PREVENTED_UNPACKING,
                message,
                retry_in: lookup::RETRY_AFTER,
            });
        }
    };
    let catalog = &install.selected.catalog;
    let catalog_source = stores
        .catalog_sources
        .get(&ObjectRef::<CatalogSource>::new(&catalog.name).within(&catalog.namespace));
    let missing_catalog_source = catalog_source
        .is_none()
        .then(|| format!("{}/{}", catalog.namespace, catalog.name));
    let secrets = catalog_source
        .map(|cs| cs.spec.secrets.clone())
        .unwrap_or_default();
    let key = (catalog.namespace.clone(), image.to_owned());
    let request = ImagePlan {
        image: image.to_owned(),
        secrets,
        poll: None,
        interval_problem: None,
    };
    let puller = &ctx.shared.bundles;
    let mut view = puller.view(&key, &request);
    fn observed<'a>(
        view: &'a image_puller::View<image_puller::PulledBundle>,
        missing_catalog_source: Option<&'a str>,
    ) -> lookup::Observation<'a> {
        lookup::Observation {
            pulled: view.served.is_some(),
            pulling: view.pulling,
            elapsed: view.first_attempt.map(|at| at.elapsed()),
            last_error: view.last_error.as_deref(),
            last_error_fatal: view.last_error_fatal,
            missing_catalog_source,
        }
    }
    let missing = missing_catalog_source.as_deref();
    let mut state = lookup::lookup_state(image, &observed(&view, missing), &settings);
    if state == lookup::LookupState::Retry {
        puller.restart(&key);
        view = puller.view(&key, &request);
        state = lookup::lookup_state(image, &observed(&view, missing), &settings);
    }
    if matches!(state, lookup::LookupState::Pending(_)) && !view.pulling {
        puller.start(&key, &request, ctx.client());
    }
    if state.stops_pulling() && puller.cancel(&key) {
        tracing::info!(
            image,
            namespace = ns,
            "bundle image pull stopped: the unpack timeout passed"
        );
    }
    let selected = &install.selected;
    let properties = status::bundle_manifests(install.bundle)
        .map(|(_, properties)| properties)
        .unwrap_or_default();
    let entry = lookup::lookup(
        &lookup::LookupInput {
            image,
            identifier: &selected.bundle,
            replaces: selected.replaces().unwrap_or_default(),
            catalog_namespace: &catalog.namespace,
            catalog_name: &catalog.name,
            properties: &properties,
        },
        &state,
        now,
    );
    match (&state, &view.served) {
        (lookup::LookupState::Unpacked, Some(pulled)) => {
            let unpacked = status::Unpacked {
                manifests: &pulled.manifests,
                image,
            };
            Ok(match create_plan(sub, ctx, ns, install, Some(unpacked)).await? {
                Ok(plan) => {
                    // The manifests are in the plan now (and the image in the digest cache).
                    puller.forget(&key);
                    Outcome::NewPlan {
                        csv: selected.bundle.clone(),
                        plan: Box::new(plan),
                    }
                }
                // Kept: the same manifests give the same failure until the catalog changes.
                Err(message) => Outcome::UnpackFailed {
                    reason: reason::ERROR_PREVENTED_UNPACKING,
                    message,
                    retry_in: lookup::RETRY_AFTER,
                },
            })
        }
        (lookup::LookupState::Failed { retry_in, .. }, _) => {
            let (_, reason, message) = lookup::subscription_condition(&entry).unwrap_or_default();
            Ok(Outcome::UnpackFailed {
                reason,
                message,
                retry_in: *retry_in,
            })
        }
        _ => {
            let (_, _, message) = lookup::subscription_condition(&entry).unwrap_or_default();
            Ok(Outcome::Unpacking { message })
        }
    }
}

/// Creates (or finds again) this Subscription's InstallPlan for `install`, built by the pure
/// [`status::install_plan`] (with the manifests pulled from the bundle's image, if any).
/// `Ok(Err(message))` is a planning failure to report on the Subscription.
async fn create_plan(
    sub: &Subscription,
    ctx: &Context,
    ns: &str,
    install: &Install<'_>,
    unpacked: Option<status::Unpacked<'_>>,
) -> Result<std::result::Result<InstallPlan, String>> {
    let selected = &install.selected;
    let csv = selected.bundle.as_str();
    let uid = sub.uid().unwrap_or_default();
    let api: Api<InstallPlan> = Api::namespaced(ctx.client(), ns);
    // The deterministic name (per plan number); a plan of that name for another CSV (a hash collision) moves us
    // to the next attempt. The store answers without a round trip; a plan it has not seen yet
    // (created by a reconcile whose watch event is still on its way) makes the create below
    // fail with a conflict, and is then read.
    // A plan that still has no status on the API server (its creator stopped before writing
    // it) gets its status below, like a new one.
    // This Subscription's plan for the CSV, if it has one: planning the same CSV again (the
    // resolution runs again while it is installed, or after its plan failed) finds it.
    let plans = ctx.shared.stores.install_plans.state();
    let in_ns = plans.iter().filter(|p| p.namespace().as_deref() == Some(ns));
    if let Some(found) = status::existing_plan_for(in_ns.map(AsRef::as_ref), &uid, csv) {
        return Ok(Ok(found.clone()));
    }
    let generation = status::next_plan_generation(sub);
    let mut ip_name = steps::install_plan_name(&uid, csv, generation);
    let mut existing = None;
    for attempt in 0..8u32 {
        ip_name = steps::install_plan_name_attempt(&uid, csv, generation, attempt);
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
    let now = Time(Timestamp::now());
    let (new_plan, ip_status) = match status::install_plan(sub, ns, &ip_name, install, unpacked, &now) {
        Ok(built) => built,
        Err(message) => return Ok(Err(message)),
    };
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
    apply::apply_status(&api, &ip_name, &ip_status, &ctx.manager)
        .await
        .map_err(Error::status(format!("InstallPlan {ns}/{ip_name}")))?;
    created.status = Some(ip_status);
    ctx.shared.metrics.install_plan_count.inc();
    let with = if install.dependencies.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = install
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

/// The Subscription controller: its InstallPlans, the catalogs it reads, the CSVs and
/// OperatorGroups of its namespace; a catalog loaded into the cache (after a restart its
/// CatalogSource's status may not change, so its watch says nothing); a bundle image pulled (the
/// Subscriptions waiting on it plan at once, not at their next 5 s requeue).
pub(super) fn controller<S>(
    w: &Wiring<'_>,
    subscriptions: S,
    store: kube::runtime::reflector::Store<Subscription>,
) -> impl std::future::Future<Output = ()> + Send + use<S>
where
    S: futures::Stream<Item = std::result::Result<Subscription, kube::runtime::watcher::Error>>
        + Send
        + 'static,
{
    use super::mappers;
    use futures::StreamExt as _;
    let subs = &w.shared.stores.subscriptions;
    let global = w.shared.config.global_namespace.clone();
    let controller = kube::runtime::Controller::for_stream(subscriptions, store)
        .with_config(wiring::settings())
        .owns_stream(w.metadata::<InstallPlan>(Wiring::watch()))
        .watches_stream(w.metadata::<CatalogSource>(Wiring::watch()), {
            let (subs, global) = (subs.clone(), global.clone());
            move |cs| mappers::subscriptions_for_catalog(&subs.state(), &cs, &global)
        })
        .watches_stream(w.metadata::<ClusterServiceVersion>(Wiring::watch()), {
            let subs = subs.clone();
            move |csv| mappers::siblings_in_namespace(&subs.state(), csv.namespace().as_deref())
        })
        .watches_stream(w.metadata::<OperatorGroup>(Wiring::watch()), {
            let subs = subs.clone();
            move |og| mappers::siblings_in_namespace(&subs.state(), og.namespace().as_deref())
        })
        .reconcile_on(w.shared.bundles.finished().flat_map({
            let subs = subs.clone();
            move |(catalog_ns, _image)| {
                futures::stream::iter(mappers::subscriptions_waiting_on_bundles(
                    &subs.state(),
                    &catalog_ns,
                ))
            }
        }))
        .reconcile_on(w.shared.catalogs.loads().flat_map({
            let subs = subs.clone();
            move |(ns, name)| {
                futures::stream::iter(mappers::subscriptions_for_catalog_named(
                    &subs.state(),
                    &ns,
                    &name,
                    &global,
                ))
            }
        }));
    wiring::run(controller, reconcile, w.context("subscription"), "subscription")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(status: serde_json::Value) -> CatalogSource {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"sourceType": "configmap", "configMap": "c"},
            "status": status,
        }))
        .expect("a CatalogSource")
    }

    #[test]
    fn a_catalog_without_a_reported_failure_counts_as_loading() {
        // Fresh, or READY as another (or an earlier) controller left it: still loading here.
        assert_eq!(catalog_failure(&catalog(serde_json::json!({}))), None);
        let ready = catalog(serde_json::json!({
            "message": "served without 1 entry",
            "connectionState": {"lastObservedState": "READY"},
        }));
        assert_eq!(catalog_failure(&ready), None);
        assert_eq!(catalog_problem(&ready), "its content has not been loaded yet");
        // A failure it reports is a failure, not a load in progress.
        let broken = catalog(serde_json::json!({
            "message": "catalog.json: EOF",
            "connectionState": {"lastObservedState": "TRANSIENT_FAILURE"},
        }));
        assert_eq!(catalog_failure(&broken).as_deref(), Some("catalog.json: EOF"));
        assert_eq!(catalog_problem(&broken), "catalog.json: EOF");
    }
}
