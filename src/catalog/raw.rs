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
//!
//! Large values repeat: the `olm.csv.metadata` of consecutive versions of a package carries the
//! same CRD descriptions, examples and description again and again (in the largest public
//! catalog, 111 MiB of metadata holds 46 MiB of distinct members). [`RawJson::share`] cuts a large
//! value into pieces at the boundaries of its large members and keeps each piece once per
//! [`Interner`] (the loader uses one per catalog file, that is per package); the text is joined
//! again when the value is read ([`RawJson::text`]). Reads are rare (typing the metadata of one
//! bundle for `describe`, a stub CSV), so the join is not cached. Each distinct piece is kept
//! packed ([`PackedText`]: deflated, base64 as its bytes), which cuts what is left to a third or
//! less.

use std::{
    borrow::Cow,
    cell::RefCell,
    collections::HashMap,
    fmt::{self, Write as _},
    hash::{Hash, Hasher},
};

use serde::{
    Deserialize, Deserializer, Serialize, Serializer,
    de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor},
};
use serde_json::Value;

use super::packed::PackedText;

/// A JSON value stored as compact JSON text.
#[derive(Clone)]
pub struct RawJson(Repr);

#[derive(Clone)]
enum Repr {
    /// The whole text.
    Text(Box<str>),
    /// The text is these pieces joined; pieces are shared with other values ([`RawJson::share`]).
    Pieces(Box<[PackedText]>),
}

impl RawJson {
    /// The JSON `null`.
    #[must_use]
    pub fn null() -> Self {
        Self(Repr::Text(Box::from("null")))
    }

    /// A property `value` that was not written at all (read as `null`, but opm tells the two
    /// apart: a missing `value` is an error, an explicit `null` is not).
    #[must_use]
    pub fn absent() -> Self {
        Self(Repr::Text(Box::from("")))
    }

    /// True for a value that was not written ([`RawJson::absent`]).
    #[must_use]
    pub fn is_absent(&self) -> bool {
        matches!(&self.0, Repr::Text(text) if text.is_empty())
    }

    /// Wraps a value (serialized compactly).
    #[must_use]
    pub fn from_value(value: &Value) -> Self {
        Self(Repr::Text(value.to_string().into_boxed_str()))
    }

    /// The compact JSON text (`null` for an absent value); joined from its pieces when the
    /// value is shared.
    #[must_use]
    pub fn text(&self) -> Cow<'_, str> {
        match &self.0 {
            Repr::Text(text) if text.is_empty() => Cow::Borrowed("null"),
            Repr::Text(text) => Cow::Borrowed(text),
            Repr::Pieces(pieces) => {
                let mut out = String::with_capacity(pieces.iter().map(PackedText::len).sum());
                pieces.iter().for_each(|p| p.push_to(&mut out));
                Cow::Owned(out)
            }
        }
    }

    /// True when the value was shared ([`RawJson::share`]).
    #[must_use]
    pub fn is_shared(&self) -> bool {
        matches!(&self.0, Repr::Pieces(_))
    }

    /// True for `null`, written or absent.
    #[must_use]
    pub fn is_null(&self) -> bool {
        matches!(&self.0, Repr::Text(text) if text.is_empty() || &**text == "null")
    }

    /// Parses the value into a tree.
    #[must_use]
    pub fn to_value(&self) -> Value {
        // The text was produced by this module or by serde_json, so it always parses.
        serde_json::from_str(&self.text()).unwrap_or(Value::Null)
    }

    /// Parses the value into `T`.
    ///
    /// # Errors
    /// serde_json's error when the value does not fit `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.text())
    }

    /// Keeps a large value as pieces shared through `interner` (see the module docs); a value
    /// shorter than [`SHARE_MIN`], or already shared, is left as it is.
    pub fn share(&mut self, interner: &mut Interner) {
        let Repr::Text(text) = &self.0 else { return };
        if text.len() < SHARE_MIN {
            return;
        }
        let Some(cuts) = cut_points(text.as_bytes()) else {
            return;
        };
        let mut pieces = Vec::with_capacity(cuts.len() + 1);
        let mut start = 0;
        for end in cuts.into_iter().chain([text.len()]) {
            if let Some(piece) = text.get(start..end)
                && !piece.is_empty()
            {
                pieces.push(interner.intern(piece));
            }
            start = end;
        }
        self.0 = Repr::Pieces(pieces.into_boxed_slice());
    }
}

