//! Any JSON value written by `block_yaml::write` reads back unchanged with serde-saphyr.
#![no_main]

use block_yaml::json::JsonDocument;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let yaml = block_yaml::write(&value);
    let (docs, error) = block_yaml::reference::documents::<JsonDocument>(&yaml);
    assert!(error.is_none(), "{error:?} for:\n{yaml}");
    let back = docs.into_iter().next().map_or(serde_json::Value::Null, |d| d.0);
    assert_eq!(back, value, "for:\n{yaml}");
});
