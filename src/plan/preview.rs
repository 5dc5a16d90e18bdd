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
//!   (`spec.replicas`, `spec.template.spec.containers[name=manager].image`: lists of named
//!   objects are matched by name, others by position), with the value before and after; an
//!   item added to or removed from a list is one change, not the whole list.
//! - **The RBAC the plan grants** ([`rbac_grants`]): every rule of every Role and ClusterRole
//!   step, namespaced or cluster-wide, flagged when it holds wildcard verbs, resources or API
//!   groups, reaches `secrets`, grants `escalate`, `bind` or `impersonate`, or touches nodes or
//!   admission webhooks: the powers a reviewer should not grant by accident.
//! - **The images that will run** ([`images`]): every container and init container image of
//!   the CSV steps' install strategy Deployments.
//! - **What the upgrade removes** ([`removals`]): the objects the CSV being replaced owns (by
//!   owner reference, or by `olm.owner` labels for cluster-scoped and other namespaces' objects)
//!   that the plan does not keep: not one of its steps, and not one of the objects its CSVs'
//!   install makes (their Deployments, ServiceAccounts, webhook Services, cert Secrets and their
//!   Role and RoleBinding, webhook configurations for the same `generateName`, owned
//!   APIServices). They go when the old CSV is deleted after the upgrade.
//! - **The CRD verdict**: the checks the InstallPlan runs before a CRD update
//!   ([`crate::plan::crd_safety`]); the shell runs them on the live CRD and its objects and
//!   reports the refusal here before approval rather than as a failed plan after it.

use serde::Serialize;
use serde_json::Value;

use crate::api::v1alpha1::InstallPlan;

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

