use super::*;

fn csv_manifest() -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "redis-operator.v1.1.0", "namespace": "placeholder",
                     "annotations": {"capabilities": "Basic Install"}},
        "spec": {
            "displayName": "Redis",
            "replaces": "redis-operator.v0.9.0",
            "install": {"strategy": "deployment", "spec": {
                "deployments": [{"name": "redis-operator", "spec": {
                    "selector": {"matchLabels": {"app": "redis"}},
                    "template": {"metadata": {"labels": {"app": "redis"}},
                                 "spec": {"containers": [{"name": "m", "image": "redis-op:1"}]}}}}],
                "permissions": [{"serviceAccountName": "redis-operator",
                                 "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}],
                "clusterPermissions": [{"serviceAccountName": "redis-operator",
                                        "rules": [{"apiGroups": ["cache.example.com"], "resources": ["*"], "verbs": ["*"]}]},
                                       {"serviceAccountName": "default",
                                        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}]
            }},
            "installModes": [{"type": "OwnNamespace", "supported": true}]
        },
        "status": {"phase": "Succeeded"}
    })
}

fn crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "redisclusters.cache.example.com"}, "spec": {}})
}

fn service() -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "redis-metrics"}, "spec": {}})
}

fn secret() -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "redis-creds"}, "data": {}})
}

fn plan(manifests: &[Value]) -> Result<Vec<Step>, StepsError> {
    let properties =
        [json!({"type": "olm.package", "value": {"packageName": "redis-operator", "version": "1.1.0"}})];
    bundle_steps(&StepsInput {
        manifests,
        namespace: "operators",
        replaces: Some("redis-operator.v1.0.0"),
        package: "redis-operator",
        source_name: "olm-rs-catalog",
        source_namespace: "olm",
        properties: &properties,
    })
}

fn manifest(step: &Step) -> Value {
    serde_json::from_str(step.resource.manifest.as_deref().unwrap()).unwrap()
}

#[test]
fn steps_are_listed_as_upstream_the_csv_then_bundle_objects_then_rbac() {
    let steps = plan(&[service(), csv_manifest(), secret(), crd()]).unwrap();
    let kinds: Vec<&str> = steps.iter().map(|s| s.resource.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "ClusterServiceVersion",
            "CustomResourceDefinition",
            "Service",
            "BundleSecret",
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRole",
            "ClusterRoleBinding",
            "ClusterRoleBinding",
        ]
    );
    // Execution follows the listing: the CSV, then the CRDs, then the rest.
    let order: Vec<&str> = crate::plan::install_plan::execution_order(&steps)
        .into_iter()
        .map(|i| steps[i].resource.kind.as_str())
        .collect();
    assert_eq!(&order[..2], ["ClusterServiceVersion", "CustomResourceDefinition"]);
    assert!(steps.iter().all(|s| s.resolving == "redis-operator.v1.1.0"
        && s.status == StepStatus::Unknown
        && s.resource.source_name == "olm-rs-catalog"
        && s.resource.source_namespace == "olm"));
}

#[test]
fn the_default_service_account_is_never_generated() {
    let steps = plan(&[csv_manifest()]).unwrap();
    let sas: Vec<&str> = steps
        .iter()
        .filter(|s| s.resource.kind == "ServiceAccount")
        .map(|s| s.resource.name.as_str())
        .collect();
    assert_eq!(sas, ["redis-operator"]);
}

