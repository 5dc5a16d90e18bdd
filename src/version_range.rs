//! Version ranges with the semantics of `github.com/blang/semver/v4` `ParseRange`, the grammar OLM uses
//! for a channel entry's `skipRange`, for `olm.package.required`'s `versionRange` and for
//! `olm.constraint`'s `package.versionRange`.
//!
//! # Why not the `semver` crate's `VersionReq`
//!
//! OLM does not use npm or Cargo semantics. Its ranges are parsed by blang/semver v4.0.0 (vendored by
//! operator-lifecycle-manager and operator-registry), whose grammar and, above all, whose membership
//! rule differ from Cargo's `VersionReq`:
//!
//! - **No implicit caret.** In Cargo `1.2.3` means `^1.2.3`; here a bare version means *equal to*.
//! - **No `^`, no `~`, no hyphen ranges, no `*`.** Cargo and npm have them; blang does not, so a catalog
//!   using them is invalid for OLM. This module rejects them and says what to write instead.
//! - **Prereleases are not excluded.** npm and Cargo only let a prerelease match a comparator with the
//!   same `MAJOR.MINOR.PATCH` that itself has a prerelease. blang compares versions and nothing else:
//!   `2.0.0-rc.1` is inside `>=1.0.0 <2.0.0` (because `2.0.0-rc.1 < 2.0.0`), and so is `1.5.0-alpha`.
//!   OLM's upgrade graphs depend on that (e.g. a `skipRange` of `<1.31.0-nightly-2026-08-10`).
//! - **Full versions only.** Every version in a comparator is strict `MAJOR.MINOR.PATCH[-pre][+build]`
//!   (blang `Parse`): no `v` prefix, no `1.2`, no leading zeros.
//!
//! # Grammar
//!
//! ```text
//! range       = and-group *( " || " and-group )       ; OR; "||" must stand alone between spaces
//! and-group   = term *( " " term )                    ; AND binds tighter than OR; no parentheses
//! term        = [operator] version
//! operator    = "<" | "<=" | ">" | ">=" | "=" | "==" | "" (equal) | "!" | "!=" (not equal)
//! version     = MAJOR "." MINOR "." PATCH [ "-" pre *( "." pre ) ] [ "+" build *( "." build ) ]
//!             | wildcard
//! wildcard    = MAJOR ".x" | MAJOR "." MINOR ".x" | MAJOR ".x.x"
//! ```
//!
//! Terms are separated by plain spaces (U+0020; tabs and newlines are not separators). Several spaces
//! are fine. A space directly after `<`, `>` or `=` does not end the term, so `>= 1.18.0 < 1.28.0` is
//! `>=1.18.0 <1.28.0`, and even `> =1.0.0` reads as `>=1.0.0` (blang removes every space inside a term).
//! Whitespace at the ends of the operator is trimmed (blang's `TrimSpace`), so `"\t>=1.0.0"` is
//! accepted. Numbers are decimal `u64` without leading zeros; numeric prerelease identifiers are `u64`
//! too; identifiers are `[0-9A-Za-z-]`, non-empty.
//!
//! Wildcards expand to ordinary comparators before anything is evaluated (blang's
//! `expandWildcardVersion`):
//!
//! | term        | expands to          | term        | expands to          |
//! |-------------|---------------------|-------------|---------------------|
//! | `1.2.x`     | `>=1.2.0 <1.3.0`    | `1.x`       | `>=1.0.0 <2.0.0`    |
//! | `>=1.2.x`   | `>=1.2.0`           | `>=1.x`     | `>=1.0.0`           |
//! | `>1.2.x`    | `>=1.3.0`           | `>1.x`      | `>=2.0.0`           |
//! | `<1.2.x`    | `<1.2.0`            | `<1.x`      | `<1.0.0`            |
//! | `<=1.2.x`   | `<1.3.0`            | `<=1.x`     | `<2.0.0`            |
//!
//! `=` and `==` behave like the bare form. Because expansion is plain comparison, `1.2.x` contains
//! `1.3.0-rc.1` (it is below `1.3.0`) but not `1.2.0-rc.1` (below `1.2.0`).
//!
//! # Ordering
//!
//! [`compare`] is blang's `Version.Compare`, which is SemVer 2.0.0 precedence: `MAJOR`, `MINOR`,
//! `PATCH` numerically; then a version without prerelease is greater than one with
//! (`1.0.0-rc.1 < 1.0.0`); prerelease identifiers compare left to right, numeric identifiers
//! numerically and below alphanumeric ones, alphanumeric identifiers bytewise (ASCII: `RC < rc`,
//! `alpha < alpha-1 < beta`); when all shared identifiers are equal the longer list is greater
//! (`1.0.0-rc < 1.0.0-rc.1`). **Build metadata is ignored**: `1.0.0+a` and `1.0.0+b` are equal, so
//! `=1.0.0` contains `1.0.0+build.7`. The `semver` crate's `Ord` for `Version` breaks ties on build
//! metadata, so never use `<`/`==` on `semver::Version` where OLM semantics are meant: use [`compare`].
//!
//! # Quirks of blang's parser, and what this module does with each
//!
//! We reproduce blang's meaning wherever blang accepts a range and means what it says. Where blang
//! silently reads a range as something other than its text (or panics on it), we reject the range at
//! parse time with an error that explains the trap and gives the fix, so a catalog that validates
//! here never behaves surprisingly in OLM. Every decision below is pinned by a test.
//!
//! 1. **`1.x.x` is a patch wildcard** (reproduced). blang classifies wildcards by how many dot-separated
//!    parts the version has, so `1.x.x` (three parts) is treated like `1.0.x`: `>=1.0.0 <1.1.0`, not
//!    `>=1.0.0 <2.0.0`. OLM really does this, so we do too; write `1.x` to mean every `1.*`.
//! 2. **A negated wildcard matches nothing** (rejected). `!=1.2.x` expands to `<1.2.0 >=1.3.0` inside
//!    one AND-group, which no version satisfies. We reject it and suggest `<1.2.0 || >=1.3.0`.
//! 3. **Any term containing the letter `x` takes the wildcard path** (rejected when it changes the
//!    meaning). blang tests for the letter, not for a wildcard, so prereleases and build metadata with
//!    an `x` go through the expansion. Depending on the operator and where the `x` is, blang then fails
//!    (`=1.0.0-xyz`, `>1.0.0-rc.x1`), or silently reads another version (`>=1.0.0-rc.xyz` becomes
//!    `>=1.0.0-rc.0yz`, `>=1.x.0` becomes `>=1.0.0`). A term is accepted when blang keeps its bound
//!    and reads a version that compares equal to the written one: `>=`/`<` with no `.x` in the version,
//!    such as `<1.12.18+x63f4f4c` from real catalogs, or with a `.x` only in build metadata, which
//!    comparison ignores (`<1.2.3+b.x`, read by blang as `<1.2.3+b.0`). Every other `x` outside a
//!    wildcard is rejected with a message naming what blang would do.
//! 4. **One-character terms are silently dropped** (rejected). blang's tokenizer ignores any term of a
//!    single character. So `1.0.0 - 2.0.0` (a hyphen range) becomes `1.0.0 2.0.0`, which matches nothing;
//!    `! 1.0.0` becomes `1.0.0` (the opposite of what was written); `>=1.0.0 | <0.5.0` becomes an AND;
//!    and `>=1.0.0 <` or `>=1.0.0 *` lose their last term. We reject every such term. A lone `-` between
//!    two versions is reported as a hyphen range with the equivalent `>=A <=B`.
//! 5. **An unknown operator in front of a wildcard means "equal"** (rejected). blang's expansion leaves
//!    the operator out when it does not recognise it, so `~1.2.x`, `^1.x`, `v1.x` and `>>1.2.x` are read
//!    as `=1.2.0`, `=1.0.0`, `=1.0.0` and `=1.2.0`. We reject all unknown operators, wildcard or not,
//!    with a caret, tilde or `v`-prefix message and the explicit bounds to write instead.
//! 6. **An empty side of `||`.** blang rejects a leading or trailing `||`, but accepts `a || || b` and
//!    then panics while evaluating a version that `a` does not contain. We reject all three forms.
//! 7. **Non-canonical wildcards.** blang accepts a few malformed wildcards when its string arithmetic
//!    happens to produce a valid version (`>1.02.x` reads as `>=1.3.0`, while `>=1.02.x` fails). We
//!    accept only `MAJOR.x`, `MAJOR.MINOR.x` and `MAJOR.x.x` with canonical numbers. (Separately, and
//!    faithfully: a wildcard whose upper bound needs incrementing a number at or above `i64::MAX`
//!    fails in blang, which does that arithmetic with Go `int`, and fails here too.)
//!
//! Some accepted spellings look odd but are faithful: `1.0.0-2.0.0` (no spaces) is the single version
//! `1.0.0` with prerelease `2.0.0`, and `> =1.0.0` is `>=1.0.0`.
//!
//! How this was checked: besides the tables in the tests (whose expected memberships were confirmed
//! against blang v4.0.0), the parser was run side by side with blang v4.0.0 on about 300,000 generated
//! ranges and on all 989 distinct `skipRange`/`versionRange` strings of the real catalogs in
//! `../shared/corpus`. Whenever both accept, they agree on membership; this module never accepts a
//! range blang rejects; and every range blang accepts but this module rejects falls under quirks 2 to
//! 7. All 989 real ranges are accepted.
//!
//! Where the errors go: `opm validate` refuses a catalog whose `skipRange` does not parse, while OLM's
//! resolver quietly ignores such a `skipRange`. Callers validating catalogs should report a
//! [`RangeError`] with the bundle, channel and field it came from.
//!
//! # Versions outside ranges
//!
//! [`parse_version_strict`] is blang `Parse` (what `olm.package.version` must satisfy).
//! [`parse_version_tolerant`] is blang `ParseTolerant`, which OLM's resolver uses for entry versions:
//! it trims whitespace, drops one leading `v`, strips leading zeros from each of the three dot-separated
//! parts, and fills a missing minor or patch with `0` (refusing a short version with a prerelease or
//! build, like `1.2-rc`).
//!
//! This module is pure: no I/O, no clock, no panics on any input.

