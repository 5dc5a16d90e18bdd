use super::*;

const ANNOTATIONS: &str = "\
annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: demo
  operators.operatorframework.io.bundle.channels.v1: stable, candidate
  operators.operatorframework.io.bundle.channel.default.v1: stable
";

const CSV: &str = "\
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo.v1.2.0
  annotations:
    olm.properties: '[{\"type\":\"olm.maxOpenShiftVersion\",\"value\":\"4.20\"}]'
spec:
  version: 1.2.0
  relatedImages:
    - name: operand
      image: quay.io/demo/operand:1.2.0
  install:
    strategy: deployment
    spec:
      deployments:
        - name: demo
          spec:
            template:
              spec:
                initContainers:
                  - name: init
                    image: quay.io/demo/init:1
                containers:
                  - name: manager
                    image: quay.io/demo/operator:1.2.0
  customresourcedefinitions:
    owned:
      - name: widgets.demo.example.com
        version: v1
        kind: Widget
    required:
      - name: gadgets.other.example.com
        version: v2
        kind: Gadget
";

const CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.demo.example.com
spec:
  group: demo.example.com
  names:
    kind: Widget
    plural: widgets
  versions:
    - name: v1
      served: true
      storage: true
    - name: v1beta1
      served: false
      storage: false
";

fn tree() -> FileTree {
    [
        ("metadata/annotations.yaml", ANNOTATIONS),
        ("manifests/demo.clusterserviceversion.yaml", CSV),
        ("manifests/widgets.crd.yaml", CRD),
    ]
    .into_iter()
    .collect()
}

fn types(props: &[Value]) -> Vec<&str> {
    props.iter().map(|p| p["type"].as_str().unwrap()).collect()
}

#[test]
fn a_complete_bundle_parses_with_its_annotations_and_csv() {
    let b = Bundle::parse(&tree()).unwrap();
    assert_eq!(b.name, "demo.v1.2.0");
    assert_eq!(b.version.to_string(), "1.2.0");
    assert_eq!(b.annotations.package, "demo");
    assert_eq!(b.annotations.channels, ["stable", "candidate"]);
    assert_eq!(b.annotations.default_channel.as_deref(), Some("stable"));
    assert_eq!(b.csv().kind(), "ClusterServiceVersion");
    assert_eq!(b.crds().count(), 1);
}

#[test]
fn rendering_derives_package_gvk_required_and_object_properties_in_opm_order() {
    let b = Bundle::parse(&tree()).unwrap();
    let props = b.fbc_properties();
    assert_eq!(
        types(&props),
        [
            "olm.gvk",
            "olm.gvk",
            "olm.gvk.required",
            "olm.maxOpenShiftVersion",
            "olm.package",
            "olm.bundle.object",
            "olm.bundle.object"
        ]
    );
    assert_eq!(
        props[0]["value"],
        json!({"group": "demo.example.com", "kind": "Widget", "version": "v1"})
    );
    assert_eq!(
        props[1]["value"]["version"], "v1beta1",
        "every CRD version is provided, served or not"
    );
    assert_eq!(
        props[2]["value"],
        json!({"group": "other.example.com", "kind": "Gadget", "version": "v2"})
    );
    assert_eq!(
        props[4]["value"],
        json!({"packageName": "demo", "version": "1.2.0"})
    );
}

#[test]
fn inlined_objects_are_base64_json_with_sorted_keys() {
    let b = Bundle::parse(&tree()).unwrap();
    let objects: Vec<Value> = b
        .fbc_properties()
        .iter()
        .filter(|p| p["type"] == "olm.bundle.object")
        .map(|p| {
            let data = base64::engine::general_purpose::STANDARD
                .decode(p["value"]["data"].as_str().unwrap())
                .unwrap();
            let text = String::from_utf8(data).unwrap();
            assert!(text.starts_with("{\"apiVersion\":"), "keys are sorted: {text}");
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    let kinds: BTreeSet<&str> = objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["ClusterServiceVersion", "CustomResourceDefinition"])
    );
    assert!(
        objects
            .iter()
            .any(|o| o == &serde_json::from_str::<Value>(&json!(b.csv().object).to_string()).unwrap())
    );
}

#[test]
fn related_images_list_csv_images_and_deployment_images_sorted() {
    let b = Bundle::parse(&tree()).unwrap();
    let rendered = b.related_images();
    let images: Vec<(&str, &str)> = rendered
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["image"].as_str().unwrap()))
        .collect();
    assert_eq!(
        images,
        [
            ("", "quay.io/demo/init:1"),
            ("operand", "quay.io/demo/operand:1.2.0"),
            ("", "quay.io/demo/operator:1.2.0")
        ]
    );
}

#[test]
fn the_rendered_document_is_an_olm_bundle_without_image() {
    let doc = Bundle::parse(&tree()).unwrap().render();
    let keys: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["schema", "name", "package", "properties", "relatedImages"]);
    assert_eq!(doc["schema"], "olm.bundle");
    assert_eq!(doc["package"], "demo");
}

