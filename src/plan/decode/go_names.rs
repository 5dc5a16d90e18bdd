//! go_names: the member names of a manifest as Go's `encoding/json` matches them to struct fields.
//!
//! # The rule this module enforces
//!
//! Go matches an object member to a struct field by its exact JSON name first and, failing that,
//! by a case-insensitive match: a CSV's `nativeApis` fills `nativeAPIs`, a Deployment's
//! `ServiceAccountName` fills `serviceAccountName`. Upstream decodes every bundle manifest it
//! applies with `encoding/json` (the CSV in `resolver/steps.go`, the typed kinds in
//! `catalog/operator.go`, CRDs through `yaml.NewYAMLOrJSONDecoder`), so such a member takes
//! effect there. serde matches names exactly and would drop it. [`GoNames::rename`] renames each
//! such member to the field it fills, before the typed decoding of [`super`].
//!
//! Which names are fields comes from the type's JSON schema (schemars, the same schema the CRDs
//! are generated from): `properties` are struct fields, followed through `$ref`, `anyOf`,
//! `oneOf`, `allOf`, `items` and `additionalProperties`. Map keys (`additionalProperties`) and
//! free-form JSON are never renamed, as Go folds struct fields only.
//!
//! Where two members fill one field (`nativeAPIs` and `nativeApis` both present), Go decodes both
//! into it in document order: the later one wins, and a later object is decoded into the struct
//! the earlier one filled. Here too: a later scalar or list replaces, a later object is merged
//! member by member into the earlier.
//!
//! Written here because no crate matches names against a schema; the folding is Unicode simple
//! case folding, as Go's `bytes.EqualFold` (`K` KELVIN SIGN folds to `k`, `ſ` to `s`).

use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value};

/// How deep `$ref` / `anyOf` chains are followed for one value; real schemas need 3.
const MAX_INDIRECTION: usize = 16;

/// The field names of one type, from its JSON schema.
#[derive(Debug, Clone)]
pub struct GoNames {
    root: Value,
}

/// What a value's schema allows, with every `$ref` and union followed.
#[derive(Default)]
struct Shape<'a> {
    /// Struct fields: their names and schemas (every branch of a union).
    fields: Vec<&'a Map<String, Value>>,
    /// The schema of a map's values.
    values: Option<&'a Value>,
    /// The schema of a list's items.
    items: Option<&'a Value>,
}

impl GoNames {
    /// The names of `T`'s fields, as its `JsonSchema` (and so its serde attributes) declares them.
    pub fn of<T: JsonSchema>() -> Self {
        let mut root = SchemaGenerator::default().into_root_schema_for::<T>().to_value();
        keep_structure(&mut root);
        Self { root }
    }

    /// Renames every member of `value` that Go would decode into a field under another name.
    pub fn rename(&self, value: &mut Value) {
        self.walk(value, &self.root);
    }

    fn walk(&self, value: &mut Value, schema: &Value) {
        let mut shape = Shape::default();
        self.collect(schema, &mut shape, 0);
        match value {
            Value::Object(map) if !shape.fields.is_empty() => {
                let members = std::mem::take(map);
                for (key, mut member) in members {
                    let Some((name, field)) = field_for(&shape.fields, &key) else {
                        // Not a field: the typed decoding drops it.
                        map.insert(key, member);
                        continue;
                    };
                    self.walk(&mut member, field);
                    match map.get_mut(name) {
                        Some(earlier) => merge(earlier, member),
                        None => {
                            map.insert(name.to_owned(), member);
                        }
                    }
                }
            }
            Value::Object(map) => {
                if let Some(values) = shape.values {
                    map.values_mut().for_each(|v| self.walk(v, values));
                }
            }
            Value::Array(list) => {
                if let Some(items) = shape.items {
                    list.iter_mut().for_each(|v| self.walk(v, items));
                }
            }
            _ => {}
        }
    }

    fn collect<'a>(&'a self, schema: &'a Value, shape: &mut Shape<'a>, depth: usize) {
        let Some(schema) = schema.as_object() else {
            return;
        };
        if depth > MAX_INDIRECTION {
            return;
        }
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| self.root.pointer(pointer))
        {
            self.collect(target, shape, depth + 1);
        }
        if let Some(fields) = schema.get("properties").and_then(Value::as_object) {
            shape.fields.push(fields);
        }
        if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
            shape.values.get_or_insert(values);
        }
        if let Some(items) = schema.get("items").filter(|v| v.is_object()) {
            shape.items.get_or_insert(items);
        }
        for union in ["anyOf", "oneOf", "allOf"] {
            for branch in schema.get(union).and_then(Value::as_array).into_iter().flatten() {
                self.collect(branch, shape, depth + 1);
            }
        }
    }
}

/// The schema keywords that say which members are fields; the rest (descriptions above all:
/// 220 KB of the CSV's schema) is dropped, as it is kept for the life of the process.
const STRUCTURE: [&str; 8] = [
    "$ref",
    "$defs",
    "properties",
    "additionalProperties",
    "items",
    "anyOf",
    "oneOf",
    "allOf",
];

