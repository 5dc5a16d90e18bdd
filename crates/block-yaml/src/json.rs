//! json: YAML values as JSON values, converted the way `sigs.k8s.io/yaml` converts them (what
//! Kubernetes and opm do with YAML): scalar map keys become strings, tags are dropped, and values
//! JSON cannot hold (NaN, infinities, collections as keys) are refused with a message starting
//! with [`NOT_JSON`].
//!
//! The conversion is a serde seed, so it works on any YAML deserializer (the fast [`crate::decode`]
//! and serde-saphyr alike) and builds the JSON tree straight from the event stream.

use std::fmt;

use serde::Deserialize;
use serde_json::Value;

/// A YAML document converted to JSON by [`JsonFromYaml`].
#[derive(Debug, Clone, PartialEq)]
pub struct JsonDocument(pub Value);

impl<'de> Deserialize<'de> for JsonDocument {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::DeserializeSeed::deserialize(JsonFromYaml, deserializer).map(Self)
    }
}

/// Prefix of the messages [`JsonFromYaml`] raises for values JSON cannot hold.
pub const NOT_JSON: &str = "not representable in JSON: ";

/// Builds a [`serde_json::Value`] straight from the YAML event stream (no intermediate YAML
/// value), converting the way `sigs.k8s.io/yaml` does: scalar map keys become strings, tags are
/// dropped, and non-finite floats are refused.
#[derive(Clone, Copy)]
pub struct JsonFromYaml;

impl<'de> serde::de::DeserializeSeed<'de> for JsonFromYaml {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for JsonFromYaml {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Value, E> {
        #[allow(
            clippy::cast_precision_loss,
            reason = "JSON numbers beyond 64 bits are floats"
        )]
        self.visit_f64(v as f64)
    }

    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Value, E> {
        #[allow(
            clippy::cast_precision_loss,
            reason = "JSON numbers beyond 64 bits are floats"
        )]
        self.visit_f64(v as f64)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v).map(Value::Number).ok_or_else(|| {
            E::custom(format!(
                "{NOT_JSON}number {v} (JSON has no NaN or infinity; quote it)"
            ))
        })
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(key) = map.next_key_seed(JsonKeyFromYaml)? {
            let value = map.next_value_seed(self)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }

    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        // YAML deserializers present `!tag value` as an enum whose variant is the tag: keep the value.
        use serde::de::VariantAccess as _;
        let (_tag, variant): (serde::de::IgnoredAny, _) = data.variant()?;
        variant.newtype_variant_seed(self)
    }
}

/// A map key: any scalar, as a string.
#[derive(Clone, Copy)]
struct JsonKeyFromYaml;

impl<'de> serde::de::DeserializeSeed<'de> for JsonKeyFromYaml {
    type Value = String;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for JsonKeyFromYaml {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar map key")
    }

    fn visit_bool<E>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }

    fn visit_unit<E>(self) -> Result<String, E> {
        Ok("null".to_owned())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, _seq: A) -> Result<String, A::Error> {
        Err(serde::de::Error::custom(format!(
            "{NOT_JSON}a list used as a map key"
        )))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, _map: A) -> Result<String, A::Error> {
        Err(serde::de::Error::custom(format!(
            "{NOT_JSON}a map used as a map key"
        )))
    }
}
