//! The catalog loader's two paths agree: the fast path (blobs decoded straight from the text) and
//! the precise one (documents as JSON values, then blobs) read any text into the same catalog with
//! the same problems, with the fast YAML decoder and with serde-saphyr alone; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_rs::{catalog::declcfg::DeclarativeConfig, codec::YamlDecoder};

fuzz_target!(|text: &str| {
    let messages = |problems: Vec<olm_rs::catalog::declcfg::DecodeError>| -> Vec<String> {
        problems.iter().map(ToString::to_string).collect()
    };
    let mut fast = DeclarativeConfig::default();
    let fast_problems = messages(fast.decode_str_with(YamlDecoder::Fast, "f.yaml", text));
    let mut precise = DeclarativeConfig::default();
    let precise_problems = messages(precise.decode_str_precise(YamlDecoder::Fast, "f.yaml", text));
    assert_eq!(fast, precise, "fast and precise paths read different catalogs:\n{text}");
    assert_eq!(fast_problems, precise_problems, "for:\n{text}");
    let (reference, reference_problems) =
        DeclarativeConfig::from_str_with_problems_using(YamlDecoder::Reference, "f.yaml", text);
    if fast_problems.is_empty() && reference_problems.is_empty() {
        assert_eq!(fast, reference, "the YAML decoders read different catalogs:\n{text}");
    }
});