impl RawJson {
    /// The shared text of the string `key` when the value is exactly `{key: "..."}`, was shared
    /// ([`RawJson::share`]) and the string needs no escaping (base64, for instance): the model
    /// keeps it without a copy of its own. `None` otherwise.
    #[must_use]
    pub fn string_member(&self, key: &str) -> Option<PackedText> {
        let Repr::Pieces(pieces) = &self.0 else {
            return None;
        };
        let [open, content, close] = &**pieces else {
            return None;
        };
        let quoted = serde_json::to_string(key).ok()?;
        let expected_open = format!("{{{quoted}:\"");
        (open.text() == expected_open
            && close.text() == "\"}"
            && (content.is_base64() || !content.text().contains(['\\', '"'])))
        .then(|| content.clone())
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Text(a), Repr::Text(b)) => a == b,
            _ => self.text() == other.text(),
        }
    }
}

impl Eq for RawJson {}

impl Hash for RawJson {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.0 {
            Repr::Text(text) => text.hash(state),
            // As the text's hash: a shared value equals its unshared twin.
            Repr::Pieces(_) => (*self.text()).hash(state),
        }
    }
}

/// Values shorter than this are never cut into pieces (the pieces would cost more than they save).
pub const SHARE_MIN: usize = 2048;

/// Members at least this long (key and value) become pieces of their own, the ones that repeat;
/// the shorter members between them are kept together as one piece.
const PIECE_MIN: usize = 256;

/// Keeps one packed copy of each piece of text it is given. It holds the plain text of each
/// piece too, to find repeats; it lives for one catalog file.
#[derive(Debug, Default)]
pub struct Interner {
    pieces: HashMap<Box<str>, PackedText>,
}

impl Interner {
    /// The shared copy of `piece`.
    pub fn intern(&mut self, piece: &str) -> PackedText {
        if let Some(shared) = self.pieces.get(piece) {
            return shared.clone();
        }
        let shared = PackedText::new(piece);
        self.pieces.insert(Box::from(piece), shared.clone());
        shared
    }
}

/// Where to cut the compact JSON text of an object so that each of its large members (and each
/// large member of a large member that is an object) is a piece of its own. `None` when the text
/// is not an object (or not compact JSON, which never happens for a [`RawJson`]).
fn cut_points(text: &[u8]) -> Option<Vec<usize>> {
    if text.first() != Some(&b'{') {
        return None;
    }
    let mut cuts = Vec::new();
    let end = cut_object(text, 0, true, &mut cuts)?;
    (end == text.len()).then_some(cuts)
}

