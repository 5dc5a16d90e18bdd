//! preview: what approving an InstallPlan will change, decided before it runs (issue "approve with
//! your eyes open"). Pure: the shell reads the live objects and the server-side dry-run applies
//! and passes them in.
//!
//! The rules:
//! - **Each step is `new`, `changed` or `unchanged`** ([`step_change`]): `new` when the cluster
//!   holds no such object; otherwise the live object is compared with what a server-side
//!   dry-run apply of the step's manifest would leave, so fields the API server defaults do not
//!   show as changes. Only content is compared: `metadata.managedFields`, `resourceVersion`,
//!   `uid`, `generation`, `creationTimestamp` and `status` are what the server keeps, not what
//!   the plan changes. A change lists every leaf that differs, by JSON path
//!   (`spec.template.spec.containers[0].image`), with the value before and after.
//! - **The RBAC the plan grants** ([`rbac_grants`]): every rule of every Role and ClusterRole
//!   step, namespaced or cluster-wide, flagged when it holds wildcard verbs, resources or API
//!   groups, reaches `secrets`, grants `escalate`, `bind` or `impersonate`, or touches nodes or
//!   admission webhooks: the powers a reviewer should not grant by accident.
//! - **The images that will run** ([`images`]): every container and init container image of
//!   the CSV steps' install strategy Deployments.
//! - **The CRD verdict**: the checks the InstallPlan runs before a CRD update
//!   ([`crate::plan::crd_safety`]); the shell runs them on the live CRD and its objects and
//!   reports the refusal here before approval rather than as a failed plan after it.

use serde::Serialize;
use serde_json::Value;

/// What a step does to the cluster.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "change")]
pub enum Change {
    /// The cluster holds no such object: it is created.
    New,
    /// The object exists and the step changes these fields.
    Changed {
        /// Every leaf that differs.
        fields: Vec<FieldChange>,
    },
    /// The object exists and the step leaves it as it is.
    Unchanged,
}

impl Change {
    /// `new`, `changed` or `unchanged`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Changed { .. } => "changed",
            Self::Unchanged => "unchanged",
        }
    }
}

/// One field a step changes.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    /// The JSON path (`spec.replicas`, `rules[0].verbs`).
    pub path: String,
    /// The live value (`None`: absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// The value after the apply (`None`: removed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

/// Metadata the API server keeps for itself: never a change a plan makes.
const SERVER_METADATA: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "uid",
    "generation",
    "creationTimestamp",
    "selfLink",
];

/// What the step does: `live` is the object on the cluster (`None`: absent), `applied` what a
/// server-side dry-run apply of the step's manifest returned.
pub fn step_change(live: Option<&Value>, applied: &Value) -> Change {
    let Some(live) = live else {
        return Change::New;
    };
    let mut fields = Vec::new();
    diff("", &content(live), &content(applied), &mut fields);
    if fields.is_empty() {
        Change::Unchanged
    } else {
        Change::Changed { fields }
    }
}

/// The object without what the server keeps for itself (see [`SERVER_METADATA`]) and `status`.
fn content(object: &Value) -> Value {
    let mut out = object.clone();
    if let Some(map) = out.as_object_mut() {
        map.remove("status");
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in SERVER_METADATA {
                meta.remove(*key);
            }
        }
    }
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn diff(path: &str, before: &Value, after: &Value, out: &mut Vec<FieldChange>) {
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let here = join(path, key);
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => diff(&here, x, y, out),
                    (x, y) => out.push(FieldChange {
                        path: here,
                        before: x.cloned(),
                        after: y.cloned(),
                    }),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (x, y) if x != y => out.push(FieldChange {
            path: path.to_owned(),
            before: Some(x.clone()),
            after: Some(y.clone()),
        }),
        _ => {}
    }
}

/// Where a grant applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// A ClusterRole: every namespace (or cluster-scoped resources).
    Cluster,
    /// A Role in this namespace.
    Namespace(String),
}

