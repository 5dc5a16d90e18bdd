//! Pure mappers for `Controller::watches`: given a changed object of another kind and the
//! current store contents, which objects must be reconciled again. Pure so they are unit-tested.
//!
//! The changed object is often only its metadata (`PartialObjectMeta` from a metadata watch,
//! which keeps large ConfigMaps and CRDs out of memory), so mappers that need no more than a
//! name and namespace take any [`Resource`].

use std::{collections::HashMap, sync::Arc};

use kube::{Resource, ResourceExt, runtime::reflector::ObjectRef};

use crate::api::{
    v1::OperatorGroup,
    v1alpha1::{CatalogSource, ClusterServiceVersion, Subscription, SubscriptionConfig},
};

/// The objects of `named`'s namespace whose `field` names it (by name).
fn naming<K>(
    objects: &[Arc<K>],
    named: &impl Resource,
    field: impl Fn(&K) -> Option<&str>,
) -> Vec<ObjectRef<K>>
where
    K: Resource<DynamicType = ()>,
{
    let ns = named.namespace();
    let name = named.name_any();
    objects
        .iter()
        .filter(|o| o.namespace() == ns && field(o) == Some(name.as_str()))
        .map(|o| ObjectRef::from_obj(o.as_ref()))
        .collect()
}

/// CatalogSources in the ConfigMap's namespace that name it in `spec.configMap`.
pub fn catalog_sources_for_config_map(
    sources: &[Arc<CatalogSource>],
    cm: &impl Resource,
) -> Vec<ObjectRef<CatalogSource>> {
    naming(sources, cm, |cs| cs.spec.config_map.as_deref())
}

/// The OperatorGroup a ClusterRole belongs to (`olm.owner.kind=OperatorGroup` with its name and
/// namespace labels), if any.
pub fn operator_group_of(role: &k8s_openapi::api::rbac::v1::ClusterRole) -> Option<ObjectRef<OperatorGroup>> {
    crate::plan::user_roles::owning_group(role).map(|(ns, name)| ObjectRef::new(name).within(ns))
}

/// The OperatorGroups to sync after an event (a deletion included) of a managed ClusterRole: the
/// group its `olm.owner*` labels name, or, for a per-API role (owned by the CRD or APIService of
/// the API, [`crate::plan::user_roles::provided_api_cluster_roles`]), the groups of the
/// namespaces whose CSVs provide that API; none for any other role.
pub fn operator_groups_for_cluster_role(
    role: &k8s_openapi::api::rbac::v1::ClusterRole,
    csvs: &[Arc<ClusterServiceVersion>],
    groups: &[Arc<OperatorGroup>],
) -> Vec<ObjectRef<OperatorGroup>> {
    if let Some(group) = operator_group_of(role) {
        return vec![group];
    }
    let owners: Vec<&str> = role
        .owner_references()
        .iter()
        .filter(|o| matches!(o.kind.as_str(), "CustomResourceDefinition" | "APIService"))
        .map(|o| o.name.as_str())
        .collect();
    if owners.is_empty() {
        return Vec::new();
    }
    let namespaces: std::collections::BTreeSet<String> = csvs
        .iter()
        .filter(|c| {
            crate::plan::user_roles::provided_apis(c)
                .is_ok_and(|apis| apis.iter().any(|a| owners.contains(&a.owner_name().as_str())))
        })
        .filter_map(|c| c.namespace())
        .collect();
    groups
        .iter()
        .filter(|g| g.namespace().is_some_and(|ns| namespaces.contains(&ns)))
        .map(|g| ObjectRef::from_obj(g.as_ref()))
        .collect()
}

/// The CSVs to sync after an OperatorGroup event: those of its namespace and, anywhere, those
/// providing an API its `olm.providedAPIs` lists (upstream `findCSVsThatProvideAnyOf`), so an
/// `InterOperatorGroupOwnerConflict` appears and clears with the rival group.
pub fn csvs_for_operator_group(
    csvs: &[Arc<ClusterServiceVersion>],
    og: &impl Resource,
) -> Vec<ObjectRef<ClusterServiceVersion>> {
    let ns = og.meta().namespace.as_deref();
    let apis = og
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(crate::plan::user_roles::PROVIDED_APIS))
        .map(|v| crate::plan::user_roles::parse_provided_apis(v))
        .unwrap_or_default();
    csvs.iter()
        .filter(|c| {
            c.meta().namespace.as_deref() == ns
                || (!apis.is_empty()
                    && crate::plan::user_roles::provided_apis(c)
                        .is_ok_and(|p| p.iter().any(|a| apis.contains(&a.key))))
        })
        .map(|c| ObjectRef::from_obj(c.as_ref()))
        .collect()
}

