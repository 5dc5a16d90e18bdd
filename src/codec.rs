//! codec: the one place where YAML and JSON text becomes values, and values become text again.
//!
//! # Why one module
//!
//! Every other module of the crate goes through the functions here, so the YAML libraries are
//! named in this file only: the `block-yaml` crate of this workspace (a fast decoder for block
//! YAML, the YAML-to-JSON conversion and a kubectl-style writer) and serde-saphyr (the general
//! parser behind it, also what kube uses), configured by `block_yaml::reference`.
//!
//! # How catalog files are decoded (the rule this module enforces)
//!
//! operator-registry (`alpha/declcfg/load.go`) decodes *every* catalog file as a stream of
//! documents, whatever its extension, with Kubernetes' `YAMLOrJSONDecoder`. That decoder sniffs the
//! start of the text: when the first non-whitespace character is `{` or `[` the file is a JSON
//! stream (objects written one after another, separated by optional whitespace), otherwise it is
//! YAML, possibly with several documents separated by `---`. We do the same:
//!
//! - [`detect_format`] sniffs the first non-whitespace character (a UTF-8 byte-order mark is
//!   ignored);
//! - [`decode_documents`] returns every document as a [`serde_json::Value`] together with its index in
//!   the stream (0-based) and, when the decoder can tell, the line it starts on;
//! - empty YAML documents (a bare `---`, or a file of comments) are skipped, as opm skips them;
//! - decoding stops at the first syntax error of a file (opm rejects the whole file), and the error
//!   names the file, the document index and the line and column where the decoder gave up; the
//!   documents decoded before the error are still returned so callers can report everything else.
//!
//! With [`YamlDecoder::Fast`] (the default), YAML is first given to [`block_yaml::decode`], a
//! fast decoder for the block-style YAML catalog tools write, which either produces exactly what
//! serde-saphyr would or declines; declined texts (and any text with an error, so that messages
//! stay serde-saphyr's) are decoded by serde-saphyr. [`YamlDecoder::Reference`] uses serde-saphyr
//! alone, for comparisons.
//!
//! YAML values that JSON cannot represent are mapped the way `sigs.k8s.io/yaml` does when it converts
//! YAML to JSON: non-string map keys become strings, YAML tags are dropped, and non-finite floats are
//! an error (JSON has no NaN).
//!
//! # Encoding
//!
//! YAML is written by `block_yaml::write` (kubectl style: sequences at their key's indentation,
//! strings a reader could take for something else double-quoted, multi-line strings as literal
//! blocks), the writer the Redis operator's bundle manifests use too.
//! [`to_yaml_documents`] writes values as a multi-document YAML stream (each document introduced by
//! `---`, as `opm render -o yaml` does); [`to_json_stream`] writes a JSON stream (one pretty-printed
//! object after another, indented with four spaces as `opm render -o json` does);
//! [`to_json_pretty`] writes a single pretty JSON value. [`from_yaml_str`] and [`to_yaml_string`]
//! are the typed helpers other modules use for single documents.

use std::fmt;

pub use block_yaml;
use block_yaml::json::{JsonDocument, NOT_JSON};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

/// Which decoder reads YAML. Results are the same either way (the tests check it on every real
/// catalog); tests and benchmarks pick [`YamlDecoder::Reference`] to compare the two.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum YamlDecoder {
    /// `block_yaml::decode` first, serde-saphyr for what it declines.
    #[default]
    Fast,
    /// serde-saphyr alone.
    Reference,
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where in a text something went wrong: the display path, the document index and the position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Display path of the text (a file path, `<stdin>`, or a synthetic name).
    pub path: String,
    /// 0-based index of the document in the stream.
    pub document: usize,
    /// 1-based line, when the decoder reported one.
    pub line: Option<usize>,
    /// 1-based column, when the decoder reported one.
    pub column: Option<usize>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (document {}", self.path, self.document)?;
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, ", line {line}, column {column})"),
            (Some(line), None) => write!(f, ", line {line})"),
            _ => write!(f, ")"),
        }
    }
}

