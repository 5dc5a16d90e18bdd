use serde_json::{Value, json};

use super::*;

fn deployment(pod: Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "op", "annotations": {"kept": "deployment"}},
        "spec": {
            "selector": {"matchLabels": {"app": "op"}},
            "template": {"metadata": {"annotations": {"kept": "pod"}}, "spec": pod}
        }
    }))
    .unwrap()
}

fn overrides(config: Value) -> SubscriptionOverrides {
    SubscriptionOverrides {
        subscription: "ns/op-sub".into(),
        config: serde_json::from_value(config).unwrap(),
    }
}

fn merged(pod: Value, config: Value) -> Value {
    let mut d = deployment(pod);
    apply_overrides(&mut d, &overrides(config)).unwrap();
    serde_json::to_value(&d.spec.template.spec).unwrap()
}

#[test]
fn env_replaces_same_named_variables_in_place_and_appends_new_ones_in_order() {
    let pod = json!({"containers": [
        {"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "HTTP_PROXY", "value": "old"}]},
        {"name": "b"}
    ]});
    let config = json!({"env": [
        {"name": "HTTP_PROXY", "value": "http://proxy"},
        {"name": "NEW", "value": "n"},
        {"name": "LAST", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    ]});
    let out = merged(pod, config);
    assert_eq!(
        out["containers"][0]["env"],
        json!([
            {"name": "X", "value": "1"},
            {"name": "HTTP_PROXY", "value": "http://proxy"},
            {"name": "NEW", "value": "n"},
            {"name": "LAST", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
        ])
    );
    assert_eq!(out["containers"][1]["env"].as_array().unwrap().len(), 3);
}

#[test]
fn env_given_twice_keeps_the_last_value_once() {
    let out = merged(
        json!({"containers": [{"name": "a"}]}),
        json!({"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}),
    );
    assert_eq!(out["containers"][0]["env"], json!([{"name": "A", "value": "2"}]));
}

#[test]
fn env_from_is_appended_unless_an_equal_source_is_there() {
    let pod = json!({"containers": [{"name": "a", "envFrom": [{"configMapRef": {"name": "cm"}}]}]});
    let config = json!({"envFrom": [
        {"configMapRef": {"name": "cm"}},
        {"secretRef": {"name": "s"}, "prefix": "S_"}
    ]});
    assert_eq!(
        merged(pod, config)["containers"][0]["envFrom"],
        json!([{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}, "prefix": "S_"}])
    );
}

#[test]
fn volumes_and_mounts_are_replaced_by_name_or_appended() {
    let pod = json!({
        "containers": [{"name": "a", "volumeMounts": [{"name": "certs", "mountPath": "/old"}]}],
        "volumes": [{"name": "certs", "emptyDir": {}}]
    });
    let config = json!({
        "volumes": [
            {"name": "certs", "secret": {"secretName": "tls"}},
            {"name": "extra", "configMap": {"name": "cm"}}
        ],
        "volumeMounts": [
            {"name": "certs", "mountPath": "/etc/certs"},
            {"name": "extra", "mountPath": "/etc/extra"}
        ]
    });
    let out = merged(pod, config);
    assert_eq!(
        out["volumes"],
        json!([
            {"name": "certs", "secret": {"secretName": "tls"}},
            {"name": "extra", "configMap": {"name": "cm"}}
        ])
    );
    assert_eq!(
        out["containers"][0]["volumeMounts"],
        json!([
            {"name": "certs", "mountPath": "/etc/certs"},
            {"name": "extra", "mountPath": "/etc/extra"}
        ])
    );
}

#[test]
fn a_mount_of_a_volume_defined_nowhere_is_reported_with_the_fix() {
    let mut d = deployment(json!({"containers": [{"name": "a"}]}));
    let err = apply_overrides(
        &mut d,
        &overrides(json!({"volumeMounts": [{"name": "missing", "mountPath": "/m"}]})),
    )
    .unwrap_err();
    let message = err.to_string();
    for needle in [
        "Subscription ns/op-sub",
        "spec.config.volumeMounts[0]",
        "\"missing\"",
        "Deployment op",
        "add a volume named \"missing\" to spec.config.volumes",
    ] {
        assert!(message.contains(needle), "{needle} not in {message}");
    }
    // A volume of the pod template itself is fine.
    let mut d =
        deployment(json!({"containers": [{"name": "a"}], "volumes": [{"name": "missing", "emptyDir": {}}]}));
    apply_overrides(
        &mut d,
        &overrides(json!({"volumeMounts": [{"name": "missing", "mountPath": "/m"}]})),
    )
    .unwrap();
}

#[test]
fn tolerations_are_appended_unless_equal() {
    let pod = json!({"containers": [{"name": "a"}], "tolerations": [
        {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    ]});
    let config = json!({"tolerations": [
        {"key": "k", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "k", "operator": "Exists", "effect": "NoExecute"}
    ]});
    assert_eq!(
        merged(pod, config)["tolerations"],
        json!([
            {"key": "k", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "k", "operator": "Exists", "effect": "NoExecute"}
        ])
    );
}

#[test]
fn resources_replace_every_containers_resources() {
    let pod = json!({"containers": [
        {"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}},
        {"name": "b"}
    ], "initContainers": [{"name": "init"}]});
    let out = merged(pod, json!({"resources": {"requests": {"memory": "64Mi"}}}));
    for i in 0..2 {
        assert_eq!(
            out["containers"][i]["resources"],
            json!({"requests": {"memory": "64Mi"}})
        );
    }
    assert_eq!(
        out["initContainers"][0].get("resources"),
        None,
        "init containers are left alone"
    );
}

#[test]
fn node_selector_replaces_and_an_empty_one_clears() {
    let pod = json!({"containers": [{"name": "a"}], "nodeSelector": {"old": "x", "keep": "no"}});
    assert_eq!(
        merged(pod.clone(), json!({"nodeSelector": {"disk": "ssd"}}))["nodeSelector"],
        json!({"disk": "ssd"})
    );
    assert_eq!(
        merged(pod.clone(), json!({"nodeSelector": {}})).get("nodeSelector"),
        None
    );
    assert_eq!(
        merged(pod, json!({}))["nodeSelector"],
        json!({"old": "x", "keep": "no"})
    );
}

fn node_affinity(key: &str) -> Value {
    json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "Exists"}]}
    ]}})
}

