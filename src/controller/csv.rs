//! ClusterServiceVersion controller: OperatorGroup membership → requirements (owned and
//! required CRDs established) → the install strategy's Deployments (SSA under `olm-rs/csv`,
//! owned by the CSV, OperatorGroup annotations on the pod template) → phase from Deployment
//! availability; Replacing → Deleting once the replacement succeeded; the
//! `operators.coreos.com/csv-cleanup` finalizer removes the cluster-scoped RBAC and webhook
//! configurations labelled with the CSV as owner, and strips its conversion webhooks from
//! CRDs unless a CSV replaces it. The webhook I/O (cert Secrets, configurations, conversion
//! CRDs; certificates issued when due) is the child module `webhooks`.
//!
//! The phase decision is [`crate::plan::csv::decide`], and whether its status write waits is
//! [`crate::plan::csv::write_waits`]; this module observes (reflector stores of
//! OperatorGroups, CSVs, Deployments and ServiceAccounts, plus a read per owned or required
//! CRD), acts on the decision and reports. Each step of `sync` is marked "(client)" when
//! it talks to the API server and "(no client)" when it only decides.
//!
//! Efficiency rules: transitions that need no outside event are chained within one reconcile
//! (Pending → InstallReady → Installing, one status write); a Deployment is applied only when
//! the store's copy differs from the desired one (spec hash, labels, owner); a status write is
//! skipped when it changes nothing, and deferred while the store has not caught up with this
//! controller's previous write (and its Events go with the write that happens). The controller
//! is triggered by its Deployments and ServiceAccounts (owner references), so a missing
//! requirement is re-checked when it appears, not by polling; by the deletion or change of
//! anything its install owns (Deployments, ServiceAccounts, webhook Services and cert Secrets by
//! owner reference; Roles, RoleBindings, ClusterRoles and ClusterRoleBindings by their
//! `olm.owner*` labels), so what is gone is put back at once ([`plan_csv::components`]: the
//! decision says what; `act` applies it and the reconcile sends an Event naming it); and by its
//! Subscription when
//! that Subscription's `spec.config` or the CSVs it names change, so a new config is merged
//! into the Deployments (a spec-hash drift) without a new InstallPlan. Each reconcile asks the
//! copied-CSV controller to sync the CSV's copies ([`super::copied_csv::request`]: a key on its
//! queue, never a write here), and after each sync its OperatorCondition
//! ([`super::operator_condition::sync_for_csv`]) is kept; a change of the OperatorCondition of
//! the CSV it replaces re-checks its upgrade gate.
//!
//! The inter-group API conflict is settled before anything of a decision is done: the claim
//! the decision rests on is taken from the shared ledger ([`settle_claim`]), and a CSV whose
//! rival claimed first fails `InterOperatorGroupOwnerConflict` without ever getting a
//! Deployment.
//!
//! Two writes are saved on every install: a new CSV whose only missing requirements are
//! ServiceAccounts its still-`Installing` InstallPlan has yet to apply is not reported
//! `Pending`/`RequirementsNotMet` for those milliseconds (the plan creates the CSV first, for
//! the owner references); and a status that only moves a rollout's progress message is
//! written at most once per [`plan_csv::PROGRESS_INTERVAL`]. Phase and reason changes are
//! written at once.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::ServiceAccount,
        rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, ListParams},
    core::PartialObjectMeta,
    runtime::{
        controller::Action,
        finalizer::{Event as FinalizerEvent, finalizer},
        reflector::ObjectRef,
    },
};
use serde_json::{Value, json};

use super::wiring::{self, Wiring};
use super::{Context, Error, EventNote, Result, instrumented, lock, object_key};
use crate::api::{v1::OperatorGroup, v1alpha1::Subscription};

mod webhooks;
use crate::{
    api::{
        labels,
        v1alpha1::{ClusterServiceVersion, ClusterServiceVersionStatus, CsvPhase, CsvReason},
    },
    k8s::apply,
    plan::{
        csv::{
            self as plan_csv, CrdState, Observed, ObservedDeployment, ObservedOperatorGroup, OtherCsv,
            ServiceAccountState, crd_owner_conflicts, replacee_of, replacement_of,
        },
        steps,
    },
};

/// Reconciles one CSV.
pub async fn reconcile(csv: Arc<ClusterServiceVersion>, ctx: Arc<Context>) -> Result<Action> {
    let store = ctx.shared.stores.csvs.clone();
    instrumented(csv, Arc::clone(&ctx), Some(&store), |csv| {
        reconcile_inner(csv, ctx)
    })
    .await
}

async fn reconcile_inner(csv: Arc<ClusterServiceVersion>, ctx: Arc<Context>) -> Result<Action> {
    let ns = csv
        .namespace()
        .ok_or_else(|| Error::InvalidObject("CSV without namespace".into()))?;
    // A copy in a target namespace is its original's business (controller::copied_csv), and
    // never keeps the cleanup finalizer: it guards nothing there, and must not hold the
    // namespace in Terminating.
    if super::copied_csv::is_copy(&csv) {
        super::copied_csv::strip_finalizer(
            &ctx,
            &ns,
            &csv.name_any(),
            csv.resource_version().as_deref(),
            csv.finalizers(),
        )
        .await?;
        return Ok(Action::await_change());
    }
    let api: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), &ns);
    let c = Arc::clone(&ctx);
    finalizer(&api, labels::CSV_CLEANUP_FINALIZER, csv, |event| async move {
        match event {
            FinalizerEvent::Apply(csv) => {
                // Its copies are written by their own controller: asked for here, never waited on.
                super::copied_csv::request(&csv, &c);
                let action = sync(Arc::clone(&csv), Arc::clone(&c)).await?;
                super::operator_condition::sync_for_csv(&csv, &c).await?;
                Ok(action)
            }
            FinalizerEvent::Cleanup(csv) => {
                // Its copies go once it is gone (the copied-CSV controller deletes them).
                super::copied_csv::request(&csv, &c);
                lock(&c.shared.api_claims).release(&csv.namespace().unwrap_or_default(), &csv.name_any());
                cleanup(csv, c).await
            }
        }
    })
    .await
    .or_else(finalizer_gone)
}

