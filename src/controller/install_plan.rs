//! InstallPlan controller: the approval gate, then the plan's steps applied in order. The rules
//! (gate, order, how a manifest is prepared) are the pure [`crate::plan::install_plan`]; this module
//! observes, applies (client) and reports the status and Events (client).
//!
//! - Manual plans stay `RequiresApproval` until `spec.approved: true`; Automatic plans go
//!   straight to `Installing` (and `startTime` is set).
//! - Each step's manifest is server-side applied under `olm-rs/installplan` (re-applying a
//!   half-done plan after a crash is therefore safe and creates no duplicates). CRDs wait
//!   for `Established` (`WaitingForApi` → `Created`); namespaced objects get an owner
//!   reference to the CSV they belong to (`step.resolving`), once that CSV exists (except the
//!   Subscriptions generated for dependencies, see [`crate::plan::steps::owned_by_csv`]);
//!   cluster-scoped objects get the `olm.owner*` labels instead. The CSV is created with its
//!   `operators.coreos.com/csv-cleanup` finalizer already in place.
//! - A CRD step that replaces an existing CRD is checked first as upstream checks it
//!   ([`crate::plan::crd_safety`]): dropping a version still in `status.storedVersions` ("risk
//!   of data loss updating ...") or a schema that rejects existing objects fails the step (a
//!   webhook-converted CRD only gets a `CRDValidation` Warning Event for the latter); the
//!   objects are read a page at a time.
//! - The CSV and then the CRDs go first, one by one; then the other bundle objects,
//!   concurrently; then, once they all applied, the ServiceAccounts and RBAC, concurrently
//!   ([`crate::plan::install_plan::concurrent_groups`]: a failing bundle object leaves the
//!   operator without its RBAC, as upstream's in-order execution does). The CSV's
//!   uid comes from its apply or the reflector store, and API discovery is cached, so a step
//!   costs one request (a re-applied ServiceAccount keeps the CSVs that already own it, read
//!   from the ServiceAccount store, see [`crate::plan::steps::merge_csv_owner_references`]).
//!   The CSV is created with the OperatorGroup member annotations when the namespace's group
//!   already lists its targets, sparing the CSV controller a write.
//! - A hand-made plan with no steps and no Subscription owner
//!   ([`crate::plan::install_plan::unresolvable`]) fails at once with `Installed=False` and a
//!   Warning Event naming its CSVs and the fix.
//! - Events are published once the status is written, in the background
//!   ([`super::Context::publish`]).
//! - A failing step is retried until `--install-plan-retry-timeout` after `startTime`; then
//!   the plan is `Failed` with `Installed=False/InstallComponentFailed` naming the object.
//!   A plan whose steps are all done is `Complete` with `Installed=True`.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
    time::Duration,
};

use k8s_openapi::{
    api::core::v1::{ObjectReference, ServiceAccount},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api, Resource, ResourceExt,
    api::ListParams,
    core::{ApiResource, DynamicObject, GroupVersionKind, PartialObjectMeta},
    runtime::{controller::Action, reflector::ObjectRef},
};
use serde_json::Value;

use super::wiring::{self, Wiring};
use super::{Context, Error, EventNote, Result, instrumented};
use crate::api::v1::OperatorGroup;
use crate::{
    api::v1alpha1::{
        ClusterServiceVersion, InstallPlan, InstallPlanPhase, InstallPlanStatus, Step, StepStatus,
    },
    k8s::apply,
    plan::{
        crd_safety,
        install_plan::{
            MAX_INSTALL_PLANS, Transition, Unresolvable, applied_as_account, concurrent_groups,
            crd_established, group_check, group_condition, installed_condition, plans_to_collect,
            prepare_object, referenced_plans, retried_on_rbac_change, run_as, sequential_and_concurrent,
            set_condition, transition, unresolvable,
        },
        operator_group::member_annotations,
        steps,
    },
};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};

