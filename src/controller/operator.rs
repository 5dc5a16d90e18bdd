//! Operator controller: the cluster-scoped `operators.coreos.com/v1` Operator
//! `<package>.<namespace>` and its component status, as upstream's `OperatorReconciler`.
//!
//! Two parts, both writing under the field manager `olm-rs/operator`:
//! - [`triggers`] watches (metadata only) the Subscriptions, InstallPlans, CSVs and install
//!   Deployments; every `operators.coreos.com/<name>` label on them names an Operator
//!   ([`crate::plan::operator::operator_names`]). One that does not exist yet is created
//!   (an empty spec); one that does is reconciled.
//! - [`reconcile`] gathers the objects carrying the Operator's label, kind by kind
//!   ([`crate::plan::operator::COMPONENT_KINDS`]): Subscriptions, InstallPlans, CSVs,
//!   OperatorConditions, ServiceAccounts and install Deployments from the controllers'
//!   reflector stores (no request; a Deployment someone else labels is not an install
//!   Deployment and is not shown, where upstream would list it; no OperatorCondition while its
//!   CRD is not served, the store being empty), the other kinds listed (metadata only where no
//!   conditions are copied, from the API server's watch cache), and applies the status
//!   [`crate::plan::operator::desired_status`] computes when it changed. Changes to other component kinds (RBAC, CRDs) are picked up on the
//!   next trigger or the periodic resync.
//!
//! OLM never deletes an Operator (the plan module's doc says why).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::{Stream, StreamExt};
use kube::{
    Api, Client, ResourceExt,
    api::{DynamicObject, ListParams},
    core::{GroupVersionKind, ObjectMeta},
    runtime::{controller::Action, reflector::ObjectRef, reflector::Store, watcher},
};
use serde_json::Value;

use super::wiring::{self, Wiring};
use super::{
    Context, Error, Result, instrumented,
    stores::{Stores, metadata_trigger},
};
use crate::{
    api::{
        labels::{COMPONENT_LABEL_PREFIX, OWNER_KIND},
        v1::Operator,
        v1alpha1::{ClusterServiceVersion, InstallPlan, Subscription},
    },
    k8s::apply,
    plan::operator::{
        COMPONENT_KINDS, Component, ComponentKind, component_label_key, desired_status, operator_names,
    },
};

/// How often an Operator's components are listed again without a trigger (RBAC and CRD
/// changes are not watched).
pub const RESYNC: Duration = Duration::from_secs(600);

/// The field manager of the Operator objects and their status.
const CONTROLLER: &str = "operator";

/// Reconciles one Operator: its `status.components`.
pub async fn reconcile(op: Arc<Operator>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(op, Arc::clone(&ctx), None, |op| reconcile_inner(op, ctx)).await
}

async fn reconcile_inner(op: Arc<Operator>, ctx: Arc<Context>) -> Result<Action> {
    let name = op.name_any();
    let key = component_label_key(&name).ok_or_else(|| {
        Error::InvalidObject(format!(
            "Operator {name}: its name leaves no valid component label key; delete it"
        ))
    })?;
    let mut components = Vec::new();
    for kind in COMPONENT_KINDS {
        match stored_kind(&ctx.shared.stores, kind, &key) {
            Some(found) => components.extend(found),
            None => components.extend(list_kind(&ctx, kind, &key).await?),
        }
    }
    let status = desired_status(&key, &components);
    if op.status.as_ref() != Some(&status) {
        let api: Api<Operator> = Api::all(ctx.client());
        apply::apply_status(&api, &name, &status, &ctx.manager)
            .await
            .map_err(Error::status(format!("Operator {name}")))?;
    }
    Ok(Action::requeue(RESYNC))
}

