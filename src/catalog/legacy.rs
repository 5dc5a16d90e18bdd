//! legacy: upstream's legacy ConfigMap catalog (`packages`,
//! `clusterServiceVersions`, `customResourceDefinitions` keys) converted to file-based catalog
//! (FBC) blobs.
//!
//! # The rule
//!
//! Before file-based catalogs, a `sourceType: configmap` CatalogSource pointed at a ConfigMap
//! with three YAML lists: `packages` (`packageName`, `channels[{name, currentCSV}]`,
//! `defaultChannel`), `clusterServiceVersions` (full CSV objects) and
//! `customResourceDefinitions` (full CRDs). OLM's configmap registry loaded them into its
//! sqlite schema, where a channel is the chain that starts at `currentCSV` and follows each
//! CSV's `spec.replaces`. We build the same thing as FBC so one resolver serves both formats:
//!
//! - one `olm.package` blob per package, with its `defaultChannel`;
//! - one `olm.channel` blob per channel, its entries the `replaces` chain from `currentCSV`
//!   (each entry keeps `replaces` only when the replaced CSV is in the ConfigMap, plus the
//!   CSV's `spec.skips` and its `olm.skipRange` annotation as `skipRange`); a chain stops at
//!   a CSV that is missing or already visited (a cycle is not followed forever);
//! - one `olm.bundle` blob per CSV reached from some channel, with the properties a bundle
//!   image would have given: `olm.package` (package name and `spec.version`), `olm.gvk` for
//!   each owned CRD, `olm.gvk.required` for each required CRD, and the CSV itself and every
//!   owned CRD found in `customResourceDefinitions` inlined as `olm.bundle.object`
//!   (base64 of the JSON), which is what the install planner unpacks.
//!
//! CSVs no channel reaches are left out, as upstream's loader does. Problems (a package
//! without a name, a channel whose `currentCSV` is not in the ConfigMap) are collected and
//! returned with the blobs that could be built; the CatalogSource controller reports them.
//!
//! The module is pure: [`super::load`] decodes the YAML text (through `crate::codec`) into JSON
//! values and passes them in.

use std::collections::{BTreeMap, BTreeSet};

use base64::{Engine as _, engine::general_purpose::STANDARD as BASE64};
use serde_json::{Map, Value, json};

/// The ConfigMap data key holding the package list.
pub const KEY_PACKAGES: &str = "packages";
/// The ConfigMap data key holding the CSVs.
pub const KEY_CSVS: &str = "clusterServiceVersions";
/// The ConfigMap data key holding the CRDs.
pub const KEY_CRDS: &str = "customResourceDefinitions";

/// True for the three legacy keys.
pub fn is_legacy_key(key: &str) -> bool {
    matches!(key, KEY_PACKAGES | KEY_CSVS | KEY_CRDS)
}

/// The FBC blobs of a legacy catalog plus what could not be converted.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Converted {
    /// `olm.package`, `olm.channel` and `olm.bundle` blobs, in that order per package.
    pub blobs: Vec<Value>,
    /// One plain sentence per problem.
    pub problems: Vec<String>,
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut v = value;
    for key in path {
        v = v.get(key)?;
    }
    v.as_str()
}