/// Why a step could not be applied this time. The message (the `Display`) goes into the plan's
/// status and, once the retry timeout has passed, into its `Installed=False` condition, so each
/// names the object and what failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// Reading a CRD to see whether it is established failed.
    #[error("failed to read {what}: {}", crate::k8s::message::describe(.source))]
    ReadCrd {
        /// `CustomResourceDefinition <name>`.
        what: String,
        /// The API's answer.
        source: kube::Error,
    },
    /// Reading the CSV for its uid failed.
    #[error("failed to read CSV {name}: {}", crate::k8s::message::describe(.source))]
    ReadCsv {
        /// The CSV.
        name: String,
        /// The API's answer.
        source: kube::Error,
    },
    /// The step's manifest is not JSON.
    #[error("the manifest of {what} is not valid JSON: {source}")]
    InvalidManifest {
        /// `<kind> <name>`.
        what: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// The step has no manifest.
    #[error("step {what} has no manifest")]
    NoManifest {
        /// `<kind> <name>`.
        what: String,
    },
    /// The API server does not serve the step's kind (upstream's `gvkNotFoundError`, naming the
    /// step's own group, version and kind as upstream does).
    #[error(
        "api-server resource not found installing {kind} {name}: GroupVersionKind {group}/{version}, Kind={kind} \
         not found on the cluster. This API may have been deprecated and removed, see \
         https://kubernetes.io/docs/reference/using-api/deprecation-guide/ for more information."
    )]
    GvkNotFound {
        /// `step.resource.group`.
        group: String,
        /// `step.resource.version`.
        version: String,
        /// `step.resource.kind`.
        kind: String,
        /// `step.resource.name`.
        name: String,
    },
    /// Discovery of the step's kind failed otherwise.
    #[error("api-server resource not found installing {what}: {}", crate::k8s::message::describe(.source))]
    Discover {
        /// `<kind> <name>`.
        what: String,
        /// The discovery error.
        source: kube::Error,
    },
    /// A manifest's owner reference names a CSV the namespace does not hold.
    #[error("error generating ownerrefs for {what}: ClusterServiceVersion {csv} not found")]
    OwnerCsvMissing {
        /// The CSV the manifest names.
        csv: String,
        /// `<kind> <name>`.
        what: String,
    },
    /// A namespaced object owned by the CSV waits for the CSV to exist.
    #[error("waiting for ClusterServiceVersion {csv} before {what}")]
    WaitingForCsv {
        /// The CSV.
        csv: String,
        /// `<kind> <name>`.
        what: String,
    },
    /// A copy of another namespace's CSV stands where this plan's CSV goes: it is deleted, and
    /// the step tried again ([`super::copied_csv::make_room_for_own`]).
    #[error("waiting for the copied CSV {csv} to be replaced by this namespace's own")]
    CopyInTheWay {
        /// The CSV.
        csv: String,
    },
    /// Updating an existing CRD would lose data or invalidate existing objects.
    #[error(transparent)]
    CrdSafety(#[from] crd_safety::CrdSafetyError),
    /// No client acting as the plan's ServiceAccount could be had.
    #[error(transparent)]
    Account(#[from] crate::k8s::scoped::ScopedError),
    /// Creating or applying a step as the plan's ServiceAccount failed (a refusal names the
    /// verb and resource the account lacks).
    #[error("error creating {what} as ServiceAccount {account}: {}{}", crate::k8s::message::describe(.source), forbidden_hint(.source))]
    ApplyAs {
        /// `<kind> <name>`.
        what: String,
        /// `<namespace>/<name>` of the account.
        account: String,
        /// The API's answer.
        source: kube::Error,
    },
    /// The server-side apply failed.
    #[error("error creating {what}: {}", crate::k8s::message::describe(.source))]
    Apply {
        /// `<kind> <name>`.
        what: String,
        /// The API's answer.
        source: kube::Error,
    },
}

/// The fix added to a refusal of a step applied as the plan's ServiceAccount.
fn forbidden_hint(error: &kube::Error) -> &'static str {
    match error {
        kube::Error::Api(status) if status.code == 403 => {
            "; the namespace's OperatorGroup runs installs as this account (spec.serviceAccountName): grant it that permission with a Role or ClusterRole binding, and the plan is retried"
        }
        _ => "",
    }
}

/// The note of an `AppliedWithWarnings` Event, upstream's words.
fn warnings_message(step: &Step, warnings: &[String]) -> String {
    let r = &step.resource;
    let joined = warnings.join(", ");
    if step.resolving.is_empty() {
        format!(
            "{} warning(s) generated during operator installation ({} {:?}): {joined}",
            warnings.len(),
            r.kind,
            r.name
        )
    } else {
        format!(
            "{} warning(s) generated during installation of operator {:?} ({} {:?}): {joined}",
            warnings.len(),
            step.resolving,
            r.kind,
            r.name
        )
    }
}