/// A CSV deleted while the finalizer was being added or removed is not an error: its cleanup ran
/// (or nothing needed it), and nothing is left to patch. Every other finalizer failure is.
fn finalizer_gone(err: kube::runtime::finalizer::Error<Error>) -> Result<Action> {
    use kube::runtime::finalizer::Error as FinalizerError;
    match err {
        FinalizerError::AddFinalizer(kube::Error::Api(status))
        | FinalizerError::RemoveFinalizer(kube::Error::Api(status))
            if status.code == 404 =>
        {
            Ok(Action::await_change())
        }
        other => Err(Error::Finalizer(Box::new(other))),
    }
}

async fn cleanup(csv: Arc<ClusterServiceVersion>, ctx: Arc<Context>) -> Result<Action> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    // Webhook configurations and conversion webhooks (upstream keeps a replaced CSV's
    // conversion: its successor already points the CRD at its own Service).
    let siblings = in_namespace(&ctx.shared.stores.csvs, &ns);
    let replaced = siblings
        .iter()
        .any(|c| c.spec.replaces.as_deref() == Some(name.as_str()) && c.name_any() != name);
    webhooks::cleanup(&csv, &ctx, replaced).await?;
    let selector = format!("{}={name},{}={ns}", labels::OWNER, labels::OWNER_NAMESPACE);
    let lp = ListParams::default().labels(&selector);
    let crbs: Api<ClusterRoleBinding> = Api::all(ctx.client());
    let crs: Api<ClusterRole> = Api::all(ctx.client());
    crbs.delete_collection(&DeleteParams::default(), &lp)
        .await
        .map_err(|source| Error::Cleanup {
            what: format!("ClusterRoleBindings of {ns}/{name}"),
            source,
        })?;
    crs.delete_collection(&DeleteParams::default(), &lp)
        .await
        .map_err(|source| Error::Cleanup {
            what: format!("ClusterRoles of {ns}/{name}"),
            source,
        })?;
    // Roles granted in other target namespaces (owner references cannot cross namespaces).
    let roles: Api<Role> = Api::all(ctx.client());
    let bindings: Api<RoleBinding> = Api::all(ctx.client());
    let cleanup_err = |what: String| move |source| Error::Cleanup { what, source };
    for role in roles
        .list_metadata(&lp)
        .await
        .map_err(cleanup_err(format!("Roles of {ns}/{name}")))?
    {
        let api: Api<Role> = Api::namespaced(ctx.client(), &role.namespace().unwrap_or_default());
        apply::delete_if_present(&api, &role.name_any())
            .await
            .map(drop)
            .map_err(cleanup_err(format!("Role {}", role.name_any())))?;
    }
    for binding in bindings
        .list_metadata(&lp)
        .await
        .map_err(cleanup_err(format!("RoleBindings of {ns}/{name}")))?
    {
        let api: Api<RoleBinding> = Api::namespaced(ctx.client(), &binding.namespace().unwrap_or_default());
        apply::delete_if_present(&api, &binding.name_any())
            .await
            .map(drop)
            .map_err(cleanup_err(format!("RoleBinding {}", binding.name_any())))?;
    }
    ctx.shared.metrics.forget_csv(&ns, &name);
    ctx.shared
        .forget_status_write(&object_key(ctx.name, csv.as_ref()));
    Ok(Action::await_change())
}

pub use crate::plan::csv::package_of;

fn other(csv: &ClusterServiceVersion) -> OtherCsv {
    OtherCsv {
        name: csv.name_any(),
        phase: csv
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default(),
    }
}

/// The objects of `store` in namespace `ns`.
fn in_namespace<K>(store: &kube::runtime::reflector::Store<K>, ns: &str) -> Vec<Arc<K>>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store
        .state()
        .into_iter()
        .filter(|o| o.namespace().as_deref() == Some(ns))
        .collect()
}

/// The API server's `gitVersion` (`v1.37.2`), read once per process (`GET /version`); `None`
/// while it cannot be read (the requirement is then left out, and read again next time).
async fn server_version(ctx: &Context) -> Option<String> {
    let client = ctx.client();
    ctx.shared
        .server_version
        .get_or_try_init(|| async { client.apiserver_version().await.map(|info| info.git_version) })
        .await
        .inspect_err(|err| tracing::debug!(error = %err, "could not read the server version"))
        .ok()
        .cloned()
}

/// The CSV's `spec.nativeAPIs` that the API server serves: one discovery read per group version
/// (upstream `isGVKRegistered`). A group version the server answers with an error status (404
/// for one it does not serve, 503 for an unavailable aggregated API) serves none of them, as
/// upstream reads it; a transport error fails the observation, to be retried.
async fn served_native_apis(
    csv: &ClusterServiceVersion,
    client: &kube::Client,
) -> Result<std::collections::BTreeSet<crate::api::v1alpha1::GroupVersionKind>> {
    let mut served = std::collections::BTreeSet::new();
    let mut group_versions: Vec<(&str, &str)> = csv
        .spec
        .native_apis
        .iter()
        .map(|a| (a.group.as_str(), a.version.as_str()))
        .collect();
    group_versions.sort_unstable();
    group_versions.dedup();
    for (group, version) in group_versions {
        let listed = if group.is_empty() {
            client.list_core_api_resources(version).await
        } else {
            client
                .list_api_group_resources(&format!("{group}/{version}"))
                .await
        };
        let kinds: Vec<String> = match listed {
            Ok(list) => list.resources.into_iter().map(|r| r.kind).collect(),
            Err(kube::Error::Api(_)) => Vec::new(),
            Err(e) => return Err(Error::observe(format!("API discovery of {group}/{version}"))(e)),
        };
        served.extend(
            csv.spec
                .native_apis
                .iter()
                .filter(|a| a.group == group && a.version == version && kinds.contains(&a.kind))
                .cloned(),
        );
    }
    Ok(served)
}