fn pod_affinity(topology: &str) -> Value {
    json!({"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": topology}]})
}

#[test]
fn affinity_is_overridden_per_field() {
    let pod = json!({"containers": [{"name": "a"}], "affinity": {
        "nodeAffinity": node_affinity("old"),
        "podAntiAffinity": pod_affinity("zone")
    }});
    // A set field replaces; an absent one stays.
    let out = merged(
        pod.clone(),
        json!({"affinity": {"nodeAffinity": node_affinity("new")}}),
    );
    assert_eq!(
        out["affinity"],
        json!({"nodeAffinity": node_affinity("new"), "podAntiAffinity": pod_affinity("zone")})
    );
    // An empty field removes that field only.
    let out = merged(pod.clone(), json!({"affinity": {"podAntiAffinity": {}}}));
    assert_eq!(out["affinity"], json!({"nodeAffinity": node_affinity("old")}));
    // Removing the last field removes the affinity.
    let out = merged(
        pod.clone(),
        json!({"affinity": {"podAntiAffinity": {}, "nodeAffinity": {}}}),
    );
    assert_eq!(out.get("affinity"), None);
    // `affinity: {}` removes it all.
    assert_eq!(merged(pod, json!({"affinity": {}})).get("affinity"), None);
    // No affinity yet: the config's is taken.
    let out = merged(
        json!({"containers": [{"name": "a"}]}),
        json!({"affinity": {"podAffinity": pod_affinity("host")}}),
    );
    assert_eq!(out["affinity"], json!({"podAffinity": pod_affinity("host")}));
}

#[test]
fn annotations_are_added_to_deployment_and_pods_without_overwriting() {
    let mut d = deployment(json!({"containers": [{"name": "a"}]}));
    apply_overrides(
        &mut d,
        &overrides(json!({"annotations": {"kept": "config", "new": "v"}})),
    )
    .unwrap();
    let annotations =
        |m: &Option<std::collections::BTreeMap<String, String>>| serde_json::to_value(m).unwrap();
    assert_eq!(
        annotations(&d.metadata.annotations),
        json!({"kept": "deployment", "new": "v"})
    );
    assert_eq!(
        annotations(&d.spec.template.metadata.as_ref().unwrap().annotations),
        json!({"kept": "pod", "new": "v"})
    );
}

#[test]
fn an_empty_config_changes_nothing_and_the_selector_is_ignored() {
    let pod = json!({"containers": [{"name": "a", "env": [{"name": "A", "value": "1"}]}], "nodeSelector": {"a": "b"}});
    let mut d = deployment(pod);
    let before = d.clone();
    apply_overrides(
        &mut d,
        &overrides(json!({"selector": {"matchLabels": {"x": "y"}}})),
    )
    .unwrap();
    assert_eq!(d, before);
}

fn sub(name: &str, installed: Option<&str>, current: Option<&str>) -> Subscription {
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"source": "c", "sourceNamespace": "olm", "name": "p", "config": {"env": [{"name": "A", "value": name}]}},
        "status": {"lastUpdated": "2026-01-01T00:00:00Z", "installedCSV": installed, "currentCSV": current}
    }))
    .unwrap()
}

#[test]
fn the_owning_subscription_is_the_one_that_installed_the_csv_else_the_one_installing_it() {
    let subs = [
        sub("upgrading", Some("op.v1"), Some("op.v2")),
        sub("other", Some("other.v1"), Some("other.v1")),
    ];
    let found = |csv: &str| owning_subscription(csv, subs.iter()).map(kube::ResourceExt::name_any);
    assert_eq!(found("op.v1").as_deref(), Some("upgrading"));
    assert_eq!(found("op.v2").as_deref(), Some("upgrading"));
    assert_eq!(found("other.v1").as_deref(), Some("other"));
    assert_eq!(found("nobody.v1"), None);
    let installed_wins = [
        sub("installing", None, Some("x.v1")),
        sub("installed", Some("x.v1"), None),
    ];
    assert_eq!(
        owning_subscription("x.v1", installed_wins.iter())
            .map(kube::ResourceExt::name_any)
            .as_deref(),
        Some("installed")
    );
    let overrides = SubscriptionOverrides::of(&subs[0]).unwrap();
    assert_eq!(overrides.subscription, "ns/upgrading");
}
