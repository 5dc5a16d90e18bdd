//! rbac: the one list of API permissions the operator's code uses, and the version each appeared in.
//!
//! Every Kubernetes call the operator makes is listed here next to the reason it is made; the CSVs in
//! `bundles/redis-operator/` are rendered from this table (see [`super::release`]), so the bundle
//! grants exactly what the code needs. All rules are namespaced and go into the CSV's `permissions`:
//! OLM copies them into each target namespace (OwnNamespace, SingleNamespace, MultiNamespace) or lifts
//! them to a ClusterRole (AllNamespaces), so the operator needs no `clusterPermissions`.
//!
//! Writes are server-side apply, an HTTP PATCH, but an apply that creates its object is authorized
//! as `create` as well (the apiserver checks `create` when the patch target does not exist; checked
//! against a real apiserver by `tests/it/redis_operator_e2e.rs`, which runs the operator as a
//! ServiceAccount bound to exactly the CSV's rules). So owned objects need `create` and `patch`, and
//! no `update`. Owned objects are removed by garbage collection through their owner references, so
//! there is no `delete` on them; the finalizer scales the StatefulSet to zero with a merge patch.

use super::feature::Feature;

/// One RBAC policy rule, with the feature that made the code need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// API group (`""` for core).
    pub api_group: &'static str,
    /// Resources (and subresources).
    pub resources: &'static [&'static str],
    /// Verbs.
    pub verbs: &'static [&'static str],
    /// The feature whose code makes these calls; `None` means every version.
    pub needed_by: Option<Feature>,
    /// Where in the code the calls are made and why.
    pub why: &'static str,
}

/// The rules, in the order they appear in the CSV.
pub const RULES: &[Rule] = &[
    Rule {
        api_group: "cache.example.com",
        resources: &["redisclusters"],
        verbs: &["list", "watch", "patch"],
        needed_by: None,
        why: "controller watch of RedisCluster; finalizer add/remove is a JSON patch",
    },
    Rule {
        api_group: "cache.example.com",
        resources: &["redisclusters/status"],
        verbs: &["patch"],
        needed_by: None,
        why: "status is server-side applied to the status subresource",
    },
    Rule {
        api_group: "cache.example.com",
        resources: &["redisclusters/finalizers"],
        verbs: &["update"],
        needed_by: None,
        why: "owner references with blockOwnerDeletion need update on the owner's finalizers",
    },
    Rule {
        api_group: "apps",
        resources: &["statefulsets"],
        verbs: &["list", "watch", "create", "patch"],
        needed_by: None,
        why: "the StatefulSet is applied and watched (Controller::owns); the finalizer scales it to zero",
    },
    Rule {
        api_group: "",
        resources: &["services", "configmaps"],
        verbs: &["list", "watch", "create", "patch"],
        needed_by: None,
        why: "the headless and client Services and the redis.conf ConfigMap are applied and watched",
    },
    Rule {
        api_group: "",
        resources: &["pods"],
        verbs: &["list", "watch"],
        needed_by: None,
        why: "status.nodes and readyReplicas follow the pods; pod changes trigger a reconcile",
    },
    Rule {
        api_group: "policy",
        resources: &["poddisruptionbudgets"],
        verbs: &["list", "watch", "create", "patch"],
        needed_by: Some(Feature::ResourcesAndStorage),
        why: "the PodDisruptionBudget is applied and watched",
    },
    Rule {
        api_group: "",
        resources: &["persistentvolumeclaims"],
        verbs: &["list", "delete"],
        needed_by: Some(Feature::ResourcesAndStorage),
        why: "the finalizer deletes the pods' claims when storage.deleteClaimOnDelete is set",
    },
    Rule {
        api_group: "events.k8s.io",
        resources: &["events"],
        verbs: &["create", "patch"],
        needed_by: None,
        why: "kube's event Recorder creates events and patches repeated ones into a series",
    },
];

/// The rules a release with `features` needs, as CSV `rules` entries.
#[must_use]
pub fn rules_json(features: &[Feature]) -> Vec<serde_json::Value> {
    RULES
        .iter()
        .filter(|r| r.needed_by.is_none_or(|f| features.contains(&f)))
        .map(|r| {
            serde_json::json!({
                "apiGroups": [r.api_group],
                "resources": r.resources,
                "verbs": r.verbs,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rule_grants_wildcards_or_cluster_wide_resources() {
        for r in RULES {
            assert!(!r.verbs.contains(&"*") && !r.resources.contains(&"*"), "{r:?}");
            for res in r.resources {
                assert!(
                    !["namespaces", "nodes", "customresourcedefinitions"].contains(res),
                    "{r:?}"
                );
            }
        }
    }

    #[test]
    fn every_applied_kind_can_be_created_and_patched_but_not_updated() {
        for r in RULES
            .iter()
            .filter(|r| r.verbs.contains(&"watch") && r.verbs.contains(&"patch"))
        {
            if r.resources == ["redisclusters"] {
                continue;
            }
            assert!(r.verbs.contains(&"create"), "apply-create needs create: {r:?}");
            assert!(!r.verbs.contains(&"update"), "{r:?}");
        }
    }

    #[test]
    fn storage_rules_appear_only_with_the_storage_feature() {
        let without = rules_json(&[]);
        let with = rules_json(&[Feature::ResourcesAndStorage]);
        assert_eq!(with.len(), without.len() + 2);
        assert!(
            !without
                .iter()
                .any(|r| r["resources"][0] == "persistentvolumeclaims")
        );
    }
}
