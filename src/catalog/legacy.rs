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
//! # Which CRD document a bundle gets
//!
//! `customResourceDefinitions` may hold several documents of one CRD name, one per state of the
//! CRD (upstream's e2e fixtures ship a CRD's old and new versions side by side, each owned by
//! another CSV). Upstream's loader (operator-registry's configmap loader) indexes the documents
//! by every version they define (`spec.versions[].name`, or the old `spec.version`) and gives a
//! CSV, for each owned CRD, the document defining the version its descriptor names. We do the
//! same (`CrdIndex`), keyed by the CRD name (which spells the group and plural upstream's key
//! also holds) and version; upstream's key also holds the kind, which is not compared here (a
//! descriptor whose kind differs from the CRD's still gets it, as before). The first document
//! defining a version is used for it, and a later one defining it again is reported (upstream's
//! loader fails on it, and its registry pod does not start). A descriptor whose version no
//! document defines gets the CRD's only document when there is just one (as before; upstream
//! fails), and none, reported, when several documents could be meant.
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
    let crd_index = CrdIndex::new(crds, &mut out.problems);
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
                out.blobs
                    .push(bundle_blob(name, csv_name, csv, &crd_index, &mut out.problems));
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

/// The CRD documents of `customResourceDefinitions` by name and by each version they define
/// (see the module docs).
struct CrdIndex<'a> {
    docs: &'a [Value],
    /// (name, version) → the first document defining it.
    by_version: BTreeMap<(&'a str, &'a str), usize>,
    /// name → every document of that name, in order.
    by_name: BTreeMap<&'a str, Vec<usize>>,
}

/// The versions a CRD document defines: `spec.versions[].name`, or the old `spec.version`.
fn crd_versions(crd: &Value) -> Vec<&str> {
    let listed: Vec<&str> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|versions| versions.iter().filter_map(|v| str_at(v, &["name"])).collect())
        .unwrap_or_default();
    if listed.is_empty() {
        str_at(crd, &["spec", "version"]).into_iter().collect()
    } else {
        listed
    }
}

impl<'a> CrdIndex<'a> {
    fn new(docs: &'a [Value], problems: &mut Vec<String>) -> Self {
        let mut index = CrdIndex {
            docs,
            by_version: BTreeMap::new(),
            by_name: BTreeMap::new(),
        };
        for (i, crd) in docs.iter().enumerate() {
            let Some(name) = str_at(crd, &["metadata", "name"]) else {
                continue;
            };
            index.by_name.entry(name).or_default().push(i);
            for version in crd_versions(crd) {
                match index.by_version.get(&(name, version)) {
                    Some(first) => problems.push(format!(
                        "customResourceDefinitions[{i}] defines {name} version {version} again; customResourceDefinitions[{first}] is used for it (upstream refuses such a ConfigMap); define each version of a CRD in one document"
                    )),
                    None => {
                        index.by_version.insert((name, version), i);
                    }
                }
            }
        }
        index
    }

    /// The document for an owned CRD `name` at `version`, or why there is none (`Ok(None)`: the
    /// catalog has no document of that name, which the install reports later).
    fn owned(&self, name: &str, version: &str) -> Result<Option<(usize, &'a Value)>, String> {
        if let Some(&i) = self.by_version.get(&(name, version)) {
            return Ok(Some((i, &self.docs[i])));
        }
        match self.by_name.get(name).map(Vec::as_slice) {
            None | Some([]) => Ok(None),
            Some(&[only]) => Ok(Some((only, &self.docs[only]))),
            Some(several) => Err(format!(
                "{} documents of CRD {name} in customResourceDefinitions, none defining version {version}",
                several.len()
            )),
        }
    }
}