use std::{cmp::Ordering, fmt, str::FromStr};

use semver::{BuildMetadata, Prerelease, Version};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The comparison operator of one [`Comparator`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `=`, `==` or no operator: the version compares equal (build metadata ignored).
    Eq,
    /// `!` or `!=`: the version does not compare equal.
    Ne,
    /// `>`: strictly greater.
    Gt,
    /// `>=`: greater or equal.
    Ge,
    /// `<`: strictly less.
    Lt,
    /// `<=`: less or equal.
    Le,
}

impl Op {
    /// The canonical spelling (`=` for equality, `!=` for inequality).
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }

    /// Whether `candidate <op> bound` holds, given `compare(candidate, bound)`.
    fn holds(self, ord: Ordering) -> bool {
        match self {
            Op::Eq => ord == Ordering::Equal,
            Op::Ne => ord != Ordering::Equal,
            Op::Gt => ord == Ordering::Greater,
            Op::Ge => ord != Ordering::Less,
            Op::Lt => ord == Ordering::Less,
            Op::Le => ord != Ordering::Greater,
        }
    }

    /// blang's operator table (`parseComparator`); the text is already trimmed.
    fn from_blang(text: &str) -> Option<Op> {
        Some(match text {
            "" | "=" | "==" => Op::Eq,
            "!" | "!=" => Op::Ne,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            "<=" => Op::Le,
            _ => return None,
        })
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One comparison against a bound, after wildcard expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparator {
    /// The operator.
    pub op: Op,
    /// The bound the candidate version is compared with.
    pub version: Version,
}

impl Comparator {
    /// Whether `v` satisfies this comparator under blang ordering ([`compare`]).
    pub fn matches(&self, v: &Version) -> bool {
        self.op.holds(compare(v, &self.version))
    }
}

impl fmt::Display for Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.op, self.version)
    }
}