#[test]
fn dependencies_become_required_properties() {
    let mut t = tree();
    t.insert(
        "metadata/dependencies.yaml",
        "dependencies:\n- type: olm.package\n  value: {packageName: etcd, version: '>=0.9.0'}\n\
         - type: olm.gvk\n  value: {group: etcd.database.coreos.com, kind: EtcdCluster, version: v1beta2}\n\
         - type: olm.label\n  value: {label: fast}\n",
    );
    t.insert(
        "metadata/properties.yaml",
        "properties:\n- type: olm.package\n  value: {packageName: demo, version: 1.2.0}\n",
    );
    let props = Bundle::parse(&t).unwrap().fbc_properties();
    let find = |ty: &str| {
        props
            .iter()
            .filter(|p| p["type"] == ty)
            .map(|p| p["value"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        find("olm.package.required"),
        [json!({"packageName": "etcd", "versionRange": ">=0.9.0"})]
    );
    assert_eq!(find("olm.gvk.required").len(), 2);
    assert_eq!(find("olm.label"), [json!({"label": "fast"})]);
    assert_eq!(
        find("olm.package").len(),
        1,
        "the declared olm.package replaces the derived one"
    );
}

#[test]
fn missing_annotations_file_is_reported_with_the_expected_path() {
    let mut t = tree();
    t.files.remove("metadata/annotations.yaml");
    let err = Bundle::parse(&t).unwrap_err();
    assert!(matches!(err, BundleError::MissingAnnotations));
    assert!(err.to_string().contains("metadata/annotations.yaml not found"));
}

#[test]
fn every_required_annotation_is_checked() {
    for key in [
        MEDIATYPE_KEY,
        MANIFESTS_KEY,
        METADATA_KEY,
        PACKAGE_KEY,
        CHANNELS_KEY,
    ] {
        let text: String = ANNOTATIONS
            .lines()
            .filter(|l| !l.contains(&format!("{key}:")))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut t = tree();
        t.insert("metadata/annotations.yaml", text);
        let err = Bundle::parse(&t).unwrap_err();
        assert!(
            matches!(err, BundleError::MissingAnnotation { key: k, .. } if k == key),
            "removing {key} gave {err}"
        );
    }
}

#[test]
fn channels_made_only_of_commas_are_rejected() {
    let mut t = tree();
    t.insert(
        "metadata/annotations.yaml",
        ANNOTATIONS.replace("stable, candidate", "' , '"),
    );
    assert!(matches!(
        Bundle::parse(&t).unwrap_err(),
        BundleError::MissingAnnotation {
            key: CHANNELS_KEY,
            ..
        }
    ));
}

#[test]
fn helm_and_plain_media_types_are_rejected() {
    let mut t = tree();
    t.insert(
        "metadata/annotations.yaml",
        ANNOTATIONS.replace("registry+v1", "helm"),
    );
    let err = Bundle::parse(&t).unwrap_err();
    assert_eq!(
        err.to_string(),
        "metadata/annotations.yaml: annotation operators.operatorframework.io.bundle.mediatype.v1 is \"helm\"; \
         only \"registry+v1\" bundles are supported"
    );
}

#[test]
fn an_unsupported_kind_is_rejected_with_the_supported_list() {
    let mut t = tree();
    t.insert(
        "manifests/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n",
    );
    let err = Bundle::parse(&t).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("manifests/deploy.yaml: kind Deployment (x) is not supported"),
        "{text}"
    );
    assert!(text.contains("ClusterServiceVersion, CustomResourceDefinition, Secret"));
}

#[test]
fn two_csvs_are_rejected_naming_both_files() {
    let mut t = tree();
    t.insert(
        "manifests/other.csv.yaml",
        CSV.replace("demo.v1.2.0", "demo.v1.3.0"),
    );
    let err = Bundle::parse(&t).unwrap_err();
    assert!(
        matches!(&err, BundleError::MultipleClusterServiceVersions { paths } if paths.len() == 2),
        "{err}"
    );
}

#[test]
fn a_bundle_without_csv_is_rejected() {
    let t: FileTree = [
        ("metadata/annotations.yaml", ANNOTATIONS),
        ("manifests/widgets.crd.yaml", CRD),
    ]
    .into_iter()
    .collect();
    assert!(matches!(
        Bundle::parse(&t).unwrap_err(),
        BundleError::NoClusterServiceVersion
    ));
}

#[test]
fn an_owned_crd_missing_from_the_bundle_is_rejected() {
    let mut t = tree();
    t.insert(
        "manifests/widgets.crd.yaml",
        CRD.replace("- name: v1\n", "- name: v2\n"),
    );
    let err = Bundle::parse(&t).unwrap_err();
    assert!(
        err.to_string()
            .contains("widgets.demo.example.com/v1 (Widget) not shipped"),
        "{err}"
    );
}

#[test]
fn a_non_semver_version_is_rejected() {
    let mut t = tree();
    t.insert(
        "manifests/demo.clusterserviceversion.yaml",
        CSV.replace("version: 1.2.0", "version: v1.2"),
    );
    let err = Bundle::parse(&t).unwrap_err();
    assert!(
        matches!(err, BundleError::InvalidVersion { ref version, .. } if version == "v1.2"),
        "{err}"
    );
}

#[test]
fn broken_yaml_names_the_file() {
    let mut t = tree();
    t.insert("manifests/widgets.crd.yaml", "kind: [unclosed\n");
    let err = Bundle::parse(&t).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("failed to decode manifests/widgets.crd.yaml"),
        "{err}"
    );
}

#[test]
fn files_in_subdirectories_of_manifests_are_ignored() {
    let mut t = tree();
    t.insert("manifests/extra/notes.yaml", "not: an object");
    assert!(Bundle::parse(&t).is_ok());
}

#[test]
fn an_empty_manifests_directory_is_rejected() {
    let t: FileTree = [("metadata/annotations.yaml", ANNOTATIONS)].into_iter().collect();
    assert!(matches!(Bundle::parse(&t).unwrap_err(), BundleError::NoManifests));
}
