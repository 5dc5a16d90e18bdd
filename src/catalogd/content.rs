//! content: one catalog rendered as catalogd stores it, the body `GET /api/v1/all` answers and
//! the index `GET /api/v1/metas` filters (pure: built once from the blobs, then only read).
//!
//! catalogd walks the catalog's files in lexical order (`declcfg.WalkMetasFS`), one blob per
//! document in file order, and writes each blob as operator-registry's `Meta` re-encodes it:
//! compact JSON, object keys sorted at every level, HTML characters not escaped, and a newline.
//! We write the blobs the loader read in the same order (by [`Origin`]: path component by
//! component, then document) and the same way, so a client sees the bytes catalogd would serve.
//! One difference: a blob of a schema we model (`olm.package`, `olm.channel`, `olm.bundle`,
//! `olm.deprecations`) is written from the model, so a field that schema does not define is
//! dropped; blobs of other schemas are written whole.

use std::{cmp::Ordering, io::Write as _, time::SystemTime};

use bytes::Bytes;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::catalog::declcfg::{Blob, DeclarativeConfig, Origin};

/// Bodies smaller than this are never compressed (catalogd's documented threshold).
pub const GZIP_MIN_SIZE: usize = 1400;

/// Where one blob's line sits in the body, and the fields `metas` filters on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    start: usize,
    end: usize,
    schema: Box<str>,
    package: Box<str>,
    name: Box<str>,
}

/// A catalog as JSON lines, with its gzip form and the time it was loaded.
#[derive(Debug, Clone)]
pub struct Content {
    body: Bytes,
    gzipped: Option<Bytes>,
    lines: Vec<Line>,
    modified: SystemTime,
}

/// Why a catalog could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    /// A blob could not be encoded as JSON (never expected: every blob came from JSON or YAML).
    #[error("blob at {origin} cannot be written as JSON")]
    Encode {
        /// Where the blob came from.
        origin: String,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// Compressing the body failed (an allocation failure, in practice).
    #[error("cannot gzip the catalog body")]
    Gzip(#[source] std::io::Error),
}

/// Compares two origins the way a directory walk visits them: path component by component, so
/// `a/b` (inside directory `a`) comes before the file `a-b`, then document by document.
fn walk_order(a: &Origin, b: &Origin) -> Ordering {
    a.path
        .split('/')
        .cmp(b.path.split('/'))
        .then(a.document.cmp(&b.document))
}

/// Sorts every object's keys, recursively (what Go's `encoding/json` does with a map).
fn sort_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut sorted = Map::with_capacity(entries.len());
            for (key, mut v) in entries {
                sort_keys(&mut v);
                sorted.insert(key, v);
            }
            *map = sorted;
        }
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

fn origin_of<'a>(blob: &Blob<'a>) -> &'a Origin {
    match *blob {
        Blob::Package(p) => &p.origin,
        Blob::Channel(c) => &c.origin,
        Blob::Bundle(b) => &b.origin,
        Blob::Deprecation(d) => &d.origin,
        Blob::Other(m) => &m.origin,
    }
}

fn text_field(value: &Value, key: &str) -> Box<str> {
    value.get(key).and_then(Value::as_str).unwrap_or_default().into()
}

/// Gzips `data` (level 6, what Go's gzip writer defaults to).
///
/// # Errors
/// [`ContentError::Gzip`].
pub fn gzip(data: &[u8]) -> Result<Vec<u8>, ContentError> {
    let mut encoder =
        flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 4), flate2::Compression::new(6));
    encoder.write_all(data).map_err(ContentError::Gzip)?;
    encoder.finish().map_err(ContentError::Gzip)
}

impl Content {
    /// Renders `config`, loaded at `modified`.
    ///
    /// # Errors
    /// [`ContentError`] when a blob cannot be encoded or the body cannot be compressed.
    pub fn from_config(config: &DeclarativeConfig, modified: SystemTime) -> Result<Self, ContentError> {
        let mut blobs: Vec<Blob<'_>> = config.packages.iter().map(Blob::Package).collect();
        blobs.extend(config.channels.iter().map(Blob::Channel));
        blobs.extend(config.bundles.iter().map(Blob::Bundle));
        blobs.extend(config.deprecations.iter().map(Blob::Deprecation));
        blobs.extend(config.others.iter().map(Blob::Other));
        blobs.sort_by(|a, b| walk_order(origin_of(a), origin_of(b)));
        let mut body = Vec::new();
        let mut lines = Vec::with_capacity(blobs.len());
        for blob in &blobs {
            let encode = |source| ContentError::Encode {
                origin: origin_of(blob).to_string(),
                source,
            };
            let mut value = serde_json::to_value(blob).map_err(encode)?;
            sort_keys(&mut value);
            let start = body.len();
            let mut serializer = serde_json::Serializer::new(&mut body);
            value.serialize(&mut serializer).map_err(encode)?;
            body.push(b'\n');
            lines.push(Line {
                start,
                end: body.len(),
                schema: text_field(&value, "schema"),
                package: text_field(&value, "package"),
                name: text_field(&value, "name"),
            });
        }
        let gzipped = if body.len() >= GZIP_MIN_SIZE {
            Some(Bytes::from(gzip(&body)?))
        } else {
            None
        };
        Ok(Self {
            body: Bytes::from(body),
            gzipped,
            lines,
            modified,
        })
    }

