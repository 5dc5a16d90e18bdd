//! fast: the fast path of [`super::DeclarativeConfig::decode_str`], kept apart so that
//! `declcfg.rs` reads like operator-registry's `declcfg.go`.
//!
//! Every field any known schema has is typed and decoded straight from the text into mirror
//! types ([`FastBlob`] and the types it holds); there is no `serde_json::Value` in between,
//! which is what makes loading a large catalog fast. The mirrors refuse anything unusual (an
//! unknown field, a key in another case, a wrong type), and the caller then decodes the file
//! again on the precise, Go-compatible path ([`super::DeclarativeConfig::add_value`]). The test
//! below checks that both paths give the same blobs.

use std::fmt;

use super::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, Deprecation, DeprecationEntry, Icon, Origin, Package,
    PackageScopedReference, Property, RelatedImage, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS,
    SCHEMA_PACKAGE,
};
use crate::catalog::{packed::PackedText, raw::RawJson};

/// The fast path: every field any known schema has, typed, decoded straight from the text.
/// Unknown fields are refused so that anything unusual (an unknown field, a key in another case,
/// a wrong type) falls back to the precise, Go-compatible path of [`DeclarativeConfig::add_value`].
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FastBlob {
    schema: Option<Str>,
    name: Option<Str>,
    package: Option<Str>,
    #[serde(rename = "defaultChannel")]
    default_channel: Option<Str>,
    icon: Option<FastIcon>,
    description: Option<Str>,
    properties: Option<Vec<FastProperty>>,
    entries: Option<Vec<FastEntry>>,
    image: Option<Str>,
    #[serde(rename = "relatedImages")]
    related_images: Option<Vec<FastRelatedImage>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FastIcon {
    base64data: Option<Str>,
    mediatype: Option<Str>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FastProperty {
    #[serde(rename = "type")]
    type_: Option<Str>,
    /// `None` only when absent: an explicit `null` is `Some` (see [`RawJson::absent`]).
    #[serde(default, deserialize_with = "present")]
    value: Option<RawJson>,
}

/// A field that is present, even as `null` (serde's `Option` reads `null` as `None`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<RawJson>, D::Error> {
    <RawJson as serde::Deserialize>::deserialize(d).map(Some)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FastEntry {
    name: Option<Str>,
    replaces: Option<Str>,
    skips: Option<Vec<Option<Str>>>,
    #[serde(rename = "skipRange")]
    skip_range: Option<Str>,
    reference: Option<FastReference>,
    message: Option<Str>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FastReference {
    schema: Option<Str>,
    name: Option<Str>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FastRelatedImage {
    name: Option<Str>,
    image: Option<Str>,
}

/// A string that must be a string: YAML deserializers would otherwise turn `1` or `true` into the
/// text "1" or "true", where Go (which converts YAML to JSON first) reports a type error.
struct Str(String);

impl<'de> serde::Deserialize<'de> for Str {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, v: &str) -> Result<Str, E> {
                Ok(Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Str, E> {
                Ok(Str(v))
            }
        }
        deserializer.deserialize_any(V)
    }
}

fn fast_properties(props: Option<Vec<FastProperty>>) -> Vec<Property> {
    props
        .unwrap_or_default()
        .into_iter()
        .map(|p| Property {
            type_: p.type_.map(|s| s.0).unwrap_or_default(),
            value: p.value.unwrap_or_else(RawJson::absent),
        })
        .collect()
}

impl DeclarativeConfig {
    /// Adds a blob decoded by the fast path; `false` (nothing added) when the blob needs the
    /// precise path: missing or unknown schema (kept verbatim there), or fields that belong to
    /// another schema.
    pub(super) fn add_fast(&mut self, origin: Origin, blob: FastBlob) -> bool {
        let s = |v: Option<Str>| v.map(|s| s.0).unwrap_or_default();
        let FastBlob {
            schema,
            name,
            package,
            default_channel,
            icon,
            description,
            properties,
            entries,
            image,
            related_images,
        } = blob;
        let Some(Str(schema)) = schema else { return false };
        match schema.as_str() {
            SCHEMA_PACKAGE => self.packages.push(Package {
                schema,
                name: s(name),
                default_channel: s(default_channel),
                icon: icon.map(|i| Icon {
                    base64data: PackedText::from(s(i.base64data)),
                    mediatype: s(i.mediatype),
                }),
                description: s(description),
                properties: fast_properties(properties),
                origin,
            }),
            SCHEMA_CHANNEL => self.channels.push(Channel {
                schema,
                name: s(name),
                package: s(package),
                entries: entries
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| ChannelEntry {
                        name: s(e.name),
                        replaces: s(e.replaces),
                        skips: e.skips.unwrap_or_default().into_iter().map(s).collect(),
                        skip_range: s(e.skip_range),
                    })
                    .collect(),
                properties: fast_properties(properties),
                origin,
            }),
            SCHEMA_BUNDLE => self.bundles.push(Bundle {
                schema,
                name: s(name),
                package: s(package),
                image: s(image),
                properties: fast_properties(properties),
                related_images: related_images
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| RelatedImage {
                        name: s(r.name),
                        image: s(r.image),
                    })
                    .collect(),
                origin,
            }),
            SCHEMA_DEPRECATIONS => self.deprecations.push(Deprecation {
                schema,
                package: s(package),
                entries: entries
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| DeprecationEntry {
                        reference: match e.reference {
                            Some(r) => PackageScopedReference {
                                schema: s(r.schema),
                                name: s(r.name),
                            },
                            None => PackageScopedReference {
                                schema: String::new(),
                                name: String::new(),
                            },
                        },
                        message: s(e.message),
                    })
                    .collect(),
                origin,
            }),
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::{super::tests::ALL_SCHEMAS, *};

    fn both_paths(text: &str) -> (DeclarativeConfig, DeclarativeConfig) {
        let mut fast = DeclarativeConfig::default();
        assert!(fast.decode_str("c", text).is_empty());
        let mut precise = DeclarativeConfig::default();
        assert!(
            precise
                .decode_str_precise(crate::codec::YamlDecoder::Fast, "c", text)
                .is_empty()
        );
        (fast, precise)
    }

    #[test]
    fn the_fast_and_precise_paths_decode_every_schema_identically() {
        let (fast, precise) = both_paths(ALL_SCHEMAS);
        assert_eq!(fast, precise);
        assert_eq!(
            fast.packages[0].icon.as_ref().map(|i| i.mediatype.as_str()),
            Some("image/svg+xml")
        );
        assert_eq!(
            fast.channels[0].entries[0].skips,
            vec!["etcd.v0.9.1".to_owned(), String::new()]
        );
        assert_eq!(fast.bundles[0].related_images[0].image, "quay.io/example/op:v1");
        assert_eq!(fast.deprecations[0].entries[0].reference.name, "etcd.v0.9.0");
        // The same catalog as a JSON stream gives the same blobs (origins aside: JSON has lines).
        let json = fast.to_json().unwrap();
        let (fast_json, precise_json) = both_paths(&json);
        assert_eq!(fast_json, precise_json);
        let strip = |c: &DeclarativeConfig| {
            c.blobs()
                .iter()
                .map(|b| serde_json::to_value(b).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&fast_json), strip(&fast));
    }
}