/// The claims ledger, without the claims of CSVs the store no longer holds.
fn current_claims(ctx: &Context) -> std::sync::MutexGuard<'_, plan_csv::group_conflict::Claims> {
    let mut claims = lock(&ctx.shared.api_claims);
    let csvs = &ctx.shared.stores.csvs;
    claims.retain(|ns, name| csvs.get(&ObjectRef::new(name).within(ns)).is_some());
    claims
}

/// Every OperatorGroup of the cluster with its targets and `olm.providedAPIs`, from the store.
fn providing_groups(ctx: &Context) -> Vec<plan_csv::group_conflict::ProvidingGroup> {
    ctx.shared
        .stores
        .operator_groups
        .state()
        .iter()
        .map(|g| plan_csv::group_conflict::ProvidingGroup {
            namespace: g.namespace().unwrap_or_default(),
            name: g.name_any(),
            namespaces: g.status.as_ref().and_then(|s| s.namespaces.clone()),
            provided_apis: g
                .annotations()
                .get(crate::plan::user_roles::PROVIDED_APIS)
                .map(|v| crate::plan::user_roles::parse_provided_apis(v))
                .unwrap_or_default(),
            static_apis: g.spec.static_provided_apis == Some(true),
        })
        .collect()
}

/// Fills the state machine's [`Observed`] from the reflector stores and a few reads.
async fn observe(csv: &ClusterServiceVersion, ctx: &Context) -> Result<Observed> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let client = ctx.client();
    let stores = &ctx.shared.stores;
    let mut observed = Observed {
        operator_groups: in_namespace(&stores.operator_groups, &ns)
            .iter()
            .map(|g| ObservedOperatorGroup {
                name: g.name_any(),
                namespaces: g.status.as_ref().and_then(|s| s.namespaces.clone()),
                fail_forward: g.spec.fail_forward(),
            })
            .collect(),
        // Every group of the cluster, for the inter-group API conflict (upstream lists all),
        // with the claims taken but not yet in their group's annotation.
        providing_groups: current_claims(ctx).overlay(&providing_groups(ctx)),
        ..Observed::default()
    };
    // The CSV's own minKubeVersion requirement (issue 15): read once per process.
    if csv
        .spec
        .min_kube_version
        .as_deref()
        .is_some_and(|v| !v.trim().is_empty())
    {
        observed.server_version = server_version(ctx).await;
    }
    observed.served_native_apis = served_native_apis(csv, &client).await?;
    let siblings: Vec<ClusterServiceVersion> = in_namespace(&stores.csvs, &ns)
        .iter()
        .map(|c| c.as_ref().clone())
        .collect();
    observed.replacement = replacement_of(&name, &siblings).map(other);
    observed.replacee = replacee_of(csv, &siblings).map(other);
    observed.replacee_not_upgradeable = observed
        .replacee
        .as_ref()
        .and_then(|prev| super::operator_condition::upgrade_blocker(ctx, &ns, &prev.name));
    observed.crd_owner_conflicts = crd_owner_conflicts(csv, &siblings);
    let subscriptions = in_namespace(&stores.subscriptions, &ns);
    observed.overrides = plan_csv::owning_subscription(&name, subscriptions.iter().map(AsRef::as_ref))
        .and_then(plan_csv::SubscriptionOverrides::of);
    observed.own_plan = plan_csv::own_plan_state(
        &name,
        in_namespace(&stores.install_plans, &ns).iter().map(AsRef::as_ref),
    );

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    if let Some(defs) = &csv.spec.custom_resource_definitions {
        for desc in defs.owned.iter().chain(defs.required.iter()) {
            let state = match crds
                .get_opt(&desc.name)
                .await
                .map_err(Error::observe(format!("CRD {}", desc.name)))?
            {
                None => CrdState::Absent,
                Some(crd) => {
                    if csv
                        .spec
                        .webhook_definitions
                        .iter()
                        .any(|d| d.conversion_crds.contains(&desc.name))
                    {
                        observed
                            .webhooks
                            .conversions
                            .insert(desc.name.clone(), webhooks::observed_conversion(&crd));
                    }
                    CrdState::Present {
                        established: crd
                            .status
                            .as_ref()
                            .and_then(|s| s.conditions.as_ref())
                            .is_some_and(|cs| {
                                cs.iter().any(|c| c.type_ == "Established" && c.status == "True")
                            }),
                        served_versions: crd
                            .spec
                            .versions
                            .iter()
                            .filter(|v| v.served)
                            .map(|v| v.name.clone())
                            .collect(),
                        uid: crd.metadata.uid.clone(),
                    }
                }
            };
            observed.crds.insert(desc.name.clone(), state);
        }
    }
    for api in plan_csv::required_api_service_names(csv) {
        if let Some(found) = webhooks::required_api_service(ctx, &api).await? {
            observed.required_api_services.insert(api, found);
        }
    }
    webhooks::observe(csv, ctx, &mut observed).await?;
    // ServiceAccounts and Deployments come from the reflector stores (metadata-only for
    // ServiceAccounts); the CSV controller is triggered by both, so a stale read is corrected
    // by the event that follows.
    let strategy = &csv.spec.install.spec;
    for permission in strategy
        .permissions
        .iter()
        .chain(strategy.cluster_permissions.iter())
    {
        let sa = &permission.service_account_name;
        if observed.service_accounts.contains_key(sa) {
            continue;
        }
        let key = ObjectRef::<PartialObjectMeta<ServiceAccount>>::new(sa).within(&ns);
        let state = match stores.service_accounts.get(&key) {
            None => ServiceAccountState::Absent,
            Some(found) => ServiceAccountState::Present {
                owner_csvs: found
                    .owner_references()
                    .iter()
                    .filter(|r| r.kind == "ClusterServiceVersion")
                    .map(|r| r.name.clone())
                    .collect(),
                uid: found.metadata.uid.clone(),
            },
        };
        observed.service_accounts.insert(sa.clone(), state);
    }
    // The ServiceAccounts and RBAC its InstallPlan created, as the stores show them.
    let plans = in_namespace(&stores.install_plans, &ns);
    observed.components = plan_csv::desired_components(csv, plans.iter().map(AsRef::as_ref));
    for component in &mut observed.components {
        component.live = live_component(stores, &component.key);
    }
    // And the RBAC its install made in the group's other target namespaces.
    if let Some(targets) = observed
        .operator_groups
        .first()
        .and_then(|g| g.namespaces.as_deref())
    {
        observed.target_components = plan_csv::target_components(csv, targets);
        for component in &mut observed.target_components {
            component.live = live_component(stores, &component.key);
        }
    }
    let wanted: Vec<&str> = strategy.deployments.iter().map(|d| d.name.as_str()).collect();
    for d in stores.deployments.state() {
        if d.namespace().as_deref() != Some(ns.as_str()) {
            continue;
        }
        let dname = d.name_any();
        let owned = d.labels().get(labels::OWNER) == Some(&name);
        if owned || wanted.contains(&dname.as_str()) {
            observed
                .deployments
                .insert(dname, ObservedDeployment::from_deployment(&d));
        }
    }
    Ok(observed)
}

