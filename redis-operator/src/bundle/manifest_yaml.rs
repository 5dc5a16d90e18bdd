//! manifest_yaml: writes JSON values as the block-style YAML that Kubernetes manifests use.
//!
//! The bundle manifests (`bundles/redis-operator/**`) are generated from the Rust types and checked
//! in; a test compares the files with a fresh rendering, so the output must be deterministic and
//! readable: keys in insertion order, sequences at their key's indentation (kubectl style), multi-line
//! strings as literal blocks, and every string that a YAML 1.1 or 1.2 reader could take for something
//! else (a number, a boolean, `null`, an indicator character) double-quoted with JSON escapes, which
//! YAML double-quoted scalars accept unchanged. It only writes; reading YAML is the codec's job.

use std::fmt::Write as _;

use serde_json::Value;

/// Renders `value` as a YAML document (without a leading `---`), ending in a newline.
#[must_use]
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_map(&mut out, map, 0),
        Value::Array(items) if !items.is_empty() => write_seq(&mut out, items, 0),
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
        out.push_str(&scalar_string(k, indent));
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
    serde_json::Value::String(s.to_owned()).to_string()
}

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphanumeric() || matches!(first, '/' | '.' | '(')) || s.ends_with(' ') {
        return false;
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " ._/-()+;'=,<>".contains(c))
    {
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
        || body.starts_with([' ', '\t'])
        || body.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
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
            "1.0.0"
        ]);
        assert_eq!(
            to_yaml(&v),
            "- \"true\"\n- \"No\"\n- \"7.2\"\n- \"1e3\"\n- \"0x1F\"\n- \"\"\n- \">=0.2.0 <1.0.0\"\n\
             - \"a: b\"\n- \"#x\"\n- \"- x\"\n- 1.0.0\n"
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
}
