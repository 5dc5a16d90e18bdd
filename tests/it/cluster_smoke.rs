//! Smoke suite for the local control plane: proves, from Rust with kube-rs, that the cluster
//! `tests/cluster/up` starts behaves like real Kubernetes where olm-rs depends on it: Deployments
//! become Available (controllers, scheduler and kwok's fake kubelets work), owner references
//! garbage-collect, CRD schemas are enforced, server-side apply tracks field ownership, and RBAC
//! authorizes ServiceAccounts. Each test runs in its own namespace.

use std::collections::BTreeMap;

use crate::support::cluster::{TestCluster, TestNamespace, WAIT, wait_for};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams,
};
use serde_json::json;

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": {
                    "containers": [{ "name": "main", "image": "registry.invalid/smoke:1" }]
                }
            }
        }
    }))
    .expect("the deployment manifest is valid")
}

/// Creates a Deployment and waits until it reports `Available=True` with all replicas ready.
async fn available_deployment(ns: &TestNamespace, name: &str, replicas: i32) -> Deployment {
    let deployments: Api<Deployment> = ns.api();
    deployments
        .create(&PostParams::default(), &deployment(name, replicas))
        .await
        .expect("creating the deployment");
    wait_for(&format!("deployment {name} to become Available"), WAIT, || {
        let deployments = deployments.clone();
        async move {
            let d = deployments.get(name).await.ok()?;
            let status = d.status.as_ref()?;
            let available = status
                .conditions
                .as_ref()?
                .iter()
                .any(|c| c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True"));
            (available
                && status.ready_replicas == Some(replicas)
                && status.available_replicas == Some(replicas))
            .then_some(d)
        }
    })
    .await
}

#[tokio::test]
async fn a_deployment_becomes_available_with_running_ready_pods_on_fake_nodes() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let ns = cluster.namespace("smoke-deploy").await;

    let d = available_deployment(&ns, "web", 2).await;
    assert_eq!(d.status.unwrap().replicas, Some(2));

    let pods: Api<Pod> = ns.api();
    let list = pods.list(&ListParams::default().labels("app=web")).await.unwrap();
    assert_eq!(list.items.len(), 2);
    for pod in list.items {
        let node = pod.spec.as_ref().unwrap().node_name.clone().unwrap();
        assert!(node.starts_with("olmrs-node-"), "pod scheduled onto {node}");
        let status = pod.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert!(
            status
                .conditions
                .unwrap()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        );
        assert!(status.pod_ip.is_some(), "kwok assigns a pod IP");
    }
}

#[tokio::test]
async fn deleting_a_deployment_garbage_collects_its_replicaset_and_pods() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let ns = cluster.namespace("smoke-gc").await;
    available_deployment(&ns, "doomed", 2).await;

    let replicasets: Api<ReplicaSet> = ns.api();
    let pods: Api<Pod> = ns.api();
    let by_app = ListParams::default().labels("app=doomed");
    let rs = replicasets.list(&by_app).await.unwrap();
    assert_eq!(rs.items.len(), 1, "the deployment owns one ReplicaSet");
    let owner = &rs.items[0].metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(owner.kind, "Deployment");
    assert_eq!(owner.name, "doomed");
    assert_eq!(pods.list(&by_app).await.unwrap().items.len(), 2);

    let deployments: Api<Deployment> = ns.api();
    deployments
        .delete("doomed", &DeleteParams::background())
        .await
        .unwrap();

    wait_for(
        "the ReplicaSet and Pods of the deleted deployment to be collected",
        WAIT,
        || {
            let (replicasets, pods, by_app) = (replicasets.clone(), pods.clone(), by_app.clone());
            async move {
                let rs_left = replicasets.list(&by_app).await.ok()?.items.len();
                let pods_left = pods.list(&by_app).await.ok()?.items.len();
                (rs_left == 0 && pods_left == 0).then_some(())
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_crd_registers_and_a_resource_violating_its_schema_is_rejected_naming_the_field() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let ns = cluster.namespace("smoke-crd").await;
    // CRDs are cluster-scoped: a group unique to this test's namespace keeps runs independent.
    let group = format!("{}.smoke.olm-rs.test", ns.name());
    let crd_name = format!("widgets.{group}");
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": crd_name },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": { "plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList" },
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["replicas"],
                            "properties": {
                                "replicas": { "type": "integer", "minimum": 1, "maximum": 5 }
                            }
                        }
                    }
                }}
            }]
        }
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(cluster.client());
    crds.create(&PostParams::default(), &crd).await.unwrap();

    wait_for(&format!("CRD {crd_name} to be Established"), WAIT, || {
        let crds = crds.clone();
        let crd_name = crd_name.clone();
        async move {
            let crd = crds.get(&crd_name).await.ok()?;
            crd.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        }
    })
    .await;

    let gvk = GroupVersionKind::gvk(&group, "v1", "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let widgets: Api<DynamicObject> = Api::namespaced_with(cluster.client(), ns.name(), &resource);
    let widget = |name: &str, spec: serde_json::Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": format!("{group}/v1"),
            "kind": "Widget",
            "metadata": { "name": name },
            "spec": spec,
        }))
        .unwrap()
    };

    // A valid resource is accepted (retrying while the new endpoint appears in discovery).
    let good = widget("good", json!({ "replicas": 3 }));
    wait_for("the Widget endpoint to accept a valid resource", WAIT, || {
        let widgets = widgets.clone();
        let good = good.clone();
        async move {
            match widgets.create(&PostParams::default(), &good).await {
                Ok(_) => Some(()),
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 405 => None,
                Err(e) => panic!("creating a valid Widget: {e}"),
            }
        }
    })
    .await;

    let bad = widget("bad", json!({ "replicas": "three" }));
    match widgets.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "unexpected status: {status:?}");
            assert!(status.is_invalid(), "unexpected status: {status:?}");
            assert!(
                status.message.contains("spec.replicas"),
                "the error should name spec.replicas: {}",
                status.message
            );
        }
        other => panic!("a Widget with a string replicas was not rejected: {other:?}"),
    }
    let too_many = widget("too-many", json!({ "replicas": 9 }));
    let err = widgets
        .create(&PostParams::default(), &too_many)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("spec.replicas"),
        "the error should name spec.replicas: {err}"
    );

    crds.delete(&crd_name, &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn server_side_apply_by_a_second_manager_conflicts_on_a_field_owned_by_the_first() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let ns = cluster.namespace("smoke-ssa").await;
    let cms: Api<ConfigMap> = ns.api();
    let cm = |value: &str| {
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "name": "shared" },
            "data": { "owned": value },
        })
    };

    cms.patch("shared", &PatchParams::apply("first"), &Patch::Apply(cm("a")))
        .await
        .unwrap();

    match cms
        .patch("shared", &PatchParams::apply("second"), &Patch::Apply(cm("b")))
        .await
    {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 409, "unexpected status: {status:?}");
            assert!(status.is_conflict(), "unexpected status: {status:?}");
            assert!(
                status.message.contains("first") && status.message.contains(".data.owned"),
                "the conflict should name the owner and the field: {}",
                status.message
            );
        }
        other => panic!("the second manager's apply did not conflict: {other:?}"),
    }
    assert_eq!(cms.get("shared").await.unwrap().data.unwrap()["owned"], "a");

    // Forcing takes the field over.
    let forced = cms
        .patch(
            "shared",
            &PatchParams::apply("second").force(),
            &Patch::Apply(cm("b")),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["owned"], "b");
    let managers: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter(|m| m.operation.as_deref() == Some("Apply"))
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(managers, vec!["second".to_owned()]);
}