/// A parsed version range: an OR of AND-groups of comparators, remembering its original text.
///
/// Built by [`Range::parse`] (or `str::parse`, or serde from a string); see the module docs for the
/// grammar and the quirk decisions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    text: String,
    groups: Vec<Vec<Comparator>>,
}

impl Range {
    /// Parses `s` with blang/semver `ParseRange` semantics, rejecting the traps listed in the module
    /// docs.
    pub fn parse(s: &str) -> Result<Range, RangeError> {
        if s.trim().is_empty() {
            return Err(RangeError::Empty);
        }
        let tokens = split_terms(s);
        reject_stray_terms(&tokens)?;

        let mut groups = Vec::new();
        let mut current: Vec<Comparator> = Vec::new();
        let mut current_has_terms = false;
        for token in &tokens {
            if token.clean == "||" {
                if !current_has_terms {
                    return Err(RangeError::EmptyOrSide { range: s.to_string() });
                }
                groups.push(std::mem::take(&mut current));
                current_has_terms = false;
                continue;
            }
            current.extend(parse_term(&token.clean)?);
            current_has_terms = true;
        }
        if !current_has_terms {
            return Err(RangeError::EmptyOrSide { range: s.to_string() });
        }
        groups.push(current);
        Ok(Range {
            text: s.to_string(),
            groups,
        })
    }

    /// Whether `v` is inside the range: some AND-group has every comparator satisfied, comparing with
    /// [`compare`]. Prereleases are not excluded.
    pub fn contains(&self, v: &Version) -> bool {
        self.groups.iter().any(|group| group.iter().all(|c| c.matches(v)))
    }

