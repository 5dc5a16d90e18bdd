//! decode: a fast decoder for the block-style YAML that catalog tools write, which either
//! yields exactly what serde-saphyr would or declines.
//!
//! # The rule this module enforces
//!
//! For any text, [`decode`] returns one of two things:
//! - the documents, built from the same serde calls (maps, sequences, scalars resolved to null,
//!   bool, integer, float or string) that serde-saphyr would make for that text; or
//! - [`Error::Unsupported`], naming the first construct it does not handle, and the caller decodes
//!   the text with serde-saphyr instead.
//!
//! It never guesses. Whatever YAML it does not fully understand, and everything that is a syntax
//! error for libyaml, makes it decline, so that the fallback produces the real result or the real
//! message. olm-rs's `tests/it/yaml_fast_path.rs` checks it document for document against serde-saphyr on every
//! YAML file of the public catalogs; the unit tests below do the same for each construct and for
//! random block YAML and mutations of it.
//!
//! # What it handles
//!
//! What `opm render -o yaml` and the Go YAML encoders write:
//! - documents separated by `---` lines (empty documents are skipped, as serde-saphyr's callers do);
//! - block mappings with plain or quoted single-line keys, block sequences, including the
//!   "indentless" `key:\n- item` form and compact `- key: value` items;
//! - plain scalars, including ones folded over several lines, resolved the way serde-saphyr
//!   resolves untagged plain scalars (`null` `~` and empty, `true`/`false` in three casings,
//!   decimal / `0x` / `0o` / `0b` integers, floats, `.inf`, `.nan`; everything else is a string);
//! - single- and double-quoted scalars with every libyaml escape and line folding;
//! - literal and folded block scalars (`|`, `>`) with chomping (`-`, `+`) and indentation
//!   indicators;
//! - the empty flow collections `[]` and `{}`, and whole-line comments.
//!
//! # What it declines
//!
//! Comments after a value on its line, anchors, aliases, tags, directives, `...`, non-empty flow
//! collections, complex (`?`) keys, tabs in indentation, carriage returns, characters libyaml
//! refuses or treats as line breaks (C0/C1 controls, NEL, U+2028, U+2029, U+FEFF, U+FFFE,
//! U+FFFF), keys longer than 1000 bytes, nesting deeper than 100, and any syntax error.

use std::{borrow::Cow, fmt};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Why the fast decoder did not produce documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The text uses YAML this decoder does not handle, or is not valid YAML: decode it with
    /// serde-saphyr instead. Names the construct and the 1-based line where it was found.
    Unsupported {
        /// What was found.
        what: &'static str,
        /// The 1-based line.
        line: usize,
    },
    /// The text was understood, but the target type refused a value (the message of the
    /// type's `Deserialize`), in the document with this 0-based index.
    Refused {
        /// 0-based index of the document among the non-empty ones.
        document: usize,
        /// The type's message.
        message: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported { what, line } => {
                write!(f, "{what} at line {line} is not handled by the fast YAML decoder")
            }
            Self::Refused { document, message } => write!(f, "document {document}: {message}"),
        }
    }
}

impl std::error::Error for Error {}

/// The error the serde layer passes around; [`decode`] turns it into [`Error`].
#[derive(Debug)]
struct DeError(String);

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

type Result<T, E = DeError> = std::result::Result<T, E>;

/// Deepest nesting handled (serde-saphyr refuses beyond 128).
const MAX_DEPTH: usize = 100;
/// Longest key handled (libyaml refuses implicit keys beyond 1024 characters).
const MAX_KEY: usize = 1000;

/// Decodes every non-empty document of `text` (without a byte-order mark) into `T`, each with
/// its 0-based index among the non-empty documents; see the module docs.
///
/// # Errors
/// [`Error::Unsupported`] when the text has anything this decoder does not handle (decode it with
/// serde-saphyr then), [`Error::Refused`] when `T` refused a value of a text that was understood.
pub fn decode<'a, T: de::Deserialize<'a>>(text: &'a str) -> Result<Vec<(usize, T)>, Error> {
    let mut parser = Parser::new(text);
    let mut out = Vec::new();
    let result = decode_into(&mut parser, &mut out);
    match (parser.unsupported, result) {
        (Some((what, at)), _) => Err(Error::Unsupported {
            what,
            line: line_of(text, at),
        }),
        (None, Ok(())) => Ok(out),
        (None, Err(err)) => Err(Error::Refused {
            document: out.len(),
            message: err.0,
        }),
    }
}

fn decode_into<'a, T: de::Deserialize<'a>>(parser: &mut Parser<'a>, out: &mut Vec<(usize, T)>) -> Result<()> {
    parser.check_characters()?;
    let mut started = false;
    loop {
        match parser.next_line()? {
            Line::End => return Ok(()),
            Line::DocumentStart => {
                // `---` must stand alone on its line: content after it is not handled.
                parser.pos += 3;
                started = true;
            }
            Line::Content { .. } if started => {
                // The previous document ended at a line that is neither `---` nor the end.
                return parser.bail("content after the end of a document");
            }
            Line::Content { .. } => started = true,
        }
        let node = Value {
            p: parser,
            parent: -1,
            context: Context::Document,
        }
        .node()?;
        let value = <Option<T> as de::Deserialize>::deserialize(NodeDe { p: parser, node })?;
        if let Some(value) = value {
            out.push((out.len(), value));
        }
    }
}

