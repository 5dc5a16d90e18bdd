use serde_json::{Value, json};

use super::{Error, decode};
use crate::json::JsonDocument;

/// What the fast decoder makes of `text`: `Some(Ok(values))`, `Some(Err(message))` when the
/// JSON conversion refused a value, or `None` when it declines.
fn fast(text: &str) -> Option<Result<Vec<Value>, String>> {
    match decode::<JsonDocument>(text) {
        Ok(docs) => Some(Ok(docs.into_iter().map(|(_, d)| d.0).collect())),
        Err(Error::Unsupported { .. }) => None,
        Err(err @ Error::Refused { .. }) => Some(Err(err.to_string())),
    }
}

fn reference(text: &str) -> Result<Vec<Value>, String> {
    match crate::reference::documents::<JsonDocument>(text) {
        (_, Some(err)) => Err(err.to_string()),
        (docs, None) => Ok(docs.into_iter().map(|d| d.0).filter(|v| !v.is_null()).collect()),
    }
}

/// The fast decoder handles `text` and agrees with serde-saphyr: the same documents, or both
/// refuse a value JSON cannot hold.
#[track_caller]
fn agree(text: &str) -> Result<Vec<Value>, String> {
    let fast = fast(text).unwrap_or_else(|| panic!("declined:\n{text}"));
    let reference = reference(text);
    match (&fast, &reference) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "for:\n{text}"),
        (Err(_), Err(_)) => {}
        _ => panic!("fast {fast:?} but serde-saphyr {reference:?} for:\n{text}"),
    }
    fast
}

/// The fast decoder handles `text`, and it and serde-saphyr produce the same documents.
#[track_caller]
fn same(text: &str) -> Vec<Value> {
    agree(text).unwrap_or_else(|e| panic!("refused: {e}\n{text}"))
}

/// The fast decoder declines `text`.
#[track_caller]
fn declined(text: &str) {
    assert!(fast(text).is_none(), "should decline:\n{text}");
}

#[test]
fn opm_style_documents_decode_like_saphyr() {
    let text = "---\ndefaultChannel: stable\nicon:\n  base64data: iVBORw0KGgo=\n  mediatype: image/png\nname: redis\nschema: olm.package\n---\nentries:\n- name: redis.v0.1.0\n- name: redis.v0.2.0\n  replaces: redis.v0.1.0\n  skipRange: '>=0.1.0 <0.2.0'\n  skips:\n  - redis.v0.1.1\nname: stable\npackage: redis\nschema: olm.channel\n";
    let docs = same(text);
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[1]["entries"][1]["skipRange"], json!(">=0.1.0 <0.2.0"));
}

#[test]
fn plain_scalars_resolve_like_saphyr() {
    for value in [
        "",
        "~",
        "null",
        "Null",
        "NULL",
        "nULL",
        "true",
        "True",
        "TRUE",
        "tRUE",
        "false",
        "yes",
        "no",
        "on",
        "0",
        "1",
        "-1",
        "+1",
        "007",
        "-007",
        "0x1F",
        "0o17",
        "0b101",
        "-0x1F",
        "0x",
        "1.5",
        "-1.5",
        "1e3",
        "1E-3",
        ".5",
        "5.",
        ".inf",
        "-.Inf",
        "+.INF",
        "inf",
        "NaN",
        "1_000",
        "1.2.3",
        "v1.0.0",
        "18446744073709551616",
        "-9223372036854775809",
        "340282366920938463463374607431768211456",
        "0x666666666666666666666666666660",
        "9e99999999999999999999",
        "-1e999",
        "-0x666666666666666666666666666660",
        "0o77777777777777777777777777",
        "-0b1111111111111111111111111111111111111111111111111111111111111111111",
        "++1",
        "+-1",
        "--1",
        "0x-1",
        "1:2",
        "a#b",
        "-a",
        "?a",
        ":a",
        "1.0.0-rc.1",
    ] {
        let _ = agree(&format!("k: {value}\n"));
        if !value.is_empty() {
            let _ = agree(&format!("- {value}\n"));
            let _ = agree(&format!("{value}: v\n"));
        }
    }
}

