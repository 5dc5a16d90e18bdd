//! interim: pure stand-ins for the resolver (`resolve` branch) and the step planner
//! (`plan::steps` in the `core` branch), used until those land. They implement only the
//! common path: channel or default channel, `startingCSV` or the channel head, one upgrade hop
//! along `replaces`/`skips`, and the steps of one bundle (CRDs, the CSV, then generated
//! ServiceAccounts and RBAC). No dependency resolution and no skipRange here.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::api::v1alpha1::{Step, StepResource, StepStatus};

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

/// The entry that upgrades `installed` directly (replaces or skips it).
pub fn next_hop<'a>(entries: &[&'a Value], installed: &str) -> Option<&'a str> {
    entries
        .iter()
        .find(|e| {
            e["replaces"] == installed
                || e["skips"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|x| x == installed))
        })
        .and_then(|e| e["name"].as_str())
}

/// The objects inlined in a bundle (`olm.bundle.object`).
pub fn bundle_objects(blobs: &[Value], package: &str, bundle: &str) -> Vec<Value> {
    schema(blobs, "olm.bundle")
        .filter(|b| b["package"] == package && b["name"] == bundle)
        .flat_map(|b| b["properties"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "olm.bundle.object")
        .filter_map(|p| p["value"]["data"].as_str().and_then(base64_decode))
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect()
}

fn step(csv: &str, catalog: (&str, &str), object: &Value) -> Step {
    let api_version = object["apiVersion"].as_str().unwrap_or("v1");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    Step {
        resolving: csv.to_owned(),
        resource: StepResource {
            source_name: catalog.0.to_owned(),
            source_namespace: catalog.1.to_owned(),
            group: group.to_owned(),
            version: version.to_owned(),
            kind: object["kind"].as_str().unwrap_or_default().to_owned(),
            name: object["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
            manifest: serde_json::to_string(object).ok(),
        },
        optional: false,
        status: StepStatus::Unknown,
    }
}

/// The steps of one bundle in apply order: CRDs, ServiceAccounts and RBAC for the CSV's
/// permissions, the CSV, then the other objects.
pub fn steps(
    csv_name: &str,
    replaces: Option<&str>,
    catalog: (&str, &str),
    namespace: &str,
    objects: &[Value],
) -> Vec<Step> {
    let mut out = Vec::new();
    let csv = objects.iter().find(|o| o["kind"] == "ClusterServiceVersion");
    for o in objects.iter().filter(|o| o["kind"] == "CustomResourceDefinition") {
        out.push(step(csv_name, catalog, o));
    }
    if let Some(csv) = csv {
        let spec = &csv["spec"]["install"]["spec"];
        let mut sas = BTreeSet::new();
        for (i, perm) in spec["permissions"].as_array().into_iter().flatten().enumerate() {
            let sa = perm["serviceAccountName"].as_str().unwrap_or("default");
            let role = format!("{csv_name}-{sa}-{i}");
            if sa != "default" && sas.insert(sa.to_owned()) {
                out.push(step(
                    csv_name,
                    catalog,
                    &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}}),
                ));
            }
            out.push(step(
                csv_name,
                catalog,
                &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": role}, "rules": perm["rules"]}),
            ));
            out.push(step(
                csv_name,
                catalog,
                &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": sa}]}),
            ));
        }
        for (i, perm) in spec["clusterPermissions"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let sa = perm["serviceAccountName"].as_str().unwrap_or("default");
            let role = format!("{csv_name}-cluster-{i}");
            if sa != "default" && sas.insert(sa.to_owned()) {
                out.push(step(
                    csv_name,
                    catalog,
                    &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}}),
                ));
            }
            out.push(step(
                csv_name,
                catalog,
                &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": role}, "rules": perm["rules"]}),
            ));
            out.push(step(
                csv_name,
                catalog,
                &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]}),
            ));
        }
        let mut csv = csv.clone();
        match replaces {
            Some(r) => csv["spec"]["replaces"] = json!(r),
            None => {
                if let Some(spec) = csv["spec"].as_object_mut() {
                    spec.remove("replaces");
                }
            }
        }
        // The CSV goes first among the namespaced objects so they can be owned by it.
        let at = out
            .iter()
            .position(|s| s.resource.kind != "CustomResourceDefinition")
            .unwrap_or(out.len());
        out.insert(at, step(csv_name, catalog, &csv));
    }
    for o in objects
        .iter()
        .filter(|o| o["kind"] != "CustomResourceDefinition" && o["kind"] != "ClusterServiceVersion")
    {
        out.push(step(csv_name, catalog, o));
    }
    out
}

#[cfg(test)]
mod tests {
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
        assert_eq!(next_hop(&entries, "p.v1"), Some("p.v2"));
        assert_eq!(next_hop(&entries, "p.v3"), None);
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

    #[test]
    fn steps_put_crds_first_then_the_csv_then_rbac() {
        let objects = vec![
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "metadata": {"name": "p.v1"},
                "spec": {"install": {"spec": {"permissions": [{"serviceAccountName": "op", "rules": []}]}}}}),
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"}}),
        ];
        let kinds: Vec<String> = steps("p.v1", None, ("c", "olm"), "ns", &objects)
            .into_iter()
            .map(|s| s.resource.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition",
                "ClusterServiceVersion",
                "ServiceAccount",
                "Role",
                "RoleBinding"
            ]
        );
    }
}