/// 1-based line of the byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    let end = at.min(text.len());
    1 + text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count()
}

/// What the next line that is not blank holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Content indented by this many spaces; the cursor is on its first character.
    Content { indent: usize },
    /// A `---` line; the cursor is on its first `-`.
    DocumentStart,
    /// The end of the text.
    End,
}

/// The cursor over the text.
struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    /// Byte offset of the cursor.
    pos: usize,
    /// Byte offset of the start of the cursor's line.
    line_start: usize,
    depth: usize,
    /// The first construct this decoder does not handle, and where.
    unsupported: Option<(&'static str, usize)>,
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            line_start: 0,
            depth: 0,
            unsupported: None,
        }
    }

    /// Records that the text uses something this decoder does not handle, and stops.
    fn bail<T>(&mut self, what: &'static str) -> Result<T> {
        if self.unsupported.is_none() {
            self.unsupported = Some((what, self.pos));
        }
        Err(DeError(what.to_owned()))
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    /// True when the byte at `at` is a space, a tab, a line break or the end of the text.
    fn blank_or_end(&self, at: usize) -> bool {
        matches!(self.byte(at), None | Some(b' ' | b'\t' | b'\n'))
    }

    /// Offset of the line break ending the line that holds `at` (or the end of the text).
    fn line_end(&self, at: usize) -> usize {
        self.bytes
            .get(at..)
            .and_then(|rest| rest.iter().position(|b| *b == b'\n'))
            .map_or(self.bytes.len(), |i| at + i)
    }

    fn column(&self) -> usize {
        self.pos - self.line_start
    }

    /// Refuses characters libyaml refuses or reads as line breaks we do not handle.
    fn check_characters(&mut self) -> Result<()> {
        const CHUNK: usize = 64;
        let bytes = self.bytes;
        for (n, chunk) in bytes.chunks(CHUNK).enumerate() {
            // Most chunks are printable ASCII, line breaks and tabs only: one branch-free pass.
            let plain = chunk.iter().fold(true, |ok, &b| {
                ok & ((0x20..0x7f).contains(&b) | (b == b'\n') | (b == b'\t'))
            });
            if !plain {
                self.check_chunk(n * CHUNK, chunk.len())?;
            }
        }
        Ok(())
    }

    /// The byte-by-byte check of [`Parser::check_characters`] over `len` bytes from `from`.
    fn check_chunk(&mut self, from: usize, len: usize) -> Result<()> {
        let bytes = self.bytes;
        for i in from..from + len {
            let b = bytes[i];
            if b < 0x80 {
                if (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f {
                    self.pos = i;
                    return self.bail("a control character or carriage return");
                }
                continue;
            }
            let refused = match b {
                // U+0080..U+009F: C1 controls, NEL among them.
                0xc2 => matches!(bytes.get(i + 1), Some(0x80..=0x9f)),
                // U+2028, U+2029: line and paragraph separators.
                0xe2 => bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)),
                // U+FEFF (a byte-order mark inside the text), U+FFFE, U+FFFF.
                0xef => matches!(
                    (bytes.get(i + 1), bytes.get(i + 2)),
                    (Some(0xbb), Some(0xbf)) | (Some(0xbf), Some(0xbe | 0xbf))
                ),
                _ => false,
            };
            if refused {
                self.pos = i;
                return self.bail("a character libyaml refuses or reads as a line break");
            }
        }
        Ok(())
    }

    /// Moves the cursor to the first character of the next line that is not blank. When the
    /// cursor is already inside a line's indentation, that line is the one examined; otherwise the
    /// rest of the cursor's line must be blank.
    fn next_line(&mut self) -> Result<Line> {
        let in_indentation = self.bytes[self.line_start..self.pos].iter().all(|b| *b == b' ');
        let mut start = if in_indentation && self.pos >= self.line_start {
            self.line_start
        } else {
            let end = self.line_end(self.pos);
            if self.bytes[self.pos..end].iter().any(|b| !is_blank(*b)) {
                let rest = self.bytes[self.pos..end].iter().position(|b| !is_blank(*b));
                self.pos += rest.unwrap_or(0);
                return if self.byte(self.pos) == Some(b'#') {
                    self.bail("a comment")
                } else {
                    self.bail("content after a complete value")
                };
            }
            if self.bytes[self.pos..end].contains(&b'\t') {
                return self.bail("a tab outside a scalar");
            }
            (end + 1).min(self.bytes.len())
        };
        loop {
            self.line_start = start;
            let indent = self.bytes[start..].iter().take_while(|b| **b == b' ').count();
            self.pos = start + indent;
            match self.byte(self.pos) {
                None => return Ok(Line::End),
                Some(b'\n') => start = self.pos + 1,
                Some(b'\t') => return self.bail("a tab outside a scalar"),
                // A comment line: skipped like a blank one.
                Some(b'#') => start = (self.line_end(self.pos) + 1).min(self.bytes.len()),
                Some(b'-')
                    if indent == 0
                        && self.bytes[self.pos..].starts_with(b"---")
                        && self.blank_or_end(self.pos + 3) =>
                {
                    if self.line_end(self.pos) != self.pos + 3 {
                        return self.bail("content on a `---` line");
                    }
                    return Ok(Line::DocumentStart);
                }
                Some(b'.')
                    if indent == 0
                        && self.bytes[self.pos..].starts_with(b"...")
                        && self.blank_or_end(self.pos + 3) =>
                {
                    return self.bail("a `...` document end marker");
                }
                Some(_) => return Ok(Line::Content { indent }),
            }
        }
    }

    /// The key starting at the cursor, if the cursor's line is a `key: ...` mapping entry, and
    /// the offset just after its `:`. Declines keys it does not handle.
    fn key_at(&mut self) -> Result<Option<(Scalar<'a>, usize)>> {
        let start = self.pos;
        match self.byte(start) {
            Some(quote @ (b'"' | b'\'')) => {
                let saved = (self.pos, self.line_start);
                let value = self.quoted(quote, -1)?;
                let same_line = self.line_start == saved.1;
                let after = self.pos + self.bytes[self.pos..].iter().take_while(|b| **b == b' ').count();
                let is_key = self.byte(after) == Some(b':') && self.blank_or_end(after + 1);
                (self.pos, self.line_start) = saved;
                if !is_key {
                    return Ok(None);
                }
                if !same_line {
                    return self.bail("a quoted key over several lines");
                }
                Ok(Some((Scalar::Quoted(value), after + 1)))
            }
            Some(b)
                if starts_plain(b) || (matches!(b, b'-' | b'?' | b':') && !self.blank_or_end(start + 1)) =>
            {
                let end = self.line_end(start);
                let line = &self.bytes[start..end];
                let mut i = 0;
                while i < line.len() {
                    match line[i] {
                        b':' if i + 1 == line.len() || is_blank(line[i + 1]) => break,
                        b'#' if i > 0 && is_blank(line[i - 1]) => return self.bail("a comment"),
                        _ => i += 1,
                    }
                }
                if i == line.len() {
                    return Ok(None);
                }
                if i > MAX_KEY {
                    return self.bail("a key longer than 1000 bytes");
                }
                let key = self.text[start..start + i].trim_end_matches([' ', '\t']);
                if key == "<<" {
                    return self.bail("a merge key");
                }
                Ok(Some((Scalar::Plain(Cow::Borrowed(key)), start + i + 1)))
            }
            _ => Ok(None),
        }
    }

    /// Reads a quoted scalar starting at the cursor (on its opening quote); the cursor ends just
    /// after the closing quote. Continuation lines must be indented more than `parent`.
    fn quoted(&mut self, quote: u8, parent: isize) -> Result<Cow<'a, str>> {
        let double = quote == b'"';
        let start = self.pos + 1;
        // The common case: no escape and no line break before the closing quote.
        let mut i = start;
        while let Some(b) = self.byte(i) {
            if b == quote || b == b'\n' || (double && b == b'\\') {
                break;
            }
            i += 1;
        }
        let doubled_single_quote = !double && self.byte(i + 1) == Some(b'\'');
        if self.byte(i) == Some(quote) && !doubled_single_quote {
            self.pos = i + 1;
            return Ok(Cow::Borrowed(&self.text[start..i]));
        }
        let mut out = String::with_capacity(i - start + 16);
        let mut i = start;
        // Where unescaped blanks at the end of `out` began (dropped before a line break).
        let mut blanks_from: Option<usize> = None;
        loop {
            let Some(b) = self.byte(i) else {
                self.pos = i;
                return self.bail("an unterminated quoted scalar");
            };
            match b {
                b'\'' if !double => {
                    if self.byte(i + 1) == Some(b'\'') {
                        out.push('\'');
                        blanks_from = None;
                        i += 2;
                    } else {
                        self.pos = i + 1;
                        return Ok(Cow::Owned(out));
                    }
                }
                b'"' if double => {
                    self.pos = i + 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' if double => {
                    blanks_from = None;
                    i = self.escape(i, &mut out, parent)?;
                }
                b'\n' => {
                    if let Some(at) = blanks_from.take() {
                        out.truncate(at);
                    }
                    let (next, breaks) = self.fold(i, parent)?;
                    if breaks == 0 {
                        out.push(' ');
                    } else {
                        out.extend(std::iter::repeat_n('\n', breaks));
                    }
                    i = next;
                }
                b' ' | b'\t' => {
                    blanks_from.get_or_insert(out.len());
                    out.push(char::from(b));
                    i += 1;
                }
                _ => {
                    blanks_from = None;
                    // Up to the next byte with a meaning here (never `b` itself).
                    let run = self.bytes[i + 1..]
                        .iter()
                        .position(|&c| {
                            c == quote || matches!(c, b'\n' | b' ' | b'\t') || (double && c == b'\\')
                        })
                        .map_or(self.bytes.len(), |n| i + 1 + n);
                    out.push_str(&self.text[i..run]);
                    i = run;
                }
            }
        }
    }

    /// At the line break at `at` inside a quoted scalar: skips the blank lines after it and the
    /// leading blanks of the line the scalar continues on. Returns that position and the number
    /// of blank lines skipped.
    fn fold(&mut self, at: usize, parent: isize) -> Result<(usize, usize)> {
        let mut breaks = 0;
        let mut line = at + 1;
        loop {
            let spaces = self.bytes[line..].iter().take_while(|b| is_blank(**b)).count();
            let first = line + spaces;
            match self.byte(first) {
                None => {
                    self.pos = first;
                    return self.bail("an unterminated quoted scalar");
                }
                Some(b'\n') => {
                    breaks += 1;
                    line = first + 1;
                }
                Some(_) => {
                    self.pos = first;
                    self.line_start = line;
                    let marker = spaces == 0
                        && (self.bytes[line..].starts_with(b"---") || self.bytes[line..].starts_with(b"..."))
                        && self.blank_or_end(line + 3);
                    if marker {
                        return self.bail("a document marker inside a quoted scalar");
                    }
                    if self.bytes[line..first].contains(&b'\t')
                        || isize::try_from(spaces).unwrap_or(isize::MAX) <= parent
                    {
                        return self.bail("a quoted scalar continued without indentation");
                    }
                    return Ok((first, breaks));
                }
            }
        }
    }

    /// Decodes the escape sequence at `at` (on its backslash) into `out`; returns the offset after
    /// it.
    fn escape(&mut self, at: usize, out: &mut String, parent: isize) -> Result<usize> {
        let Some(code) = self.byte(at + 1) else {
            self.pos = at;
            return self.bail("an unterminated quoted scalar");
        };
        let simple = match code {
            b'0' => Some('\0'),
            b'a' => Some('\u{7}'),
            b'b' => Some('\u{8}'),
            b't' | b'\t' => Some('\t'),
            b'n' => Some('\n'),
            b'v' => Some('\u{b}'),
            b'f' => Some('\u{c}'),
            b'r' => Some('\r'),
            b'e' => Some('\u{1b}'),
            b' ' => Some(' '),
            b'"' => Some('"'),
            b'/' => Some('/'),
            b'\\' => Some('\\'),
            b'N' => Some('\u{85}'),
            b'_' => Some('\u{a0}'),
            b'L' => Some('\u{2028}'),
            b'P' => Some('\u{2029}'),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            return Ok(at + 2);
        }
        let digits = match code {
            b'x' => 2,
            b'u' => 4,
            b'U' => 8,
            b'\n' => {
                // An escaped line break: the lines join without a space; blank lines after it
                // still count.
                let (next, breaks) = self.fold(at + 1, parent)?;
                out.extend(std::iter::repeat_n('\n', breaks));
                return Ok(next);
            }
            _ => {
                self.pos = at;
                return self.bail("an unknown escape sequence");
            }
        };
        let hex = self.text.get(at + 2..at + 2 + digits).unwrap_or("");
        let value = if hex.len() == digits && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
        } else {
            None
        };
        match value {
            Some(c) => {
                out.push(c);
                Ok(at + 2 + digits)
            }
            None => {
                self.pos = at;
                self.bail("an invalid escape sequence")
            }
        }
    }

    /// Reads a plain scalar starting at the cursor; continuation lines must be indented more
    /// than `parent`. `first_line_checked`: [`Parser::key_at`] has checked the first line for
    /// `: ` and comments. The cursor ends at the start of the line after the scalar.
    fn plain(&mut self, parent: isize, first_line_checked: bool) -> Result<Cow<'a, str>> {
        let start = self.pos;
        let end = self.line_end(start);
        if !first_line_checked {
            self.check_plain_line(start, end)?;
        }
        let first = self.text[start..end].trim_end_matches([' ', '\t']);
        let mut value = Cow::Borrowed(first);
        let mut line = (end + 1).min(self.bytes.len());
        let mut breaks = 0;
        let mut after = line;
        while line < self.bytes.len() {
            let spaces = self.bytes[line..].iter().take_while(|b| **b == b' ').count();
            let first_byte = line + spaces;
            match self.byte(first_byte) {
                None => break,
                Some(b'\n') => {
                    breaks += 1;
                    line = first_byte + 1;
                    continue;
                }
                Some(b'\t') => {
                    self.pos = first_byte;
                    return self.bail("a tab in the indentation of a plain scalar");
                }
                Some(_) => {}
            }
            if isize::try_from(spaces).unwrap_or(isize::MAX) <= parent {
                break;
            }
            let marker = spaces == 0
                && (self.bytes[line..].starts_with(b"---") || self.bytes[line..].starts_with(b"..."))
                && self.blank_or_end(line + 3);
            if marker {
                break;
            }
            self.pos = first_byte;
            self.line_start = line;
            // libyaml ends a plain scalar at a comment line (what follows it is checked as the
            // next part of the structure); any other character, indicators included, continues it.
            if self.bytes[first_byte] == b'#' {
                break;
            }
            let end = self.line_end(first_byte);
            self.check_plain_line(first_byte, end)?;
            let value = value.to_mut();
            if breaks == 0 {
                value.push(' ');
            } else {
                value.extend(std::iter::repeat_n('\n', breaks));
            }
            value.push_str(self.text[first_byte..end].trim_end_matches([' ', '\t']));
            breaks = 0;
            line = (end + 1).min(self.bytes.len());
            after = line;
        }
        self.pos = after;
        self.line_start = after;
        Ok(value)
    }

    /// Declines a plain scalar line holding `: `, a final `:` or a comment (libyaml would end the
    /// scalar there).
    fn check_plain_line(&mut self, start: usize, end: usize) -> Result<()> {
        let line = &self.bytes[start..end];
        for (i, b) in line.iter().enumerate() {
            match b {
                b':' if i + 1 == line.len() || is_blank(line[i + 1]) => {
                    self.pos = start + i;
                    return self.bail("`: ` inside a plain scalar");
                }
                b'#' if i > 0 && is_blank(line[i - 1]) => {
                    self.pos = start + i;
                    return self.bail("a comment");
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Reads a block scalar whose header (`|` or `>`) is at the cursor; its content must be
    /// indented more than `parent`. The cursor ends at the start of the first line after it.
    fn block(&mut self, parent: isize) -> Result<Cow<'a, str>> {
        let literal = self.bytes[self.pos] == b'|';
        let mut i = self.pos + 1;
        let mut chomp = 0i8; // -1 strip, 0 clip, 1 keep
        let mut increment = 0usize;
        for _ in 0..2 {
            match self.byte(i) {
                Some(b'-') if chomp == 0 => chomp = -1,
                Some(b'+') if chomp == 0 => chomp = 1,
                Some(d @ b'1'..=b'9') if increment == 0 => increment = usize::from(d - b'0'),
                _ => break,
            }
            i += 1;
        }
        let end = self.line_end(i);
        if self.bytes[i..end].iter().any(|b| !is_blank(*b)) {
            self.pos = i;
            return self.bail("a block scalar header this decoder does not handle");
        }
        let Ok(parent) = usize::try_from(parent) else {
            return self.bail("a block scalar at the top level");
        };
        let mut line = (end + 1).min(self.bytes.len());
        if end == self.bytes.len() {
            line = end;
        }
        // The content indentation: given, or that of the first line that is not empty.
        let indent = if increment > 0 {
            parent + increment
        } else {
            let mut probe = line;
            let mut widest_empty = 0;
            loop {
                let spaces = self.bytes[probe..].iter().take_while(|b| **b == b' ').count();
                match self.byte(probe + spaces) {
                    Some(b'\n') => {
                        widest_empty = widest_empty.max(spaces);
                        probe += spaces + 1;
                    }
                    None => {
                        self.pos = probe;
                        return self.bail("an empty block scalar");
                    }
                    // libyaml refuses a tab where it is still looking for the indentation.
                    Some(b'\t') => {
                        self.pos = probe + spaces;
                        return self.bail("a tab in the indentation of a block scalar");
                    }
                    Some(_) => {
                        if spaces <= parent || widest_empty > spaces {
                            self.pos = probe;
                            return self.bail("an empty or oddly indented block scalar");
                        }
                        break spaces;
                    }
                }
            }
        };
        let mut out = String::new();
        let mut leading_break = false;
        let mut trailing_breaks = 0usize;
        let mut leading_blank = false;
        loop {
            // Eat up to `indent` spaces, then see what the line holds.
            let spaces = self.bytes[line..]
                .iter()
                .take(indent)
                .take_while(|b| **b == b' ')
                .count();
            let at = line + spaces;
            match self.byte(at) {
                None => {
                    line = at;
                    break;
                }
                Some(b'\n') => {
                    // An empty line: kept as a line break once content follows (or by `+`).
                    trailing_breaks += 1;
                    line = at + 1;
                    continue;
                }
                Some(b'\t') if spaces < indent => {
                    self.pos = at;
                    return self.bail("a tab in the indentation of a block scalar");
                }
                Some(_) if spaces < indent => break,
                Some(b) => {
                    let trailing_blank = is_blank(b);
                    if !literal && leading_break && !leading_blank && !trailing_blank {
                        if trailing_breaks == 0 {
                            out.push(' ');
                        }
                    } else if leading_break {
                        out.push('\n');
                    }
                    leading_break = false;
                    out.extend(std::iter::repeat_n('\n', trailing_breaks));
                    trailing_breaks = 0;
                    leading_blank = trailing_blank;
                    let end = self.line_end(at);
                    out.push_str(&self.text[at..end]);
                    if end == self.bytes.len() {
                        // libyaml (and Go) keep no line break here under clip or keep chomping,
                        // serde-saphyr adds one: leave such texts to the fallback.
                        if chomp >= 0 {
                            self.pos = end;
                            return self.bail("a block scalar ending the text without a line break");
                        }
                        line = end;
                        break;
                    }
                    leading_break = true;
                    line = end + 1;
                }
            }
        }
        if chomp >= 0 && leading_break {
            out.push('\n');
        }
        if chomp == 1 {
            out.extend(std::iter::repeat_n('\n', trailing_breaks));
        }
        self.pos = line;
        self.line_start = self.bytes[..line]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        Ok(Cow::Owned(out))
    }
}

/// True for a byte that can start a plain scalar by itself (indicators cannot; `-`, `?` and `:`
/// can when a non-blank follows, which callers check).
fn starts_plain(b: u8) -> bool {
    !matches!(
        b,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
            | b' '
            | b'\t'
            | b'\n'
    )
}

/// A scalar and its style, which decides how it is resolved.
#[derive(Debug)]
enum Scalar<'a> {
    /// A plain scalar (also a missing value, which is the empty plain scalar).
    Plain(Cow<'a, str>),
    /// A quoted or block scalar: always a string.
    Quoted(Cow<'a, str>),
}

/// A node, once its start has been read.
#[derive(Debug)]
enum Node<'a> {
    Scalar(Scalar<'a>),
    /// A block sequence whose `-` indicators are at this column; the cursor is on the first.
    Sequence(usize),
    /// A block mapping whose keys are at this column; the cursor is on the first key.
    Mapping(usize),
    EmptySequence,
    EmptyMapping,
}

/// Where a value stands, which decides what may start it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// A whole document.
    Document,
    /// After `key:`: a collection must start on a later line (or be an indentless sequence).
    MappingValue,
    /// After `-`: a compact collection may start on the same line.
    SequenceItem,
}

/// The value at the cursor, not read yet.
struct Value<'p, 'a> {
    p: &'p mut Parser<'a>,
    /// The indentation of the collection holding the value (-1 for a document).
    parent: isize,
    context: Context,
}

impl<'a> Value<'_, 'a> {
    /// Reads the start of the node (the whole node for a scalar).
    fn node(&mut self) -> Result<Node<'a>> {
        let p = &mut *self.p;
        if self.context != Context::Document {
            let blanks = p.bytes[p.pos..].iter().take_while(|b| is_blank(**b)).count();
            if !matches!(p.byte(p.pos + blanks), None | Some(b'\n')) {
                // The value starts on this line.
                if p.bytes[p.pos..p.pos + blanks].contains(&b'\t') {
                    p.pos += blanks;
                    return p.bail("a tab before a value");
                }
                p.pos += blanks;
                return self.start(self.context == Context::SequenceItem);
            }
        }
        match p.next_line()? {
            Line::Content { indent } if isize::try_from(indent).unwrap_or(isize::MAX) > self.parent => {
                self.start(true)
            }
            Line::Content { indent }
                if self.context == Context::MappingValue
                    && isize::try_from(indent).ok() == Some(self.parent)
                    && p.byte(p.pos) == Some(b'-')
                    && p.blank_or_end(p.pos + 1) =>
            {
                Ok(Node::Sequence(indent))
            }
            _ => Ok(Node::Scalar(Scalar::Plain(Cow::Borrowed("")))),
        }
    }

    /// Reads the start of the node at the cursor (on its first character).
    fn start(&mut self, collections: bool) -> Result<Node<'a>> {
        let p = &mut *self.p;
        let column = p.column();
        let Some(b) = p.byte(p.pos) else {
            return p.bail("the end of the text");
        };
        match b {
            b'-' if p.blank_or_end(p.pos + 1) => {
                if collections {
                    Ok(Node::Sequence(column))
                } else {
                    p.bail("a sequence on the line of its key")
                }
            }
            b'[' | b'{' => {
                let close = if b == b'[' { b']' } else { b'}' };
                let inner = p.bytes[p.pos + 1..].iter().take_while(|c| **c == b' ').count();
                let at = p.pos + 1 + inner;
                if p.byte(at) != Some(close) {
                    return p.bail("a flow collection that is not empty");
                }
                p.pos = at + 1;
                Ok(if b == b'[' {
                    Node::EmptySequence
                } else {
                    Node::EmptyMapping
                })
            }
            b'|' | b'>' => Ok(Node::Scalar(Scalar::Quoted(p.block(self.parent)?))),
            _ if starts_plain(b) || matches!(b, b'"' | b'\'' | b'-' | b'?' | b':') => {
                if matches!(b, b'?' | b':') && p.blank_or_end(p.pos + 1) {
                    return p.bail("a complex key");
                }
                // Only where a collection may start can the line be a `key: value` entry. After
                // `key:`, a second `: ` is refused by the scalar readers (or left on the line,
                // which is refused after the value).
                if collections && p.key_at()?.is_some() {
                    return Ok(Node::Mapping(column));
                }
                if b == b'"' || b == b'\'' {
                    Ok(Node::Scalar(Scalar::Quoted(p.quoted(b, self.parent)?)))
                } else {
                    // `key_at` has checked the whole line for `: ` and comments already.
                    Ok(Node::Scalar(Scalar::Plain(p.plain(self.parent, collections)?)))
                }
            }
            _ => p.bail("an anchor, alias, tag, directive or other indicator"),
        }
    }
}

