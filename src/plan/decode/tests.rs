use serde_json::json;

use super::*;

/// A CSV the way real bundles ship them: unknown fields, explicit nulls, required strings left out.
fn messy_csv() -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "op.v1.0.0", "creationTimestamp": null, "annotations": {"a": "b"}},
        "spec": {
            "displayName": "Op",
            "version": "1.0.0",
            "replaces": null,
            "skips": null,
            "skipRange": ">=0.1.0 <1.0.0",
            "nativeApis": [{"group": "", "version": "v1", "kind": "Pod"}],
            "customresourcedefinitions": {"owned": [{
                "name": "widgets.example.com", "version": "v1", "kind": "Widget",
                "resources": [{"kind": "Deployment", "version": "v1"}],
                "specDescriptors": [{"path": "size", "value": {"min": 1}, "x-descriptors": ["urn:x"]}]
            }]},
            "install": {"strategy": "deployment", "spec": {
                "deployments": [{
                    "name": "op",
                    "labels": {"typo": "for label"},
                    "label": {"app": "op"},
                    "spec": {
                        "selector": {"matchLabels": {"app": "op"}},
                        "template": {
                            "metadata": {"creationTimestamp": null, "labels": {"app": "op"}},
                            "containers": [{"name": "misplaced", "image": "x"}],
                            "spec": {
                                "affinity": null,
                                "nodeSelector": null,
                                "tolerations": null,
                                "containers": [{"name": "op", "image": "op:1", "unknownField": 1}]
                            }
                        }
                    }
                }],
                "permissions": [{"serviceAccountName": "op"}]
            }}
        }
    })
}

#[test]
fn a_csv_loses_unknown_fields_and_nulls_as_upstream_decodes_it() {
    let (typed, value) = csv(&messy_csv()).unwrap();
    assert!(null_paths(&value).is_empty(), "{:?}", null_paths(&value));
    let spec = &value["spec"];
    for unknown in ["skipRange", "nativeApis", "replaces", "skips"] {
        assert!(spec.get(unknown).is_none(), "{unknown} kept");
    }
    assert_eq!(
        spec["nativeAPIs"],
        json!([{"group": "", "version": "v1", "kind": "Pod"}]),
        "Go fills nativeAPIs from nativeApis"
    );
    assert_eq!(typed.spec.native_apis.len(), 1);
    let deployment = &spec["install"]["spec"]["deployments"][0];
    assert!(deployment.get("labels").is_none());
    assert_eq!(deployment["label"], json!({"app": "op"}));
    let template = &deployment["spec"]["template"];
    assert!(
        template.get("containers").is_none(),
        "the misplaced list is dropped"
    );
    assert_eq!(
        template["spec"]["containers"],
        json!([{"name": "op", "image": "op:1"}])
    );
    assert!(template["spec"].get("affinity").is_none());
    assert_eq!(typed.spec.display_name, "Op");
}

#[test]
fn missing_required_fields_read_and_write_as_gos_zero_values() {
    let (typed, value) = csv(&messy_csv()).unwrap();
    let owned = &value["spec"]["customresourcedefinitions"]["owned"][0];
    assert_eq!(
        owned["resources"],
        json!([{"name": "", "kind": "Deployment", "version": "v1"}])
    );
    assert_eq!(
        value["spec"]["install"]["spec"]["permissions"],
        json!([{"serviceAccountName": "op", "rules": []}])
    );
    let crds = typed.spec.custom_resource_definitions.unwrap();
    assert_eq!(crds.owned[0].resources[0].name, "");
}

#[test]
fn absent_spec_structs_are_written_as_gos_zero_structs_like_upstreams_installed_csvs() {
    let (_, value) = csv(&json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "x.v1"},
        "spec": {"install": {"strategy": "deployment", "spec": {"deployments": []}}},
    }))
    .unwrap();
    assert_eq!(value["spec"]["apiservicedefinitions"], json!({}));
    assert_eq!(value["spec"]["customresourcedefinitions"], json!({}));
    assert_eq!(value["spec"]["provider"], json!({}));
    assert_eq!(value["spec"]["cleanup"], json!({"enabled": false}));
}