    /// The original text the range was parsed from.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The OR-groups of AND-ed comparators, wildcards already expanded.
    pub fn groups(&self) -> &[Vec<Comparator>] {
        &self.groups
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Range {
    type Err = RangeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Range::parse(s)
    }
}

impl Serialize for Range {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Range {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Range::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Why a range (or a version) was refused. Messages name the offending text and the fix; callers add
/// which object and field it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// The range has no terms at all.
    #[error("the range is empty: write at least one comparator, e.g. '>=1.0.0 <2.0.0'")]
    Empty,
    /// `||` at the start or end of the range, or two `||` in a row.
    #[error(
        "'{range}' has '||' with nothing on one side: put a comparator on both sides of every '||', \
         e.g. '<1.0.0 || >=2.0.0'"
    )]
    EmptyOrSide {
        /// The whole range.
        range: String,
    },
    /// A `|` glued to a comparator, e.g. `1.0.0||2.0.0` or `||>=2.0.0`.
    #[error(
        "'{term}' glues '|' to a version: write '||' on its own with a space on both sides, \
         e.g. '<1.0.0 || >=2.0.0'"
    )]
    OrWithoutSpaces {
        /// The term as blang splits it.
        term: String,
    },
    /// An npm hyphen range `A - B`.
    #[error(
        "'{range}' is a hyphen range, which OLM's range grammar (blang/semver) does not support; write {}",
        or_generic(suggestion.as_deref(), "'>=A <=B' with full versions")
    )]
    HyphenRange {
        /// The `A - B` text.
        range: String,
        /// The equivalent range, when it can be computed.
        suggestion: Option<String>,
    },
    /// The npm/Cargo caret operator `^`.
    #[error(
        "'{term}' uses the caret operator, which OLM's range grammar (blang/semver) does not support; \
         write {}",
        or_generic(suggestion.as_deref(), "explicit bounds such as '>=1.2.0 <2.0.0'")
    )]
    Caret {
        /// The offending term.
        term: String,
        /// The equivalent range, when it can be computed.
        suggestion: Option<String>,
    },
    /// The npm/Cargo tilde operator `~` (or Ruby's `~>`).
    #[error(
        "'{term}' uses the tilde operator, which OLM's range grammar (blang/semver) does not support; \
         write {}",
        or_generic(suggestion.as_deref(), "explicit bounds such as '>=1.2.0 <1.3.0'")
    )]
    Tilde {
        /// The offending term.
        term: String,
        /// The equivalent range, when it can be computed.
        suggestion: Option<String>,
    },
    /// A `v` in front of the version, e.g. `v1.0.0` or `>=v1.0.0`.
    #[error(
        "'{term}' puts a 'v' before the version, which OLM's range grammar (blang/semver) does not accept; \
         write '{suggestion}'"
    )]
    VPrefix {
        /// The offending term.
        term: String,
        /// The term without the `v`.
        suggestion: String,
    },
    /// An operator blang does not know, e.g. `>>`, `=>` or `=<`.
    #[error(
        "'{term}' uses the operator '{operator}', which OLM's range grammar (blang/semver) does not know; \
         use one of '<', '<=', '>', '>=', '=', '==', '!=', '!' or none (equal)"
    )]
    UnknownOperator {
        /// The offending term.
        term: String,
        /// The text in front of the version.
        operator: String,
    },
    /// A term without any digit, so without a version.
    #[error(
        "'{term}' has no version: every comparator needs a full MAJOR.MINOR.PATCH version, e.g. '>=1.0.0'"
    )]
    MissingVersion {
        /// The offending term.
        term: String,
    },
    /// A one-character term, which blang silently ignores.
    #[error(
        "'{term}' is a stray one-character term, which blang/semver (OLM) silently ignores, so the range \
         would not mean what it says; {fix}"
    )]
    StrayTerm {
        /// The character.
        term: String,
        /// What to write instead.
        fix: String,
    },
    /// `!=` or `!` in front of a wildcard: blang expands it into an AND that nothing satisfies.
    #[error(
        "'{term}' negates a wildcard, which blang/semver (OLM) expands into a condition no version \
         satisfies; \
         to exclude those versions write {}",
        or_generic(suggestion.as_deref(), "'<LOW || >=HIGH'")
    )]
    NegatedWildcard {
        /// The offending term.
        term: String,
        /// The range that excludes the wildcard's versions.
        suggestion: Option<String>,
    },
    /// A term whose last part is an `x` wildcard but whose other parts are not plain numbers.
    #[error(
        "'{term}' is not a wildcard OLM understands: write 'MAJOR.x', 'MAJOR.MINOR.x' or 'MAJOR.x.x' with \
         plain numbers (no leading zeros, nothing after the x), e.g. '1.2.x'"
    )]
    InvalidWildcard {
        /// The offending term.
        term: String,
    },
    /// A wildcard written with `*` or `X` instead of the lowercase `x` blang knows.
    #[error(
        "'{term}' uses '*' or 'X' as a wildcard, which OLM's range grammar (blang/semver) does not know; \
         write '{suggestion}'"
    )]
    WrongWildcardLetter {
        /// The offending term.
        term: String,
        /// The term with a lowercase `x`.
        suggestion: String,
    },
    /// A wildcard whose upper bound overflows blang's Go `int` arithmetic.
    #[error(
        "'{term}' is a wildcard whose upper bound is too large to compute (blang/semver fails on it); \
         write explicit bounds with smaller numbers"
    )]
    WildcardTooLarge {
        /// The offending term.
        term: String,
    },
    /// A letter `x` outside a wildcard, in a term blang's wildcard expansion cannot parse.
    #[error(
        "'{term}' contains the letter 'x' outside a wildcard; blang/semver (OLM) expands every term \
         containing 'x' as a wildcard and cannot parse this one. Only '>=' and '<' survive that expansion, \
         and only with no '.x' in the version: rewrite the bound with them, or avoid the 'x'"
    )]
    LetterXUnparsable {
        /// The offending term.
        term: String,
    },
    /// A letter `x` outside a wildcard that blang would silently read as another version.
    #[error(
        "'{term}' contains the letter 'x' outside a wildcard; blang/semver (OLM) expands every term \
         containing 'x' as a wildcard and would silently read it as '{reading}'. Write '{reading}' if \
         that is what you mean, otherwise avoid '.x' in the version"
    )]
    LetterXMisread {
        /// The offending term.
        term: String,
        /// What blang reads instead.
        reading: String,
    },
    /// A version with fewer than three dot-separated numbers.
    #[error(
        "'{version}' is not a full version: OLM versions and ranges need MAJOR.MINOR.PATCH, e.g. '{}'",
        suggestion.as_deref().unwrap_or("1.0.0")
    )]
    NotFullVersion {
        /// The offending version text.
        version: String,
        /// The version padded with zeros, when it can be computed.
        suggestion: Option<String>,
    },
    /// A version that is not strict SemVer for another reason.
    #[error("'{version}' is not a valid version: {problem}")]
    InvalidVersion {
        /// The offending version text.
        version: String,
        /// What is wrong with it.
        problem: VersionProblem,
    },
}