/// A component of the install as its store holds it (JSON), or `None` when there is none.
fn live_component(stores: &super::Stores, key: &plan_csv::ComponentKey) -> Option<Value> {
    let ns = key.namespace.as_deref().unwrap_or_default();
    let name = key.name.as_str();
    match key.kind.as_str() {
        "ServiceAccount" => stores
            .service_accounts
            .get(&ObjectRef::new(name).within(ns))
            .and_then(|o| serde_json::to_value(o.as_ref()).ok()),
        "Role" => stores
            .roles
            .get(&ObjectRef::new(name).within(ns))
            .and_then(|o| serde_json::to_value(o.as_ref()).ok()),
        "RoleBinding" => stores
            .role_bindings
            .get(&ObjectRef::new(name).within(ns))
            .and_then(|o| serde_json::to_value(o.as_ref()).ok()),
        "ClusterRole" => stores
            .cluster_roles
            .get(&ObjectRef::new(name))
            .and_then(|o| serde_json::to_value(o.as_ref()).ok()),
        "ClusterRoleBinding" => stores
            .cluster_role_bindings
            .get(&ObjectRef::new(name))
            .and_then(|o| serde_json::to_value(o.as_ref()).ok()),
        _ => None,
    }
}

/// Applies the manifests of the install's missing or changed components (client), under the
/// CSV controller's field manager: only the fields the manifest sets are written.
async fn restore_components(ctx: &Context, restore: &[plan_csv::ComponentIssue]) -> Result<()> {
    use k8s_openapi::api::rbac::v1 as rbac;
    for issue in restore {
        let key = &issue.key;
        let resource = match key.kind.as_str() {
            "ServiceAccount" => kube::api::ApiResource::erase::<ServiceAccount>(&()),
            "Role" => kube::api::ApiResource::erase::<rbac::Role>(&()),
            "RoleBinding" => kube::api::ApiResource::erase::<rbac::RoleBinding>(&()),
            "ClusterRole" => kube::api::ApiResource::erase::<rbac::ClusterRole>(&()),
            "ClusterRoleBinding" => kube::api::ApiResource::erase::<rbac::ClusterRoleBinding>(&()),
            _ => continue,
        };
        let api = apply::dynamic_api(ctx.client(), &resource, key.namespace.as_deref());
        apply::apply_dynamic(&api, &key.name, &issue.manifest, &ctx.manager)
            .await
            .map_err(Error::apply(key.to_string()))?;
        tracing::info!(component = %key, missing = issue.missing, plan = issue.plan, "restored");
    }
    Ok(())
}

/// The Events naming what a decision restored: one per component (`ComponentMissing` or
/// `ComponentChanged`) and one per missing install-strategy object applied again.
fn restore_events(csv: &ClusterServiceVersion, decision: &plan_csv::CsvDecision) -> Vec<EventNote> {
    let regarding = csv.object_ref(&());
    let components = decision.restore.iter().map(|issue| EventNote {
        regarding: regarding.clone(),
        warning: true,
        reason: issue.event_reason().to_owned(),
        action: "Restore",
        note: if issue.plan.is_empty() {
            format!("{issue}: applying it again from the CSV's install strategy")
        } else {
            format!("{issue}: applying it again from InstallPlan {}", issue.plan)
        },
    });
    let strategy = decision.missing.iter().map(|what| EventNote {
        regarding: regarding.clone(),
        warning: true,
        reason: "ComponentMissing".to_owned(),
        action: "Restore",
        note: format!("missing {what}: applying it again from the CSV's install strategy"),
    });
    components.chain(strategy).collect()
}

