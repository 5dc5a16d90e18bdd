//! Table tests for resolution. Catalogs are written as FBC (JSON documents) and go through the
//! real catalog parser and model, so the tests exercise the same path as a served catalog.

use semver::Version;
use serde_json::{Value, json};

use super::*;
use crate::{
    api::{labels, reasons::subscription as reason, v1alpha1::CsvPhase},
    catalog::{DeclarativeConfig, Model, property::Gvk},
    graph::EdgeKind,
};

// ---------------------------------------------------------------------------------------------
// Builders

fn package(name: &str, default_channel: &str) -> Value {
    json!({"schema": "olm.package", "name": name, "defaultChannel": default_channel})
}

fn channel(package: &str, name: &str, entries: Vec<Value>) -> Value {
    json!({"schema": "olm.channel", "package": package, "name": name, "entries": entries})
}

fn entry(name: &str) -> Value {
    json!({"name": name})
}

fn replaces(name: &str, old: &str) -> Value {
    json!({"name": name, "replaces": old})
}

struct B {
    package: String,
    name: String,
    version: String,
    properties: Vec<Value>,
}

fn bundle(package: &str, name: &str, version: &str) -> B {
    B {
        package: package.to_owned(),
        name: name.to_owned(),
        version: version.to_owned(),
        properties: Vec::new(),
    }
}

impl B {
    fn provides(mut self, group: &str, version: &str, kind: &str) -> Self {
        self.properties.push(json!({"type": "olm.gvk",
            "value": {"group": group, "version": version, "kind": kind}}));
        self
    }
    fn requires_gvk(mut self, group: &str, version: &str, kind: &str) -> Self {
        self.properties.push(json!({"type": "olm.gvk.required",
            "value": {"group": group, "version": version, "kind": kind}}));
        self
    }
    fn requires_package(mut self, package: &str, range: &str) -> Self {
        self.properties.push(json!({"type": "olm.package.required",
            "value": {"packageName": package, "versionRange": range}}));
        self
    }
    fn deprecated(mut self) -> Self {
        self.properties
            .push(json!({"type": "olm.deprecated", "value": {}}));
        self
    }
    fn doc(self) -> Value {
        let mut properties = vec![json!({"type": "olm.package",
            "value": {"packageName": self.package, "version": self.version}})];
        properties.extend(self.properties);
        json!({"schema": "olm.bundle", "package": self.package, "name": self.name,
            "image": format!("example.com/{}:v{}", self.package, self.version),
            "properties": properties})
    }
}

impl From<B> for Value {
    fn from(b: B) -> Value {
        b.doc()
    }
}

fn model(docs: Vec<Value>) -> Model {
    let text: String = docs.iter().map(|d| format!("{d}\n")).collect();
    let (cfg, problems) = DeclarativeConfig::from_str_with_problems("test.json", &text);
    assert!(problems.is_empty(), "test catalog does not parse: {problems:?}");
    Model::from_config(cfg)
}

/// `etcd` with channel `stable`: v0.9.0 ← v0.9.2 ← v0.9.4 (replaces), default channel `stable`,
/// plus an `alpha` channel holding only v0.9.4-alpha... kept small.
fn etcd() -> Model {
    model(vec![
        package("etcd", "stable"),
        channel(
            "etcd",
            "stable",
            vec![
                entry("etcd.v0.9.0"),
                replaces("etcd.v0.9.2", "etcd.v0.9.0"),
                replaces("etcd.v0.9.4", "etcd.v0.9.2"),
            ],
        ),
        channel("etcd", "alpha", vec![entry("etcd.v1.0.0-alpha.1")]),
        bundle("etcd", "etcd.v0.9.0", "0.9.0").into(),
        bundle("etcd", "etcd.v0.9.2", "0.9.2").into(),
        bundle("etcd", "etcd.v0.9.4", "0.9.4").into(),
        bundle("etcd", "etcd.v1.0.0-alpha.1", "1.0.0-alpha.1").into(),
    ])
}

fn key(namespace: &str, name: &str) -> CatalogKey {
    CatalogKey::new(namespace, name)
}

fn catalogs<'m>(list: Vec<(CatalogKey, i32, &'m Model)>) -> Catalogs<'m> {
    Catalogs {
        global_namespace: "olm".to_owned(),
        catalogs: list
            .into_iter()
            .map(|(key, priority, model)| Catalog {
                key,
                priority,
                model: Some(model),
                problem: None,
            })
            .collect(),
    }
}

fn request(package: &str, catalog: CatalogKey) -> Request {
    Request {
        namespace: "operators".to_owned(),
        name: format!("{package}-sub"),
        package: package.to_owned(),
        channel: None,
        starting_csv: None,
        catalog,
        installed_csv: None,
        approval: Approval::Automatic,
        version_ceiling: None,
    }
}

