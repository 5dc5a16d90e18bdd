//! OperatorGroup controller: `status.namespaces` from the group's targets and the
//! `MultipleOperatorGroup` condition when its namespace holds more than one group, and
//! `status.serviceAccountRef` (or the `OperatorGroupServiceAccount` condition while the account
//! is missing) for a group naming the ServiceAccount its installs run as (rule 5 of
//! [`crate::plan::operator_group`]; a ServiceAccount event in its namespace requeues it).
//!
//! Targets and the condition are [`crate::plan::operator_group`]'s (upstream
//! `getOperatorGroupTargets`); namespaces are listed only for a selector. Invalid targets
//! leave `status.namespaces` unset (member CSVs wait) and raise a Warning event.
//!
//! It also gives the namespace's people the use of its operators' APIs, as upstream's
//! `syncOperatorGroups`/`ensureClusterRolesForCSV` do ([`crate::plan::user_roles`]): the
//! `olm.providedAPIs` annotation from the member CSVs, the group's aggregated
//! `olm.og.<group>.{admin,edit,view}-<hash>` ClusterRoles, and, once a member CSV has
//! Succeeded, the per-API `<crd>-<version>-{admin,edit,view,crdview}` ClusterRoles owned by
//! the CRD (or APIService), all by server-side apply. A CSV change requeues its group.
//!
//! A deleted group's aggregated roles are deleted, as upstream's `operatorGroupDeleted`
//! ([`sweep_orphaned_roles`]). kube-runtime never reconciles an object that is gone, so the
//! sweep runs in one [`sweep_task`] (not in the group reconcile, which member CSV changes
//! trigger often): shortly after any OperatorGroup event (a deletion included) or a group role
//! event naming a missing group, and every five minutes; always after the caches' first list,
//! so a cold store never reads as "no group".

use std::{sync::Arc, time::Duration};