/// Reduces a schema to its [`STRUCTURE`], at every depth.
fn keep_structure(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    map.retain(|k, _| STRUCTURE.contains(&k.as_str()));
    for (keyword, value) in map.iter_mut() {
        match (keyword.as_str(), value) {
            ("properties" | "$defs", Value::Object(named)) => named.values_mut().for_each(keep_structure),
            ("anyOf" | "oneOf" | "allOf", Value::Array(branches)) => {
                branches.iter_mut().for_each(keep_structure)
            }
            (_, value) => keep_structure(value),
        }
    }
}

/// The field a member named `key` fills: the exact name first, then a case-insensitive match.
fn field_for<'a>(fields: &[&'a Map<String, Value>], key: &str) -> Option<(&'a str, &'a Value)> {
    fields
        .iter()
        .find_map(|f| f.get_key_value(key))
        .or_else(|| {
            fields
                .iter()
                .flat_map(|f| f.iter())
                .find(|(name, _)| equal_fold(name, key))
        })
        .map(|(name, schema)| (name.as_str(), schema))
}

/// Go's `bytes.EqualFold` for field names: equal under Unicode simple case folding.
fn equal_fold(a: &str, b: &str) -> bool {
    fn fold(c: char) -> char {
        match c {
            'ſ' => 's',
            _ => {
                let mut lower = c.to_lowercase();
                match (lower.next(), lower.next()) {
                    (Some(l), None) => l,
                    _ => c,
                }
            }
        }
    }
    a.chars().map(fold).eq(b.chars().map(fold))
}

/// A second member filling the same field: objects merge member by member, anything else replaces.
fn merge(earlier: &mut Value, later: Value) {
    match (earlier, later) {
        (Value::Object(earlier), Value::Object(later)) => {
            for (k, v) in later {
                match earlier.get_mut(&k) {
                    Some(e) => merge(e, v),
                    None => {
                        earlier.insert(k, v);
                    }
                }
            }
        }
        (earlier, later) => *earlier = later,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use serde_json::json;

    use super::*;
    use crate::api::v1alpha1::ClusterServiceVersion;

    #[test]
    fn a_member_named_in_another_case_fills_its_field() {
        let mut csv = json!({"spec": {
            "nativeApis": [{"Group": "", "version": "v1", "KIND": "Pod"}],
            "DisplayName": "Op",
            "install": {"strategy": "deployment", "spec": {"deployments": [{
                "name": "op",
                "spec": {"template": {"spec": {"ServiceAccountName": "op", "nodeSELECTOR": {"Disk": "ssd"}}}}
            }]}}
        }});
        GoNames::of::<ClusterServiceVersion>().rename(&mut csv);
        let spec = &csv["spec"];
        assert_eq!(
            spec["nativeAPIs"],
            json!([{"group": "", "version": "v1", "kind": "Pod"}])
        );
        assert_eq!(spec["displayName"], "Op");
        let pod = &spec["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], "op");
        assert_eq!(
            pod["nodeSelector"],
            json!({"Disk": "ssd"}),
            "a map's keys are never renamed"
        );
    }

    #[test]
    fn unknown_members_and_free_form_json_are_left_alone() {
        let mut csv = json!({"spec": {
            "skipRange": "<1.0.0",
            "customresourcedefinitions": {"owned": [{
                "name": "w.example.com", "version": "v1", "kind": "W",
                "specDescriptors": [{"path": "size", "value": {"Min": 1}}]
            }]}
        }});
        let before = csv.clone();
        GoNames::of::<ClusterServiceVersion>().rename(&mut csv);
        assert_eq!(csv, before);
    }

    #[test]
    fn the_exact_name_wins_and_a_later_member_replaces_or_merges() {
        let names = GoNames::of::<DeploymentSpec>();
        let mut spec = json!({"Replicas": 2, "replicas": 3, "Paused": true});
        names.rename(&mut spec);
        assert_eq!(spec, json!({"replicas": 3, "paused": true}));

        let mut spec = json!({
            "selector": {"matchLabels": {"a": "1"}},
            "Selector": {"MatchExpressions": [], "matchLabels": {"b": "2"}}
        });
        names.rename(&mut spec);
        assert_eq!(
            spec,
            json!({"selector": {"matchLabels": {"a": "1", "b": "2"}, "matchExpressions": []}})
        );
    }

    #[test]
    fn only_the_structure_of_the_schema_is_kept() {
        let names = GoNames::of::<ClusterServiceVersion>();
        let text = names.root.to_string();
        assert!(!text.contains("\"description\":\""), "descriptions dropped");
        assert!(text.len() < 60_000, "{} bytes kept", text.len());
        assert!(
            names
                .root
                .pointer("/$defs/ClusterServiceVersionSpec/properties/nativeAPIs")
                .is_some()
        );
    }

    #[test]
    fn folding_is_unicode_simple_folding_as_go() {
        assert!(equal_fold("kind", "\u{212A}ind"));
        assert!(equal_fold("skips", "\u{17F}kips"));
        assert!(equal_fold("nativeAPIs", "NATIVEapis"));
        assert!(!equal_fold("label", "labels"));
    }
}
