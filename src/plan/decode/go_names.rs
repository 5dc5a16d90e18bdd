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
//! Which names are fields comes from the types' JSON schemas (schemars, the same schemas the CRDs
//! are generated from): `properties` are struct fields, followed through `$ref`, `anyOf`,
//! `oneOf`, `allOf`, `items` and `additionalProperties`. Map keys (`additionalProperties`) and
//! free-form JSON are never renamed, as Go folds struct fields only.
//!
//! Only that structure is kept, and it is generated ahead of time into `go_names.json` (a test
//! checks it against the types; `OLMRS_UPDATE_GO_NAMES=1 cargo test --lib go_names` rewrites
//! it): generating the schemas in the controller cost 8 MiB of resident memory, most of it the
//! code and descriptions of k8s-openapi's schemas, for about 60 KB of structure.
//!
//! Where two members fill one field (`nativeAPIs` and `nativeApis` both present), Go decodes both
//! into it in document order: the later one wins, and a later object is decoded into the struct
//! the earlier one filled. Here too: a later scalar or list replaces, a later object is merged
//! member by member into the earlier.
//!
//! Written here because no crate matches names against a schema; the folding is Unicode simple
//! case folding, as Go's `bytes.EqualFold` (`K` KELVIN SIGN folds to `k`, `ſ` to `s`).

use serde_json::{Map, Value};

/// The kinds [`GoNames`] knows, by the name [`GoNames::rename`] takes (checked against
/// `go_names.json` by its test).
#[cfg(test)]
pub const KINDS: [&str; 11] = [
    "ClusterServiceVersion",
    "ObjectMeta",
    "ServiceAccount",
    "Service",
    "ConfigMap",
    "Secret",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
];

/// The structure of the kinds' schemas: `{"kinds": {kind: schema}, "$defs": {...}}`.
const EMBEDDED: &str = include_str!("go_names.json");

/// How deep `$ref` / `anyOf` chains are followed for one value: a guard, should a schema ever
/// refer to itself without nesting a value.
const MAX_INDIRECTION: usize = 16;

/// The field names of the kinds bundle manifests are decoded into, from their JSON schemas.
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
    /// The structure generated into `go_names.json`. A file that does not parse (which its test
    /// rules out) renames nothing, and says so in the log.
    pub fn embedded() -> Self {
        let root = serde_json::from_str(EMBEDDED).unwrap_or_else(|e| {
            tracing::error!(error = %e, "go_names.json does not parse: member names are matched exactly");
            Value::Null
        });
        Self { root }
    }

    /// Renames every member of `value`, an object of `kind`, that Go would decode into a field
    /// under another name. `kind` is `ClusterServiceVersion`, `ObjectMeta`, or a kind
    /// [`super::object`] decodes into a type; any other renames nothing.
    pub fn rename(&self, kind: &str, value: &mut Value) {
        if let Some(schema) = self.root.get("kinds").and_then(|k| k.get(kind)) {
            self.walk(value, schema);
        }
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
/// 220 KB of the CSV's schema) is dropped.
#[cfg(test)]
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
#[cfg(test)]
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
    use k8s_openapi::{
        api::{
            core::v1::{ConfigMap, Secret, Service, ServiceAccount},
            rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding},
        },
        apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        apimachinery::pkg::apis::meta::v1::ObjectMeta,
    };
    use schemars::SchemaGenerator;
    use serde_json::json;

    use super::*;
    use crate::api::v1alpha1::ClusterServiceVersion;

    /// [`KINDS`]' structure, generated from the types with schemars (one generator: shared
    /// definitions).
    fn generate() -> Value {
        let mut generator = SchemaGenerator::default();
        let mut kinds: Vec<(&str, Value)> = vec![
            (
                "ClusterServiceVersion",
                generator.subschema_for::<ClusterServiceVersion>().to_value(),
            ),
            ("ObjectMeta", generator.subschema_for::<ObjectMeta>().to_value()),
            (
                "ServiceAccount",
                generator.subschema_for::<ServiceAccount>().to_value(),
            ),
            ("Service", generator.subschema_for::<Service>().to_value()),
            ("ConfigMap", generator.subschema_for::<ConfigMap>().to_value()),
            ("Secret", generator.subschema_for::<Secret>().to_value()),
            ("Role", generator.subschema_for::<Role>().to_value()),
            ("RoleBinding", generator.subschema_for::<RoleBinding>().to_value()),
            ("ClusterRole", generator.subschema_for::<ClusterRole>().to_value()),
            (
                "ClusterRoleBinding",
                generator.subschema_for::<ClusterRoleBinding>().to_value(),
            ),
            (
                "CustomResourceDefinition",
                generator.subschema_for::<CustomResourceDefinition>().to_value(),
            ),
        ];
        assert_eq!(kinds.iter().map(|(k, _)| *k).collect::<Vec<_>>(), KINDS);
        kinds.iter_mut().for_each(|(_, s)| keep_structure(s));
        let mut defs = Value::Object(generator.take_definitions(true));
        if let Value::Object(named) = &mut defs {
            named.values_mut().for_each(keep_structure);
        }
        let kinds: Map<String, Value> = kinds.into_iter().map(|(k, s)| (k.to_owned(), s)).collect();
        json!({"kinds": kinds, "$defs": defs})
    }

    fn names() -> GoNames {
        GoNames::embedded()
    }

    #[test]
    fn the_embedded_structure_matches_the_types() {
        let generated = generate();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/plan/decode/go_names.json");
        if std::env::var_os("OLMRS_UPDATE_GO_NAMES").is_some() {
            std::fs::write(path, serde_json::to_string_pretty(&generated).unwrap() + "\n").unwrap();
        }
        let embedded: Value = serde_json::from_str(EMBEDDED).expect("go_names.json parses");
        assert!(
            embedded == generated,
            "src/plan/decode/go_names.json is stale: run OLMRS_UPDATE_GO_NAMES=1 cargo test --lib go_names"
        );
        assert!(!EMBEDDED.contains("\"description\":\""), "descriptions dropped");
        assert!(
            embedded
                .pointer("/$defs/ClusterServiceVersionSpec/properties/nativeAPIs")
                .is_some()
        );
    }

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
        names().rename("ClusterServiceVersion", &mut csv);
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
        names().rename("ClusterServiceVersion", &mut csv);
        names().rename("NotAKind", &mut csv);
        assert_eq!(csv, before);
    }

    #[test]
    fn the_exact_name_wins_and_a_later_member_replaces_or_merges() {
        let names = names();
        let mut role =
            json!({"Rules": [{"verbs": ["get"]}], "rules": [{"verbs": ["list"]}], "Metadata": {"Name": "r"}});
        names.rename("Role", &mut role);
        assert_eq!(
            role,
            json!({"rules": [{"verbs": ["list"]}], "metadata": {"name": "r"}})
        );

        let mut meta = json!({
            "labels": {"a": "1"},
            "Labels": {"b": "2"},
            "OwnerReferences": [{"Kind": "X"}]
        });
        names.rename("ObjectMeta", &mut meta);
        assert_eq!(
            meta,
            json!({"labels": {"a": "1", "b": "2"}, "ownerReferences": [{"kind": "X"}]})
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
