//! interim: a pure stand-in for the resolver (`resolve` branch), used until it lands, and
//! the unpacking of a bundle's inlined objects. The resolver stand-in implements only the
//! common path: channel or default channel, `startingCSV` or the channel head, one upgrade hop
//! along `replaces`/`skips`/`skipRange` (newest candidate first). No dependency resolution.

use std::collections::BTreeSet;

use serde_json::Value;

/// Standard base64 decoding (padding optional); `None` on an invalid character.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

fn schema<'a>(blobs: &'a [Value], schema: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    blobs.iter().filter(move |b| b["schema"] == schema)
}

/// The channel to use and its entries, or a plain-language failure.
pub fn channel<'a>(
    blobs: &'a [Value],
    package: &str,
    wanted: Option<&str>,
    catalog: &str,
) -> Result<(String, Vec<&'a Value>), String> {
    let Some(pkg) = schema(blobs, "olm.package").find(|p| p["name"] == package) else {
        let names: Vec<&str> = schema(blobs, "olm.package")
            .filter_map(|p| p["name"].as_str())
            .collect();
        return Err(format!(
            "no package '{package}' in catalog {catalog}; packages: {}",
            names.join(", ")
        ));
    };
    let channels: Vec<&Value> = schema(blobs, "olm.channel")
        .filter(|c| c["package"] == package)
        .collect();
    let default = pkg["defaultChannel"].as_str();
    let name = match wanted.or(default) {
        Some(n) => n.to_owned(),
        None => {
            return Err(format!(
                "package {package} has no default channel; set spec.channel"
            ));
        }
    };
    match channels.iter().find(|c| c["name"] == name.as_str()) {
        Some(c) => Ok((
            name,
            c["entries"]
                .as_array()
                .map(|e| e.iter().collect())
                .unwrap_or_default(),
        )),
        None => {
            let mut names: Vec<String> = channels
                .iter()
                .filter_map(|c| c["name"].as_str())
                .map(|n| {
                    if Some(n) == default {
                        format!("{n} (default)")
                    } else {
                        n.to_owned()
                    }
                })
                .collect();
            names.sort();
            Err(format!(
                "package {package} has no channel '{name}'; channels: {}",
                names.join(", ")
            ))
        }
    }
}

/// The channel head: the entry nothing else replaces or skips.
pub fn head<'a>(entries: &[&'a Value]) -> Option<&'a str> {
    let replaced: BTreeSet<&str> = entries
        .iter()
        .flat_map(|e| {
            e["replaces"].as_str().into_iter().chain(
                e["skips"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str),
            )
        })
        .collect();
    entries
        .iter()
        .filter_map(|e| e["name"].as_str())
        .find(|n| !replaced.contains(n))
}

/// The version of a bundle, from its `olm.package` property.
pub fn bundle_version(blobs: &[Value], package: &str, bundle: &str) -> Option<semver::Version> {
    schema(blobs, "olm.bundle")
        .filter(|b| b["package"] == package && b["name"] == bundle)
        .flat_map(|b| b["properties"].as_array().cloned().unwrap_or_default())
        .find(|p| p["type"] == "olm.package")
        .and_then(|p| p["value"]["version"].as_str().map(str::to_owned))
        .and_then(|v| crate::version_range::parse_version_tolerant(&v).ok())
}

/// The entry that upgrades `installed` directly: it replaces or skips it, or its `skipRange`
/// contains the installed version. With several candidates, the newest (by bundle version)
/// wins, as upstream's "nearest the head".
pub fn next_hop<'a>(
    blobs: &[Value],
    package: &str,
    entries: &[&'a Value],
    installed: &str,
) -> Option<&'a str> {
    let installed_version = bundle_version(blobs, package, installed);
    entries
        .iter()
        .filter(|e| e["name"] != installed)
        .filter(|e| {
            e["replaces"] == installed
                || e["skips"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|x| x == installed))
                || match (e["skipRange"].as_str(), &installed_version) {
                    (Some(range), Some(v)) => {
                        crate::version_range::Range::parse(range).is_ok_and(|r| r.contains(v))
                    }
                    _ => false,
                }
        })
        .filter_map(|e| e["name"].as_str())
        .max_by_key(|name| bundle_version(blobs, package, name))
}

