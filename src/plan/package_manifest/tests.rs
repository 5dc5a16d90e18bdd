use std::{collections::BTreeMap, path::Path};

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::table::human_duration;
use super::*;
use crate::catalog::{DeclarativeConfig, Model};

/// The head CSV as the registry API serves it (`GetBundleForChannel`'s `csvJson`): what the
/// shell passes.
fn registry_csv(package: &Package, channel: &Channel, bundle: &Bundle) -> Option<Value> {
    // The inlined CSV (decoding only the manifests up to it), else the registry's stub built
    // from `olm.csv.metadata`.
    if let Some(csv) = bundle.csv() {
        return Some(csv);
    }
    let entry = channel.entry(&bundle.name)?;
    let message = crate::grpc::convert::bundle_message(package, channel, entry, bundle).ok()?;
    serde_json::from_str(&message.csv_json).ok()
}

fn load(path: &Path) -> Model {
    let text = std::fs::read_to_string(path).unwrap();
    let (cfg, problems) = DeclarativeConfig::from_str_with_problems("catalog.json", &text);
    assert!(problems.is_empty(), "{problems:?}");
    let (model, problems) = Model::build(cfg);
    assert!(problems.is_empty(), "{problems:?}");
    model
}

fn source(namespace: &str, name: &str) -> Source {
    Source {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        display_name: format!("{name} display"),
        publisher: "Acme".to_owned(),
        labels: BTreeMap::from([("team".to_owned(), "catalogs".to_owned())]),
        created: Some(Timestamp::from_second(1_800_000_000).unwrap()),
    }
}

/// Each directory under `tests/fixtures/package-manifests/` holds a `catalog.json` and the
/// PackageManifests upstream's rules give for it, served by CatalogSource `olm/operators`
/// (`expected.json`; `BLESS=1` rewrites it, to be read and checked by hand).
#[test]
fn every_fixture_catalog_gives_the_package_manifests_upstream_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/package-manifests");
    let mut cases = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        let model = load(&dir.join("catalog.json"));
        let got =
            serde_json::to_value(manifests(&source("olm", "operators"), &model, &registry_csv)).unwrap();
        let expected_path = dir.join("expected.json");
        if std::env::var("BLESS").is_ok() {
            std::fs::write(&expected_path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
        }
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
        assert_eq!(got, expected, "{}", dir.display());
        cases += 1;
    }
    assert!(cases > 0);
}

fn etcd() -> Vec<PackageManifest> {
    let model = load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/package-manifests/etcd/catalog.json"),
    );
    manifests(&source("olm", "operators"), &model, &registry_csv)
}

#[test]
fn labels_come_from_the_catalog_source_the_provider_and_the_default_head_csv() {
    let all = etcd();
    let etcd = all.iter().find(|m| m.metadata.name == "etcd").unwrap();
    let labels = &etcd.metadata.labels;
    assert_eq!(labels["catalog"], "operators");
    assert_eq!(labels["catalog-namespace"], "olm");
    // The default channel's head (etcd.v0.9.2) gives the provider and its labels, whichever
    // channel comes first by name.
    assert_eq!(labels["provider"], "CNCF");
    assert_eq!(labels["provider-url"], "https://cncf.io");
    assert_eq!(
        labels["team"], "storage",
        "the CSV's label wins over the CatalogSource's"
    );
    // The CSV names an architecture, so amd64 is not added; it names no OS, so linux is.
    assert_eq!(labels.get(DEFAULT_ARCH_LABEL), None);
    assert_eq!(labels["operatorframework.io/arch.arm64"], "supported");
    assert_eq!(labels[DEFAULT_OS_LABEL], "supported");
    assert_eq!(etcd.status.provider.name, "CNCF");
}