/// Calls the visitor for a scalar, resolving plain scalars the way serde-saphyr does.
fn visit_scalar<'de, V: Visitor<'de>>(scalar: Scalar<'de>, visitor: V) -> Result<V::Value> {
    match scalar {
        Scalar::Quoted(Cow::Borrowed(s)) => visitor.visit_borrowed_str(s),
        Scalar::Quoted(Cow::Owned(s)) => visitor.visit_string(s),
        Scalar::Plain(s) => {
            let visitor = match resolve_plain(&s, visitor) {
                Ok(done) => return done,
                Err(visitor) => visitor,
            };
            match s {
                Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
                Cow::Owned(s) => visitor.visit_string(s),
            }
        }
    }
}

/// The non-string readings of a plain scalar, in serde-saphyr's order: null, bool, integer, float.
/// Hands the visitor back when the scalar is a string.
fn resolve_plain<'de, V: Visitor<'de>>(s: &str, visitor: V) -> Result<Result<V::Value>, V> {
    if is_null(s) {
        return Ok(visitor.visit_unit());
    }
    match s {
        "true" | "True" | "TRUE" => return Ok(visitor.visit_bool(true)),
        "false" | "False" | "FALSE" => return Ok(visitor.visit_bool(false)),
        _ => {}
    }
    // Only text starting like a number can be one: skip the parsing for everything else.
    let Some(first) = s.bytes().next() else {
        return Err(visitor);
    };
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return Err(visitor);
    }
    if let Some(n) = unsigned(s, u64::from_str_radix) {
        return Ok(visitor.visit_u64(n));
    }
    if let Some(n) = negative(s, i64::from_str_radix) {
        return Ok(visitor.visit_i64(n));
    }
    // Decimal integers beyond 64 bits are floats, as serde-saphyr reads them (keys included);
    // `0x`/`0o`/`0b` ones are strings.
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if !["0x", "0o", "0b"].iter().any(|p| digits.starts_with(p)) {
        #[allow(clippy::cast_precision_loss, reason = "what serde-saphyr does")]
        if let Some(n) = unsigned(s, u128::from_str_radix) {
            return Ok(visitor.visit_f64(n as f64));
        }
        #[allow(clippy::cast_precision_loss, reason = "what serde-saphyr does")]
        if let Some(n) = negative(s, i128::from_str_radix) {
            return Ok(visitor.visit_f64(n as f64));
        }
    } else if unsigned(s, u128::from_str_radix).is_some() || negative(s, i128::from_str_radix).is_some() {
        return Err(visitor);
    }
    if !leading_zero_digits(s)
        && let Some(f) = float(s)
    {
        return Ok(visitor.visit_f64(f));
    }
    Err(visitor)
}

fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

/// `0123` and `-0123` are strings in YAML 1.2, not octal or decimal numbers.
fn leading_zero_digits(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    digits.len() > 1 && digits.starts_with('0') && digits[1..].bytes().all(|b| b.is_ascii_digit())
}

/// A non-negative integer: decimal, or `0x`, `0o`, `0b` with digits of that base (an optional `+`).
fn unsigned<T>(s: &str, parse: fn(&str, u32) -> Result<T, std::num::ParseIntError>) -> Option<T> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(rest) = digits.strip_prefix(prefix) {
            if rest.starts_with(['+', '-']) {
                return None;
            }
            if let Ok(n) = parse(rest, radix) {
                return Some(n);
            }
        }
    }
    if digits.starts_with(['+', '-']) || leading_zero_digits(s) {
        return None;
    }
    parse(digits, 10).ok()
}

/// A negative integer: `-` then decimal, or `-0x`, `-0o`, `-0b` with digits of that base.
fn negative<T>(s: &str, parse: fn(&str, u32) -> Result<T, std::num::ParseIntError>) -> Option<T> {
    for (prefix, radix) in [("-0x", 16), ("-0o", 8), ("-0b", 2)] {
        if let Some(rest) = s.strip_prefix(prefix)
            && let Ok(n) = parse(&format!("-{rest}"), radix)
        {
            return Some(n);
        }
    }
    if leading_zero_digits(s) {
        return None;
    }
    parse(s, 10).ok()
}