/// What is wrong with a version string (blang `Parse`/`ParseTolerant` rules).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionProblem {
    /// The string is empty.
    #[error("it is empty; write MAJOR.MINOR.PATCH, e.g. '1.0.0'")]
    Empty,
    /// Fewer than three dot-separated parts.
    #[error("it is not a full version; write MAJOR.MINOR.PATCH, e.g. '1.0.0'")]
    NotFull,
    /// The string contains whitespace.
    #[error("it contains whitespace; separate range terms with plain spaces and keep versions unbroken")]
    Whitespace,
    /// More than three dot-separated numbers before the prerelease.
    #[error(
        "it has more than three numbers; write MAJOR.MINOR.PATCH, with anything else in a '-' prerelease \
         or '+' build"
    )]
    TooManyParts,
    /// The string starts with `v`.
    #[error("it starts with 'v', which strict versions do not allow; drop the 'v'")]
    LeadingV,
    /// A numeric field is missing (e.g. `1..0`).
    #[error("the {field} number is missing; write MAJOR.MINOR.PATCH, e.g. '1.0.0'")]
    MissingNumber {
        /// `major`, `minor` or `patch`.
        field: &'static str,
    },
    /// A numeric field has something other than digits.
    #[error("the {field} number '{value}' must be digits only")]
    NonNumeric {
        /// `major`, `minor` or `patch`.
        field: &'static str,
        /// The field's text.
        value: String,
    },
    /// A numeric field has a leading zero.
    #[error("the {field} number '{value}' has a leading zero; drop it")]
    LeadingZero {
        /// `major`, `minor` or `patch`.
        field: &'static str,
        /// The field's text.
        value: String,
    },
    /// A numeric field does not fit in 64 bits.
    #[error("the {field} number '{value}' is larger than 18446744073709551615")]
    TooLarge {
        /// `major`, `minor` or `patch`.
        field: &'static str,
        /// The field's text.
        value: String,
    },
    /// An empty prerelease identifier (`1.0.0-`, `1.0.0-a..b`).
    #[error("a prerelease identifier is empty; remove the stray '-' or '.'")]
    EmptyPrerelease,
    /// A prerelease identifier with characters outside `[0-9A-Za-z-]`.
    #[error("the prerelease identifier '{identifier}' may only contain ASCII letters, digits and '-'")]
    InvalidPrerelease {
        /// The identifier.
        identifier: String,
    },
    /// A numeric prerelease identifier with a leading zero.
    #[error("the numeric prerelease identifier '{identifier}' has a leading zero; drop it")]
    PrereleaseLeadingZero {
        /// The identifier.
        identifier: String,
    },
    /// A numeric prerelease identifier that does not fit in 64 bits.
    #[error("the numeric prerelease identifier '{identifier}' is larger than 18446744073709551615")]
    PrereleaseTooLarge {
        /// The identifier.
        identifier: String,
    },
    /// An empty build identifier (`1.0.0+`, `1.0.0+a..b`).
    #[error("a build metadata identifier is empty; remove the stray '+' or '.'")]
    EmptyBuild,
    /// A build identifier with characters outside `[0-9A-Za-z-]`.
    #[error("the build metadata identifier '{identifier}' may only contain ASCII letters, digits and '-'")]
    InvalidBuild {
        /// The identifier.
        identifier: String,
    },
    /// `ParseTolerant` refuses to pad a short version that has a prerelease or build.
    #[error(
        "a short version cannot carry a prerelease or build metadata; write all three numbers, \
         e.g. '1.2.0-rc.1'"
    )]
    ShortWithSuffix,
}

fn or_generic<'a>(suggestion: Option<&'a str>, generic: &'a str) -> String {
    match suggestion {
        Some(s) => format!("'{s}'"),
        None => generic.to_string(),
    }
}

/// blang `Version.Compare`: SemVer precedence, build metadata ignored.
pub fn compare(a: &Version, b: &Version) -> Ordering {
    a.major
        .cmp(&b.major)
        .then(a.minor.cmp(&b.minor))
        .then(a.patch.cmp(&b.patch))
        .then_with(|| compare_prerelease(a.pre.as_str(), b.pre.as_str()))
}

fn compare_prerelease(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => match compare_identifier(x, y) {
                Ordering::Equal => {}
                other => return other,
            },
        }
    }
}

fn is_numeric(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn compare_identifier(x: &str, y: &str) -> Ordering {
    match (is_numeric(x), is_numeric(y)) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (true, true) => {
            // Arbitrary length, so compare digit strings: fewer significant digits is smaller.
            let x = x.trim_start_matches('0');
            let y = y.trim_start_matches('0');
            x.len().cmp(&y.len()).then_with(|| x.cmp(y))
        }
        (false, false) => x.as_bytes().cmp(y.as_bytes()),
    }
}

/// blang `Parse`: strict `MAJOR.MINOR.PATCH[-pre][+build]`, no `v`, no leading zeros, 64-bit numbers.
pub fn parse_version_strict(s: &str) -> Result<Version, RangeError> {
    strict(s).map_err(|problem| version_error(s, problem))
}

/// blang `ParseTolerant`: trims whitespace, drops one leading `v`, strips leading zeros from the three
/// dot-separated parts, pads a missing minor/patch with `0`, then applies [`parse_version_strict`].
pub fn parse_version_tolerant(s: &str) -> Result<Version, RangeError> {
    let trimmed = s.trim();
    let trimmed = trimmed.strip_prefix('v').unwrap_or(trimmed);
    let mut parts: Vec<String> = trimmed
        .splitn(3, '.')
        .map(|part| {
            if part.len() > 1 {
                let rest = part.trim_start_matches('0');
                if rest.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                    rest.to_string()
                } else {
                    format!("0{rest}")
                }
            } else {
                part.to_string()
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err(version_error(s, VersionProblem::ShortWithSuffix));
        }
        parts.resize(3, "0".to_string());
    }
    strict(&parts.join(".")).map_err(|problem| version_error(s, problem))
}

fn version_error(s: &str, problem: VersionProblem) -> RangeError {
    match problem {
        VersionProblem::NotFull => RangeError::NotFullVersion {
            version: s.to_string(),
            suggestion: padded(s),
        },
        VersionProblem::MissingNumber { .. } | VersionProblem::NonNumeric { .. }
            if s.split(['-', '+'])
                .next()
                .is_some_and(|core| core.split('.').count() < 3) =>
        {
            RangeError::NotFullVersion {
                version: s.to_string(),
                suggestion: padded(s),
            }
        }
        problem => RangeError::InvalidVersion {
            version: s.to_string(),
            problem,
        },
    }
}

/// `1.2` → `1.2.0`, `1-rc` → `1.0.0-rc`, when the given parts are plain numbers.
fn padded(s: &str) -> Option<String> {
    let (numbers, suffix) = loose_numbers(s)?;
    let mut out: Vec<String> = numbers.iter().map(u64::to_string).collect();
    out.resize(3, "0".to_string());
    Some(format!("{}{suffix}", out.join(".")))
}