use k8s_openapi::{
    api::{
        core::v1::{Namespace, ServiceAccount},
        rbac::v1::ClusterRole,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{ApiResource, DynamicObject, ListParams, PartialObjectMeta},
    core::GroupVersionKind,
    runtime::{controller::Action, reflector::ObjectRef},
};

use super::wiring::{self, Wiring};
use super::{Context, Error, Result, instrumented};
use crate::{
    api::{
        reasons::operator_group as reason,
        v1::{OperatorGroup, OperatorGroupStatus},
        v1alpha1::{ClusterServiceVersion, CsvPhase},
    },
    k8s::apply,
    plan::{
        copied_csv::is_copy,
        operator_group::{
            NamedAccount, NamespaceInfo, multiple_groups_condition, named_service_account,
            service_account_status, target_namespaces,
        },
        user_roles,
    },
};

/// Reconciles one OperatorGroup.
pub async fn reconcile(og: Arc<OperatorGroup>, ctx: Arc<Context>) -> Result<Action> {
    let store = ctx.shared.stores.operator_groups.clone();
    instrumented(og, Arc::clone(&ctx), Some(&store), |og| reconcile_inner(og, ctx)).await
}

async fn reconcile_inner(og: Arc<OperatorGroup>, ctx: Arc<Context>) -> Result<Action> {
    let ns = og
        .namespace()
        .ok_or_else(|| Error::InvalidObject("OperatorGroup without namespace".into()))?;
    let now = Time(Timestamp::now());
    // The namespace list is only needed for a selector.
    let needs_namespaces = og.spec.target_namespaces.as_ref().is_none_or(Vec::is_empty)
        && og.spec.selector.as_ref().is_some_and(|s| {
            s.match_labels.as_ref().is_some_and(|m| !m.is_empty())
                || s.match_expressions.as_ref().is_some_and(|m| !m.is_empty())
        });
    let cluster_namespaces = if needs_namespaces {
        list_namespaces(&ctx)
            .await?
            .iter()
            .map(|n| NamespaceInfo {
                name: n.name_any(),
                labels: n.labels().clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    let (namespaces, target_error) = match target_namespaces(&og, &cluster_namespaces) {
        Ok(list) => (Some(list), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let siblings: Vec<String> = ctx
        .shared
        .stores
        .operator_groups
        .state()
        .iter()
        .filter(|o| o.namespace().as_deref() == Some(ns.as_str()))
        .map(|o| o.name_any())
        .collect();
    let old = og.status.clone();
    let mut conditions: Vec<Condition> = old
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.type_ != reason::MULTIPLE_OPERATOR_GROUP && c.type_ != reason::SERVICE_ACCOUNT)
        .collect();
    let multiple = multiple_groups_condition(&ns, &siblings, og.meta().generation, &now);
    if let Some(mut cond) = multiple.clone() {
        if let Some(prev) = old
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == cond.type_))
        {
            cond.last_transition_time = prev.last_transition_time.clone();
        }
        conditions.push(cond);
    }
    // (no client) The ServiceAccount the group names, from the (metadata) store.
    let live_account = named_service_account(&og).and_then(|name| {
        let key = ObjectRef::<PartialObjectMeta<ServiceAccount>>::new(name).within(&ns);
        ctx.shared.stores.service_accounts.get(&key)
    });
    let account = match (named_service_account(&og), &live_account) {
        (None, _) => NamedAccount::None,
        (Some(_), None) => NamedAccount::Missing,
        (Some(_), Some(sa)) => NamedAccount::Found {
            uid: sa.metadata.uid.as_deref(),
        },
    };
    let (service_account_ref, account_condition) = service_account_status(&og, account, &now);
    if let Some(mut cond) = account_condition.clone() {
        if let Some(prev) = old.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == cond.type_ && c.status == cond.status)
        }) {
            cond.last_transition_time = prev.last_transition_time.clone();
        }
        conditions.push(cond);
    }
    let status = OperatorGroupStatus {
        namespaces,
        service_account_ref,
        last_updated: now,
        conditions,
    };
    let changed = old
        .as_ref()
        .is_none_or(|o| !apply::same_ignoring_time(&apply::to_value(o), &apply::to_value(&status)));
    if ctx.write_status(og.as_ref(), changed, &status).await? {
        if let Some(message) = &target_error {
            ctx.warning(&og.object_ref(&()), "InvalidTargets", "Sync", message.clone());
        }
        if let Some(cond) = &multiple {
            ctx.warning(&og.object_ref(&()), &cond.reason, "Sync", cond.message.clone());
        }
        if let Some(cond) = &account_condition {
            let fix = "; create it, or name an existing one in spec.serviceAccountName: the namespace's InstallPlans wait for it";
            ctx.warning(
                &og.object_ref(&()),
                &cond.reason,
                "Sync",
                format!("{}{fix}", cond.message),
            );
        }
    }
    ensure_user_roles(&og, &ns, &ctx).await?;
    // Selector targets change when namespaces are labelled: look again now and then.
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// The cluster's namespaces, metadata only (a selector's matches; an AllNamespaces group's
/// copied CSVs).
pub(super) async fn list_namespaces(ctx: &Context) -> Result<Vec<PartialObjectMeta<Namespace>>> {
    let api: Api<Namespace> = Api::all(ctx.client());
    Ok(api
        .list_metadata(&ListParams::default())
        .await
        .map_err(Error::observe("namespaces"))?
        .items)
}

/// The `olm.providedAPIs` annotation and the ClusterRoles for the people using the group's
/// operators (module doc).
async fn ensure_user_roles(og: &OperatorGroup, ns: &str, ctx: &Context) -> Result<()> {
    let members: Vec<Arc<ClusterServiceVersion>> = ctx
        .shared
        .stores
        .csvs
        .state()
        .into_iter()
        .filter(|c| c.namespace().as_deref() == Some(ns) && !is_copy(c))
        .collect();
    let provided = user_roles::namespace_provided_apis(members.iter().map(AsRef::as_ref));
    let name = og.name_any();
    if let Some(value) = user_roles::desired_provided_apis(og, &provided) {
        let api: Api<OperatorGroup> = Api::namespaced(ctx.client(), ns);
        let body = serde_json::json!({
            "apiVersion": OperatorGroup::api_version(&()),
            "kind": OperatorGroup::kind(&()),
            "metadata": {"name": name, "namespace": ns,
                "annotations": {user_roles::PROVIDED_APIS: value}},
        });
        apply::apply(&api, &name, &body, &ctx.manager)
            .await
            .map_err(Error::apply(format!(
                "OperatorGroup {ns}/{name} annotation {}",
                user_roles::PROVIDED_APIS
            )))?;
    }
    // Upstream aggregates the union of the annotation and the members' APIs.
    let mut group_apis = provided;
    if og.spec.static_provided_apis == Some(true)
        && let Some(current) = og.annotations().get(user_roles::PROVIDED_APIS)
    {
        group_apis.extend(user_roles::parse_provided_apis(current));
    }
    let roles: Api<ClusterRole> = Api::all(ctx.client());
    for role in user_roles::operator_group_cluster_roles(og, &group_apis) {
        apply_role(&roles, role, ctx).await?;
    }
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client());
    let apiservice = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
    ));
    let apiservices: Api<DynamicObject> = Api::all_with(ctx.client(), &apiservice);
    for csv in members.iter().filter(|c| {
        c.status.as_ref().and_then(|s| s.phase.as_ref()) == Some(&CsvPhase::Succeeded)
            && c.metadata.deletion_timestamp.is_none()
    }) {
        let Ok(apis) = user_roles::provided_apis(csv) else {
            continue;
        };
        for api in apis {
            let owner_name = api.owner_name();
            let meta = if api.crd.is_some() {
                crds.get_metadata_opt(&owner_name)
                    .await
                    .map(|m| m.map(|m| m.metadata))
            } else {
                apiservices
                    .get_metadata_opt(&owner_name)
                    .await
                    .map(|m| m.map(|m| m.metadata))
            }
            .map_err(Error::observe(format!(
                "the API {owner_name} provided by {}",
                csv.name_any()
            )))?;
            // Not served yet: the CSV's own requirements wait for it; its change requeues us.
            let Some(uid) = meta.and_then(|m| m.uid) else {
                continue;
            };
            let owner = user_roles::ApiOwner {
                name: owner_name,
                uid,
            };
            for role in user_roles::provided_api_cluster_roles(&api, &owner) {
                apply_role(&roles, role, ctx).await?;
            }
        }
    }
    Ok(())
}