/// Applies the RBAC granting the operator its `permissions` in the OperatorGroup's other
/// target namespaces (Roles there, or ClusterRoles for all namespaces).
async fn apply_target_rbac(csv: &ClusterServiceVersion, ctx: &Context, targets: &[String]) -> Result<()> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let rbac = steps::target_namespace_rbac(&name, &ns, &package_of(csv), &csv.spec.install.spec, targets);
    let client = ctx.client();
    for role in &rbac.roles {
        let api: Api<Role> =
            Api::namespaced(client.clone(), role.metadata.namespace.as_deref().unwrap_or(&ns));
        apply::apply(&api, &role.name_any(), role, &ctx.manager)
            .await
            .map_err(Error::apply(format!(
                "Role {}/{}",
                role.namespace().unwrap_or_default(),
                role.name_any()
            )))?;
    }
    for binding in &rbac.role_bindings {
        let api: Api<RoleBinding> = Api::namespaced(
            client.clone(),
            binding.metadata.namespace.as_deref().unwrap_or(&ns),
        );
        apply::apply(&api, &binding.name_any(), binding, &ctx.manager)
            .await
            .map_err(Error::apply(format!(
                "RoleBinding {}/{}",
                binding.namespace().unwrap_or_default(),
                binding.name_any()
            )))?;
    }
    let crs: Api<ClusterRole> = Api::all(client.clone());
    for role in &rbac.cluster_roles {
        apply::apply(&crs, &role.name_any(), role, &ctx.manager)
            .await
            .map_err(Error::apply(format!("ClusterRole {}", role.name_any())))?;
    }
    let crbs: Api<ClusterRoleBinding> = Api::all(client);
    for binding in &rbac.cluster_role_bindings {
        apply::apply(&crbs, &binding.name_any(), binding, &ctx.manager)
            .await
            .map_err(Error::apply(format!("ClusterRoleBinding {}", binding.name_any())))?;
    }
    Ok(())
}

/// How soon a reconcile that found the CSV store behind this controller's last status write
/// looks again (the write's own watch event normally comes first).
const STALE_STORE_REQUEUE: Duration = Duration::from_secs(1);

/// How many phase transitions one reconcile may chain (Pending → InstallReady → Installing
/// → Succeeded is the longest useful run; the bound only guards against a cycle).
const MAX_CHAINED_TRANSITIONS: usize = 6;

/// Observe (client) → chain transitions (decide with no client, act with the client) → hold
/// the write back or write the status (client) → report (Events, metrics) → delete the CSV
/// when the decision says so (client).
async fn sync(csv: Arc<ClusterServiceVersion>, ctx: Arc<Context>) -> Result<Action> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let capi: Api<ClusterServiceVersion> = Api::namespaced(ctx.client(), &ns);
    // (no client) A store that has not seen our last status write shows the status from before
    // it: deciding on it would act again on what that write settled (a certificate rotation
    // issued twice, a component restored twice). Its watch event reconciles again; the requeue
    // only bounds a missed one. Now that the install's objects trigger reconciles at once (their
    // writes come just before the status write), this is the common case, not a rare one.
    let key = object_key(ctx.name, csv.as_ref());
    if ctx
        .shared
        .behind_last_status_write(&key, csv.resource_version().as_deref())
    {
        tracing::debug!("csv reconcile waits: the store has not seen this controller's last status write");
        return Ok(Action::requeue(STALE_STORE_REQUEUE));
    }
    // (client: one read per CRD; the rest from the stores)
    let mut observed = observe(&csv, &ctx).await?;
    let now = Time(Timestamp::now());
    // (no client) Fresh certificates for the webhook Deployments whose certificates are due.
    webhooks::issue_due(&csv, &mut observed, &now)?;
    let old = csv.status.clone().unwrap_or_default();
    // (client: annotations, RBAC and Deployments of every decision taken)
    let Chained {
        decision,
        status,
        transitions,
        own_versions,
        restored,
    } = chain_transitions(&csv, &ctx, &capi, observed, &now).await?;
    // (no client: publishing is queued) What was put back is said whatever the status write.
    ctx.publish(restored);

    // (no client) The same refusal again: keep the status as it is, no write, no Event.
    let (status, transitions) = if plan_csv::repeats_failure(&old, &decision) {
        (old.clone(), Vec::new())
    } else {
        (status, transitions)
    };
    // (no client: the stores and the last write's time are read, nothing is written)
    if let Some(requeue) = plan_csv::write_waits(
        &old,
        &status,
        &decision,
        || own_plan_still_applying(&ctx, &csv, &status),
        ctx.shared.since_last_status_write(&key),
    ) {
        tracing::debug!(?requeue, "csv reconciled: status write waits");
        return Ok(Action::requeue(requeue));
    }
    // (client)
    let wrote = write_status(&ctx, &csv, &own_versions, &old, &status).await?;
    // A write skipped as a repeat of the last one had its Events published with it.
    let transitions = if wrote { transitions } else { Vec::new() };
    let r = csv.object_ref(&());
    ctx.publish(
        transitions
            .into_iter()
            .map(|(phase, reason, message)| EventNote {
                regarding: r.clone(),
                warning: phase == CsvPhase::Failed,
                reason: reason.as_str().to_owned(),
                action: "Sync",
                note: message,
            })
            .collect(),
    );
    ctx.shared.metrics.record_csv(
        &ns,
        &name,
        csv.spec.version.as_deref().unwrap_or(""),
        decision.phase.as_str(),
        decision.reason.as_str(),
    );

    if decision.delete_self {
        // (client)
        apply::delete_if_present(&capi, &name)
            .await
            .map(drop)
            .map_err(|source| Error::Delete {
                what: format!("CSV {ns}/{name}"),
                source,
            })?;
        ctx.shared.forget_status_write(&key);
        return Ok(Action::await_change());
    }
    // Steady states are re-checked now and then; others sooner, in case an event was missed.
    let fallback = if decision.phase == CsvPhase::Succeeded {
        Duration::from_secs(300)
    } else {
        Duration::from_secs(30)
    };
    let requeue = decision.requeue_after.unwrap_or(fallback);
    // Every reconcile's outcome, written or not: a CSV that stays in a phase longer than its
    // requeue says shows here whether it was reconciled at all.
    tracing::debug!(
        phase = decision.phase.as_str(),
        reason = decision.reason.as_str(),
        wrote,
        ?requeue,
        "csv reconciled"
    );
    Ok(Action::requeue(requeue))
}

/// What [`chain_transitions`] leaves for the status write and the report.
struct Chained {
    /// The last decision taken (its actions are done).
    decision: plan_csv::CsvDecision,
    /// The status after every decision taken, in order.
    status: ClusterServiceVersionStatus,
    /// (phase, reason, message) of each decision that moved the phase or the reason.
    transitions: Vec<(CsvPhase, CsvReason, String)>,
    /// The resource versions this reconcile's own writes gave the CSV before its status
    /// write (so a store that has not caught up is not mistaken for someone else's change).
    own_versions: Vec<String>,
    /// The Events naming what the decisions restored ([`restore_events`]).
    restored: Vec<EventNote>,
}