/// A power worth a reviewer's second look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Flag {
    /// `verbs: ["*"]`.
    WildcardVerbs,
    /// `resources: ["*"]`.
    WildcardResources,
    /// `apiGroups: ["*"]`.
    WildcardGroups,
    /// Reads or writes Secrets.
    Secrets,
    /// `escalate`: may grant more than it holds.
    Escalate,
    /// `bind`: may bind roles it does not hold.
    Bind,
    /// `impersonate`: may act as other users.
    Impersonate,
    /// Nodes (and their proxies).
    Nodes,
    /// Admission webhooks: may intercept every request.
    Webhooks,
}

impl Flag {
    /// The flag as the table shows it.
    pub fn label(self) -> &'static str {
        match self {
            Self::WildcardVerbs => "all verbs",
            Self::WildcardResources => "all resources",
            Self::WildcardGroups => "all API groups",
            Self::Secrets => "secrets",
            Self::Escalate => "escalate",
            Self::Bind => "bind",
            Self::Impersonate => "impersonate",
            Self::Nodes => "nodes",
            Self::Webhooks => "admission webhooks",
        }
    }
}

/// One rule a Role or ClusterRole step grants.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    /// `Role` or `ClusterRole`, and its name.
    pub role: String,
    /// Where it applies.
    pub scope: Scope,
    /// `apiGroups` (`""` is the core group).
    pub api_groups: Vec<String>,
    /// `resources` (or `nonResourceURLs`).
    pub resources: Vec<String>,
    /// `verbs`.
    pub verbs: Vec<String>,
    /// What deserves a second look, sorted.
    pub flags: Vec<Flag>,
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The flags of one rule.
fn flags(groups: &[String], resources: &[String], verbs: &[String]) -> Vec<Flag> {
    let any = |list: &[String], wanted: &[&str]| list.iter().any(|x| wanted.contains(&x.as_str()));
    let base = |r: &String| r.split('/').next().unwrap_or_default().to_owned();
    let resources_base: Vec<String> = resources.iter().map(base).collect();
    let mut out = Vec::new();
    if any(verbs, &["*"]) {
        out.push(Flag::WildcardVerbs);
    }
    if any(resources, &["*"]) {
        out.push(Flag::WildcardResources);
    }
    if any(groups, &["*"]) {
        out.push(Flag::WildcardGroups);
    }
    if any(&resources_base, &["secrets", "*"]) && any(groups, &["", "*"]) {
        out.push(Flag::Secrets);
    }
    if any(verbs, &["escalate", "*"]) && any(&resources_base, &["roles", "clusterroles", "*"]) {
        out.push(Flag::Escalate);
    }
    if any(verbs, &["bind", "*"]) && any(&resources_base, &["roles", "clusterroles", "*"]) {
        out.push(Flag::Bind);
    }
    if any(verbs, &["impersonate"])
        || (any(verbs, &["*"]) && any(&resources_base, &["users", "groups", "serviceaccounts", "*"]))
    {
        out.push(Flag::Impersonate);
    }
    if any(&resources_base, &["nodes"]) {
        out.push(Flag::Nodes);
    }
    if any(
        &resources_base,
        &["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
    ) {
        out.push(Flag::Webhooks);
    }
    out.sort();
    out.dedup();
    out
}

/// The rules the plan's Role and ClusterRole steps grant; `steps` are (kind, manifest),
/// `namespace` the plan's (a Role's own namespace is forced to it, as the plan applies it).
pub fn rbac_grants<'a>(steps: impl IntoIterator<Item = (&'a str, &'a Value)>, namespace: &str) -> Vec<Grant> {
    let mut out = Vec::new();
    for (kind, manifest) in steps {
        let scope = match kind {
            "ClusterRole" => Scope::Cluster,
            "Role" => Scope::Namespace(namespace.to_owned()),
            _ => continue,
        };
        let name = manifest
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        for rule in manifest
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let api_groups = strings(rule.get("apiGroups"));
            let mut resources = strings(rule.get("resources"));
            resources.extend(strings(rule.get("nonResourceURLs")));
            let verbs = strings(rule.get("verbs"));
            let flags = flags(&api_groups, &resources, &verbs);
            out.push(Grant {
                role: format!("{kind} {name}"),
                scope: scope.clone(),
                api_groups,
                resources,
                verbs,
                flags,
            });
        }
    }
    out
}