/// A list whose every item is an object with a distinct string `name`, by name.
fn named(items: &[Value]) -> Option<std::collections::BTreeMap<&str, &Value>> {
    let mut out = std::collections::BTreeMap::new();
    for item in items {
        let name = item.get("name").and_then(Value::as_str)?;
        if out.insert(name, item).is_some() {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
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
        (Value::Array(a), Value::Array(b)) => match (named(a), named(b)) {
            // Lists of named objects (CRD versions, containers, env, ports) are matched by name,
            // so adding one shows that one, not the whole list.
            (Some(x), Some(y)) => {
                let mut names: Vec<&str> = x.keys().chain(y.keys()).copied().collect();
                names.sort_unstable();
                names.dedup();
                for name in names {
                    let here = format!("{path}[name={name}]");
                    match (x.get(name), y.get(name)) {
                        (Some(v), Some(w)) => diff(&here, v, w, out),
                        (v, w) => out.push(FieldChange {
                            path: here,
                            before: v.copied().cloned(),
                            after: w.copied().cloned(),
                        }),
                    }
                }
            }
            _ => {
                for i in 0..a.len().max(b.len()) {
                    let here = format!("{path}[{i}]");
                    match (a.get(i), b.get(i)) {
                        (Some(x), Some(y)) => diff(&here, x, y, out),
                        (x, y) => out.push(FieldChange {
                            path: here,
                            before: x.cloned(),
                            after: y.cloned(),
                        }),
                    }
                }
            }
        },
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

/// An object of the cluster: kind, namespace (`None` for cluster-scoped) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectId {
    /// The kind (`Deployment`, `ClusterRole`, ...).
    pub kind: String,
    /// The namespace; `None` for a cluster-scoped object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectId {
    /// `kind` `name` in `namespace` (`None`: cluster-scoped).
    pub fn new(kind: &str, namespace: Option<&str>, name: &str) -> Self {
        Self {
            kind: kind.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }
}

/// The kinds an installed CSV owns that an upgrade can leave behind, and whether each is
/// namespaced: what the shell reads for [`removals`].
pub const OWNED_KINDS: &[(&str, bool)] = &[
    ("Deployment", true),
    ("ServiceAccount", true),
    ("Role", true),
    ("RoleBinding", true),
    ("Service", true),
    ("Secret", true),
    ("ClusterRole", false),
    ("ClusterRoleBinding", false),
    ("ValidatingWebhookConfiguration", false),
    ("MutatingWebhookConfiguration", false),
    ("APIService", false),
];

/// What the plan keeps in place: every step's object (namespaced ones in the plan's namespace), and for
/// every CSV step what its install makes (see the module doc). `steps`: (kind, manifest) of
/// every step that carries its manifest. Webhook configurations are kept by `generateName`
/// prefix (a configuration upstream named `<generateName>-<random>` is updated in place), so
/// they are kept apart, as (kind, generateName) in [`Kept::configs`].
pub fn kept_objects<'a>(steps: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Kept {
    use crate::{api::v1alpha1::ClusterServiceVersion, plan::csv::webhooks};
    let mut kept = std::collections::BTreeSet::new();
    let mut configs = Vec::new();
    for (kind, manifest) in steps {
        if let Some(name) = manifest.pointer("/metadata/name").and_then(Value::as_str) {
            kept.insert((kind.to_owned(), name.to_owned()));
        }
        if kind != crate::plan::steps::CSV_KIND {
            continue;
        }
        let Ok(csv) = serde_json::from_value::<ClusterServiceVersion>(manifest.clone()) else {
            continue;
        };
        let strategy = &csv.spec.install.spec;
        for d in &strategy.deployments {
            kept.insert(("Deployment".into(), d.name.clone()));
        }
        for p in strategy.permissions.iter().chain(&strategy.cluster_permissions) {
            kept.insert(("ServiceAccount".into(), p.service_account_name.clone()));
        }
        for d in webhooks::cert_deployments(&csv) {
            kept.insert(("Service".into(), webhooks::service_name(&d)));
            let cert = webhooks::secret_name(&d);
            for kind in ["Secret", "Role", "RoleBinding"] {
                kept.insert((kind.into(), cert.clone()));
            }
        }
        for desc in webhooks::owned_api_services(&csv) {
            kept.insert(("APIService".into(), webhooks::api_service_name(desc)));
        }
        for desc in &csv.spec.webhook_definitions {
            let kind = match desc.type_.as_str() {
                "ValidatingAdmissionWebhook" => "ValidatingWebhookConfiguration",
                "MutatingAdmissionWebhook" => "MutatingWebhookConfiguration",
                // A conversion webhook lives in its CRD, which a plan never removes.
                _ => continue,
            };
            configs.push((kind.to_owned(), desc.generate_name.clone()));
        }
    }
    Kept {
        by_name: kept,
        configs,
    }
}

/// What a plan keeps in place ([`kept_objects`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// (kind, name) of the objects kept in the plan's namespace or cluster-wide.
    pub by_name: std::collections::BTreeSet<(String, String)>,
    /// (kind, `generateName`) of the webhook configurations kept by prefix.
    pub configs: Vec<(String, String)>,
}

/// What the upgrade removes: the objects `owned` by the CSV the plan replaces that the plan
/// does not keep ([`kept_objects`]), sorted. An object in another namespace than the plan's
/// (RBAC for a group's target namespaces) is removed too: the new CSV makes its own there.
pub fn removals(owned: &[ObjectId], kept: &Kept, namespace: &str) -> Vec<ObjectId> {
    let Kept {
        by_name: kept,
        configs,
    } = kept;
    let mut out: Vec<ObjectId> = owned
        .iter()
        .filter(|o| {
            let here = o.namespace.as_deref().is_none_or(|n| n == namespace);
            let by_name = here && kept.contains(&(o.kind.clone(), o.name.clone()));
            let by_prefix = configs.iter().any(|(kind, generate_name)| {
                *kind == o.kind
                    && o.name
                        .strip_prefix(generate_name.as_str())
                        .is_some_and(|rest| rest.starts_with('-'))
            });
            !by_name && !by_prefix
        })
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One step of the plan, as the preview shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepPreview {
    /// Kind of the object.
    pub kind: String,
    /// Name of the object.
    pub name: String,
    /// `group/version` (or `version` for the core group).
    pub api_version: String,
    /// The step's status (`Unknown` before execution).
    pub status: String,
    /// The CSV the step belongs to.
    pub resolving: String,
    /// What the step will do: `new`, `changed`, `unchanged`, or `unknown` (not compared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
    /// The fields a `changed` step changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
    /// Why a step could not be compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For a CRD that exists: `safe`, or why the InstallPlan will refuse to update it (a stored
    /// version dropped, existing objects the new schema rejects), the checks the plan runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crd_verdict: Option<String>,
    /// The live object's `metadata` when the step was compared with the cluster (owners and
    /// labels, for what a rollback deletes); not printed.
    #[serde(skip)]
    pub live_metadata: Option<Value>,
}

/// What approving the plan will install.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// The InstallPlan.
    pub install_plan: String,
    /// Its namespace.
    pub namespace: String,
    /// Its phase before the approval.
    pub phase: String,
    /// Whether it is approved (after this command, unless `--dry-run`).
    pub approved: bool,
    /// The CSVs it installs.
    pub cluster_service_version_names: Vec<String>,
    /// The objects it creates, in order.
    pub steps: Vec<StepPreview>,
    /// The RBAC rules it grants.
    pub grants: Vec<Grant>,
    /// The images its operators will run.
    pub images: Vec<String>,
    /// The CSVs the plan replaces that are installed (their objects are what [`Preview::removals`]
    /// lists).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<String>,
    /// What the upgrade removes: objects the replaced CSVs own that the plan does not keep
    /// ([`removals`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removals: Vec<ObjectId>,
    /// Why the removals could not be read in full (a list the user may not make), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removals_note: Option<String>,
}

/// Whether a plan can be approved ([`approvable`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Approvable {
    /// Not approved yet: approve it.
    Yes,
    /// Already approved: nothing to do.
    AlreadyApproved,
}

