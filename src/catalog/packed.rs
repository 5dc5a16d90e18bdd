//! packed: the large texts a catalog keeps but rarely reads (CSV descriptions and examples,
//! inlined manifests, icons) are kept deflated in memory, and reading one gives back exactly the
//! text it was made from.
//!
//! Why: after sharing repeats ([`super::raw::RawJson::share`]), what is left of a large catalog's
//! memory is distinct text that is read only to describe one bundle, to serve it over gRPC or HTTP,
//! or to plan its install: 46 MiB of `olm.csv.metadata` members and 16 MiB of icons in the
//! largest public catalog, 54 MiB of base64 manifests in certified-operators v4.16. Deflate
//! (flate2) at its fastest level keeps such text in a third to a fifth of its size and
//! gives it back at several hundred MB/s.
//!
//! How a text is kept ([`PackedText::new`]):
//! - shorter than [`PACK_MIN`]: as it is (deflate would save little and cost a state per read);
//! - canonical standard base64 (what `opm render` writes for manifests and icons): decoded, and
//!   the bytes deflated when that saves at least an eighth (an icon's PNG does not deflate). Base64
//!   hides the repeats deflate looks for and costs a third more bytes; a canonical text (padded, no
//!   line breaks, zero trailing bits) is the one encoding of its bytes, so encoding them again on
//!   read gives back the same text;
//! - otherwise deflated, when that saves at least an eighth; else as it is.
//!
//! Only the choice is ours; compression is flate2's. A text is never changed: a unit test packs
//! and reads back every kind, and the catalog tests compare what is served with the files.

use std::{borrow::Cow, cell::RefCell, fmt, hash::Hash, sync::Arc};

use base64::Engine as _;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// Texts shorter than this are kept as they are.
pub const PACK_MIN: usize = 512;

/// A text kept packed (see the module docs); cloning shares it.
#[derive(Clone)]
pub struct PackedText(Arc<Inner>);

enum Inner {
    /// The text as it is.
    Plain(Box<str>),
    /// The text's bytes, deflated.
    Deflated { len: usize, data: Box<[u8]> },
    /// The text is the canonical standard base64 of these bytes (deflated when `deflated`).
    Base64 {
        len: usize,
        deflated: bool,
        data: Box<[u8]>,
    },
}

impl PackedText {
    /// Packs `text` (see the module docs for how).
    #[must_use]
    pub fn new(text: &str) -> Self {
        Self(Arc::new(pack(text)))
    }

    /// Keeps `text` as it is, unpacked.
    #[must_use]
    pub fn plain(text: impl Into<Box<str>>) -> Self {
        Self(Arc::new(Inner::Plain(text.into())))
    }

    /// The length of the text in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        match &*self.0 {
            Inner::Plain(text) => text.len(),
            Inner::Deflated { len, .. } | Inner::Base64 { len, .. } => *len,
        }
    }

    /// True for the empty text.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes kept in memory for this text (its heap share, before sharing).
    #[cfg(test)]
    fn kept_bytes(&self) -> usize {
        match &*self.0 {
            Inner::Plain(text) => text.len(),
            Inner::Deflated { data, .. } | Inner::Base64 { data, .. } => data.len(),
        }
    }

    /// True when the text is canonical base64 (then it holds no `"` and no `\`).
    #[must_use]
    pub fn is_base64(&self) -> bool {
        matches!(&*self.0, Inner::Base64 { .. })
    }

    /// The text.
    #[must_use]
    pub fn text(&self) -> Cow<'_, str> {
        match &*self.0 {
            Inner::Plain(text) => Cow::Borrowed(text),
            _ => {
                let mut out = String::with_capacity(self.len());
                self.push_to(&mut out);
                Cow::Owned(out)
            }
        }
    }

    /// Appends the text to `out`.
    pub fn push_to(&self, out: &mut String) {
        match &*self.0 {
            Inner::Plain(text) => out.push_str(text),
            Inner::Deflated { len, data } => {
                let bytes = inflate(data, *len);
                // Deflated from a `str`; inflating gives back the same bytes.
                out.push_str(&String::from_utf8_lossy(&bytes));
            }
            Inner::Base64 { .. } => {
                if let Some(bytes) = self.base64_bytes() {
                    base64::engine::general_purpose::STANDARD.encode_string(bytes, out);
                }
            }
        }
    }

    /// The bytes the text encodes, when it is canonical base64 ([`PackedText::is_base64`]),
    /// without encoding them again. `None` for any other text.
    #[must_use]
    pub fn base64_bytes(&self) -> Option<Cow<'_, [u8]>> {
        match &*self.0 {
            Inner::Base64 {
                len,
                deflated: true,
                data,
            } => Some(Cow::Owned(inflate(data, *len))),
            Inner::Base64 {
                deflated: false,
                data,
                ..
            } => Some(Cow::Borrowed(data)),
            _ => None,
        }
    }

    /// True when both share one allocation (then they are equal without a read).
    #[must_use]
    pub fn ptr_eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl From<&str> for PackedText {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<String> for PackedText {
    fn from(text: String) -> Self {
        if text.len() < PACK_MIN {
            Self::plain(text)
        } else {
            Self::new(&text)
        }
    }
}

impl PartialEq for PackedText {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || (self.len() == other.len() && self.text() == other.text())
    }
}