#[test]
fn descriptor_values_and_csv_annotations_are_kept() {
    let (_, value) = csv(&messy_csv()).unwrap();
    let descriptor = &value["spec"]["customresourcedefinitions"]["owned"][0]["specDescriptors"][0];
    assert_eq!(descriptor["value"], json!({"min": 1}));
    assert_eq!(descriptor["x-descriptors"], json!(["urn:x"]));
    assert_eq!(
        value["metadata"],
        json!({"name": "op.v1.0.0", "annotations": {"a": "b"}})
    );
    assert_eq!(value["apiVersion"], "operators.coreos.com/v1alpha1");
    assert_eq!(value["kind"], "ClusterServiceVersion");
}

#[test]
fn the_round_trip_is_stable() {
    let (_, once) = csv(&messy_csv()).unwrap();
    let (_, twice) = csv(&once).unwrap();
    assert_eq!(once, twice);
}

#[test]
fn a_csv_field_of_the_wrong_type_is_an_error() {
    let mut bad = messy_csv();
    bad["spec"]["keywords"] = json!("not a list");
    assert!(csv(&bad).is_err());
}

#[test]
fn typed_kinds_round_trip_through_their_kubernetes_type() {
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "annotations": null},
        "data": null,
        "extra": "dropped"
    });
    assert_eq!(
        object("", "v1", "ConfigMap", &config_map).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    );
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "r", "labels": null},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "nonsense": true}]
    });
    assert_eq!(
        object("rbac.authorization.k8s.io", "v1", "Role", &role).unwrap()["rules"],
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
    );
}

#[test]
fn crd_schemas_keep_their_free_form_nulls() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com", "creationTimestamp": null},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "level": {"type": "string", "nullable": true, "enum": ["a", null]},
                    "affinity": {"type": "object", "default": {"nodeAffinity": null}}
                }
            }}}]
        },
        "status": {"conditions": null, "storedVersions": null}
    });
    let out = object("apiextensions.k8s.io", "v1", "CustomResourceDefinition", &crd).unwrap();
    let props = &out["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
    assert_eq!(props["level"]["enum"], json!(["a", null]));
    assert_eq!(props["affinity"]["default"], json!({"nodeAffinity": null}));
    assert!(out["metadata"].get("creationTimestamp").is_none());
}

#[test]
fn members_named_in_another_case_fill_their_field_as_go_decodes_them() {
    let mut manifest = messy_csv();
    manifest["metadata"]["Labels"] = json!({"Tier": "gold"});
    let (_, csv) = csv(&manifest).unwrap();
    assert_eq!(csv["metadata"]["labels"], json!({"Tier": "gold"}));

    let service = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"Name": "s"},
        "spec": {"Ports": [{"Port": 443, "targetPort": 8443}]}
    });
    let out = object("", "v1", "Service", &service).unwrap();
    assert_eq!(out["metadata"]["name"], "s");
    assert_eq!(out["spec"]["ports"], json!([{"port": 443, "targetPort": 8443}]));

    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "ws.example.com"},
        "spec": {
            "group": "example.com", "Scope": "Cluster",
            "names": {"plural": "ws", "kind": "W"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "Properties": {"Size": {"Type": "integer"}}
            }}}]
        }
    });
    let out = object("apiextensions.k8s.io", "v1", "CustomResourceDefinition", &crd).unwrap();
    assert_eq!(out["spec"]["scope"], "Cluster");
    assert_eq!(
        out["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"],
        json!({"Size": {"type": "integer"}}),
        "a schema's property names are map keys, kept as written"
    );
}

#[test]
fn other_kinds_only_lose_the_nulls_of_their_metadata() {
    let monitor = json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
        "metadata": {"name": "m", "labels": null},
        "spec": {"endpoints": [{"port": "http", "scheme": null}], "custom": 1}
    });
    assert_eq!(
        object("monitoring.coreos.com", "v1", "ServiceMonitor", &monitor).unwrap(),
        json!({
            "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": "m"},
            "spec": {"endpoints": [{"port": "http", "scheme": null}], "custom": 1}
        })
    );
    assert!(!is_typed("rbac.authorization.k8s.io", "v1beta1", "Role"));
}

#[test]
fn null_paths_name_every_null() {
    assert_eq!(
        null_paths(&json!({"a": null, "b": [{"c": null}], "d": 1})),
        vec![".a".to_owned(), ".b[].c".to_owned()]
    );
}