/// Reads `1`, `1.2`, `1.2.3`, optionally followed by `-pre`/`+build`, and `x`/`X`/`*` as missing parts.
/// Used only to compute suggestions in error messages.
fn loose_numbers(s: &str) -> Option<(Vec<u64>, &str)> {
    let s = s.strip_prefix(['v', 'V']).unwrap_or(s);
    let split = s.find(['-', '+']).unwrap_or(s.len());
    let (core, suffix) = s.split_at(split);
    let mut numbers = Vec::new();
    let mut wildcard_seen = false;
    for (i, part) in core.split('.').enumerate() {
        if i >= 3 {
            return None;
        }
        if matches!(part, "x" | "X" | "*") {
            wildcard_seen = true;
        } else if wildcard_seen || !is_numeric(part) {
            return None;
        } else {
            numbers.push(part.parse::<u64>().ok()?);
        }
    }
    if numbers.is_empty() || (wildcard_seen && !suffix.is_empty()) {
        return None;
    }
    Some((numbers, suffix))
}

fn strict(s: &str) -> Result<Version, VersionProblem> {
    if s.is_empty() {
        return Err(VersionProblem::Empty);
    }
    if s.contains(char::is_whitespace) {
        return Err(VersionProblem::Whitespace);
    }
    if s.starts_with(['v', 'V']) {
        return Err(VersionProblem::LeadingV);
    }
    let mut parts = s.splitn(3, '.');
    let major = parts.next().unwrap_or_default();
    let minor = parts.next();
    let rest = parts.next();
    let (Some(minor), Some(rest)) = (minor, rest) else {
        return Err(VersionProblem::NotFull);
    };
    let major = number(major, "major")?;
    let minor = number(minor, "minor")?;

    let (rest, build) = match rest.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (rest, None),
    };
    let (patch, pre) = match rest.split_once('-') {
        Some((patch, pre)) => (patch, Some(pre)),
        None => (rest, None),
    };
    if patch.contains('.') && patch.split('.').all(is_numeric) {
        return Err(VersionProblem::TooManyParts);
    }
    let patch = number(patch, "patch")?;

    let pre = match pre {
        None => Prerelease::EMPTY,
        Some(pre) => {
            for identifier in pre.split('.') {
                check_prerelease_identifier(identifier)?;
            }
            Prerelease::new(pre).map_err(|_| VersionProblem::InvalidPrerelease {
                identifier: pre.to_string(),
            })?
        }
    };
    let build = match build {
        None => BuildMetadata::EMPTY,
        Some(build) => {
            for identifier in build.split('.') {
                if identifier.is_empty() {
                    return Err(VersionProblem::EmptyBuild);
                }
                if !identifier.bytes().all(is_identifier_byte) {
                    return Err(VersionProblem::InvalidBuild {
                        identifier: identifier.to_string(),
                    });
                }
            }
            BuildMetadata::new(build).map_err(|_| VersionProblem::InvalidBuild {
                identifier: build.to_string(),
            })?
        }
    };
    Ok(Version {
        major,
        minor,
        patch,
        pre,
        build,
    })
}

fn is_identifier_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn number(text: &str, field: &'static str) -> Result<u64, VersionProblem> {
    if text.is_empty() {
        return Err(VersionProblem::MissingNumber { field });
    }
    if !is_numeric(text) {
        return Err(VersionProblem::NonNumeric {
            field,
            value: text.to_string(),
        });
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(VersionProblem::LeadingZero {
            field,
            value: text.to_string(),
        });
    }
    text.parse::<u64>().map_err(|_| VersionProblem::TooLarge {
        field,
        value: text.to_string(),
    })
}

fn check_prerelease_identifier(identifier: &str) -> Result<(), VersionProblem> {
    if identifier.is_empty() {
        return Err(VersionProblem::EmptyPrerelease);
    }
    if is_numeric(identifier) {
        if identifier.len() > 1 && identifier.starts_with('0') {
            return Err(VersionProblem::PrereleaseLeadingZero {
                identifier: identifier.to_string(),
            });
        }
        if identifier.parse::<u64>().is_err() {
            return Err(VersionProblem::PrereleaseTooLarge {
                identifier: identifier.to_string(),
            });
        }
        return Ok(());
    }
    if !identifier.bytes().all(is_identifier_byte) {
        return Err(VersionProblem::InvalidPrerelease {
            identifier: identifier.to_string(),
        });
    }
    Ok(())
}

/// One term as blang's tokenizer (`splitAndTrim`) cuts it.
struct Token<'a> {
    /// The slice of the input, spaces after operators included.
    raw: &'a str,
    /// The term with every space removed, as blang evaluates it.
    clean: String,
}

/// blang `splitAndTrim`: split on U+0020 unless the last non-space character was `<`, `>` or `=`.
/// Unlike blang, one-character terms are kept here so they can be reported instead of dropped.
fn split_terms(s: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut last_char = 0u8;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b' ' && !matches!(last_char, b'<' | b'>' | b'=') {
            if start < i {
                let raw = &s[start..i];
                tokens.push(Token {
                    raw,
                    clean: raw.replace(' ', ""),
                });
            }
            start = i + 1;
        } else if b != b' ' {
            last_char = b;
        }
    }
    if start < s.len() {
        let raw = &s[start..];
        tokens.push(Token {
            raw,
            clean: raw.replace(' ', ""),
        });
    }
    tokens
}