/// Decides and acts on the CSV's state machine as far as it goes without an outside event,
/// so that a CSV whose requirements are met goes Pending → InstallReady → Installing
/// (Deployments applied) in one reconcile and one status write, instead of one round trip
/// through the API server and the watch per phase.
///
/// Invariant: each decision ([`plan_csv::decide`], no client) is taken on the CSV as the
/// previous decision's actions left it (its status so far, the annotations as written, the
/// Deployments as applied), and its actions (client: member annotations, target RBAC,
/// Deployments, stale Deployments) are all done before the next decision is taken. The
/// chain stops when the phase does not move, the decision deletes or fails the CSV, the
/// next decision would be the same, or after [`MAX_CHAINED_TRANSITIONS`]; the returned
/// decision is then the last one acted on, and nothing is written to the status here.
async fn chain_transitions(
    csv: &ClusterServiceVersion,
    ctx: &Context,
    capi: &Api<ClusterServiceVersion>,
    mut observed: Observed,
    now: &Time,
) -> Result<Chained> {
    let ns = csv.namespace().unwrap_or_default();
    let mut current = csv.clone();
    let mut status = csv.status.clone().unwrap_or_default();
    let mut transitions = Vec::new();
    let mut own_versions = Vec::new();
    let mut restored = Vec::new();
    // (no client)
    let mut decision = plan_csv::decide(&current, &observed, now);
    for round in 1..=MAX_CHAINED_TRANSITIONS {
        // (no client) Nothing of a decision is done before the claim it rests on is taken.
        decision = settle_claim(ctx, &current, &mut observed, decision, now);
        // (client)
        if let Err(error) = act(
            ctx,
            capi,
            &ns,
            &mut current,
            &decision,
            &mut observed,
            &mut own_versions,
        )
        .await
        {
            // (no client) A refused object is the CSV's status, not just a log line.
            let Some(failure) = apply_failure(&error) else {
                return Err(error);
            };
            let group = observed.operator_groups.first().map(|g| g.name.as_str());
            decision = plan_csv::apply_failed(&failure, group);
        } else {
            restored.extend(restore_events(csv, &decision));
        }
        let phase_before = status.phase.clone();
        let reason_before = status.reason.clone();
        decision.apply_to(&mut status, now);
        if phase_before.as_ref() != Some(&decision.phase) || reason_before.as_ref() != Some(&decision.reason)
        {
            transitions.push((
                decision.phase.clone(),
                decision.reason.clone(),
                decision.message.clone(),
            ));
        }
        let moved = phase_before.as_ref() != Some(&decision.phase);
        if !moved
            || decision.delete_self
            || decision.phase == CsvPhase::Failed
            || round == MAX_CHAINED_TRANSITIONS
        {
            break;
        }
        current.status = Some(status.clone());
        // (no client)
        let next = plan_csv::decide(&current, &observed, now);
        if next.phase == decision.phase && next.reason == decision.reason && next.message == decision.message
        {
            // Settled: keep this decision's requeue and actions (already done).
            break;
        }
        decision = next;
    }
    Ok(Chained {
        decision,
        status,
        transitions,
        own_versions,
        restored,
    })
}

/// Takes the API claim `decision` rests on ([`plan_csv::group_conflict::Claims::take`]) before
/// anything of it is done (no client). When a rival group's claim came first, the CSV decides
/// again on the claims as they now stand, which fails it `InterOperatorGroupOwnerConflict`
/// before it has a Deployment. A decision failing the CSV for the inter-group rule gives its
/// claim up, so a rival may install.
fn settle_claim(
    ctx: &Context,
    csv: &ClusterServiceVersion,
    observed: &mut Observed,
    decision: plan_csv::CsvDecision,
    now: &Time,
) -> plan_csv::CsvDecision {
    let (ns, name) = (csv.namespace().unwrap_or_default(), csv.name_any());
    let groups = providing_groups(ctx);
    let mut claims = current_claims(ctx);
    let Some(claim) = decision.claim.clone() else {
        if decision.gives_up_claim() {
            claims.release(&ns, &name);
        }
        return decision;
    };
    let Err(rival) = claims.take(claim, &groups) else {
        return decision;
    };
    tracing::info!(%rival, "another OperatorGroup claimed the CSV's APIs first");
    observed.providing_groups = claims.overlay(&groups);
    let again = plan_csv::decide(csv, observed, now);
    let refused = if again.claim.is_some() {
        // The rule and the ledger disagree on the CSV's own group (not in the store): the
        // ledger's refusal stands.
        plan_csv::CsvDecision {
            annotations: again.annotations,
            ..plan_csv::claim_refused(csv, observed)
        }
    } else {
        again
    };
    claims.release(&ns, &name);
    refused
}

/// Does what `decision` asks (client): the member annotations, the target namespaces' RBAC,
/// the Deployments, the stale Deployments' deletion; stops at the first failure.
async fn act(
    ctx: &Context,
    capi: &Api<ClusterServiceVersion>,
    ns: &str,
    current: &mut ClusterServiceVersion,
    decision: &plan_csv::CsvDecision,
    observed: &mut Observed,
    own_versions: &mut Vec<String>,
) -> Result<()> {
    if let Some(annotations) = &decision.annotations {
        *current = stamp_annotations(capi, current, annotations, ctx).await?;
        own_versions.extend(current.resource_version());
    }
    restore_components(ctx, &decision.restore).await?;
    if !decision.desired_deployments.is_empty() {
        let targets = observed
            .operator_groups
            .first()
            .and_then(|g| g.namespaces.clone())
            .unwrap_or_default();
        apply_target_rbac(current, ctx, &targets).await?;
        if let Some(objects) = &decision.webhooks {
            webhooks::apply_cert_objects(ctx, ns, objects, observed).await?;
        }
        apply_deployments(ctx, ns, &decision.desired_deployments, observed).await?;
        if let Some(objects) = &decision.webhooks {
            webhooks::apply_webhooks(ctx, objects, observed).await?;
        }
    }
    delete_stale_deployments(ctx, ns, &decision.stale_deployments).await
}