#[test]
fn the_csv_is_moved_to_the_namespace_with_the_resolved_replaces_and_the_properties_annotation() {
    let steps = plan(&[csv_manifest()]).unwrap();
    let csv = manifest(steps.iter().find(|s| s.resource.kind == CSV_KIND).unwrap());
    assert_eq!(csv["metadata"]["namespace"], "operators");
    assert_eq!(csv["spec"]["replaces"], "redis-operator.v1.0.0");
    assert_eq!(csv["metadata"]["annotations"]["capabilities"], "Basic Install");
    let props: Value =
        serde_json::from_str(csv["metadata"]["annotations"][PROPERTIES].as_str().unwrap()).unwrap();
    assert_eq!(props["properties"][0]["type"], "olm.package");
    assert_eq!(csv["metadata"]["labels"][MANAGED], "true");
    assert!(csv.get("status").is_none());
    let step = steps.iter().find(|s| s.resource.kind == CSV_KIND).unwrap();
    assert_eq!(
        (step.resource.group.as_str(), step.resource.version.as_str()),
        ("operators.coreos.com", "v1alpha1")
    );
}

#[test]
fn a_fresh_install_keeps_the_catalogs_replaces_as_upstream() {
    let properties = [];
    let steps = bundle_steps(&StepsInput {
        manifests: &[csv_manifest()],
        namespace: "operators",
        replaces: None,
        package: "redis-operator",
        source_name: "c",
        source_namespace: "olm",
        properties: &properties,
    })
    .unwrap();
    let csv = manifest(steps.iter().find(|s| s.resource.kind == CSV_KIND).unwrap());
    assert_eq!(csv["spec"]["replaces"], "redis-operator.v0.9.0");
    assert_eq!(csv["metadata"]["annotations"][PROPERTIES], "{\"properties\":[]}");
}

#[test]
fn every_object_is_labelled_managed_and_with_the_component_label() {
    let steps = plan(&[csv_manifest(), crd(), service(), secret()]).unwrap();
    for step in &steps {
        let m = manifest(step);
        assert_eq!(m["metadata"]["labels"][MANAGED], "true", "{}", step.resource.name);
        assert_eq!(
            m["metadata"]["labels"]["operators.coreos.com/redis-operator.operators"], "",
            "{}",
            step.resource.name
        );
    }
}

#[test]
fn rbac_and_cluster_scoped_objects_name_their_owner_in_labels_but_crds_do_not() {
    let steps = plan(&[csv_manifest(), crd(), service()]).unwrap();
    for step in &steps {
        let m = manifest(step);
        let labels = &m["metadata"]["labels"];
        let rbac = step.resource.group == RBAC_GROUP;
        match step.resource.kind.as_str() {
            "CustomResourceDefinition" => {
                assert!(labels.get(OWNER).is_none());
                let annotations = m["metadata"]["annotations"].as_object().unwrap();
                let (key, value) = annotations.iter().next().unwrap();
                assert!(key.starts_with(INSTALLED_ALONGSIDE_PREFIX));
                assert_eq!(value, "operators/redis-operator.v1.1.0");
                assert!(m["metadata"].get("namespace").is_none());
            }
            _ if rbac => {
                assert_eq!(labels[OWNER], "redis-operator.v1.1.0");
                assert_eq!(labels[OWNER_NAMESPACE], "operators");
                assert_eq!(labels[OWNER_KIND], CSV_KIND);
                assert!(labels[PERMISSIONS_HASH].as_str().is_some_and(|h| !h.is_empty()));
            }
            "Service" => {
                assert!(labels.get(OWNER).is_none());
                assert_eq!(m["metadata"]["namespace"], "operators");
            }
            _ => {}
        }
    }
}

#[test]
fn generated_role_names_follow_csv_sa_hash_and_fit_in_63_characters() {
    let steps = plan(&[csv_manifest()]).unwrap();
    let role = steps.iter().find(|s| s.resource.kind == "Role").unwrap();
    assert!(
        role.resource
            .name
            .starts_with("redis-operator.v1.1.0-redis-operator-")
    );
    let binding = steps.iter().find(|s| s.resource.kind == "RoleBinding").unwrap();
    assert_eq!(binding.resource.name, role.resource.name);
    let rb = manifest(binding);
    assert_eq!(rb["roleRef"]["name"], role.resource.name.as_str());
    assert_eq!(rb["subjects"][0]["namespace"], "operators");

    let long = StrategyDeploymentPermissions {
        service_account_name: "s".repeat(80),
        rules: vec![],
    };
    assert_eq!(role_name(&"c".repeat(40), &long).len(), 63);
}

