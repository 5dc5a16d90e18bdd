//! Tests of the pure parts of [`crate::grpc`]: model → messages, the queries, messages → model.

use base64::Engine as _;
use serde_json::{Value, json};

use super::{
    api,
    convert::{self, canonical_json, catalog_from_messages},
    query::{IndexError, QueryError, Registry},
};
use crate::catalog::{DeclarativeConfig, Model};

fn b64(value: &Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(value.to_string())
}

fn csv_v1() -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "etcd.v1.0.0"},
        "spec": {"version": "1.0.0", "relatedImages": [{"name": "op", "image": "quay.io/etcd/op:v1"}]},
    })
}

fn catalog_text() -> String {
    let crd = json!({"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
        "metadata": {"name": "etcdclusters.etcd.database.coreos.com"}});
    format!(
        r#"{{"schema":"olm.package","name":"etcd","defaultChannel":"stable","description":"The etcd operator.",
  "icon":{{"base64data":"PHN2Zy8+","mediatype":"image/svg+xml"}}}}
{{"schema":"olm.channel","package":"etcd","name":"stable","entries":[
  {{"name":"etcd.v1.0.0"}},
  {{"name":"etcd.v1.1.0","replaces":"etcd.v1.0.0","skips":["etcd.v0.9.0"],"skipRange":">=0.9.0 <1.1.0"}}]}}
{{"schema":"olm.channel","package":"etcd","name":"alpha","entries":[{{"name":"etcd.v1.1.0"}}]}}
{{"schema":"olm.bundle","package":"etcd","name":"etcd.v1.0.0","image":"quay.io/etcd/bundle:v1.0.0","properties":[
  {{"type":"olm.package","value":{{"packageName":"etcd","version":"1.0.0"}}}},
  {{"type":"olm.gvk","value":{{"group":"etcd.database.coreos.com","version":"v1beta2","kind":"EtcdCluster"}}}},
  {{"type":"olm.bundle.object","value":{{"data":"{crd}"}}}},
  {{"type":"olm.bundle.object","value":{{"data":"{csv}"}}}}]}}
{{"schema":"olm.bundle","package":"etcd","name":"etcd.v1.1.0","image":"","properties":[
  {{"type":"olm.package","value":{{"packageName":"etcd","version":"1.1.0"}}}},
  {{"type":"olm.gvk","value":{{"group":"etcd.database.coreos.com","version":"v1beta2","kind":"EtcdCluster"}}}},
  {{"type":"olm.gvk.required","value":{{"group":"monitoring.coreos.com","version":"v1","kind":"ServiceMonitor"}}}},
  {{"type":"olm.package.required","value":{{"packageName":"other","versionRange":">=1.0.0"}}}},
  {{"type":"olm.csv.metadata","value":{{"displayName":"Etcd","keywords":["kv"],"installModes":[{{"type":"AllNamespaces","supported":true}}]}}}},
  {{"type":"vendor.label","value":{{"b":1,"a":{{"z":true,"y":null}}}}}}],
  "relatedImages":[{{"name":"op","image":"quay.io/etcd/op:v1.1"}}]}}
{{"schema":"olm.package","name":"other","defaultChannel":"stable"}}
{{"schema":"olm.channel","package":"other","name":"stable","entries":[{{"name":"other.v1.0.0"}}]}}
{{"schema":"olm.bundle","package":"other","name":"other.v1.0.0","image":"quay.io/other/bundle:v1","properties":[
  {{"type":"olm.package","value":{{"packageName":"other","version":"1.0.0"}}}},
  {{"type":"olm.gvk","value":{{"group":"etcd.database.coreos.com","version":"v1beta2","kind":"EtcdCluster"}}}}]}}
{{"schema":"olm.deprecations","package":"etcd","entries":[
  {{"reference":{{"schema":"olm.channel","name":"alpha"}},"message":"use stable"}}]}}
"#,
        crd = b64(&crd),
        csv = b64(&csv_v1()),
    )
}

fn model() -> Model {
    let (cfg, problems) = DeclarativeConfig::from_str_with_problems("catalog.json", &catalog_text());
    assert!(problems.is_empty(), "{problems:?}");
    let (model, problems) = Model::build(cfg);
    assert!(problems.is_empty(), "{problems:?}");
    model
}