/// An apply or delete the API server refused, as the CSV's status reports it (`None` for
/// other errors, which stay reconcile errors with backoff).
fn apply_failure(error: &Error) -> Option<plan_csv::ApplyFailure> {
    let (Error::Apply { what, source } | Error::Delete { what, source }) = error else {
        return None;
    };
    let (code, missing_namespace) = match source {
        kube::Error::Api(status) => (
            status.code,
            status
                .details
                .as_ref()
                .filter(|d| status.code == 404 && d.kind == "namespaces" && !d.name.is_empty())
                .map(|d| d.name.clone()),
        ),
        // Not an answer of the API server (unreachable): a reconcile error, retried with backoff.
        _ => return None,
    };
    Some(plan_csv::ApplyFailure {
        object: what.clone(),
        code,
        detail: crate::k8s::message::describe(source),
        missing_namespace,
    })
}

/// [`plan_csv::waits_only_on_own_plan`] over the InstallPlans of the CSV's namespace in the store.
fn own_plan_still_applying(
    ctx: &Context,
    csv: &ClusterServiceVersion,
    status: &ClusterServiceVersionStatus,
) -> bool {
    let ns = csv.namespace();
    let plans = ctx.shared.stores.install_plans.state();
    plan_csv::waits_only_on_own_plan(
        &csv.name_any(),
        &status.requirement_status,
        plans
            .iter()
            .filter(|p| p.namespace() == ns)
            .filter_map(|p| p.status.as_ref()),
    )
}

/// Writes the OperatorGroup member annotations (server-side apply of just those keys) and
/// returns the CSV as the API server now has it.
async fn stamp_annotations(
    capi: &Api<ClusterServiceVersion>,
    csv: &ClusterServiceVersion,
    annotations: &BTreeMap<String, String>,
    ctx: &Context,
) -> Result<ClusterServiceVersion> {
    let ns = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let member: BTreeMap<&str, &String> = [
        labels::OPERATOR_GROUP,
        labels::OPERATOR_NAMESPACE,
        labels::TARGET_NAMESPACES,
    ]
    .into_iter()
    .filter_map(|k| annotations.get(k).map(|v| (k, v)))
    .collect();
    let stamp = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name, "namespace": ns, "annotations": member},
    });
    let mut applied = apply::apply(capi, &name, &stamp, &ctx.manager)
        .await
        .map_err(Error::apply(format!("annotations of CSV {ns}/{name}")))?;
    // Keep deciding on the status this reconcile started from (the apply returns the
    // server's, which may be newer than the store's but is not ours to reason about here).
    applied.status = csv.status.clone();
    Ok(applied)
}

async fn apply_deployments(
    ctx: &Context,
    ns: &str,
    desired: &[Deployment],
    observed: &mut Observed,
) -> Result<()> {
    // A group naming a ServiceAccount: the operator's Deployments are written as that account,
    // as upstream's strategy installer uses the scoped client.
    let groups = ctx.shared.stores.operator_groups.state();
    let account = crate::plan::install_plan::group_check(
        groups
            .iter()
            .filter(|g| g.namespace().as_deref() == Some(ns))
            .map(AsRef::as_ref),
    );
    let client = match account
        .ok()
        .flatten()
        .as_ref()
        .and_then(|r| r.name.as_deref().zip(r.namespace.as_deref()))
    {
        Some((name, account_ns)) => ctx.shared.scoped.as_service_account(account_ns, name)?,
        None => ctx.client(),
    };
    let dapi: Api<Deployment> = Api::namespaced(client, ns);
    for d in desired {
        let dname = d.name_any();
        let key = ObjectRef::<Deployment>::new(&dname).within(ns);
        let seen = ctx.shared.stores.deployments.get(&key);
        if seen
            .as_ref()
            .is_some_and(|seen| plan_csv::deployment_up_to_date(d, seen))
        {
            continue;
        }
        // A new strategy type replaces the old one (and the server-defaulted rollingUpdate
        // no apply owns) before the apply, as upstream's full update does.
        if let Some(patch) = seen
            .as_ref()
            .and_then(|seen| plan_csv::strategy_switch_patch(d, seen))
        {
            apply::merge_patch(&dapi, &dname, &patch, &ctx.manager)
                .await
                .map_err(Error::apply(format!(
                    "update strategy of Deployment {ns}/{dname}"
                )))?;
        }
        let applied = apply::apply(&dapi, &dname, d, &ctx.manager)
            .await
            .map_err(Error::apply(format!("Deployment {ns}/{dname}")))?;
        observed
            .deployments
            .insert(dname, ObservedDeployment::from_deployment(&applied));
    }
    Ok(())
}

async fn delete_stale_deployments(ctx: &Context, ns: &str, stale: &[String]) -> Result<()> {
    let dapi: Api<Deployment> = Api::namespaced(ctx.client(), ns);
    for name in stale {
        apply::delete_if_present(&dapi, name)
            .await
            .map(drop)
            .map_err(|source| Error::Delete {
                what: format!("Deployment {ns}/{name}"),
                source,
            })?;
    }
    Ok(())
}

/// Writes the CSV's status unless it equals what the object shows (timestamps aside) or the
/// store lags behind this controller's last write; returns whether it wrote.
async fn write_status(
    ctx: &Context,
    csv: &ClusterServiceVersion,
    own_versions: &[String],
    old: &ClusterServiceVersionStatus,
    status: &ClusterServiceVersionStatus,
) -> Result<bool> {
    let changed = !apply::same_ignoring_time(&apply::to_value(old), &apply::to_value(status));
    ctx.write_status_after(csv, own_versions, changed, status).await
}