#[test]
fn keys_resolve_like_saphyr() {
    same("1: a\ntrue: b\nnull: c\n\"q\": d\n'r': e\n1.5: f\n");
}

#[test]
fn quoted_scalars_unescape_and_fold_like_libyaml() {
    same("a: 'it''s'\nb: \"tab\\there \\\"q\\\" \\u00e9 \\x41 \\U0001F600 \\/ \\N \\_ \\L \\P \\e \\0\"\n");
    same("a: \"one\n  two  \n\n  three\"\nb: 'x\n   y\n\n\n   z '\n");
    same("a: \"joined\\\n  here\"\nb: \"escaped space\\ \n  next\"\n");
    same("a: \"trailing   \n  x\"\n");
    same("- \"a: b\"\n- 'c # d'\n");
    declined("a: \"unknown \\q escape\"\n");
    declined("a: \"unterminated\n");
}

#[test]
fn plain_scalars_fold_over_lines_like_libyaml() {
    same("description: this is a long\n  line folded\n\n  with a blank line\nnext: x\n");
    same("- first item\n  continues\n- second\n");
    same("k:\n  on the next line\n  and on\n");
    declined("k: a\n  b: c\n");
    same("k: a\n  # comment\nl: b\n");
    declined("k: a\n  # comment\n  b\n");
    same("k: a\n  - b\n  & c\n  `d` \"e\" 'f' [g] {h} |i >j ---k\n");
}

#[test]
fn block_scalars_keep_lines_like_libyaml() {
    for header in ["|", "|-", "|+", ">", ">-", ">+", "|2", "|2-", "|-2", ">2"] {
        same(&format!(
            "a: {header}\n  line one\n    indented\n\n  line three\n\n\nb: x\n"
        ));
        same(&format!("- {header}\n   three spaces\n  \n   more\n- y\n"));
        same(&format!("m:\n- k: {header}\n    text\n      deeper\n    end\n"));
        // libyaml keeps no final line break here, serde-saphyr adds one: declined, the
        // fallback decides.
        let end = format!("a: {header}\n  at the end without a break");
        if header.contains('-') {
            same(&end);
        } else {
            declined(&end);
        }
        same(&format!("a: {header}\n\n  after an empty line\n"));
    }
    same("a: |\n  x\n     \n  y\n");
    same("a: >\n  folded\n  lines\n   more indented\n  back\n");
    same("a: |2\n     starts deeper\n  normal\n");
    declined("a: |\n     \n  emptier first line\n");
    declined("a: |\nb: empty block\n");
    declined("a: | # comment\n  x\n");
}

#[test]
fn comment_lines_are_skipped() {
    same("# header\n---\n# before\na:\n  # inside\n  b: |\n    # content\n  # after\nc: 1\n   # indented\n");
}

#[test]
fn collections_nest_like_saphyr() {
    same("a:\n- b: 1\n  c:\n  - d\n  - - e\n    - f\n  g: {}\n- []\n-\n- h\nz:\n  y:\n    x: w\n");
    same("- - - deep\n");
    same("a:\n\n  b: 1\n\n\n  c: 2\n");
    same("a: [ ]\nb: { }\n");
    same("  indented: document\n  second: key\n");
}

#[test]
fn document_streams_skip_empty_documents() {
    assert_eq!(
        same("---\n---\na: 1\n---\n\n---\nnull\n---\nb: 2"),
        vec![json!({"a": 1}), json!({"b": 2})]
    );
    assert_eq!(same(""), Vec::<Value>::new());
    same("a: 1\n---\nb: 2\n");
}