fn bundle_blob(
    package: &str,
    name: &str,
    csv: &Value,
    crds: &CrdIndex<'_>,
    problems: &mut Vec<String>,
) -> Value {
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
    let mut inlined: BTreeSet<usize> = BTreeSet::new();
    for desc in &owned {
        let Some(crd_name) = str_at(desc, &["name"]) else {
            continue;
        };
        let version = str_at(desc, &["version"]).unwrap_or_default();
        match crds.owned(crd_name, version) {
            Ok(Some((i, crd))) => {
                if inlined.insert(i) {
                    properties.push(bundle_object(crd));
                }
            }
            Ok(None) => {}
            Err(why) => problems.push(format!(
                "CSV {name} owns {crd_name} version {version}, but there are {why}; its bundle carries no document of that CRD"
            )),
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

    fn crd(name: &str, versions: &[&str], marker: &str) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "annotations": {"marker": marker}},
            "spec": {"group": "cluster.com", "names": {"plural": "ins", "kind": "ins"},
                "versions": versions.iter().map(|v| json!({"name": v, "served": true, "storage": true})).collect::<Vec<_>>()}})
    }

    fn owning(name: &str, replaces: Option<&str>, crd_version: &str) -> Value {
        let mut v = csv(name, "0.1.0", replaces);
        v["spec"]["customresourcedefinitions"] =
            json!({"owned": [{"name": "ins.cluster.com", "version": crd_version, "kind": "ins"}]});
        v
    }

    /// The `marker` annotations of the CRD documents inlined in the bundle `name`.
    fn crd_markers(out: &Converted, name: &str) -> Vec<String> {
        let bundle = out
            .blobs
            .iter()
            .find(|b| b["schema"] == "olm.bundle" && b["name"] == name)
            .unwrap_or_else(|| panic!("no bundle {name}"));
        bundle["properties"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["type"] == "olm.bundle.object")
            .map(|p| {
                let data = BASE64.decode(p["value"]["data"].as_str().unwrap()).unwrap();
                serde_json::from_slice::<Value>(&data).unwrap()
            })
            .filter(|o| o["kind"] == "CustomResourceDefinition")
            .map(|o| {
                o["metadata"]["annotations"]["marker"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }

    fn two_channels() -> Vec<Value> {
        vec![json!({
            "packageName": "p", "defaultChannel": "stable",
            "channels": [{"name": "stable", "currentCSV": "p-stable"}, {"name": "alpha", "currentCSV": "p-alpha"}],
        })]
    }

    #[test]
    fn two_documents_of_one_crd_go_each_to_the_csv_owning_its_version() {
        // Upstream's "blocks a CRD upgrade that could cause data loss" fixture: the old and the
        // new CRD side by side, the old one listed first.
        let crds = [
            crd("ins.cluster.com", &["v1alpha2", "v2alpha1"], "old"),
            crd("ins.cluster.com", &["v1alpha3", "v2alpha2"], "new"),
        ];
        let csvs = [
            owning("p-stable", None, "v1alpha2"),
            owning("p-alpha", Some("p-stable"), "v1alpha3"),
        ];
        let out = convert(&two_channels(), &csvs, &crds);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert_eq!(crd_markers(&out, "p-stable"), ["old"]);
        assert_eq!(crd_markers(&out, "p-alpha"), ["new"]);
        // Listed the other way round, each still gets its own.
        let crds = [crds[1].clone(), crds[0].clone()];
        let out = convert(&two_channels(), &csvs, &crds);
        assert_eq!(crd_markers(&out, "p-stable"), ["old"]);
        assert_eq!(crd_markers(&out, "p-alpha"), ["new"]);
    }

    #[test]
    fn a_version_defined_twice_goes_to_the_first_document_and_is_reported() {
        let crds = [
            crd("ins.cluster.com", &["v1alpha1"], "alpha-only"),
            crd("ins.cluster.com", &["v1alpha1", "v1alpha2"], "both"),
        ];
        let csvs = [
            owning("p-stable", None, "v1alpha1"),
            owning("p-alpha", Some("p-stable"), "v1alpha2"),
        ];
        let out = convert(&two_channels(), &csvs, &crds);
        assert_eq!(crd_markers(&out, "p-stable"), ["alpha-only"]);
        assert_eq!(crd_markers(&out, "p-alpha"), ["both"]);
        assert_eq!(out.problems.len(), 1, "{:?}", out.problems);
        assert!(
            out.problems[0]
                .contains("customResourceDefinitions[1] defines ins.cluster.com version v1alpha1 again"),
            "{:?}",
            out.problems
        );
    }

    #[test]
    fn a_descriptor_naming_no_defined_version_gets_the_only_document_or_none_of_several() {
        let only = [crd("ins.cluster.com", &["v1"], "only")];
        let csvs = [
            owning("p-stable", None, "v9"),
            owning("p-alpha", Some("p-stable"), "v1"),
        ];
        let out = convert(&two_channels(), &csvs, &only);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert_eq!(crd_markers(&out, "p-stable"), ["only"]);

        let several = [
            crd("ins.cluster.com", &["v1"], "a"),
            crd("ins.cluster.com", &["v2"], "b"),
        ];
        let out = convert(&two_channels(), &csvs, &several);
        assert!(crd_markers(&out, "p-stable").is_empty());
        assert_eq!(crd_markers(&out, "p-alpha"), ["a"]);
        assert_eq!(out.problems.len(), 1, "{:?}", out.problems);
        assert!(
            out.problems[0].contains("CSV p-stable owns ins.cluster.com version v9"),
            "{:?}",
            out.problems
        );
    }

    #[test]
    fn an_old_style_crd_with_spec_version_is_indexed_by_it() {
        let mut old = crd("ins.cluster.com", &[], "old-style");
        old["spec"]["version"] = json!("v1beta1");
        let newer = crd("ins.cluster.com", &["v1"], "new");
        let csvs = [
            owning("p-stable", None, "v1beta1"),
            owning("p-alpha", Some("p-stable"), "v1"),
        ];
        let out = convert(&two_channels(), &csvs, &[newer, old]);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        assert_eq!(crd_markers(&out, "p-stable"), ["old-style"]);
        assert_eq!(crd_markers(&out, "p-alpha"), ["new"]);
    }
}