#[test]
fn channels_are_sorted_by_name_with_their_heads_and_entries_newest_first() {
    let all = etcd();
    let etcd = all.iter().find(|m| m.metadata.name == "etcd").unwrap();
    let names: Vec<&str> = etcd.status.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["clusterwide-alpha", "singlenamespace-alpha"]);
    let single = &etcd.status.channels[1];
    assert_eq!(single.current_csv, "etcd.v0.9.2");
    // etcd.v0.9.1 carries olm.deprecated: upstream's ListBundles loop skips it.
    let entries: Vec<(&str, &str)> = single
        .entries
        .as_ref()
        .unwrap()
        .iter()
        .map(|e| (e.name.as_str(), e.version.as_str()))
        .collect();
    assert_eq!(entries, [("etcd.v0.9.2", "0.9.2"), ("etcd.v0.9.0", "0.9.0")]);
    assert_eq!(
        single.entries.as_ref().unwrap()[1].deprecation,
        Some(Deprecation {
            message: "etcd.v0.9.0 has a known bug".into()
        })
    );
    assert_eq!(
        etcd.status.channels[0]
            .deprecation
            .as_ref()
            .map(|d| d.message.as_str()),
        Some("clusterwide-alpha is no longer updated")
    );
    assert_eq!(
        etcd.status.deprecation.as_ref().map(|d| d.message.as_str()),
        Some("etcd is deprecated: use etcd-ng")
    );
    // The old CSV's `v0.9` prints as Go's tolerant semver does.
    assert_eq!(etcd.status.channels[0].current_csv_desc.version, "0.9.0");
}

#[test]
fn a_package_without_a_readable_head_is_not_served() {
    let names: Vec<String> = etcd().into_iter().map(|m| m.metadata.name).collect();
    assert_eq!(names, ["etcd", "metadata-only"]);
}

#[test]
fn when_the_default_channel_is_elided_the_first_channel_left_becomes_the_default() {
    let model = load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/package-manifests/etcd/catalog.json"),
    );
    let package = model.package("etcd").unwrap();
    // A registry that cannot read the default channel's head.
    let only_clusterwide = |p: &Package, c: &Channel, b: &Bundle| {
        (c.name == "clusterwide-alpha")
            .then(|| registry_csv(p, c, b))
            .flatten()
    };
    let m = manifest(&source("olm", "operators"), package, &only_clusterwide).unwrap();
    assert_eq!(m.status.default_channel, "clusterwide-alpha");
    assert_eq!(m.status.channels.len(), 1);
    assert_eq!(m.metadata.labels["provider"], "CoreOS, Inc");
    assert_eq!(m.metadata.labels["provider-url"], "");
}

fn three_catalogs() -> Vec<Vec<PackageManifest>> {
    let model = load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/package-manifests/etcd/catalog.json"),
    );
    vec![
        manifests(&source("olm", "global"), &model, &registry_csv),
        manifests(&source("team-a", "mine"), &model, &registry_csv),
        manifests(&source("team-b", "theirs"), &model, &registry_csv),
    ]
}

fn seen(catalogs: &[Vec<PackageManifest>], query: &Query<'_>) -> Vec<(String, String, String)> {
    visible(catalogs.iter().map(Vec::as_slice), "olm", query)
        .into_iter()
        .map(|m| (m.metadata.name, m.metadata.namespace, m.status.catalog_source))
        .collect()
}

#[test]
fn a_namespace_sees_its_own_catalogs_then_the_global_ones_never_another_namespaces() {
    let catalogs = three_catalogs();
    let team_a = Query {
        namespace: Some("team-a"),
        ..Query::default()
    };
    let pairs = |v: &[(&str, &str, &str)]| -> Vec<(String, String, String)> {
        v.iter()
            .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
            .collect()
    };
    assert_eq!(
        seen(&catalogs, &team_a),
        pairs(&[
            ("etcd", "team-a", "mine"),
            ("etcd", "team-a", "global"),
            ("metadata-only", "team-a", "mine"),
            ("metadata-only", "team-a", "global"),
        ])
    );
    // The global namespace sees only its own.
    let olm = Query {
        namespace: Some("olm"),
        ..Query::default()
    };
    assert_eq!(seen(&catalogs, &olm).len(), 2);
    // Every namespace: each object in its catalog's namespace.
    let all = seen(&catalogs, &Query::default());
    assert_eq!(all.len(), 6);
    assert!(all.contains(&("etcd".into(), "team-b".into(), "theirs".into())));
    // A label selector on the catalog, and a field selector on the name.
    let by_catalog = Query {
        namespace: Some("team-a"),
        labels: LabelSelector::parse("catalog=global").unwrap(),
        name: None,
    };
    assert_eq!(
        seen(&catalogs, &by_catalog),
        pairs(&[
            ("etcd", "team-a", "global"),
            ("metadata-only", "team-a", "global")
        ])
    );
    let by_name = Query {
        namespace: Some("team-b"),
        labels: LabelSelector::default(),
        name: FieldSelector::parse("metadata.name=etcd").unwrap().name,
    };
    assert_eq!(
        seen(&catalogs, &by_name),
        pairs(&[("etcd", "team-b", "theirs"), ("etcd", "team-b", "global")])
    );
}

