use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

use super::*;
use crate::api::v1::OperatorGroupSpec;

fn og(spec: OperatorGroupSpec) -> OperatorGroup {
    let mut og = OperatorGroup::new("og", spec);
    og.metadata.namespace = Some("operators".into());
    og
}

fn cluster() -> Vec<NamespaceInfo> {
    vec![
        NamespaceInfo::new("team-a", [("tenant", "a"), ("env", "prod")]),
        NamespaceInfo::new("team-b", [("tenant", "b"), ("env", "prod")]),
        NamespaceInfo::new("kube-system", []),
    ]
}

fn modes(list: &[(&str, bool)]) -> Vec<InstallMode> {
    list.iter()
        .map(|(t, s)| InstallMode {
            type_: InstallModeType::parse(t),
            supported: *s,
        })
        .collect()
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn explicit_targets_win_over_the_selector_and_are_sorted_without_duplicates() {
    let spec = OperatorGroupSpec {
        target_namespaces: Some(strings(&["team-b", "team-a", "team-b"])),
        selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("tenant".into(), "a".into())])),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        target_namespaces(&og(spec), &cluster()).unwrap(),
        strings(&["team-a", "team-b"])
    );
}

#[test]
fn an_empty_string_among_explicit_targets_is_rejected_with_the_fix() {
    let spec = OperatorGroupSpec {
        target_namespaces: Some(strings(&["team-a", ""])),
        ..Default::default()
    };
    let err = target_namespaces(&og(spec), &cluster()).unwrap_err();
    assert!(matches!(err, TargetError::EmptyTargetNamespace { .. }));
    assert!(err.to_string().contains("remove spec.targetNamespaces"));
}

#[test]
fn a_selector_picks_the_matching_namespaces() {
    let spec = OperatorGroupSpec {
        selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("env".into(), "prod".into())])),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tenant".into(),
                operator: "NotIn".into(),
                values: Some(strings(&["b"])),
            }]),
        }),
        ..Default::default()
    };
    assert_eq!(
        target_namespaces(&og(spec), &cluster()).unwrap(),
        strings(&["team-a"])
    );
}

#[test]
fn a_selector_matching_nothing_gives_no_targets() {
    let spec = OperatorGroupSpec {
        selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("tenant".into(), "zzz".into())])),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(target_namespaces(&og(spec), &cluster()).unwrap().is_empty());
}

#[test]
fn no_targets_and_no_selector_or_an_empty_one_means_all_namespaces() {
    assert_eq!(
        target_namespaces(&og(OperatorGroupSpec::default()), &cluster()).unwrap(),
        strings(&[""])
    );
    let spec = OperatorGroupSpec {
        selector: Some(LabelSelector::default()),
        target_namespaces: Some(vec![]),
        ..Default::default()
    };
    assert_eq!(target_namespaces(&og(spec), &cluster()).unwrap(), strings(&[""]));
}

#[test]
fn an_invalid_selector_operator_is_reported_with_the_valid_ones() {
    let spec = OperatorGroupSpec {
        selector: Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tenant".into(),
                operator: "Equals".into(),
                values: Some(strings(&["a"])),
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = target_namespaces(&og(spec), &cluster()).unwrap_err();
    assert!(
        err.to_string().contains("use In, NotIn, Exists or DoesNotExist"),
        "{err}"
    );
}

#[test]
fn selector_expressions_follow_kubernetes_semantics() {
    let labels = BTreeMap::from([("a".to_owned(), "1".to_owned())]);
    let expr = |op: &str, values: &[&str]| LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "a".into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(strings(values))
            },
        }]),
        ..Default::default()
    };
    assert!(selector_matches(&expr("In", &["1", "2"]), &labels).unwrap());
    assert!(!selector_matches(&expr("NotIn", &["1"]), &labels).unwrap());
    assert!(selector_matches(&expr("Exists", &[]), &labels).unwrap());
    assert!(!selector_matches(&expr("DoesNotExist", &[]), &labels).unwrap());
    assert!(selector_matches(&expr("In", &[]), &labels).is_err());
    assert!(selector_matches(&expr("Exists", &["x"]), &labels).is_err());
}

#[test]
fn member_annotations_carry_the_group_namespace_and_sorted_targets() {
    let a = member_annotations("og", "operators", &strings(&["b", "a"]));
    assert_eq!(a[OPERATOR_GROUP], "og");
    assert_eq!(a[OPERATOR_NAMESPACE], "operators");
    assert_eq!(a[TARGET_NAMESPACES], "a,b");
    assert_eq!(
        member_annotations("og", "operators", &strings(&[""]))[TARGET_NAMESPACES],
        ""
    );
}