#[test]
fn unusual_yaml_is_declined() {
    for text in [
        "a: 1 # comment\n",
        "a: &x 1\nb: *x\n",
        "a: !tag 1\n",
        "%YAML 1.2\n---\na: 1\n",
        "a: 1\n...\n",
        "a: [1, 2]\n",
        "a: {b: 1}\n",
        "? a\n: 1\n",
        "a:\r\n  b: 1\r\n",
        "a:\n\tb: 1\n",
        "a: \u{85}\n",
        "a: x\u{2028}y\n",
        "<<: {}\n",
        "--- a: 1\n",
        "a: 1\nb\n",
        "a: 1\n  b: 2\n",
        "a:\n    b: 1\n  c: 2\n",
        "- a\nb: 1\n",
        "a: b: c\n",
        "a: - b\n",
        "a: 1\n\"multi\n line\": 2\n",
    ] {
        declined(text);
    }
}

#[test]
fn invalid_yaml_is_declined_so_saphyr_reports_it() {
    for text in [
        "a: 'unterminated\n",
        "a:\n  - b\n  c: d\n",
        "a: 1\nb: 2\n c: 3\n",
        "[1, 2\n",
    ] {
        declined(text);
        assert!(reference(text).is_err(), "serde-saphyr accepts:\n{text}");
    }
}

#[test]
fn a_type_that_refuses_a_value_gets_its_message_without_a_fallback() {
    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Only {
        #[allow(dead_code)]
        name: String,
    }
    let err = decode::<Only>("name: a\nother: b\n").unwrap_err();
    assert!(
        matches!(&err, Error::Refused { document: 0, message } if message.contains("unknown field `other`")),
        "{err}"
    );
}

/// A small deterministic generator (xorshift), so that failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'t>(&mut self, items: &[&'t str]) -> &'t str {
        let i = usize::try_from(self.next() % items.len() as u64).unwrap_or(0);
        items[i]
    }
}

/// Random texts built from the pieces block YAML is made of (indentation, keys, dashes,
/// every scalar style, folding, comments, document markers), most of them valid, many not:
/// whatever the fast decoder accepts must be exactly what serde-saphyr makes of it, and it
/// must never panic.
#[test]
fn random_block_yaml_is_decoded_as_saphyr_does_or_declined() {
    const SCALARS: &[&str] = &[
        "a",
        "b c",
        "1",
        "-2",
        "0x1f",
        "007",
        "1.5",
        ".inf",
        "null",
        "~",
        "true",
        "False",
        "v1.0.0",
        "a:b",
        "a#b",
        "a # c",
        "a: b",
        "x:",
        "-x",
        "- x",
        "? x",
        ": x",
        "&a",
        "*a",
        "!t",
        "%x",
        "@x",
        "`x`",
        "[]",
        "{}",
        "[a]",
        "{a: b}",
        "'q'",
        "'it''s'",
        "'a\n  b'",
        "\"d\"",
        "\"e\\n\\t\\u00e9\"",
        "\"f\n\n  g\"",
        "\"h\\\n  i\"",
        "\"bad \\q\"",
        "|",
        "|-",
        "|+",
        ">",
        ">-",
        "|2",
        "|1-",
        "",
        " ",
        "\t",
        "a\tb",
        "é",
        "---",
        "...",
        "#",
    ];
    const KEYS: &[&str] = &[
        "k", "key", "a b", "1", "true", "null", "\"q\"", "'s'", "-k", "k k", "<<", "?", "k#",
    ];
    const INDENTS: &[&str] = &["", "", "", " ", "  ", "  ", "    ", "      ", "\t"];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut accepted = 0;
    for _ in 0..20_000 {
        let mut text = String::new();
        let lines = 1 + rng.next() % 8;
        for _ in 0..lines {
            text.push_str(rng.pick(INDENTS));
            match rng.next() % 10 {
                0..=2 => {
                    text.push_str(rng.pick(KEYS));
                    text.push_str(": ");
                    text.push_str(rng.pick(SCALARS));
                }
                3 => {
                    text.push_str(rng.pick(KEYS));
                    text.push(':');
                }
                4 => {
                    text.push_str("- ");
                    text.push_str(rng.pick(SCALARS));
                }
                5 => {
                    text.push_str("- ");
                    text.push_str(rng.pick(KEYS));
                    text.push_str(": ");
                    text.push_str(rng.pick(SCALARS));
                }
                6 => text.push('-'),
                7 => text.push_str(rng.pick(SCALARS)),
                8 => text.push_str(rng.pick(&["---", "", "# c", "...", "--- a"])),
                _ => {
                    text.push_str(rng.pick(KEYS));
                    text.push_str(": ");
                    text.push_str(rng.pick(&["|", "|-", ">", "|2", "'", "\""]));
                }
            }
            text.push('\n');
        }
        if let Some(fast) = fast(&text) {
            let reference = reference(&text);
            match (&fast, &reference) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "for:\n{text}"),
                (Err(_), Err(_)) => {}
                _ => panic!("fast {fast:?} but serde-saphyr {reference:?} for:\n{text}"),
            }
            accepted += 1;
        }
    }
    eprintln!("{accepted} of 20000 random texts accepted");
    // The generator must exercise the decoder, not only its refusals.
    assert!(accepted > 2_000, "only {accepted} texts accepted");
}