/// Reconciles one InstallPlan.
pub async fn reconcile(ip: Arc<InstallPlan>, ctx: Arc<Context>) -> Result<Action> {
    let store = ctx.shared.stores.install_plans.clone();
    instrumented(ip, Arc::clone(&ctx), Some(&store), |ip| reconcile_inner(ip, ctx)).await
}

async fn reconcile_inner(ip: Arc<InstallPlan>, ctx: Arc<Context>) -> Result<Action> {
    let ns = ip
        .namespace()
        .ok_or_else(|| Error::InvalidObject("InstallPlan without namespace".into()))?;
    let now = Time(Timestamp::now());
    // (no client) A plan nothing resolved gets a status saying so, and an Event.
    match unresolvable(&ip, &now) {
        Unresolvable::No => {}
        Unresolvable::WaitFor(wait) => return Ok(Action::requeue(wait)),
        Unresolvable::Fail(status) => {
            let old = ip.status.clone().unwrap_or_default();
            let message = status.message.clone().unwrap_or_default();
            // (client)
            write(&ip, &old, &status, &ctx).await?;
            ctx.publish(vec![note(
                &ip.object_ref(&()),
                true,
                "InstallCheckFailed",
                message,
            )]);
            return Ok(Action::await_change());
        }
    }
    let Some(old) = ip.status.clone() else {
        return Ok(Action::await_change());
    };
    // (no client) A failed scoped plan whose namespace's RBAC changed since it failed runs again.
    let retry = retried_on_rbac_change(&ip, ctx.shared.last_rbac_change(&ns).as_ref());
    if !retry && (old.phase.is_terminal() || old.plan.is_empty()) {
        // A plan's own status write brings it back here once it has finished (and every finished
        // plan comes here at start-up): the one place old plans are collected.
        if old.phase.is_terminal() {
            collect_old_plans(&ctx, &ns).await?;
        }
        return Ok(Action::await_change());
    }
    let mut status = old.clone();
    let reference = ip.object_ref(&());
    // Published in order once the status is written.
    let mut events = Vec::new();
    // (no client) The namespace's OperatorGroup, whatever the phase: without one the plan keeps
    // its phase and says why in its Installed condition (the group's watch brings it back).
    let groups = ctx.shared.stores.operator_groups.state();
    let check = group_check(
        groups
            .iter()
            .filter(|g| g.namespace().as_deref() == Some(ns.as_str()))
            .map(AsRef::as_ref),
    );
    if let Some(condition) = group_condition(&status, &check, &now) {
        if let Err(message) = &check {
            events.push(note(&reference, true, "InstallCheckFailed", message.clone()));
        }
        set_condition(&mut status, condition);
    }
    // A group naming a ServiceAccount: the plan records it and its steps run as it.
    if let Ok(Some(account)) = &check {
        status.attenuated_service_account_ref = Some(account.clone());
    }
    if retry && check.is_ok() {
        status.phase = InstallPlanPhase::Installing;
        events.push(note(
            &reference,
            false,
            "Retrying",
            format!("the RBAC of namespace {ns} changed since the plan failed: retrying it"),
        ));
    }
    if check.is_err() || (!retry && transition(&ip) == Transition::Leave) {
        // (client)
        write(&ip, &old, &status, &ctx).await?;
        ctx.publish(events);
        // The group's watch brings the plan back, but its event may come before the group
        // store shows the group's targets: look again shortly, as upstream requeues.
        return Ok(if check.is_err() {
            Action::requeue(Duration::from_secs(5))
        } else {
            Action::await_change()
        });
    }
    if status.phase != InstallPlanPhase::Installing {
        status.phase = InstallPlanPhase::Installing;
        status.message = None;
        events.push(note(
            &reference,
            false,
            "Installing",
            format!("installing {}", ip.spec.cluster_service_version_names.join(", ")),
        ));
    }
    if status.start_time.is_none() {
        status.start_time = Some(now.clone());
    }

    let account = run_as(&status, &ns);
    let mut warnings = Vec::new();
    let outcome = execute(&ctx, &reference, &ns, account, &mut status.plan, &mut warnings).await;
    for (index, warned) in warnings {
        let Some(step) = status.plan.get(index) else {
            continue;
        };
        let mut regarding = reference.clone();
        regarding.field_path = Some(format!("status.plan[{index}]"));
        ctx.shared.metrics.install_plan_warnings.inc();
        events.push(note(
            &regarding,
            true,
            "AppliedWithWarnings",
            warnings_message(step, &warned),
        ));
    }
    let waiting = status.plan.iter().any(|s| s.status == StepStatus::WaitingForApi);
    let action = match outcome {
        Ok(()) if !waiting => {
            status.phase = InstallPlanPhase::Complete;
            status.message = None;
            status.conditions = vec![installed_condition(true, None, &Time(Timestamp::now()))];
            events.push(note(
                &reference,
                false,
                "InstallSucceeded",
                "every step of the plan was applied".into(),
            ));
            Action::await_change()
        }
        Ok(()) => Action::requeue(Duration::from_secs(2)),
        Err(error) => {
            let message = error.to_string();
            let started = status.start_time.as_ref().map_or_else(Timestamp::now, |t| t.0);
            let timeout = SignedDuration::try_from(ctx.shared.config.install_plan_retry_timeout)
                .unwrap_or(SignedDuration::from_secs(60));
            if Timestamp::now().duration_since(started) < timeout {
                status.message = Some(format!("retrying execution due to error: {message}"));
                Action::requeue(Duration::from_secs(5))
            } else {
                status.phase = InstallPlanPhase::Failed;
                status.message = Some(message.clone());
                status.conditions = vec![installed_condition(
                    false,
                    Some(message.clone()),
                    &Time(Timestamp::now()),
                )];
                events.push(note(&reference, true, "InstallComponentFailed", message));
                Action::await_change()
            }
        }
    };
    write(&ip, &old, &status, &ctx).await?;
    ctx.publish(events);
    Ok(action)
}

