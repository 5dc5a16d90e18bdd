//! components: the objects other than its Deployments that a CSV's install owns, and which
//! of them must be written again. The rule: **a component of an installed CSV that is gone,
//! or whose install-set fields were changed, is written again from its InstallPlan's manifest;
//! nothing else is compared, and nothing present and unchanged is written.**
//!
//! - *What the install owns* ([`desired_components`]): the ServiceAccounts, Roles,
//!   RoleBindings, ClusterRoles and ClusterRoleBindings that the newest `Complete` InstallPlan
//!   naming the CSV created for it (its steps resolving the CSV), each as the plan applied it
//!   ([`crate::plan::install_plan::prepare_object`]: namespace and the CSV's owner reference on
//!   namespaced kinds). A CSV without such a plan (created by hand, its plans collected, or its
//!   plan still running) has no components here: nothing is restored that the install did not
//!   finish creating, so a restore never races the plan that creates the objects.
//! - *Missing or changed* ([`issues`]): a component is missing when the shell's store has no
//!   object of that kind, namespace and name (its stores select the `olm.owner*` labels, so an
//!   object stripped of them reads as missing and the apply puts them back). It is changed
//!   when a field the install sets differs, compared after dropping empty values (the API server
//!   omits them): `rules` of a Role or ClusterRole (`aggregationRule` only, for an aggregated
//!   ClusterRole: the aggregation controller owns its `rules`), `roleRef` and `subjects` of a
//!   binding; a ServiceAccount only by its presence. Labels, annotations and fields others add
//!   are theirs, so a restore never fights another field manager.
//! - *Where it shows* ([`rbac_unsatisfied`]): as upstream's `permissionStatus`, the Role and
//!   RoleBinding (ClusterRole and ClusterRoleBinding) generated for a `permissions[]`
//!   (`clusterPermissions[]`) entry grant its rules: when one is missing or changed, the
//!   entry's ServiceAccount requirement is `PresentNotSatisfied` "Policy rule not satisfied for
//!   service account" and its rules' dependents `NotSatisfied`; a missing ServiceAccount is
//!   `NotPresent`. The state machine then goes upstream's requirement way (`Succeeded` →
//!   `Failed` `RequirementsNotMet` → `Pending` `RequirementsNotMet`), and `Pending` carries
//!   the restore ([`super::CsvDecision::restore`]); once the objects are back the requirements
//!   are met and the CSV is installed again (`InstallReady` → `Installing` → `Succeeded`).
//!   Any other component (one the bundle ships) that is missing or changed makes a `Succeeded`
//!   CSV `Failed` `ComponentUnhealthy`, then `Pending` `NeedsReinstall`, restored the same way.
//! - *The target namespaces* ([`target_components`]): the Roles and RoleBindings (or
//!   ClusterRoles and ClusterRoleBindings, for all namespaces) the install makes in the
//!   OperatorGroup's other target namespaces are put back by a `Succeeded` CSV without a phase
//!   change, as upstream's `ensureRBACInTargetNamespace` does on every sync.
//!
//! Upstream restores none of the first kind: its requirement check sends the CSV to `Pending`
//! `RequirementsNotMet`, where it stays until someone re-creates the object by hand.

use std::fmt;

use serde_json::Value;

#[allow(
    clippy::wildcard_imports,
    reason = "the parent module's observed types and imports"
)]
use super::*;
use crate::api::v1alpha1::{InstallPlan, InstallPlanPhase, StrategyDeploymentPermissions};

/// The kinds of component restored from an InstallPlan's manifests.
pub const KINDS: [&str; 5] = [
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
];

/// Whether a component kind lives in a namespace.
fn namespaced(kind: &str) -> bool {
    matches!(kind, "ServiceAccount" | "Role" | "RoleBinding")
}

/// A component by kind, namespace (`None` for cluster-scoped kinds) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentKey {
    /// One of [`KINDS`].
    pub kind: String,
    /// Its namespace.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl ComponentKey {
    /// A namespaced (`Some`) or cluster-scoped (`None`) key.
    pub fn new(kind: &str, namespace: Option<&str>, name: &str) -> Self {
        Self {
            kind: kind.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        }
    }
}