/// Rejects the one-character terms blang would silently drop (quirk 4).
fn reject_stray_terms(tokens: &[Token<'_>]) -> Result<(), RangeError> {
    for (i, token) in tokens.iter().enumerate() {
        if token.raw.len() != 1 {
            continue;
        }
        let previous = i.checked_sub(1).and_then(|j| tokens.get(j));
        let next = tokens.get(i + 1);
        let fix = match token.raw {
            "-" => {
                if let (Some(low), Some(high)) = (previous, next)
                    && low.clean != "||"
                    && high.clean != "||"
                {
                    return Err(RangeError::HyphenRange {
                        range: format!("{} - {}", low.clean, high.clean),
                        suggestion: hyphen_suggestion(&low.clean, &high.clean),
                    });
                }
                "OLM has no hyphen ranges: write '>=A <=B' with full versions".to_string()
            }
            "!" => "attach the operator to its version, e.g. '!=1.0.0': a space is allowed only after \
                    '<', '>' and '='"
                .to_string(),
            "|" => "write '||', with a space on both sides, for OR".to_string(),
            "*" | "x" | "X" => "OLM ranges have no any-version wildcard: write '>=0.0.0' to match every \
                                version"
                .to_string(),
            "^" | "~" => {
                "OLM has no caret or tilde ranges: write explicit bounds, e.g. '>=1.2.0 <2.0.0'".to_string()
            }
            "<" | ">" | "=" => format!(
                "complete the comparator with a version, e.g. '{}1.0.0'",
                token.raw
            ),
            t if is_numeric(t) => format!("write a full version, e.g. '{t}.0.0'"),
            _ => "remove it, or complete the comparator, e.g. '>=1.0.0'".to_string(),
        };
        return Err(RangeError::StrayTerm {
            term: token.raw.to_string(),
            fix,
        });
    }
    Ok(())
}

fn hyphen_suggestion(low: &str, high: &str) -> Option<String> {
    let (low_numbers, low_suffix) = loose_numbers(low)?;
    let (high_numbers, high_suffix) = loose_numbers(high)?;
    let mut low_parts: Vec<String> = low_numbers.iter().map(u64::to_string).collect();
    low_parts.resize(3, "0".to_string());
    let lower = format!(">={}{low_suffix}", low_parts.join("."));
    let upper = match high_numbers.as_slice() {
        [major, minor, patch] => format!("<={major}.{minor}.{patch}{high_suffix}"),
        [major, minor] => format!("<{major}.{}.0", minor.checked_add(1)?),
        [major] => format!("<{}.0.0", major.checked_add(1)?),
        _ => return None,
    };
    Some(format!("{lower} {upper}"))
}

fn caret_suggestion(version: &str) -> Option<String> {
    let (numbers, suffix) = loose_numbers(version)?;
    let (lower, upper) = match numbers.as_slice() {
        [0, 0, patch] => (
            format!("0.0.{patch}{suffix}"),
            format!("0.0.{}", patch.checked_add(1)?),
        ),
        [0, minor, patch] => (
            format!("0.{minor}.{patch}{suffix}"),
            format!("0.{}.0", minor.checked_add(1)?),
        ),
        [major, minor, patch] => (
            format!("{major}.{minor}.{patch}{suffix}"),
            format!("{}.0.0", major.checked_add(1)?),
        ),
        [0, minor] => (format!("0.{minor}.0"), format!("0.{}.0", minor.checked_add(1)?)),
        [major, minor] => (
            format!("{major}.{minor}.0"),
            format!("{}.0.0", major.checked_add(1)?),
        ),
        [major] => (format!("{major}.0.0"), format!("{}.0.0", major.checked_add(1)?)),
        _ => return None,
    };
    Some(format!(">={lower} <{upper}"))
}

fn tilde_suggestion(version: &str) -> Option<String> {
    let (numbers, suffix) = loose_numbers(version)?;
    let (lower, upper) = match numbers.as_slice() {
        [major, minor, patch] => (
            format!("{major}.{minor}.{patch}{suffix}"),
            format!("{major}.{}.0", minor.checked_add(1)?),
        ),
        [major, minor] => (
            format!("{major}.{minor}.0"),
            format!("{major}.{}.0", minor.checked_add(1)?),
        ),
        [major] => (format!("{major}.0.0"), format!("{}.0.0", major.checked_add(1)?)),
        _ => return None,
    };
    Some(format!(">={lower} <{upper}"))
}

/// Parses one cleaned term into one or two comparators (two for an equality wildcard).
fn parse_term(term: &str) -> Result<Vec<Comparator>, RangeError> {
    if term.contains('|') {
        return Err(RangeError::OrWithoutSpaces {
            term: term.to_string(),
        });
    }
    // blang uses the first digit (`unicode.IsDigit`) to cut operator from version. A non-ASCII digit
    // first would make blang fail on the version; here it ends up in the operator and fails there.
    let Some(cut) = term.find(|c: char| c.is_ascii_digit()) else {
        return Err(if term.starts_with('^') {
            RangeError::Caret {
                term: term.to_string(),
                suggestion: None,
            }
        } else if term.starts_with('~') {
            RangeError::Tilde {
                term: term.to_string(),
                suggestion: None,
            }
        } else {
            RangeError::MissingVersion {
                term: term.to_string(),
            }
        });
    };
    let (operator_text, version_text) = term.split_at(cut);
    let operator_text = operator_text.trim();
    let Some(op) = Op::from_blang(operator_text) else {
        return Err(unknown_operator(term, operator_text, version_text));
    };
    if term.contains('x') {
        return expand_x_term(term, operator_text, op, version_text);
    }
    let version = strict(version_text).map_err(|problem| {
        let lowercase = version_text.replace(['*', 'X'], "x");
        if lowercase != version_text && expand_x_term(term, operator_text, op, &lowercase).is_ok() {
            let suggestion = format!("{operator_text}{lowercase}");
            return RangeError::WrongWildcardLetter {
                term: term.to_string(),
                suggestion,
            };
        }
        version_error(version_text, problem)
    })?;
    Ok(vec![Comparator { op, version }])
}

fn unknown_operator(term: &str, operator: &str, version: &str) -> RangeError {
    if operator.contains('^') {
        return RangeError::Caret {
            term: term.to_string(),
            suggestion: caret_suggestion(version),
        };
    }
    if operator.contains('~') {
        return RangeError::Tilde {
            term: term.to_string(),
            suggestion: tilde_suggestion(version),
        };
    }
    if let Some(before) = operator.strip_suffix(['v', 'V'])
        && Op::from_blang(before.trim()).is_some()
    {
        return RangeError::VPrefix {
            term: term.to_string(),
            suggestion: format!("{}{version}", before.trim()),
        };
    }
    RangeError::UnknownOperator {
        term: term.to_string(),
        operator: operator.to_string(),
    }
}

/// How blang classifies a term containing `x` (`getWildcardType`): by the number of dot-separated
/// parts when the last one is exactly `x`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WildcardKind {
    /// `1.x`: two parts.
    Minor,
    /// `1.2.x` and `1.x.x`: three parts.
    Patch,
}