/// The preview of `plan`.
pub fn preview(plan: &InstallPlan) -> Preview {
    let status = plan.status.as_ref();
    let manifests = step_manifests(plan);
    Preview {
        install_plan: plan.metadata.name.clone().unwrap_or_default(),
        namespace: plan.metadata.namespace.clone().unwrap_or_default(),
        phase: status.map(|s| s.phase.as_str().to_string()).unwrap_or_default(),
        approved: plan.spec.approved,
        cluster_service_version_names: plan.spec.cluster_service_version_names.clone(),
        steps: status
            .map(|s| {
                s.plan
                    .iter()
                    .map(|step| StepPreview {
                        kind: step.resource.kind.clone(),
                        name: step.resource.name.clone(),
                        api_version: if step.resource.group.is_empty() {
                            step.resource.version.clone()
                        } else {
                            format!("{}/{}", step.resource.group, step.resource.version)
                        },
                        status: step.status.as_str().to_string(),
                        resolving: step.resolving.clone(),
                        change: None,
                        fields: Vec::new(),
                        note: None,
                        crd_verdict: None,
                        live_metadata: None,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        grants: rbac_grants(
            manifests.iter().map(|(kind, manifest)| (kind.as_str(), manifest)),
            plan.metadata.namespace.as_deref().unwrap_or_default(),
        ),
        images: images(
            manifests
                .iter()
                .filter(|(kind, _)| kind == crate::plan::steps::CSV_KIND)
                .map(|(_, manifest)| manifest),
        ),
        replaces: Vec::new(),
        removals: Vec::new(),
        removals_note: None,
    }
}

/// The (kind, manifest) of every step that carries its manifest.
pub fn step_manifests(plan: &InstallPlan) -> Vec<(String, Value)> {
    plan.status
        .iter()
        .flat_map(|s| &s.plan)
        .filter_map(|step| {
            let manifest = serde_json::from_str(step.resource.manifest.as_deref()?).ok()?;
            Some((step.resource.kind.clone(), manifest))
        })
        .collect()
}

/// Whether `plan` can be approved: `Err` with the reason for a finished plan (`Complete`,
/// `Failed`), since approving it changes nothing.
pub fn approvable(plan: &InstallPlan) -> Result<Approvable, String> {
    let name = plan.metadata.name.as_deref().unwrap_or("");
    if plan.spec.approved {
        return Ok(Approvable::AlreadyApproved);
    }
    match plan.status.as_ref().map(|s| &s.phase) {
        Some(phase) if phase.is_terminal() => Err(format!(
            "installplan {name} is already {phase}; approving it changes nothing (see `kubectl olm list` for what waits for approval)"
        )),
        _ => Ok(Approvable::Yes),
    }
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
                "spec.template.spec.containers[name=op].image"
            ]
        );
        assert_eq!(fields[0].after, None, "a removed label");
        assert_eq!(fields[1].before, Some(json!(1)));
        assert_eq!(fields[1].after, Some(json!(2)));
        // An item added to a list of unnamed items is that item only.
        let longer = json!({"rules": [1, 2]});
        let Change::Changed { fields } = step_change(Some(&json!({"rules": [1]})), &longer) else {
            panic!("a change");
        };
        assert_eq!(
            fields,
            [FieldChange {
                path: "rules[1]".into(),
                before: None,
                after: Some(json!(2))
            }]
        );
    }

    #[test]
    fn a_crd_version_added_is_that_version_not_both_schemas_whole() {
        let schema = |field: &str| json!({"openAPIV3Schema": {"type": "object", "properties": {field: {"type": "string"}}}});
        let v1 = json!({"name": "v1", "served": true, "storage": true, "schema": schema("size")});
        let live = json!({"spec": {"group": "cache.example.com", "versions": [v1.clone()]}});
        let alpha =
            json!({"name": "v1alpha1", "served": true, "storage": false, "schema": schema("replicas")});
        let mut v1_changed = v1.clone();
        v1_changed["schema"] = schema("shards");
        // The new version listed first: matched by name, not by position.
        let applied =
            json!({"spec": {"group": "cache.example.com", "versions": [alpha.clone(), v1_changed]}});
        let Change::Changed { fields } = step_change(Some(&live), &applied) else {
            panic!("a change");
        };
        let paths: Vec<&str> = fields.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.versions[name=v1].schema.openAPIV3Schema.properties.shards",
                "spec.versions[name=v1].schema.openAPIV3Schema.properties.size",
                "spec.versions[name=v1alpha1]",
            ]
        );
        assert_eq!(fields[2].before, None);
        assert_eq!(fields[2].after, Some(alpha));
    }

    #[test]
    fn an_upgrade_removes_what_the_old_csv_owns_and_the_plan_does_not_keep() {
        let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "op.v2"},
            "spec": {"replaces": "op.v1", "install": {"strategy": "deployment", "spec": {
                "deployments": [{"name": "op-manager", "spec": {"selector": {}, "template": {}}}],
                "permissions": [{"serviceAccountName": "op", "rules": []}]}},
                "webhookdefinitions": [{"type": "ValidatingAdmissionWebhook", "generateName": "vop.example.com",
                    "deploymentName": "op-manager", "admissionReviewVersions": ["v1"], "sideEffects": "None"}]}});
        let role = json!({"metadata": {"name": "op.v2-abcde"}});
        let kept = kept_objects([("ClusterServiceVersion", &csv), ("Role", &role)]);
        let ns = "team-a";
        let owned = [
            ObjectId::new("Deployment", Some(ns), "op-manager"),
            ObjectId::new("Deployment", Some(ns), "op-metrics"),
            ObjectId::new("ServiceAccount", Some(ns), "op"),
            ObjectId::new("Role", Some(ns), "op.v1-fghij"),
            ObjectId::new("Service", Some(ns), "op-manager-service"),
            ObjectId::new("Secret", Some(ns), "op-manager-service-cert"),
            // A configuration upstream named with a random suffix is updated in place.
            ObjectId::new("ValidatingWebhookConfiguration", None, "vop.example.com-x7k2p"),
            ObjectId::new("MutatingWebhookConfiguration", None, "mop.example.com-abcde"),
            // RBAC of a target namespace, by the same name: the new CSV makes its own there.
            ObjectId::new("Role", Some("team-b"), "op.v2-abcde"),
        ];
        assert_eq!(
            removals(&owned, &kept, ns),
            [
                ObjectId::new("Deployment", Some(ns), "op-metrics"),
                ObjectId::new("MutatingWebhookConfiguration", None, "mop.example.com-abcde"),
                ObjectId::new("Role", Some(ns), "op.v1-fghij"),
                ObjectId::new("Role", Some("team-b"), "op.v2-abcde"),
            ]
        );
        // Nothing owned, nothing removed.
        assert!(removals(&[], &kept, ns).is_empty());
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