/// Errors of the codec: every variant names the failed step and, for decoding, where it failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The text is not valid YAML.
    #[error("failed to parse YAML in {location}: {message}; fix the YAML syntax at that position")]
    InvalidYaml {
        /// Where the parser gave up.
        location: Location,
        /// The parser's message.
        message: String,
    },
    /// The text looked like JSON (it starts with `{` or `[`) but is not valid JSON.
    #[error(
        "failed to parse JSON in {location}: {message}; fix the JSON syntax at that position \
         (files starting with '{{' or '[' are read as JSON streams)"
    )]
    InvalidJson {
        /// Where the parser gave up.
        location: Location,
        /// The parser's message.
        message: String,
    },
    /// A YAML document holds a value JSON cannot represent (such as `.nan`).
    #[error("failed to convert YAML to JSON in {location}: {message}")]
    NotJsonCompatible {
        /// The document that could not be converted.
        location: Location,
        /// What could not be represented.
        message: String,
    },
    /// A value could not be deserialized into the requested type.
    #[error("failed to decode {what}: {message}")]
    Deserialize {
        /// What was being decoded.
        what: String,
        /// The deserializer's message.
        message: String,
    },
    /// A value could not be serialized.
    #[error("failed to encode {what}: {message}")]
    Serialize {
        /// What was being encoded.
        what: String,
        /// The serializer's message.
        message: String,
    },
}

/// The two syntaxes a catalog file can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A stream of JSON values written one after another.
    Json,
    /// One or more YAML documents separated by `---`.
    Yaml,
}

/// One decoded document of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Document<T = Value> {
    /// 0-based index of the document among the non-empty documents of the stream.
    pub index: usize,
    /// 1-based line on which the document starts, when known (JSON streams only).
    pub line: Option<usize>,
    /// The document itself.
    pub value: T,
}

/// The documents of one text, and the error that stopped decoding, if any.
#[derive(Debug, Default)]
pub struct Decoded {
    /// Every document decoded before the end of the text or the first error.
    pub documents: Vec<Document>,
    /// The syntax error that stopped decoding; `None` when the whole text was read.
    pub error: Option<Error>,
}

/// Strips a UTF-8 byte-order mark, which some editors write at the start of files.
fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Tells whether `text` is a JSON stream or YAML, the way opm's decoder does: JSON when the first
/// non-whitespace character is `{` or `[`, YAML otherwise (including an empty text).
#[must_use]
pub fn detect_format(text: &str) -> Format {
    match strip_bom(text).trim_start().as_bytes().first() {
        Some(b'{' | b'[') => Format::Json,
        _ => Format::Yaml,
    }
}

/// Decodes `text` (displayed as `path` in messages) into its documents; see the module docs for
/// the rules. Never panics; the first syntax error ends decoding and is returned in
/// [`Decoded::error`] next to the documents read before it.
#[must_use]
pub fn decode_documents(path: &str, text: &str) -> Decoded {
    decode_documents_with(YamlDecoder::Fast, path, text)
}

/// [`decode_documents`] with the YAML decoder chosen.
#[must_use]
pub fn decode_documents_with(yaml: YamlDecoder, path: &str, text: &str) -> Decoded {
    let text = strip_bom(text);
    match detect_format(text) {
        Format::Json => decode_json_stream(path, text),
        Format::Yaml => decode_yaml_stream(yaml, path, text),
    }
}