/// Terms containing the letter `x` (quirks 1, 2, 3, 7).
fn expand_x_term(term: &str, operator: &str, op: Op, version: &str) -> Result<Vec<Comparator>, RangeError> {
    let parts: Vec<&str> = version.split('.').collect();
    let kind = match (parts.len(), parts.last()) {
        (2, Some(&"x")) => Some(WildcardKind::Minor),
        (3, Some(&"x")) => Some(WildcardKind::Patch),
        _ => None,
    };
    let Some(kind) = kind else {
        return letter_x_outside_wildcard(term, operator, op, version);
    };

    let canonical = |p: &str| is_numeric(p) && !(p.len() > 1 && p.starts_with('0'));
    let invalid = || RangeError::InvalidWildcard {
        term: term.to_string(),
    };
    let (major, minor) = match parts.as_slice() {
        [major, "x"] if canonical(major) => (*major, "0"),
        [major, "x", "x"] if canonical(major) => (*major, "0"),
        [major, minor, "x"] if canonical(major) && canonical(minor) => (*major, *minor),
        _ => return Err(invalid()),
    };
    let major: u64 = major.parse().map_err(|_| invalid())?;
    let minor: u64 = minor.parse().map_err(|_| invalid())?;
    let lower = Version::new(major, minor, 0);
    // blang increments with Go `strconv.Atoi` and `int` arithmetic: values at or above i64::MAX fail.
    let upper = || {
        let bump = |n: u64| n.checked_add(1).filter(|&m| i64::try_from(m).is_ok());
        match kind {
            WildcardKind::Minor => bump(major).map(|m| Version::new(m, 0, 0)),
            WildcardKind::Patch => bump(minor).map(|m| Version::new(major, m, 0)),
        }
        .ok_or_else(|| RangeError::WildcardTooLarge {
            term: term.to_string(),
        })
    };
    Ok(match op {
        Op::Ne => {
            let suggestion = upper().ok().map(|upper| format!("<{lower} || >={upper}"));
            return Err(RangeError::NegatedWildcard {
                term: term.to_string(),
                suggestion,
            });
        }
        Op::Ge => vec![Comparator {
            op: Op::Ge,
            version: lower,
        }],
        Op::Lt => vec![Comparator {
            op: Op::Lt,
            version: lower,
        }],
        Op::Gt => vec![Comparator {
            op: Op::Ge,
            version: upper()?,
        }],
        Op::Le => vec![Comparator {
            op: Op::Lt,
            version: upper()?,
        }],
        Op::Eq => {
            let upper = upper()?;
            vec![
                Comparator {
                    op: Op::Ge,
                    version: lower,
                },
                Comparator {
                    op: Op::Lt,
                    version: upper,
                },
            ]
        }
    })
}

/// blang `createVersionFromWildcard`: the string surgery applied to every term containing `x`.
fn blang_flatten(version: &str) -> String {
    let flat = version.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
    if flat.split('.').count() == 2 {
        format!("{flat}.0")
    } else {
        flat
    }
}

/// An `x` that is not a wildcard, e.g. in a prerelease or build (quirk 3). blang only keeps the bound
/// for `>=` and `<`, after its string surgery; accept when that surgery changes nothing that matters.
fn letter_x_outside_wildcard(
    term: &str,
    operator: &str,
    op: Op,
    version: &str,
) -> Result<Vec<Comparator>, RangeError> {
    if !matches!(op, Op::Ge | Op::Lt) {
        return Err(RangeError::LetterXUnparsable {
            term: term.to_string(),
        });
    }
    let flat = blang_flatten(version);
    let Ok(read) = strict(&flat) else {
        return Err(RangeError::LetterXUnparsable {
            term: term.to_string(),
        });
    };
    match strict(version) {
        Ok(literal) if compare(&literal, &read) == Ordering::Equal => {
            Ok(vec![Comparator { op, version: literal }])
        }
        _ => Err(RangeError::LetterXMisread {
            term: term.to_string(),
            reading: format!("{operator}{flat}"),
        }),
    }
}

#[cfg(test)]
mod tests;