fn csv(name: &str, version: &str, package: &str) -> InstalledCsv {
    InstalledCsv {
        name: name.to_owned(),
        version: Some(Version::parse(version).expect("test version")),
        package: Some(package.to_owned()),
        provided_gvks: Vec::new(),
        phase: CsvPhase::Succeeded,
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> Gvk {
    Gvk {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
    }
}

/// The request upgrading from `installed` (a CSV of `package` present in the namespace).
fn upgrading(package: &str, catalog: CatalogKey, installed: &str, version: &str) -> (Request, Installed) {
    let mut req = request(package, catalog);
    req.installed_csv = Some(installed.to_owned());
    let inst = Installed {
        csvs: vec![csv(installed, version, package)],
        subscriptions: vec![ExistingSubscription {
            name: req.name.clone(),
            package: package.to_owned(),
            catalog: req.catalog.clone(),
            current_csv: Some(installed.to_owned()),
            installed_csv: Some(installed.to_owned()),
        }],
    };
    (req, inst)
}

fn installed_bundle(res: &Resolution) -> (&str, &str, &Selection) {
    match &res.outcome {
        Outcome::Install(s) => (s.bundle.as_str(), s.channel.as_str(), &s.selection),
        Outcome::AtLatestKnown { csv, .. } => panic!("expected an install, got AtLatestKnown {csv}"),
    }
}

fn failure(req: &Request, cats: &Catalogs<'_>, inst: &Installed) -> ResolutionError {
    match resolve(req, cats, inst) {
        Ok(res) => panic!("expected a failure, got {res:?}"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------------------------
// The Subscription's own bundle

#[test]
fn a_fresh_subscription_installs_the_channel_head() {
    let m = etcd();
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let mut req = request("etcd", key("olm", "ops"));
    req.channel = Some("stable".to_owned());
    let res = resolve(&req, &cats, &Installed::default()).expect("resolves");
    assert_eq!(
        installed_bundle(&res),
        ("etcd.v0.9.4", "stable", &Selection::Head)
    );
    assert!(res.dependencies.is_empty());
    assert_eq!(res.adopted, None);
    let s = res.install().expect("install");
    assert_eq!(s.version, Version::new(0, 9, 4));
    assert_eq!(s.catalog, key("olm", "ops"));
    assert_eq!(s.lookup(&cats).map(|b| b.name.as_str()), Some("etcd.v0.9.4"));
}

#[test]
fn a_subscription_without_a_channel_follows_the_default_channel() {
    // `alpha` sorts before `stable`, so only the default-channel rule picks `stable`.
    let m = etcd();
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let req = request("etcd", key("olm", "ops"));
    let res = resolve(&req, &cats, &Installed::default()).expect("resolves");
    assert_eq!(
        installed_bundle(&res),
        ("etcd.v0.9.4", "stable", &Selection::Head)
    );

    let mut alpha = req.clone();
    alpha.channel = Some("alpha".to_owned());
    let res = resolve(&alpha, &cats, &Installed::default()).expect("resolves");
    assert_eq!(
        installed_bundle(&res),
        ("etcd.v1.0.0-alpha.1", "alpha", &Selection::Head)
    );
}

#[test]
fn a_starting_csv_installs_exactly_that_bundle() {
    let m = etcd();
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let mut req = request("etcd", key("olm", "ops"));
    req.starting_csv = Some("etcd.v0.9.2".to_owned());
    let res = resolve(&req, &cats, &Installed::default()).expect("resolves");
    assert_eq!(
        installed_bundle(&res),
        ("etcd.v0.9.2", "stable", &Selection::StartingCsv)
    );
}

#[test]
fn a_starting_csv_may_name_a_skipped_bundle_but_the_head_never_is_one() {
    let m = model(vec![
        package("a", "stable"),
        channel(
            "a",
            "stable",
            vec![
                entry("a.v1"),
                replaces("a.v2", "a.v1"),
                json!({"name": "a.v3", "replaces": "a.v2", "skips": ["a.v2"]}),
            ],
        ),
        bundle("a", "a.v1", "1.0.0").into(),
        bundle("a", "a.v2", "2.0.0").into(),
        bundle("a", "a.v3", "3.0.0").into(),
    ]);
    let cats = catalogs(vec![(key("olm", "c"), 0, &m)]);
    let mut req = request("a", key("olm", "c"));
    req.starting_csv = Some("a.v2".to_owned());
    let res = resolve(&req, &cats, &Installed::default()).expect("resolves");
    assert_eq!(
        installed_bundle(&res),
        ("a.v2", "stable", &Selection::StartingCsv)
    );

    req.starting_csv = None;
    let res = resolve(&req, &cats, &Installed::default()).expect("resolves");
    assert_eq!(installed_bundle(&res).0, "a.v3");
}

#[test]
fn a_head_carrying_the_legacy_deprecated_property_is_passed_over() {
    let m = model(vec![
        package("a", "stable"),
        channel("a", "stable", vec![entry("a.v1"), replaces("a.v2", "a.v1")]),
        bundle("a", "a.v1", "1.0.0").into(),
        bundle("a", "a.v2", "2.0.0").deprecated().into(),
    ]);
    let cats = catalogs(vec![(key("olm", "c"), 0, &m)]);
    let mut req = request("a", key("olm", "c"));
    let res = resolve(&req, &cats, &Installed::default()).expect("resolves");
    assert_eq!(installed_bundle(&res).0, "a.v1");

    req.starting_csv = Some("a.v2".to_owned());
    let err = failure(&req, &cats, &Installed::default());
    assert_eq!(
        err.to_string(),
        "bundle a.v2 of package a in CatalogSource olm/c carries the legacy olm.deprecated \
         property and can never be installed; set spec.startingCSV to another bundle, or remove \
         it to install the channel head"
    );
    assert_eq!(err.reason(), reason::CONSTRAINTS_NOT_SATISFIABLE);
}

/// Channel `stable` of package `a`: a.v1 (1.0.0) ← a.v2 (1.1.0) ← a.v3 (1.2.0) by replaces, with
/// an extra field on a.v3.
fn chain(v3_extra: Value) -> Model {
    let mut v3 = json!({"name": "a.v3", "replaces": "a.v2"});
    if let (Some(obj), Value::Object(extra)) = (v3.as_object_mut(), v3_extra) {
        obj.extend(extra);
    }
    model(vec![
        package("a", "stable"),
        channel("a", "stable", vec![entry("a.v1"), replaces("a.v2", "a.v1"), v3]),
        bundle("a", "a.v1", "1.0.0").into(),
        bundle("a", "a.v2", "1.1.0").into(),
        bundle("a", "a.v3", "1.2.0").into(),
    ])
}

#[test]
fn upgrades_follow_each_edge_kind_one_hop_at_a_time() {
    struct Case {
        name: &'static str,
        v3_extra: Value,
        installed: (&'static str, &'static str),
        expected: Option<(&'static str, EdgeKind)>,
    }
    let cases = [
        Case {
            name: "replaces moves one step, not to the head",
            v3_extra: json!({}),
            installed: ("a.v1", "1.0.0"),
            expected: Some(("a.v2", EdgeKind::Replaces)),
        },
        Case {
            name: "replaces from the second entry reaches the head",
            v3_extra: json!({}),
            installed: ("a.v2", "1.1.0"),
            expected: Some(("a.v3", EdgeKind::Replaces)),
        },
        Case {
            name: "skips lets the head replace an older entry directly",
            v3_extra: json!({"skips": ["a.v1"]}),
            installed: ("a.v1", "1.0.0"),
            expected: Some(("a.v3", EdgeKind::Skips)),
        },
        Case {
            name: "skipRange containing the installed version wins over a nearer replaces",
            v3_extra: json!({"skipRange": ">=1.0.0 <1.2.0"}),
            installed: ("a.v1", "1.0.0"),
            expected: Some(("a.v3", EdgeKind::SkipRange)),
        },
        Case {
            name: "skipRange matches by version, even a CSV name the channel does not know",
            v3_extra: json!({"skipRange": ">=0.5.0 <1.2.0"}),
            installed: ("a.v0-hotfix", "0.6.0"),
            expected: Some(("a.v3", EdgeKind::SkipRange)),
        },
        Case {
            name: "the head is at latest known",
            v3_extra: json!({}),
            installed: ("a.v3", "1.2.0"),
            expected: None,
        },
    ];
    for case in cases {
        let m = chain(case.v3_extra);
        let cats = catalogs(vec![(key("olm", "c"), 0, &m)]);
        let (req, inst) = upgrading("a", key("olm", "c"), case.installed.0, case.installed.1);
        let res = resolve(&req, &cats, &inst).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        // The full list of eligible hops starts with the graph's own next hop.
        let stable = m.package("a").and_then(|p| p.channel("stable")).expect("channel");
        let order = stable.graph().ordered().expect("ordered");
        let version = Version::parse(case.installed.1).expect("version");
        let first = super::eligible_hops(&order, case.installed.0, Some(&version))
            .first()
            .map(|(e, edge)| (e.name.clone(), *edge));
        let hop = stable
            .graph()
            .next_hop(&crate::graph::Installed {
                name: Some(case.installed.0.to_owned()),
                version,
            })
            .map(|h| (h.name, h.edge));
        assert_eq!(first, hop, "{}", case.name);
        match (case.expected, &res.outcome) {
            (Some((bundle, edge)), Outcome::Install(s)) => {
                assert_eq!(s.bundle, bundle, "{}", case.name);
                assert_eq!(
                    s.selection,
                    Selection::Upgrade {
                        replaces: case.installed.0.to_owned(),
                        edge
                    },
                    "{}",
                    case.name
                );
                assert_eq!(s.replaces(), Some(case.installed.0), "{}", case.name);
            }
            (None, Outcome::AtLatestKnown { csv, note }) => {
                assert_eq!(csv, case.installed.0, "{}", case.name);
                assert_eq!(note, &None, "{}", case.name);
            }
            (expected, got) => panic!("{}: expected {expected:?}, got {got:?}", case.name),
        }
    }
}

#[test]
fn repeated_resolution_walks_the_channel_to_the_head_one_plan_per_hop() {
    let m = chain(json!({}));
    let cats = catalogs(vec![(key("olm", "c"), 0, &m)]);
    let mut path = Vec::new();
    let (mut at, mut version) = ("a.v1".to_owned(), "1.0.0".to_owned());
    for _ in 0..5 {
        let (req, inst) = upgrading("a", key("olm", "c"), &at, &version);
        match resolve(&req, &cats, &inst).expect("resolves").outcome {
            Outcome::Install(s) => {
                path.push(s.bundle.clone());
                at = s.bundle;
                version = s.version.to_string();
            }
            Outcome::AtLatestKnown { .. } => break,
        }
    }
    assert_eq!(path, ["a.v2", "a.v3"]);
}

#[test]
fn a_csv_outside_the_subscribed_channel_stays_put_with_a_note() {
    let m = etcd();
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let (mut req, inst) = upgrading("etcd", key("olm", "ops"), "etcd.v0.9.4", "0.9.4");
    req.channel = Some("alpha".to_owned());
    let res = resolve(&req, &cats, &inst).expect("resolves");
    assert_eq!(
        res.outcome,
        Outcome::AtLatestKnown {
            csv: "etcd.v0.9.4".to_owned(),
            note: Some(
                "installed CSV etcd.v0.9.4 is not in channel 'alpha' of package etcd and no \
                 entry there replaces, skips or has a skipRange covering it, so no upgrade is \
                 offered; pick a channel that contains it, or ask the catalog author for an \
                 upgrade edge"
                    .to_owned()
            )
        }
    );
}

#[test]
fn a_skip_range_covering_a_newer_version_never_downgrades() {
    // a.v1's range covers 1.2.0 (the head's version): a catalog mistake, not an upgrade.
    let m = model(vec![
        package("a", "stable"),
        channel(
            "a",
            "stable",
            vec![
                json!({"name": "a.v1", "skipRange": ">=1.0.0 <2.0.0"}),
                replaces("a.v3", "a.v1"),
            ],
        ),
        bundle("a", "a.v1", "1.0.0").into(),
        bundle("a", "a.v3", "1.2.0").into(),
    ]);
    let cats = catalogs(vec![(key("olm", "c"), 0, &m)]);
    let (req, inst) = upgrading("a", key("olm", "c"), "a.v3", "1.2.0");
    let res = resolve(&req, &cats, &inst).expect("resolves");
    assert!(matches!(res.outcome, Outcome::AtLatestKnown { .. }), "{res:?}");
}

#[test]
fn an_installed_csv_that_was_deleted_is_installed_again() {
    let m = etcd();
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let mut req = request("etcd", key("olm", "ops"));
    req.installed_csv = Some("etcd.v0.9.2".to_owned());
    let res = resolve(&req, &cats, &Installed::default()).expect("resolves");
    assert_eq!(installed_bundle(&res).0, "etcd.v0.9.4");
}

#[test]
fn an_orphaned_csv_of_the_package_is_adopted_and_upgraded() {
    let m = etcd();
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let req = request("etcd", key("olm", "ops"));
    let inst = Installed {
        csvs: vec![csv("etcd.v0.9.2", "0.9.2", "etcd")],
        subscriptions: Vec::new(),
    };
    let res = resolve(&req, &cats, &inst).expect("resolves");
    assert_eq!(res.adopted.as_deref(), Some("etcd.v0.9.2"));
    assert_eq!(
        installed_bundle(&res),
        (
            "etcd.v0.9.4",
            "stable",
            &Selection::Upgrade {
                replaces: "etcd.v0.9.2".to_owned(),
                edge: EdgeKind::Replaces
            }
        )
    );
}

#[test]
fn a_second_subscription_to_an_installed_package_is_refused() {
    let m = etcd();
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let req = request("etcd", key("olm", "ops"));
    let inst = Installed {
        csvs: vec![csv("etcd.v0.9.4", "0.9.4", "etcd")],
        subscriptions: vec![ExistingSubscription {
            name: "etcd".to_owned(),
            package: "etcd".to_owned(),
            catalog: key("olm", "ops"),
            current_csv: Some("etcd.v0.9.4".to_owned()),
            installed_csv: Some("etcd.v0.9.4".to_owned()),
        }],
    };
    let err = failure(&req, &cats, &inst);
    assert_eq!(
        err.to_string(),
        "package etcd is already subscribed in namespace operators by Subscription etcd (CSV \
         etcd.v0.9.4); a namespace holds one version of a package, so delete one of the two \
         Subscriptions"
    );
}

#[test]
fn two_new_subscriptions_to_one_package_let_the_first_name_proceed() {
    let m = etcd();
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let sub = |name: &str| ExistingSubscription {
        name: name.to_owned(),
        package: "etcd".to_owned(),
        catalog: key("olm", "ops"),
        current_csv: None,
        installed_csv: None,
    };
    let inst = Installed {
        csvs: Vec::new(),
        subscriptions: vec![sub("a-etcd"), sub("b-etcd")],
    };
    let mut first = request("etcd", key("olm", "ops"));
    first.name = "a-etcd".to_owned();
    let mut second = first.clone();
    second.name = "b-etcd".to_owned();
    assert!(resolve(&first, &cats, &inst).is_ok());
    assert!(matches!(
        failure(&second, &cats, &inst),
        ResolutionError::PackageAlreadySubscribed { subscription, .. } if subscription == "a-etcd"
    ));
}

#[test]
fn an_unknown_starting_csv_is_reported_before_a_conflict_with_another_subscription() {
    let m = etcd();
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let inst = Installed {
        csvs: Vec::new(),
        subscriptions: vec![ExistingSubscription {
            name: "a-etcd".to_owned(),
            package: "etcd".to_owned(),
            catalog: key("olm", "ops"),
            current_csv: Some("etcd.v0.9.4".to_owned()),
            installed_csv: None,
        }],
    };
    let mut req = request("etcd", key("olm", "ops"));
    req.name = "b-etcd".to_owned();
    req.starting_csv = Some("etcd.v9.9.9".to_owned());
    let err = failure(&req, &cats, &inst);
    assert!(
        matches!(err, ResolutionError::StartingCsvNotFound { .. }),
        "{err}"
    );
    req.starting_csv = Some("etcd.v0.9.2".to_owned());
    assert!(matches!(
        failure(&req, &cats, &inst),
        ResolutionError::PackageAlreadySubscribed { .. }
    ));
}

#[test]
fn a_bundle_providing_an_api_another_operator_provides_is_refused() {
    let m = model(vec![
        package("a", "stable"),
        channel("a", "stable", vec![entry("a.v1")]),
        bundle("a", "a.v1", "1.0.0")
            .provides("cache.example.com", "v1", "Redis")
            .into(),
    ]);
    let cats = catalogs(vec![(key("olm", "c"), 0, &m)]);
    let req = request("a", key("olm", "c"));
    let mut other = csv("b.v2", "2.0.0", "b");
    other.provided_gvks = vec![gvk("cache.example.com", "v1", "Redis")];
    let inst = Installed {
        csvs: vec![other],
        subscriptions: Vec::new(),
    };
    let err = failure(&req, &cats, &inst);
    assert_eq!(
        err.to_string(),
        "bundle a.v1 (package a, CatalogSource olm/c) provides API Redis \
         (cache.example.com/v1), which CSV b.v2 (package b) already provides in namespace \
         operators; an API can have only one provider per namespace, so uninstall b.v2 first or \
         install package a in another namespace"
    );
}

// ---------------------------------------------------------------------------------------------
// Failure messages

#[test]
fn unknown_package_channel_catalog_and_starting_csv_are_explained_in_full() {
    let m = model(vec![
        package("redis-operator", "stable"),
        channel("redis-operator", "alpha", vec![entry("redis-operator.v0.1.0")]),
        channel(
            "redis-operator",
            "candidate",
            vec![entry("redis-operator.v0.1.0")],
        ),
        channel(
            "redis-operator",
            "stable",
            vec![
                entry("redis-operator.v0.1.0"),
                replaces("redis-operator.v0.2.0", "redis-operator.v0.1.0"),
            ],
        ),
        bundle("redis-operator", "redis-operator.v0.1.0", "0.1.0").into(),
        bundle("redis-operator", "redis-operator.v0.2.0", "0.2.0").into(),
        package("etcd", "stable"),
        channel("etcd", "stable", vec![entry("etcd.v1")]),
        bundle("etcd", "etcd.v1", "1.0.0").into(),
    ]);
    let cats = catalogs(vec![
        (key("olm", "ops"), 0, &m),
        (key("olm", "community"), 0, &m),
        (key("operators", "local"), 0, &m),
        (key("elsewhere", "hidden"), 0, &m),
    ]);
    let base = request("redis-operator", key("olm", "ops"));
    struct Case {
        name: &'static str,
        edit: fn(&mut Request),
        message: &'static str,
    }
    let cases = [
        Case {
            name: "misspelt channel",
            edit: |r| r.channel = Some("stabel".to_owned()),
            message: "package redis-operator has no channel 'stabel'; channels: alpha, \
                      candidate, stable (default); set spec.channel to one of them (did you mean \
                      'stable'?), or remove it to follow the default channel",
        },
        Case {
            name: "misspelt package",
            edit: |r| r.package = "redis-operater".to_owned(),
            message: "package redis-operater not found in CatalogSource olm/ops; did you mean \
                      redis-operator? (packages in the catalog: etcd, redis-operator); set \
                      spec.name to a package of the catalog",
        },
        Case {
            name: "unrelated package",
            edit: |r| r.package = "postgres".to_owned(),
            message: "package postgres not found in CatalogSource olm/ops (packages in the \
                      catalog: etcd, redis-operator); set spec.name to a package of the \
                      catalog, or spec.source to a catalog that has postgres",
        },
        Case {
            name: "unknown catalog in the global namespace",
            edit: |r| r.catalog = key("olm", "foo"),
            message: "CatalogSource olm/foo not found; catalogs in olm: community, ops; set \
                      spec.source to one of them, or create the CatalogSource",
        },
        Case {
            name: "catalog in a namespace the Subscription cannot use",
            edit: |r| r.catalog = key("elsewhere", "hidden2"),
            message: "CatalogSource elsewhere/hidden2 not found: a Subscription in namespace \
                      operators can only use catalogs in operators and in the global catalog \
                      namespace olm; catalogs there: olm/community, olm/ops, operators/local; \
                      set spec.sourceNamespace and spec.source to one of them",
        },
        Case {
            name: "unknown startingCSV in a channel",
            edit: |r| {
                r.channel = Some("stable".to_owned());
                r.starting_csv = Some("redis-operator.v0.3.0".to_owned());
            },
            message: "channel 'stable' of package redis-operator has no bundle \
                      'redis-operator.v0.3.0'; bundles in 'stable': redis-operator.v0.1.0 \
                      (0.1.0), redis-operator.v0.2.0 (0.2.0); set spec.startingCSV to one of \
                      them, or remove it to install the channel head redis-operator.v0.2.0",
        },
        Case {
            name: "unknown startingCSV without a channel",
            edit: |r| r.starting_csv = Some("redis.v9".to_owned()),
            message: "package redis-operator has no bundle 'redis.v9' in any channel; bundles: \
                      redis-operator.v0.1.0 (0.1.0), redis-operator.v0.2.0 (0.2.0); set \
                      spec.startingCSV to one of them, or remove it to install the channel head \
                      redis-operator.v0.2.0",
        },
    ];
    for case in cases {
        let mut req = base.clone();
        (case.edit)(&mut req);
        let err = failure(&req, &cats, &Installed::default());
        assert_eq!(err.to_string(), case.message, "{}", case.name);
        assert_eq!(err.reason(), reason::CONSTRAINTS_NOT_SATISFIABLE, "{}", case.name);
    }
}

#[test]
fn a_large_catalog_without_a_close_match_reports_its_package_count() {
    let mut docs = Vec::new();
    for name in ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"] {
        docs.push(package(name, "stable"));
        docs.push(channel(name, "stable", vec![entry(&format!("{name}.v1"))]));
        docs.push(bundle(name, &format!("{name}.v1"), "1.0.0").into());
    }
    let m = model(docs);
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let req = request("zookeeper", key("olm", "ops"));
    assert_eq!(
        failure(&req, &cats, &Installed::default()).to_string(),
        "package zookeeper not found in CatalogSource olm/ops (the catalog has 6 packages); set \
         spec.name to a package of the catalog, or spec.source to a catalog that has zookeeper"
    );
}

#[test]
fn an_unreadable_catalog_prevents_resolution_of_its_own_subscriptions_only() {
    let good = etcd();
    let mut cats = catalogs(vec![(key("olm", "good"), 0, &good)]);
    cats.catalogs.push(Catalog {
        key: key("olm", "broken"),
        priority: 10,
        model: None,
        problem: Some("configmap olm/broken-content: document 2 is not valid YAML".to_owned()),
    });

    let err = failure(
        &request("etcd", key("olm", "broken")),
        &cats,
        &Installed::default(),
    );
    assert_eq!(err.reason(), reason::ERROR_PREVENTED_RESOLUTION);
    assert_eq!(
        err.to_string(),
        "CatalogSource olm/broken cannot be used: configmap olm/broken-content: document 2 is \
         not valid YAML; fix the catalog (its status.message says more); Subscriptions using \
         other catalogs are not affected"
    );

    let res = resolve(&request("etcd", key("olm", "good")), &cats, &Installed::default())
        .expect("the other catalog still resolves");
    assert_eq!(installed_bundle(&res).0, "etcd.v0.9.4");
}

#[test]
fn a_broken_channel_graph_prevents_resolution_with_the_graph_error() {
    let m = model(vec![
        package("a", "stable"),
        channel("a", "stable", vec![entry("a.v1"), entry("a.v2")]),
        bundle("a", "a.v1", "1.0.0").into(),
        bundle("a", "a.v2", "2.0.0").into(),
    ]);
    let cats = catalogs(vec![(key("olm", "c"), 0, &m)]);
    let err = failure(&request("a", key("olm", "c")), &cats, &Installed::default());
    assert_eq!(err.reason(), reason::ERROR_PREVENTED_RESOLUTION);
    assert_eq!(
        err.to_string(),
        "channel 'stable' of package a in CatalogSource olm/c has a broken upgrade graph: \
         multiple channel heads found in graph: a.v1, a.v2 (exactly one entry must not be \
         replaced or skipped by another; make one of them replace the other)"
    );
}

// ---------------------------------------------------------------------------------------------
// Dependencies

/// `app` requires `db` in a range; `db` has 1.0.0 ← 1.5.0 ← 2.0.0 in `stable`.
fn app_and_db(range: &str) -> Model {
    model(vec![
        package("app", "stable"),
        channel("app", "stable", vec![entry("app.v1")]),
        bundle("app", "app.v1", "1.0.0")
            .requires_package("db", range)
            .into(),
        package("db", "stable"),
        channel(
            "db",
            "stable",
            vec![
                entry("db.v1.0.0"),
                replaces("db.v1.5.0", "db.v1.0.0"),
                replaces("db.v2.0.0", "db.v1.5.0"),
            ],
        ),
        bundle("db", "db.v1.0.0", "1.0.0").into(),
        bundle("db", "db.v1.5.0", "1.5.0").into(),
        bundle("db", "db.v2.0.0", "2.0.0").into(),
    ])
}

#[test]
fn a_package_dependency_installs_the_newest_bundle_in_range_through_a_generated_subscription() {
    let m = app_and_db(">=1.0.0 <2.0.0");
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let res = resolve(&request("app", key("olm", "ops")), &cats, &Installed::default()).expect("resolves");
    assert_eq!(installed_bundle(&res).0, "app.v1");
    assert_eq!(res.dependencies.len(), 1);
    let dep = &res.dependencies[0];
    assert_eq!(dep.subscription_name, "db-stable-ops-olm");
    assert_eq!(dep.bundle.bundle, "db.v1.5.0");
    assert_eq!(dep.bundle.selection, Selection::Dependency);
    assert_eq!(dep.required_by, "app.v1");
    assert_eq!(
        dep.requirement.to_string(),
        "package db in version range '>=1.0.0 <2.0.0'"
    );

    let sub = dep.subscription("operators", "install-abc12");
    assert_eq!(sub.metadata.name.as_deref(), Some("db-stable-ops-olm"));
    assert_eq!(sub.metadata.namespace.as_deref(), Some("operators"));
    assert_eq!(
        sub.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(labels::GENERATED_BY))
            .map(String::as_str),
        Some("install-abc12")
    );
    assert_eq!(sub.spec.name, "db");
    assert_eq!(sub.spec.channel.as_deref(), Some("stable"));
    assert_eq!(sub.spec.source, "ops");
    assert_eq!(sub.spec.source_namespace, "olm");
    assert_eq!(sub.spec.starting_csv.as_deref(), Some("db.v1.5.0"));
    assert_eq!(sub.spec.install_plan_approval, Some(Approval::Automatic));
}

#[test]
fn a_dependency_already_satisfied_in_the_namespace_installs_nothing() {
    let m = app_and_db(">=1.0.0 <2.0.0");
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let inst = Installed {
        csvs: vec![csv("db.v1.0.0", "1.0.0", "db")],
        subscriptions: vec![ExistingSubscription {
            name: "db".to_owned(),
            package: "db".to_owned(),
            catalog: key("olm", "ops"),
            current_csv: Some("db.v1.0.0".to_owned()),
            installed_csv: Some("db.v1.0.0".to_owned()),
        }],
    };
    let res = resolve(&request("app", key("olm", "ops")), &cats, &inst).expect("resolves");
    assert!(res.dependencies.is_empty(), "{:?}", res.dependencies);
}

#[test]
fn a_dependency_whose_package_is_subscribed_at_a_wrong_version_is_a_conflict() {
    let m = app_and_db(">=1.5.0 <2.0.0");
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let inst = Installed {
        csvs: vec![csv("db.v1.0.0", "1.0.0", "db")],
        subscriptions: vec![ExistingSubscription {
            name: "db".to_owned(),
            package: "db".to_owned(),
            catalog: key("olm", "ops"),
            current_csv: Some("db.v1.0.0".to_owned()),
            installed_csv: Some("db.v1.0.0".to_owned()),
        }],
    };
    let err = failure(&request("app", key("olm", "ops")), &cats, &inst);
    assert_eq!(
        err.to_string(),
        "bundle app.v1 (package app, CatalogSource olm/ops) requires package db in version \
         range '>=1.5.0 <2.0.0', but package db is already subscribed by Subscription db at CSV \
         db.v1.0.0, which does not satisfy it; change Subscription db (channel or catalog) so \
         it does, or choose a version of app whose requirement it meets"
    );
    assert_eq!(err.reason(), reason::CONSTRAINTS_NOT_SATISFIABLE);
}

#[test]
fn a_missing_package_dependency_says_what_the_catalogs_have() {
    let m = app_and_db(">=3.0.0");
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let err = failure(&request("app", key("olm", "ops")), &cats, &Installed::default());
    assert_eq!(
        err.to_string(),
        "bundle app.v1 (package app, CatalogSource olm/ops) requires package db in version \
         range '>=3.0.0', and no catalog offers it; the catalogs have: CatalogSource olm/ops \
         has db 1.0.0, 1.5.0, 2.0.0; add a CatalogSource that offers a matching version of db, \
         or install one yourself with a Subscription"
    );
    assert_eq!(err.reason(), reason::CONSTRAINTS_NOT_SATISFIABLE);
}

#[test]
fn a_gvk_dependency_is_met_by_the_package_providing_the_api() {
    let m = model(vec![
        package("app", "stable"),
        channel("app", "stable", vec![entry("app.v1")]),
        bundle("app", "app.v1", "1.0.0")
            .requires_gvk("monitoring.coreos.com", "v1", "Prometheus")
            .into(),
        package("prometheus", "beta"),
        channel(
            "prometheus",
            "beta",
            vec![
                entry("prometheus.v0.22"),
                replaces("prometheus.v0.27", "prometheus.v0.22"),
            ],
        ),
        bundle("prometheus", "prometheus.v0.22", "0.22.0")
            .provides("monitoring.coreos.com", "v1", "Prometheus")
            .into(),
        bundle("prometheus", "prometheus.v0.27", "0.27.0")
            .provides("monitoring.coreos.com", "v1", "Prometheus")
            .into(),
    ]);
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let res = resolve(&request("app", key("olm", "ops")), &cats, &Installed::default()).expect("resolves");
    let names: Vec<(&str, &str)> = res
        .dependencies
        .iter()
        .map(|d| (d.subscription_name.as_str(), d.bundle.bundle.as_str()))
        .collect();
    assert_eq!(names, [("prometheus-beta-ops-olm", "prometheus.v0.27")]);
    assert_eq!(
        res.dependencies[0].requirement.to_string(),
        "API Prometheus (monitoring.coreos.com/v1)"
    );
}

#[test]
fn a_missing_gvk_dependency_names_near_misses_and_skipped_catalogs() {
    let app = model(vec![
        package("app", "stable"),
        channel("app", "stable", vec![entry("app.v1")]),
        bundle("app", "app.v1", "1.0.0")
            .requires_gvk("monitoring.coreos.com", "v1", "Prometheus")
            .into(),
        package("prom", "stable"),
        channel("prom", "stable", vec![entry("prom.v1")]),
        bundle("prom", "prom.v1", "1.0.0")
            .provides("monitoring.coreos.com", "v1beta1", "Prometheus")
            .into(),
    ]);
    let mut cats = catalogs(vec![(key("olm", "ops"), 0, &app)]);
    cats.catalogs.push(Catalog {
        key: key("olm", "down"),
        priority: 0,
        model: None,
        problem: Some("configmap olm/down not found".to_owned()),
    });
    let err = failure(&request("app", key("olm", "ops")), &cats, &Installed::default());
    assert_eq!(
        err.to_string(),
        "bundle app.v1 (package app, CatalogSource olm/ops) requires API Prometheus \
         (monitoring.coreos.com/v1), and no catalog offers it; the catalogs have: in \
         CatalogSource olm/ops: prom.v1 provides Prometheus (monitoring.coreos.com/v1beta1); \
         left out: CatalogSource olm/down (unreadable: configmap olm/down not found); add a \
         CatalogSource with an operator that provides this API, or install one yourself"
    );
}

/// A catalog offering package `dep` (one bundle `<version>`) and nothing else.
fn dep_catalog(version: &str) -> Model {
    let name = format!("dep.v{version}");
    model(vec![
        package("dep", "stable"),
        channel("dep", "stable", vec![entry(&name)]),
        bundle("dep", &name, version).into(),
    ])
}

/// `app` requiring any `dep`, plus (optionally) its own `dep` 1.0.0.
fn app_catalog(with_dep: bool) -> Model {
    let mut docs = vec![
        package("app", "stable"),
        channel("app", "stable", vec![entry("app.v1")]),
        bundle("app", "app.v1", "1.0.0")
            .requires_package("dep", ">=0.0.0")
            .into(),
    ];
    if with_dep {
        docs.push(package("dep", "stable"));
        docs.push(channel("dep", "stable", vec![entry("dep.v1.0.0")]));
        docs.push(bundle("dep", "dep.v1.0.0", "1.0.0").into());
    }
    model(docs)
}

#[test]
fn dependency_catalogs_are_preferred_in_upstream_order() {
    let app_with = app_catalog(true);
    let app_without = app_catalog(false);
    let d2 = dep_catalog("2.0.0");
    let d3 = dep_catalog("3.0.0");
    let d4 = dep_catalog("4.0.0");
    struct Case<'m> {
        name: &'static str,
        catalogs: Vec<(CatalogKey, i32, &'m Model)>,
        expected: (&'static str, &'static str),
    }
    let cases = [
        Case {
            name: "the catalog of the requiring bundle beats a higher priority",
            catalogs: vec![(key("olm", "ops"), 0, &app_with), (key("olm", "zzz"), 100, &d2)],
            expected: ("dep.v1.0.0", "dep-stable-ops-olm"),
        },
        Case {
            name: "a higher priority beats the Subscription's namespace and the name",
            catalogs: vec![
                (key("olm", "ops"), 0, &app_without),
                (key("operators", "aaa"), 0, &d2),
                (key("olm", "zzz"), 5, &d3),
            ],
            expected: ("dep.v3.0.0", "dep-stable-zzz-olm"),
        },
        Case {
            name: "at equal priority the Subscription's namespace beats the global one",
            catalogs: vec![
                (key("olm", "ops"), 0, &app_without),
                (key("olm", "aaa"), 0, &d2),
                (key("operators", "zzz"), 0, &d3),
            ],
            expected: ("dep.v3.0.0", "dep-stable-zzz-operators"),
        },
        Case {
            name: "otherwise the catalog name decides",
            catalogs: vec![
                (key("olm", "ops"), 0, &app_without),
                (key("olm", "ccc"), 0, &d4),
                (key("olm", "bbb"), 0, &d3),
                (key("olm", "ddd"), 0, &d2),
            ],
            expected: ("dep.v3.0.0", "dep-stable-bbb-olm"),
        },
    ];
    for case in cases {
        let cats = catalogs(case.catalogs);
        let res = resolve(&request("app", key("olm", "ops")), &cats, &Installed::default())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let got: Vec<(&str, &str)> = res
            .dependencies
            .iter()
            .map(|d| (d.bundle.bundle.as_str(), d.subscription_name.as_str()))
            .collect();
        assert_eq!(got, [case.expected], "{}", case.name);
    }
}

#[test]
fn within_a_catalog_the_default_channel_comes_first_then_package_and_channel_names() {
    // Two packages provide the API; `aaa` sorts first but the match there is in a non-default
    // channel, while `zzz` has it in its default channel.
    let m = model(vec![
        package("app", "stable"),
        channel("app", "stable", vec![entry("app.v1")]),
        bundle("app", "app.v1", "1.0.0")
            .requires_gvk("example.com", "v1", "Thing")
            .into(),
        package("aaa", "stable"),
        channel("aaa", "stable", vec![entry("aaa.v1")]),
        channel("aaa", "beta", vec![replaces("aaa.v2", "aaa.v1")]),
        bundle("aaa", "aaa.v1", "1.0.0").into(),
        bundle("aaa", "aaa.v2", "2.0.0")
            .provides("example.com", "v1", "Thing")
            .into(),
        package("zzz", "main"),
        channel("zzz", "main", vec![entry("zzz.v1")]),
        bundle("zzz", "zzz.v1", "1.0.0")
            .provides("example.com", "v1", "Thing")
            .into(),
    ]);
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let res = resolve(&request("app", key("olm", "ops")), &cats, &Installed::default()).expect("resolves");
    let got: Vec<&str> = res
        .dependencies
        .iter()
        .map(|d| d.bundle.bundle.as_str())
        .collect();
    assert_eq!(got, ["zzz.v1"]);
}

#[test]
fn dependencies_are_resolved_transitively() {
    let m = model(vec![
        package("a", "stable"),
        channel("a", "stable", vec![entry("a.v1")]),
        bundle("a", "a.v1", "1.0.0")
            .requires_package("b", ">=1.0.0")
            .into(),
        package("b", "stable"),
        channel("b", "stable", vec![entry("b.v1")]),
        bundle("b", "b.v1", "1.0.0")
            .requires_gvk("c.example.com", "v1", "C")
            .into(),
        package("c", "stable"),
        channel("c", "stable", vec![entry("c.v1")]),
        bundle("c", "c.v1", "1.0.0")
            .provides("c.example.com", "v1", "C")
            .into(),
    ]);
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let res = resolve(&request("a", key("olm", "ops")), &cats, &Installed::default()).expect("resolves");
    let got: Vec<(&str, &str)> = res
        .dependencies
        .iter()
        .map(|d| (d.bundle.bundle.as_str(), d.required_by.as_str()))
        .collect();
    assert_eq!(got, [("b.v1", "a.v1"), ("c.v1", "b.v1")]);
}

#[test]
fn a_dependency_cycle_terminates() {
    let m = model(vec![
        package("a", "stable"),
        channel("a", "stable", vec![entry("a.v1")]),
        bundle("a", "a.v1", "1.0.0")
            .requires_package("b", ">=1.0.0")
            .provides("a.example.com", "v1", "A")
            .into(),
        package("b", "stable"),
        channel("b", "stable", vec![entry("b.v1")]),
        bundle("b", "b.v1", "1.0.0")
            .requires_package("a", ">=1.0.0")
            .requires_gvk("a.example.com", "v1", "A")
            .requires_package("c", ">=1.0.0")
            .into(),
        package("c", "stable"),
        channel("c", "stable", vec![entry("c.v1")]),
        bundle("c", "c.v1", "1.0.0")
            .requires_package("b", ">=1.0.0")
            .into(),
    ]);
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let res = resolve(&request("a", key("olm", "ops")), &cats, &Installed::default()).expect("resolves");
    let got: Vec<&str> = res
        .dependencies
        .iter()
        .map(|d| d.bundle.bundle.as_str())
        .collect();
    assert_eq!(got, ["b.v1", "c.v1"]);
}

#[test]
fn a_broken_catalog_does_not_block_a_dependency_found_elsewhere() {
    let app = app_catalog(false);
    let d2 = dep_catalog("2.0.0");
    let mut cats = catalogs(vec![(key("olm", "ops"), 0, &app), (key("olm", "deps"), 0, &d2)]);
    cats.catalogs.push(Catalog {
        key: key("olm", "aaa-broken"),
        priority: 100,
        model: None,
        problem: Some("unreachable".to_owned()),
    });
    let res = resolve(&request("app", key("olm", "ops")), &cats, &Installed::default())
        .expect("resolves despite the broken catalog");
    assert_eq!(res.dependencies[0].bundle.bundle, "dep.v2.0.0");
}

#[test]
fn the_installed_bundle_gets_its_missing_dependencies_back() {
    let m = app_and_db(">=1.0.0 <2.0.0");
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let (req, inst) = upgrading("app", key("olm", "ops"), "app.v1", "1.0.0");
    let res = resolve(&req, &cats, &inst).expect("resolves");
    assert!(matches!(res.outcome, Outcome::AtLatestKnown { .. }));
    let got: Vec<&str> = res
        .dependencies
        .iter()
        .map(|d| d.bundle.bundle.as_str())
        .collect();
    assert_eq!(got, ["db.v1.5.0"]);
}

#[test]
fn close_matches_prefer_the_nearest_names() {
    use super::error::{close_matches, edit_distance};
    assert_eq!(edit_distance("stabel", "stable"), 2);
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(
        close_matches("stabel", ["alpha", "stable", "candidate"], 3),
        ["stable"]
    );
    assert_eq!(
        close_matches("redis", ["redis-operator", "etcd", "rediss"], 3),
        ["rediss", "redis-operator"]
    );
    assert!(close_matches("x", ["postgres"], 3).is_empty());
}

#[test]
fn an_upgrade_that_would_break_an_installed_dependent_is_held_back() {
    // db: 1.0.0 <- 1.5.0 <- 2.0.0, and 2.0.0 also skipRanges over every 1.x.
    let m = model(vec![
        package("app", "stable"),
        channel("app", "stable", vec![entry("app.v1")]),
        bundle("app", "app.v1", "1.0.0")
            .requires_package("db", ">=1.0.0 <2.0.0")
            .into(),
        package("db", "stable"),
        channel(
            "db",
            "stable",
            vec![
                entry("db.v1.0.0"),
                replaces("db.v1.5.0", "db.v1.0.0"),
                json!({"name": "db.v2.0.0", "replaces": "db.v1.5.0",
                       "skipRange": ">=1.0.0 <2.0.0"}),
            ],
        ),
        bundle("db", "db.v1.0.0", "1.0.0").into(),
        bundle("db", "db.v1.5.0", "1.5.0").into(),
        bundle("db", "db.v2.0.0", "2.0.0").into(),
    ]);
    let cats = catalogs(vec![(key("olm", "ops"), 0, &m)]);
    let with_app = |db_csv: &str, db_version: &str| {
        let (mut req, mut inst) = upgrading("db", key("olm", "ops"), db_csv, db_version);
        req.name = "db-stable-ops-olm".to_owned();
        inst.subscriptions[0].name = req.name.clone();
        inst.csvs.push(csv("app.v1", "1.0.0", "app"));
        inst.subscriptions.push(ExistingSubscription {
            name: "app".to_owned(),
            package: "app".to_owned(),
            catalog: key("olm", "ops"),
            current_csv: Some("app.v1".to_owned()),
            installed_csv: Some("app.v1".to_owned()),
        });
        (req, inst)
    };

    let (req, inst) = with_app("db.v1.0.0", "1.0.0");
    let res = resolve(&req, &cats, &inst).expect("resolves");
    assert_eq!(
        installed_bundle(&res),
        (
            "db.v1.5.0",
            "stable",
            &Selection::Upgrade {
                replaces: "db.v1.0.0".to_owned(),
                edge: EdgeKind::Replaces
            }
        ),
        "the skipRange jump to 2.0.0 gives way to the replaces step"
    );

    let (req, inst) = with_app("db.v1.5.0", "1.5.0");
    let res = resolve(&req, &cats, &inst).expect("resolves");
    assert_eq!(
        res.outcome,
        Outcome::AtLatestKnown {
            csv: "db.v1.5.0".to_owned(),
            note: Some(
                "db.v2.0.0 is held back because installed bundle app.v1 requires package db in \
                 version range '>=1.0.0 <2.0.0', which db.v2.0.0 does not satisfy; the upgrade \
                 happens once that operator accepts it"
                    .to_owned()
            )
        }
    );

    // Without the dependent the same Subscription jumps straight to 2.0.0.
    let (req, inst) = upgrading("db", key("olm", "ops"), "db.v1.0.0", "1.0.0");
    let res = resolve(&req, &cats, &inst).expect("resolves");
    assert_eq!(installed_bundle(&res).0, "db.v2.0.0");
}

#[test]
fn generated_subscription_names_follow_upstream_and_stay_valid_object_names() {
    assert_eq!(
        generated_subscription_name("db", "stable", &key("olm", "ops")),
        "db-stable-ops-olm"
    );
    assert_eq!(
        generated_subscription_name("db", "Stable_V1", &key("olm", "ops")),
        "db-stable-v1-ops-olm"
    );
    let long = "x".repeat(300);
    assert_eq!(
        generated_subscription_name(&long, "stable", &key("olm", "ops")).len(),
        253
    );
}

#[test]
fn a_subscription_switched_to_another_package_upgrades_to_the_entry_replacing_its_installed_csv() {
    // Upstream's "switching from one package to another": package2's entry replaces package1's,
    // and the Subscription's installedCSV still names package1's CSV.
    let m = model(vec![
        package("package1", "stable"),
        channel("package1", "stable", vec![entry("package1.v1.0.0")]),
        bundle("package1", "package1.v1.0.0", "1.0.0").into(),
        package("package2", "stable"),
        channel(
            "package2",
            "stable",
            vec![replaces("package2.v1.0.0", "package1.v1.0.0")],
        ),
        bundle("package2", "package2.v1.0.0", "1.0.0").into(),
    ]);
    let k = key("operators", "cat");
    let (mut req, mut inst) = upgrading("package1", k.clone(), "package1.v1.0.0", "1.0.0");
    req.package = "package2".to_owned();
    if let Some(sub) = inst.subscriptions.first_mut() {
        sub.package = "package2".to_owned();
    }
    let res = resolve(&req, &catalogs(vec![(k.clone(), 0, &m)]), &inst).expect("resolves");
    let (chosen, _, selection) = installed_bundle(&res);
    assert_eq!(chosen, "package2.v1.0.0");
    assert!(
        matches!(selection, Selection::Upgrade { replaces, .. } if replaces == "package1.v1.0.0"),
        "{selection:?}"
    );
    // Without an entry replacing it, the installed CSV stays, and the note says why.
    let lone = model(vec![
        package("package1", "stable"),
        channel("package1", "stable", vec![entry("package1.v1.0.0")]),
        bundle("package1", "package1.v1.0.0", "1.0.0").into(),
        package("package2", "stable"),
        channel("package2", "stable", vec![entry("package2.v1.0.0")]),
        bundle("package2", "package2.v1.0.0", "1.0.0").into(),
    ]);
    let res = resolve(&req, &catalogs(vec![(k, 0, &lone)]), &inst).expect("resolves");
    match &res.outcome {
        Outcome::AtLatestKnown { csv, note } => {
            assert_eq!(csv, "package1.v1.0.0");
            assert!(
                note.as_deref()
                    .is_some_and(|n| n.contains("not in any channel of package package2")),
                "{note:?}"
            );
        }
        other => panic!("expected AtLatestKnown, got {other:?}"),
    }
}
