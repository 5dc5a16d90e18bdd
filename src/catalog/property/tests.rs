use serde_json::json;

use super::*;

fn raw(type_: &str, value: Value) -> declcfg::Property {
    declcfg::Property::new(type_, &value)
}

#[test]
fn known_properties_are_typed_and_unknown_ones_kept_verbatim() {
    let (props, errors) = parse(vec![
        raw(TYPE_PACKAGE, json!({"packageName": "redis", "version": "1.0.0"})),
        raw(
            TYPE_GVK,
            json!({"group": "cache.example.com", "version": "v1", "kind": "RedisCluster"}),
        ),
        raw(
            TYPE_GVK_REQUIRED,
            json!({"group": "", "version": "v1", "kind": "Secret"}),
        ),
        raw(
            TYPE_PACKAGE_REQUIRED,
            json!({"packageName": "etcd", "versionRange": ">=0.9.0 <1.0.0"}),
        ),
        raw("olm.maxOpenShiftVersion", json!("4.16")),
    ]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(props.packages[0].version, "1.0.0");
    assert_eq!(props.gvks[0].to_string(), "cache.example.com/v1/RedisCluster");
    assert_eq!(props.gvks_required[0].to_string(), "v1/Secret");
    assert!(
        props.packages_required[0]
            .version_range
            .contains(&semver::Version::new(0, 9, 5))
    );
    assert_eq!(props.others, vec![raw("olm.maxOpenShiftVersion", json!("4.16"))]);
}

#[test]
fn keys_match_case_insensitively_like_go() {
    let (props, errors) = parse(vec![raw(
        TYPE_PACKAGE,
        json!({"PackageName": "a", "VERSION": "1.0.0"}),
    )]);
    assert!(errors.is_empty());
    assert_eq!(
        props.packages[0],
        PackageProperty {
            package_name: "a".into(),
            version: "1.0.0".into(),
            release: String::new()
        }
    );
}

#[test]
fn a_wrongly_typed_field_names_the_index_type_and_field() {
    let (props, errors) = parse(vec![
        raw(TYPE_GVK, json!({"group": "g", "version": 1, "kind": "K"})),
        raw(TYPE_PACKAGE, json!({"packageName": "a", "version": "1.0.0"})),
    ]);
    assert_eq!(props.packages.len(), 1, "later properties are still parsed");
    assert_eq!(
        errors[0].to_string(),
        "property [0] of type \"olm.gvk\": field `version`: expected a string, found a number"
    );
}

#[test]
fn a_bad_version_range_is_reported_on_the_field() {
    let (_, errors) = parse(vec![raw(
        TYPE_PACKAGE_REQUIRED,
        json!({"packageName": "etcd", "versionRange": "^1.0.0"}),
    )]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].field.as_deref(), Some("versionRange"));
    assert!(errors[0].to_string().contains("\"^1.0.0\""), "{}", errors[0]);
}

#[test]
fn a_property_without_value_or_with_a_scalar_for_an_object_is_an_error() {
    let absent = declcfg::Property {
        type_: "custom".to_owned(),
        value: RawJson::absent(),
    };
    let (_, errors) = parse(vec![
        absent,
        raw(TYPE_PACKAGE, json!("a")),
        raw(TYPE_GVK, Value::Null),
    ]);
    assert_eq!(errors.len(), 3);
    assert!(errors[0].message.starts_with("value must be set"));
    assert_eq!(errors[1].message, "expected an object, found a string");
    assert!(errors[2].message.starts_with("value must be set"));
}

/// opm (checked with `opm validate`) refuses a property without `value` but keeps one of a type
/// it does not model whose `value` is an explicit `null` (the corpus's lightbits-operator has some).
#[test]
fn an_explicit_null_value_of_an_unknown_type_is_kept_and_a_missing_one_is_not() {
    let text = r#"{"schema":"olm.bundle","package":"p","name":"p.v1","image":"r/p:1","properties":[{"type":"x.null","value":null},{"type":"x.missing"}]}"#;
    // The fast blob decoder and the precise, Go-compatible one.
    for precise in [false, true] {
        let yaml = crate::codec::YamlDecoder::Fast;
        let mut cfg = declcfg::DeclarativeConfig::default();
        let problems = if precise {
            cfg.decode_str_precise(yaml, "c.json", text)
        } else {
            cfg.decode_str_with(yaml, "c.json", text)
        };
        assert!(problems.is_empty(), "{problems:?}");
        let values = &cfg.bundles[0].properties;
        assert!(
            values[0].value.is_null() && !values[0].value.is_absent(),
            "precise: {precise}"
        );
        assert!(values[1].value.is_absent(), "precise: {precise}");
        let (props, errors) = parse(values.clone());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].type_, "x.missing");
        assert_eq!(props.others.len(), 1);
        assert_eq!(props.others[0].value.text(), "null");
    }
}