#[test]
fn label_selectors_parse_and_match_as_kubernetes_does() {
    let labels = BTreeMap::from([
        ("catalog".to_owned(), "ops".to_owned()),
        ("provider".to_owned(), "Acme".to_owned()),
        ("tier".to_owned(), "3".to_owned()),
    ]);
    for (selector, expected) in [
        ("", true),
        ("catalog=ops", true),
        ("catalog==ops", true),
        ("catalog!=ops", false),
        ("missing!=x", true),
        ("catalog in (a, ops)", true),
        ("catalog notin (ops)", false),
        ("missing notin (ops)", true),
        ("catalog,provider", true),
        ("!catalog", false),
        ("!missing", true),
        ("tier>2,tier<4", true),
        ("catalog=ops,provider=Other", false),
        ("catalog=", false),
    ] {
        let parsed = LabelSelector::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
        assert_eq!(parsed.matches(&labels), expected, "{selector}");
    }
    for bad in ["catalog in ops", "a b", "x=y z", "tier>x"] {
        assert!(LabelSelector::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn field_selectors_serve_only_an_exact_name() {
    assert_eq!(FieldSelector::parse("").unwrap().name, None);
    assert_eq!(
        FieldSelector::parse("metadata.name==etcd")
            .unwrap()
            .name
            .as_deref(),
        Some("etcd")
    );
    assert_eq!(
        FieldSelector::parse("status.packageName=etcd"),
        Err(SelectorError::UnknownField("status.packageName".into()))
    );
    assert_eq!(
        FieldSelector::parse("metadata.namespace=olm"),
        Err(SelectorError::Unsupported("metadata.namespace".into()))
    );
    assert_eq!(
        FieldSelector::parse("metadata.name!=etcd"),
        Err(SelectorError::Unsupported("metadata.name".into()))
    );
}

#[test]
fn ages_print_as_kubectl_prints_them() {
    for (seconds, expected) in [
        (-5, "<invalid>"),
        (-1, "0s"),
        (1, "1s"),
        (70, "70s"),
        (190, "3m10s"),
        (180, "3m"),
        (70 * 60, "70m"),
        (47 * 3600, "47h"),
        (49 * 3600, "2d1h"),
        ((8 * 24 + 2) * 3600, "8d"),
        (367 * 24 * 3600, "367d"),
        ((365 * 2 + 1) * 24 * 3600, "2y1d"),
        ((365 * 8 + 3) * 24 * 3600, "8y"),
        (5 * 3600 + 7 * 60, "5h7m"),
    ] {
        assert_eq!(human_duration(seconds), expected, "{seconds}");
    }
}

#[test]
fn the_table_has_upstreams_columns_and_the_rows_metadata() {
    let all = etcd();
    let now = Timestamp::from_second(1_800_000_000 + 3 * 60 + 20).unwrap();
    let t = table(&all, now, IncludeObject::Metadata, "v1");
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    let columns: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "Catalog", "Age"]);
    assert_eq!(
        t["rows"][0]["cells"],
        json!(["etcd", "operators display", "3m20s"])
    );
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(t["rows"][0]["object"]["metadata"]["namespace"], "olm");
    assert_eq!(
        t["rows"][0]["object"]["metadata"]["labels"]["catalog"],
        "operators"
    );
    let none = table(&all, now, IncludeObject::None, "v1beta1");
    assert_eq!(none["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(none["rows"][1]["object"], Value::Null);
    let object = table(&all, now, IncludeObject::Object, "v1");
    assert_eq!(object["rows"][1]["object"]["kind"], "PackageManifest");
    assert_eq!(
        object["rows"][1]["object"]["status"]["packageName"],
        "metadata-only"
    );
}

#[test]
fn icons_are_served_by_the_subresource_only() {
    let all = etcd();
    let etcd = all.iter().find(|m| m.metadata.name == "etcd").unwrap();
    let (bytes, media, etag) = icon(etcd).unwrap();
    assert_eq!(bytes, b"<svg/>");
    assert_eq!(media, "image/svg+xml");
    assert_eq!(etag, "\"etcd.singlenamespace-alpha.etcd.v0.9.2\"");
    let stripped = serde_json::to_value(without_icons(etcd.clone())).unwrap();
    assert!(stripped.to_string().find("base64data").is_none(), "{stripped}");
    // No icon on the default channel's head: the default icon.
    let other = all.iter().find(|m| m.metadata.name == "metadata-only").unwrap();
    assert_eq!(icon(other), None);
}

#[test]
fn a_get_answer_is_typed_and_a_list_item_is_not() {
    let all = etcd();
    let typed = serde_json::to_value(Typed::new(&all[0])).unwrap();
    assert_eq!(typed["kind"], "PackageManifest");
    assert_eq!(typed["apiVersion"], "packages.operators.coreos.com/v1");
    assert_eq!(typed["spec"], json!({}));
    assert_eq!(typed["metadata"]["creationTimestamp"], "2027-01-15T08:00:00Z");
    let list = serde_json::to_value(List::new(&all)).unwrap();
    assert_eq!(list["kind"], "PackageManifestList");
    assert_eq!(list["items"][0].get("kind"), None);
}

mod api {
    use super::*;
    use crate::plan::package_manifest::api::{Reply, Request, respond};

    fn ask(catalogs: &[Vec<PackageManifest>], path: &str, query: &str, accept: &str) -> Reply {
        let req = Request {
            method: "GET",
            path,
            query,
            accept,
            if_none_match: "",
            authenticated: true,
        };
        respond(
            &req,
            catalogs.iter().map(Vec::as_slice),
            "olm",
            Timestamp::from_second(1_800_000_100).unwrap(),
            &|m| Some(m.clone()),
        )
    }

    fn body(reply: &Reply) -> Value {
        serde_json::from_slice(&reply.body).unwrap()
    }

    #[test]
    fn discovery_lists_get_and_list_but_no_watch_as_upstreams_storage_has_none() {
        let catalogs = three_catalogs();
        let v1 = body(&ask(&catalogs, "/apis/packages.operators.coreos.com/v1", "", ""));
        assert_eq!(v1["groupVersion"], "packages.operators.coreos.com/v1");
        assert_eq!(v1["resources"][0]["name"], "packagemanifests");
        assert_eq!(v1["resources"][0]["namespaced"], true);
        assert_eq!(v1["resources"][0]["verbs"], json!(["get", "list"]));
        assert_eq!(v1["resources"][1]["name"], "packagemanifests/icon");
        let apis = body(&ask(&catalogs, "/apis", "", ""));
        assert_eq!(apis["groups"][0]["preferredVersion"]["version"], "v1");
        let watch = ask(
            &catalogs,
            "/apis/packages.operators.coreos.com/v1/namespaces/team-a/packagemanifests",
            "watch=true",
            "",
        );
        assert_eq!(watch.status, 405);
        assert_eq!(body(&watch)["reason"], "MethodNotAllowed");
    }

    #[test]
    fn list_get_and_table_answers() {
        let catalogs = three_catalogs();
        let base = "/apis/packages.operators.coreos.com/v1/namespaces/team-a/packagemanifests";
        let list = body(&ask(&catalogs, base, "labelSelector=catalog%3Dmine", ""));
        assert_eq!(list["kind"], "PackageManifestList");
        assert_eq!(list["items"].as_array().unwrap().len(), 2);
        assert!(
            list.to_string().find("base64data").is_none(),
            "icons are stripped"
        );
        let got = body(&ask(&catalogs, &format!("{base}/etcd"), "", ""));
        assert_eq!(got["kind"], "PackageManifest");
        assert_eq!(
            got["status"]["catalogSource"], "mine",
            "the namespace's own catalog wins"
        );
        assert_eq!(got["metadata"]["namespace"], "team-a");
        let missing = ask(&catalogs, &format!("{base}/nope"), "", "");
        assert_eq!(missing.status, 404);
        assert_eq!(
            body(&missing)["message"],
            "packagemanifests.packages.operators.coreos.com \"nope\" not found"
        );
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let t = body(&ask(&catalogs, base, "", accept));
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["rows"][0]["cells"], json!(["etcd", "mine display", "100s"]));
        let bad = ask(&catalogs, base, "labelSelector=a%20b", "");
        assert_eq!(bad.status, 400);
        let unknown = ask(&catalogs, base, "fieldSelector=status.x%3Dy", "");
        assert_eq!(unknown.status, 400);
    }

    #[test]
    fn a_request_without_the_front_proxy_certificate_is_unauthorized_but_health_is_open() {
        let catalogs = three_catalogs();
        let mut req = Request {
            method: "GET",
            path: "/apis/packages.operators.coreos.com/v1/packagemanifests",
            ..Request::default()
        };
        let now = Timestamp::from_second(1_800_000_100).unwrap();
        let reply = respond(&req, catalogs.iter().map(Vec::as_slice), "olm", now, &|m| {
            Some(m.clone())
        });
        assert_eq!(reply.status, 401);
        req.path = "/healthz";
        assert_eq!(
            respond(&req, catalogs.iter().map(Vec::as_slice), "olm", now, &|m| Some(
                m.clone()
            ))
            .status,
            200
        );
    }

    #[test]
    fn the_icon_subresource_serves_the_default_channels_icon_with_its_etag() {
        let catalogs = three_catalogs();
        let path = "/apis/packages.operators.coreos.com/v1/namespaces/team-b/packagemanifests/etcd/icon";
        let reply = ask(&catalogs, path, "", "");
        assert_eq!(reply.status, 200);
        assert_eq!(reply.content_type, "image/svg+xml");
        assert_eq!(reply.body, b"<svg/>");
        assert_eq!(
            reply.etag.as_deref(),
            Some("\"etcd.singlenamespace-alpha.etcd.v0.9.2\"")
        );
        let default = ask(
            &catalogs,
            &path.replace("etcd/icon", "metadata-only/icon"),
            "",
            "",
        );
        assert_eq!(default.body, DEFAULT_ICON.as_bytes());
        let req = Request {
            method: "GET",
            path,
            query: "resourceVersion=etcd.singlenamespace-alpha.etcd.v0.9.2",
            if_none_match: "\"etcd.singlenamespace-alpha.etcd.v0.9.2\"",
            authenticated: true,
            ..Request::default()
        };
        let now = Timestamp::from_second(1_800_000_100).unwrap();
        assert_eq!(
            respond(&req, catalogs.iter().map(Vec::as_slice), "olm", now, &|m| Some(
                m.clone()
            ))
            .status,
            304
        );
    }
}

#[test]
fn metadata_only_clients_get_partial_object_metadata() {
    use crate::plan::package_manifest::api::{Request, respond};
    let catalogs = three_catalogs();
    let now = Timestamp::from_second(1_800_000_100).unwrap();
    let ask = |path: &str, accept: &str| -> Value {
        let req = Request {
            method: "GET",
            path,
            accept,
            authenticated: true,
            ..Request::default()
        };
        serde_json::from_slice(
            &respond(&req, catalogs.iter().map(Vec::as_slice), "olm", now, &|m| {
                Some(m.clone())
            })
            .body,
        )
        .unwrap()
    };
    let base = "/apis/packages.operators.coreos.com/v1/namespaces/team-a/packagemanifests";
    let list = ask(
        base,
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
    );
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["metadata"]["name"], "etcd");
    assert_eq!(list["items"][0].get("status"), None);
    let one = ask(
        &format!("{base}/etcd"),
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    );
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["labels"]["catalog"], "mine");
}

