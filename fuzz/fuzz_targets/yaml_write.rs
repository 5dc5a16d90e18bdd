//! Any JSON value written by `block_yaml::write` reads back unchanged with serde-saphyr.
//!
//! Values nested deeper than the reference decoder's depth budget (serde-saphyr refuses more than
//! 64 levels: "budget breached: Depth") are left out: the oracle cannot read them, whatever the
//! writer does (the first crash this target found; `write::tests` keeps it as a regression test).
#![no_main]

use block_yaml::json::JsonDocument;
use libfuzzer_sys::fuzz_target;

/// serde-saphyr's default nesting budget.
const REFERENCE_MAX_DEPTH: usize = 64;

fn depth(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|text: &str| {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    if depth(&value) >= REFERENCE_MAX_DEPTH {
        return;
    }
    let yaml = block_yaml::write(&value);
    let (docs, error) = block_yaml::reference::documents::<JsonDocument>(&yaml);
    assert!(error.is_none(), "{error:?} for:\n{yaml}");
    let back = docs.into_iter().next().map_or(serde_json::Value::Null, |d| d.0);
    assert_eq!(back, value, "for:\n{yaml}");
});