impl Eq for PackedText {}

impl Hash for PackedText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (*self.text()).hash(state);
    }
}

impl fmt::Debug for PackedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text(), f)
    }
}

impl fmt::Display for PackedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl serde::Serialize for PackedText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

/// Chooses how to keep `text` (module docs).
fn pack(text: &str) -> Inner {
    if text.len() < PACK_MIN {
        return Inner::Plain(Box::from(text));
    }
    if let Some(bytes) = canonical_base64(text) {
        return match deflate_if_smaller(&bytes) {
            Some(data) => Inner::Base64 {
                len: text.len(),
                deflated: true,
                data,
            },
            None => Inner::Base64 {
                len: text.len(),
                deflated: false,
                data: bytes.into_boxed_slice(),
            },
        };
    }
    match deflate_if_smaller(text.as_bytes()) {
        Some(data) => Inner::Deflated {
            len: text.len(),
            data,
        },
        None => Inner::Plain(Box::from(text)),
    }
}

/// The bytes `text` encodes when it is canonical standard base64 (padded, no line breaks, zero
/// trailing bits: the only encoding of those bytes, so encoding them gives back `text`).
fn canonical_base64(text: &str) -> Option<Vec<u8>> {
    // The first characters rule out most texts cheaply (descriptions, JSON members).
    let head = text.as_bytes().get(..64)?;
    if !head
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
    {
        return None;
    }
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

thread_local! {
    /// One compressor per thread, reset between texts (a new one costs its tables each time).
    static COMPRESS: RefCell<Compress> = RefCell::new(Compress::new(Compression::fast(), false));
}

/// `bytes` deflated, when that saves at least an eighth.
fn deflate_if_smaller(bytes: &[u8]) -> Option<Box<[u8]>> {
    let limit = bytes.len() - bytes.len() / 8;
    COMPRESS.with(|cell| {
        let mut compress = cell.try_borrow_mut().ok()?;
        compress.reset();
        // Room for `limit` bytes only: a stream that does not end within it does not shrink
        // enough (deflate with `Finish` ends the stream in one call when there is room).
        let mut out = Vec::with_capacity(limit);
        let status = compress
            .compress_vec(bytes, &mut out, FlushCompress::Finish)
            .ok()?;
        (status == Status::StreamEnd && out.len() < limit).then(|| out.into_boxed_slice())
    })
}

/// Inflates `data` (deflated by [`deflate_if_smaller`] from at most `len` bytes).
fn inflate(data: &[u8], len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut decompress = Decompress::new(false);
    // The output has room for every byte, so one call inflates the whole stream; a stream this
    // module wrote never fails to inflate.
    let _ = decompress.decompress_vec(data, &mut out, FlushDecompress::Finish);
    out
}

#[cfg(test)]
mod tests;