impl fmt::Display for ComponentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// One component: the object as the install wants it, and as observed.
#[derive(Clone, Debug, PartialEq)]
pub struct Component {
    /// Which object.
    pub key: ComponentKey,
    /// The manifest to apply (as the InstallPlan applied it).
    pub manifest: Value,
    /// The InstallPlan it comes from (empty: the CSV's install strategy, for the RBAC of the
    /// target namespaces).
    pub plan: String,
    /// The object in the cluster (`None`: there is none), filled by the shell.
    pub live: Option<Value>,
}

/// What is wrong with one component.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentIssue {
    /// Which object.
    pub key: ComponentKey,
    /// `true`: gone; `false`: a field the install sets was changed.
    pub missing: bool,
    /// The manifest that restores it.
    pub manifest: Value,
    /// The InstallPlan it comes from.
    pub plan: String,
}

impl ComponentIssue {
    /// The Event reason naming the problem: `ComponentMissing` or `ComponentChanged`.
    pub fn event_reason(&self) -> &'static str {
        if self.missing {
            "ComponentMissing"
        } else {
            "ComponentChanged"
        }
    }
}

impl fmt::Display for ComponentIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.missing {
            write!(f, "missing {}", self.key)
        } else {
            write!(f, "{} was changed from what the install set", self.key)
        }
    }
}

/// The components of `csv`: the ServiceAccounts and RBAC the newest `Complete` plan of `plans`
/// naming it created for it (see the module doc), without their live state.
pub fn desired_components<'a>(
    csv: &ClusterServiceVersion,
    plans: impl IntoIterator<Item = &'a InstallPlan>,
) -> Vec<Component> {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let newest = plans
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|p| {
            p.status
                .as_ref()
                .is_some_and(|s| s.phase == InstallPlanPhase::Complete)
        })
        .filter(|p| {
            p.spec.cluster_service_version_names.contains(&name)
                || p.status
                    .as_ref()
                    .is_some_and(|s| s.plan.iter().any(|step| step.resolving == name))
        })
        .max_by(|a, b| {
            (a.metadata.creation_timestamp.as_ref().map(|t| t.0), a.name_any())
                .cmp(&(b.metadata.creation_timestamp.as_ref().map(|t| t.0), b.name_any()))
        });
    let Some(plan) = newest else {
        return Vec::new();
    };
    let uid = csv.metadata.uid.as_deref();
    let mut out: Vec<Component> = Vec::new();
    for step in plan.status.iter().flat_map(|s| s.plan.iter()) {
        let r = &step.resource;
        if step.resolving != name || !KINDS.contains(&r.kind.as_str()) {
            continue;
        }
        let Some(manifest) = r
            .manifest
            .as_deref()
            .and_then(|m| serde_json::from_str::<Value>(m).ok())
            .filter(|m| m.get("kind").and_then(Value::as_str) == Some(r.kind.as_str()))
        else {
            continue;
        };
        let is_namespaced = namespaced(&r.kind);
        let manifest = crate::plan::install_plan::prepare_object(
            manifest,
            &namespace,
            is_namespaced,
            uid.map(|u| (name.as_str(), u)),
            None,
        );
        let key = ComponentKey::new(&r.kind, is_namespaced.then_some(namespace.as_str()), &r.name);
        if out.iter().any(|c| c.key == key) {
            continue;
        }
        out.push(Component {
            key,
            manifest,
            plan: plan.name_any(),
            live: None,
        });
    }
    out
}

/// The package of a CSV, from the `olm.package` property in its
/// `operatorframework.io/properties` annotation (written by planning); empty when absent.
pub fn package_of(csv: &ClusterServiceVersion) -> String {
    csv.annotations()
        .get(crate::api::labels::PROPERTIES)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|v| {
            v["properties"].as_array().and_then(|props| {
                props
                    .iter()
                    .find(|p| p["type"] == "olm.package")
                    .and_then(|p| p["value"]["packageName"].as_str().map(str::to_owned))
            })
        })
        .unwrap_or_default()
}