/// Decodes every document of `text` straight into `T`, without building JSON trees: the fast path
/// for callers that fall back to [`decode_documents`] (and its precise messages) when this fails.
/// Same format detection and empty-document rule as [`decode_documents`]; a JSON `null` document
/// is an error here.
///
/// # Errors
/// The first syntax or type error; no documents are returned then.
pub fn decode_documents_as<T: DeserializeOwned>(
    yaml: YamlDecoder,
    path: &str,
    text: &str,
) -> Result<Vec<Document<T>>> {
    let text = strip_bom(text);
    let mut out = Vec::new();
    match detect_format(text) {
        Format::Json => {
            let mut stream = serde_json::Deserializer::from_str(text).into_iter::<T>();
            let mut line_counter = LineCounter::new(text);
            loop {
                let before = stream.byte_offset();
                let start = before
                    + text
                        .get(before..)
                        .map_or(0, |rest| rest.len() - rest.trim_start().len());
                match stream.next() {
                    None => break,
                    Some(Ok(value)) => {
                        let line = Some(line_counter.line_at(start));
                        out.push(Document {
                            index: out.len(),
                            line,
                            value,
                        });
                    }
                    Some(Err(err)) => {
                        return Err(Error::InvalidJson {
                            location: Location {
                                path: path.to_owned(),
                                document: out.len(),
                                line: Some(err.line()),
                                column: Some(err.column()),
                            },
                            message: strip_json_position(&err.to_string()),
                        });
                    }
                }
            }
        }
        Format::Yaml => {
            if yaml == YamlDecoder::Fast {
                match block_yaml::decode::<T>(text) {
                    Ok(docs) => {
                        return Ok(docs
                            .into_iter()
                            .map(|(index, value)| Document {
                                index,
                                line: None,
                                value,
                            })
                            .collect());
                    }
                    Err(block_yaml::Error::Refused { document, message }) => {
                        return Err(Error::InvalidYaml {
                            location: Location {
                                path: path.to_owned(),
                                document,
                                line: None,
                                column: None,
                            },
                            message,
                        });
                    }
                    Err(block_yaml::Error::Unsupported { .. }) => {}
                }
            }
            let (documents, error) = block_yaml::reference::documents::<T>(text);
            if let Some(err) = error {
                return Err(yaml_error(path, documents.len(), &err));
            }
            out.extend(documents.into_iter().enumerate().map(|(index, value)| Document {
                index,
                line: None,
                value,
            }));
        }
    }
    Ok(out)
}

fn decode_json_stream(path: &str, text: &str) -> Decoded {
    let mut out = Decoded::default();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut line_counter = LineCounter::new(text);
    loop {
        // The offset is at the end of the previous value; the next document starts after the
        // whitespace that follows it.
        let before = stream.byte_offset();
        let start = before
            + text
                .get(before..)
                .map_or(0, |rest| rest.len() - rest.trim_start().len());
        match stream.next() {
            None => break,
            Some(Ok(value)) => {
                let index = out.documents.len();
                let line = Some(line_counter.line_at(start));
                out.documents.push(Document { index, line, value });
            }
            Some(Err(err)) => {
                out.error = Some(Error::InvalidJson {
                    location: Location {
                        path: path.to_owned(),
                        document: out.documents.len(),
                        line: Some(err.line()),
                        column: Some(err.column()),
                    },
                    message: strip_json_position(&err.to_string()),
                });
                break;
            }
        }
    }
    out
}

/// serde_json appends " at line L column C" to its messages; we report the position separately.
fn strip_json_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// Counts lines incrementally over increasing byte offsets (documents come in order).
struct LineCounter<'a> {
    text: &'a str,
    offset: usize,
    line: usize,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            offset: 0,
            line: 1,
        }
    }

    fn line_at(&mut self, offset: usize) -> usize {
        if offset >= self.offset {
            let end = offset.min(self.text.len());
            if let Some(slice) = self.text.as_bytes().get(self.offset..end) {
                self.line += slice.iter().filter(|b| **b == b'\n').count();
            }
            self.offset = end;
        }
        self.line
    }
}

fn decode_yaml_stream(yaml: YamlDecoder, path: &str, text: &str) -> Decoded {
    if yaml == YamlDecoder::Fast
        && let Some(documents) = decode_yaml_fast(text)
    {
        return Decoded {
            documents,
            error: None,
        };
    }
    decode_yaml_reference(path, text)
}

/// Decodes a YAML stream with [`block_yaml`] alone: `None` when it declines the text (or a value
/// cannot be converted to JSON), otherwise exactly what [`decode_yaml_reference`] returns for it.
/// For tests and benchmarks that compare the two.
#[must_use]
pub fn decode_yaml_fast(text: &str) -> Option<Vec<Document>> {
    let docs = block_yaml::decode::<JsonDocument>(strip_bom(text)).ok()?;
    Some(
        docs.into_iter()
            .map(|(index, doc)| Document {
                index,
                line: None,
                value: doc.0,
            })
            .collect(),
    )
}