fn registry() -> Registry {
    Registry::new(model()).unwrap()
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn a_bundle_with_inlined_manifests_serves_them_as_json_and_its_csv_as_csv_json() {
    let bundle = registry().get_bundle("etcd", "stable", "etcd.v1.0.0").unwrap();
    assert_eq!(bundle.csv_name, "etcd.v1.0.0");
    assert_eq!(bundle.package_name, "etcd");
    assert_eq!(bundle.channel_name, "stable");
    assert_eq!(bundle.bundle_path, "quay.io/etcd/bundle:v1.0.0");
    assert_eq!(bundle.version, "1.0.0");
    assert_eq!(bundle.object.len(), 2);
    assert_eq!(parse(&bundle.csv_json), csv_v1());
    // Keys are sorted, as opm's yaml.ToJSON writes them.
    assert_eq!(bundle.csv_json, canonical_json(&csv_v1()));
    assert!(
        bundle.csv_json.starts_with(r#"{"apiVersion":"#),
        "{}",
        bundle.csv_json
    );
    assert_eq!(bundle.object[1], bundle.csv_json);
    let types: Vec<&str> = bundle.properties.iter().map(|p| p.r#type.as_str()).collect();
    assert_eq!(
        types,
        ["olm.package", "olm.gvk"],
        "manifests are never properties"
    );
    assert_eq!(
        bundle.provided_apis,
        [api::GroupVersionKind {
            group: "etcd.database.coreos.com".into(),
            version: "v1beta2".into(),
            kind: "EtcdCluster".into(),
            plural: String::new(),
        }]
    );
}

#[test]
fn list_bundles_drops_the_manifests_of_bundles_with_an_image_and_keeps_the_edges() {
    let listed = registry().list_bundles().unwrap();
    let keys: Vec<(&str, &str, &str)> = listed
        .iter()
        .map(|b| {
            (
                b.package_name.as_str(),
                b.channel_name.as_str(),
                b.csv_name.as_str(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("etcd", "alpha", "etcd.v1.1.0"),
            ("etcd", "stable", "etcd.v1.0.0"),
            ("etcd", "stable", "etcd.v1.1.0"),
            ("other", "stable", "other.v1.0.0"),
        ]
    );
    let v100 = &listed[1];
    assert!(v100.csv_json.is_empty() && v100.object.is_empty(), "{v100:?}");
    let v110 = &listed[2];
    assert_eq!(v110.replaces, "etcd.v1.0.0");
    assert_eq!(v110.skips, ["etcd.v0.9.0"]);
    assert_eq!(v110.skip_range, ">=0.9.0 <1.1.0");
    assert!(!v110.csv_json.is_empty(), "no image: the (stub) CSV is served");
    // The same bundle in another channel has that channel's edges (none).
    assert!(listed[0].replaces.is_empty() && listed[0].skips.is_empty());
}

#[test]
fn single_bundle_queries_leave_out_replaces_and_skips() {
    let bundle = registry().get_bundle("etcd", "stable", "etcd.v1.1.0").unwrap();
    assert!(bundle.replaces.is_empty() && bundle.skips.is_empty());
    assert_eq!(bundle.skip_range, ">=0.9.0 <1.1.0");
}

#[test]
fn a_bundle_with_only_csv_metadata_gets_the_stub_csv_opm_builds() {
    let bundle = registry().get_bundle("etcd", "alpha", "etcd.v1.1.0").unwrap();
    let csv = parse(&bundle.csv_json);
    assert_eq!(csv["kind"], "ClusterServiceVersion");
    assert_eq!(csv["metadata"]["name"], "etcd.v1.1.0");
    assert_eq!(csv["spec"]["displayName"], "Etcd");
    assert_eq!(csv["spec"]["version"], "1.1.0");
    assert_eq!(csv["spec"]["install"]["strategy"], "deployment");
    assert_eq!(csv["spec"]["keywords"], json!(["kv"]));
    assert_eq!(
        csv["spec"]["installModes"],
        json!([{"type": "AllNamespaces", "supported": true}])
    );
    assert_eq!(
        csv["spec"]["description"], "The etcd operator.",
        "package description"
    );
    assert_eq!(
        csv["spec"]["icon"],
        json!([{"base64data": "PHN2Zy8+", "mediatype": "image/svg+xml"}])
    );
    assert_eq!(
        csv["spec"]["relatedImages"],
        json!([{"name": "op", "image": "quay.io/etcd/op:v1.1"}])
    );
    assert_eq!(bundle.object.len(), 1, "the stub is the only object");
    assert_eq!(bundle.object[0], bundle.csv_json);
    let types: Vec<&str> = bundle.properties.iter().map(|p| p.r#type.as_str()).collect();
    assert!(!types.contains(&"olm.csv.metadata"), "{types:?}");
}

#[test]
fn requirements_become_dependencies_and_property_values_are_canonical_json() {
    let bundle = registry().get_bundle("etcd", "stable", "etcd.v1.1.0").unwrap();
    let deps: Vec<(&str, Value)> = bundle
        .dependencies
        .iter()
        .map(|d| (d.r#type.as_str(), parse(&d.value)))
        .collect();
    assert_eq!(
        deps,
        [
            (
                "olm.gvk",
                json!({"group": "monitoring.coreos.com", "version": "v1", "kind": "ServiceMonitor"})
            ),
            (
                "olm.package",
                json!({"packageName": "other", "version": ">=1.0.0"})
            ),
        ]
    );
    assert_eq!(bundle.required_apis.len(), 1);
    let label = bundle
        .properties
        .iter()
        .find(|p| p.r#type == "vendor.label")
        .unwrap();
    assert_eq!(label.value, r#"{"a":{"y":null,"z":true},"b":1}"#);
    let required = bundle
        .properties
        .iter()
        .find(|p| p.r#type == "olm.package.required")
        .unwrap();
    assert_eq!(
        required.value,
        r#"{"packageName":"other","versionRange":">=1.0.0"}"#
    );
}

#[test]
fn get_package_lists_channels_by_name_with_heads_and_deprecations() {
    let package = registry().get_package("etcd").unwrap();
    assert_eq!(package.default_channel_name, "stable");
    let channels: Vec<(&str, &str, Option<&str>)> = package
        .channels
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.csv_name.as_str(),
                c.deprecation.as_ref().map(|d| d.message.as_str()),
            )
        })
        .collect();
    assert_eq!(
        channels,
        [
            ("alpha", "etcd.v1.1.0", Some("use stable")),
            ("stable", "etcd.v1.1.0", None)
        ]
    );
    assert_eq!(registry().list_packages(), ["etcd", "other"]);
}

#[test]
fn unknown_names_are_not_found_with_upstream_messages() {
    let r = registry();
    let message = |e: QueryError| e.to_string();
    assert_eq!(
        message(r.get_package("nope").unwrap_err()),
        r#"package "nope" not found"#
    );
    assert_eq!(
        message(r.get_bundle("etcd", "beta", "x").unwrap_err()),
        r#"package "etcd", channel "beta" not found"#
    );
    assert_eq!(
        message(r.get_bundle("etcd", "stable", "x").unwrap_err()),
        r#"package "etcd", channel "stable", bundle "x" not found"#
    );
    assert_eq!(
        message(
            r.get_bundle_that_replaces("etcd.v1.1.0", "etcd", "stable")
                .unwrap_err()
        ),
        r#"no entry found for package "etcd", channel "stable""#
    );
    assert_eq!(
        message(r.get_channel_entries_that_replace("x").unwrap_err()),
        "no channel entries found that replace x"
    );
    assert_eq!(
        message(r.get_default_bundle_that_provides("g", "v", "K").unwrap_err()),
        r#"no channel entries found that provide group:"g" version:"v" kind:"K""#
    );
}

#[test]
fn heads_and_replacements_follow_the_channel_graph() {
    let r = registry();
    assert_eq!(
        r.get_bundle_for_channel("etcd", "stable").unwrap().csv_name,
        "etcd.v1.1.0"
    );
    for replaced in ["etcd.v1.0.0", "etcd.v0.9.0"] {
        let b = r.get_bundle_that_replaces(replaced, "etcd", "stable").unwrap();
        assert_eq!(b.csv_name, "etcd.v1.1.0");
    }
    let entries = r.get_channel_entries_that_replace("etcd.v0.9.0").unwrap();
    // One entry for the skip, carrying the entry's own replaces (as upstream).
    assert_eq!(
        entries,
        [convert::entry_message(
            "etcd",
            "stable",
            "etcd.v1.1.0",
            "etcd.v1.0.0"
        )]
    );
}

#[test]
fn providers_give_one_edge_per_replaces_and_skip_and_the_latest_only_heads() {
    let r = registry();
    let (g, v, k) = ("etcd.database.coreos.com", "v1beta2", "EtcdCluster");
    let all = r.get_channel_entries_that_provide(g, v, k).unwrap();
    let edges: Vec<(&str, &str, &str)> = all
        .iter()
        .map(|e| {
            (
                e.channel_name.as_str(),
                e.bundle_name.as_str(),
                e.replaces.as_str(),
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            ("alpha", "etcd.v1.1.0", ""),
            ("stable", "etcd.v1.0.0", ""),
            ("stable", "etcd.v1.1.0", "etcd.v1.0.0"),
            ("stable", "etcd.v1.1.0", "etcd.v0.9.0"),
            ("stable", "other.v1.0.0", ""),
        ]
    );
    let latest = r.get_latest_channel_entries_that_provide(g, v, k).unwrap();
    let edges: Vec<(&str, &str, &str)> = latest
        .iter()
        .map(|e| {
            (
                e.channel_name.as_str(),
                e.bundle_name.as_str(),
                e.replaces.as_str(),
            )
        })
        .collect();
    // etcd.v0.9.0 is not in the channel: the latest view leaves that skip out.
    assert_eq!(
        edges,
        [
            ("alpha", "etcd.v1.1.0", ""),
            ("stable", "etcd.v1.1.0", "etcd.v1.0.0"),
            ("stable", "other.v1.0.0", ""),
        ]
    );
    let default = r.get_default_bundle_that_provides(g, v, k).unwrap();
    assert_eq!(
        (default.package_name.as_str(), default.channel_name.as_str()),
        ("etcd", "stable")
    );
    assert_eq!(default.csv_name, "etcd.v1.1.0");
}

/// `lenient` and `shared` serve what `new` would refuse without its broken channels (and the
/// packages left without their default channel), naming each part left out; a servable catalog
/// is shared, not copied.
#[test]
fn a_model_with_a_broken_channel_is_served_without_it_naming_what_was_left_out() {
    let text = r#"{"schema":"olm.package","name":"b","defaultChannel":"s"}
{"schema":"olm.channel","package":"b","name":"s","entries":[{"name":"b.v1"},{"name":"b.v2"}]}
{"schema":"olm.bundle","package":"b","name":"b.v1","image":"r/b:1","properties":[{"type":"olm.package","value":{"packageName":"b","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"b","name":"b.v2","image":"r/b:2","properties":[{"type":"olm.package","value":{"packageName":"b","version":"2.0.0"}}]}"#;
    let (mut cfg, problems) = DeclarativeConfig::from_str_with_problems("c.json", &catalog_text());
    assert!(problems.is_empty(), "{problems:?}");
    let (broken, problems) = DeclarativeConfig::from_str_with_problems("b.json", text);
    assert!(problems.is_empty(), "{problems:?}");
    cfg.merge(broken);
    let model = Model::from_config(cfg);
    assert!(Registry::new(model.clone()).is_err());
    let (lenient, skipped) = Registry::lenient(model.clone());
    assert_eq!(lenient.list_packages(), ["etcd", "other"]);
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped[0].starts_with(r#"channel left out: package "b" channel "s""#),
        "{skipped:?}"
    );
    assert!(skipped[1].starts_with(r#"package "b" left out"#), "{skipped:?}");
    assert_eq!(lenient.listed_len(), registry().listed_len());

    let catalog = |model| {
        std::sync::Arc::new(crate::catalog::load::LoadedCatalog {
            origin: crate::catalog::load::CatalogOrigin::ConfigMap {
                resource_version: "1".to_owned(),
            },
            model,
            problems: Vec::new(),
        })
    };
    let (shared, skipped) = Registry::shared(catalog(model));
    assert_eq!(shared.list_packages(), ["etcd", "other"]);
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    let whole = catalog(lenient.model().clone());
    let (shared, skipped) = Registry::shared(std::sync::Arc::clone(&whole));
    assert!(skipped.is_empty(), "{skipped:?}");
    assert!(std::ptr::eq(shared.model(), &whole.model), "shared, not copied");
}

#[test]
fn a_model_with_an_entry_without_its_bundle_is_refused_naming_it() {
    let text = r#"{"schema":"olm.package","name":"p","defaultChannel":"s"}
{"schema":"olm.channel","package":"p","name":"s","entries":[{"name":"p.v1"}]}"#;
    let (cfg, _) = DeclarativeConfig::from_str_with_problems("c.json", text);
    let errors = Registry::new(Model::from_config(cfg)).unwrap_err();
    assert!(
        errors.contains(&IndexError::MissingBundle {
            package: "p".into(),
            channel: "s".into(),
            bundle: "p.v1".into()
        }),
        "{errors:?}"
    );
    assert!(errors[0].to_string().contains("add the bundle"), "{}", errors[0]);
}

#[test]
fn messages_read_back_give_the_same_packages_channels_heads_and_bundles() {
    let r = registry();
    let packages: Vec<api::Package> = r
        .list_packages()
        .iter()
        .map(|n| r.get_package(n).unwrap())
        .collect();
    let rebuilt = catalog_from_messages("grpc://test", &packages, &r.list_bundles().unwrap());
    assert!(rebuilt.problems.is_empty(), "{:?}", rebuilt.problems);
    let (back, problems) = Model::build(rebuilt.config);
    assert!(problems.is_empty(), "{problems:?}");
    let original = r.model();
    assert_eq!(summary(&back), summary(original));
    // Manifests of a bundle without image come back inlined; the CSV's related images too.
    let v110 = back.package("etcd").unwrap().bundle("etcd.v1.1.0").unwrap();
    assert_eq!(v110.csv().unwrap()["spec"]["displayName"], "Etcd");
    assert_eq!(v110.related_images.len(), 1);
    assert_eq!(v110.required_packages()[0].package_name, "other");
    assert_eq!(
        back.package("etcd").unwrap().channel_deprecation("alpha"),
        Some("use stable")
    );
}

/// Packages, default channels, channels with heads and entries, bundles with versions, images,
/// provided and required APIs.
fn summary(model: &Model) -> Vec<String> {
    let mut out = Vec::new();
    for p in model.packages() {
        out.push(format!("package {} default {}", p.name, p.default_channel));
        for c in p.channels() {
            let mut entries: Vec<String> = c
                .entries
                .iter()
                .map(|e| format!("{}<{}|{:?}|{}", e.name, e.replaces, e.skips, e.skip_range))
                .collect();
            entries.sort();
            out.push(format!(
                "channel {}/{} head {:?} {entries:?}",
                p.name,
                c.name,
                c.head()
            ));
        }
        for b in p.bundles() {
            out.push(format!(
                "bundle {} {} {} {:?} {:?} {:?}",
                b.name,
                b.version,
                b.image,
                b.provided_gvks(),
                b.required_gvks(),
                b.channels
            ));
        }
    }
    out
}

#[test]
fn a_head_csv_given_alone_becomes_csv_metadata_with_its_icon_and_the_image_stays_the_source() {
    // What the client makes of `GetBundle` for a head `ListBundles` sent bare: the CSV JSON, no
    // objects. It must describe the bundle (PackageManifests) without passing for inlined
    // manifests (installs still pull the image).
    let r = registry();
    let mut head = r.get_bundle("etcd", "stable", "etcd.v1.0.0").unwrap();
    head.replaces = String::new();
    head.object.clear();
    let mut csv = csv_v1();
    csv["spec"]["displayName"] = json!("Etcd");
    csv["spec"]["nativeApis"] = json!([{"group": "g", "version": "v1", "kind": "K"}]);
    csv["spec"]["icon"] = json!([{"base64data": "PHN2Zy8+", "mediatype": "image/svg+xml"}]);
    head.csv_json = csv.to_string();
    let packages = vec![r.get_package("etcd").unwrap()];
    let rebuilt = catalog_from_messages("grpc://test", &packages, &[head]);
    let (back, _) = Model::build(rebuilt.config);
    let bundle = back.package("etcd").unwrap().bundle("etcd.v1.0.0").unwrap();
    assert!(bundle.properties.bundle_objects.is_empty());
    assert_eq!(bundle.image, "quay.io/etcd/bundle:v1.0.0");
    let metadata = bundle.csv_metadata().unwrap();
    assert_eq!(metadata.display_name, "Etcd");
    assert!(metadata.extra.contains_key("icon"), "{:?}", metadata.extra.keys());
    // Read as Go reads it: `nativeApis` fills nativeAPIs.
    assert!(
        metadata.extra.contains_key("nativeAPIs"),
        "{:?}",
        metadata.extra.keys()
    );
}