#[test]
fn bundle_objects_decode_lazily_from_base64_yaml_or_json() {
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";
    let data = base64::engine::general_purpose::STANDARD.encode(yaml);
    let (props, errors) = parse(vec![raw(TYPE_BUNDLE_OBJECT, json!({ "data": data }))]);
    assert!(errors.is_empty());
    let object = &props.bundle_objects[0];
    assert!(object.check().is_ok());
    assert_eq!(object.decode().unwrap()["kind"], "ConfigMap");
    let bad = BundleObject::Data("not base64!".into());
    assert!(matches!(bad.check(), Err(ObjectError::Base64(_))));
    assert!(matches!(bad.decode(), Err(ObjectError::Base64(_))));
    assert!(matches!(
        BundleObject::Ref("x.yaml".into()).decode(),
        Err(ObjectError::Reference(_))
    ));
}

#[test]
fn bundle_object_ref_and_data_together_are_rejected() {
    let (_, errors) = parse(vec![raw(
        TYPE_BUNDLE_OBJECT,
        json!({"data": "YQ==", "ref": "a.yaml"}),
    )]);
    assert!(errors[0].message.contains("mutually exclusive"));
}

#[test]
fn csv_metadata_is_typed_field_by_field_and_keeps_unknown_fields() {
    let (props, errors) = parse(vec![raw(
        TYPE_CSV_METADATA,
        json!({
            "displayName": "Redis",
            "installModes": [{"type": "OwnNamespace", "supported": true}],
            "crdDescriptions": {"owned": [{"name": "redisclusters.cache.example.com", "version": "v1", "kind": "RedisCluster"}]},
            "maintainers": [{"name": "me", "email": "me@example.com"}],
            "nativeAPIs": [{"group": "", "version": "v1", "kind": "Pod"}]
        }),
    )]);
    assert!(errors.is_empty(), "{errors:?}");
    let meta = &props.csv_metadata[0];
    assert_eq!(meta.display_name, "Redis");
    assert!(meta.install_modes[0].supported);
    assert_eq!(meta.crd_descriptions.owned[0].kind, "RedisCluster");
    assert!(meta.extra.contains_key("nativeAPIs"));
    let (_, errors) = parse(vec![raw(TYPE_CSV_METADATA, json!({"keywords": "redis"}))]);
    assert_eq!(errors[0].field.as_deref(), Some("keywords"));
}

#[test]
fn nulls_inside_csv_metadata_are_zero_values_as_in_go() {
    let value = json!({
        "annotations": {"a": null, "b": "x"},
        "keywords": [null, "k"],
        "maintainers": [{"name": null, "email": "e"}],
        "installModes": [{"type": "AllNamespaces", "supported": null}]
    });
    // The fast path, and the precise one (forced by a key in another case).
    let mut precise = value.clone();
    precise["DisplayName"] = json!("D");
    for v in [value, precise] {
        let (props, errors) = parse(vec![raw(TYPE_CSV_METADATA, v)]);
        assert!(errors.is_empty(), "{errors:?}");
        let meta = &props.csv_metadata[0];
        assert_eq!(meta.annotations["a"], "");
        assert_eq!(meta.keywords, vec![String::new(), "k".to_owned()]);
        assert_eq!(meta.maintainers[0].name, "");
        assert!(!meta.install_modes[0].supported);
    }
}

#[test]
fn csv_metadata_is_typed_on_first_use_to_what_eager_typing_gives() {
    let value = json!({
        "displayName": "Redis",
        "annotations": {"capabilities": "Basic Install", "x": null},
        "installModes": [{"type": "AllNamespaces", "supported": true}],
        "crdDescriptions": {"owned": [{"name": "a.b", "version": "v1", "kind": "A", "specDescriptors": [{"path": "size"}]}]},
        "nativeAPIs": [{"group": "", "version": "v1", "kind": "Pod"}]
    });
    let (props, errors) = parse(vec![raw(TYPE_CSV_METADATA, value.clone())]);
    assert!(errors.is_empty(), "{errors:?}");
    let lazy = &props.csv_metadata[0];
    assert!(lazy.typed.get().is_none(), "not typed before first use");
    let eager: CsvMetadata = RawJson::from_value(&value)
        .parse::<FastCsvMetadata>()
        .unwrap()
        .into();
    assert_eq!(lazy.get(), &eager);
    assert_eq!(lazy.annotations["x"], "");
    assert_eq!(
        serde_json::to_value(Property::CsvMetadata(Box::new(lazy.clone()))).unwrap(),
        json!({"type": "olm.csv.metadata", "value": serde_json::to_value(&eager).unwrap()})
    );
}