/// Decodes a YAML stream with serde-saphyr alone, whatever the default: the reference the fast
/// decoder is checked against. Same rules and result as [`decode_documents`].
#[must_use]
pub fn decode_yaml_reference(path: &str, text: &str) -> Decoded {
    let text = strip_bom(text);
    let (documents, error) = block_yaml::reference::documents::<JsonDocument>(text);
    let documents: Vec<Document> = documents
        .into_iter()
        .map(|doc| doc.0)
        .filter(|value| !value.is_null())
        .enumerate()
        .map(|(index, value)| Document {
            index,
            line: None,
            value,
        })
        .collect();
    let error = error.map(|err| yaml_error(path, documents.len(), &err));
    Decoded { documents, error }
}

/// A serde-saphyr error as ours: its position apart, and values JSON cannot hold told apart from
/// syntax errors.
fn yaml_error(path: &str, document: usize, err: &block_yaml::reference::Error) -> Error {
    let (line, column) = err.location().map_or((None, None), |l| {
        (
            usize::try_from(l.line()).ok().filter(|n| *n > 0),
            usize::try_from(l.column()).ok().filter(|n| *n > 0),
        )
    });
    let location = Location {
        path: path.to_owned(),
        document,
        line,
        column,
    };
    let message = strip_yaml_position(&err.to_string());
    match message.find(NOT_JSON) {
        Some(at) => Error::NotJsonCompatible {
            location,
            message: message[at + NOT_JSON.len()..].to_owned(),
        },
        None => Error::InvalidYaml { location, message },
    }
}

/// serde-saphyr appends " at line L, column C" to its messages; we report the position separately.
fn strip_yaml_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// Decodes a single YAML (or JSON, which is YAML) document into `T`.
///
/// # Errors
/// [`Error::Deserialize`] naming `what` when the text is not valid YAML or does not fit `T`.
pub fn from_yaml_str<T: DeserializeOwned>(what: &str, text: &str) -> Result<T> {
    serde_saphyr::from_str_with_options(strip_bom(text), block_yaml::reference::options()).map_err(|err| {
        Error::Deserialize {
            what: what.to_owned(),
            message: err.to_string(),
        }
    })
}

/// Decodes a JSON value into `T`.
///
/// # Errors
/// [`Error::Deserialize`] naming `what` when the value does not fit `T`.
pub fn from_value<T: DeserializeOwned>(what: &str, value: Value) -> Result<T> {
    serde_json::from_value(value).map_err(|err| Error::Deserialize {
        what: what.to_owned(),
        message: err.to_string(),
    })
}

/// Encodes `value` as one YAML document (no leading `---`).
///
/// # Errors
/// [`Error::Serialize`] when `value` cannot be represented (for example a map with non-string keys).
pub fn to_yaml_string<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    let value = serde_json::to_value(value).map_err(|err| Error::Serialize {
        what: "YAML document".to_owned(),
        message: err.to_string(),
    })?;
    Ok(block_yaml::write(&value))
}

/// Encodes `values` as a multi-document YAML stream, each document introduced by `---`.
///
/// # Errors
/// [`Error::Serialize`] when a value cannot be represented.
pub fn to_yaml_documents<T: Serialize>(values: &[T]) -> Result<String> {
    let mut out = String::new();
    for value in values {
        out.push_str("---\n");
        out.push_str(&to_yaml_string(value)?);
    }
    Ok(out)
}

/// Encodes `value` as pretty JSON (two-space indentation, no trailing newline).
///
/// # Errors
/// [`Error::Serialize`] when a value cannot be represented.
pub fn to_json_pretty<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|err| Error::Serialize {
        what: "JSON document".to_owned(),
        message: err.to_string(),
    })
}