/// Converts the legacy lists into FBC blobs.
pub fn convert(packages: &[Value], csvs: &[Value], crds: &[Value]) -> Converted {
    let mut out = Converted::default();
    let by_name: BTreeMap<&str, &Value> = csvs
        .iter()
        .filter_map(|csv| str_at(csv, &["metadata", "name"]).map(|n| (n, csv)))
        .collect();
    let crd_by_name: BTreeMap<&str, &Value> = crds
        .iter()
        .filter_map(|crd| str_at(crd, &["metadata", "name"]).map(|n| (n, crd)))
        .collect();
    for (i, package) in packages.iter().enumerate() {
        let Some(name) = str_at(package, &["packageName"]).filter(|n| !n.is_empty()) else {
            out.problems.push(format!(
                "packages[{i}] has no packageName; add `packageName: <name>`"
            ));
            continue;
        };
        let mut blob = json!({"schema": "olm.package", "name": name});
        if let Some(default) = str_at(package, &["defaultChannel"]) {
            blob["defaultChannel"] = json!(default);
        }
        out.blobs.push(blob);
        let mut in_package: BTreeSet<&str> = BTreeSet::new();
        let channels = package
            .get("channels")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for channel in &channels {
            let Some(channel_name) = str_at(channel, &["name"]) else {
                out.problems
                    .push(format!("package {name} has a channel without a name"));
                continue;
            };
            let Some(current) = str_at(channel, &["currentCSV"]) else {
                out.problems.push(format!(
                    "channel {channel_name} of package {name} has no currentCSV"
                ));
                continue;
            };
            let mut entries = Vec::new();
            let mut visited = BTreeSet::new();
            let mut next = Some(current);
            while let Some(csv_name) = next.take() {
                if !visited.insert(csv_name) {
                    break;
                }
                let Some(csv) = by_name.get(csv_name) else {
                    if entries.is_empty() {
                        out.problems.push(format!(
                            "channel {channel_name} of package {name}: currentCSV {csv_name} is not in clusterServiceVersions"
                        ));
                    }
                    break;
                };
                in_package.insert(csv_name);
                let mut entry = Map::new();
                entry.insert("name".into(), json!(csv_name));
                let replaces = str_at(csv, &["spec", "replaces"]).filter(|r| !r.is_empty());
                if let Some(replaces) = replaces.filter(|r| by_name.contains_key(r)) {
                    entry.insert("replaces".into(), json!(replaces));
                }
                if let Some(skips) = csv.pointer("/spec/skips").and_then(Value::as_array)
                    && !skips.is_empty()
                {
                    entry.insert("skips".into(), Value::Array(skips.clone()));
                }
                if let Some(range) = str_at(csv, &["metadata", "annotations", "olm.skipRange"]) {
                    entry.insert("skipRange".into(), json!(range));
                }
                entries.push(Value::Object(entry));
                next = replaces;
            }
            out.blobs.push(json!({
                "schema": "olm.channel",
                "package": name,
                "name": channel_name,
                "entries": entries,
            }));
        }
        for csv_name in in_package {
            if let Some(csv) = by_name.get(csv_name) {
                out.blobs.push(bundle_blob(name, csv_name, csv, &crd_by_name));
            }
        }
    }
    out
}

fn gvk_of(desc: &Value) -> Option<Value> {
    let name = str_at(desc, &["name"])?;
    let group = name.split_once('.').map(|(_, g)| g)?;
    Some(json!({
        "group": group,
        "version": str_at(desc, &["version"]).unwrap_or_default(),
        "kind": str_at(desc, &["kind"]).unwrap_or_default(),
    }))
}

fn bundle_blob(package: &str, name: &str, csv: &Value, crds: &BTreeMap<&str, &Value>) -> Value {
    let version = str_at(csv, &["spec", "version"]).unwrap_or("0.0.0");
    let mut properties = vec![json!({
        "type": "olm.package",
        "value": {"packageName": package, "version": version},
    })];
    let owned = csv
        .pointer("/spec/customresourcedefinitions/owned")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let required = csv
        .pointer("/spec/customresourcedefinitions/required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for desc in &owned {
        if let Some(gvk) = gvk_of(desc) {
            properties.push(json!({"type": "olm.gvk", "value": gvk}));
        }
    }
    for desc in &required {
        if let Some(gvk) = gvk_of(desc) {
            properties.push(json!({"type": "olm.gvk.required", "value": gvk}));
        }
    }
    let mut inlined: BTreeSet<&str> = BTreeSet::new();
    for desc in &owned {
        if let Some(crd_name) = str_at(desc, &["name"])
            && inlined.insert(crd_name)
            && let Some(crd) = crds.get(crd_name)
        {
            properties.push(bundle_object(crd));
        }
    }
    properties.push(bundle_object(csv));
    json!({
        "schema": "olm.bundle",
        "name": name,
        "package": package,
        "image": "",
        "properties": properties,
    })
}