#[test]
fn cluster_role_names_differ_between_namespaces() {
    let p = StrategyDeploymentPermissions {
        service_account_name: "sa".into(),
        rules: vec![],
    };
    assert_ne!(
        cluster_role_name("op.v1", "a", &p),
        cluster_role_name("op.v1", "b", &p)
    );
    assert_eq!(
        cluster_role_name("op.v1", "a", &p),
        cluster_role_name("op.v1", "a", &p)
    );
}

#[test]
fn planning_twice_gives_byte_identical_steps() {
    let a = plan(&[csv_manifest(), crd(), service()]).unwrap();
    let b = plan(&[csv_manifest(), crd(), service()]).unwrap();
    assert_eq!(a, b);
}

#[test]
fn an_unsupported_kind_is_refused_with_the_supported_list() {
    let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}});
    let err = plan(&[csv_manifest(), dep]).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("bundle object Deployment x (apiVersion apps/v1) is not a kind OLM installs"));
    assert!(text.contains("PodDisruptionBudget"));
}

#[test]
fn a_core_kind_of_another_group_is_written_as_the_core_kind_as_upstream_does() {
    // Upstream's ExecutePlan picks the typed client by the kind alone.
    let secret = json!({"apiVersion": "example.com/v1", "kind": "Secret",
                        "metadata": {"name": "x"}, "spec": {"size": 1}, "data": {"k": "dg=="}});
    let knative =
        json!({"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": {"name": "y"}});
    let steps = plan(&[csv_manifest(), secret, knative]).expect("planned as upstream plans it");
    let secret = steps
        .iter()
        .find(|s| s.resource.name == "x")
        .expect("the Secret step");
    assert_eq!(secret.resource.kind, BUNDLE_SECRET_KIND);
    assert_eq!(secret.resource.group, "");
    let manifest: Value = serde_json::from_str(secret.resource.manifest.as_deref().unwrap()).unwrap();
    assert_eq!(manifest["apiVersion"], "v1");
    assert_eq!(manifest["data"]["k"], "dg==");
    let service = steps
        .iter()
        .find(|s| s.resource.name == "y")
        .expect("the Service step");
    assert_eq!(
        (service.resource.group.as_str(), service.resource.kind.as_str()),
        ("", "Service")
    );
}

#[test]
fn bundles_without_exactly_one_csv_are_refused() {
    assert_eq!(plan(&[crd()]), Err(StepsError::MissingCsv));
    assert!(matches!(
        plan(&[csv_manifest(), csv_manifest()]),
        Err(StepsError::TooManyCsvs { .. })
    ));
}

#[test]
fn a_manifest_without_a_name_is_named_by_position_and_kind() {
    let err = plan(&[
        csv_manifest(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    ])
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "bundle object #1 (ConfigMap) has no metadata.name; set metadata.name in the bundle manifest"
    );
}

#[test]
fn a_non_deployment_strategy_is_refused() {
    let mut csv = csv_manifest();
    csv["spec"]["install"]["strategy"] = json!("helm");
    assert!(matches!(
        plan(&[csv]),
        Err(StepsError::UnsupportedStrategy { .. })
    ));
}

#[test]
fn a_service_account_shipped_in_the_bundle_replaces_the_generated_one() {
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "redis-operator", "annotations": {"a": "b"}}});
    let steps = plan(&[csv_manifest(), sa]).unwrap();
    let sas: Vec<&Step> = steps
        .iter()
        .filter(|s| s.resource.kind == "ServiceAccount")
        .collect();
    assert_eq!(sas.len(), 1);
    assert_eq!(manifest(sas[0])["metadata"]["annotations"]["a"], "b");
}