/// Every CSV of every bundle of the certified-operators corpus catalog (`v4.16`, 52 packages,
/// 403 bundles, all inlined) decodes into our CSV type, plans into steps, and the CSV the plan
/// applies has no `null`, no field the CSV CRD does not declare, and every field it requires.
mod corpus {
    use std::{
        collections::{BTreeMap, BTreeSet},
        path::{Path, PathBuf},
        process::Command,
    };

    use serde_json::Value;

    use crate::{
        catalog::model::Model,
        plan::steps::{CSV_KIND, StepsInput, bundle_steps},
    };

    /// Packages whose shipped CSVs upstream decodes but a literal apply (or our old CSV type)
    /// refused, each with one of the problems its CSVs carry.
    const PREVIOUSLY_FAILING: &[(&str, &str)] = &[
        ("trident-operator", ".metadata.capabilities: not declared"),
        ("hspc-operator", ".metadata.creationTimestamp: null"),
        (
            "xspc-operator",
            ".spec.install.spec.deployments[].spec.template.metadata.creationTimestamp: null",
        ),
        (
            "k8s-triliovault",
            ".spec.install.spec.deployments[].labels: not declared",
        ),
        (
            "victoriametrics-operator",
            ".spec.install.spec.deployments[].spec.template.containers: not declared",
        ),
        (
            "couchbase-enterprise-certified",
            ".spec.customresourcedefinitions.owned[].resources[].name: required, missing",
        ),
        ("dxoperator", ".spec.skipRange: not declared"),
        (
            "dxoperator-v2",
            ".spec.customresourcedefinitions.owned[].resources[].name: required, missing",
        ),
        (
            "kurrentdb-operator",
            ".spec.install.spec.deployments[].spec.template.spec.affinity: null",
        ),
        ("kurrentdb-operator", ".spec.nativeApis: not declared"),
        (
            "strategy-operator",
            ".spec.customresourcedefinitions.owned[].resources[].name: required, missing",
        ),
        ("stackable-listener-operator", ".spec.skips: null"),
    ];

    /// ObjectMeta's fields (the CSV CRD schema leaves `metadata` to the API server).
    const OBJECT_META: &[&str] = &[
        "annotations",
        "creationTimestamp",
        "deletionGracePeriodSeconds",
        "deletionTimestamp",
        "finalizers",
        "generateName",
        "generation",
        "labels",
        "managedFields",
        "name",
        "namespace",
        "ownerReferences",
        "resourceVersion",
        "selfLink",
        "uid",
    ];

