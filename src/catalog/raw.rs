//! raw: a JSON value kept as compact JSON text, for property values the catalog carries but
//! rarely looks into.
//!
//! Real catalogs are large (the biggest public ones hold hundreds of megabytes of CSV metadata:
//! descriptions, spec descriptors, examples). Keeping every such value as a `serde_json::Value`
//! tree costs several times the text size in memory and most of the load time. [`RawJson`] keeps
//! the value as one compact string instead: it can be deserialized from *any* serde format (its
//! `Deserialize` writes the incoming value straight out as compact JSON, so YAML and pretty JSON
//! both end up minified) and is parsed only when someone needs the value
//! ([`RawJson::to_value`], [`RawJson::parse`]).

use std::{
    cell::RefCell,
    fmt::{self, Write as _},
};

use serde::{
    Deserialize, Deserializer, Serialize, Serializer,
    de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor},
};
use serde_json::Value;

/// A JSON value stored as compact JSON text.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RawJson(Box<str>);

impl RawJson {
    /// The JSON `null`.
    #[must_use]
    pub fn null() -> Self {
        Self(Box::from("null"))
    }

    /// A property `value` that was not written at all (read as `null`, but opm tells the two
    /// apart: a missing `value` is an error, an explicit `null` is not).
    #[must_use]
    pub fn absent() -> Self {
        Self(Box::from(""))
    }

    /// True for a value that was not written ([`RawJson::absent`]).
    #[must_use]
    pub fn is_absent(&self) -> bool {
        self.0.is_empty()
    }

    /// Wraps a value (serialized compactly).
    #[must_use]
    pub fn from_value(value: &Value) -> Self {
        Self(value.to_string().into_boxed_str())
    }

    /// The compact JSON text (`null` for an absent value).
    #[must_use]
    pub fn get(&self) -> &str {
        if self.0.is_empty() { "null" } else { &self.0 }
    }

    /// True for `null`, written or absent.
    #[must_use]
    pub fn is_null(&self) -> bool {
        self.get() == "null"
    }

    /// Parses the value into a tree.
    #[must_use]
    pub fn to_value(&self) -> Value {
        // The text was produced by this module or by serde_json, so it always parses.
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }

    /// Parses the value into `T`.
    ///
    /// # Errors
    /// serde_json's error when the value does not fit `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.get())
    }
}

impl Default for RawJson {
    fn default() -> Self {
        Self::null()
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Through a tree, so that every serializer (JSON, YAML) sees ordinary values.
        self.to_value().serialize(serializer)
    }
}

thread_local! {
    /// A buffer reused by every [`RawJson`] decoded on this thread: the value is written here and
    /// then copied once into an allocation of its exact size (growing a fresh string instead
    /// would reallocate and copy a large value many times).
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Scratch buffers larger than this are released after use rather than kept for the next value.
const SCRATCH_KEEP: usize = 8 << 20;

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut buf) => {
                buf.clear();
                let result = Writer(&mut buf).deserialize(deserializer);
                let out = result.map(|()| Self(Box::from(buf.as_str())));
                buf.clear();
                if buf.capacity() > SCRATCH_KEEP {
                    buf.shrink_to(SCRATCH_KEEP);
                }
                out
            }
            // Only when a value is decoded while another one is (not done by this crate).
            Err(_) => {
                let mut out = String::new();
                Writer(&mut out).deserialize(deserializer)?;
                Ok(Self(out.into_boxed_str()))
            }
        })
    }
}

/// Writes whatever it is fed as compact JSON.
struct Writer<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for Writer<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// True for the bytes JSON strings must escape: `"`, `\\` and control characters. They are all
/// ASCII, so they never occur inside a multi-byte UTF-8 sequence and the text can be scanned by byte.
const fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Index of the first byte of `bytes` that [`needs_escape`], looking at eight bytes at a time
/// (most strings have none, and this is the inner loop of loading a catalog).
fn first_escape(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Non-zero exactly when some byte of `v` is below `n` (n <= 0x80).
    const fn has_less(v: u64, n: u64) -> u64 {
        v.wrapping_sub(ONES * n) & !v & HIGHS
    }
    let mut start = 0;
    for chunk in bytes.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let v = u64::from_le_bytes(word);
        if has_less(v, 0x20)
            | has_less(v ^ (ONES * u64::from(b'"')), 1)
            | has_less(v ^ (ONES * u64::from(b'\\')), 1)
            != 0
        {
            break;
        }
        start += 8;
    }
    // The first match is in the chunk where the word scan stopped, or in the tail.
    bytes
        .get(start..)?
        .iter()
        .position(|b| needs_escape(*b))
        .map(|i| start + i)
}

fn write_escaped(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(offset) = bytes.get(start..).and_then(first_escape) {
        let i = start + offset;
        // `i` is the index of an ASCII byte, hence a character boundary.
        out.push_str(s.get(start..i).unwrap_or_default());
        match bytes.get(i).copied().unwrap_or(0) {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
        }
        start = i + 1;
    }
    out.push_str(s.get(start..).unwrap_or_default());
    out.push('"');
}