/// Writes a random block node at `indent` (the node's own lines) into `out`.
fn emit_node(rng: &mut Rng, out: &mut String, indent: usize, depth: usize) {
    const WORDS: &[&str] = &[
        "a", "word", "1", "0.5", "null", "true", "v1.0.0", "a:b", "x#y", "-d", "é", "`c`", "[e]", "{f}",
        "\"g\"", "'h'", "i,j", "*k", "&l", "!m", "|n", ">o", "%p", "@q", "r\ts", "t  ", "u\t", "0o17",
        "-.inf", "1e3", "+1", "~",
    ];
    let pad = " ".repeat(indent);
    let step = [1, 2, 2, 4][usize::try_from(rng.next() % 4).unwrap_or(0)];
    match if depth < 3 { rng.next() % 3 } else { 2 } {
        0 => {
            for _ in 0..1 + rng.next() % 3 {
                out.push_str(&pad);
                out.push_str(rng.pick(&[
                    "k",
                    "key",
                    "\"q k\"",
                    "'s'",
                    "1",
                    "n-m",
                    "a.b/c",
                    "k  ",
                    "\"\\u00e9\"",
                ]));
                out.push(':');
                match rng.next() % 4 {
                    0 => {
                        out.push('\n');
                        emit_node(rng, out, indent + step, depth + 1);
                    }
                    1 => {
                        // An indentless sequence.
                        out.push('\n');
                        emit_seq(rng, out, indent, depth + 1);
                    }
                    _ => {
                        out.push(' ');
                        emit_scalar(rng, out, indent, WORDS);
                    }
                }
            }
        }
        1 => emit_seq(rng, out, indent, depth + 1),
        _ => {
            out.push_str(&pad);
            emit_scalar(rng, out, indent.saturating_sub(1), WORDS);
        }
    }
}

fn emit_seq(rng: &mut Rng, out: &mut String, indent: usize, depth: usize) {
    let pad = " ".repeat(indent);
    for _ in 0..1 + rng.next() % 3 {
        out.push_str(&pad);
        match rng.next() % 4 {
            0 if depth < 3 => {
                // A compact mapping: `- k: v` and its other keys two columns in.
                out.push_str("- k: ");
                emit_scalar(rng, out, indent + 2, &["v", "1", "x y"]);
                out.push_str(&pad);
                out.push_str("  other: ");
                emit_scalar(rng, out, indent + 2, &["w", "2"]);
            }
            1 if depth < 3 => {
                out.push_str("-\n");
                emit_node(rng, out, indent + 2, depth + 1);
            }
            _ => {
                out.push_str("- ");
                emit_scalar(rng, out, indent, &["s", "t u", "3", "~", "-v"]);
            }
        }
    }
}