/// Every package of a real catalog (the corpus' certified v4.16, unpacked under `target/corpus`
/// by the corpus tests; skipped when absent) gets its PackageManifest, with a head CSV for each
/// channel and its default channel among them.
#[test]
fn every_package_of_the_certified_corpus_catalog_gets_a_package_manifest() {
    corpus_catalog_gets_package_manifests("v4.16");
}

/// The same for the corpus' large-fbc (782 packages; 20 s and more in a debug build).
#[test]
#[ignore = "slow in debug builds: cargo test --lib -- --ignored large_fbc"]
fn every_package_of_the_large_fbc_corpus_catalog_gets_a_package_manifest() {
    corpus_catalog_gets_package_manifests("large-fbc");
}

fn corpus_catalog_gets_package_manifests(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/corpus")
        .join(name);
    if !dir.is_dir() {
        eprintln!("skipping {name}: {} is absent", dir.display());
        return;
    }
    let model = crate::source::load_path(&dir).unwrap().validate().0;
    let started = std::time::Instant::now();
    let all = manifests(&source("olm", name), &model, &registry_csv);
    eprintln!(
        "{name}: {} PackageManifests in {:?}",
        all.len(),
        started.elapsed()
    );
    let size = |v: &[PackageManifest]| serde_json::to_vec(v).map_or(0, |b| b.len());
    let stripped: Vec<PackageManifest> = all.iter().cloned().map(without_icons).collect();
    eprintln!(
        "{name}: {} bytes as JSON, {} without icons",
        size(&all),
        size(&stripped)
    );
    let served: Vec<&str> = all.iter().map(|m| m.metadata.name.as_str()).collect();
    let missing: Vec<&str> = model
        .packages()
        .map(|p| p.name.as_str())
        .filter(|p| !served.contains(p))
        .collect();
    assert!(missing.is_empty(), "{name}: no PackageManifest for {missing:?}");
    for m in &all {
        assert!(
            m.status
                .channels
                .iter()
                .any(|c| c.name == m.status.default_channel),
            "{name}/{}: default channel {} not among the channels",
            m.metadata.name,
            m.status.default_channel
        );
        for c in &m.status.channels {
            assert!(!c.current_csv.is_empty(), "{name}/{}/{}", m.metadata.name, c.name);
        }
    }
}