/// Scans the object starting at `start`, pushing the boundaries of its large members (descending
/// one level when `descend`); returns the index after the object.
fn cut_object(text: &[u8], start: usize, descend: bool, cuts: &mut Vec<usize>) -> Option<usize> {
    let mut i = start + 1;
    if text.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        let member = i;
        i = skip_string(text, i)?;
        if text.get(i) != Some(&b':') {
            return None;
        }
        let value = i + 1;
        i = skip_value(text, value)?;
        if i - member >= PIECE_MIN {
            if descend && text.get(value) == Some(&b'{') {
                cuts.push(value + 1);
                cut_object(text, value, false, cuts)?;
                cuts.push(i - 1);
            } else if text.get(value) == Some(&b'"') {
                // A string's content alone, so that it can be handed out ([`RawJson::string_member`]).
                cuts.push(value + 1);
                cuts.push(i - 1);
            } else {
                cuts.push(member);
                cuts.push(i);
            }
        }
        match text.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The index after the string starting at `start`.
fn skip_string(text: &[u8], start: usize) -> Option<usize> {
    if text.get(start) != Some(&b'"') {
        return None;
    }
    let mut i = start + 1;
    loop {
        match text.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// The index after the value starting at `start`.
fn skip_value(text: &[u8], start: usize) -> Option<usize> {
    match text.get(start)? {
        b'"' => skip_string(text, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            loop {
                match text.get(i)? {
                    b'"' => {
                        i = skip_string(text, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let len = text
                .get(start..)?
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']'))
                .unwrap_or(text.len() - start);
            Some(start + len)
        }
    }
}

impl Default for RawJson {
    fn default() -> Self {
        Self::null()
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
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
                let out = result.map(|()| Self(Repr::Text(Box::from(buf.as_str()))));
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
                Ok(Self(Repr::Text(out.into_boxed_str())))
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
        let open = self.0.len();
        self.0.push('{');
        // Where each entry's key and value end up in the text: (key start, key end, value end).
        let mut entries: Vec<(usize, usize, usize)> = Vec::new();
        let mut first = true;
        loop {
            let len = self.0.len();
            if !first {
                self.0.push(',');
            }
            let key_start = self.0.len();
            if map.next_key_seed(KeyWriter(self.0))?.is_none() {
                self.0.truncate(len);
                break;
            }
            let key_end = self.0.len();
            first = false;
            self.0.push(':');
            map.next_value_seed(Writer(self.0))?;
            entries.push((key_start, key_end, self.0.len()));
        }
        if has_repeated_key(self.0, &entries) {
            keep_last_of_each_key(self.0, open, &entries);
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

/// Whether two of a map's `entries` (written in `text`, see [`Writer`]'s `visit_map`) have the
/// same key. Small maps (nearly all) are compared pairwise, without allocating.
fn has_repeated_key(text: &str, entries: &[(usize, usize, usize)]) -> bool {
    let key = |&(start, end, _): &(usize, usize, usize)| text.get(start..end).unwrap_or_default();
    if entries.len() <= 16 {
        return entries
            .iter()
            .enumerate()
            .any(|(i, a)| entries.iter().skip(i + 1).any(|b| key(a) == key(b)));
    }
    let mut seen = std::collections::HashSet::with_capacity(entries.len());
    !entries.iter().all(|e| seen.insert(key(e)))
}

/// Rewrites the map opened at `open` so that a repeated key appears once, where it first
/// appeared, with the value it was given last: what a JSON object (and serde_json's map, which the
/// precise path builds) makes of it, and what YAML-to-JSON conversion does with a repeated key.
fn keep_last_of_each_key(text: &mut String, open: usize, entries: &[(usize, usize, usize)]) {
    let source = text.clone();
    let key = |&(start, end, _): &(usize, usize, usize)| source.get(start..end).unwrap_or_default();
    let value = |&(_, key_end, end): &(usize, usize, usize)| source.get(key_end + 1..end).unwrap_or_default();
    text.truncate(open + 1);
    let mut written: Vec<&str> = Vec::with_capacity(entries.len());
    for entry in entries {
        let name = key(entry);
        if written.contains(&name) {
            continue;
        }
        let last = entries.iter().rev().find(|e| key(e) == name).unwrap_or(entry);
        if !written.is_empty() {
            text.push(',');
        }
        text.push_str(name);
        text.push(':');
        text.push_str(value(last));
        written.push(name);
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

    #[test]
    fn a_repeated_key_keeps_its_first_place_and_its_last_value() {
        let raw: RawJson =
            serde_json::from_str(r#"{"a": 1, "b": {"x": 1, "x": 2}, "a": 3, "c": 4}"#).unwrap();
        assert_eq!(raw.text(), r#"{"a":3,"b":{"x":2},"c":4}"#);
        let value: serde_json::Value =
            serde_json::from_str(r#"{"a": 1, "b": {"x": 1, "x": 2}, "a": 3, "c": 4}"#).unwrap();
        assert_eq!(raw.to_value(), value, "as serde_json's map reads it");
        let plain: RawJson = serde_json::from_str(r#"{"a": 1, "b": 2}"#).unwrap();
        assert_eq!(plain.text(), r#"{"a":1,"b":2}"#);
    }
    use serde_json::json;

    use super::*;

    #[test]
    fn pretty_json_is_stored_compact_and_parses_back_to_the_same_value() {
        let text = "{\n    \"a\": [1, 2.5, true, null],\n    \"b\": {\"c\": \"x\\\"y\\n\\u0001\"}\n}";
        let raw: RawJson = serde_json::from_str(text).unwrap();
        assert_eq!(raw.text(), r#"{"a":[1,2.5,true,null],"b":{"c":"x\"y\n\u0001"}}"#);
        assert_eq!(raw.to_value(), serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn values_from_other_formats_become_json_text() {
        let raw: RawJson = serde_json::from_value(json!({"k": ["v", 1]})).unwrap();
        assert_eq!(raw.text(), r#"{"k":["v",1]}"#);
        assert_eq!(RawJson::from_value(&json!([])).text(), "[]");
        assert!(RawJson::null().is_null());
    }

    #[test]
    fn yaml_keys_of_any_scalar_type_become_strings_and_text_is_escaped_as_before() {
        let text = "1: a\ntrue: [\"q\\\"\\\\\\t\\u0008\\r\\n\", 2.5]\n~: {é: ü}\n";
        let raw: RawJson = crate::codec::from_yaml_str("test", text).unwrap();
        assert_eq!(
            raw.text(),
            "{\"1\":\"a\",\"true\":[\"q\\\"\\\\\\t\\u0008\\r\\n\",2.5],\"null\":{\"é\":\"ü\"}}"
        );
        // Decoding values one after another on the same thread reuses a buffer: nothing leaks
        // from one value into the next.
        let a: RawJson = serde_json::from_str(r#"{"long": "xxxxxxxxxxxxxxxxxxxx"}"#).unwrap();
        let b: RawJson = serde_json::from_str("[]").unwrap();
        assert_eq!(
            (&*a.text(), &*b.text()),
            (r#"{"long":"xxxxxxxxxxxxxxxxxxxx"}"#, "[]")
        );
        assert!(serde_json::from_str::<RawJson>("[1,").is_err());
        let c: RawJson = serde_json::from_str("{}").unwrap();
        assert_eq!(c.text(), "{}");
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

    fn big(description: &str, examples: &str) -> RawJson {
        let long = "d".repeat(PIECE_MIN);
        serde_json::from_value(json!({
            "annotations": {"alm-examples": examples, "short": "s", "long": long},
            "description": description,
            "displayName": "X \"quoted\" \\ {not a brace}",
            "keywords": ["a", "b"],
            "crdDescriptions": {"owned": [{"name": "x", "description": "y".repeat(SHARE_MIN)}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_shared_value_reads_as_the_same_text_and_repeated_members_are_kept_once() {
        let mut interner = Interner::default();
        let mut a = big(&"a".repeat(SHARE_MIN), &"[{}]".repeat(100));
        let mut b = big(&"a".repeat(SHARE_MIN), "[]");
        let (text_a, text_b) = (a.text().into_owned(), b.text().into_owned());
        a.share(&mut interner);
        b.share(&mut interner);
        assert!(matches!(a.0, Repr::Pieces(_)) && matches!(b.0, Repr::Pieces(_)));
        assert_eq!((&*a.text(), &*b.text()), (text_a.as_str(), text_b.as_str()));
        assert_eq!(a.to_value(), serde_json::from_str::<Value>(&text_a).unwrap());
        assert_eq!(a, RawJson(Repr::Text(text_a.clone().into_boxed_str())));
        assert_ne!(a, b);
        // The description, the long annotation and the CRD descriptions are stored once.
        let shared = |piece: &str| {
            let Repr::Pieces(pieces) = &a.0 else {
                unreachable!()
            };
            let Repr::Pieces(others) = &b.0 else {
                unreachable!()
            };
            let find = |ps: &[PackedText]| ps.iter().find(|p| p.text().contains(piece)).cloned().unwrap();
            find(pieces).ptr_eq(&find(others))
        };
        assert!(shared("aaaa") && shared("dddd") && shared("yyyy"));
        let mut small = RawJson::from_value(&json!({"x": "y"}));
        small.share(&mut interner);
        assert!(matches!(small.0, Repr::Text(_)));
    }

    #[test]
    fn the_string_of_a_one_member_object_is_handed_out_shared() {
        let mut interner = Interner::default();
        let data = "QUJD".repeat(SHARE_MIN);
        let mut a = RawJson::from_value(&json!({ "data": data }));
        let mut b = a.clone();
        assert_eq!(a.string_member("data"), None, "not shared yet");
        a.share(&mut interner);
        b.share(&mut interner);
        let (sa, sb) = (a.string_member("data").unwrap(), b.string_member("data").unwrap());
        assert_eq!(sa.text(), data);
        assert!(sa.ptr_eq(&sb));
        assert_eq!(a.string_member("ref"), None);
        let mut escaped = RawJson::from_value(&json!({ "data": format!("{data}\n") }));
        escaped.share(&mut interner);
        assert_eq!(escaped.string_member("data"), None);
        let mut two = RawJson::from_value(&json!({ "data": data, "x": 1 }));
        two.share(&mut interner);
        assert_eq!(two.string_member("data"), None);
        assert_eq!(two.to_value(), json!({ "data": data, "x": 1 }));
    }

    #[test]
    fn values_that_are_not_objects_stay_whole() {
        let mut interner = Interner::default();
        let mut list = RawJson::from_value(&json!(["z".repeat(SHARE_MIN)]));
        list.share(&mut interner);
        assert!(matches!(list.0, Repr::Text(_)));
        assert_eq!(cut_points(br#"{"a":"\\"}"#), Some(Vec::new()));
        assert_eq!(cut_points(br#"{"a":1"#), None);
    }

    #[test]
    fn it_serializes_as_the_value_it_holds() {
        let raw = RawJson::from_value(&json!({"x": 1}));
        assert_eq!(serde_json::to_value(&raw).unwrap(), json!({"x": 1}));
    }
}