#[test]
fn duplicate_objects_are_refused() {
    assert!(matches!(
        plan(&[csv_manifest(), service(), service()]),
        Err(StepsError::DuplicateObject { .. })
    ));
}

#[test]
fn a_shared_service_account_keeps_the_previous_csv_as_owner_next_to_the_new_one() {
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op"}});
    let applied = with_owner(&sa, "op.v2", "uid-2");
    let live = vec![
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
               "name": "op.v1", "uid": "uid-1", "controller": true}),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
               "name": "op.v2", "uid": "uid-2"}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "someone", "uid": "uid-x"}),
    ];
    let merged = merge_csv_owner_references(&applied, &live);
    let refs = merged["metadata"]["ownerReferences"].as_array().unwrap();
    let uids: Vec<&str> = refs.iter().map(|r| r["uid"].as_str().unwrap()).collect();
    assert_eq!(
        uids,
        ["uid-2", "uid-1"],
        "new owner first, old CSV kept once, non-CSV owner left out"
    );
    // Kept as it was (upstream's mergedOwnerReferences), the manifest having no controller.
    assert_eq!(refs[1]["controller"], true);
    assert_eq!(refs[1]["name"], "op.v1");
    // A manifest that has its own controller: the kept one becomes a plain owner.
    let mut with_controller = applied.clone();
    with_controller["metadata"]["ownerReferences"][0]["controller"] = json!(true);
    let merged = merge_csv_owner_references(&with_controller, &live);
    assert_eq!(merged["metadata"]["ownerReferences"][1]["controller"], false);
    // Nothing live: the manifest is unchanged.
    assert_eq!(merge_csv_owner_references(&applied, &[]), applied);
}