/// Encodes `values` as a JSON stream the way `opm render -o json` does: every value pretty-printed
/// with four-space indentation and followed by a newline.
///
/// # Errors
/// [`Error::Serialize`] when a value cannot be represented.
pub fn to_json_stream<T: Serialize>(values: &[T]) -> Result<String> {
    let mut out = Vec::new();
    for value in values {
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
        value.serialize(&mut ser).map_err(|err| Error::Serialize {
            what: "JSON stream".to_owned(),
            message: err.to_string(),
        })?;
        out.push(b'\n');
    }
    String::from_utf8(out).map_err(|err| Error::Serialize {
        what: "JSON stream".to_owned(),
        message: err.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_starting_with_a_brace_or_bracket_is_json_and_anything_else_is_yaml() {
        assert_eq!(detect_format("  \n{\"a\":1}"), Format::Json);
        assert_eq!(detect_format("\u{feff}[1]"), Format::Json);
        assert_eq!(detect_format("a: 1"), Format::Yaml);
        assert_eq!(detect_format("# {\n"), Format::Yaml);
        assert_eq!(detect_format(""), Format::Yaml);
    }

    #[test]
    fn a_json_stream_yields_every_concatenated_object_with_its_start_line() {
        let decoded = decode_documents("c.json", "{\"a\": 1}\n\n{\n  \"b\": 2\n}{\"c\":3}\n");
        assert!(decoded.error.is_none());
        let lines: Vec<_> = decoded.documents.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![Some(1), Some(3), Some(5)]);
        assert_eq!(decoded.documents[2].value, json!({"c": 3}));
        assert_eq!(decoded.documents[2].index, 2);
    }

    #[test]
    fn yaml_streams_skip_empty_documents_and_keep_indexes_dense() {
        let text = "---\n# only a comment\n---\na: 1\n---\n---\nb: [x, y]\n";
        let decoded = decode_documents("c.yaml", text);
        assert!(decoded.error.is_none(), "{:?}", decoded.error);
        assert_eq!(decoded.documents.len(), 2);
        assert_eq!(decoded.documents[0].value, json!({"a": 1}));
        assert_eq!(decoded.documents[1].index, 1);
        assert_eq!(decoded.documents[1].value, json!({"b": ["x", "y"]}));
    }

    #[test]
    fn a_yaml_syntax_error_names_the_file_document_and_line_and_keeps_earlier_documents() {
        let text = "a: 1\n---\nb: [unclosed\nc: 2\n";
        let decoded = decode_documents("bad.yaml", text);
        assert_eq!(decoded.documents.len(), 1);
        let message = decoded.error.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("bad.yaml (document 1, line"), "{message}");
    }

    #[test]
    fn a_json_syntax_error_names_the_file_and_position() {
        let decoded = decode_documents("bad.json", "{\"a\": 1}\n{\"b\": }\n");
        assert_eq!(decoded.documents.len(), 1);
        let message = decoded.error.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.starts_with("failed to parse JSON in bad.json (document 1, line 2, column"),
            "{message}"
        );
    }

    #[test]
    fn yaml_non_string_keys_become_strings_and_tags_are_dropped() {
        let decoded = decode_documents("k.yaml", "1: one\ntrue: yes\nx: !custom 5\n");
        assert_eq!(
            decoded.documents[0].value,
            json!({"1": "one", "true": "yes", "x": 5})
        );
    }

    #[test]
    fn yaml_nan_is_reported_instead_of_silently_changed() {
        let decoded = decode_documents("n.yaml", "x: .nan\n");
        assert!(matches!(decoded.error, Some(Error::NotJsonCompatible { .. })));
    }

    #[test]
    fn encoded_yaml_and_json_streams_decode_back_to_the_same_values() {
        let values = vec![
            json!({"schema": "olm.package", "name": "a"}),
            json!({"schema": "x", "n": [1, 2]}),
        ];
        let yaml = to_yaml_documents(&values).unwrap();
        assert!(yaml.starts_with("---\n"));
        let back: Vec<_> = decode_documents("y", &yaml)
            .documents
            .into_iter()
            .map(|d| d.value)
            .collect();
        assert_eq!(back, values);
        let json = to_json_stream(&values).unwrap();
        assert!(json.contains("\n    \"schema\""));
        let back: Vec<_> = decode_documents("j", &json)
            .documents
            .into_iter()
            .map(|d| d.value)
            .collect();
        assert_eq!(back, values);
    }

    #[test]
    fn typed_yaml_helpers_round_trip_and_name_what_failed() {
        #[derive(serde::Deserialize, serde::Serialize, PartialEq, Debug)]
        struct T {
            a: u32,
        }
        let text = to_yaml_string(&T { a: 3 }).unwrap();
        assert_eq!(from_yaml_str::<T>("t", &text).unwrap(), T { a: 3 });
        let err = from_yaml_str::<T>("annotations.yaml", "a: nope").unwrap_err();
        assert!(
            err.to_string().starts_with("failed to decode annotations.yaml:"),
            "{err}"
        );
    }
}
