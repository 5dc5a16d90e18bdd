//! selector: label and field selectors of a PackageManifest request, parsed as Kubernetes
//! parses them (`k8s.io/apimachinery/pkg/labels` and `pkg/fields`), and matched.
//!
//! Label selectors: requirements joined by `,`, each `key`, `!key`, `key=value`,
//! `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key>N`, `key<N`; `!=` and
//! `notin` also match objects without the key. Field selectors: the API server's generic
//! conversion knows only `metadata.name` and `metadata.namespace` (another field is a bad
//! request); upstream's storage then serves only an exact `metadata.name` (any other selector
//! is refused, as its `nameFor` refuses it).

use std::collections::BTreeMap;

/// Why a selector was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The label selector does not parse.
    #[error("unable to parse requirement: {0}")]
    Label(String),
    /// A field selector term does not parse.
    #[error("invalid selector: '{0}'; can't understand '{0}'")]
    FieldSyntax(String),
    /// A field the API server's conversion does not know (a bad request).
    #[error("{0:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")]
    UnknownField(String),
    /// A field selector upstream's storage does not serve (an internal error upstream).
    #[error("field label not supported: {0}")]
    Unsupported(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Exists,
    NotExists,
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Greater(i64),
    Less(i64),
}

/// A parsed label selector; the default selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<(String, Op)>);

fn split_top(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(value: &str) -> bool {
    value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn set(text: &str, whole: &str) -> Result<Vec<String>, SelectorError> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or_else(|| SelectorError::Label(format!("{whole:?}: expected a set of values in parentheses")))?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_owned()).collect();
    if let Some(bad) = values.iter().find(|v| !valid_value(v)) {
        return Err(SelectorError::Label(format!(
            "{whole:?}: invalid label value {bad:?}"
        )));
    }
    Ok(values)
}

impl LabelSelector {
    /// Parses `text` (empty: everything).
    ///
    /// # Errors
    /// [`SelectorError::Label`] naming the requirement that does not parse.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let mut out = Vec::new();
        if text.trim().is_empty() {
            return Ok(Self(out));
        }
        for part in split_top(text) {
            let req = part.trim();
            let bad = |why: &str| SelectorError::Label(format!("{req:?}: {why}"));
            let (key, op) = if let Some(key) = req.strip_prefix('!') {
                (key.trim(), Op::NotExists)
            } else if let Some((k, v)) = req.split_once("!=") {
                (k.trim(), Op::NotEquals(v.trim().to_owned()))
            } else if let Some((k, v)) = req.split_once("==") {
                (k.trim(), Op::Equals(v.trim().to_owned()))
            } else if let Some((k, v)) = req.split_once('=') {
                (k.trim(), Op::Equals(v.trim().to_owned()))
            } else if let Some((k, v)) = req.split_once('>') {
                (
                    k.trim(),
                    Op::Greater(v.trim().parse().map_err(|_| bad("expected an integer"))?),
                )
            } else if let Some((k, v)) = req.split_once('<') {
                (
                    k.trim(),
                    Op::Less(v.trim().parse().map_err(|_| bad("expected an integer"))?),
                )
            } else if let Some((k, v)) = req.split_once(" notin ") {
                (k.trim(), Op::NotIn(set(v, req)?))
            } else if let Some((k, v)) = req.split_once(" in ") {
                (k.trim(), Op::In(set(v, req)?))
            } else {
                (req, Op::Exists)
            };
            if !valid_key(key) {
                return Err(bad("invalid label key"));
            }
            if let Op::Equals(v) | Op::NotEquals(v) = &op
                && !valid_value(v)
            {
                return Err(bad("invalid label value"));
            }
            out.push((key.to_owned(), op));
        }
        Ok(Self(out))
    }

    /// Whether `labels` satisfy every requirement.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|(key, op)| {
            let value = labels.get(key);
            match op {
                Op::Exists => value.is_some(),
                Op::NotExists => value.is_none(),
                Op::Equals(v) => value == Some(v),
                Op::NotEquals(v) => value != Some(v),
                Op::In(vs) => value.is_some_and(|x| vs.contains(x)),
                Op::NotIn(vs) => value.is_none_or(|x| !vs.contains(x)),
                Op::Greater(n) => value.and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x > *n),
                Op::Less(n) => value.and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x < *n),
            }
        })
    }
}

/// A parsed field selector: the name it asks for, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// The exact `metadata.name` asked for.
    pub name: Option<String>,
}

impl FieldSelector {
    /// Parses `text` (empty: everything), checking it as the API server, then upstream's
    /// storage, do.
    ///
    /// # Errors
    /// [`SelectorError`]: a term that does not parse, an unknown field, or a selector other
    /// than an exact `metadata.name`.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let mut terms = Vec::new();
        for term in text.split(',') {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, true, v)
            } else {
                return Err(SelectorError::FieldSyntax(term.to_owned()));
            };
            let field = field.trim();
            if field != "metadata.name" && field != "metadata.namespace" {
                return Err(SelectorError::UnknownField(field.to_owned()));
            }
            terms.push((field.to_owned(), equal, value.trim().to_owned()));
        }
        if let Some((_, _, name)) = terms.iter().find(|(f, eq, _)| f == "metadata.name" && *eq) {
            return Ok(Self {
                name: Some(name.clone()),
            });
        }
        Err(SelectorError::Unsupported(
            terms.first().map(|t| t.0.clone()).unwrap_or_default(),
        ))
    }
}
