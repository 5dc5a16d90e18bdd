//! csv_shape: the shape an `olm.csv.metadata` value needs to take the property fast path
//! (`property::fast::FastCsvMetadata`), checked without building anything.
//!
//! The check runs where a value's text is at hand: [`super::declcfg`] runs it on a large value
//! before sharing it, because a shared value is kept packed ([`super::packed`]) and checking it
//! later would inflate it again, and it shares only values that pass. So a shared
//! `olm.csv.metadata` value is known to fit ([`super::raw::RawJson::is_shared`]), and
//! [`super::property`] checks only the others. The mirrors below carry the same serde attributes
//! as the types they mirror; property's fast-path tests check that they accept exactly the same.

use std::fmt;

use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, MapAccess, Visitor},
};

use super::raw::RawJson;

/// The property type whose values this module checks.
pub const PROPERTY_TYPE: &str = "olm.csv.metadata";

/// True when the fast path would decode `value`: the same shape, with every leaf checked for its
/// JSON type but nothing allocated (no strings, maps or lists are built).
#[must_use]
pub fn fits(value: &RawJson) -> bool {
    value.parse::<CsvMetadata>().is_ok()
}

/// Go's decoding of a `null` into a value: the zero value.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

// The mirrors: their fields exist only to be checked, never read.
/// Accepts a string (and only a string), like `String`.
#[derive(Default)]
#[allow(dead_code)]
struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// Accepts what `nullable_map` accepts: `null` or a map of strings to strings or `null`s.
#[derive(Default)]
#[allow(dead_code)]
struct StrMap;

impl<'de> Deserialize<'de> for StrMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                while map.next_entry::<Str, Option<Str>>()?.is_some() {}
                Ok(())
            }
        }
        struct Map;
        impl<'de> Deserialize<'de> for Map {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_map(V).map(|()| Map)
            }
        }
        Option::<Map>::deserialize(deserializer).map(|_| StrMap)
    }
}

/// Accepts what `nullable_list` accepts: `null` or a list of strings or `null`s.
#[derive(Default)]
#[allow(dead_code)]
struct StrList;

impl<'de> Deserialize<'de> for StrList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Option::<Vec<Option<Str>>>::deserialize(deserializer).map(|_| StrList)
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
#[allow(dead_code)]
struct AppLink {
    #[serde(deserialize_with = "nullable")]
    name: Str,
    #[serde(deserialize_with = "nullable")]
    url: Str,
}

#[derive(Deserialize, Default)]
#[serde(default)]
#[allow(dead_code)]
struct Maintainer {
    #[serde(deserialize_with = "nullable")]
    name: Str,
    #[serde(deserialize_with = "nullable")]
    email: Str,
}

#[derive(Deserialize, Default)]
#[serde(default)]
#[allow(dead_code)]
struct InstallMode {
    #[serde(rename = "type")]
    #[serde(deserialize_with = "nullable")]
    type_: Str,
    #[serde(deserialize_with = "nullable")]
    supported: bool,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
#[allow(dead_code)]
struct CrdDescription {
    #[serde(deserialize_with = "nullable")]
    name: Str,
    #[serde(deserialize_with = "nullable")]
    version: Str,
    #[serde(deserialize_with = "nullable")]
    kind: Str,
    #[serde(deserialize_with = "nullable")]
    display_name: Str,
    #[serde(deserialize_with = "nullable")]
    description: Str,
    resources: Option<IgnoredAny>,
    spec_descriptors: Option<IgnoredAny>,
    status_descriptors: Option<IgnoredAny>,
    action_descriptors: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
#[allow(dead_code)]
struct CrdDescriptions {
    #[serde(deserialize_with = "nullable")]
    owned: Vec<CrdDescription>,
    #[serde(deserialize_with = "nullable")]
    required: Vec<CrdDescription>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct CsvMetadata {
    #[serde(default)]
    annotations: StrMap,
    #[serde(default)]
    labels: StrMap,
    display_name: Option<Str>,
    description: Option<Str>,
    install_modes: Option<Vec<InstallMode>>,
    #[serde(default)]
    keywords: StrList,
    maintainers: Option<Vec<Maintainer>>,
    links: Option<Vec<AppLink>>,
    provider: Option<AppLink>,
    maturity: Option<Str>,
    min_kube_version: Option<Str>,
    crd_descriptions: Option<CrdDescriptions>,
    api_service_definitions: Option<IgnoredAny>,
    #[serde(rename = "nativeAPIs")]
    native_apis: Option<IgnoredAny>,
}