/// A float as serde-saphyr reads one: `.inf`, `.nan` in their casings, or what Rust parses as a
/// finite `f64` (after an optional single `+`).
fn float(s: &str) -> Option<f64> {
    let unsigned = match s.strip_prefix('+') {
        Some(rest) if rest.starts_with(['+', '-']) => return None,
        Some(rest) => rest,
        None => s,
    };
    match unsigned {
        ".inf" | ".Inf" | ".INF" => return Some(f64::INFINITY),
        _ => {}
    }
    match s {
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        _ => {}
    }
    // A numeric spelling too large for f64 (`9e999`) is an infinite float, as serde-saphyr reads
    // it; Rust's `inf`/`nan` words are not YAML floats.
    let numeric = |t: &str| {
        t.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    };
    unsigned
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() || (f.is_infinite() && numeric(unsigned)))
}

/// Typed requests for primitives, tuples and enums are left to serde-saphyr, whose conversions
/// (for example a quoted number read as a number) this decoder does not reproduce.
const TYPED: &str = "a typed request (bool, number, char, bytes, unit, tuple or enum)";

macro_rules! decline_typed {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
            self.p.bail(TYPED)
        }
    )*};
}

/// A node whose start has been read.
struct NodeDe<'p, 'a> {
    p: &'p mut Parser<'a>,
    node: Node<'a>,
}