/// Deletes the namespace's InstallPlans past [`MAX_INSTALL_PLANS`], as upstream's
/// `gcInstallPlans` does ([`plans_to_collect`] decides which), once a plan there has finished
/// and the store shows it so.
async fn collect_old_plans(ctx: &Context, ns: &str) -> Result<()> {
    let stores = &ctx.shared.stores;
    let plans: Vec<Arc<InstallPlan>> = stores
        .install_plans
        .state()
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(ns))
        .collect();
    if plans.len() <= MAX_INSTALL_PLANS {
        return Ok(());
    }
    let subscriptions = stores.subscriptions.state();
    let referenced = referenced_plans(
        subscriptions
            .iter()
            .filter(|s| s.namespace().as_deref() == Some(ns))
            .map(AsRef::as_ref),
    );
    let api: Api<InstallPlan> = Api::namespaced(ctx.client(), ns);
    for name in plans_to_collect(plans.iter().map(AsRef::as_ref), &referenced) {
        let deleted = apply::delete_if_present(&api, &name)
            .await
            .map_err(|source| Error::Delete {
                what: format!("old InstallPlan {ns}/{name}"),
                source,
            })?;
        if deleted {
            tracing::info!(namespace = ns, plan = %name, "deleted an old InstallPlan (at most {MAX_INSTALL_PLANS} are kept)");
        }
    }
    Ok(())
}

/// An Event of this controller (action `Install`).
fn note(regarding: &ObjectReference, warning: bool, reason: &str, note: String) -> EventNote {
    EventNote {
        regarding: regarding.clone(),
        warning,
        reason: reason.to_owned(),
        action: "Install",
        note,
    }
}

/// Writes the plan's status unless it equals what the object shows (timestamps aside) or
/// the store lags behind this controller's last write.
async fn write(
    ip: &InstallPlan,
    old: &InstallPlanStatus,
    new: &InstallPlanStatus,
    ctx: &Context,
) -> Result<()> {
    let changed = !apply::same_ignoring_time(&apply::to_value(old), &apply::to_value(new));
    ctx.write_status(ip, changed, new).await.map(drop)
}