#[test]
fn install_modes_table() {
    let own_all = modes(&[
        ("OwnNamespace", true),
        ("SingleNamespace", false),
        ("MultiNamespace", false),
        ("AllNamespaces", true),
    ]);
    let every = modes(&[
        ("OwnNamespace", true),
        ("SingleNamespace", true),
        ("MultiNamespace", true),
        ("AllNamespaces", true),
    ]);
    let multi_only = modes(&[("MultiNamespace", true)]);
    let check = |m: &[InstallMode], targets: &[&str]| {
        check_install_modes("op.v1", m, "og", "operators", &strings(targets)).map_err(|e| e.reason())
    };
    use CsvReason::*;
    type Row<'a> = (&'a [InstallMode], &'a [&'a str], Result<(), CsvReason>);
    let table: &[Row] = &[
        (&own_all, &["operators"], Ok(())),
        (&own_all, &[""], Ok(())),
        (&own_all, &["team-a"], Err(UnsupportedOperatorGroup)),
        (&own_all, &["team-a", "team-b"], Err(UnsupportedOperatorGroup)),
        (&own_all, &[], Err(NoTargetNamespaces)),
        (&every, &["team-a"], Ok(())),
        (&every, &["team-a", "operators"], Ok(())),
        (&every, &["team-a", ""], Err(UnsupportedOperatorGroup)),
        (&multi_only, &["team-a", "team-b"], Ok(())),
        (
            &multi_only,
            &["team-a", "operators"],
            Err(UnsupportedOperatorGroup),
        ),
        (&multi_only, &["operators"], Err(UnsupportedOperatorGroup)),
    ];
    for (m, targets, want) in table {
        assert_eq!(&check(m, targets), want, "targets {targets:?}");
    }
}

#[test]
fn duplicate_install_modes_are_invalid_even_if_they_agree() {
    let m = modes(&[("OwnNamespace", true), ("OwnNamespace", true)]);
    let err = check_install_modes("op.v1", &m, "og", "operators", &strings(&["operators"])).unwrap_err();
    assert_eq!(err.reason(), CsvReason::InvalidInstallModes);
    assert!(err.to_string().contains("OwnNamespace more than once"));
}

#[test]
fn an_unsupported_single_namespace_says_what_to_target_instead() {
    let m = modes(&[
        ("OwnNamespace", true),
        ("SingleNamespace", false),
        ("AllNamespaces", true),
    ]);
    let err = check_install_modes(
        "redis-operator.v1.0.0",
        &m,
        "og-single",
        "operators",
        &strings(&["team-a"]),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the OperatorGroup og-single targets namespace team-a, which needs install mode SingleNamespace; \
         redis-operator.v1.0.0 supports OwnNamespace, AllNamespaces: target the operator namespace or all namespaces"
    );
}

#[test]
fn a_multi_namespace_group_including_the_operator_namespace_names_both_missing_modes() {
    let m = modes(&[("AllNamespaces", true)]);
    let err =
        check_install_modes("op.v1", &m, "og", "operators", &strings(&["operators", "team-a"])).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("targets namespaces operators, team-a"), "{text}");
    assert!(
        text.contains("needs install mode MultiNamespace and OwnNamespace"),
        "{text}"
    );
    assert!(text.ends_with("target all namespaces"), "{text}");
}

#[test]
fn exactly_one_operator_group_is_selected_and_otherwise_the_groups_are_named() {
    let names = strings(&["og-b", "og-a"]);
    let pick = |g: &[String]| select_operator_group("ns", g, |s| s.as_str()).cloned();
    assert_eq!(pick(&names[..1]), Ok("og-b".to_owned()));
    let none = pick(&[]).unwrap_err();
    assert_eq!(none.reason(), CsvReason::NoOperatorGroup);
    assert!(none.to_string().contains("--create-operator-group"));
    let many = pick(&names).unwrap_err();
    assert_eq!(many.reason(), CsvReason::TooManyOperatorGroups);
    assert_eq!(
        many.to_string(),
        "namespace ns has 2 OperatorGroups (og-a, og-b); exactly one is allowed: delete all but one"
    );
}

#[test]
fn a_lone_group_has_no_multiple_groups_condition() {
    let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    assert!(multiple_groups_condition("ns", &strings(&["og"]), Some(1), &now).is_none());
    let c = multiple_groups_condition("ns", &strings(&["b", "a"]), Some(1), &now).unwrap();
    assert_eq!(c.reason, "MultipleOperatorGroupsFound");
    assert!(c.message.contains("(a, b)"));
}

fn scoped(account: Option<&str>) -> OperatorGroup {
    og(OperatorGroupSpec {
        service_account_name: account.map(str::to_owned),
        ..Default::default()
    })
}

fn epoch() -> Time {
    Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
}

#[test]
fn a_found_account_is_referenced_and_clears_the_condition() {
    let (reference, condition) = service_account_status(
        &scoped(Some("installer")),
        NamedAccount::Found { uid: Some("u-1") },
        &epoch(),
    );
    let reference = reference.unwrap();
    assert_eq!(reference.kind.as_deref(), Some("ServiceAccount"));
    assert_eq!(reference.api_version.as_deref(), Some("v1"));
    assert_eq!(reference.namespace.as_deref(), Some("operators"));
    assert_eq!(reference.name.as_deref(), Some("installer"));
    assert_eq!(reference.uid.as_deref(), Some("u-1"));
    assert_eq!(condition, None);
}

#[test]
fn a_missing_account_drops_the_reference_and_says_so_as_upstream() {
    let (reference, condition) =
        service_account_status(&scoped(Some("installer")), NamedAccount::Missing, &epoch());
    assert_eq!(reference, None);
    let condition = condition.unwrap();
    assert_eq!(condition.type_, "OperatorGroupServiceAccount");
    assert_eq!(condition.status, "True");
    assert_eq!(condition.reason, "ServiceAccountNotFound");
    assert_eq!(condition.message, "ServiceAccount installer not found");
}

#[test]
fn a_group_naming_no_account_carries_neither() {
    for name in [None, Some("")] {
        let group = scoped(name);
        assert_eq!(named_service_account(&group), None);
        assert_eq!(
            service_account_status(&group, NamedAccount::Found { uid: None }, &epoch()),
            (None, None)
        );
    }
}