fn visit_node<'de, V: Visitor<'de>>(p: &mut Parser<'de>, node: Node<'de>, visitor: V) -> Result<V::Value> {
    match node {
        Node::Scalar(scalar) => visit_scalar(scalar, visitor),
        Node::EmptySequence => visitor.visit_seq(Empty),
        Node::EmptyMapping => visitor.visit_map(Empty),
        Node::Sequence(column) => visit_block(p, column, |block| visitor.visit_seq(block)),
        Node::Mapping(column) => visit_block(p, column, |block| visitor.visit_map(block)),
    }
}

/// Visits the block collection whose lines start at `column`, refusing nesting deeper than
/// [`MAX_DEPTH`] and a visitor that stops before the collection's end.
fn visit_block<'de, R>(
    p: &mut Parser<'de>,
    column: usize,
    visit: impl FnOnce(&mut Block<'_, 'de>) -> Result<R>,
) -> Result<R> {
    p.depth += 1;
    if p.depth > MAX_DEPTH {
        return p.bail("nesting deeper than 100");
    }
    let mut block = Block {
        p: &mut *p,
        column,
        first: true,
        done: false,
    };
    let value = visit(&mut block)?;
    if !block.done {
        return p.bail("a collection its visitor did not read to the end");
    }
    p.depth -= 1;
    Ok(value)
}