    /// The whole catalog, one blob per line.
    #[must_use]
    pub fn all(&self) -> &Bytes {
        &self.body
    }

    /// [`Content::all`] gzipped, when it is large enough to be worth it.
    #[must_use]
    pub fn all_gzipped(&self) -> Option<&Bytes> {
        self.gzipped.as_ref()
    }

    /// When the catalog was loaded (`Last-Modified`).
    #[must_use]
    pub fn modified(&self) -> SystemTime {
        self.modified
    }

    /// How many blobs the catalog has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// True for a catalog without blobs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The lines whose `schema`, `package` and `name` equal the ones given (an empty one matches
    /// everything), in body order; the whole body when all three are empty, as catalogd answers.
    #[must_use]
    pub fn metas(&self, schema: &str, package: &str, name: &str) -> Bytes {
        if schema.is_empty() && package.is_empty() && name.is_empty() {
            return self.body.clone();
        }
        let wanted = |field: &str, want: &str| want.is_empty() || field == want;
        let mut out = Vec::new();
        for line in &self.lines {
            if wanted(&line.schema, schema) && wanted(&line.package, package) && wanted(&line.name, name) {
                out.extend_from_slice(&self.body[line.start..line.end]);
            }
        }
        Bytes::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CATALOG: &str = r#"
{"schema":"olm.package","name":"b","defaultChannel":"stable","description":"<b> & co"}
{"schema":"olm.channel","package":"b","name":"stable","entries":[{"name":"b.v1"}]}
{"schema":"olm.bundle","package":"b","name":"b.v1","image":"r/b:1","properties":[{"type":"olm.package","value":{"version":"1.0.0","packageName":"b"}}]}
{"schema":"example.custom","package":"b","name":"x","zeta":1,"alpha":{"z":1,"a":2}}
"#;

    fn content() -> Content {
        let (mut cfg, problems) = DeclarativeConfig::from_str_with_problems("b/catalog.json", CATALOG);
        assert!(problems.is_empty(), "{problems:?}");
        let (a, problems) = DeclarativeConfig::from_str_with_problems(
            "a/catalog.json",
            r#"{"schema":"olm.package","name":"a","defaultChannel":"s"}"#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        cfg.merge(a);
        Content::from_config(&cfg, SystemTime::UNIX_EPOCH).unwrap()
    }

    #[test]
    fn blobs_are_written_in_walk_order_with_sorted_keys_one_per_line() {
        let content = content();
        let text = std::str::from_utf8(content.all()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        // a/ is walked before b/, and documents keep their file order across schemas.
        assert_eq!(
            lines[0],
            r#"{"defaultChannel":"s","name":"a","schema":"olm.package"}"#
        );
        assert_eq!(
            lines[1],
            r#"{"defaultChannel":"stable","description":"<b> & co","name":"b","schema":"olm.package"}"#
        );
        assert!(
            lines[2].starts_with(r#"{"entries":[{"name":"b.v1"}],"name":"stable""#),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].contains(r#""value":{"packageName":"b","version":"1.0.0"}"#),
            "{}",
            lines[3]
        );
        assert_eq!(
            lines[4],
            r#"{"alpha":{"a":2,"z":1},"name":"x","package":"b","schema":"example.custom","zeta":1}"#
        );
        assert!(text.ends_with('\n'));
        assert_eq!(content.len(), 5);
    }

    #[test]
    fn metas_filter_on_schema_package_and_name_together() {
        let content = content();
        let text = |b: Bytes| String::from_utf8(b.to_vec()).unwrap();
        assert_eq!(content.metas("", "", ""), content.all());
        let packages = text(content.metas("olm.package", "", ""));
        assert_eq!(packages.lines().count(), 2, "{packages}");
        // An olm.package blob has no `package` field, so filtering on a package leaves it out.
        let of_b = text(content.metas("", "b", ""));
        assert_eq!(of_b.lines().count(), 3, "{of_b}");
        assert!(!of_b.contains(r#""schema":"olm.package""#), "{of_b}");
        let one = text(content.metas("olm.bundle", "b", "b.v1"));
        assert_eq!(one.lines().count(), 1, "{one}");
        assert!(content.metas("olm.bundle", "a", "").is_empty());
    }

    #[test]
    fn only_a_body_above_the_threshold_is_gzipped() {
        assert!(content().all_gzipped().is_none());
        let mut text = String::new();
        for i in 0..50 {
            text.push_str(&format!(
                r#"{{"schema":"olm.channel","package":"p","name":"c{i}","entries":[{{"name":"p.v{i}"}}]}}"#
            ));
        }
        let (cfg, _) = DeclarativeConfig::from_str_with_problems("c.json", &text);
        let content = Content::from_config(&cfg, SystemTime::UNIX_EPOCH).unwrap();
        let gz = content.all_gzipped().expect("a large body is gzipped");
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
        assert_eq!(plain, content.all().to_vec());
    }
}