/// Every object of the store in `namespace`.
pub fn siblings_in_namespace<K>(objects: &[Arc<K>], namespace: Option<&str>) -> Vec<ObjectRef<K>>
where
    K: Resource<DynamicType = ()>,
{
    objects
        .iter()
        .filter(|o| o.meta().namespace.as_deref() == namespace)
        .map(|o| ObjectRef::from_obj(o.as_ref()))
        .collect()
}

/// The InstallPlans of `namespace` still to be executed (steps written, phase not terminal):
/// an OperatorGroup appearing or changing there may let a plan held by
/// [`crate::plan::install_plan::group_check`] go on.
pub fn unfinished_plans_in(
    plans: &[Arc<crate::api::v1alpha1::InstallPlan>],
    namespace: Option<&str>,
) -> Vec<ObjectRef<crate::api::v1alpha1::InstallPlan>> {
    plans
        .iter()
        .filter(|p| p.meta().namespace.as_deref() == namespace)
        .filter(|p| {
            p.status
                .as_ref()
                .is_some_and(|s| !s.phase.is_terminal() && !s.plan.is_empty())
        })
        .map(|p| ObjectRef::from_obj(p.as_ref()))
        .collect()
}

/// The failed plans of `namespace` that ran as a ServiceAccount: a change to the namespace's
/// RBAC may let them run (see [`crate::plan::install_plan::retried_on_rbac_change`]).
pub fn failed_scoped_plans_in(
    plans: &[Arc<crate::api::v1alpha1::InstallPlan>],
    namespace: Option<&str>,
) -> Vec<ObjectRef<crate::api::v1alpha1::InstallPlan>> {
    plans
        .iter()
        .filter(|p| p.meta().namespace.as_deref() == namespace)
        .filter(|p| crate::plan::install_plan::failed_as_account(p))
        .map(|p| ObjectRef::from_obj(p.as_ref()))
        .collect()
}

/// The OperatorGroups of the ServiceAccount's namespace that name it in
/// `spec.serviceAccountName`.
pub fn operator_groups_naming_account(
    groups: &[Arc<OperatorGroup>],
    account: &impl Resource,
) -> Vec<ObjectRef<OperatorGroup>> {
    naming(groups, account, |g| g.spec.service_account_name.as_deref())
}

/// Subscriptions that use the CatalogSource: those naming it, and (when it lives in the
/// global namespace, or shares the Subscription's namespace) those whose own catalog is
/// missing or whose dependencies may come from any catalog: every Subscription of those
/// namespaces.
pub fn subscriptions_for_catalog(
    subs: &[Arc<Subscription>],
    cs: &impl Resource,
    global_namespace: &str,
) -> Vec<ObjectRef<Subscription>> {
    subscriptions_for_catalog_named(
        subs,
        &cs.namespace().unwrap_or_default(),
        &cs.name_any(),
        global_namespace,
    )
}

/// [`subscriptions_for_catalog`] by the CatalogSource's namespace and name (a catalog load
/// announced by the cache, [`super::cache::CatalogCache::loads`]).
pub fn subscriptions_for_catalog_named(
    subs: &[Arc<Subscription>],
    ns: &str,
    name: &str,
    global_namespace: &str,
) -> Vec<ObjectRef<Subscription>> {
    subs.iter()
        .filter(|s| {
            let names_it = s.spec.source == name && s.spec.source_namespace == ns;
            let same_ns = s.namespace().as_deref() == Some(ns);
            names_it || same_ns || ns == global_namespace
        })
        .map(|s| ObjectRef::from_obj(s.as_ref()))
        .collect()
}