/// The RBAC the install makes in the OperatorGroup's other target namespaces (`targets`: its
/// `status.namespaces`), as components ([`crate::plan::steps::target_namespace_rbac`]: Roles
/// and RoleBindings there, or ClusterRoles and ClusterRoleBindings for all namespaces). Upstream
/// ensures them on every sync of the CSV (`ensureRBACInTargetNamespace`); so does a `Succeeded`
/// CSV here, without a phase change.
pub fn target_components(csv: &ClusterServiceVersion, targets: &[String]) -> Vec<Component> {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let rbac = crate::plan::steps::target_namespace_rbac(
        &name,
        &namespace,
        &package_of(csv),
        &csv.spec.install.spec,
        targets,
    );
    let mut out = Vec::new();
    let mut push = |kind: &str, meta: &ObjectMeta, value: Result<Value, serde_json::Error>| {
        let Ok(manifest) = value else {
            return;
        };
        out.push(Component {
            key: ComponentKey::new(
                kind,
                meta.namespace.as_deref(),
                meta.name.as_deref().unwrap_or_default(),
            ),
            manifest,
            plan: String::new(),
            live: None,
        });
    };
    for r in &rbac.roles {
        push("Role", &r.metadata, serde_json::to_value(r));
    }
    for r in &rbac.role_bindings {
        push("RoleBinding", &r.metadata, serde_json::to_value(r));
    }
    for r in &rbac.cluster_roles {
        push("ClusterRole", &r.metadata, serde_json::to_value(r));
    }
    for r in &rbac.cluster_role_bindings {
        push("ClusterRoleBinding", &r.metadata, serde_json::to_value(r));
    }
    out
}

/// The components that are missing or changed, in the order given.
pub fn issues(components: &[Component]) -> Vec<ComponentIssue> {
    components
        .iter()
        .filter_map(|c| {
            let missing = match &c.live {
                None => true,
                Some(live) if changed(&c.key.kind, &c.manifest, live) => false,
                Some(_) => return None,
            };
            Some(ComponentIssue {
                key: c.key.clone(),
                missing,
                manifest: c.manifest.clone(),
                plan: c.plan.clone(),
            })
        })
        .collect()
}

/// Whether a field the install sets differs in `live` (see the module doc).
fn changed(kind: &str, desired: &Value, live: &Value) -> bool {
    let fields: &[&str] = match kind {
        "Role" => &["rules"],
        "ClusterRole" if desired.get("aggregationRule").is_some_and(|a| !a.is_null()) => &["aggregationRule"],
        "ClusterRole" => &["rules", "aggregationRule"],
        "RoleBinding" | "ClusterRoleBinding" => &["roleRef", "subjects"],
        _ => &[],
    };
    fields.iter().any(|field| {
        // An empty field (`rules: []`, which the API server returns as absent) is no field.
        let get = |v: &Value| {
            let kept = without_empty(v.get(*field).unwrap_or(&Value::Null));
            if is_empty(&kept) { Value::Null } else { kept }
        };
        get(desired) != get(live)
    })
}

/// `value` without nulls, empty arrays and empty objects (at any depth): the API server omits
/// empty optional fields, a manifest may spell them out.
fn without_empty(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_empty(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(without_empty).filter(|v| !is_empty(v)).collect())
        }
        other => other.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Whether the RBAC generated for one `permissions[]` (`cluster` false) or
/// `clusterPermissions[]` (`cluster` true) entry of `csv` is a component that is missing or
/// changed: its rules are then not granted (upstream `permissionsPreviouslyCreated`). `false`
/// when the install has no such components (see [`desired_components`]).
pub fn rbac_unsatisfied(
    csv: &ClusterServiceVersion,
    permission: &StrategyDeploymentPermissions,
    cluster: bool,
    components: &[Component],
) -> bool {
    let csv_name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let keys = if cluster {
        let name = crate::plan::steps::cluster_role_name(&csv_name, &namespace, permission);
        [
            ComponentKey::new("ClusterRole", None, &name),
            ComponentKey::new("ClusterRoleBinding", None, &name),
        ]
    } else {
        let name = crate::plan::steps::role_name(&csv_name, permission);
        [
            ComponentKey::new("Role", Some(&namespace), &name),
            ComponentKey::new("RoleBinding", Some(&namespace), &name),
        ]
    };
    components.iter().any(|c| {
        keys.contains(&c.key)
            && c.live
                .as_ref()
                .is_none_or(|live| changed(&c.key.kind, &c.manifest, live))
    })
}
