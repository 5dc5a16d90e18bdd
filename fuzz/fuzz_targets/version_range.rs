//! Version ranges (blang/semver grammar, `skipRange`, `olm.package.required`): parsing never
//! panics, a parsed range keeps its text, and a version that parses is compared consistently.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_rs::version_range::{Range, compare, parse_version_tolerant};

fuzz_target!(|input: (&str, &str, &str)| {
    let (range, a, b) = input;
    if let Ok(parsed) = Range::parse(range) {
        assert_eq!(parsed.as_str(), range);
        if let Ok(v) = parse_version_tolerant(a) {
            // Deterministic: the same answer twice.
            assert_eq!(parsed.contains(&v), parsed.contains(&v));
        }
    }
    if let (Ok(x), Ok(y)) = (parse_version_tolerant(a), parse_version_tolerant(b)) {
        assert_eq!(compare(&x, &y), compare(&y, &x).reverse());
        assert_eq!(compare(&x, &x), std::cmp::Ordering::Equal);
    }
});