/// What the CSV controller hears of besides its own CSVs: the objects an install owns (from
/// reflectors whose stores the reconciles read) and what other controllers pass on.
pub(super) struct Feeds {
    /// Deployments an install owns, deletions included.
    pub deployments: futures::stream::BoxStream<'static, WatchResult<Deployment>>,
    /// ServiceAccounts (metadata), deletions included.
    pub service_accounts: futures::stream::BoxStream<'static, WatchResult<PartialObjectMeta<ServiceAccount>>>,
    /// Roles an install owns, deletions included.
    pub roles: futures::stream::BoxStream<'static, WatchResult<Role>>,
    /// RoleBindings an install owns, deletions included.
    pub role_bindings: futures::stream::BoxStream<'static, WatchResult<RoleBinding>>,
    /// ClusterRoleBindings an install owns, deletions included.
    pub cluster_role_bindings: futures::stream::BoxStream<'static, WatchResult<ClusterRoleBinding>>,
    /// Subscriptions whose config a CSV reads changed (from the Subscription reflector's stream).
    pub subscription_changes: futures::channel::mpsc::UnboundedReceiver<Subscription>,
    /// OperatorConditions changed (from their reflector's stream).
    pub condition_changes: futures::channel::mpsc::UnboundedReceiver<crate::api::v2::OperatorCondition>,
    /// The OLMConfig's copied-CSV switch flipped.
    pub copy_switch: futures::channel::mpsc::UnboundedReceiver<()>,
    /// CSVs whose copies the OLMConfig reconcile found out of line (upstream requeues them).
    pub requeues:
        futures::channel::mpsc::UnboundedReceiver<kube::runtime::reflector::ObjectRef<ClusterServiceVersion>>,
}

/// One event of a watch.
type WatchResult<K> = std::result::Result<K, kube::runtime::watcher::Error>;

/// The CSV controller: its Deployments and ServiceAccounts, the rest of what an install owns
/// (webhook Services and cert Secrets by owner reference; RBAC here and in the target
/// namespaces, ClusterRoles and webhook configurations by `olm.owner*` labels), OperatorGroups,
/// CRDs, the CSVs that replace them, their Subscription's config, their OperatorCondition (the
/// generator) and the one of the CSV they replace (the gate), and the OLMConfig's switch.
pub(super) fn controller<S>(
    w: &Wiring<'_>,
    csvs: S,
    store: kube::runtime::reflector::Store<ClusterServiceVersion>,
    feeds: Feeds,
) -> impl std::future::Future<Output = ()> + Send + use<S>
where
    S: futures::Stream<Item = std::result::Result<ClusterServiceVersion, kube::runtime::watcher::Error>>
        + Send
        + 'static,
{
    use futures::StreamExt as _;
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use kube::runtime::watcher;

    use super::mappers;
    let stores = &w.shared.stores;
    let (by_group, related, by_crd) = (stores.csvs.clone(), stores.csvs.clone(), stores.csvs.clone());
    let controller = kube::runtime::Controller::for_stream(csvs, store)
        .with_config(wiring::settings())
        .owns_stream(feeds.deployments)
        .owns_stream(feeds.service_accounts)
        .owns_stream(w.metadata::<k8s_openapi::api::core::v1::Service>(Wiring::managed()))
        .owns_stream(w.metadata::<k8s_openapi::api::core::v1::Secret>(Wiring::managed()))
        .watches_stream(feeds.roles, |o| mappers::csv_of_owner_labels(&o))
        .watches_stream(feeds.role_bindings, |o| mappers::csv_of_owner_labels(&o))
        .watches_stream(feeds.cluster_role_bindings, |o| mappers::csv_of_owner_labels(&o))
        .watches_stream(w.metadata::<ClusterRole>(Wiring::csv_owned()), |o| {
            mappers::csv_of_owner_labels(&o)
        })
        .watches_stream(
            w.metadata::<ValidatingWebhookConfiguration>(Wiring::csv_owned()),
            |o| mappers::csv_of_owner_labels(&o),
        )
        .watches_stream(
            w.metadata::<MutatingWebhookConfiguration>(Wiring::csv_owned()),
            |o| mappers::csv_of_owner_labels(&o),
        )
        .watches_stream(w.metadata::<OperatorGroup>(Wiring::watch()), move |og| {
            mappers::csvs_for_operator_group(&by_group.state(), &og)
        })
        .watches_stream(
            w.objects::<ClusterServiceVersion>(Wiring::watch()),
            // A copy is the copied-CSV controller's business (it watches copies itself).
            move |csv| match super::copied_csv::original_of(&csv) {
                Some(_) => Vec::new(),
                None => mappers::csvs_related_to(&related.state(), &csv),
            },
        )
        .watches_stream(
            w.metadata::<CustomResourceDefinition>(Wiring::watch()),
            move |crd| mappers::csvs_for_crd(&by_crd.state(), &crd.name_any()),
        )
        .watches_stream(feeds.subscription_changes.map(Ok::<_, watcher::Error>), |sub| {
            mappers::csvs_for_subscription(&sub)
        })
        .watches_stream(feeds.condition_changes.map(Ok::<_, watcher::Error>), {
            let csvs = stores.csvs.clone();
            move |oc| super::operator_condition::csvs_for(&csvs.state(), &oc)
        })
        .reconcile_on(futures::stream::select(
            feeds.copy_switch.flat_map({
                let (csvs, groups) = (stores.csvs.clone(), stores.operator_groups.clone());
                move |()| {
                    futures::stream::iter(super::olm_config::csvs_of_all_namespaces_groups(
                        &csvs.state(),
                        &groups.state(),
                    ))
                }
            }),
            feeds.requeues,
        ));
    wiring::run(controller, reconcile, w.context("csv"), "csv")
}