impl<'de> Visitor<'de> for Writer<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.push_str(if v { "true" } else { "false" });
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        let _ = write!(self.0, "{v}");
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        let _ = write!(self.0, "{v}");
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        let number = serde_json::Number::from_f64(v)
            .ok_or_else(|| E::custom(format!("number {v} cannot be represented in JSON")))?;
        let _ = write!(self.0, "{number}");
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        write_escaped(self.0, v);
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.push_str("null");
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        self.0.push_str("null");
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push('[');
        let mut first = true;
        loop {
            let len = self.0.len();
            if !first {
                self.0.push(',');
            }
            if seq.next_element_seed(Writer(self.0))?.is_none() {
                self.0.truncate(len);
                break;
            }
            first = false;
        }
        self.0.push(']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.push('{');
        let mut first = true;
        loop {
            let len = self.0.len();
            if !first {
                self.0.push(',');
            }
            if map.next_key_seed(KeyWriter(self.0))?.is_none() {
                self.0.truncate(len);
                break;
            }
            first = false;
            self.0.push(':');
            map.next_value_seed(Writer(self.0))?;
        }
        self.0.push('}');
        Ok(())
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged YAML value (`!tag value`): keep the value, as YAML-to-JSON conversion does.
        use de::VariantAccess as _;
        let (_tag, variant): (de::IgnoredAny, _) = data.variant()?;
        variant.newtype_variant_seed(self)
    }
}

/// Writes a map key of any scalar type as a JSON string (YAML allows non-string keys; JSON, and
/// `sigs.k8s.io/yaml`'s conversion, turn them into strings).
struct KeyWriter<'a>(&'a mut String);

impl<'de> DeserializeSeed<'de> for KeyWriter<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Visitor<'_> for KeyWriter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar map key")
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        write_escaped(self.0, v);
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        write_escaped(self.0, &v.to_string());
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        write_escaped(self.0, &v.to_string());
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        write_escaped(self.0, &v.to_string());
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        write_escaped(self.0, &v.to_string());
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.push_str("\"null\"");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pretty_json_is_stored_compact_and_parses_back_to_the_same_value() {
        let text = "{\n    \"a\": [1, 2.5, true, null],\n    \"b\": {\"c\": \"x\\\"y\\n\\u0001\"}\n}";
        let raw: RawJson = serde_json::from_str(text).unwrap();
        assert_eq!(raw.get(), r#"{"a":[1,2.5,true,null],"b":{"c":"x\"y\n\u0001"}}"#);
        assert_eq!(raw.to_value(), serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn values_from_other_formats_become_json_text() {
        let raw: RawJson = serde_json::from_value(json!({"k": ["v", 1]})).unwrap();
        assert_eq!(raw.get(), r#"{"k":["v",1]}"#);
        assert_eq!(RawJson::from_value(&json!([])).get(), "[]");
        assert!(RawJson::null().is_null());
    }

    #[test]
    fn yaml_keys_of_any_scalar_type_become_strings_and_text_is_escaped_as_before() {
        let text = "1: a\ntrue: [\"q\\\"\\\\\\t\\u0008\\r\\n\", 2.5]\n~: {é: ü}\n";
        let raw: RawJson = crate::codec::from_yaml_str("test", text).unwrap();
        assert_eq!(
            raw.get(),
            "{\"1\":\"a\",\"true\":[\"q\\\"\\\\\\t\\u0008\\r\\n\",2.5],\"null\":{\"é\":\"ü\"}}"
        );
        // Decoding values one after another on the same thread reuses a buffer: nothing leaks
        // from one value into the next.
        let a: RawJson = serde_json::from_str(r#"{"long": "xxxxxxxxxxxxxxxxxxxx"}"#).unwrap();
        let b: RawJson = serde_json::from_str("[]").unwrap();
        assert_eq!((a.get(), b.get()), (r#"{"long":"xxxxxxxxxxxxxxxxxxxx"}"#, "[]"));
        assert!(serde_json::from_str::<RawJson>("[1,").is_err());
        let c: RawJson = serde_json::from_str("{}").unwrap();
        assert_eq!(c.get(), "{}");
    }

    #[test]
    fn the_word_scan_finds_the_same_first_escape_as_a_byte_scan() {
        let naive = |b: &[u8]| b.iter().position(|c| needs_escape(*c));
        let specials = [
            b'"', b'\\', b'\n', 0x00, 0x1f, 0x7f, 0x80, 0xff, b'!', b'#', b'[', b']', b' ',
        ];
        for len in 0..40 {
            for (k, special) in specials.iter().enumerate() {
                for at in 0..len {
                    let mut bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                    bytes[at] = *special;
                    if at + k < len {
                        bytes[at + k] = 0xc3;
                    }
                    assert_eq!(first_escape(&bytes), naive(&bytes), "{bytes:?}");
                }
            }
            let clean: Vec<u8> = (0..len)
                .map(|i| 0x20 + (i % 95) as u8)
                .filter(|b| !needs_escape(*b))
                .collect();
            assert_eq!(first_escape(&clean), None);
        }
    }

    #[test]
    fn it_serializes_as_the_value_it_holds() {
        let raw = RawJson::from_value(&json!({"x": 1}));
        assert_eq!(serde_json::to_value(&raw).unwrap(), json!({"x": 1}));
    }
}