async fn apply_role(api: &Api<ClusterRole>, role: ClusterRole, ctx: &Context) -> Result<()> {
    let name = role.name_any();
    let stored = ctx
        .shared
        .stores
        .cluster_roles
        .get(&kube::runtime::reflector::ObjectRef::new(&name));
    if stored.is_some_and(|current| user_roles::role_is_current(&role, &current)) {
        return Ok(());
    }
    // k8s-openapi writes apiVersion and kind and leaves unset fields out.
    apply::apply(api, &name, &role, &ctx.manager)
        .await
        .map_err(Error::apply(format!("ClusterRole {name}")))?;
    Ok(())
}

/// Deletes the group roles whose OperatorGroup is gone ([`user_roles::orphaned_group_roles`]);
/// the caller has waited for the caches' first list.
pub async fn sweep_orphaned_roles(ctx: &Context) -> Result<()> {
    let groups: std::collections::BTreeSet<(String, String)> = ctx
        .shared
        .stores
        .operator_groups
        .state()
        .iter()
        .map(|g| (g.namespace().unwrap_or_default(), g.name_any()))
        .collect();
    let roles = ctx.shared.stores.cluster_roles.state();
    let orphans = user_roles::orphaned_group_roles(roles.iter().map(AsRef::as_ref), &groups);
    let api: Api<ClusterRole> = Api::all(ctx.client());
    for name in orphans {
        let deleted = apply::delete_if_present(&api, &name)
            .await
            .map_err(|source| Error::Delete {
                what: format!("ClusterRole {name}"),
                source,
            })?;
        if deleted {
            tracing::info!(role = %name, "deleted the ClusterRole of a deleted OperatorGroup");
        }
    }
    Ok(())
}