/// Applies every step not done yet: the CSV and then the CRDs first, in order, then the bundle's
/// other objects concurrently, then (if they all applied) the ServiceAccounts and RBAC
/// concurrently, since none depends on another once the CSV's uid is known. Returns the first
/// failure, naming the object.
async fn execute(
    ctx: &Arc<Context>,
    reference: &ObjectReference,
    ns: &str,
    account: Option<(String, String)>,
    plan: &mut [Step],
    warnings: &mut Vec<(usize, Vec<String>)>,
) -> std::result::Result<(), StepError> {
    let scoped = match account {
        Some((account_ns, name)) => Some(Scoped {
            client: ctx.shared.scoped.as_service_account(&account_ns, &name)?,
            account: format!("{account_ns}/{name}"),
        }),
        None => None,
    };
    let scoped = scoped.as_ref();
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client());
    let mut owners: HashMap<String, String> = HashMap::new();
    let (first, rest) = sequential_and_concurrent(plan);
    for index in first {
        let Some(step) = plan.get_mut(index) else { continue };
        if matches!(step.status, StepStatus::Created | StepStatus::Present) {
            continue;
        }
        if step.status == StepStatus::WaitingForApi && step.resource.kind == "CustomResourceDefinition" {
            let what = format!("{} {}", step.resource.kind, step.resource.name);
            match crds.get_opt(&step.resource.name).await {
                Ok(Some(crd)) if crd_established(&crd) => step.status = StepStatus::Created,
                Ok(_) => {}
                Err(source) => return Err(StepError::ReadCrd { what, source }),
            }
            continue;
        }
        let (status, warned) = apply_step(ctx, reference, ns, scoped, step, None, &mut owners).await?;
        step.status = status;
        if !warned.is_empty() {
            warnings.push((index, warned));
        }
    }
    // The CSV's uid for the owner references: from this reconcile's apply, else the store
    // (a GET only when the store has not seen the CSV yet).
    let mut wanted: Vec<String> = rest
        .iter()
        .filter_map(|&i| plan.get(i))
        .filter(|s| !matches!(s.status, StepStatus::Created | StepStatus::Present))
        .filter(|s| !s.resolving.is_empty() && steps::owned_by_csv(&s.resource.kind))
        .map(|s| s.resolving.clone())
        .collect();
    wanted.sort();
    wanted.dedup();
    for csv_name in wanted {
        if owners.contains_key(&csv_name) {
            continue;
        }
        if let Some(uid) = csv_uid(ctx, ns, &csv_name).await? {
            owners.insert(csv_name, uid);
        }
    }
    let owners = Arc::new(owners);
    for group in concurrent_groups(plan, &rest) {
        let pending: Vec<(usize, Step)> = group
            .into_iter()
            .filter_map(|i| plan.get(i).map(|s| (i, s.clone())))
            .filter(|(_, s)| !matches!(s.status, StepStatus::Created | StepStatus::Present))
            .collect();
        let mut results = Vec::with_capacity(pending.len());
        for chunk in pending.chunks(STEP_CONCURRENCY) {
            let applies = chunk.iter().cloned().map(|(i, step)| {
                let ctx = Arc::clone(ctx);
                let reference = reference.clone();
                let ns = ns.to_owned();
                let owners = Arc::clone(&owners);
                let scoped = scoped.cloned();
                async move {
                    let mut scratch = HashMap::new();
                    let owners = Some(owners.as_ref());
                    let applied = apply_step(
                        &ctx,
                        &reference,
                        &ns,
                        scoped.as_ref(),
                        &step,
                        owners,
                        &mut scratch,
                    )
                    .await;
                    (i, applied)
                }
            });
            results.extend(futures::future::join_all(applies).await);
        }
        let mut first_error = None;
        for (i, result) in results {
            match result {
                Ok((status, warned)) => {
                    if let Some(step) = plan.get_mut(i) {
                        step.status = status;
                    }
                    if !warned.is_empty() {
                        warnings.push((i, warned));
                    }
                }
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        // A failing group stops the plan: the groups after it wait (see `concurrent_groups`).
        if let Some(error) = first_error {
            return Err(error);
        }
    }
    Ok(())
}

/// Whether discovery says the API server does not serve a kind (its group version is unknown,
/// or lists no such kind), rather than failing to answer.
fn not_served(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 404,
        kube::Error::Discovery(_) => true,
        _ => false,
    }
}

/// Steps applied at once after the CSV.
const STEP_CONCURRENCY: usize = 8;