/// The images the plan's CSVs will run: every container and init container of their install
/// strategy Deployments, sorted, without repeats. `csvs` are the CSV steps' manifests.
pub fn images<'a>(csvs: impl IntoIterator<Item = &'a Value>) -> Vec<String> {
    let mut out: Vec<String> = csvs
        .into_iter()
        .flat_map(|csv| {
            csv.pointer("/spec/install/spec/deployments")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .flat_map(|d| {
            ["containers", "initContainers"]
                .into_iter()
                .flat_map(move |field| {
                    d.pointer(&format!("/spec/template/spec/{field}"))
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                })
        })
        .filter_map(|c| c.get("image").and_then(Value::as_str).map(str::to_owned))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_absent_object_is_new_and_server_kept_fields_are_no_change() {
        let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "2",
            "managedFields": [{"manager": "olm-rs"}]}, "data": {"a": "1"}});
        assert_eq!(step_change(None, &applied), Change::New);
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "1",
            "uid": "u", "creationTimestamp": "2026-01-01T00:00:00Z"}, "data": {"a": "1"}});
        assert_eq!(step_change(Some(&live), &applied), Change::Unchanged);
    }

    #[test]
    fn a_change_lists_every_leaf_by_path_with_before_and_after() {
        let live = json!({"metadata": {"name": "d", "labels": {"app": "op", "old": "x"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "op", "image": "op:1"}]}}},
            "status": {"readyReplicas": 1}});
        let applied = json!({"metadata": {"name": "d", "labels": {"app": "op"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "op", "image": "op:2"}]}}},
            "status": {"readyReplicas": 0}});
        let Change::Changed { fields } = step_change(Some(&live), &applied) else {
            panic!("a change");
        };
        let paths: Vec<&str> = fields.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata.labels.old",
                "spec.replicas",
                "spec.template.spec.containers[0].image"
            ]
        );
        assert_eq!(fields[0].after, None, "a removed label");
        assert_eq!(fields[1].before, Some(json!(1)));
        assert_eq!(fields[1].after, Some(json!(2)));
        // Lists of another length change as a whole.
        let longer = json!({"rules": [1, 2]});
        let Change::Changed { fields } = step_change(Some(&json!({"rules": [1]})), &longer) else {
            panic!("a change");
        };
        assert_eq!(fields[0].path, "rules");
    }

    #[test]
    fn grants_are_scoped_and_flag_the_powers_worth_a_second_look() {
        let role = json!({"metadata": {"name": "op"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
        let cluster_role = json!({"metadata": {"name": "op-cluster"}, "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind", "escalate"]},
            {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]},
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]});
        let grants = rbac_grants(
            [
                ("Role", &role),
                ("ClusterRole", &cluster_role),
                ("ServiceAccount", &json!({})),
            ],
            "team-a",
        );
        assert_eq!(grants.len(), 8);
        assert_eq!(grants[0].scope, Scope::Namespace("team-a".into()));
        assert!(grants[0].flags.is_empty());
        assert_eq!(grants[1].flags, [Flag::Secrets]);
        assert_eq!(grants[2].scope, Scope::Cluster);
        assert_eq!(
            grants[2].flags,
            [
                Flag::WildcardVerbs,
                Flag::WildcardResources,
                Flag::WildcardGroups,
                Flag::Secrets,
                Flag::Escalate,
                Flag::Bind,
                Flag::Impersonate
            ]
        );
        assert_eq!(grants[3].flags, [Flag::Escalate, Flag::Bind]);
        assert_eq!(grants[4].flags, [Flag::Impersonate]);
        assert_eq!(grants[5].flags, [Flag::Webhooks]);
        assert_eq!(grants[6].flags, [Flag::Nodes]);
        assert_eq!(grants[7].resources, ["/metrics"]);
        assert!(grants[7].flags.is_empty());
    }

    #[test]
    fn images_come_from_every_deployment_container_sorted_once() {
        let csv = json!({"spec": {"install": {"spec": {"deployments": [
            {"spec": {"template": {"spec": {"containers": [{"image": "b:1"}, {"image": "a:1"}], "initContainers": [{"image": "init:1"}]}}}},
            {"spec": {"template": {"spec": {"containers": [{"image": "a:1"}]}}}}]}}}});
        assert_eq!(images([&csv]), ["a:1", "b:1", "init:1"]);
        assert!(images([&json!({"spec": {}})]).is_empty());
    }
}
