//! write: writes JSON values as the block-style YAML that Kubernetes manifests use.
//!
//! Both products write YAML with it: olm-rs (CRDs, `-o yaml`, rendered catalogs) and the Redis
//! operator (its bundle manifests, generated from the Rust types and checked
//! in, where a test compares the files with a fresh rendering), so the output must be deterministic and
//! readable: keys in insertion order, sequences at their key's indentation (kubectl style), multi-line
//! strings as literal blocks, and every string that a YAML 1.1 or 1.2 reader could take for something
//! else (a number, a boolean, `null`, an indicator character) double-quoted with JSON escapes, which
//! YAML double-quoted scalars accept unchanged. It only writes.

use std::fmt::Write as _;

use serde_json::Value;

/// Renders `value` as a YAML document (without a leading `---`), ending in a newline.
#[must_use]
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_map(&mut out, map, 0),
        Value::Array(items) if !items.is_empty() => write_seq(&mut out, items, 0),
        // A document that is one string: no literal block (its lines would start at column 0,
        // where `---`, `...` and indicators mean something else).
        Value::String(s) if !is_plain_safe(s) => {
            out.push_str(&double_quoted(s));
            out.push('\n');
        }
        other => {
            out.push_str(&inline(other, 0));
            out.push('\n');
        }
    }
    out
}

fn write_map(out: &mut String, map: &serde_json::Map<String, Value>, indent: usize) {
    for (i, (k, v)) in map.iter().enumerate() {
        // The first key of a sequence item is written by the caller after "- ".
        if i > 0 || !out.ends_with("- ") {
            push_indent(out, indent);
        }
        // Keys are plain or double-quoted, never block scalars. YAML limits implicit keys to 1024
        // characters as written: a longer one is written explicitly (`? key`, then `: value`).
        let key = if is_plain_safe(k) {
            k.clone()
        } else {
            double_quoted(k)
        };
        if key.chars().count() > 1000 {
            out.push_str("? ");
            out.push_str(&double_quoted(k));
            out.push('\n');
            push_indent(out, indent);
        } else {
            out.push_str(&key);
        }
        out.push(':');
        write_value_after_key(out, v, indent);
    }
}

