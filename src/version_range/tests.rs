use super::*;

fn v(s: &str) -> Version {
    match parse_version_strict(s) {
        Ok(version) => version,
        Err(e) => panic!("test version {s:?} must parse: {e}"),
    }
}

fn range(s: &str) -> Range {
    match Range::parse(s) {
        Ok(r) => r,
        Err(e) => panic!("range {s:?} must parse: {e}"),
    }
}

/// The expanded form: AND-groups joined by " || ", comparators by " ".
fn expanded(s: &str) -> String {
    range(s)
        .groups()
        .iter()
        .map(|g| g.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(" || ")
}

fn error_kind(s: &str) -> String {
    match Range::parse(s) {
        Ok(r) => panic!("range {s:?} must be rejected, got {:?}", r.groups()),
        Err(e) => format!("{e:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

/// (range, [(version, expected membership)]). Every row was checked against blang/semver v4.0.0.
#[rustfmt::skip]
const MEMBERSHIP: &[(&str, &[(&str, bool)])] = &[
    // Each comparator.
    ("<1.2.3", &[("1.2.2", true), ("1.2.3", false), ("1.2.3-rc.1", true), ("0.0.0", true)]),
    ("<=1.2.3", &[("1.2.3", true), ("1.2.4", false), ("1.2.3+build", true), ("1.2.4-0", false)]),
    (">1.2.3", &[("1.2.3", false), ("1.2.4", true), ("1.2.4-0", true), ("1.2.3+build", false)]),
    (">=1.2.3", &[("1.2.3", true), ("1.2.2", false), ("1.2.3-rc.1", false), ("9.0.0", true)]),
    // Equality: bare, "=" and "==" are the same; build metadata ignored.
    ("1.2.3", &[("1.2.3", true), ("1.2.4", false), ("1.2.3+build.7", true), ("1.2.3-rc.1", false)]),
    ("=1.2.3", &[("1.2.3", true), ("1.2.4", false), ("1.2.3+build.7", true)]),
    ("==1.2.3", &[("1.2.3", true), ("1.2.2", false), ("1.2.3+build.7", true)]),
    ("=1.2.3-rc.1", &[("1.2.3-rc.1", true), ("1.2.3", false), ("1.2.3-rc.1+b", true)]),
    // Inequality: "!" and "!=".
    ("!1.2.3", &[("1.2.3", false), ("1.2.4", true), ("1.2.3+b", false)]),
    ("!=1.2.3", &[("1.2.3", false), ("1.2.2", true), ("1.2.3-rc.1", true)]),
    // Space after an operator, several spaces, spaces at the ends.
    (">= 1.0.0", &[("1.0.0", true), ("0.9.0", false)]),
    ("<=   2.0.0", &[("2.0.0", true), ("2.0.1", false)]),
    ("== 1.0.0", &[("1.0.0", true), ("1.0.1", false)]),
    ("> =1.0.0", &[("1.0.0", true), ("0.9.0", false)]),
    ("  >=1.0.0    <2.0.0  ", &[("1.0.0", true), ("1.9.9", true), ("2.0.0", false), ("0.9.9", false)]),
    // AND and OR; AND binds tighter.
    (">1.0.0 <2.0.0", &[("1.0.0", false), ("1.1.1", true), ("1.8.7", true), ("2.0.0", false)]),
    (">1.0.0 <3.0.0 !2.0.3-beta.2",
        &[("2.0.3-beta.2", false), ("2.0.3-beta.1", true), ("2.0.3", true), ("1.0.1", true)]),
    ("<2.0.0 || >=3.0.0", &[("1.9.9", true), ("2.0.0", false), ("2.9.9", false), ("3.0.0", true)]),
    (">1.0.0 <2.0.0 || >3.0.0 !4.2.1",
        &[("1.2.3", true), ("1.9.9", true), ("3.1.1", true), ("4.2.1", false), ("2.1.1", false)]),
    ("1.0.0 || 2.0.0 || 3.0.0", &[("1.0.0", true), ("2.0.0", true), ("3.0.0", true), ("1.5.0", false)]),
    // Wildcards.
    ("1.x",
        &[("1.0.0", true), ("1.99.99", true), ("2.0.0", false), ("0.9.0", false), ("2.0.0-rc.1", true)]),
    ("1.2.x",
        &[
            ("1.2.0", true), ("1.2.99", true), ("1.3.0", false), ("1.2.0-rc.1", false),
            ("1.3.0-rc.1", true),
        ]),
    ("=1.2.x", &[("1.2.5", true), ("1.3.0", false)]),
    ("==1.x", &[("1.5.0", true), ("2.0.0", false)]),
    (">1.2.x", &[("1.2.99", false), ("1.3.0", true), ("1.3.0-rc.1", false)]),
    (">=1.2.x", &[("1.2.0", true), ("1.1.99", false)]),
    ("<1.2.x", &[("1.1.99", true), ("1.2.0", false), ("1.2.0-rc.1", true)]),
    ("<=1.2.x", &[("1.2.99", true), ("1.3.0", false), ("1.3.0-rc.1", true)]),
    (">1.x", &[("1.99.0", false), ("2.0.0", true)]),
    ("<=1.x", &[("1.99.0", true), ("2.0.0", false)]),
    (">=2.1.x <2.2.1", &[("2.1.0", true), ("2.2.0", true), ("2.2.1", false), ("2.0.9", false)]),
    ("0.x", &[("0.0.0", true), ("0.9.9", true), ("1.0.0", false)]),
    // Quirk 1, reproduced: 1.x.x is a patch wildcard.
    ("1.x.x", &[("1.0.0", true), ("1.0.9", true), ("1.1.0", false), ("1.5.0", false)]),
    (">1.x.x", &[("1.0.9", false), ("1.1.0", true)]),
    // Forms from the real catalogs in ../shared/corpus.
    (">=1.0.0 <1.31.0-nightly-2026-08-10",
        &[
            ("1.30.9", true), ("1.31.0-nightly-2026-08-09", true), ("1.31.0-nightly-2026-08-10", false),
            ("1.31.0", false), ("1.0.0", true),
        ]),
    (">=2.6.4-6 <=2.7.0-4",
        &[("2.6.4-5", false), ("2.6.4-6", true), ("2.6.4", true), ("2.7.0-4", true), ("2.7.0-5", false)]),
    (">= 1.18.0 < 1.28.0", &[("1.18.0", true), ("1.27.99", true), ("1.28.0", false), ("1.17.0", false)]),
    (">=1.22.8 < 1.23.0 || >=1.25.0 <1.26.0",
        &[("1.22.9", true), ("1.23.0", false), ("1.24.0", false), ("1.25.3", true)]),
    // Quirk 3: an 'x' in build metadata with '>=' or '<' means what it says (from real catalogs).
    (">=1.12.0 <1.12.18+x63f4f4c",
        &[("1.12.17", true), ("1.12.18", false), ("1.12.18+x63f4f4c", false), ("1.12.18-rc1", true)]),
    (">=1.0.0-xyz", &[("1.0.0-xyz", true), ("1.0.0-xy", false), ("1.0.0", true)]),
    (">=4.9.0-202112142229",
        &[("4.9.0-202112142228", false), ("4.9.0-202112142229", true), ("4.9.0", true)]),
    ("<0.0.0 >1.1.0", &[("0.0.0", false), ("2.0.0", false)]),
    ("0.0.0", &[("0.0.0", true), ("0.0.0-0", false)]),
    ("<1.2.3+b.x", &[("1.2.3", false), ("1.2.3-rc", true), ("1.2.2+b.x", true)]),
    // Faithful oddity: no spaces around '-' makes a prerelease, not a hyphen range.
    ("1.0.0-2.0.0", &[("1.0.0-2.0.0", true), ("1.5.0", false), ("1.0.0", false)]),
];

#[test]
fn the_grammar_table_matches_blang_membership() {
    for (text, cases) in MEMBERSHIP {
        let r = range(text);
        for (version, expected) in *cases {
            assert_eq!(r.contains(&v(version)), *expected, "{version} in {text:?}");
        }
    }
}

#[test]
fn prereleases_are_not_excluded_from_ranges() {
    let r = range(">=1.0.0 <2.0.0");
    assert!(r.contains(&v("2.0.0-rc.1")), "2.0.0-rc.1 < 2.0.0 so it is inside");
    assert!(r.contains(&v("1.5.0-alpha")));
    assert!(
        !r.contains(&v("1.0.0-rc.1")),
        "1.0.0-rc.1 < 1.0.0 so it is outside"
    );
    assert!(!r.contains(&v("2.0.0")));
}

#[test]
fn wildcards_expand_to_plain_comparators() {
    let table = [
        ("1.2.x", ">=1.2.0 <1.3.0"),
        ("1.x", ">=1.0.0 <2.0.0"),
        ("=1.x", ">=1.0.0 <2.0.0"),
        ("==1.2.x", ">=1.2.0 <1.3.0"),
        (">1.2.x", ">=1.3.0"),
        (">=1.2.x", ">=1.2.0"),
        ("<1.2.x", "<1.2.0"),
        ("<=1.2.x", "<1.3.0"),
        (">1.x", ">=2.0.0"),
        (">=1.x", ">=1.0.0"),
        ("<1.x", "<1.0.0"),
        ("<=1.x", "<2.0.0"),
        ("1.x.x", ">=1.0.0 <1.1.0"),
        ("<=1.x.x", "<1.1.0"),
        (">= 1.x", ">=1.0.0"),
        (">=2.1.x <2.2.1", ">=2.1.0 <2.2.1"),
        ("1.x || 3.2.x", ">=1.0.0 <2.0.0 || >=3.2.0 <3.3.0"),
        ("!1.2.3 <2.0.0", "!=1.2.3 <2.0.0"),
        ("1.2.3", "=1.2.3"),
        (">=1.12.0 <1.12.18+x63f4f4c", ">=1.12.0 <1.12.18+x63f4f4c"),
    ];
    for (text, expected) in table {
        assert_eq!(expanded(text), expected, "expansion of {text:?}");
    }
}

#[test]
fn ordering_follows_blang_compare() {
    use Ordering::{Equal, Greater, Less};
    let table = [
        ("1.0.0", "2.0.0", Less),
        ("1.10.0", "1.9.0", Greater),
        ("1.0.10", "1.0.9", Greater),
        // A prerelease is below its release.
        ("1.0.0-rc.1", "1.0.0", Less),
        ("1.0.0", "1.0.0-0", Greater),
        // Numeric identifiers compare numerically and sit below alphanumeric ones.
        ("1.0.0-2", "1.0.0-10", Less),
        ("1.0.0-99", "1.0.0-a", Less),
        ("1.0.0-rc.2", "1.0.0-rc.10", Less),
        ("1.0.0-rc.1", "1.0.0-rc.a", Less),
        // Alphanumeric identifiers compare bytewise (ASCII).
        ("1.0.0-alpha", "1.0.0-beta", Less),
        ("1.0.0-RC", "1.0.0-rc", Less),
        ("1.0.0-alpha", "1.0.0-alpha-1", Less),
        ("1.0.0-rc10", "1.0.0-rc9", Less),
        ("1.31.0-nightly-2026-08-09", "1.31.0-nightly-2026-08-10", Less),
        // A longer prerelease wins ties.
        ("1.0.0-rc", "1.0.0-rc.1", Less),
        ("1.0.0-beta.1.1", "1.0.0-beta.1", Greater),
        // Build metadata is ignored.
        ("1.0.0+a", "1.0.0+b", Equal),
        ("1.0.0-rc.1+x", "1.0.0-rc.1", Equal),
        ("1.0.0", "1.0.0", Equal),
    ];
    for (a, b, expected) in table {
        assert_eq!(compare(&v(a), &v(b)), expected, "compare({a}, {b})");
        assert_eq!(compare(&v(b), &v(a)), expected.reverse(), "compare({b}, {a})");
    }
}

#[test]
fn compare_ignores_build_metadata_where_the_semver_crate_does_not() {
    let (a, b) = (v("1.0.0+build.1"), v("1.0.0+build.2"));
    assert_ne!(
        a.cmp(&b),
        Ordering::Equal,
        "semver's Ord breaks ties on build metadata"
    );
    assert_eq!(compare(&a, &b), Ordering::Equal);
}

#[test]
fn compare_orders_numeric_prerelease_identifiers_of_any_length() {
    let big = Version {
        pre: Prerelease::new("123456789012345678901234567890").unwrap_or(Prerelease::EMPTY),
        ..Version::new(1, 0, 0)
    };
    assert!(
        !big.pre.is_empty(),
        "the semver crate accepts long numeric identifiers"
    );
    assert_eq!(compare(&v("1.0.0-18446744073709551615"), &big), Ordering::Less);
    assert_eq!(compare(&big, &v("1.0.0-a")), Ordering::Less);
}

/// (input, expected error variant). Every input here is rejected, and the comment says what blang does.
const REJECTIONS: &[(&str, &str)] = &[
    // Not in blang's grammar (blang rejects these too).
    ("^1.2.0", "Caret"),
    ("~1.2.3", "Tilde"),
    ("~>1.2", "Tilde"),
    ("v1.0.0", "VPrefix"),
    (">=v1.0.0", "VPrefix"),
    ("1.2", "NotFullVersion"),
    (">=1.2 <2", "NotFullVersion"),
    ("1", "StrayTerm"),
    ("", "Empty"),
    ("   ", "Empty"),
    ("garbage", "MissingVersion"),
    (">=", "MissingVersion"),
    (">>1.0.0", "UnknownOperator"),
    ("=>1.0.0", "UnknownOperator"),
    ("=<1.0.0", "UnknownOperator"),
    ("|| 1.0.0", "EmptyOrSide"),
    ("1.0.0 ||", "EmptyOrSide"),
    ("1.0.0||2.0.0", "OrWithoutSpaces"),
    (">=1.0.0 ||<2.0.0", "OrWithoutSpaces"),
    ("01.2.3", "InvalidVersion"),
    ("1.2.3-01", "InvalidVersion"),
    ("1.2.3-", "InvalidVersion"),
    ("1.2.3+", "InvalidVersion"),
    ("1.2.3-a_b", "InvalidVersion"),
    ("1.2.3.4", "InvalidVersion"),
    ("1.0.0\t<2.0.0", "InvalidVersion"),
    (">=99999999999999999999.0.0", "InvalidVersion"),
    ("1.2.3-99999999999999999999", "InvalidVersion"),
    ("1.2.*", "WrongWildcardLetter"),
    ("1.X", "WrongWildcardLetter"),
    ("*", "StrayTerm"),
    ("=1.0.0-xyz", "LetterXUnparsable"),
    (">1.0.0-rc.x1", "LetterXUnparsable"),
    ("<=1.0.0+x1", "LetterXUnparsable"),
    ("1.x-rc", "LetterXUnparsable"),
    (">9223372036854775807.x", "WildcardTooLarge"),
    // Accepted by blang, rejected here on purpose (quirks 2 to 7 in the module docs).
    ("!=1.2.x", "NegatedWildcard"),
    ("!1.x", "NegatedWildcard"),
    (">=1.0.0-rc.xyz", "LetterXMisread"),
    (">=1.x.0", "LetterXMisread"),
    ("<1.2.3-b.x", "LetterXMisread"),
    ("1.0.0 - 2.0.0", "HyphenRange"),
    ("! 1.0.0", "StrayTerm"),
    (">=1.0.0 <", "StrayTerm"),
    (">=1.0.0 | <0.5.0", "StrayTerm"),
    (">=1.0.0 x", "StrayTerm"),
    ("1.0.0 || || 2.0.0", "EmptyOrSide"),
    ("~1.2.x", "Tilde"),
    ("^1.x", "Caret"),
    ("v1.x", "VPrefix"),
    (">>1.2.x", "UnknownOperator"),
    (">1.02.x", "InvalidWildcard"),
    (">01.x", "InvalidWildcard"),
];

#[test]
fn rejected_ranges_name_the_broken_rule() {
    for (text, kind) in REJECTIONS {
        assert_eq!(error_kind(text), *kind, "error for {text:?}");
    }
}

fn message(s: &str) -> String {
    match Range::parse(s) {
        Ok(_) => panic!("range {s:?} must be rejected"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn rejection_messages_say_what_to_write_instead() {
    let table = [
        (
            "^1.2.0",
            "'^1.2.0' uses the caret operator, which OLM's range grammar (blang/semver) does not \
             support; \
             write '>=1.2.0 <2.0.0'",
        ),
        ("^0.2.3", "write '>=0.2.3 <0.3.0'"),
        ("^0.0.3", "write '>=0.0.3 <0.0.4'"),
        (
            "~1.2.3",
            "uses the tilde operator, which OLM's range grammar (blang/semver) does not support; \
             write '>=1.2.3 <1.3.0'",
        ),
        ("~1", "write '>=1.0.0 <2.0.0'"),
        (
            "1.0.0 - 2.0.0",
            "'1.0.0 - 2.0.0' is a hyphen range, which OLM's range grammar (blang/semver) does not support; \
             write '>=1.0.0 <=2.0.0'",
        ),
        ("1.0 - 2.3", "write '>=1.0.0 <2.4.0'"),
        (
            "1.2",
            "'1.2' is not a full version: OLM versions and ranges need MAJOR.MINOR.PATCH, e.g. '1.2.0'",
        ),
        (">=1.2-rc.1", "e.g. '1.2.0-rc.1'"),
        ("v1.0.0", "write '1.0.0'"),
        (">= v1.0.0", "write '>=1.0.0'"),
        ("!=1.2.x", "write '<1.2.0 || >=1.3.0'"),
        ("!1.x", "write '<1.0.0 || >=2.0.0'"),
        (">=1.0.0-rc.xyz", "would silently read it as '>=1.0.0-rc.0yz'"),
        ("1.2.*", "write '1.2.x'"),
        (">=1.X", "write '>=1.x'"),
        ("! 1.0.0", "e.g. '!=1.0.0'"),
        (">=1.0.0 | <0.5.0", "write '||'"),
        ("", "the range is empty"),
        ("1.0.0 ||", "put a comparator on both sides of every '||'"),
        (">>1.0.0", "uses the operator '>>'"),
        ("01.2.3", "the major number '01' has a leading zero"),
        ("1.2.3.4", "more than three numbers"),
    ];
    for (text, expected) in table {
        let got = message(text);
        assert!(
            got.contains(expected),
            "message for {text:?} is {got:?}, expected it to contain {expected:?}"
        );
    }
}

#[test]
fn strict_versions_follow_blang_parse() {
    let accepted = [
        ("0.0.0", "0.0.0"),
        ("1.2.3", "1.2.3"),
        ("1.2.3-rc.1", "1.2.3-rc.1"),
        ("1.2.3-0", "1.2.3-0"),
        ("1.2.3-0yz", "1.2.3-0yz"),
        ("1.2.3-alpha-1.beta--2", "1.2.3-alpha-1.beta--2"),
        ("1.2.3+001", "1.2.3+001"),
        ("1.2.3-rc.1+build.5", "1.2.3-rc.1+build.5"),
        ("1.2.3+build-1", "1.2.3+build-1"),
        ("1.10.10+x6adc6ff", "1.10.10+x6adc6ff"),
        ("18446744073709551615.0.0", "18446744073709551615.0.0"),
        ("1.0.0-18446744073709551615", "1.0.0-18446744073709551615"),
    ];
    for (text, shown) in accepted {
        assert_eq!(v(text).to_string(), shown, "strict parse of {text:?}");
    }
    let rejected = [
        "",
        "v1.2.3",
        "1.2",
        "1",
        "1.2.3.4",
        "01.2.3",
        "1.02.3",
        "1.2.03",
        "1.2.3-01",
        "1.2.3-",
        "1.2.3-a..b",
        "1.2.3+",
        "1.2.3+a..b",
        "1.2.3+a+b",
        "1.2.3-a_b",
        " 1.2.3",
        "1.2.3 ",
        "1..3",
        "a.b.c",
        "1.2.x",
        "18446744073709551616.0.0",
        "1.0.0-18446744073709551616",
        "1.2.3-é",
    ];
    for text in rejected {
        assert!(
            parse_version_strict(text).is_err(),
            "strict parse must reject {text:?}"
        );
    }
}

#[test]
fn tolerant_versions_follow_blang_parse_tolerant() {
    let accepted = [
        ("v1.2.3", "1.2.3"),
        ("  1.2.3\n", "1.2.3"),
        ("1.2", "1.2.0"),
        ("1", "1.0.0"),
        ("v1", "1.0.0"),
        ("01.02.03", "1.2.3"),
        ("1.2.007-rc.1", "1.2.7-rc.1"),
        ("1.2.00-rc", "1.2.0-rc"),
        ("0.0.0", "0.0.0"),
        ("1.2.3-rc.1+b", "1.2.3-rc.1+b"),
    ];
    for (text, shown) in accepted {
        match parse_version_tolerant(text) {
            Ok(version) => assert_eq!(version.to_string(), shown, "tolerant parse of {text:?}"),
            Err(e) => panic!("tolerant parse of {text:?} failed: {e}"),
        }
    }
    let rejected = [
        "", "vv1.2.3", "V1.2.3", "1.2-rc", "1-rc", "1.2+b", "1.2.3.4", "a.b.c", "1.2.3-01",
    ];
    for text in rejected {
        assert!(
            parse_version_tolerant(text).is_err(),
            "tolerant parse must reject {text:?}"
        );
    }
    assert!(matches!(
        parse_version_tolerant("1.2-rc"),
        Err(RangeError::InvalidVersion {
            problem: VersionProblem::ShortWithSuffix,
            ..
        })
    ));
}

#[test]
fn a_range_keeps_its_original_text() {
    let text = ">= 1.18.0 < 1.28.0";
    let r = range(text);
    assert_eq!(r.as_str(), text);
    assert_eq!(r.to_string(), text);
    let parsed: Result<Range, _> = text.parse();
    assert_eq!(parsed, Ok(r));
}

#[test]
fn a_range_serializes_as_its_string_and_deserialization_validates() {
    let r = range(">=1.0.0 <2.0.0 || 3.x");
    let json = serde_json::to_string(&r).unwrap_or_default();
    assert_eq!(json, r#"">=1.0.0 <2.0.0 || 3.x""#);
    let back: Range = serde_json::from_str(&json).unwrap_or_else(|e| panic!("round trip: {e}"));
    assert_eq!(back, r);
    let err = serde_json::from_str::<Range>(r#""^1.2.0""#)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("caret operator"), "{err}");
    assert!(
        serde_json::from_str::<Range>("12").is_err(),
        "a range is a string"
    );
}

#[test]
fn no_input_panics() {
    let mut inputs: Vec<String> = [
        "",
        " ",
        "\t",
        "\n",
        "||",
        "|",
        "-",
        "x",
        "X",
        "*",
        ".",
        "..",
        "...",
        "1..",
        ".1",
        "1.",
        "1.x.x.x",
        "x.x.x",
        "1.2.3-",
        "1.2.3+",
        "-1.2.3",
        "+1.2.3",
        ">=",
        "<",
        "!",
        "! ",
        "!!1.0.0",
        "é",
        "1.0.0-é",
        "١.٢.٣",
        ">=١.0.0",
        "1.x-é",
        "\u{0}",
        "1.0.0\u{0}",
        "18446744073709551615.x",
        "18446744073709551615.18446744073709551615.x",
        "9223372036854775806.x",
        "99999999999999999999.x",
        "1.99999999999999999999.x",
        ">1.18446744073709551615.x",
        "^",
        "~",
        "^x",
        "~1.x.x",
        "^99999999999999999999",
        "1.0.0 - ",
        " - 1.0.0",
        "- -",
        "|| ||",
        "1.0.0 || ||",
        ">= || 1.0.0",
        "1.0.0 -",
        "v",
        "vx",
        "v1",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    // Every string of up to three pieces from an alphabet of troublemakers.
    let alphabet = [
        "1", "0", ".", "x", "-", "+", " ", "|", ">", "=", "!", "^", "~", "v", "é", "\t",
    ];
    for a in alphabet {
        for b in alphabet {
            for c in alphabet {
                inputs.push(format!("{a}{b}{c}"));
                inputs.push(format!("1.2.{a}{b}{c}"));
                inputs.push(format!("{a}1.0.0 {b}{c}2.x"));
            }
        }
    }
    for input in &inputs {
        if let Ok(r) = Range::parse(input) {
            assert!(
                r.groups().iter().all(|g| !g.is_empty()),
                "{input:?} has an empty group"
            );
            let _ = r.contains(&Version::new(1, 0, 0));
        }
        let _ = parse_version_strict(input);
        let _ = parse_version_tolerant(input);
    }
}
