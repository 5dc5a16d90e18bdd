use std::collections::BTreeMap;

use serde_json::json;

use super::*;

const NAME: &str = "redis-operator.seed-auto";
const KEY: &str = "operators.coreos.com/redis-operator.seed-auto";

fn component(kind: &str, namespace: Option<&str>, name: &str, status: Option<Value>) -> Component {
    let api_version = COMPONENT_KINDS
        .iter()
        .find(|k| k.kind == kind)
        .map(ComponentKind::api_version)
        .unwrap_or_default();
    Component {
        api_version,
        kind: kind.to_owned(),
        namespace: namespace.map(str::to_owned),
        name: name.to_owned(),
        labels: BTreeMap::from([(KEY.to_owned(), String::new())]),
        status,
    }
}

fn refs(status: &OperatorStatus) -> Vec<(String, Option<String>, String, String)> {
    status
        .components
        .as_ref()
        .unwrap()
        .refs
        .iter()
        .map(|r| {
            (
                r.kind.clone().unwrap(),
                r.namespace.clone(),
                r.name.clone().unwrap(),
                r.api_version.clone().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_selector_is_the_component_label_with_exists() {
    assert_eq!(component_label_key(NAME).as_deref(), Some(KEY));
    let status = desired_status(KEY, &[]);
    let value = serde_json::to_value(&status).unwrap();
    assert_eq!(
        value,
        json!({"components": {"labelSelector": {"matchExpressions": [
            {"key": KEY, "operator": "Exists"}
        ]}}})
    );
}

#[test]
fn refs_are_sorted_by_kind_api_version_namespace_and_name_as_upstream_sorts_them() {
    let ns = Some("seed-auto");
    let status = desired_status(
        KEY,
        &[
            component("ClusterServiceVersion", ns, "redis-operator.v1.0.0", None),
            component("Subscription", ns, "redis-operator", None),
            component(
                "CustomResourceDefinition",
                None,
                "redisclusters.cache.example.com",
                None,
            ),
            component("RoleBinding", ns, "redis-operator.v1.0.0-re-x", None),
            component("Role", ns, "redis-operator.v1.0.0-re-y", None),
            component("Role", ns, "redis-operator.v1.0.0-re-x", None),
            component("ServiceAccount", ns, "redis-operator", None),
            component("InstallPlan", ns, "install-bdcfp", None),
            component("Deployment", ns, "redis-operator", None),
        ],
    );
    let listed: Vec<(String, String)> = refs(&status).into_iter().map(|r| (r.0, r.2)).collect();
    // Upstream `AddComponents`: kind, then apiVersion, namespace and name, as strings.
    let want = [
        ("ClusterServiceVersion", "redis-operator.v1.0.0"),
        ("CustomResourceDefinition", "redisclusters.cache.example.com"),
        ("Deployment", "redis-operator"),
        ("InstallPlan", "install-bdcfp"),
        ("Role", "redis-operator.v1.0.0-re-x"),
        ("Role", "redis-operator.v1.0.0-re-y"),
        ("RoleBinding", "redis-operator.v1.0.0-re-x"),
        ("ServiceAccount", "redis-operator"),
        ("Subscription", "redis-operator"),
    ];
    assert_eq!(listed, want.map(|(k, n)| (k.to_owned(), n.to_owned())).to_vec());
    let crd = &refs(&status)[1];
    assert_eq!(crd.1, None, "cluster-scoped objects have no namespace");
    assert_eq!(crd.3, "apiextensions.k8s.io/v1");
    assert_eq!(refs(&status)[2].3, "apps/v1");
    assert_eq!(refs(&status)[7].3, "v1");
    assert_eq!(refs(&status)[0].3, "operators.coreos.com/v1alpha1");
}

#[test]
fn objects_without_the_label_are_left_out() {
    let mut stranger = component("Deployment", Some("other"), "other", None);
    stranger.labels = BTreeMap::from([("operators.coreos.com/other.other".to_owned(), String::new())]);
    let status = desired_status(KEY, &[stranger]);
    assert!(status.components.unwrap().refs.is_empty());
}

#[test]
fn conditions_are_cut_to_upstreams_fields_and_a_csv_shows_its_current_phase() {
    let sub_status = json!({"conditions": [{
        "type": "CatalogSourcesUnhealthy",
        "status": "False",
        "reason": "AllCatalogSourcesHealthy",
        "message": "all available catalogsources are healthy",
        "lastTransitionTime": "2026-11-23T22:52:23Z",
        "lastHeartbeatTime": "2026-11-23T22:52:23Z"
    }]});
    let csv_status = json!({
        "phase": "Succeeded",
        "reason": "InstallSucceeded",
        "message": "install strategy completed with no errors",
        "lastUpdateTime": "2026-11-23T22:53:50Z",
        "lastTransitionTime": "2026-11-23T22:53:48Z",
        "conditions": [
            {"phase": "Pending", "reason": "RequirementsUnknown", "message": "requirements not yet checked",
             "lastUpdateTime": "2026-11-23T22:53:46Z", "lastTransitionTime": "2026-11-23T22:53:46Z"},
            {"phase": "Succeeded", "reason": "InstallSucceeded", "message": "install strategy completed with no errors",
             "lastUpdateTime": "2026-11-23T22:53:50Z", "lastTransitionTime": "2026-11-23T22:53:48Z"}
        ]
    });
    let status = desired_status(
        KEY,
        &[
            component(
                "Subscription",
                Some("seed-auto"),
                "redis-operator",
                Some(sub_status),
            ),
            component(
                "ClusterServiceVersion",
                Some("seed-auto"),
                "redis-operator.v1.0.0",
                Some(csv_status),
            ),
            component("ServiceAccount", Some("seed-auto"), "redis-operator", None),
        ],
    );
    let value = serde_json::to_value(&status).unwrap();
    let refs = &value["components"]["refs"];
    assert_eq!(refs[1]["kind"], "ServiceAccount");
    assert!(refs[1].get("conditions").is_none(), "no conditions, no field");
    assert_eq!(
        refs[2]["conditions"],
        json!([{
            "type": "CatalogSourcesUnhealthy",
            "status": "False",
            "reason": "AllCatalogSourcesHealthy",
            "message": "all available catalogsources are healthy",
            "lastTransitionTime": "2026-11-23T22:52:23Z"
        }])
    );
    // A CSV: one condition, its current phase (upstream `csvConditionsJQ`), not the history.
    assert_eq!(
        refs[0]["conditions"],
        json!([{
            "type": "Succeeded",
            "status": "True",
            "reason": "InstallSucceeded",
            "message": "install strategy completed with no errors",
            "lastUpdateTime": "2026-11-23T22:53:50Z",
            "lastTransitionTime": "2026-11-23T22:53:48Z"
        }])
    );
    // A CSV without status yet still gets the one condition, type empty.
    let fresh = desired_status(
        KEY,
        &[component(
            "ClusterServiceVersion",
            Some("seed-auto"),
            "new.v1",
            None,
        )],
    );
    assert_eq!(
        serde_json::to_value(&fresh).unwrap()["components"]["refs"][0]["conditions"],
        json!([{"type": "", "status": "True"}])
    );
}

#[test]
fn operator_names_come_from_component_label_keys() {
    let labels = BTreeMap::from([
        ("olm.managed".to_owned(), "true".to_owned()),
        (KEY.to_owned(), String::new()),
        ("operators.coreos.com/etcd.operators".to_owned(), String::new()),
    ]);
    assert_eq!(operator_names(&labels), ["etcd.operators", NAME]);
    assert!(operator_names(&BTreeMap::new()).is_empty());
}

#[test]
fn the_label_key_of_a_long_name_is_cut_to_63_characters_without_a_trailing_separator() {
    let name = format!("{}.ns", "p".repeat(70));
    let key = component_label_key(&name).unwrap();
    assert_eq!(key.len(), "operators.coreos.com/".len() + 63);
    // Cut right after a separator: upstream strips it (a label name ends alphanumeric).
    let name = format!("{}.seed-auto", "p".repeat(62));
    assert_eq!(
        component_label_key(&name).unwrap(),
        format!("operators.coreos.com/{}", "p".repeat(62))
    );
    // The Subscription's label names the same Operator the decorator computes.
    for (package, namespace) in [("redis-operator", "seed-auto"), (&*"q".repeat(62), "ns")] {
        let name = format!("{package}.{namespace}");
        let from_sub = crate::api::labels::component_label_key(package, namespace);
        assert_eq!(from_sub, component_label_key(&name), "{name}");
    }
}