#[test]
fn owner_references_are_added_once_and_replace_an_older_csv_of_the_same_name() {
    let m = with_owner(&service(), "op.v1", "uid-1");
    let m = with_owner(&m, "op.v1", "uid-2");
    let refs = m["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0]["uid"], "uid-2");
    assert_eq!(refs[0]["blockOwnerDeletion"], false);
    assert_eq!(refs[0]["controller"], false);
    let m = with_owner(&m, "op.v2", "uid-3");
    assert_eq!(m["metadata"]["ownerReferences"].as_array().unwrap().len(), 2);
}

#[test]
fn install_plan_names_are_stable_and_depend_on_subscription_csv_and_generation() {
    let a = install_plan_name("uid-1", "op.v1", 1);
    assert_eq!(a, install_plan_name("uid-1", "op.v1", 1));
    assert!(a.starts_with("install-") && a.len() == 13);
    assert_ne!(a, install_plan_name("uid-2", "op.v1", 1));
    assert_ne!(a, install_plan_name("uid-1", "op.v2", 1));
    // The next plan for the same CSV (the pending one was deleted) has a new name.
    assert_ne!(a, install_plan_name("uid-1", "op.v1", 2));
    assert_ne!(a, install_plan_name_attempt("uid-1", "op.v1", 1, 1));
}

#[test]
fn bundle_secrets_apply_as_secrets_and_scopes_are_known() {
    assert_eq!(apply_kind(BUNDLE_SECRET_KIND), "Secret");
    assert_eq!(is_namespaced("", BUNDLE_SECRET_KIND), Some(true));
    assert_eq!(is_namespaced(RBAC_GROUP, "ClusterRole"), Some(false));
    assert_eq!(is_namespaced("apps", "Deployment"), None);
}

fn strategy() -> StrategyDetailsDeployment {
    let csv: v1alpha1::ClusterServiceVersion = serde_json::from_value(csv_manifest()).unwrap();
    csv.spec.install.spec
}

#[test]
fn target_namespaces_get_roles_bound_to_the_operator_service_account() {
    let rbac = target_namespace_rbac(
        "redis-operator.v1.1.0",
        "operators",
        "redis-operator",
        &strategy(),
        &["operators".into(), "team-a".into(), "team-b".into()],
    );
    let namespaces: Vec<_> = rbac
        .roles
        .iter()
        .map(|r| r.metadata.namespace.clone().unwrap())
        .collect();
    assert_eq!(namespaces, ["team-a", "team-b"]);
    let binding = &rbac.role_bindings[0];
    let subject = &binding.subjects.as_ref().unwrap()[0];
    assert_eq!(subject.namespace.as_deref(), Some("operators"));
    let labels = binding.metadata.labels.as_ref().unwrap();
    assert_eq!(labels[OWNER_NAMESPACE], "operators");
    assert!(rbac.cluster_roles.is_empty());
    for meta in rbac
        .roles
        .iter()
        .map(|r| &r.metadata)
        .chain(rbac.role_bindings.iter().map(|b| &b.metadata))
    {
        let labels = meta.labels.as_ref().unwrap();
        assert_eq!(
            labels
                .get("operators.coreos.com/redis-operator.operators")
                .map(String::as_str),
            Some(""),
            "{:?} lacks the component label",
            meta.name
        );
    }
    // same name as the Role in the operator namespace.
    let generated = generated_rbac(
        "redis-operator.v1.1.0",
        "operators",
        "redis-operator",
        &strategy(),
    );
    assert_eq!(rbac.roles[0].metadata.name, generated.roles[0].metadata.name);
}

#[test]
fn all_namespaces_lifts_permissions_to_cluster_roles_that_can_read_namespaces() {
    let rbac = target_namespace_rbac(
        "redis-operator.v1.1.0",
        "operators",
        "redis-operator",
        &strategy(),
        &[String::new()],
    );
    assert!(rbac.roles.is_empty());
    assert_eq!(rbac.cluster_roles.len(), 1);
    let rules = rbac.cluster_roles[0].rules.as_ref().unwrap();
    assert!(
        rules
            .iter()
            .any(|r| r.resources.as_deref() == Some(&["namespaces".to_owned()][..])
                && r.verbs == ["get", "list", "watch"])
    );
    assert_eq!(rbac.cluster_role_bindings[0].role_ref.kind, "ClusterRole");
}

#[test]
fn a_dependency_becomes_a_subscription_step_with_the_component_label_and_no_csv_owner() {
    let mut sub = v1alpha1::Subscription::new(
        "b-stable-cat-ns",
        v1alpha1::SubscriptionSpec {
            source: "cat".into(),
            source_namespace: "ns".into(),
            name: "b".into(),
            channel: Some("stable".into()),
            starting_csv: Some("b.v1".into()),
            install_plan_approval: None,
            config: None,
        },
    );
    sub.metadata.namespace = Some("ns".into());
    let step = subscription_step(&sub, "b.v1").unwrap();
    assert_eq!(step.resolving, "b.v1");
    assert_eq!(
        (step.resource.group.as_str(), step.resource.version.as_str()),
        ("operators.coreos.com", "v1alpha1")
    );
    let manifest: Value = serde_json::from_str(step.resource.manifest.as_deref().unwrap()).unwrap();
    assert_eq!(manifest["kind"], "Subscription");
    assert_eq!(manifest["spec"]["startingCSV"], "b.v1");
    assert_eq!(manifest["metadata"]["labels"]["operators.coreos.com/b.ns"], "");
    assert!(!owned_by_csv(&step.resource.kind));
    assert!(!owned_by_csv(CSV_KIND));
    assert!(owned_by_csv("ServiceAccount"));
    sub.metadata.namespace = None;
    assert!(subscription_step(&sub, "b.v1").is_err());
}

#[test]
fn steps_carry_the_manifests_as_upstream_decodes_them() {
    let mut csv = csv_manifest();
    csv["spec"]["skips"] = Value::Null;
    csv["spec"]["skipRange"] = json!(">=1.0.0 <1.1.0");
    csv["spec"]["customresourcedefinitions"] = json!({"owned": [{"name": "redisclusters.cache.example.com", "version": "v1", "kind": "RedisCluster",
                          "resources": [{"kind": "Pod", "version": "v1"}]}]});
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "annotations": null}, "data": null, "unknown": 1});
    let steps = plan(&[csv, config_map, crd()]).unwrap();
    for step in &steps {
        let m = manifest(step);
        assert!(decode::null_paths(&m).is_empty(), "{} {}", step.resource.kind, m);
    }
    let csv = steps
        .iter()
        .find(|s| s.resource.kind == CSV_KIND)
        .map(manifest)
        .unwrap();
    assert!(csv["spec"].get("skipRange").is_none());
    assert_eq!(
        csv["spec"]["customresourcedefinitions"]["owned"][0]["resources"][0]["name"],
        ""
    );
    let cm = steps
        .iter()
        .find(|s| s.resource.kind == "ConfigMap")
        .map(manifest)
        .unwrap();
    assert!(cm.get("unknown").is_none() && cm.get("data").is_none());
}