#[test]
fn the_openapi_documents_name_the_kind_and_resolve_every_reference() {
    use crate::plan::package_manifest::openapi;
    for (doc, prefix, defs) in [
        (openapi::v2(), "#/definitions/", "/definitions"),
        (openapi::v3(), "#/components/schemas/", "/components/schemas"),
    ] {
        let text = doc.to_string();
        let schemas = doc.pointer(defs).and_then(Value::as_object).unwrap();
        for piece in text.split("\"$ref\":\"").skip(1) {
            let target = &piece[..piece.find('"').unwrap()];
            let name = target.strip_prefix(prefix).unwrap_or_else(|| panic!("{target}"));
            assert!(schemas.contains_key(name), "{target} is not defined");
        }
        let pm = schemas
            .values()
            .find(|s| s["x-kubernetes-group-version-kind"][0]["kind"] == "PackageManifest")
            .unwrap();
        assert_eq!(
            pm["x-kubernetes-group-version-kind"][0]["group"],
            "packages.operators.coreos.com"
        );
    }
    let index = openapi::v3_index();
    let url = index["paths"]["apis/packages.operators.coreos.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    assert!(
        url.starts_with("/openapi/v3/apis/packages.operators.coreos.com/v1?hash="),
        "{url}"
    );
}

#[test]
fn csv_fields_are_read_as_gos_decoder_reads_them_whatever_their_case() {
    // kurrentdb-operator (certified v4.16) spells `spec.nativeApis`; upstream's typed CSV gets
    // its `nativeAPIs` from it, so its PackageManifest lists them.
    let csv = serde_json::json!({"spec": {
        "displayName": "Kurrent",
        "nativeApis": [{"group": "snapshot.storage.k8s.io", "version": "v1", "kind": "VolumeSnapshot"}],
    }});
    let desc = csv_description(&csv);
    assert_eq!(desc.native_apis.len(), 1);
    assert_eq!(desc.native_apis[0]["kind"], "VolumeSnapshot");
    assert_eq!(desc.display_name, "Kurrent");
    // The key as written wins over another spelling.
    let csv = serde_json::json!({"spec": {"displayname": "lower", "displayName": "exact"}});
    assert_eq!(csv_description(&csv).display_name, "exact");
}
