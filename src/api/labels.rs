//! Label and annotation keys OLM reads and writes, spelled exactly as upstream, plus the one
//! computed key (the Operator-API component label). Objects created by olm-rs carry the same
//! keys, so tooling that selects upstream OLM's objects (`-l olm.managed=true`,
//! `-l operators.coreos.com/redis-operator.operators`) finds ours too.

/// Annotation on member CSVs (and their pod templates): the OperatorGroup's name.
pub const OPERATOR_GROUP: &str = "olm.operatorGroup";
/// Annotation on member CSVs: the OperatorGroup's namespace.
pub const OPERATOR_NAMESPACE: &str = "olm.operatorNamespace";
/// Annotation on member CSVs: the sorted, comma-joined target namespaces ("" = all).
pub const TARGET_NAMESPACES: &str = "olm.targetNamespaces";
/// Annotation on OperatorGroups: the APIs their members provide (`Kind.version.group,...`).
pub const PROVIDED_APIS: &str = "olm.providedAPIs";
/// Prefix of the label put on an OperatorGroup's target namespaces (`olm.operatorgroup.uid/<uid>`).
pub const OPERATOR_GROUP_UID_PREFIX: &str = "olm.operatorgroup.uid/";
/// Annotation on OperatorGroups: leave the global catalog namespace out of resolution.
pub const EXCLUDE_GLOBAL_NAMESPACE_RESOLUTION: &str =
    "olm.operatorframework.io/exclude-global-namespace-resolution";
/// OperatorGroup annotation: bundle unpack timeout (a duration).
pub const BUNDLE_UNPACK_TIMEOUT: &str = "operatorframework.io/bundle-unpack-timeout";
/// OperatorGroup annotation: minimum retry interval of failed unpack jobs (a duration).
pub const BUNDLE_UNPACK_MIN_RETRY_INTERVAL: &str = "operatorframework.io/bundle-unpack-min-retry-interval";

/// Label: name of the owning CSV (used where owner references cannot be: cluster-scoped or
/// cross-namespace objects).
pub const OWNER: &str = "olm.owner";
/// Label: kind of the owner (`ClusterServiceVersion`).
pub const OWNER_KIND: &str = "olm.owner.kind";
/// Label: namespace of the owner.
pub const OWNER_NAMESPACE: &str = "olm.owner.namespace";
/// Label on everything OLM creates (value `"true"`).
pub const MANAGED: &str = "olm.managed";
/// Label on copied CSVs: the namespace of the original.
pub const COPIED_FROM: &str = "olm.copiedFrom";
/// Label on operator Deployments: hash of the computed spec (drift detection).
pub const DEPLOYMENT_SPEC_HASH: &str = "olm.deployment-spec-hash";
/// Label on generated Roles/Bindings: hash of their rules or roleRef and subjects.
pub const PERMISSIONS_HASH: &str = "olm.permissions.hash";
/// Label on registry pods: the CatalogSource name.
pub const CATALOG_SOURCE: &str = "olm.catalogSource";
/// Label on registry poll pods: the CatalogSource name.
pub const CATALOG_SOURCE_UPDATE: &str = "catalogsource.operators.coreos.com/update";
/// Label on registry pods: hash of the pod spec.
pub const POD_SPEC_HASH: &str = "olm.pod-spec-hash";
/// Label on registry services: hash of the service spec.
pub const SERVICE_SPEC_HASH: &str = "olm.service-spec-hash";
/// Prefix of the API index labels on CSVs (`olm.api.<hash>` = `provided` | `required`).
pub const API_LABEL_PREFIX: &str = "olm.api.";