/// The objects of one kind carrying the component label `key`, read from the controllers'
/// reflector stores when one holds every such object (Subscriptions, InstallPlans, CSVs,
/// OperatorConditions, ServiceAccounts; install Deployments, the ones OLM labels); `None` for a
/// kind to list.
fn stored_kind(stores: &Stores, kind: &ComponentKind, key: &str) -> Option<Vec<Component>> {
    let component = |meta: &ObjectMeta, status: Option<Value>| Component {
        api_version: kind.api_version(),
        kind: kind.kind.to_owned(),
        namespace: meta.namespace.clone(),
        name: meta.name.clone().unwrap_or_default(),
        labels: meta.labels.clone().unwrap_or_default(),
        status,
    };
    fn labelled<K: kube::Resource<DynamicType = ()> + Clone + 'static>(
        store: &Store<K>,
        key: &str,
    ) -> Vec<Arc<K>> {
        store
            .state()
            .into_iter()
            .filter(|o| o.labels().contains_key(key))
            .collect()
    }
    fn with_status<K: kube::Resource<DynamicType = ()> + Clone + serde::Serialize + 'static>(
        store: &Store<K>,
        key: &str,
        component: impl Fn(&ObjectMeta, Option<Value>) -> Component,
    ) -> Vec<Component> {
        labelled(store, key)
            .iter()
            .map(|o| {
                let status = serde_json::to_value(o.as_ref())
                    .ok()
                    .and_then(|mut v| v.get_mut("status").map(Value::take));
                component(o.meta(), status)
            })
            .collect()
    }
    let found = match (kind.group, kind.kind) {
        ("operators.coreos.com", "Subscription") => with_status(&stores.subscriptions, key, component),
        ("operators.coreos.com", "InstallPlan") => with_status(&stores.install_plans, key, component),
        ("operators.coreos.com", "ClusterServiceVersion") => with_status(&stores.csvs, key, component),
        ("operators.coreos.com", "OperatorCondition") => {
            with_status(&stores.operator_conditions, key, component)
        }
        ("apps", "Deployment") => with_status(&stores.deployments, key, component),
        ("", "ServiceAccount") => labelled(&stores.service_accounts, key)
            .iter()
            .map(|o| component(&o.metadata, None))
            .collect(),
        _ => return None,
    };
    Some(found)
}

/// The objects of one kind carrying the component label `key`, listed from the API server.
async fn list_kind(ctx: &Context, kind: &ComponentKind, key: &str) -> Result<Vec<Component>> {
    let gvk = GroupVersionKind::gvk(kind.group, kind.version, kind.kind);
    // Every listed kind is built in; one the cluster does not serve has nothing to list.
    let Ok((resource, _)) = ctx.shared.discover(&gvk).await else {
        return Ok(Vec::new());
    };
    let api: Api<DynamicObject> = Api::all_with(ctx.client(), &resource);
    let params = ListParams::default().labels(key).match_any();
    let what = || format!("{} labelled {key}", kind.kind);
    let api_version = kind.api_version();
    let component = |meta: ObjectMeta, status| Component {
        api_version: api_version.clone(),
        kind: kind.kind.to_owned(),
        namespace: meta.namespace,
        name: meta.name.unwrap_or_default(),
        labels: meta.labels.unwrap_or_default(),
        status,
    };
    let listed = if kind.has_conditions {
        api.list(&params).await.map(|list| {
            list.items
                .into_iter()
                .map(|mut o| {
                    let status = o.data.get_mut("status").map(Value::take);
                    component(o.metadata, status)
                })
                .collect()
        })
    } else {
        api.list_metadata(&params).await.map(|list| {
            list.items
                .into_iter()
                .map(|o| component(o.metadata, None))
                .collect()
        })
    };
    match listed {
        Ok(found) => Ok(found),
        // The kind went away between discovery and the list.
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
        Err(e) => Err(Error::observe(what())(e)),
    }
}

