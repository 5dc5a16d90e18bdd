//! The pure parts of the acceptance bench on inline data (what `scripts/accept-catalog
//! --self-test` checked before any catalog was loaded).

use std::collections::{BTreeMap, HashMap};

use base64::Engine as _;
use serde_json::{Value, json};

use super::{plan::*, webhooks::*};

const ORDER: [&str; 4] = [
    "OwnNamespace",
    "SingleNamespace",
    "MultiNamespace",
    "AllNamespaces",
];

fn modes(supported: &[&str]) -> Value {
    json!({"spec": {"installModes": ORDER.iter().map(|t| json!({"type": t, "supported": supported.contains(t)})).collect::<Vec<_>>()}})
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn the_operator_group_follows_the_preference_order() {
    let og = |m: &[&str]| choose_operator_group(Some(&modes(m)), "ns");
    assert_eq!(
        og(&["OwnNamespace", "AllNamespaces"]),
        Some(("OwnNamespace".into(), json!({"targetNamespaces": ["ns"]})))
    );
    assert_eq!(
        og(&["SingleNamespace", "AllNamespaces"]),
        Some(("AllNamespaces".into(), json!({})))
    );
    assert_eq!(
        og(&["SingleNamespace", "MultiNamespace"]),
        Some(("SingleNamespace".into(), json!({"targetNamespaces": ["ns-t1"]})))
    );
    assert_eq!(
        og(&["MultiNamespace"]),
        Some((
            "MultiNamespace".into(),
            json!({"targetNamespaces": ["ns-t1", "ns-t2"]})
        ))
    );
    assert_eq!(og(&[]), None);
    assert_eq!(choose_operator_group(None, "ns"), None);
    let long_ns = namespace_for("accw", &"x".repeat(70));
    for t in target_namespaces("MultiNamespace", &long_ns) {
        assert!(t.len() <= 63 && t != long_ns, "{t}");
    }
}

#[test]
fn a_walk_group_comes_from_the_start_and_predicts_its_stop() {
    let csvs: HashMap<String, Value> = [
        ("v1", modes(&["SingleNamespace", "AllNamespaces"])),
        ("v2", modes(&["SingleNamespace", "AllNamespaces"])),
        ("v3", modes(&["OwnNamespace"])),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(
        choose_walk_group(&strings(&["v1", "v2"]), &csvs, "ns"),
        Some(("AllNamespaces".into(), json!({}), None))
    );
    assert_eq!(
        choose_walk_group(&strings(&["v1", "v2", "v3"]), &csvs, "ns"),
        Some((
            "AllNamespaces".into(),
            json!({}),
            Some(("v3".into(), strings(&["OwnNamespace"])))
        ))
    );
    let csvs: HashMap<String, Value> = [
        ("v1", modes(&["OwnNamespace", "AllNamespaces"])),
        ("v2", modes(&["AllNamespaces", "MultiNamespace"])),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(
        choose_walk_group(&strings(&["v1", "v2"]), &csvs, "ns"),
        Some(("AllNamespaces".into(), json!({}), None))
    );
    let stop = choose_walk_group(&strings(&["v1", "v9"]), &csvs, "ns").and_then(|g| g.2);
    assert_eq!(
        stop,
        Some(("v9".into(), vec![])),
        "an entry without a CSV: a stop there"
    );
    assert_eq!(choose_walk_group(&strings(&["v0"]), &csvs, "ns"), None);
}

#[test]
fn namespaces_and_operator_names_are_dns_labels() {
    assert_eq!(namespace_for("acc", "cloudnative-pg"), "acc-cloudnative-pg");
    let long = namespace_for("acc", &format!("A_very.Long--name{}-", "x".repeat(80)));
    assert!(long.len() <= 63);
    assert!(
        long.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    );
    assert!(!long.starts_with('-') && !long.ends_with('-'), "{long}");
    assert_eq!(
        namespace_for("acc", &format!("{}-bbbb", "a".repeat(58))),
        format!("acc-{}", "a".repeat(58))
    );
    let l = "alloydb-omni-operator-certified";
    let names = operator_names(&strings(&["op", l]), &["acc", "accw"]);
    let cut = |s: String| s.chars().take(63).collect::<String>();
    let want: std::collections::BTreeSet<String> = [
        "op.acc-op".to_owned(),
        "op.accw-op".to_owned(),
        cut(format!("{l}.acc-{l}")),
        cut(format!("{l}.accw-{l}")),
    ]
    .into_iter()
    .collect();
    assert_eq!(names, want);
    assert!(names.contains("alloydb-omni-operator-certified.acc-alloydb-omni-operator-certi"));
    assert_eq!(
        operator_names(&strings(&["op"]), &["acc"])
            .into_iter()
            .collect::<Vec<_>>(),
        vec!["op.acc-op"]
    );
}

#[test]
fn the_expect_file_is_parsed_and_compared() {
    let parsed = parse_expected(
        "# comment\npackage\toutcome\twhy\n\nfoo\tSucceeded\t\nbar\tResolutionFailed\tneeds cert-manager\n",
        "x.tsv",
    )
    .expect("valid");
    assert_eq!(parsed.get("foo"), Some(&("Succeeded".into(), String::new())));
    assert_eq!(
        parsed.get("bar"),
        Some(&("ResolutionFailed".into(), "needs cert-manager".into()))
    );
    for bad in ["foo\n", "foo\tSucceeded\nfoo\tSucceeded\n"] {
        let err = parse_expected(bad, "x.tsv").expect_err("malformed");
        assert!(err.to_string().starts_with("x.tsv:"), "{err}");
    }
    let results: BTreeMap<String, String> = [("foo", "Succeeded"), ("bar", "Timeout"), ("baz", "Succeeded")]
        .into_iter()
        .map(|(a, b)| (a.into(), b.into()))
        .collect();
    assert_eq!(
        compare(&results, &parsed, &BTreeMap::new()),
        vec![
            ("bar".into(), "Timeout".into(), "ResolutionFailed".into()),
            ("baz".into(), "Succeeded".into(), "<not listed>".into())
        ]
    );
    let both: BTreeMap<String, String> = [("a", "Succeeded"), ("b", "Succeeded")]
        .into_iter()
        .map(|(a, b)| (a.into(), b.into()))
        .collect();
    let expected: BTreeMap<String, (String, String)> = both
        .iter()
        .map(|(k, v)| (k.clone(), (v.clone(), String::new())))
        .collect();
    let hooks: BTreeMap<String, WebhookCheck> = [
        ("a".to_owned(), (true, "webhooks: ok 3 objects".to_owned())),
        (
            "b".to_owned(),
            (false, "webhooks: Secret ns/s missing".to_owned()),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        compare(&both, &expected, &hooks),
        vec![(
            "b".into(),
            "Succeeded but webhooks: Secret ns/s missing".into(),
            "Succeeded".into()
        )]
    );
}

fn csv(phase: &str, reason: &str, extra: Value) -> Value {
    let mut status = json!({"phase": phase, "reason": reason, "message": "m"});
    if let (Some(s), Some(e)) = (status.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    json!({"metadata": {"name": "op.v1"}, "status": status})
}

fn ip(phase: &str, msg: &str) -> Value {
    json!({"metadata": {"name": "install-abc"}, "status": {"phase": phase, "conditions": [
        {"type": "Installed", "status": "False", "reason": "InstallComponentFailed", "message": msg}]}})
}

fn sub(conds: &[(&str, &str, &str)]) -> Value {
    json!({"status": {"state": "UpgradePending", "conditions": conds.iter().map(|(t, r, m)|
        json!({"type": t, "status": "True", "reason": r, "message": m})).collect::<Vec<_>>()}})
}

#[test]
fn installs_are_classified_from_what_the_cluster_shows() {
    let none = json!({});
    let got = classify(
        Some(&sub(&[])),
        Some(&csv("Succeeded", "InstallSucceeded", none.clone())),
        Some(&ip("Complete", "")),
        None,
    );
    assert_eq!((got.outcome.as_str(), got.is_final), ("Succeeded", true));
    let got = classify(
        Some(&sub(&[])),
        Some(&csv("Succeeded", "", none.clone())),
        Some(&ip("Installing", "")),
        None,
    );
    assert_eq!(got.outcome, "InProgress");
    let got = classify(
        Some(&sub(&[])),
        Some(&csv("Succeeded", "", none.clone())),
        Some(&ip("Failed", "no matches for kind \"PrometheusRule\"")),
        None,
    );
    assert_eq!(got.outcome, "InstallPlanFailed");
    assert!(
        got.why.contains("PrometheusRule") && got.why.contains("says Succeeded"),
        "{}",
        got.why
    );
    let got = classify(
        Some(&sub(&[(
            "ResolutionFailed",
            "ConstraintsNotSatisfiable",
            "no operators found providing cert-manager",
        )])),
        None,
        None,
        None,
    );
    assert_eq!(got.outcome, "ResolutionFailed");
    assert!(got.why.contains("cert-manager"));
    assert_eq!(
        classify(
            Some(&sub(&[])),
            Some(&csv("Failed", "InstallComponentFailed", none.clone())),
            None,
            None
        )
        .outcome,
        "CSVFailed"
    );
    let got = classify(
        Some(&sub(&[])),
        Some(&csv(
            "Pending",
            "RequirementsNotMet",
            json!({"requirementStatus": [{"kind": "CustomResourceDefinition", "name": "x.example.com", "status": "NotPresent"}]}),
        )),
        None,
        None,
    );
    assert_eq!(got.outcome, "RequirementsNotMet");
    assert!(got.why.contains("x.example.com"));
    assert_eq!(missing_crds(&got.why), vec!["x.example.com".to_owned()]);
    assert_eq!(
        classify(
            Some(&sub(&[])),
            Some(&csv("Installing", "InstallWaiting", none.clone())),
            None,
            Some("p Unschedulable: 0/2 nodes")
        )
        .outcome,
        "Unschedulable"
    );
    assert_eq!(
        classify(
            Some(&sub(&[])),
            Some(&csv("Installing", "InstallWaiting", none)),
            None,
            None
        )
        .outcome,
        "InProgress"
    );
    assert_eq!(classify(None, None, None, None).outcome, "InProgress");
}

#[test]
fn a_failure_settles_after_staying_the_same() {
    let class = |o: &str, w: &str, f: bool| Class {
        outcome: o.into(),
        why: w.into(),
        is_final: f,
    };
    let mut s = Settler::new(30.0);
    assert!(!s.observe("p", &class("CSVFailed", "x", false), 0.0));
    assert!(!s.observe("p", &class("CSVFailed", "x", false), 29.0));
    assert!(s.observe("p", &class("CSVFailed", "x", false), 30.0));
    assert!(
        !s.observe("p", &class("CSVFailed", "y", false), 31.0),
        "a changed failure starts over"
    );
    assert!(
        s.observe("p", &class("Succeeded", "", true), 32.0),
        "Succeeded settles at once"
    );
    assert!(!s.observe("q", &class("InProgress", "", false), 0.0));
    assert!(
        !s.observe("q", &class("InProgress", "", false), 100.0),
        "in progress never settles"
    );
    assert!(!s.observe("r", &class("RequirementsNotMet", "", false), 0.0));
    assert!(
        !s.observe("r", &class("RequirementsNotMet", "", false), 100.0),
        "150 s for RequirementsNotMet"
    );
    assert!(s.observe("r", &class("RequirementsNotMet", "", false), 150.0));
}

#[test]
fn channels_heads_and_walks() {
    assert_eq!(
        channel_head(&[
            json!({"name": "a"}),
            json!({"name": "b", "replaces": "a"}),
            json!({"name": "c", "replaces": "b", "skips": ["x"]})
        ]),
        Some("c".into())
    );
    assert_eq!(channel_head(&[json!({"name": "a"}), json!({"name": "b"})]), None);
    assert_eq!(
        expected_walk("op.v1", &json!({"hops": [{"name": "op.v2"}, {"name": "op.v3"}]})),
        strings(&["op.v1", "op.v2", "op.v3"])
    );
    let plans = [
        json!({"metadata": {"name": "install-b", "creationTimestamp": "2026-01-01T00:00:05Z"},
               "spec": {"generation": 2, "clusterServiceVersionNames": ["op.v2"]}}),
        json!({"metadata": {"name": "install-a", "creationTimestamp": "2026-01-01T00:00:01Z"},
               "spec": {"generation": 1, "clusterServiceVersionNames": ["op.v1"]}}),
        json!({"metadata": {"name": "install-c", "creationTimestamp": "2026-01-01T00:00:09Z"},
               "spec": {"generation": 3, "clusterServiceVersionNames": ["op.v2"]}}),
    ];
    assert_eq!(observed_walk(&plans), strings(&["op.v1", "op.v2"]));
    assert_eq!(
        out_path_for_walks(std::path::Path::new("target/accept-catalog.tsv")),
        std::path::PathBuf::from("target/accept-catalog-walks.tsv")
    );
    let a = json!({"metadata": {"uid": "1", "name": "a"}, "spec": {"generation": 1}});
    let a2 = json!({"metadata": {"uid": "1", "name": "a"}, "spec": {"generation": 1, "x": 1}});
    let b = json!({"metadata": {"uid": "2", "name": "b"}});
    assert_eq!(
        merge_plans(&[a, b.clone()], std::slice::from_ref(&a2)),
        vec![a2, b],
        "once each by uid, the current one wins"
    );
    assert_eq!(
        slim_plan(&plans[0])["spec"]["clusterServiceVersionNames"],
        json!(["op.v2"])
    );
}

#[test]
fn the_catalog_gives_each_package_its_head_csv_and_crds() {
    let enc = |v: Value| base64::engine::general_purpose::STANDARD.encode(v.to_string());
    let csv1 = json!({"kind": "ClusterServiceVersion", "metadata": {"name": "p.v1"},
                      "spec": {"customresourcedefinitions": {"owned": [{"name": "as.example.com"}]}}});
    let crd = json!({"kind": "CustomResourceDefinition", "metadata": {"name": "bs.example.com"}});
    let blobs = vec![
        json!({"schema": "olm.package", "name": "p", "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": "p", "name": "stable", "entries": [{"name": "p.v1"}]}),
        json!({"schema": "olm.bundle", "name": "p.v1", "package": "p", "properties": [
            {"type": "olm.bundle.object", "value": {"data": enc(csv1)}},
            {"type": "olm.bundle.object", "value": {"data": enc(crd)}}]}),
    ];
    let facts = catalog_packages(&blobs);
    let p = facts.get("p").expect("package p");
    assert_eq!(p.head.as_deref(), Some("p.v1"));
    assert_eq!(
        p.csv.as_ref().map(|c| c["metadata"]["name"].clone()),
        Some(json!("p.v1"))
    );
    assert_eq!(p.crds, strings(&["as.example.com", "bs.example.com"]));
    let bad = json!({"name": "x", "properties": [{"type": "olm.bundle.object", "value": {"data": "!!"}}]});
    assert_eq!(bundle_objects(&bad).1.len(), 1, "an undecodable object is named");
}

#[test]
fn a_copied_csv_is_never_an_install() {
    assert!(is_copy(Some(
        &json!({"metadata": {"labels": {"olm.copiedFrom": "ns-a"}}})
    )));
    assert!(!is_copy(Some(&json!({"metadata": {}}))));
    assert!(!is_copy(None));
}

fn wh_csv() -> Value {
    json!({"metadata": {"name": "op.v2"}, "spec": {"webhookdefinitions": [
        {"type": "ValidatingAdmissionWebhook", "generateName": "vthing.example.com", "deploymentName": "op.manager",
         "containerPort": 9443, "webhookPath": "/validate"},
        {"type": "MutatingAdmissionWebhook", "generateName": "mthing.example.com", "deploymentName": "op.manager",
         "containerPort": 9443},
        {"type": "ConversionWebhook", "generateName": "cthing.example.com", "deploymentName": "op.manager",
         "containerPort": 9443, "conversionCRDs": ["things.example.com"]}]}})
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn wh_objects() -> Objects {
    let ca = b64("CA PEM");
    let owner = |gen_name: &str| {
        json!({"olm.owner": "op.v2", "olm.owner.namespace": "ns", "olm.owner.kind": "ClusterServiceVersion",
               "olm.webhook-description-generate-name": gen_name})
    };
    let client = |path: Option<&str>| {
        let mut service = json!({"name": "op-manager-service", "namespace": "ns", "port": 9443});
        if let Some(p) = path {
            service["path"] = json!(p);
        }
        json!({"service": service, "caBundle": ca})
    };
    Objects {
        validating: vec![json!({"metadata": {"name": "vthing.example.com-x7k2p", "labels": owner("vthing.example.com")},
            "webhooks": [{"name": "vthing.example.com", "clientConfig": client(Some("/validate"))}]})],
        mutating: vec![json!({"metadata": {"name": "mthing.example.com-q8w3z", "labels": owner("mthing.example.com")},
            "webhooks": [{"name": "mthing.example.com", "clientConfig": client(None)}]})],
        services: [("op-manager-service".to_owned(), json!({"spec": {"ports": [{"port": 9443}]}}))].into(),
        secrets: [(
            "op-manager-service-cert".to_owned(),
            json!({"data": {"tls.crt": b64("CERT PEM"), "tls.key": b64("KEY PEM"), "olmCAKey": ca}}),
        )]
        .into(),
        crds: [(
            "things.example.com".to_owned(),
            json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": client(Some("/"))}}}}),
        )]
        .into(),
    }
}

#[test]
fn webhook_objects_as_upstream_writes_them_pass() {
    assert_eq!(webhook_service("op.manager"), "op-manager-service");
    assert_eq!(
        check_webhooks(&wh_csv(), "ns", &wh_objects()),
        (true, "webhooks: ok 5 objects".to_owned())
    );
    assert_eq!(
        check_webhooks(
            &json!({"metadata": {"name": "x"}, "spec": {}}),
            "ns",
            &wh_objects()
        ),
        (true, "webhooks: ok 0 objects".to_owned())
    );
    assert_eq!(ok_count("webhooks: ok 5 objects"), 5);
}

#[test]
fn each_wrong_webhook_object_is_found() {
    type Breakage = fn(&mut Objects);
    let breakages: Vec<(&str, Breakage, &str)> = vec![
        (
            "validating missing",
            |o| o.validating.clear(),
            "ValidatingWebhookConfiguration of webhook vthing.example.com missing",
        ),
        (
            "owned by another CSV",
            |o| o.mutating[0]["metadata"]["labels"]["olm.owner"] = json!("op.v1"),
            "MutatingWebhookConfiguration of webhook mthing.example.com missing",
        ),
        (
            "Service missing",
            |o| o.services.clear(),
            "Service ns/op-manager-service missing",
        ),
        (
            "Service port",
            |o| {
                if let Some(s) = o.services.get_mut("op-manager-service") {
                    s["spec"]["ports"] = json!([{"port": 443}]);
                }
            },
            "has no port 9443",
        ),
        (
            "Secret missing",
            |o| o.secrets.clear(),
            "Secret ns/op-manager-service-cert missing",
        ),
        (
            "no tls.key",
            |o| {
                if let Some(s) = o
                    .secrets
                    .get_mut("op-manager-service-cert")
                    .and_then(|s| s["data"].as_object_mut())
                {
                    s.remove("tls.key");
                }
            },
            "has no tls.key",
        ),
        (
            "empty caBundle",
            |o| o.validating[0]["webhooks"][0]["clientConfig"]["caBundle"] = json!(""),
            "has no caBundle",
        ),
        (
            "another CA",
            |o| o.mutating[0]["webhooks"][0]["clientConfig"]["caBundle"] = json!(b64("CERT PEM")),
            "caBundle is not the CA of Secret ns/op-manager-service-cert",
        ),
        (
            "another Service",
            |o| o.validating[0]["webhooks"][0]["clientConfig"]["service"]["name"] = json!("other"),
            "calls Service ns/other",
        ),
        (
            "another path",
            |o| o.validating[0]["webhooks"][0]["clientConfig"]["service"]["path"] = json!("/"),
            "calls path /, not /validate",
        ),
        (
            "misnamed",
            |o| o.validating[0]["metadata"]["name"] = json!("other"),
            "is not named vthing.example.com-<suffix>",
        ),
        (
            "conversion CRD missing",
            |o| o.crds.clear(),
            "CRD things.example.com missing",
        ),
        (
            "strategy None",
            |o| {
                if let Some(c) = o.crds.get_mut("things.example.com") {
                    c["spec"]["conversion"] = json!({"strategy": "None"});
                }
            },
            "strategy is None, not Webhook",
        ),
    ];
    for (what, breakage, says) in breakages {
        let mut objs = wh_objects();
        breakage(&mut objs);
        let (ok, text) = check_webhooks(&wh_csv(), "ns", &objs);
        assert!(!ok && text.contains(says), "{what}: {text}");
    }
}

#[test]
fn the_premises_and_the_package_selection_name_what_is_wrong() {
    let mut facts: BTreeMap<String, Facts> = BTreeMap::new();
    facts.insert(
        "a".into(),
        Facts {
            head: Some("a.v1".into()),
            csv: Some(json!({})),
            ..Facts::default()
        },
    );
    facts.insert("b".into(), Facts::default());
    let (held, what) = heads_premise(&facts);
    assert!(!held && what.contains(r#"not: ["b"]"#), "{what}");
    facts.get_mut("b").unwrap().head = Some("b.v1".into());
    facts.get_mut("b").unwrap().csv = Some(json!({}));
    assert!(heads_premise(&facts).0);

    let expected: BTreeMap<String, (String, String)> =
        [("a".to_owned(), ("Succeeded".to_owned(), String::new()))].into();
    assert!(!expect_premise(&expected, &facts).0);

    assert_eq!(selected_packages(&facts, &[], None).unwrap(), ["a", "b"]);
    assert_eq!(selected_packages(&facts, &[], Some(1)).unwrap(), ["a"]);
    let asked = ["b".to_owned(), "a".to_owned(), "b".to_owned()];
    assert_eq!(selected_packages(&facts, &asked, None).unwrap(), ["a", "b"]);
    let err = selected_packages(&facts, &["zz".to_owned()], None).unwrap_err();
    assert!(
        err.contains("unknown package(s) zz") && err.contains("a, b"),
        "{err}"
    );
}