    /// `<repo>/target/corpus/v4.16`, unpacked from the shared corpus on first use.
    fn corpus_dir() -> Option<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/corpus");
        let dir = root.join("v4.16");
        if dir.is_dir() {
            return Some(dir);
        }
        let archive = [
            std::env::var_os("OLM_CORPUS").map(PathBuf::from),
            Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")),
            Some(PathBuf::from("/work/shared/corpus")),
        ]
        .into_iter()
        .flatten()
        .map(|d| d.join("certified-operators-v4.16.tar.zst"))
        .find(|a| a.is_file())?;
        std::fs::create_dir_all(&root).ok()?;
        let unpacked = Command::new("tar")
            .arg("--zstd")
            .arg("-xf")
            .arg(&archive)
            .arg("-C")
            .arg(&root)
            .status()
            .ok()?;
        (unpacked.success() && dir.is_dir()).then_some(dir)
    }

    fn csv_schema() -> Value {
        let crd = crate::api::crds()
            .unwrap()
            .into_iter()
            .find(|c| c.spec.names.kind == "ClusterServiceVersion")
            .unwrap();
        let version = crd
            .spec
            .versions
            .into_iter()
            .find(|v| v.name == "v1alpha1")
            .unwrap();
        serde_json::to_value(version.schema.unwrap().open_api_v3_schema.unwrap()).unwrap()
    }

    /// Nulls, undeclared fields and missing required fields of `value` against `schema`.
    fn check(value: &Value, schema: &Value, path: &str, out: &mut Vec<String>) {
        if value.is_null() {
            out.push(format!("{path}: null"));
            return;
        }
        if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
            || schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
        {
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                    for (k, v) in map {
                        match properties.get(k) {
                            Some(s) => check(v, s, &format!("{path}.{k}"), out),
                            None => out.push(format!("{path}.{k}: not declared")),
                        }
                    }
                    for r in schema
                        .get("required")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                    {
                        if !map.contains_key(r) {
                            out.push(format!("{path}.{r}: required, missing"));
                        }
                    }
                } else if let Some(values) = schema.get("additionalProperties").filter(|s| s.is_object()) {
                    for (k, v) in map {
                        check(v, values, &format!("{path}.{k}"), out);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = schema.get("items") {
                    for v in items {
                        check(v, item, &format!("{path}[]"), out);
                    }
                }
            }
            _ => {}
        }
    }

    fn problems(csv: &Value, schema: &Value) -> Vec<String> {
        let mut out = Vec::new();
        for (k, v) in csv.as_object().into_iter().flatten() {
            match k.as_str() {
                "apiVersion" | "kind" => {}
                "metadata" => {
                    for (field, value) in v.as_object().into_iter().flatten() {
                        if !OBJECT_META.contains(&field.as_str()) {
                            out.push(format!(".metadata.{field}: not declared"));
                        }
                        out.extend(
                            super::null_paths(value)
                                .iter()
                                .map(|p| format!(".metadata.{field}{p}: null")),
                        );
                    }
                }
                "spec" | "status" => check(v, &schema["properties"][k], &format!(".{k}"), &mut out),
                _ => out.push(format!(".{k}: not declared")),
            }
        }
        out
    }

    #[test]
    fn every_csv_of_the_certified_operators_catalog_applies_as_upstream_decodes_it() {
        let Some(dir) = corpus_dir() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "the corpus catalog v4.16 is missing: the shared corpus must be available in CI"
            );
            eprintln!("skipping: corpus catalog v4.16 not found");
            return;
        };
        let model = Model::from_config(crate::source::load_path(&dir).unwrap().config);
        let schema = csv_schema();
        let (mut csvs, mut raw_problems, mut failures) = (0, BTreeMap::new(), Vec::new());
        for bundle in model.packages().flat_map(|p| p.bundles()) {
            let objects: Vec<Value> = bundle.objects().into_iter().map(Result::unwrap).collect();
            let raw = objects
                .iter()
                .find(|o| o["kind"] == CSV_KIND)
                .unwrap_or_else(|| panic!("{} has no inlined CSV", bundle.name));
            csvs += 1;
            let found = problems(raw, &schema);
            if !found.is_empty() {
                raw_problems
                    .entry(bundle.package.clone())
                    .or_insert_with(BTreeSet::new)
                    .extend(found);
            }
            if let Err(e) = super::csv(raw) {
                failures.push(format!("{}: decode: {e}", bundle.name));
                continue;
            }
            let steps = match bundle_steps(&StepsInput {
                manifests: &objects,
                namespace: "operators",
                package: &bundle.package,
                ..Default::default()
            }) {
                Ok(steps) => steps,
                Err(e) => {
                    failures.push(format!("{}: steps: {e}", bundle.name));
                    continue;
                }
            };
            for step in steps {
                let manifest: Value =
                    serde_json::from_str(step.resource.manifest.as_deref().unwrap()).unwrap();
                if step.resource.kind == CSV_KIND {
                    let left = problems(&manifest, &schema);
                    if !left.is_empty() {
                        failures.push(format!("{}: applied CSV: {left:?}", bundle.name));
                    }
                } else if super::is_typed(&step.resource.group, &step.resource.version, &step.resource.kind)
                    || step.resource.kind == "BundleSecret"
                {
                    let nulls = if step.resource.kind == "CustomResourceDefinition" {
                        super::null_paths(&manifest["metadata"])
                    } else {
                        super::null_paths(&manifest)
                    };
                    if !nulls.is_empty() {
                        failures.push(format!("{} {}: nulls {nulls:?}", bundle.name, step.resource.name));
                    }
                }
            }
        }
        assert_eq!(csvs, 403, "every bundle of the catalog has an inlined CSV");
        assert!(failures.is_empty(), "{failures:#?}");
        for (package, problem) in PREVIOUSLY_FAILING {
            assert!(
                raw_problems
                    .get(*package)
                    .is_some_and(|found| found.contains(*problem)),
                "{package}'s shipped CSVs should carry {problem:?}; found {:#?}",
                raw_problems.get(*package)
            );
        }
    }
}
