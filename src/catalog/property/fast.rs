//! fast: the fast paths of [`super::parse`], kept apart so that `property.rs` reads like
//! operator-registry's `property.go`.
//!
//! - [`parse_fast`] decodes known property values straight from their JSON text into mirror
//!   types; anything unusual (an unknown field, a key in another case, a wrong type) makes it
//!   give up, and the precise, Go-compatible path names the problem.
//! - [`FastCsvMetadata`] is the fast path for `olm.csv.metadata`, and [`csv_shape`] its
//!   zero-sized mirror, which checks that a value would decode without building anything (what
//!   [`super::LazyCsvMetadata`] relies on).
//!
//! The tests below check that the mirrors accept exactly what the types they mirror accept.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::*;
use crate::catalog::csv_shape;

/// The fast path for `olm.csv.metadata`: decoded straight from the JSON text. Any field not
/// listed here, or of the wrong type, sends the value to the precise path instead.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct FastCsvMetadata {
    #[serde(default, deserialize_with = "nullable_map")]
    annotations: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "nullable_map")]
    labels: BTreeMap<String, String>,
    display_name: Option<String>,
    description: Option<String>,
    install_modes: Option<Vec<InstallMode>>,
    #[serde(default, deserialize_with = "nullable_list")]
    keywords: Vec<String>,
    maintainers: Option<Vec<Maintainer>>,
    links: Option<Vec<AppLink>>,
    provider: Option<AppLink>,
    maturity: Option<String>,
    min_kube_version: Option<String>,
    crd_descriptions: Option<CrdDescriptions>,
    api_service_definitions: Option<RawJson>,
    #[serde(rename = "nativeAPIs")]
    native_apis: Option<RawJson>,
}

impl From<FastCsvMetadata> for CsvMetadata {
    fn from(f: FastCsvMetadata) -> Self {
        let mut extra = BTreeMap::new();
        if let Some(v) = f.api_service_definitions {
            extra.insert("apiServiceDefinitions".to_owned(), v);
        }
        if let Some(v) = f.native_apis {
            extra.insert("nativeAPIs".to_owned(), v);
        }
        CsvMetadata {
            annotations: f.annotations,
            labels: f.labels,
            display_name: f.display_name.unwrap_or_default(),
            description: f.description.unwrap_or_default(),
            install_modes: f.install_modes.unwrap_or_default(),
            keywords: f.keywords,
            maintainers: f.maintainers.unwrap_or_default(),
            links: f.links.unwrap_or_default(),
            provider: f.provider,
            maturity: f.maturity.unwrap_or_default(),
            min_kube_version: f.min_kube_version.unwrap_or_default(),
            crd_descriptions: f.crd_descriptions.unwrap_or_default(),
            extra,
        }
    }
}

/// True when [`FastCsvMetadata`] would decode `value`: the same shape, with every leaf checked
/// for its JSON type but nothing allocated (no strings, maps or lists are built).
pub(super) fn csv_metadata_fits_fast_path(value: &RawJson) -> bool {
    csv_shape::fits(value)
}