/// An `olm.bundle.object` property inlining `object` (base64 of its JSON).
pub fn bundle_object(object: &Value) -> Value {
    let text = serde_json::to_string(object).unwrap_or_default();
    json!({"type": "olm.bundle.object", "value": {"data": BASE64.encode(text.as_bytes())}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(name: &str, version: &str, replaces: Option<&str>) -> Value {
        let mut v = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": name},
            "spec": {
                "version": version,
                "customresourcedefinitions": {
                    "owned": [{"name": "redisclusters.cache.example.com", "version": "v1", "kind": "RedisCluster"}],
                    "required": [{"name": "certs.pki.example.com", "version": "v1", "kind": "Cert"}],
                },
            },
        });
        if let Some(r) = replaces {
            v["spec"]["replaces"] = json!(r);
        }
        v
    }

    fn packages() -> Vec<Value> {
        vec![json!({
            "packageName": "redis-operator",
            "defaultChannel": "stable",
            "channels": [{"name": "stable", "currentCSV": "redis-operator.v0.3.0"}],
        })]
    }

    #[test]
    fn a_channel_is_the_replaces_chain_from_the_current_csv() {
        let csvs = vec![
            csv("redis-operator.v0.1.0", "0.1.0", None),
            csv("redis-operator.v0.2.0", "0.2.0", Some("redis-operator.v0.1.0")),
            csv("redis-operator.v0.3.0", "0.3.0", Some("redis-operator.v0.2.0")),
            csv("unrelated.v1.0.0", "1.0.0", None),
        ];
        let out = convert(&packages(), &csvs, &[]);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert_eq!(
            out.blobs[0],
            json!({"schema": "olm.package", "name": "redis-operator", "defaultChannel": "stable"})
        );
        assert_eq!(
            out.blobs[1]["entries"],
            json!([
                {"name": "redis-operator.v0.3.0", "replaces": "redis-operator.v0.2.0"},
                {"name": "redis-operator.v0.2.0", "replaces": "redis-operator.v0.1.0"},
                {"name": "redis-operator.v0.1.0"},
            ])
        );
        let bundles: Vec<&str> = out.blobs[2..].iter().filter_map(|b| b["name"].as_str()).collect();
        assert_eq!(
            bundles,
            [
                "redis-operator.v0.1.0",
                "redis-operator.v0.2.0",
                "redis-operator.v0.3.0"
            ]
        );
    }

    #[test]
    fn bundles_carry_package_gvk_and_inlined_objects() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "redisclusters.cache.example.com"}});
        let csvs = vec![csv("redis-operator.v0.3.0", "0.3.0", None)];
        let out = convert(&packages(), &csvs, std::slice::from_ref(&crd));
        let bundle = &out.blobs[2];
        let types: Vec<&str> = bundle["properties"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["type"].as_str())
            .collect();
        assert_eq!(
            types,
            [
                "olm.package",
                "olm.gvk",
                "olm.gvk.required",
                "olm.bundle.object",
                "olm.bundle.object"
            ]
        );
        assert_eq!(
            bundle["properties"][1]["value"],
            json!({"group": "cache.example.com", "version": "v1", "kind": "RedisCluster"})
        );
        assert_eq!(
            bundle["properties"][3]["value"]["data"],
            json!(BASE64.encode(serde_json::to_string(&crd).unwrap().as_bytes()))
        );
    }

    #[test]
    fn skips_and_the_skip_range_annotation_become_entry_fields() {
        let mut head = csv("redis-operator.v0.3.0", "0.3.0", None);
        head["spec"]["skips"] = json!(["redis-operator.v0.2.0"]);
        head["metadata"]["annotations"] = json!({"olm.skipRange": "<0.3.0"});
        let out = convert(&packages(), &[head], &[]);
        assert_eq!(
            out.blobs[1]["entries"][0],
            json!({"name": "redis-operator.v0.3.0", "skips": ["redis-operator.v0.2.0"], "skipRange": "<0.3.0"})
        );
    }

    #[test]
    fn a_missing_current_csv_and_a_nameless_package_are_reported() {
        let packages = vec![
            json!({"channels": []}),
            json!({"packageName": "p", "channels": [{"name": "alpha", "currentCSV": "p.v1"}]}),
        ];
        let out = convert(&packages, &[], &[]);
        assert_eq!(out.problems.len(), 2, "{:?}", out.problems);
        assert!(out.problems[0].contains("packageName"));
        assert!(out.problems[1].contains("p.v1 is not in clusterServiceVersions"));
    }

    #[test]
    fn a_replaces_cycle_is_not_followed_forever() {
        let csvs = vec![
            csv("redis-operator.v0.3.0", "0.3.0", Some("redis-operator.v0.2.0")),
            csv("redis-operator.v0.2.0", "0.2.0", Some("redis-operator.v0.3.0")),
        ];
        let out = convert(&packages(), &csvs, &[]);
        assert_eq!(out.blobs[1]["entries"].as_array().unwrap().len(), 2);
    }
}