/// The Subscriptions a finished bundle-image pull may concern (the pull's key is the catalog's
/// namespace and the image, [`super::image_puller::BundlePull`]): those resolving from a catalog
/// in `catalog_namespace` that are not at the latest known bundle. A Subscription woken for
/// nothing finds its status unchanged and writes nothing.
pub fn subscriptions_waiting_on_bundles(
    subs: &[Arc<Subscription>],
    catalog_namespace: &str,
) -> Vec<ObjectRef<Subscription>> {
    subs.iter()
        .filter(|s| s.spec.source_namespace == catalog_namespace)
        .filter(|s| {
            s.status.as_ref().and_then(|st| st.state.as_ref())
                != Some(&crate::api::v1alpha1::SubscriptionState::AtLatestKnown)
        })
        .map(|s| ObjectRef::from_obj(s.as_ref()))
        .collect()
}

/// CSVs affected by a change of `csv`: itself, the CSV it replaces (which must move to
/// Replacing/Deleting) and the CSVs that replace it (which wait for it).
pub fn csvs_related_to(
    csvs: &[Arc<ClusterServiceVersion>],
    csv: &ClusterServiceVersion,
) -> Vec<ObjectRef<ClusterServiceVersion>> {
    let ns = csv.namespace();
    let name = csv.name_any();
    let replaces = csv.spec.replaces.as_deref();
    csvs.iter()
        .filter(|c| c.namespace() == ns)
        .filter(|c| {
            let other = c.name_any();
            Some(other.as_str()) == replaces || c.spec.replaces.as_deref() == Some(name.as_str())
        })
        .map(|c| ObjectRef::from_obj(c.as_ref()))
        .collect()
}

/// The CSV an object's `olm.owner`, `olm.owner.namespace` and `olm.owner.kind` labels name
/// (the install's RBAC, which owner references cannot tie to it across namespaces or scopes).
pub fn csv_of_owner_labels(object: &impl Resource) -> Option<ObjectRef<ClusterServiceVersion>> {
    let labels = object.meta().labels.as_ref()?;
    if labels.get(crate::api::labels::OWNER_KIND).map(String::as_str) != Some(crate::plan::steps::CSV_KIND) {
        return None;
    }
    let name = labels.get(crate::api::labels::OWNER)?;
    let namespace = labels.get(crate::api::labels::OWNER_NAMESPACE)?;
    Some(ObjectRef::new(name).within(namespace))
}

/// CSVs that own or require the CRD named `crd` (`<plural>.<group>`).
pub fn csvs_for_crd(csvs: &[Arc<ClusterServiceVersion>], crd: &str) -> Vec<ObjectRef<ClusterServiceVersion>> {
    csvs.iter()
        .filter(|c| {
            c.spec.custom_resource_definitions.as_ref().is_some_and(|d| {
                d.owned
                    .iter()
                    .chain(d.required.iter())
                    .any(|desc| desc.name == crd)
            })
        })
        .map(|c| ObjectRef::from_obj(c.as_ref()))
        .collect()
}

/// The CSVs whose Deployments a Subscription's `spec.config` goes into: those its
/// `status.installedCSV` and `status.currentCSV` name, in its namespace.
pub fn csvs_for_subscription(sub: &Subscription) -> Vec<ObjectRef<ClusterServiceVersion>> {
    let ns = sub.namespace().unwrap_or_default();
    let status = sub.status.as_ref();
    let mut names: Vec<&str> = [
        status.and_then(|s| s.installed_csv.as_deref()),
        status.and_then(|s| s.current_csv.as_deref()),
    ]
    .into_iter()
    .flatten()
    .filter(|n| !n.is_empty())
    .collect();
    names.dedup();
    names.into_iter().map(|n| ObjectRef::new(n).within(&ns)).collect()
}

/// What of a Subscription matters to its CSVs: its config and the CSVs it names.
type ConfigView = (Option<SubscriptionConfig>, Option<String>, Option<String>);

/// Lets through only the Subscription events that change what the CSV controller reads from
/// them (`spec.config`, `status.installedCSV`, `status.currentCSV`), so the many status writes
/// of a Subscription (conditions, catalog health) do not re-run its CSV's reconcile.
#[derive(Default)]
pub struct SubscriptionConfigChanges {
    seen: HashMap<(String, String), ConfigView>,
}