/// The fast path: known property values decoded straight from their JSON text. `None` when the
/// value has an unknown field, a key in another case or a wrong type (the precise path then
/// decodes it and names the problem); `Some(Err)` for checks that need no precise path.
pub(super) fn parse_fast(type_: &str, value: &RawJson) -> Option<Result<Property, (Option<String>, String)>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct FastPackage {
        package_name: Option<String>,
        version: Option<String>,
        release: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct FastGvk {
        group: Option<String>,
        version: Option<String>,
        kind: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct FastPackageRequired {
        package_name: Option<String>,
        version_range: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct FastObject {
        data: Option<String>,
    }
    let s = Option::unwrap_or_default;
    Some(Ok(match type_ {
        TYPE_PACKAGE => {
            let p: FastPackage = value.parse().ok()?;
            Property::Package(PackageProperty {
                package_name: s(p.package_name),
                version: s(p.version),
                release: s(p.release),
            })
        }
        TYPE_GVK | TYPE_GVK_REQUIRED => {
            let g: FastGvk = value.parse().ok()?;
            let gvk = Gvk {
                group: s(g.group),
                version: s(g.version),
                kind: s(g.kind),
            };
            if type_ == TYPE_GVK {
                Property::Gvk(gvk)
            } else {
                Property::GvkRequired(gvk)
            }
        }
        TYPE_PACKAGE_REQUIRED => {
            let p: FastPackageRequired = value.parse().ok()?;
            let raw_range = s(p.version_range);
            match Range::parse(&raw_range) {
                Ok(version_range) => Property::PackageRequired(PackageRequired {
                    package_name: s(p.package_name),
                    version_range,
                }),
                Err(err) => {
                    return Some(Err((
                        Some("versionRange".to_owned()),
                        format!("invalid range {raw_range:?}: {err}"),
                    )));
                }
            }
        }
        TYPE_BUNDLE_OBJECT => {
            if let Some(data) = value.string_member("data") {
                return Some(Ok(Property::BundleObject(BundleObject::Data(data))));
            }
            let o: FastObject = value.parse().ok()?;
            Property::BundleObject(BundleObject::Data(s(o.data).into()))
        }
        TYPE_CSV_METADATA => {
            let m: FastCsvMetadata = value.parse().ok()?;
            Property::CsvMetadata(Box::new(LazyCsvMetadata::from(CsvMetadata::from(m))))
        }
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_csv_metadata_check_accepts_exactly_what_the_fast_path_decodes() {
        let cases = [
            json!({}),
            json!({"annotations": {"a": null, "b": "x"}, "labels": null, "keywords": [null, "k"]}),
            json!({"annotations": {"a": 1}}),
            json!({"annotations": []}),
            json!({"keywords": "redis"}),
            json!({"keywords": [1]}),
            json!({"displayName": null, "description": "d", "maturity": "alpha", "minKubeVersion": "1.2"}),
            json!({"displayName": 3}),
            json!({"installModes": [{"type": "OwnNamespace", "supported": true, "extra": 1}]}),
            json!({"installModes": [{"type": "OwnNamespace", "supported": "yes"}]}),
            json!({"installModes": [["AllNamespaces", true]]}),
            json!({"installModes": {"type": "OwnNamespace"}}),
            json!({"maintainers": [{"name": null, "email": "e"}], "links": [{"name": "n", "url": 1}]}),
            json!({"provider": {"name": "p"}, "links": null}),
            json!({"provider": "p"}),
            json!({"crdDescriptions": {"owned": [{"name": "a.b", "specDescriptors": [{"x": 1}], "resources": null}]}}),
            json!({"crdDescriptions": {"owned": [{"name": 1}]}}),
            json!({"crdDescriptions": {"required": null, "other": []}}),
            json!({"crdDescriptions": []}),
            json!({"apiServiceDefinitions": {"owned": []}, "nativeAPIs": [{"kind": "Pod"}]}),
            json!({"DisplayName": "D"}),
            json!({"unknown": 1}),
            json!({"displayName": "a", "displayName2": "b"}),
            json!([]),
            json!("text"),
        ];
        for value in cases {
            let raw = RawJson::from_value(&value);
            assert_eq!(
                csv_metadata_fits_fast_path(&raw),
                raw.parse::<FastCsvMetadata>().is_ok(),
                "{value}"
            );
        }
        // A duplicate key is refused by both.
        let dup = RawJson::from_value(&json!({"displayName": "a"}));
        let dup_text: RawJson = serde_json::from_str(r#"{"displayName":"a","displayName":"b"}"#).unwrap();
        assert!(csv_metadata_fits_fast_path(&dup));
        assert_eq!(
            csv_metadata_fits_fast_path(&dup_text),
            dup_text.parse::<FastCsvMetadata>().is_ok()
        );
    }
}
