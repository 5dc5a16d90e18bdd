//! block_yaml: a fast decoder for the block-style YAML that catalog tools write, which either
//! yields exactly what serde_yaml would or declines.
//!
//! # The rule this module enforces
//!
//! For any text, [`decode`] returns one of two things:
//! - the documents, built from the same serde calls (maps, sequences, scalars resolved to null,
//!   bool, integer, float or string) that serde_yaml would make for that text; or
//! - [`Error::Unsupported`], naming the first construct it does not handle, and the caller decodes
//!   the text with serde_yaml instead.
//!
//! It never guesses. Whatever YAML it does not fully understand, and everything that is a syntax
//! error for libyaml, makes it decline, so that the fallback produces the real result or the real
//! message. `tests/yaml_fast_path.rs` checks it document for document against serde_yaml on every
//! YAML file of the public catalogs; the unit tests below do the same for each construct and for
//! random block YAML and mutations of it.
//!
//! # What it handles
//!
//! What `opm render -o yaml` and the Go YAML encoders write:
//! - documents separated by `---` lines (empty documents are skipped, as serde_yaml's callers do);
//! - block mappings with plain or quoted single-line keys, block sequences, including the
//!   "indentless" `key:\n- item` form and compact `- key: value` items;
//! - plain scalars, including ones folded over several lines, resolved the way serde_yaml
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
    /// serde_yaml instead. Names the construct and the 1-based line where it was found.
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

/// Deepest nesting handled (serde_yaml refuses beyond 128).
const MAX_DEPTH: usize = 100;
/// Longest key handled (libyaml refuses implicit keys beyond 1024 characters).
const MAX_KEY: usize = 1000;

/// Decodes every non-empty document of `text` (without a byte-order mark) into `T`, each with
/// its 0-based index among the non-empty documents; see the module docs.
///
/// # Errors
/// [`Error::Unsupported`] when the text has anything this decoder does not handle (decode it with
/// serde_yaml then), [`Error::Refused`] when `T` refused a value of a text that was understood.
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

/// Calls the visitor for a scalar, resolving plain scalars the way serde_yaml does.
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

/// The non-string readings of a plain scalar, in serde_yaml's order: null, bool, integer, float.
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
    if let Some(n) = unsigned(s, u128::from_str_radix) {
        return Ok(visitor.visit_u128(n));
    }
    if let Some(n) = negative(s, i128::from_str_radix) {
        return Ok(visitor.visit_i128(n));
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

/// A float as serde_yaml reads one: `.inf`, `.nan` in their casings, or what Rust parses as a
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
    unsigned.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Typed requests for primitives, tuples and enums are left to serde_yaml, whose conversions
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
mod tests {
    use serde_json::{Value, json};

    use super::{Error, decode};
    use crate::codec::{JsonDocument, decode_yaml_reference};

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
        let decoded = decode_yaml_reference("t.yaml", text);
        match decoded.error {
            Some(err) => Err(err.to_string()),
            None => Ok(decoded.documents.into_iter().map(|d| d.value).collect()),
        }
    }

    /// The fast decoder handles `text` and agrees with serde_yaml: the same documents, or both
    /// refuse a value JSON cannot hold.
    #[track_caller]
    fn agree(text: &str) -> Result<Vec<Value>, String> {
        let fast = fast(text).unwrap_or_else(|| panic!("declined:\n{text}"));
        let reference = reference(text);
        match (&fast, &reference) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "for:\n{text}"),
            (Err(_), Err(_)) => {}
            _ => panic!("fast {fast:?} but serde_yaml {reference:?} for:\n{text}"),
        }
        fast
    }

    /// The fast decoder handles `text`, and it and serde_yaml produce the same documents.
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
    fn opm_style_documents_decode_like_serde_yaml() {
        let text = "---\ndefaultChannel: stable\nicon:\n  base64data: iVBORw0KGgo=\n  mediatype: image/png\nname: redis\nschema: olm.package\n---\nentries:\n- name: redis.v0.1.0\n- name: redis.v0.2.0\n  replaces: redis.v0.1.0\n  skipRange: '>=0.1.0 <0.2.0'\n  skips:\n  - redis.v0.1.1\nname: stable\npackage: redis\nschema: olm.channel\n";
        let docs = same(text);
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["entries"][1]["skipRange"], json!(">=0.1.0 <0.2.0"));
    }

    #[test]
    fn plain_scalars_resolve_like_serde_yaml() {
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
    fn keys_resolve_like_serde_yaml() {
        same("1: a\ntrue: b\nnull: c\n\"q\": d\n'r': e\n1.5: f\n");
    }

    #[test]
    fn quoted_scalars_unescape_and_fold_like_libyaml() {
        same(
            "a: 'it''s'\nb: \"tab\\there \\\"q\\\" \\u00e9 \\x41 \\U0001F600 \\/ \\N \\_ \\L \\P \\e \\0\"\n",
        );
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
            same(&format!("a: {header}\n  at the end without a break"));
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
        same(
            "# header\n---\n# before\na:\n  # inside\n  b: |\n    # content\n  # after\nc: 1\n   # indented\n",
        );
    }

    #[test]
    fn collections_nest_like_serde_yaml() {
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
    fn invalid_yaml_is_declined_so_serde_yaml_reports_it() {
        for text in [
            "a: 'unterminated\n",
            "a:\n  - b\n  c: d\n",
            "a: 1\nb: 2\n c: 3\n",
            "[1, 2\n",
        ] {
            declined(text);
            assert!(reference(text).is_err(), "serde_yaml accepts:\n{text}");
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
    /// whatever the fast decoder accepts must be exactly what serde_yaml makes of it, and it
    /// must never panic.
    #[test]
    fn random_block_yaml_is_decoded_as_serde_yaml_does_or_declined() {
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
                    _ => panic!("fast {fast:?} but serde_yaml {reference:?} for:\n{text}"),
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
    /// exactly what serde_yaml makes of it.
    #[test]
    fn random_block_structures_and_their_mutations_decode_as_serde_yaml_does_or_are_declined() {
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
                    _ => panic!("fast {fast:?} but serde_yaml {reference:?} for:\n{text}"),
                }
                if mutated {
                    mutated_accepted += 1;
                } else {
                    accepted += 1;
                }
            }
        }
        eprintln!(
            "accepted {accepted} of 10000 generated texts and {mutated_accepted} of 10000 mutated ones"
        );
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
}