impl<'de> Deserializer<'de> for NodeDe<'_, 'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visit_node(self.p, self.node, visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.node {
            Node::Scalar(Scalar::Plain(s)) if is_null(&s) => visitor.visit_none(),
            node => visitor.visit_some(NodeDe { p: self.p, node }),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.node {
            Node::Scalar(Scalar::Plain(Cow::Borrowed(s)) | Scalar::Quoted(Cow::Borrowed(s))) => {
                visitor.visit_borrowed_str(s)
            }
            Node::Scalar(Scalar::Plain(Cow::Owned(s)) | Scalar::Quoted(Cow::Owned(s))) => {
                visitor.visit_string(s)
            }
            _ => self.p.bail("a collection where a string was requested"),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.node {
            Node::Sequence(_) | Node::EmptySequence => visit_node(self.p, self.node, visitor),
            _ => self.p.bail("a non-sequence where a sequence was requested"),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.node {
            Node::Mapping(_) | Node::EmptyMapping => visit_node(self.p, self.node, visitor),
            _ => self.p.bail("a non-mapping where a mapping was requested"),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_map(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_any(visitor)
    }

    decline_typed! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_bytes
        deserialize_byte_buf deserialize_unit
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, _visitor: V) -> Result<V::Value> {
        self.p.bail(TYPED)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value> {
        self.p.bail(TYPED)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value> {
        self.p.bail(TYPED)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value> {
        self.p.bail(TYPED)
    }
}

/// The cursor over a block collection (a sequence's items or a mapping's entries) whose lines
/// start at `column`.
struct Block<'p, 'a> {
    p: &'p mut Parser<'a>,
    column: usize,
    first: bool,
    done: bool,
}

impl<'de> SeqAccess<'de> for &mut Block<'_, 'de> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.done {
            return Ok(None);
        }
        if self.first {
            self.first = false;
        } else {
            match self.p.next_line()? {
                Line::Content { indent } if indent == self.column => {
                    if !(self.p.byte(self.p.pos) == Some(b'-') && self.p.blank_or_end(self.p.pos + 1)) {
                        // The end of an indentless sequence; the mapping holding it goes on.
                        self.done = true;
                        return Ok(None);
                    }
                }
                Line::Content { indent } if indent > self.column => {
                    return self.p.bail("a line indented more than the sequence it follows");
                }
                _ => {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
        // On the `-`: step over it and the space after it.
        self.p.pos += 1;
        if self.p.byte(self.p.pos) == Some(b' ') {
            self.p.pos += 1;
        }
        let node = Value {
            p: &mut *self.p,
            parent: isize::try_from(self.column).unwrap_or(isize::MAX),
            context: Context::SequenceItem,
        }
        .node()?;
        seed.deserialize(NodeDe {
            p: &mut *self.p,
            node,
        })
        .map(Some)
    }
}

impl<'de> MapAccess<'de> for &mut Block<'_, 'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.done {
            return Ok(None);
        }
        if self.first {
            self.first = false;
        } else {
            match self.p.next_line()? {
                Line::Content { indent } if indent == self.column => {}
                Line::Content { indent } if indent > self.column => {
                    return self.p.bail("a line indented more than the mapping it follows");
                }
                _ => {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
        let Some((key, after)) = self.p.key_at()? else {
            return self
                .p
                .bail("a line that is not a `key: value` entry inside a mapping");
        };
        self.p.pos = after;
        seed.deserialize(NodeDe {
            p: &mut *self.p,
            node: Node::Scalar(key),
        })
        .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let node = Value {
            p: &mut *self.p,
            parent: isize::try_from(self.column).unwrap_or(isize::MAX),
            context: Context::MappingValue,
        }
        .node()?;
        seed.deserialize(NodeDe {
            p: &mut *self.p,
            node,
        })
    }
}

/// The items of `[]` and the entries of `{}`: none.
struct Empty;

impl<'de> SeqAccess<'de> for Empty {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, _seed: T) -> Result<Option<T::Value>> {
        Ok(None)
    }
}

impl<'de> MapAccess<'de> for Empty {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, _seed: K) -> Result<Option<K::Value>> {
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, _seed: V) -> Result<V::Value> {
        Err(DeError("a value without a key".to_owned()))
    }
}

#[cfg(test)]
mod tests;