#[tokio::test]
async fn rbac_denies_a_service_account_what_it_was_not_granted_and_allows_what_a_rolebinding_grants() {
    let Some(cluster) = TestCluster::connect().await else {
        return;
    };
    let ns = cluster.namespace("smoke-rbac").await;
    let sas: Api<ServiceAccount> = ns.api();
    let sa: ServiceAccount = serde_json::from_value(json!({ "metadata": { "name": "reader" } })).unwrap();
    sas.create(&PostParams::default(), &sa).await.unwrap();
    let cms: Api<ConfigMap> = ns.api();
    let mut data = BTreeMap::new();
    data.insert("k".to_owned(), "v".to_owned());
    let cm = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("visible".into()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    };
    cms.create(&PostParams::default(), &cm).await.unwrap();

    let as_reader = cluster.client_as_service_account(ns.name(), "reader");
    let reader_cms: Api<ConfigMap> = Api::namespaced(as_reader.clone(), ns.name());
    let reader_secrets: Api<Secret> = Api::namespaced(as_reader.clone(), ns.name());
    let reader_default_cms: Api<ConfigMap> = Api::namespaced(as_reader.clone(), "default");

    let forbidden = |r: Result<kube::core::ObjectList<ConfigMap>, kube::Error>| match r {
        Err(kube::Error::Api(s)) => s.code == 403 && s.is_forbidden(),
        _ => false,
    };
    assert!(
        forbidden(reader_cms.list(&ListParams::default()).await),
        "a fresh ServiceAccount must not list configmaps"
    );

    let role: Role = serde_json::from_value(json!({ "metadata": { "name": "configmap-reader" } })).unwrap();
    let role = Role {
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".into()]),
            verbs: vec!["get".into(), "list".into()],
            ..Default::default()
        }]),
        ..role
    };
    let roles: Api<Role> = ns.api();
    roles.create(&PostParams::default(), &role).await.unwrap();
    let binding: RoleBinding =
        serde_json::from_value(json!({ "metadata": { "name": "reader-reads-configmaps" } })).unwrap();
    let binding = RoleBinding {
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: "configmap-reader".into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: "reader".into(),
            namespace: Some(ns.name().to_owned()),
            ..Default::default()
        }]),
        ..binding
    };
    let bindings: Api<RoleBinding> = ns.api();
    bindings.create(&PostParams::default(), &binding).await.unwrap();

    let names = wait_for("the RoleBinding to take effect", WAIT, || {
        let reader_cms = reader_cms.clone();
        async move {
            let list = reader_cms.list(&ListParams::default()).await.ok()?;
            Some(
                list.items
                    .into_iter()
                    .filter_map(|c| c.metadata.name)
                    .collect::<Vec<_>>(),
            )
        }
    })
    .await;
    assert!(names.contains(&"visible".to_owned()), "listed {names:?}");
    assert_eq!(reader_cms.get("visible").await.unwrap().data.unwrap()["k"], "v");

    // Still denied: other verbs, other resources, other namespaces.
    let create = reader_cms
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: kube::api::ObjectMeta {
                    name: Some("written".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await;
    assert!(
        matches!(&create, Err(kube::Error::Api(s)) if s.code == 403),
        "create was not granted: {create:?}"
    );
    let secrets = reader_secrets.list(&ListParams::default()).await;
    assert!(
        matches!(&secrets, Err(kube::Error::Api(s)) if s.code == 403),
        "secrets were not granted: {secrets:?}"
    );
    assert!(
        forbidden(reader_default_cms.list(&ListParams::default()).await),
        "the grant is limited to the test namespace"
    );
}