impl SubscriptionConfigChanges {
    /// Whether `sub` differs, in what its CSVs read, from the last time it was seen here
    /// (a Subscription seen for the first time counts as changed).
    pub fn changed(&mut self, sub: &Subscription) -> bool {
        let key = (sub.namespace().unwrap_or_default(), sub.name_any());
        let status = sub.status.as_ref();
        let view = (
            sub.spec.config.clone(),
            status.and_then(|s| s.installed_csv.clone()),
            status.and_then(|s| s.current_csv.clone()),
        );
        self.seen.insert(key, view.clone()).as_ref() != Some(&view)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sub(
        config: serde_json::Value,
        installed: Option<&str>,
        current: Option<&str>,
        reason: &str,
    ) -> Subscription {
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"source": "c", "sourceNamespace": "olm", "name": "p", "config": config},
            "status": {"lastUpdated": "2026-01-01T00:00:00Z", "installedCSV": installed,
                       "currentCSV": current, "reason": reason}
        }))
        .unwrap()
    }

    #[test]
    fn a_subscription_maps_to_the_csvs_it_names_in_its_namespace() {
        let names = |s: &Subscription| {
            csvs_for_subscription(s)
                .into_iter()
                .map(|r| (r.name, r.namespace))
                .collect::<Vec<_>>()
        };
        let ns = Some("ns".to_owned());
        assert_eq!(
            names(&sub(json!({}), Some("a.v1"), Some("a.v2"), "")),
            [("a.v1".to_owned(), ns.clone()), ("a.v2".to_owned(), ns.clone())]
        );
        assert_eq!(
            names(&sub(json!({}), Some("a.v1"), Some("a.v1"), "")),
            [("a.v1".to_owned(), ns)]
        );
        assert!(names(&sub(json!({}), None, None, "")).is_empty());
    }

    #[test]
    fn a_bundle_pull_wakes_the_subscriptions_of_its_catalog_namespace_not_at_the_latest() {
        let with = |name: &str, source_ns: &str, state: Option<&str>| -> Arc<Subscription> {
            let mut s = sub(json!({}), None, None, "");
            s.metadata.name = Some(name.to_owned());
            s.spec.source_namespace = source_ns.to_owned();
            s.status.as_mut().unwrap().state = state.map(|st| serde_json::from_value(json!(st)).unwrap());
            Arc::new(s)
        };
        let subs = [
            with("new", "olm", None),
            with("pending", "olm", Some("UpgradePending")),
            with("done", "olm", Some("AtLatestKnown")),
            with("elsewhere", "team", None),
        ];
        let woken: Vec<String> = subscriptions_waiting_on_bundles(&subs, "olm")
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(woken, ["new", "pending"]);
    }

    #[test]
    fn a_group_event_syncs_its_namespace_and_the_csvs_providing_its_apis_anywhere() {
        let csv = |ns: &str, name: &str, kind: &str| -> Arc<ClusterServiceVersion> {
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"customresourcedefinitions": {"owned": [
                        {"name": "widgets.w.io", "version": "v1", "kind": kind}]}}
                }))
                .expect("a CSV"),
            )
        };
        let csvs = [
            csv("a", "mine", "Other"),
            csv("b", "provider", "Widget"),
            csv("c", "unrelated", "Other"),
        ];
        let og: OperatorGroup = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "og", "namespace": "a",
                "annotations": {"olm.providedAPIs": "Widget.v1.w.io"}},
            "spec": {}
        }))
        .expect("an OperatorGroup");
        let names: Vec<String> = csvs_for_operator_group(&csvs, &og)
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["mine", "provider"]);
    }

    #[test]
    fn only_config_and_csv_changes_pass_the_filter() {
        let mut filter = SubscriptionConfigChanges::default();
        let env = json!({"env": [{"name": "A", "value": "1"}]});
        assert!(filter.changed(&sub(env.clone(), None, Some("a.v1"), "")));
        assert!(!filter.changed(&sub(env.clone(), None, Some("a.v1"), "other status")));
        assert!(filter.changed(&sub(env.clone(), Some("a.v1"), Some("a.v1"), "")));
        assert!(filter.changed(&sub(
            json!({"env": [{"name": "A", "value": "2"}]}),
            Some("a.v1"),
            Some("a.v1"),
            ""
        )));
        assert!(!filter.changed(&sub(
            json!({"env": [{"name": "A", "value": "2"}]}),
            Some("a.v1"),
            Some("a.v1"),
            ""
        )));
    }

    #[test]
    fn a_per_api_role_maps_to_the_groups_of_the_namespaces_providing_its_api() {
        let csv = |ns: &str, kind: &str| -> Arc<ClusterServiceVersion> {
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                    "metadata": {"name": "w.v1", "namespace": ns},
                    "spec": {"customresourcedefinitions": {"owned": [
                        {"name": format!("{}s.w.io", kind.to_lowercase()), "version": "v1", "kind": kind}]}}
                }))
                .expect("a CSV"),
            )
        };
        let og = |ns: &str| -> Arc<OperatorGroup> {
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                    "metadata": {"name": "og", "namespace": ns}, "spec": {}
                }))
                .expect("an OperatorGroup"),
            )
        };
        let csvs = [csv("a", "Widget"), csv("b", "Gadget"), csv("c", "Widget")];
        let groups = [og("a"), og("b"), og("c")];
        let role = |owner_kind: &str| -> k8s_openapi::api::rbac::v1::ClusterRole {
            serde_json::from_value(json!({"metadata": {"name": "widgets.w.io-v1-admin",
                "labels": {"olm.managed": "true"},
                "ownerReferences": [{"apiVersion": "x/v1", "kind": owner_kind,
                                     "name": "widgets.w.io", "uid": "u"}]}}))
            .unwrap()
        };
        let namespaces = |refs: Vec<ObjectRef<OperatorGroup>>| -> Vec<Option<String>> {
            refs.into_iter().map(|r| r.namespace).collect()
        };
        assert_eq!(
            namespaces(operator_groups_for_cluster_role(
                &role("CustomResourceDefinition"),
                &csvs,
                &groups
            )),
            [Some("a".to_owned()), Some("c".to_owned())]
        );
        assert!(operator_groups_for_cluster_role(&role("Deployment"), &csvs, &groups).is_empty());
        let group_role: k8s_openapi::api::rbac::v1::ClusterRole = serde_json::from_value(json!({
            "metadata": {"name": "r", "labels":
                {"olm.owner": "og", "olm.owner.namespace": "b", "olm.owner.kind": "OperatorGroup"}}
        }))
        .unwrap();
        assert_eq!(
            namespaces(operator_groups_for_cluster_role(&group_role, &csvs, &groups)),
            [Some("b".to_owned())]
        );
    }

    #[test]
    fn an_install_object_maps_to_the_csv_its_owner_labels_name() {
        let role = |labels: serde_json::Value| -> k8s_openapi::api::rbac::v1::Role {
            serde_json::from_value(json!({"metadata": {"name": "r", "namespace": "t", "labels": labels}}))
                .unwrap()
        };
        let csv_role = role(
            json!({"olm.owner": "a.v1", "olm.owner.namespace": "ns", "olm.owner.kind": "ClusterServiceVersion"}),
        );
        assert_eq!(
            csv_of_owner_labels(&csv_role),
            Some(ObjectRef::new("a.v1").within("ns"))
        );
        let group_role =
            role(json!({"olm.owner": "og", "olm.owner.namespace": "ns", "olm.owner.kind": "OperatorGroup"}));
        assert_eq!(csv_of_owner_labels(&group_role), None);
        assert_eq!(
            csv_of_owner_labels(&role(json!({"olm.owner.kind": "ClusterServiceVersion"}))),
            None
        );
    }

    #[test]
    fn a_group_role_maps_to_its_operator_group_and_other_roles_to_none() {
        let role = |labels: serde_json::Value| -> k8s_openapi::api::rbac::v1::ClusterRole {
            serde_json::from_value(json!({"metadata": {"name": "r", "labels": labels}})).unwrap()
        };
        let group =
            role(json!({"olm.owner": "og", "olm.owner.namespace": "ns", "olm.owner.kind": "OperatorGroup"}));
        assert_eq!(operator_group_of(&group), Some(ObjectRef::new("og").within("ns")));
        let csv_role = role(
            json!({"olm.owner": "a.v1", "olm.owner.namespace": "ns", "olm.owner.kind": "ClusterServiceVersion"}),
        );
        assert_eq!(operator_group_of(&csv_role), None);
        assert_eq!(
            operator_group_of(&role(json!({"olm.owner.kind": "OperatorGroup"}))),
            None
        );
    }
}