/// A scalar after `key: ` or `- ` (or alone) whose block is at `indent`, ending with a line
/// break: plain (maybe folded), quoted (maybe folded) or a block scalar.
fn emit_scalar(rng: &mut Rng, out: &mut String, indent: usize, words: &[&str]) {
    let more = " ".repeat(indent + 2);
    match rng.next() % 6 {
        0 => {
            out.push_str(rng.pick(words));
            out.push(' ');
            out.push_str(rng.pick(words));
            out.push('\n');
            if rng.next().is_multiple_of(2) {
                out.push('\n');
            }
            out.push_str(&more);
            out.push_str(rng.pick(words));
            out.push('\n');
        }
        1 => {
            let quote = rng.pick(&["'", "\""]);
            out.push_str(quote);
            out.push_str(rng.pick(&[
                "a  ",
                "b",
                "c\\",
                "d\\ ",
                "e''f",
                "\\x41",
                "\\u00e9",
                "\\U0001F600",
                "\\ud800",
                "\\N\\_",
                "t\tu",
                "\\\"",
                "# x",
                "é ",
            ]));
            out.push('\n');
            if rng.next().is_multiple_of(2) {
                out.push_str("  \n");
            }
            out.push_str(&more);
            out.push_str(rng.pick(&["g", " h", "i\\t"]));
            out.push_str(quote);
            out.push('\n');
        }
        2 => {
            out.push_str(rng.pick(&["|", "|-", "|+", ">", ">-", ">+", "|2", "|1-", ">2"]));
            out.push('\n');
            for _ in 0..1 + rng.next() % 4 {
                match rng.next() % 4 {
                    0 => out.push('\n'),
                    1 => {
                        out.push_str(&more);
                        out.push_str("  indented more\n");
                    }
                    _ => {
                        out.push_str(&more);
                        out.push_str(rng.pick(&["text", "# not a comment", "a: b", "- c"]));
                        out.push('\n');
                    }
                }
            }
        }
        _ => {
            out.push_str(rng.pick(words));
            out.push('\n');
        }
    }
}

/// Random well-formed block YAML in every style the decoder handles, and one-character
/// mutations of it (indentation, indicators, tabs): whatever the fast decoder accepts must be
/// exactly what serde-saphyr makes of it.
#[test]
fn random_block_structures_and_their_mutations_decode_as_saphyr_does_or_are_declined() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut accepted, mut mutated_accepted) = (0, 0);
    for round in 0..20_000 {
        let mut text = String::new();
        if rng.next().is_multiple_of(3) {
            text.push_str("---\n");
        }
        emit_node(&mut rng, &mut text, 0, 0);
        if rng.next().is_multiple_of(3) {
            text.push_str("---\n");
            emit_node(&mut rng, &mut text, 0, 0);
        }
        let mutated = round % 2 == 1;
        if mutated {
            let at = usize::try_from(rng.next() % (text.len() as u64 + 1)).unwrap_or(0);
            let at = (0..=at).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
            match rng.next() % 3 {
                0 => text.insert_str(
                    at,
                    rng.pick(&[" ", "\t", ":", "#", "-", "'", "\"", "\n", ": ", " #"]),
                ),
                1 => {
                    let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
                    text.replace_range(at..end, "");
                }
                _ => text.insert_str(at, "\n  "),
            }
        }
        if let Some(fast) = fast(&text) {
            let reference = reference(&text);
            match (&fast, &reference) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "for:\n{text}"),
                (Err(_), Err(_)) => {}
                _ => panic!("fast {fast:?} but serde-saphyr {reference:?} for:\n{text}"),
            }
            if mutated {
                mutated_accepted += 1;
            } else {
                accepted += 1;
            }
        }
    }
    eprintln!("accepted {accepted} of 10000 generated texts and {mutated_accepted} of 10000 mutated ones");
    // The rest are declined for good reasons: the generator also writes indicators, flow
    // collections, empty block scalars and block scalars at the top level.
    assert!(
        accepted > 1_000 && mutated_accepted > 500,
        "{accepted} / {mutated_accepted}"
    );
}

#[test]
fn deep_nesting_is_declined() {
    let mut text = String::new();
    for depth in 0..120 {
        text.push_str(&" ".repeat(depth));
        text.push_str("a:\n");
    }
    declined(&text);
}
