use std::collections::BTreeMap;

use serde_json::json;

use super::*;

const NAME: &str = "redis-operator.seed-auto";
const KEY: &str = "operators.coreos.com/redis-operator.seed-auto";

fn component(kind: &str, namespace: Option<&str>, name: &str, conditions: Option<Value>) -> Component {
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
        conditions,
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
    let status = desired_status(NAME, &[]);
    let value = serde_json::to_value(&status).unwrap();
    assert_eq!(
        value,
        json!({"components": {"labelSelector": {"matchExpressions": [
            {"key": KEY, "operator": "Exists"}
        ]}}})
    );
}

#[test]
fn refs_follow_upstreams_kind_order_then_namespace_and_name() {
    let ns = Some("seed-auto");
    let status = desired_status(
        NAME,
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
            component("Role", ns, "redis-operator.v1.0.0-re-x", None),
            component("ServiceAccount", ns, "redis-operator", None),
            component("InstallPlan", ns, "install-bdcfp", None),
            component("Deployment", ns, "redis-operator", None),
        ],
    );
    let kinds: Vec<String> = refs(&status).into_iter().map(|r| r.0).collect();
    assert_eq!(
        kinds,
        [
            "Deployment",
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "CustomResourceDefinition",
            "Subscription",
            "InstallPlan",
            "ClusterServiceVersion"
        ]
    );
    let crd = &refs(&status)[4];
    assert_eq!(crd.1, None, "cluster-scoped objects have no namespace");
    assert_eq!(crd.3, "apiextensions.k8s.io/v1");
    assert_eq!(refs(&status)[0].3, "apps/v1");
    assert_eq!(refs(&status)[1].3, "v1");
    assert_eq!(refs(&status)[7].3, "operators.coreos.com/v1alpha1");
}

#[test]
fn objects_without_the_label_are_left_out() {
    let mut stranger = component("Deployment", Some("other"), "other", None);
    stranger.labels = BTreeMap::from([("operators.coreos.com/other.other".to_owned(), String::new())]);
    let status = desired_status(NAME, &[stranger]);
    assert!(status.components.unwrap().refs.is_empty());
}

#[test]
fn conditions_are_cut_to_upstreams_fields() {
    let sub_conditions = json!([{
        "type": "CatalogSourcesUnhealthy",
        "status": "False",
        "reason": "AllCatalogSourcesHealthy",
        "message": "all available catalogsources are healthy",
        "lastTransitionTime": "2026-11-23T22:52:23Z",
        "lastHeartbeatTime": "2026-11-23T22:52:23Z"
    }]);
    let csv_conditions = json!([{
        "phase": "Succeeded",
        "reason": "InstallSucceeded",
        "message": "install strategy completed with no errors",
        "lastUpdateTime": "2026-11-23T22:53:50Z",
        "lastTransitionTime": "2026-11-23T22:53:50Z"
    }]);
    let status = desired_status(
        NAME,
        &[
            component(
                "Subscription",
                Some("seed-auto"),
                "redis-operator",
                Some(sub_conditions),
            ),
            component(
                "ClusterServiceVersion",
                Some("seed-auto"),
                "redis-operator.v1.0.0",
                Some(csv_conditions),
            ),
            component("ServiceAccount", Some("seed-auto"), "redis-operator", None),
        ],
    );
    let value = serde_json::to_value(&status).unwrap();
    let refs = &value["components"]["refs"];
    assert!(refs[0].get("conditions").is_none(), "no conditions, no field");
    assert_eq!(
        refs[1]["conditions"],
        json!([{
            "type": "CatalogSourcesUnhealthy",
            "status": "False",
            "reason": "AllCatalogSourcesHealthy",
            "message": "all available catalogsources are healthy",
            "lastTransitionTime": "2026-11-23T22:52:23Z"
        }])
    );
    // A CSV's phase history has no type or status: Go writes them empty.
    assert_eq!(
        refs[2]["conditions"],
        json!([{
            "type": "",
            "status": "",
            "reason": "InstallSucceeded",
            "message": "install strategy completed with no errors",
            "lastUpdateTime": "2026-11-23T22:53:50Z",
            "lastTransitionTime": "2026-11-23T22:53:50Z"
        }])
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
fn the_label_key_of_a_long_name_is_cut_to_63_characters() {
    let name = format!("{}.ns", "p".repeat(70));
    let key = component_label_key(&name);
    assert_eq!(key.len(), "operators.coreos.com/".len() + 63);
    // The Subscription's label names the same Operator the decorator computes.
    let from_sub = crate::api::labels::component_label_key("redis-operator", "seed-auto").unwrap();
    assert_eq!(from_sub, component_label_key(NAME));
}