fn write_value_after_key(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            write_map(out, m, indent + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            write_seq(out, a, indent);
        }
        other => {
            out.push(' ');
            out.push_str(&inline(other, indent + 2));
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        push_indent(out, indent);
        out.push_str("- ");
        match item {
            Value::Object(m) if !m.is_empty() => write_map(out, m, indent + 2),
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                write_seq(out, a, indent + 2);
            }
            other => {
                out.push_str(&inline(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn push_indent(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A scalar or empty collection on one line (or a literal block starting on this line).
fn inline(v: &Value, indent: usize) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar_string(s, indent),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

fn scalar_string(s: &str, indent: usize) -> String {
    if is_plain_safe(s) {
        return s.to_owned();
    }
    if let Some(block) = literal_block(s, indent) {
        return block;
    }
    double_quoted(s)
}

/// True for a character YAML does not allow unescaped or reads as a line break: the C0 and C1
/// controls, DEL, NEL, U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF. JSON writes most of them raw.
fn needs_escape(c: char) -> bool {
    c < ' '
        || ('\u{7f}'..='\u{9f}').contains(&c)
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}')
}

/// A YAML double-quoted scalar, with `\uXXXX` for every character [`needs_escape`] names.
fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphanumeric() || matches!(first, '/' | '.' | '('))
        || s.ends_with([' ', ':'])
        || s.starts_with("...")
    {
        return false;
    }
    // URLs, image references, e-mail addresses and `a:b` stay plain; `: ` would start a mapping
    // and ` #` a comment.
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " ._/-()+;'=,<>:@#?&%~".contains(c))
        || s.contains(": ")
        || s.contains(" #")
    {
        return false;
    }
    // YAML 1.1 readers (Go's yaml.v2 among them) take `2025-01-15...` for a timestamp.
    let b = s.as_bytes();
    if b.len() >= 5 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' {
        return false;
    }
    // YAML 1.1 readers take digits with colons for base-60 numbers (`1:30`).
    if s.contains(':') && s.chars().all(|c| c.is_ascii_digit() || ":._+-".contains(c)) {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    let reserved = [
        "null", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", ".nan", "-.inf",
    ];
    if reserved.contains(&lower.as_str()) {
        return false;
    }
    // Anything a reader might resolve as a number (including 1_000, 0x1F, 1e3, 012).
    let numeric_like = s.parse::<f64>().is_ok()
        || (s.chars().all(|c| c.is_ascii_hexdigit() || "._+-xXoO".contains(c))
            && s.starts_with(|c: char| c.is_ascii_digit() || c == '.')
            && s.matches('.').count() <= 1);
    !numeric_like
}

fn literal_block(s: &str, indent: usize) -> Option<String> {
    let body = s.strip_suffix('\n').unwrap_or(s);
    let chomp = if s.ends_with('\n') { "|" } else { "|-" };
    if !s.contains('\n')
        || body.ends_with('\n')
        || body
            .split('\n')
            .find(|line| !line.is_empty())
            .is_some_and(|line| line.starts_with([' ', '\t']))
        || body.chars().any(|c| needs_escape(c) && c != '\n' && c != '\t')
        || body.split('\n').all(str::is_empty)
    {
        return None;
    }
    let mut out = String::from(chomp);
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            let _ = write!(out, "{:indent$}{line}", "", indent = indent);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The yaml_write fuzz target's first crash: a value nested past serde-saphyr's depth budget
    /// (64) is written, but the reference decoder refuses to read it back; one level less reads
    /// back unchanged. The target now leaves such values out.
    #[test]
    fn values_nested_past_the_reference_decoders_budget_are_refused_by_it_not_by_the_writer() {
        let nested = |levels: usize| (0..levels).fold(json!("x"), |inner, _| json!([inner]));
        let deep = nested(63);
        let (docs, error) = crate::reference::documents::<crate::json::JsonDocument>(&to_yaml(&deep));
        assert!(error.is_none(), "{error:?}");
        assert_eq!(docs.into_iter().next().map(|d| d.0), Some(deep));
        let (_, error) = crate::reference::documents::<crate::json::JsonDocument>(&to_yaml(&nested(70)));
        assert!(
            error.is_some_and(|e| e.to_string().contains("Depth")),
            "the reference decoder's depth budget"
        );
    }

    #[test]
    fn nested_maps_and_sequences_are_written_kubectl_style() {
        let v = json!({"a": {"b": 1, "c": [ {"d": "x", "e": true}, "z" ], "f": []}, "g": {}});
        assert_eq!(
            to_yaml(&v),
            "a:\n  b: 1\n  c:\n  - d: x\n    e: true\n  - z\n  f: []\ng: {}\n"
        );
    }

    #[test]
    fn strings_that_would_change_type_are_quoted() {
        let v = json!([
            "true",
            "No",
            "7.2",
            "1e3",
            "0x1F",
            "",
            ">=0.2.0 <1.0.0",
            "a: b",
            "#x",
            "- x",
            "1.0.0",
            "1:30",
            "https://example.com/a?b=c#d",
            "quay.io/x/y:v1@sha256:ab",
            "a #b",
            "x:",
            "2025-01-15T10:00:00Z"
        ]);
        assert_eq!(
            to_yaml(&v),
            "- \"true\"\n- \"No\"\n- \"7.2\"\n- \"1e3\"\n- \"0x1F\"\n- \"\"\n- \">=0.2.0 <1.0.0\"\n\
             - \"a: b\"\n- \"#x\"\n- \"- x\"\n- 1.0.0\n- \"1:30\"\n- https://example.com/a?b=c#d\n\
             - quay.io/x/y:v1@sha256:ab\n- \"a #b\"\n- \"x:\"\n- \"2025-01-15T10:00:00Z\"\n"
        );
    }

    #[test]
    fn multi_line_strings_become_literal_blocks_with_the_right_chomping() {
        let v = json!({"k": {"d": "line one\n\nline three\n", "e": "no newline\nat end"}});
        assert_eq!(
            to_yaml(&v),
            "k:\n  d: |\n    line one\n\n    line three\n  e: |-\n    no newline\n    at end\n"
        );
    }

    #[test]
    fn multi_line_strings_with_leading_spaces_fall_back_to_quotes() {
        let v = json!({"k": "  indented\nsecond"});
        assert_eq!(to_yaml(&v), "k: \"  indented\\nsecond\"\n");
    }

    /// Random JSON values, with the strings that trip YAML writers (indicators, numbers, booleans
    /// of YAML 1.1 and 1.2, line breaks, leading and trailing blanks, quotes, non-ASCII): whatever
    /// is written reads back as the same value, with serde-saphyr and with the fast decoder.
    #[test]
    fn random_values_read_back_unchanged() {
        const STRINGS: &[&str] = &[
            "",
            " ",
            "a",
            "a b",
            "a: b",
            "a:b",
            "1:30",
            "http://h:80/p?q=1#f",
            "a@b.c",
            "x:",
            "a%20b",
            "~x",
            "a?",
            "a&b",
            "#c",
            "a #c",
            "- x",
            "-x",
            "? x",
            "&a",
            "*a",
            "!t",
            "%x",
            "@x",
            "`x`",
            "'q'",
            "\"q\"",
            "true",
            "False",
            "yes",
            "No",
            "on",
            "y",
            "null",
            "~",
            "007",
            "1_000",
            "0x1F",
            "1e3",
            ".5",
            "1.0.0",
            ".inf",
            "-.inf",
            ".NaN",
            "{a}",
            "[b]",
            "a,b",
            "x\ny",
            "x\n",
            "\nx",
            "x\n\n",
            " lead",
            "trail ",
            "tab\there",
            "\ttab",
            "line one\n  indented\nend\n",
            "é ü 日本",
            ">=0.2.0 <1.0.0",
            "a\\b",
            "\u{1}",
            "\r\n",
            "x\r",
            "last\n ",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        fn value(next: &mut dyn FnMut() -> u64, depth: u32) -> Value {
            let pick = |n: u64, m: usize| usize::try_from(n % m as u64).unwrap_or(0);
            match next() % if depth > 3 { 5 } else { 8 } {
                0 => Value::Null,
                1 => Value::Bool(next().is_multiple_of(2)),
                2 => json!(i64::try_from(next() % 2000).unwrap_or(0) - 1000),
                3 => json!(f64::from(u32::try_from(next() % 1000).unwrap_or(0)) / 8.0),
                4 => Value::String(STRINGS[pick(next(), STRINGS.len())].to_owned()),
                5 | 6 => {
                    let mut map = serde_json::Map::new();
                    for _ in 0..next() % 4 {
                        let mut key = STRINGS[pick(next(), STRINGS.len())].to_owned();
                        if next().is_multiple_of(16) {
                            key = key.repeat(1 + 1100 / key.len().max(1));
                        }
                        map.insert(key, value(next, depth + 1));
                    }
                    Value::Object(map)
                }
                _ => Value::Array((0..next() % 4).map(|_| value(next, depth + 1)).collect()),
            }
        }
        for _ in 0..3000 {
            let v = value(&mut next, 0);
            let text = to_yaml(&v);
            let (docs, err) = crate::reference::documents::<crate::json::JsonDocument>(&text);
            assert!(err.is_none(), "{err:?} for:\n{text}");
            let back = docs.into_iter().next().map_or(Value::Null, |d| d.0);
            assert_eq!(back, v, "serde-saphyr reads back something else for:\n{text}");
            if let Ok(fast) = crate::decode::<crate::json::JsonDocument>(&text) {
                let fast = fast.into_iter().next().map_or(Value::Null, |d| d.1.0);
                assert_eq!(fast, v, "the fast decoder reads back something else for:\n{text}");
            }
        }
    }
}