/// Annotation on CSVs OLM creates: the bundle's properties as `{"properties":[...]}` JSON.
pub const PROPERTIES: &str = "operatorframework.io/properties";
/// Annotation on Subscriptions created for dependencies: the InstallPlan that created them.
pub const GENERATED_BY: &str = "olm.generated-by";
/// Annotation on CSVs: the skipRange (bundle-based catalogs).
pub const SKIP_RANGE: &str = "olm.skipRange";
/// Annotation on serving-cert secrets and pod templates: hash of the CA.
pub const CA_HASH: &str = "olmcahash";
/// Annotation on webhook configurations: the CSV's webhook generateName.
pub const WEBHOOK_DESCRIPTION_GENERATE_NAME: &str = "olm.webhook-description-generate-name";
/// Label on bundle unpack Jobs and Pods.
pub const BUNDLE_UNPACK_REF: &str = "operatorframework.io/bundle-unpack-ref";

/// Finalizer on CSVs: deletes the cluster-scoped objects labelled with the CSV as owner.
pub const CSV_CLEANUP_FINALIZER: &str = "operators.coreos.com/csv-cleanup";

/// Prefix of the Operator-API component label (`operators.coreos.com/<package>.<namespace>`).
pub const COMPONENT_LABEL_PREFIX: &str = "operators.coreos.com/";

/// The Operator component labels (`operators.coreos.com/<operator>`, put on a CSV by the
/// InstallPlan) among `labels`: they go on the objects the CSV owns so the Operator lists them.
pub fn component_labels(
    labels: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, String> {
    labels
        .iter()
        .filter(|(k, _)| k.starts_with(COMPONENT_LABEL_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Longest name part of a label key.
const LABEL_NAME_MAX: usize = 63;

/// The Operator-API component label key for a package installed in a namespace:
/// `operators.coreos.com/<package>.<namespace>`, its name part cut to 63 characters and
/// stripped of trailing `.`, `-` and `_` (label names must end alphanumeric).
///
/// Returns `None` without a package (a CSV applied directly, with no Subscription, has no
/// Operator to be a component of, as upstream: `operators.coreos.com/.<namespace>` is not a valid
/// label key, and the API server refuses an object carrying it).
pub fn component_label_key(package: &str, namespace: &str) -> Option<String> {
    if package.is_empty() {
        return None;
    }
    let name = format!("{package}.{namespace}");
    let mut cut: String = name.chars().take(LABEL_NAME_MAX).collect();
    while cut.ends_with(['.', '-', '_']) {
        cut.pop();
    }
    if cut.is_empty() {
        None
    } else {
        Some(format!("{COMPONENT_LABEL_PREFIX}{cut}"))
    }
}

/// The label put on an OperatorGroup's target namespaces: `olm.operatorgroup.uid/<uid>`.
pub fn operator_group_uid_label(uid: &str) -> String {
    format!("{OPERATOR_GROUP_UID_PREFIX}{uid}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_component_label_joins_package_and_namespace() {
        assert_eq!(
            component_label_key("redis-operator", "operators").as_deref(),
            Some("operators.coreos.com/redis-operator.operators")
        );
    }

    #[test]
    fn a_long_component_label_is_cut_to_63_characters_without_a_trailing_separator() {
        let package = "a".repeat(61);
        // "aaa…a" (61) + "." + "ns" = 64 characters: cut to 63 leaves "…a.n".
        let key = component_label_key(&package, "ns").unwrap();
        let name = key.strip_prefix(COMPONENT_LABEL_PREFIX).unwrap();
        assert_eq!(name.len(), 63);
        assert!(name.ends_with(".n"));

        let package = "b".repeat(63);
        // the cut lands right before the "." separator.
        let key = component_label_key(&package, "operators").unwrap();
        assert_eq!(key, format!("{COMPONENT_LABEL_PREFIX}{package}"));

        let package = format!("{}-", "c".repeat(62));
        let key = component_label_key(&package, "x").unwrap();
        assert_eq!(key, format!("{COMPONENT_LABEL_PREFIX}{}", "c".repeat(62)));
    }

    #[test]
    fn an_empty_component_label_is_refused() {
        assert_eq!(component_label_key("", ""), None);
        // A CSV with no package: no label, never `operators.coreos.com/.ns`.
        assert_eq!(component_label_key("", "ns"), None);
    }
}