#[test]
fn a_typed_object_that_does_not_decode_is_refused_naming_it() {
    let bad = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
                     "spec": {"ports": "not a list"}});
    let err = plan(&[csv_manifest(), bad]).unwrap_err();
    assert!(
        matches!(&err, StepsError::InvalidObject { kind, name, .. } if kind == "Service" && name == "svc"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("bundle object Service svc is invalid: ")
    );
}

#[test]
fn step_manifests_write_integral_numbers_as_go_does() {
    let manifest = json!({"spec": {"minimum": 1.0, "maximum": 5.0, "ratio": 0.5, "count": 3,
                                   "items": [{"multipleOf": 2.0}], "big": 1e20}});
    let text = go_json(manifest);
    let back: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back["spec"]["minimum"], json!(1));
    assert_eq!(back["spec"]["maximum"], json!(5));
    assert_eq!(back["spec"]["items"][0]["multipleOf"], json!(2));
    assert_eq!(back["spec"]["ratio"], json!(0.5));
    assert_eq!(back["spec"]["count"], json!(3));
    assert!(
        text.contains("\"maximum\":5,") || text.contains("\"maximum\":5}"),
        "{text}"
    );
    assert!(!text.contains("5.0"), "{text}");
}

fn resource(group: &str, version: &str, kind: &str) -> StepResource {
    StepResource {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        name: "x".into(),
        ..Default::default()
    }
}

#[test]
fn a_step_is_applied_as_its_manifest_says_and_a_typed_kind_as_its_type() {
    // A hand-written step: empty group, the manifest names the real API group.
    let cr = json!({"apiVersion": "operators.io.operator-framework/v1", "kind": "Deprecated", "metadata": {"name": "x"}});
    assert_eq!(
        step_gvk(&resource("", "v1", "Deprecated"), &cr),
        (
            "operators.io.operator-framework".into(),
            "v1".into(),
            "Deprecated".into()
        )
    );
    // A legacy catalog's CSV reads `apiVersion: v1alpha1`: written as the CSV type.
    let legacy =
        json!({"apiVersion": "v1alpha1", "kind": "ClusterServiceVersion", "metadata": {"name": "x"}});
    let gvk = step_gvk(&resource("operators.coreos.com", "v1alpha1", CSV_KIND), &legacy);
    assert_eq!(
        gvk,
        ("operators.coreos.com".into(), "v1alpha1".into(), CSV_KIND.into())
    );
    let typed = with_type(&legacy, &gvk.0, &gvk.1, &gvk.2);
    assert_eq!(typed["apiVersion"], "operators.coreos.com/v1alpha1");
    // The core group, and the bundle Secret written as a Secret.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    assert_eq!(
        step_gvk(&resource("", "v1", "ConfigMap"), &cm),
        (String::new(), "v1".into(), "ConfigMap".into())
    );
    assert_eq!(
        step_gvk(&resource("", "v1", BUNDLE_SECRET_KIND), &json!({})),
        (String::new(), "v1".into(), "Secret".into())
    );
    assert_eq!(with_type(&cm, "", "v1", "ConfigMap")["apiVersion"], "v1");
    // A CRD: apiextensions.k8s.io at the manifest's version, whatever its group says.
    let crd = json!({"apiVersion": "v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x"}});
    assert_eq!(
        step_gvk(&resource("", "v1", "CustomResourceDefinition"), &crd),
        (
            "apiextensions.k8s.io".into(),
            "v1".into(),
            "CustomResourceDefinition".into()
        )
    );
    // No apiVersion in the manifest: the step's own fields.
    assert_eq!(
        step_gvk(
            &resource("monitoring.coreos.com", "v1", "ServiceMonitor"),
            &json!({"metadata": {}})
        ),
        (
            "monitoring.coreos.com".into(),
            "v1".into(),
            "ServiceMonitor".into()
        )
    );
}