/// The uid of the CSV `name` in `ns`: from the reflector store, else (not seen yet) the API.
async fn csv_uid(ctx: &Context, ns: &str, name: &str) -> std::result::Result<Option<String>, StepError> {
    let key = ObjectRef::<ClusterServiceVersion>::new(name).within(ns);
    if let Some(csv) = ctx.shared.stores.csvs.get(&key) {
        return Ok(csv.uid());
    }
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), ns);
    match csvs.get_opt(name).await {
        Ok(found) => Ok(found.and_then(|c| c.uid())),
        Err(source) => Err(StepError::ReadCsv {
            name: name.to_owned(),
            source,
        }),
    }
}

/// The OperatorGroup member annotations for a CSV in `ns`, from the store: only when the
/// namespace has exactly one group and it lists its target namespaces (otherwise the CSV
/// controller reports the problem and writes them once the group is ready).
fn member_annotations_in(ctx: &Context, ns: &str) -> Option<BTreeMap<String, String>> {
    let groups: Vec<_> = ctx
        .shared
        .stores
        .operator_groups
        .state()
        .into_iter()
        .filter(|g| g.namespace().as_deref() == Some(ns))
        .collect();
    let [group] = groups.as_slice() else {
        return None;
    };
    let targets = group.status.as_ref()?.namespaces.as_ref()?;
    Some(member_annotations(&group.name_any(), ns, targets))
}

/// Objects read per page when existing objects are validated against a new CRD schema (what
/// upstream's `pager` asks for): a CRD with many objects is never read in one answer.
const CRD_VALIDATION_PAGE: u32 = 500;

/// Before a CRD step replaces an existing CRD: refuses to drop a version still in its
/// `status.storedVersions`, and checks the existing objects of every version whose schema changed
/// against the new schema, a page at a time, see [`crd_safety`]. A webhook-converted CRD whose
/// objects fail only gets a `CRDValidation` Warning Event on `plan`, as upstream; a failed list
/// fails the step whatever the conversion. A fresh CRD is not checked. Returns the existing CRD.
async fn check_crd_update(
    ctx: &Context,
    plan: &ObjectReference,
    name: &str,
    manifest: &Value,
) -> std::result::Result<Option<CustomResourceDefinition>, StepError> {
    let what = format!("CustomResourceDefinition {name}");
    // Only apiextensions.k8s.io/v1 CRDs are checked (what the API server serves); anything else
    // is left to the apply, which reports it.
    let Ok(new) = serde_json::from_value::<CustomResourceDefinition>(manifest.clone()) else {
        return Ok(None);
    };
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client());
    let existing = match crds.get_opt(name).await {
        Ok(Some(crd)) => crd,
        Ok(None) => return Ok(None),
        Err(source) => return Err(StepError::ReadCrd { what, source }),
    };
    crd_safety::stored_versions_kept(&existing, &new)?;
    for (version, schema) in crd_safety::versions_to_validate(&existing, &new) {
        let gvk = GroupVersionKind::gvk(&new.spec.group, &version, &new.spec.names.kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, &new.spec.names.plural);
        let api: Api<DynamicObject> = Api::all_with(ctx.client(), &resource);
        let mut params = ListParams::default().limit(CRD_VALIDATION_PAGE);
        let verdict = loop {
            let page = api.list(&params).await.map_err(|source| StepError::ReadCrd {
                what: format!("the {version} objects of {what}"),
                source,
            })?;
            let objects: Vec<Value> = page
                .items
                .iter()
                .filter_map(|o| serde_json::to_value(o).ok())
                .collect();
            let verdict = crd_safety::existing_objects_valid(&new, &version, &schema, &objects);
            match page.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) if verdict.is_ok() => params = params.continue_token(&token),
                _ => break verdict,
            }
        };
        if let Err(error) = verdict {
            if !crd_safety::uses_webhook_conversion(&new) {
                return Err(error.into());
            }
            tracing::warn!(%error, crd = name, "existing objects fail the new CRD schema; updating anyway (the CRD uses a conversion webhook)");
            ctx.publish(vec![note(
                plan,
                true,
                "CRDValidation",
                format!(
                    "Validation of existing CRs against the new CRD's schema failed, but a webhook conversion \
                     strategy was specified in the new CRD.\nThe new webhook will only start after the bundle \
                     is upgraded, so we must assume that it will successfully convert existing CRs to a format \
                     that would have passed validation.\n\nCRD: {name:?}\nValidation Error: {error}\n"
                ),
            )]);
        }
    }
    Ok(Some(existing))
}

