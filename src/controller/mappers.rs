//! Pure mappers for `Controller::watches`: given a changed object of another kind and the
//! current store contents, which objects must be reconciled again. Pure so they are unit-tested.
//!
//! The changed object is often only its metadata (`PartialObjectMeta` from a metadata watch,
//! which keeps large ConfigMaps and CRDs out of memory), so mappers that need no more than a
//! name and namespace take any [`Resource`].

use std::sync::Arc;

use kube::{Resource, ResourceExt, runtime::reflector::ObjectRef};

use crate::api::v1alpha1::{CatalogSource, ClusterServiceVersion, Subscription};

/// CatalogSources in the ConfigMap's namespace that name it in `spec.configMap`.
pub fn catalog_sources_for_config_map(
    sources: &[Arc<CatalogSource>],
    cm: &impl Resource,
) -> Vec<ObjectRef<CatalogSource>> {
    let ns = cm.namespace();
    let name = cm.name_any();
    sources
        .iter()
        .filter(|cs| cs.namespace() == ns && cs.spec.config_map.as_deref() == Some(name.as_str()))
        .map(|cs| ObjectRef::from_obj(cs.as_ref()))
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

/// Subscriptions that use the CatalogSource: those naming it, and (when it lives in the
/// global namespace, or shares the Subscription's namespace) those whose own catalog is
/// missing or whose dependencies may come from any catalog: every Subscription of those
/// namespaces.
pub fn subscriptions_for_catalog(
    subs: &[Arc<Subscription>],
    cs: &impl Resource,
    global_namespace: &str,
) -> Vec<ObjectRef<Subscription>> {
    let ns = cs.namespace().unwrap_or_default();
    let name = cs.name_any();
    subs.iter()
        .filter(|s| {
            let names_it = s.spec.source == name && s.spec.source_namespace == ns;
            let same_ns = s.namespace().as_deref() == Some(ns.as_str());
            names_it || same_ns || ns == global_namespace
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