#[test]
fn csv_metadata_can_be_derived_from_a_full_csv() {
    let csv = json!({
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "r.v1", "annotations": {"capabilities": "Basic Install"}},
        "spec": {
            "displayName": "Redis",
            "customresourcedefinitions": {"owned": [{"name": "a.b", "version": "v1", "kind": "A"}]},
            "links": [{"name": "Docs", "url": "https://example.com"}]
        }
    });
    let meta = CsvMetadata::from_csv(&csv).unwrap();
    assert_eq!(meta.annotations["capabilities"], "Basic Install");
    assert_eq!(meta.crd_descriptions.owned[0].name, "a.b");
    assert_eq!(meta.links[0].url, "https://example.com");
}

#[test]
fn typed_properties_serialize_back_to_type_and_value() {
    let prop = Property::Gvk(Gvk {
        group: "g".into(),
        version: "v1".into(),
        kind: "K".into(),
    });
    assert_eq!(
        serde_json::to_value(&prop).unwrap(),
        json!({"type": "olm.gvk", "value": {"group": "g", "version": "v1", "kind": "K"}})
    );
    let other = Property::Other(raw("x.y", json!(3)));
    assert_eq!(
        serde_json::to_value(&other).unwrap(),
        json!({"type": "x.y", "value": 3})
    );
}

/// What opm's Go decoder (`base64.StdEncoding`) accepts, checked against opm v1.73 by
/// `opm validate` (tests/it/opm_oracle.rs found the two corpus catalogs that differed).
#[test]
fn base64_is_read_as_gos_std_encoding_reads_it() {
    let data = base64::engine::general_purpose::STANDARD.encode("{\"kind\":\"ConfigMap\"}");
    let check = |text: String| BundleObject::Data(text.into()).check();
    assert!(check(data.clone()).is_ok());
    // Line breaks anywhere are skipped.
    assert!(check(format!("\n{}\r\n{}\n", &data[..4], &data[4..])).is_ok());
    // A space, even trailing, is illegal (opm: "illegal base64 data at input byte N").
    assert!(check(format!("{data} ")).is_err());
    assert!(check(format!(" {data}")).is_err());
    // Non-zero bits after the last character are accepted ("YR==" decodes as "a", like "YQ==").
    assert!(check("YR==".to_owned()).is_ok());
    assert!(check("YQ".to_owned()).is_err(), "padding is required");
}

#[test]
fn untyped_csv_metadata_costs_little_per_bundle() {
    // Every bundle of a large catalog holds one; the typed form is boxed when it is built.
    assert!(
        std::mem::size_of::<LazyCsvMetadata>() <= 48,
        "{}",
        std::mem::size_of::<LazyCsvMetadata>()
    );
    assert!(std::mem::size_of::<CsvMetadata>() > 200);
}

#[test]
fn large_csv_metadata_is_shared_only_when_it_fits_and_a_bad_one_is_still_reported() {
    // Shared values are packed and skip the shape check here (csv_shape), so a large value of the
    // wrong shape must reach `parse` unshared, and be reported as a small one is.
    let description = "d".repeat(4 * crate::catalog::raw::SHARE_MIN);
    let bundle = |extra: &str| {
        format!(
            r#"{{"schema":"olm.bundle","package":"p","name":"p.v1","image":"i","properties":[{{"type":"olm.csv.metadata","value":{{"description":"{description}"{extra}}}}}]}}"#
        )
    };
    let (good, problems) = declcfg::DeclarativeConfig::from_str_with_problems("good.json", &bundle(""));
    assert!(problems.is_empty(), "{problems:?}");
    let good = good.bundles.into_iter().next().unwrap().properties;
    assert!(good[0].value.is_shared());
    let (props, errors) = parse(good);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(props.csv_metadata[0].get().description, description);

    let (bad, problems) =
        declcfg::DeclarativeConfig::from_str_with_problems("bad.json", &bundle(r#","displayName":3"#));
    assert!(problems.is_empty(), "{problems:?}");
    let bad = bad.bundles.into_iter().next().unwrap().properties;
    assert!(!bad[0].value.is_shared());
    let (_, errors) = parse(bad);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].field.as_deref(), Some("displayName"), "{errors:?}");
}