/// The client of a plan run as a ServiceAccount, and the account (`namespace/name`).
#[derive(Clone)]
struct Scoped {
    client: kube::Client,
    account: String,
}

/// Applies one step; returns its new status. `owners` maps CSV names to uids; `None` while
/// the CSV itself is being applied (its uid is recorded in `created`). A plan run as a
/// ServiceAccount (`scoped`) creates every step but a CRD as that account
/// ([`applied_as_account`]).
async fn apply_step(
    ctx: &Context,
    plan: &ObjectReference,
    ns: &str,
    scoped: Option<&Scoped>,
    step: &Step,
    owners: Option<&HashMap<String, String>>,
    created: &mut HashMap<String, String>,
) -> std::result::Result<(StepStatus, Vec<String>), StepError> {
    let r = &step.resource;
    let what = format!("{} {}", r.kind, r.name);
    let manifest: Value = match r.manifest.as_deref().map(serde_json::from_str) {
        Some(Ok(v)) => v,
        Some(Err(source)) => return Err(StepError::InvalidManifest { what, source }),
        None => return Err(StepError::NoManifest { what }),
    };
    let manifest = if r.kind == "CustomResourceDefinition" {
        let live = check_crd_update(ctx, plan, &r.name, &manifest).await?;
        let live = live.and_then(|crd| crd.metadata.annotations).unwrap_or_default();
        steps::with_installed_alongside(&manifest, ns, &step.resolving, &live)
    } else {
        manifest
    };
    let (group, version, kind) = steps::step_gvk(r, &manifest);
    let manifest = steps::with_type(&manifest, &group, &version, &kind);
    let gvk = GroupVersionKind::gvk(&group, &version, &kind);
    let (resource, caps) = match ctx.shared.discover(&gvk).await {
        Ok(found) => found,
        Err(source) if not_served(&source) => {
            return Err(StepError::GvkNotFound {
                group: r.group.clone(),
                version: r.version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
            });
        }
        Err(source) => return Err(StepError::Discover { what, source }),
    };
    let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
    // A step that names no CSV (a hand-written plan) gets no owner of its own; the CSVs its
    // manifest names as owners get their uids.
    let owned = steps::owned_by_csv(&r.kind) && !step.resolving.is_empty();
    let owner = owners
        .filter(|_| owned)
        .and_then(|o| o.get(&step.resolving))
        .map(|uid| (step.resolving.clone(), uid.clone()));
    if namespaced && owned && owner.is_none() {
        // The CSV step comes first; its object may not be visible yet. Try again shortly.
        return Err(StepError::WaitingForCsv {
            csv: step.resolving.clone(),
            what,
        });
    }
    let named_owners = steps::csv_owner_names(&manifest);
    let manifest = if namespaced && !named_owners.is_empty() {
        let mut uids = HashMap::new();
        for csv in named_owners {
            // The step's own CSV (every generated ServiceAccount, Role and RoleBinding names it,
            // as upstream's do) is known already: no read.
            if let Some((name, uid)) = &owner
                && *name == csv
            {
                uids.insert(csv, uid.clone());
                continue;
            }
            match csv_uid(ctx, ns, &csv).await? {
                Some(uid) => {
                    uids.insert(csv, uid);
                }
                None => return Err(StepError::OwnerCsvMissing { csv, what }),
            }
        }
        steps::with_csv_owner_uids(&manifest, &uids)
    } else {
        manifest
    };
    let member = (r.kind == steps::CSV_KIND)
        .then(|| member_annotations_in(ctx, ns))
        .flatten();
    let object = prepare_object(
        manifest,
        ns,
        namespaced,
        owner.as_ref().map(|(n, u)| (n.as_str(), u.as_str())),
        member.as_ref(),
    );
    let scoped = scoped.filter(|_| applied_as_account(&r.kind));
    let client = scoped.map_or_else(|| ctx.client(), |s| s.client.clone());
    // A ServiceAccount is shared by the versions of an operator: keep the CSVs that already
    // own it (the one being replaced stays satisfied until it is replaced).
    // Its owners come from the (metadata-only) ServiceAccount store: a ServiceAccount that
    // another CSV owns was created by that CSV's plan, long seen by the store.
    let object = if r.kind == "ServiceAccount" {
        let key = ObjectRef::<PartialObjectMeta<ServiceAccount>>::new(&r.name).within(ns);
        match ctx.shared.stores.service_accounts.get(&key) {
            Some(live) => {
                let refs: Vec<Value> = live
                    .owner_references()
                    .iter()
                    .filter_map(|o| serde_json::to_value(o).ok())
                    .collect();
                steps::merge_csv_owner_references(&object, &refs)
            }
            None => object,
        }
    } else {
        object
    };
    let step_error = |source: kube::Error| match scoped {
        Some(s) => StepError::ApplyAs {
            what: what.clone(),
            account: s.account.clone(),
            source,
        },
        None => StepError::Apply {
            what: what.clone(),
            source,
        },
    };
    // The namespace's own CSV is never applied over a copy (it would stay a copy); a scoped
    // plan creates it as its account.
    if r.kind == steps::CSV_KIND {
        match super::copied_csv::make_room_for_own(ctx, client.clone(), ns, &r.name, &object).await {
            Ok(true) => {}
            Ok(false) => return Err(StepError::CopyInTheWay { csv: r.name.clone() }),
            Err(source) => return Err(step_error(source)),
        }
    }
    let written = apply::write_step(
        &client,
        &resource,
        namespaced.then_some(ns),
        &r.name,
        &object,
        &ctx.manager,
        // A CSV step was created above when new; anything else a scoped plan creates first.
        scoped.is_some() && r.kind != steps::CSV_KIND,
    )
    .await
    .map_err(step_error)?;
    if r.kind == steps::CSV_KIND
        && let Some(uid) = written.object.metadata.uid
    {
        created.insert(r.name.clone(), uid);
    }
    if r.kind == "CustomResourceDefinition" {
        let crds: Api<CustomResourceDefinition> = Api::all(ctx.client());
        let status = match crds.get_opt(&r.name).await {
            Ok(Some(crd)) if crd_established(&crd) => StepStatus::Created,
            _ => StepStatus::WaitingForApi,
        };
        return Ok((status, written.warnings));
    }
    Ok((StepStatus::Created, written.warnings))
}

