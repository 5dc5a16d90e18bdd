//! YAML decoding: whatever the fast decoder accepts, serde-saphyr (as configured in `block_yaml::reference`)
//! reads as the same documents; the fast decoder never panics.
#![no_main]

use block_yaml::json::JsonDocument;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(fast) = block_yaml::decode::<JsonDocument>(text) {
        let (reference, error) = block_yaml::reference::documents::<JsonDocument>(text);
        let fast: Vec<_> = fast.into_iter().map(|(_, d)| d.0).collect();
        let reference: Vec<_> = reference.into_iter().map(|d| d.0).filter(|v| !v.is_null()).collect();
        assert!(error.is_none(), "fast accepted what serde-saphyr refuses: {error:?}\n{text}");
        assert_eq!(fast, reference, "for:\n{text}");
    }
});