/// The Operators to reconcile when a labelled Subscription, InstallPlan, CSV or install
/// Deployment changes; an Operator named by a label that does not exist yet is created first
/// (its creation then triggers its reconcile through the Operator watch).
///
/// `operators_synced` is set once the Operator store holds its first list: until then every
/// Operator would look missing, so creation waits for it.
pub fn triggers(
    sync: &super::stores::SyncTracker,
    client: Client,
    operators: Store<Operator>,
    operators_synced: Arc<AtomicBool>,
    wc: impl Fn() -> watcher::Config,
) -> impl Stream<Item = ObjectRef<Operator>> + Send + 'static {
    let labels = |s: &ObjectMeta| s.labels.clone().unwrap_or_default();
    let subs = metadata_trigger::<Subscription>(sync, client.clone(), wc())
        .map(move |r| r.map(|o| labels(&o.metadata)));
    let ips = metadata_trigger::<InstallPlan>(sync, client.clone(), wc())
        .map(move |r| r.map(|o| labels(&o.metadata)));
    let csvs = metadata_trigger::<ClusterServiceVersion>(sync, client.clone(), wc())
        .map(move |r| r.map(|o| labels(&o.metadata)));
    let deployments = metadata_trigger::<k8s_openapi::api::apps::v1::Deployment>(
        sync,
        client.clone(),
        wc().labels(&format!("{OWNER_KIND}={}", crate::plan::steps::CSV_KIND)),
    )
    .map(move |r| r.map(|o| labels(&o.metadata)));
    let api: Api<Operator> = Api::all(client);
    let manager = apply::field_manager(CONTROLLER);
    futures::stream::select_all([subs.boxed(), ips.boxed(), csvs.boxed(), deployments.boxed()])
        .filter_map(|r| async move {
            r.ok()
                .filter(|labels| labels.keys().any(|k| k.starts_with(COMPONENT_LABEL_PREFIX)))
        })
        .then(move |labels| {
            let (api, manager, operators) = (api.clone(), manager.clone(), operators.clone());
            let synced = Arc::clone(&operators_synced);
            async move {
                while !synced.load(Ordering::Acquire) {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                let mut refs = Vec::new();
                for name in operator_names(&labels) {
                    let reference = ObjectRef::<Operator>::new(&name);
                    if operators.get(&reference).is_none() {
                        create(&api, &name, &manager).await;
                    }
                    refs.push(reference);
                }
                futures::stream::iter(refs)
            }
        })
        .flatten()
}

/// Creates the Operator `name` (empty spec; its status comes with its first reconcile).
async fn create(api: &Api<Operator>, name: &str, manager: &str) {
    let body = serde_json::json!({
        "apiVersion": crate::api::v1::API_VERSION,
        "kind": "Operator",
        "metadata": {"name": name},
        "spec": {},
    });
    match apply::apply(api, name, &body, manager).await {
        Ok(_) => tracing::info!(operator = name, "created Operator"),
        Err(e) => {
            tracing::warn!(operator = name, error = %e, "failed to create Operator; retried on the next change")
        }
    }
}

/// The Operator controller: not a readiness gate (an old install may lack the CRD). An install
/// changes its labelled objects many times within a second, and each reconcile lists every
/// component kind: one reconcile per burst (2 s) is enough for a status that only mirrors them.
pub(super) fn controller<S>(
    w: &Wiring<'_>,
    operators: S,
    store: Store<Operator>,
    synced: Arc<AtomicBool>,
) -> impl std::future::Future<Output = ()> + Send + use<S>
where
    S: futures::Stream<Item = std::result::Result<Operator, kube::runtime::watcher::Error>> + Send + 'static,
{
    let triggers = triggers(w.sync, w.client.clone(), store.clone(), synced, Wiring::watch);
    let controller = kube::runtime::Controller::for_stream(
        kube::runtime::WatchStreamExt::predicate_filter(
            operators,
            kube::runtime::predicates::generation,
            Default::default(),
        ),
        store,
    )
    .with_config(wiring::settings().debounce(std::time::Duration::from_secs(2)))
    .reconcile_on(triggers);
    wiring::run(controller, reconcile, w.context("operator"), "operator")
}