#[test]
fn a_manifests_csv_owners_get_their_uids_and_other_owners_stay() {
    let manifest = json!({"metadata": {"name": "cm", "ownerReferences": [
        {"apiVersion": "operators.coreos.com/v1alpha1", "kind": CSV_KIND, "name": "a.v1", "uid": ""},
        {"apiVersion": "operators.coreos.com/v1alpha1", "kind": CSV_KIND, "name": "b.v1"},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a.v1", "uid": "keep"}
    ]}});
    assert_eq!(
        csv_owner_names(&manifest),
        vec!["a.v1".to_owned(), "b.v1".to_owned()]
    );
    let uids = HashMap::from([("a.v1".to_owned(), "uid-a".to_owned())]);
    let out = with_csv_owner_uids(&manifest, &uids);
    let refs = out["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs[0]["uid"], "uid-a");
    assert_eq!(
        refs[1].get("uid"),
        None,
        "a CSV not in the map keeps its reference as written"
    );
    assert_eq!(refs[2]["uid"], "keep");
    assert!(csv_owner_names(&json!({"metadata": {}})).is_empty());
}

#[test]
fn a_core_kind_of_another_group_keeps_only_the_core_types_fields() {
    let secret = json!({"apiVersion": "example.com/v1", "kind": "Secret",
                        "metadata": {"name": "x"}, "spec": {"size": 1}, "data": {"k": "dg=="}});
    let steps = plan(&[csv_manifest(), secret]).unwrap();
    let step = steps.iter().find(|s| s.resource.name == "x").unwrap();
    let manifest: Value = serde_json::from_str(step.resource.manifest.as_deref().unwrap()).unwrap();
    // Read as a core Secret, as Go's encoding/json reads it: `spec` is no field of a Secret.
    assert_eq!(manifest.get("spec"), None, "{manifest}");
}

#[test]
fn a_crd_is_annotated_with_its_csv_and_keeps_the_other_csvs_annotations() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                     "metadata": {"name": "tests.example.com"}});
    let live = BTreeMap::from([
        (
            format!("{INSTALLED_ALONGSIDE_PREFIX}00000000000000aa"),
            "other/old-csv".to_owned(),
        ),
        ("unrelated".to_owned(), "x".to_owned()),
    ]);
    let out = with_installed_alongside(&crd, "ns", "test-csv", &live);
    let annotations = out["metadata"]["annotations"].as_object().unwrap();
    assert_eq!(annotations.len(), 2, "{annotations:?}");
    assert!(annotations.values().any(|v| v == "ns/test-csv"));
    assert!(annotations.values().any(|v| v == "other/old-csv"));
    // A step that names no CSV adds none.
    let none = with_installed_alongside(&crd, "ns", "", &BTreeMap::new());
    assert!(
        none["metadata"]
            .get("annotations")
            .is_none_or(|a| a.as_object().is_some_and(|m| m.is_empty()))
    );
}