/// The InstallPlan controller: an OperatorGroup in a plan's namespace (a plan waits for one, see
/// `plan::install_plan::group_check`); a Role, RoleBinding or ServiceAccount changing there (a
/// failed scoped plan is retried, `plan::install_plan::retried_on_rbac_change`).
pub(super) fn controller<S>(
    w: &Wiring<'_>,
    plans: S,
    store: kube::runtime::reflector::Store<InstallPlan>,
) -> impl std::future::Future<Output = ()> + Send + use<S>
where
    S: futures::Stream<Item = std::result::Result<InstallPlan, kube::runtime::watcher::Error>>
        + Send
        + 'static,
{
    let unfinished = w.shared.stores.install_plans.clone();
    let controller = kube::runtime::Controller::for_stream(plans, store)
        .with_config(wiring::settings())
        .watches_stream(w.metadata::<OperatorGroup>(Wiring::watch()), move |og| {
            super::mappers::unfinished_plans_in(&unfinished.state(), og.namespace().as_deref())
        })
        .watches_stream(w.metadata::<Role>(Wiring::watch()), rbac_mapper(w.shared))
        .watches_stream(w.metadata::<RoleBinding>(Wiring::watch()), rbac_mapper(w.shared))
        .watches_stream(
            w.metadata::<ServiceAccount>(Wiring::watch()),
            rbac_mapper(w.shared),
        );
    wiring::run(controller, reconcile, w.context("installplan"), "installplan")
}

/// The InstallPlan trigger of a Role, RoleBinding or ServiceAccount event: records when the
/// namespace's RBAC changed and names its failed scoped plans.
fn rbac_mapper<K: Resource>(
    shared: &Arc<super::Shared>,
) -> impl Fn(K) -> Vec<kube::runtime::reflector::ObjectRef<InstallPlan>> + use<K> {
    let shared = Arc::clone(shared);
    move |o| {
        let ns = o.meta().namespace.clone();
        if let Some(ns) = &ns {
            shared.note_rbac_change(ns);
        }
        super::mappers::failed_scoped_plans_in(&shared.stores.install_plans.state(), ns.as_deref())
    }
}