/// How often the sweep runs without a signal.
const SWEEP_PERIOD: Duration = Duration::from_secs(300);
/// How long a signal waits before the sweep, so the OperatorGroup store has seen the deletion
/// the signal came from (the trigger and the store watch are separate streams).
const SWEEP_DELAY: Duration = Duration::from_secs(2);

/// Runs [`sweep_orphaned_roles`] after each signal (coalesced) and every [`SWEEP_PERIOD`],
/// once the caches are synced, until the signal sender is dropped.
pub async fn sweep_task(ctx: Arc<Context>, mut signals: futures::channel::mpsc::UnboundedReceiver<()>) {
    use futures::StreamExt;
    let mut synced = ctx.shared.synced.clone();
    let _ = synced.wait_for(|s| *s).await;
    loop {
        match tokio::time::timeout(SWEEP_PERIOD, signals.next()).await {
            Ok(None) => return,
            Ok(Some(())) => {
                tokio::time::sleep(SWEEP_DELAY).await;
                while signals.try_recv().is_ok() {}
            }
            Err(_) => {}
        }
        if let Err(err) = sweep_orphaned_roles(&ctx).await {
            tracing::warn!(error = %err, "could not delete the ClusterRoles of deleted OperatorGroups");
        }
    }
}

/// The OperatorGroup controller: a sibling group appearing or leaving changes
/// TooManyOperatorGroups; member CSVs change the group's provided APIs and user roles; the
/// ServiceAccount a group names (`status.serviceAccountRef`) and the group's own ClusterRoles
/// (put back when changed or deleted). Any group event, and a group role naming a missing group,
/// also wakes the sweep that deletes deleted groups' roles ([`sweep_task`], through `sweep`).
pub(super) fn controller<S, R>(
    w: &Wiring<'_>,
    groups: S,
    store: kube::runtime::reflector::Store<OperatorGroup>,
    cluster_roles: R,
    sweep: futures::channel::mpsc::UnboundedSender<()>,
) -> impl std::future::Future<Output = ()> + Send + use<S, R>
where
    S: futures::Stream<Item = std::result::Result<OperatorGroup, kube::runtime::watcher::Error>>
        + Send
        + 'static,
    R: futures::Stream<Item = std::result::Result<ClusterRole, kube::runtime::watcher::Error>>
        + Send
        + 'static,
{
    use super::mappers;
    let stores = &w.shared.stores;
    let (siblings, members, naming, owning) = (
        stores.operator_groups.clone(),
        stores.operator_groups.clone(),
        stores.operator_groups.clone(),
        stores.operator_groups.clone(),
    );
    let csvs = stores.csvs.clone();
    let sweep_on_role = sweep.clone();
    let controller = kube::runtime::Controller::for_stream(groups, store)
        .with_config(wiring::settings())
        .watches_stream(w.metadata::<OperatorGroup>(Wiring::watch()), move |og| {
            // The sweep task stopped: nothing left to tell.
            let _ = sweep.unbounded_send(());
            mappers::siblings_in_namespace(&siblings.state(), og.namespace().as_deref())
        })
        .watches_stream(w.metadata::<ClusterServiceVersion>(Wiring::watch()), move |csv| {
            mappers::siblings_in_namespace(&members.state(), csv.namespace().as_deref())
        })
        .watches_stream(w.metadata::<ServiceAccount>(Wiring::watch()), move |sa| {
            mappers::operator_groups_naming_account(&naming.state(), &sa)
        })
        .watches_stream(cluster_roles, move |role| {
            let group = mappers::operator_group_of(&role);
            if group.as_ref().is_some_and(|g| owning.get(g).is_none()) {
                let _ = sweep_on_role.unbounded_send(());
            }
            mappers::operator_groups_for_cluster_role(&role, &csvs.state(), &owning.state())
        });
    wiring::run(controller, reconcile, w.context("operatorgroup"), "operatorgroup")
}