/// The objects inlined in a bundle (`olm.bundle.object`, base64 JSON) and all the bundle's
/// properties (for the CSV's `operatorframework.io/properties` annotation).
pub fn bundle_objects(blobs: &[Value], package: &str, bundle: &str) -> (Vec<Value>, Vec<Value>) {
    let properties: Vec<Value> = schema(blobs, "olm.bundle")
        .filter(|b| b["package"] == package && b["name"] == bundle)
        .flat_map(|b| b["properties"].as_array().cloned().unwrap_or_default())
        .collect();
    let objects = properties
        .iter()
        .filter(|p| p["type"] == "olm.bundle.object")
        .filter_map(|p| p["value"]["data"].as_str().and_then(base64_decode))
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect();
    let properties = properties
        .into_iter()
        .filter(|p| p["type"] != "olm.bundle.object")
        .collect();
    (objects, properties)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn catalog() -> Vec<Value> {
        vec![
            json!({"schema": "olm.package", "name": "p", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "p", "name": "stable", "entries": [
                {"name": "p.v1"}, {"name": "p.v2", "replaces": "p.v1"}, {"name": "p.v3", "replaces": "p.v2", "skips": ["p.v1"]}]}),
            json!({"schema": "olm.channel", "package": "p", "name": "alpha", "entries": [{"name": "p.v3"}]}),
        ]
    }

    #[test]
    fn the_default_channel_is_used_and_its_head_found() {
        let blobs = catalog();
        let (name, entries) = channel(&blobs, "p", None, "c").unwrap();
        assert_eq!(name, "stable");
        assert_eq!(head(&entries), Some("p.v3"));
        assert_eq!(next_hop(&blobs, "p", &entries, "p.v3"), None);
    }

    fn bundle(name: &str, version: &str) -> Value {
        json!({"schema": "olm.bundle", "package": "p", "name": name,
            "properties": [{"type": "olm.package", "value": {"packageName": "p", "version": version}}]})
    }

    #[test]
    fn the_newest_entry_replacing_skipping_or_skip_ranging_the_installed_one_wins() {
        let mut blobs = catalog();
        blobs.extend([
            bundle("p.v1", "1.0.0"),
            bundle("p.v2", "2.0.0"),
            bundle("p.v3", "3.0.0"),
        ]);
        let (_, entries) = channel(&blobs, "p", None, "c").unwrap();
        // p.v2 replaces p.v1, p.v3 skips it: p.v3 is nearer the head.
        assert_eq!(next_hop(&blobs, "p", &entries, "p.v1"), Some("p.v3"));
        assert_eq!(next_hop(&blobs, "p", &entries, "p.v2"), Some("p.v3"));
        let entries = [
            json!({"name": "p.v1"}),
            json!({"name": "p.v9", "skipRange": ">=1.0.0 <9.0.0"}),
        ];
        blobs.push(bundle("p.v9", "9.0.0"));
        let refs: Vec<&Value> = entries.iter().collect();
        assert_eq!(next_hop(&blobs, "p", &refs, "p.v1"), Some("p.v9"));
    }

    #[test]
    fn unknown_packages_and_channels_name_what_exists() {
        let blobs = catalog();
        let err = channel(&blobs, "p", Some("stabel"), "c").unwrap_err();
        assert_eq!(
            err,
            "package p has no channel 'stabel'; channels: alpha, stable (default)"
        );
        let err = channel(&blobs, "q", None, "c").unwrap_err();
        assert!(
            err.contains("no package 'q'") && err.contains("packages: p"),
            "{err}"
        );
    }

    #[test]
    fn base64_round_trips_with_the_encoder() {
        let text = br#"{"kind":"ClusterServiceVersion"}"#;
        let encoded = crate::configmap_catalog::base64_encode(text);
        assert_eq!(base64_decode(&encoded).unwrap(), text);
    }
}
