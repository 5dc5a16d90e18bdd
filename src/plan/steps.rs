//! steps: a resolved bundle → the InstallPlan's `status.plan`, in the order it is applied.
//!
//! # What a plan contains (upstream `resolver/steps.go`, `resolver/rbac.go`)
//!
//! A registry+v1 bundle is a ClusterServiceVersion plus the objects shipped next to it
//! (CRDs, Services, ConfigMaps, Secrets, …). Installing it means creating all of them, plus
//! RBAC generated from the CSV's install strategy:
//!
//! - for every `permissions[]` entry: the ServiceAccount (unless it is `default`), a Role
//!   named `<csv>-<serviceAccount>-<hash>` holding the entry's rules and a RoleBinding of the
//!   same name binding it to the ServiceAccount, in the install namespace;
//! - for every `clusterPermissions[]` entry: the ServiceAccount if not already listed, a
//!   ClusterRole `<csv>-<hash>` and a ClusterRoleBinding of the same name.
//!
//! Names are cut to 63 characters *including* the hash (see [`super::name_with_hash`]); the
//! hash covers the CSV name and the permission (and the namespace for cluster roles), so two
//! namespaces installing the same operator never fight over one ClusterRole.
//!
//! The CSV itself is rewritten the way upstream's `NewStepResourceFromBundle` does: its
//! namespace is the install namespace, `spec.replaces` is the CSV the resolver says it
//! replaces on an upgrade (the one actually installed, not what the catalog wrote) and the
//! catalog's own `replaces` on a fresh install (as upstream keeps it: `kubectl get csv` shows
//! it; a CSV whose `replaces` names nothing present is not replacing anything), and the
//! `operatorframework.io/properties` annotation carries the bundle's properties as
//! `{"properties":[...]}` so resolution can later read them from the installed CSV.
//!
//! # Plan order and apply order
//!
//! The plan lists its steps as upstream does (`resolver/steps.go`): the
//! ClusterServiceVersion first, then the bundle's own objects (CustomResourceDefinitions
//! first, then Services, ConfigMaps, Secrets, PodDisruptionBudgets, …), then the RBAC:
//!
//! 1. the ClusterServiceVersion; 2. CustomResourceDefinitions; 3. every other bundle object;
//! 4. ServiceAccounts; 5. Roles; 6. RoleBindings; 7. ClusterRoles; 8. ClusterRoleBindings
//!    (generated ones first, then any the bundle ships).
//!
//! Execution does not follow the listing: [`super::install_plan::execution_order`] applies
//! the CRDs first (waiting until each is Established), then the CSV (its uid is needed for the
//! owner references of the namespaced objects), then the rest.
//!
//! The order is stable: within a group, objects keep the order of the bundle.
//!
//! # Labels, annotations and ownership (§1.7 of the semantics notes)
//!
//! Every object carries `olm.managed=true` and the Operator-API component label
//! `operators.coreos.com/<package>.<namespace>` (key cut to 63 characters). Cluster-scoped
//! objects and all RBAC carry `olm.owner`, `olm.owner.namespace` and
//! `olm.owner.kind=ClusterServiceVersion` (owner references cannot cross namespaces or
//! scopes; the CSV's cleanup finalizer deletes cluster-scoped objects by these labels);
//! generated and shipped RBAC carries `olm.permissions.hash`. CRDs are the exception to the
//! owner labels: OLM never deletes CRDs (custom resources would go with them), so they carry
//! the `operatorframework.io/installed-alongside-<hash>=<namespace>/<csv>` annotation
//! instead, which the CSV requirement check reads.
//!
//! Namespaced objects are owned by the CSV through a non-blocking, non-controller owner
//! reference so Kubernetes' garbage collector removes them with it. The CSV's uid is only
//! known once the CSV step has been applied, so steps do not contain owner references; the
//! executor calls [`with_owner`] on each namespaced manifest at apply time.
//!
//! Before any of this, every manifest is decoded the way upstream's typed Go decoding reads it
//! ([`super::decode`]): unknown fields dropped, nulls read as absent, missing required fields of
//! the CSV as Go's zero values; the step carries that form, not the bundle's text.
//!
//! Secrets are listed with the synthetic kind `BundleSecret` (upstream's spelling, which
//! tells bundle Secrets apart from the pull-secret steps of old plans); [`apply_kind`] maps
//! it back to `Secret`. Server-populated fields (`status`, `metadata.uid`,
//! `resourceVersion`, `creationTimestamp`, `generation`, `managedFields`) are dropped from
//! manifests so server-side apply accepts them.
//!
//! Supported kinds are upstream's executable set (`catalog/supportedresources.go`) plus
//! `PodMonitor`, which operator-registry's bundle validator accepts but upstream's executor
//! rejects; we accept what validation accepts. Anything else fails planning with the
//! supported list, instead of upstream's failed step at execution time.
//!
//! # Dependencies: Subscription steps
//!
//! A dependency the resolver found is not installed by the parent's plan directly: the plan gets
//! a `Subscription` step ([`subscription_step`]) creating the generated Subscription, as upstream
//! (`NewSubscriptionStepResource`); that Subscription then installs the dependency with its own
//! plan. Its `resolving` names the dependency's bundle. A Subscription is never owned by a CSV
//! ([`owned_by_csv`]): the parent's upgrade deletes the old CSV, and must not delete the
//! dependency's Subscription with it.
//!
//! # InstallPlan names
//!
//! [`install_plan_name`] derives `install-xxxxx` from the Subscription's uid and the CSV
//! being installed, so a controller that crashes between creating an InstallPlan and
//! recording it on the Subscription finds the same name on restart instead of creating a
//! second plan. If a plan with that name exists for the *same* CSV, it is "already created";
//! if it exists for a different CSV (a 1-in-14-million hash collision within one
//! namespace), the shell asks [`install_plan_name_attempt`] for attempt 1, 2, … .

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::{
    core::v1::ServiceAccount,
    rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject},
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value, json};
use thiserror::Error;

use super::{decode, encode_hash, hash_json, name_with_hash};
use crate::api::{
    labels::{
        MANAGED, OWNER, OWNER_KIND, OWNER_NAMESPACE, PERMISSIONS_HASH, PROPERTIES, component_label_key,
    },
    v1alpha1::{
        self, INSTALL_STRATEGY_DEPLOYMENT, Step, StepResource, StepStatus, StrategyDeploymentPermissions,
        StrategyDetailsDeployment,
    },
};

/// The kind name of a ClusterServiceVersion.
pub const CSV_KIND: &str = "ClusterServiceVersion";
/// The kind name of a Subscription (steps creating a dependency's generated Subscription).
pub const SUBSCRIPTION_KIND: &str = "Subscription";
/// The synthetic step kind of a Secret shipped in a bundle.
pub const BUNDLE_SECRET_KIND: &str = "BundleSecret";
/// Prefix of the annotation naming the CSVs a CRD was installed alongside.
pub const INSTALLED_ALONGSIDE_PREFIX: &str = "operatorframework.io/installed-alongside-";

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// A kind a bundle may ship: `(group, kind, namespaced)`.
pub type SupportedKind = (&'static str, &'static str, bool);

/// Every kind a plan may contain, with its API group and whether it is namespaced.
pub const SUPPORTED_KINDS: &[SupportedKind] = &[
    ("apiextensions.k8s.io", "CustomResourceDefinition", false),
    ("", "ServiceAccount", true),
    (RBAC_GROUP, "Role", true),
    (RBAC_GROUP, "RoleBinding", true),
    (RBAC_GROUP, "ClusterRole", false),
    (RBAC_GROUP, "ClusterRoleBinding", false),
    ("operators.coreos.com", CSV_KIND, true),
    ("", "Secret", true),
    ("", "ConfigMap", true),
    ("", "Service", true),
    ("monitoring.coreos.com", "PrometheusRule", true),
    ("monitoring.coreos.com", "ServiceMonitor", true),
    ("monitoring.coreos.com", "PodMonitor", true),
    ("policy", "PodDisruptionBudget", true),
    ("scheduling.k8s.io", "PriorityClass", false),
    ("autoscaling.k8s.io", "VerticalPodAutoscaler", true),
    ("networking.k8s.io", "NetworkPolicy", true),
    ("console.openshift.io", "ConsoleYAMLSample", false),
    ("console.openshift.io", "ConsoleQuickStart", false),
    ("console.openshift.io", "ConsoleCLIDownload", false),
    ("console.openshift.io", "ConsoleLink", false),
    ("console.openshift.io", "ConsolePlugin", false),
];

/// Whether objects of `group`/`kind` are namespaced; `None` for a kind plans never contain.
/// Accepts the synthetic `BundleSecret`.
#[cfg(test)]
pub fn is_namespaced(group: &str, kind: &str) -> Option<bool> {
    let kind = apply_kind(kind);
    SUPPORTED_KINDS
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, namespaced)| *namespaced)
}

/// The real kind to apply for a step kind (`BundleSecret` → `Secret`; others unchanged).
pub fn apply_kind(step_kind: &str) -> &str {
    if step_kind == BUNDLE_SECRET_KIND {
        "Secret"
    } else {
        step_kind
    }
}

/// The kinds upstream's `ExecutePlan` decodes into their Go types and writes through typed
/// clients, at the one group and version it writes them as.
const TYPED_KINDS: &[(&str, &str, &str)] = &[
    (crate::api::GROUP, "v1alpha1", CSV_KIND),
    (crate::api::GROUP, "v1alpha1", SUBSCRIPTION_KIND),
    ("", "v1", BUNDLE_SECRET_KIND),
    ("", "v1", "Secret"),
    ("", "v1", "ServiceAccount"),
    ("", "v1", "Service"),
    ("", "v1", "ConfigMap"),
    (RBAC_GROUP, "v1", "ClusterRole"),
    (RBAC_GROUP, "v1", "ClusterRoleBinding"),
    (RBAC_GROUP, "v1", "Role"),
    (RBAC_GROUP, "v1", "RoleBinding"),
];

/// The group and version of a bundle object's kind when upstream writes that kind through a
/// typed client whatever the object's group ([`TYPED_KINDS`] but the CSV and Subscription, which
/// a bundle carries only as the CSV itself).
fn typed_by_kind(kind: &str) -> Option<(&'static str, &'static str)> {
    TYPED_KINDS
        .iter()
        .filter(|(_, _, k)| *k != CSV_KIND && *k != SUBSCRIPTION_KIND && *k != BUNDLE_SECRET_KIND)
        .find(|(_, _, k)| *k == kind)
        .map(|(g, v, _)| (*g, *v))
}

/// The group, version and kind a step's object is applied as, picked as upstream's
/// `ExecutePlan` picks them (pure):
/// - a kind it decodes into its Go type ([`TYPED_KINDS`]: CSV, Subscription, Secret and the
///   bundle Secret, ServiceAccount, Service, ConfigMap, the four RBAC kinds) at that type's one
///   group and version, whatever the manifest's `apiVersion` says (a legacy catalog's CSV that
///   reads `apiVersion: v1alpha1` installs);
/// - a CRD in `apiextensions.k8s.io` at the version its manifest's `apiVersion` ends in, the
///   group whatever the manifest says (upstream's CRD step reads only the version: a plan whose
///   CRD manifest reads `apiVersion: v1` installs a `apiextensions.k8s.io/v1` CRD);
/// - anything else as its manifest's `apiVersion` and `kind` say: the step's `group` and
///   `version` describe the object, upstream never reads them to apply it (a hand-written plan
///   may leave `group` empty). A manifest without an `apiVersion` falls back to the step's.
pub fn step_gvk(resource: &StepResource, manifest: &Value) -> (String, String, String) {
    if let Some((group, version, _)) = TYPED_KINDS.iter().find(|(_, _, k)| *k == resource.kind) {
        let kind = apply_kind(&resource.kind);
        return ((*group).to_owned(), (*version).to_owned(), kind.to_owned());
    }
    if resource.kind == "CustomResourceDefinition" {
        let version = manifest
            .get("apiVersion")
            .and_then(Value::as_str)
            .map(|v| v.rsplit_once('/').map_or(v, |(_, version)| version))
            .filter(|v| !v.is_empty())
            .unwrap_or("v1");
        return (
            "apiextensions.k8s.io".into(),
            version.to_owned(),
            resource.kind.clone(),
        );
    }
    let kind = manifest
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .unwrap_or(&resource.kind)
        .to_owned();
    match manifest
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
    {
        Some(api_version) => {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            (group.to_owned(), version.to_owned(), kind)
        }
        None => (resource.group.clone(), resource.version.clone(), kind),
    }
}

/// A CRD manifest annotated with the CSVs it is installed alongside, as upstream's CRD step
/// does at apply time: `operatorframework.io/installed-alongside-<hash of ns/csv>: <ns>/<csv>`
/// for `csv` (none when the step names no CSV), and every such annotation the live CRD already
/// carries (`live`: another CSV's install of the same CRD keeps its own, and a re-apply by the one
/// field manager would otherwise drop it).
pub fn with_installed_alongside(
    manifest: &Value,
    namespace: &str,
    csv: &str,
    live: &BTreeMap<String, String>,
) -> Value {
    let mut annotations: BTreeMap<String, String> = live
        .iter()
        .filter(|(k, _)| k.starts_with(INSTALLED_ALONGSIDE_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !csv.is_empty() {
        let key = format!(
            "{INSTALLED_ALONGSIDE_PREFIX}{:016x}",
            super::fnv1a_64(format!("{namespace}/{csv}").as_bytes())
        );
        annotations.insert(key, format!("{namespace}/{csv}"));
    }
    let mut out = manifest.clone();
    if out.get("metadata").is_none()
        && let Some(object) = out.as_object_mut()
    {
        object.insert("metadata".into(), json!({}));
    }
    merge_metadata(&mut out, "annotations", &annotations);
    out
}

/// The manifest with the `apiVersion` and `kind` it is applied as ([`step_gvk`]): a typed kind's
/// manifest is written as its type, as upstream's typed clients write it.
pub fn with_type(manifest: &Value, group: &str, version: &str, kind: &str) -> Value {
    let mut out = manifest.clone();
    if let Some(object) = out.as_object_mut() {
        let api_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        object.insert("apiVersion".into(), json!(api_version));
        object.insert("kind".into(), json!(kind));
    }
    out
}

/// The names of the CSVs a manifest's `metadata.ownerReferences` point at (`kind:
/// ClusterServiceVersion`), whose uids [`with_csv_owner_uids`] fills in.
pub fn csv_owner_names(manifest: &Value) -> Vec<String> {
    manifest
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.get("kind").and_then(Value::as_str) == Some(CSV_KIND))
        .filter_map(|r| r.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// Every CSV owner reference of a manifest given the uid of the CSV of its name in the plan's
/// namespace (upstream's `getUpdatedOwnerReferences`: a hand-written manifest names its owner
/// CSV and leaves the uid to the installer). `uids` maps CSV names to uids; a name missing from
/// it keeps its reference as written.
pub fn with_csv_owner_uids(manifest: &Value, uids: &HashMap<String, String>) -> Value {
    let mut out = manifest.clone();
    if let Some(list) = out
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        for reference in list.iter_mut() {
            if reference.get("kind").and_then(Value::as_str) != Some(CSV_KIND) {
                continue;
            }
            let uid = reference
                .get("name")
                .and_then(Value::as_str)
                .and_then(|name| uids.get(name));
            if let Some(uid) = uid {
                reference["uid"] = json!(uid);
            }
        }
    }
    out
}

/// Everything [`bundle_steps`] needs besides the manifests.
#[derive(Clone, Debug, Default)]
pub struct StepsInput<'a> {
    /// Every object of the bundle, the CSV among them (a typed CSV can be passed as
    /// `serde_json::to_value(&csv)`).
    pub manifests: &'a [Value],
    /// The namespace the operator is installed in (the Subscription's).
    pub namespace: &'a str,
    /// The installed CSV this bundle replaces, as resolved (overwrites `spec.replaces`; `None`
    /// keeps the catalog's).
    pub replaces: Option<&'a str>,
    /// The package name (for the Operator-API component label).
    pub package: &'a str,
    /// The CatalogSource the bundle came from.
    pub source_name: &'a str,
    /// That CatalogSource's namespace.
    pub source_namespace: &'a str,
    /// The bundle's properties (`{"type": …, "value": …}` objects) for the
    /// `operatorframework.io/properties` annotation.
    pub properties: &'a [Value],
}

/// Why a bundle cannot be turned into steps.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum StepsError {
    /// A manifest is not a JSON object.
    #[error("bundle object #{index} is not an object; every manifest must be a Kubernetes object")]
    NotAnObject {
        /// Position of the manifest in the bundle.
        index: usize,
    },
    /// A manifest lacks `apiVersion`, `kind` or `metadata.name`.
    #[error("bundle object #{index} ({kind}) has no {field}; set {field} in the bundle manifest")]
    MissingField {
        /// Position of the manifest in the bundle.
        index: usize,
        /// Its kind, or `unknown kind`.
        kind: String,
        /// The missing field.
        field: &'static str,
    },
    /// The bundle has no CSV.
    #[error("the bundle has no ClusterServiceVersion; a registry+v1 bundle needs exactly one")]
    MissingCsv,
    /// The bundle has several CSVs.
    #[error("the bundle has {} ClusterServiceVersions ({}); a registry+v1 bundle needs exactly one", names.len(), names.join(", "))]
    TooManyCsvs {
        /// Their names.
        names: Vec<String>,
    },
    /// The CSV does not deserialise.
    #[error("the bundle's ClusterServiceVersion {csv} is invalid: {message}; fix the bundle")]
    InvalidCsv {
        /// The CSV name.
        csv: String,
        /// What the decoder reported (field path included).
        message: String,
    },
    /// A bundle object of a kind OLM decodes into its Kubernetes type does not decode.
    #[error("bundle object {kind} {name} is invalid: {message}; fix the bundle")]
    InvalidObject {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// What the decoder reported.
        message: String,
    },
    /// The CSV uses an install strategy other than `deployment`.
    #[error(
        "ClusterServiceVersion {csv} uses install strategy {strategy:?}; only \"deployment\" is supported \
         (set spec.install.strategy: deployment)"
    )]
    UnsupportedStrategy {
        /// The CSV name.
        csv: String,
        /// The strategy it names.
        strategy: String,
    },
    /// The bundle ships a kind OLM does not install.
    #[error(
        "bundle object {kind} {name} (apiVersion {api_version}) is not a kind OLM installs; supported kinds: {}",
        supported_kinds_text()
    )]
    UnsupportedKind {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// Its apiVersion.
        api_version: String,
    },
    /// Two manifests describe the same object.
    #[error("the bundle contains {kind} {name} twice; remove one of them")]
    DuplicateObject {
        /// The kind.
        kind: String,
        /// The name.
        name: String,
    },
}

fn supported_kinds_text() -> String {
    SUPPORTED_KINDS
        .iter()
        .map(|(_, k, _)| *k)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Splits `apiVersion` into group and version (`v1` → `("", "v1")`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// The labels every object of an install carries: `olm.managed=true` and the Operator-API
/// component label.
pub fn managed_labels(package: &str, namespace: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([(MANAGED.to_owned(), "true".to_owned())]);
    if let Some(key) = component_label_key(package, namespace) {
        labels.insert(key, String::new());
    }
    labels
}

/// The `olm.owner*` labels naming a CSV as owner.
pub fn owner_labels(csv_name: &str, csv_namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (OWNER.to_owned(), csv_name.to_owned()),
        (OWNER_NAMESPACE.to_owned(), csv_namespace.to_owned()),
        (OWNER_KIND.to_owned(), CSV_KIND.to_owned()),
    ])
}

/// The `olm.permissions.hash` value of a Role/ClusterRole's rules or a binding's roleRef and
/// subjects.
pub fn permissions_hash<T: serde::Serialize + ?Sized>(value: &T) -> String {
    encode_hash(hash_json(value), 13)
}

/// The InstallPlan name for installing `csv_name` for the Subscription with uid
/// `subscription_uid` as its plan number `generation` (the plan's `spec.generation`):
/// `install-` plus five characters of a stable hash of the three. Stable while the Subscription
/// has not recorded the plan (a reconcile that created it and stopped finds it again); a new
/// plan for the same CSV, after the pending one was deleted, gets a new name, as upstream's
/// generated names are new.
pub fn install_plan_name(subscription_uid: &str, csv_name: &str, generation: i64) -> String {
    install_plan_name_attempt(subscription_uid, csv_name, generation, 0)
}

/// [`install_plan_name`] for the `attempt`-th try (0 is the first); used only when the first
/// name is taken by a plan for a different CSV.
pub fn install_plan_name_attempt(
    subscription_uid: &str,
    csv_name: &str,
    generation: i64,
    attempt: u32,
) -> String {
    let input = if attempt == 0 {
        format!("{subscription_uid}/{csv_name}/{generation}")
    } else {
        format!("{subscription_uid}/{csv_name}/{generation}/{attempt}")
    };
    format!("install-{}", encode_hash(super::fnv1a_64(input.as_bytes()), 5))
}

/// The RBAC generated from a CSV's install strategy, in the install namespace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GeneratedRbac {
    /// One per distinct service account name (except `default`).
    pub service_accounts: Vec<ServiceAccount>,
    /// One per `permissions[]` entry.
    pub roles: Vec<Role>,
    /// One per `permissions[]` entry, same names as the roles.
    pub role_bindings: Vec<RoleBinding>,
    /// One per `clusterPermissions[]` entry.
    pub cluster_roles: Vec<ClusterRole>,
    /// One per `clusterPermissions[]` entry, same names as the cluster roles.
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

/// The name of the Role (and RoleBinding) generated for a `permissions[]` entry.
pub fn role_name(csv_name: &str, permission: &StrategyDeploymentPermissions) -> String {
    let hash = encode_hash(hash_json(&(csv_name, permission)), 10);
    name_with_hash(&format!("{csv_name}-{}", permission.service_account_name), &hash)
}

/// The name of the ClusterRole (and binding) generated for a `clusterPermissions[]` entry.
pub fn cluster_role_name(
    csv_name: &str,
    namespace: &str,
    permission: &StrategyDeploymentPermissions,
) -> String {
    let hash = encode_hash(hash_json(&(csv_name, namespace, permission)), 10);
    name_with_hash(csv_name, &hash)
}

fn meta(name: &str, namespace: Option<&str>, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(labels),
        ..Default::default()
    }
}

/// [`meta`] with the owner reference upstream writes into a generated namespaced step's manifest:
/// the CSV by name, its uid left empty for the executor to fill in (upstream
/// `getUpdatedOwnerReferences`; olm-rs's executor, [`with_csv_owner_uids`] and [`with_owner`]).
/// The plan then reads the same to either OLM: upstream executing a plan olm-rs wrote keeps the
/// operator's ServiceAccount owned by the new CSV (without it, upstream's CSV finds the account
/// "owned by another ClusterServiceVersion" and waits forever).
fn owned_meta(name: &str, namespace: &str, labels: BTreeMap<String, String>, csv_name: &str) -> ObjectMeta {
    ObjectMeta {
        owner_references: Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "operators.coreos.com/v1alpha1".to_owned(),
                kind: CSV_KIND.to_owned(),
                name: csv_name.to_owned(),
                uid: String::new(),
                controller: Some(false),
                block_owner_deletion: Some(false),
            },
        ]),
        ..meta(name, Some(namespace), labels)
    }
}

fn sa_subject(name: &str, namespace: &str) -> Subject {
    Subject {
        kind: "ServiceAccount".to_owned(),
        name: name.to_owned(),
        namespace: Some(namespace.to_owned()),
        api_group: None,
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: Some(RBAC_GROUP.to_owned()),
        kind: kind.to_owned(),
        name: name.to_owned(),
    }
}

fn rbac_labels(
    package: &str,
    label_namespace: &str,
    csv_name: &str,
    csv_namespace: &str,
    hash_of: &impl serde::Serialize,
) -> BTreeMap<String, String> {
    let mut labels = managed_labels(package, label_namespace);
    labels.extend(owner_labels(csv_name, csv_namespace));
    labels.insert(PERMISSIONS_HASH.to_owned(), permissions_hash(hash_of));
    labels
}

/// The ServiceAccounts, Roles, RoleBindings, ClusterRoles and ClusterRoleBindings the CSV's
/// install strategy asks for (upstream `RBACForClusterServiceVersion`).
pub fn generated_rbac(
    csv_name: &str,
    namespace: &str,
    package: &str,
    strategy: &StrategyDetailsDeployment,
) -> GeneratedRbac {
    let mut out = GeneratedRbac::default();
    let mut accounts = BTreeSet::new();
    let mut add_account = |out: &mut GeneratedRbac, name: &str| {
        if name != "default" && accounts.insert(name.to_owned()) {
            out.service_accounts.push(ServiceAccount {
                metadata: owned_meta(name, namespace, managed_labels(package, namespace), csv_name),
                ..Default::default()
            });
        }
    };
    for permission in &strategy.permissions {
        add_account(&mut out, &permission.service_account_name);
        let name = role_name(csv_name, permission);
        out.roles.push(Role {
            metadata: owned_meta(
                &name,
                namespace,
                rbac_labels(package, namespace, csv_name, namespace, &permission.rules),
                csv_name,
            ),
            rules: Some(permission.rules.clone()),
        });
        let role_ref = role_ref("Role", &name);
        let subjects = vec![sa_subject(&permission.service_account_name, namespace)];
        out.role_bindings.push(RoleBinding {
            metadata: owned_meta(
                &name,
                namespace,
                rbac_labels(package, namespace, csv_name, namespace, &(&role_ref, &subjects)),
                csv_name,
            ),
            role_ref,
            subjects: Some(subjects),
        });
    }
    for permission in &strategy.cluster_permissions {
        add_account(&mut out, &permission.service_account_name);
        let name = cluster_role_name(csv_name, namespace, permission);
        out.cluster_roles.push(ClusterRole {
            metadata: meta(
                &name,
                None,
                rbac_labels(package, namespace, csv_name, namespace, &permission.rules),
            ),
            rules: Some(permission.rules.clone()),
            aggregation_rule: None,
        });
        let role_ref = role_ref("ClusterRole", &name);
        let subjects = vec![sa_subject(&permission.service_account_name, namespace)];
        out.cluster_role_bindings.push(ClusterRoleBinding {
            metadata: meta(
                &name,
                None,
                rbac_labels(package, namespace, csv_name, namespace, &(&role_ref, &subjects)),
            ),
            role_ref,
            subjects: Some(subjects),
        });
    }
    out
}

/// The RBAC that grants an operator its namespaced `permissions` in its OperatorGroup's
/// target namespaces (upstream `ensureTenantRBAC` / `ensureSingletonRBAC`, §3.8):
///
/// - for each target namespace other than the operator's own: a Role and RoleBinding per
///   `permissions[]` entry, with the same name as in the operator namespace, binding the
///   operator's ServiceAccount (in the operator namespace);
/// - for all namespaces (`targets == [""]`): a ClusterRole and ClusterRoleBinding per entry,
///   same name, with the rules plus `get`/`list`/`watch` on namespaces.
///
/// Everything is labelled with the owner CSV (owner references cannot cross namespaces) and
/// `olm.permissions.hash`; the shell deletes objects carrying the CSV's owner labels that
/// are no longer in this set when the targets change.
pub fn target_namespace_rbac(
    csv_name: &str,
    operator_namespace: &str,
    package: &str,
    strategy: &StrategyDetailsDeployment,
    targets: &[String],
) -> GeneratedRbac {
    let mut out = GeneratedRbac::default();
    let all_namespaces = matches!(targets, [one] if one.is_empty());
    for permission in &strategy.permissions {
        let name = role_name(csv_name, permission);
        let subjects = vec![sa_subject(&permission.service_account_name, operator_namespace)];
        if all_namespaces {
            let mut rules = permission.rules.clone();
            rules.push(PolicyRule {
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["namespaces".to_owned()]),
                verbs: vec!["get".to_owned(), "list".to_owned(), "watch".to_owned()],
                ..Default::default()
            });
            let labels = rbac_labels(package, operator_namespace, csv_name, operator_namespace, &rules);
            out.cluster_roles.push(ClusterRole {
                metadata: meta(&name, None, labels),
                rules: Some(rules),
                aggregation_rule: None,
            });
            let role_ref = role_ref("ClusterRole", &name);
            out.cluster_role_bindings.push(ClusterRoleBinding {
                metadata: meta(
                    &name,
                    None,
                    rbac_labels(
                        package,
                        operator_namespace,
                        csv_name,
                        operator_namespace,
                        &(&role_ref, &subjects),
                    ),
                ),
                role_ref,
                subjects: Some(subjects),
            });
            continue;
        }
        let mut seen = BTreeSet::new();
        for target in targets {
            if target.is_empty() || target == operator_namespace || !seen.insert(target) {
                continue;
            }
            out.roles.push(Role {
                metadata: meta(
                    &name,
                    Some(target),
                    rbac_labels(
                        package,
                        operator_namespace,
                        csv_name,
                        operator_namespace,
                        &permission.rules,
                    ),
                ),
                rules: Some(permission.rules.clone()),
            });
            let role_ref = role_ref("Role", &name);
            out.role_bindings.push(RoleBinding {
                metadata: meta(
                    &name,
                    Some(target),
                    rbac_labels(
                        package,
                        operator_namespace,
                        csv_name,
                        operator_namespace,
                        &(&role_ref, &subjects),
                    ),
                ),
                role_ref,
                subjects: Some(subjects.clone()),
            });
        }
    }
    out
}

/// The manifest's `metadata.ownerReferences` list, created (or reset, when it is not a list) as
/// needed; `None` when the manifest is not an object.
fn owner_references_mut(manifest: &mut Value) -> Option<&mut Vec<Value>> {
    let metadata = manifest
        .as_object_mut()?
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()?;
    let refs = metadata.entry("ownerReferences").or_insert_with(|| json!([]));
    if !refs.is_array() {
        *refs = json!([]);
    }
    refs.as_array_mut()
}

/// Keeps the CSV owner references a live ServiceAccount already carries when the plan re-applies
/// it (upstream `mergedOwnerReferences` in its ServiceAccount step).
///
/// An operator's ServiceAccount is shared by every version of it: when the InstallPlan of
/// `v2` (replacing `v1`) applies it, it must stay owned by `v1` too, or `v1` would lose a
/// requirement while it is still the installed version (and, with server-side apply, one field
/// manager applying a shorter `ownerReferences` list removes the entries it applied before).
/// References to CSVs from `live` that `manifest` does not already carry (same uid) are added as
/// they are (a second controller reference becomes a plain one); other kinds of owners are left
/// to whoever set them.
pub fn merge_csv_owner_references(manifest: &Value, live: &[Value]) -> Value {
    let mut out = manifest.clone();
    if let Some(list) = owner_references_mut(&mut out) {
        for old in live {
            let is_csv = old.get("kind").and_then(Value::as_str) == Some(CSV_KIND);
            let Some(uid) = old.get("uid").and_then(Value::as_str) else {
                continue;
            };
            let known = list
                .iter()
                .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid));
            if is_csv && !known {
                // Kept as it is, as upstream's mergedOwnerReferences keeps it; only a second
                // controller (the API server allows one) is made a plain owner.
                let mut kept = old.clone();
                let controller = |r: &Value| r.get("controller").and_then(Value::as_bool) == Some(true);
                if controller(&kept) && list.iter().any(controller) {
                    kept["controller"] = json!(false);
                }
                list.push(kept);
            }
        }
    }
    out
}

/// Adds a non-blocking, non-controller owner reference to the CSV `csv_name`/`csv_uid` to a
/// namespaced manifest (replacing any earlier reference to a CSV of that name or uid). The
/// executor calls this at apply time, once the CSV exists.
pub fn with_owner(manifest: &Value, csv_name: &str, csv_uid: &str) -> Value {
    let mut out = manifest.clone();
    if let Some(list) = owner_references_mut(&mut out) {
        list.retain(|r| {
            let same_uid = r.get("uid").and_then(Value::as_str) == Some(csv_uid);
            let same_csv = r.get("kind").and_then(Value::as_str) == Some(CSV_KIND)
                && r.get("name").and_then(Value::as_str) == Some(csv_name);
            !(same_uid || same_csv)
        });
        list.push(json!({
            "apiVersion": v1alpha1::API_VERSION,
            "kind": CSV_KIND,
            "name": csv_name,
            "uid": csv_uid,
            "controller": false,
            "blockOwnerDeletion": false,
        }));
    }
    out
}

/// Apply-order rank of a kind (see the module doc).
/// Whether a step's object is one of the operator's ServiceAccounts or RBAC, which plans list
/// after the bundle's other objects (see [`rank`]).
pub fn is_account_or_rbac(group: &str, kind: &str) -> bool {
    rank(group, kind) >= 3
}

fn rank(group: &str, kind: &str) -> u8 {
    match (group, kind) {
        (_, CSV_KIND) => 0,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => 1,
        ("", "ServiceAccount") => 3,
        (RBAC_GROUP, "Role") => 4,
        (RBAC_GROUP, "RoleBinding") => 5,
        (RBAC_GROUP, "ClusterRole") => 6,
        (RBAC_GROUP, "ClusterRoleBinding") => 7,
        _ => 2,
    }
}

/// A manifest being prepared: its identity and JSON.
struct Object {
    group: String,
    version: String,
    kind: String,
    name: String,
    manifest: Value,
}

fn identify(index: usize, manifest: &Value) -> Result<Object, StepsError> {
    let obj = manifest.as_object().ok_or(StepsError::NotAnObject { index })?;
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let missing = |field| StepsError::MissingField {
        index,
        kind: if kind.is_empty() {
            "unknown kind".to_owned()
        } else {
            kind.to_owned()
        },
        field,
    };
    if kind.is_empty() {
        return Err(missing("kind"));
    }
    let name = obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name.is_empty() {
        return Err(missing("metadata.name"));
    }
    let api_version = match obj.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() => v.to_owned(),
        // upstream infers the CSV's apiVersion when a bundle omits it.
        _ if kind == CSV_KIND => v1alpha1::API_VERSION.to_owned(),
        _ => return Err(missing("apiVersion")),
    };
    let (group, version) = split_api_version(&api_version);
    let mut manifest = manifest.clone();
    if let Some(o) = manifest.as_object_mut() {
        o.insert("apiVersion".to_owned(), Value::String(api_version.clone()));
    }
    Ok(Object {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        manifest,
    })
}

/// Drops server-populated fields and sets or removes the namespace.
fn normalise(manifest: &mut Value, namespace: Option<&str>) {
    let Some(obj) = manifest.as_object_mut() else {
        return;
    };
    obj.remove("status");
    let metadata = obj.entry("metadata").or_insert_with(|| json!({}));
    if let Some(m) = metadata.as_object_mut() {
        for field in crate::api::SERVER_POPULATED_METADATA {
            m.remove(*field);
        }
        match namespace {
            Some(ns) => {
                m.insert("namespace".to_owned(), Value::String(ns.to_owned()));
            }
            None => {
                m.remove("namespace");
            }
        }
    }
}

fn string_map<'a>(metadata: &'a mut Map<String, Value>, field: &str) -> Option<&'a mut Map<String, Value>> {
    let entry = metadata.entry(field).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

fn merge_metadata(manifest: &mut Value, field: &str, values: &BTreeMap<String, String>) {
    let Some(metadata) = manifest.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(map) = string_map(metadata, field) {
        for (k, v) in values {
            map.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

/// The InstallPlan steps for one bundle, in apply order (see the module doc).
///
/// # Errors
/// [`StepsError`] naming the offending object and the fix: no or several CSVs, an invalid
/// CSV, a non-`deployment` strategy, a manifest without kind/name/apiVersion, an unsupported
/// kind, or a duplicate object.
pub fn bundle_steps(input: &StepsInput<'_>) -> Result<Vec<Step>, StepsError> {
    let mut objects = Vec::with_capacity(input.manifests.len());
    for (index, manifest) in input.manifests.iter().enumerate() {
        objects.push(identify(index, manifest)?);
    }

    let mut csvs: Vec<Object> = Vec::new();
    let mut others = Vec::new();
    for object in objects {
        if object.kind == CSV_KIND {
            csvs.push(object);
        } else {
            others.push(object);
        }
    }
    let mut csv_object = match csvs.len() {
        0 => return Err(StepsError::MissingCsv),
        1 => csvs.remove(0),
        _ => {
            return Err(StepsError::TooManyCsvs {
                names: csvs.into_iter().map(|c| c.name).collect(),
            });
        }
    };
    let csv_name = csv_object.name.clone();
    let (typed, decoded) = decode::csv(&csv_object.manifest).map_err(|e| StepsError::InvalidCsv {
        csv: csv_name.clone(),
        message: e.to_string(),
    })?;
    csv_object.manifest = decoded;
    if typed.spec.install.strategy != INSTALL_STRATEGY_DEPLOYMENT {
        return Err(StepsError::UnsupportedStrategy {
            csv: csv_name,
            strategy: typed.spec.install.strategy.clone(),
        });
    }

    let namespace = input.namespace;
    let managed = managed_labels(input.package, namespace);
    let owner = owner_labels(&csv_name, namespace);

    // The CSV, rewritten like upstream's NewStepResourceFromBundle.
    normalise(&mut csv_object.manifest, Some(namespace));
    if let Some(spec) = csv_object.manifest.get_mut("spec").and_then(Value::as_object_mut) {
        match input.replaces {
            Some(r) if !r.is_empty() => {
                spec.insert("replaces".to_owned(), Value::String(r.to_owned()));
            }
            // A fresh install keeps the catalog's `replaces` (an empty one is dropped).
            _ => {
                if spec.get("replaces").and_then(Value::as_str) == Some("") {
                    spec.remove("replaces");
                }
            }
        }
    }
    let properties = json!({ "properties": input.properties }).to_string();
    merge_metadata(
        &mut csv_object.manifest,
        "annotations",
        &BTreeMap::from([(PROPERTIES.to_owned(), properties)]),
    );
    merge_metadata(&mut csv_object.manifest, "labels", &managed);

    // Bundle objects: check the kind, set scope, labels, annotations.
    let mut seen = BTreeSet::new();
    let mut bundle_objects = Vec::with_capacity(others.len());
    for mut object in others {
        // Upstream picks how to write a bundle object by its kind alone (`ExecutePlan`'s switch):
        // a kind it writes through a typed client is written as that core kind, its fields read as
        // that type, whatever group the manifest names (a custom `Secret` of another group becomes
        // a core Secret). So do we.
        if let Some((group, version)) = typed_by_kind(&object.kind)
            && object.group != group
        {
            object.group = group.to_owned();
            object.version = version.to_owned();
            if let Some(manifest) = object.manifest.as_object_mut() {
                let api_version = if group.is_empty() {
                    version.to_owned()
                } else {
                    format!("{group}/{version}")
                };
                manifest.insert("apiVersion".into(), json!(api_version));
            }
        }
        let Some(namespaced) = SUPPORTED_KINDS
            .iter()
            .find(|(g, k, _)| *g == object.group && *k == object.kind)
            .map(|(_, _, n)| *n)
        else {
            return Err(StepsError::UnsupportedKind {
                api_version: if object.group.is_empty() {
                    object.version.clone()
                } else {
                    format!("{}/{}", object.group, object.version)
                },
                kind: object.kind,
                name: object.name,
            });
        };
        if !seen.insert((object.kind.clone(), object.name.clone())) {
            return Err(StepsError::DuplicateObject {
                kind: object.kind,
                name: object.name,
            });
        }
        object.manifest = decode::object(&object.group, &object.version, &object.kind, &object.manifest)
            .map_err(|e| StepsError::InvalidObject {
                kind: object.kind.clone(),
                name: object.name.clone(),
                message: e.to_string(),
            })?;
        normalise(&mut object.manifest, namespaced.then_some(namespace));
        merge_metadata(&mut object.manifest, "labels", &managed);
        let is_rbac = object.group == RBAC_GROUP;
        let is_crd = object.group == "apiextensions.k8s.io" && object.kind == "CustomResourceDefinition";
        if is_crd {
            object.manifest =
                with_installed_alongside(&object.manifest, namespace, &csv_name, &BTreeMap::new());
        } else if is_rbac || !namespaced {
            merge_metadata(&mut object.manifest, "labels", &owner);
        }
        if is_rbac {
            let hashed = match object.kind.as_str() {
                "Role" | "ClusterRole" => json!([
                    object.manifest.get("rules"),
                    object.manifest.get("aggregationRule")
                ]),
                _ => json!([object.manifest.get("roleRef"), object.manifest.get("subjects")]),
            };
            merge_metadata(
                &mut object.manifest,
                "labels",
                &BTreeMap::from([(PERMISSIONS_HASH.to_owned(), permissions_hash(&hashed))]),
            );
        }
        bundle_objects.push(object);
    }

    // Generated RBAC; a ServiceAccount the bundle ships itself replaces the generated one.
    let rbac = generated_rbac(&csv_name, namespace, input.package, &typed.spec.install.spec);
    let mut generated = Vec::new();
    let mut push_typed = |value: Result<Value, serde_json::Error>, kind: &str, name: Option<&String>| {
        let manifest = value.unwrap_or(Value::Null);
        let (group, version) = split_api_version(
            manifest
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        generated.push(Object {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            name: name.cloned().unwrap_or_default(),
            manifest: manifest.clone(),
        });
    };
    for sa in &rbac.service_accounts {
        let name = sa.metadata.name.as_ref();
        if name.is_some_and(|n| seen.contains(&("ServiceAccount".to_owned(), n.clone()))) {
            continue;
        }
        push_typed(serde_json::to_value(sa), "ServiceAccount", name);
    }
    for r in &rbac.roles {
        push_typed(serde_json::to_value(r), "Role", r.metadata.name.as_ref());
    }
    for r in &rbac.role_bindings {
        push_typed(serde_json::to_value(r), "RoleBinding", r.metadata.name.as_ref());
    }
    for r in &rbac.cluster_roles {
        push_typed(serde_json::to_value(r), "ClusterRole", r.metadata.name.as_ref());
    }
    for r in &rbac.cluster_role_bindings {
        push_typed(
            serde_json::to_value(r),
            "ClusterRoleBinding",
            r.metadata.name.as_ref(),
        );
    }

    // A stable sort by rank: generated objects stay before shipped ones of the same rank.
    let mut all: Vec<Object> = generated;
    all.push(csv_object);
    all.extend(bundle_objects);
    all.sort_by_key(|o| rank(&o.group, &o.kind));

    Ok(all
        .into_iter()
        .map(|o| Step {
            resolving: csv_name.clone(),
            resource: StepResource {
                source_name: input.source_name.to_owned(),
                source_namespace: input.source_namespace.to_owned(),
                kind: if o.group.is_empty() && o.kind == "Secret" {
                    BUNDLE_SECRET_KIND.to_owned()
                } else {
                    o.kind
                },
                group: o.group,
                version: o.version,
                name: o.name,
                manifest: Some(go_json(o.manifest)),
            },
            optional: false,
            status: StepStatus::Unknown,
        })
        .collect())
}

/// A step's manifest as JSON text, numbers written as Go's `encoding/json` writes a `float64`:
/// an integral value without a fraction (`5`, not `5.0`: a CRD schema's `minimum` and `maximum`
/// are `float64` in Go and `f64` here, and upstream's plans show `5`).
fn go_json(mut manifest: Value) -> String {
    fn integral_floats(value: &mut Value) {
        match value {
            Value::Number(n) if n.is_f64() => {
                if let Some(f) = n.as_f64()
                    && f.fract() == 0.0
                    && f.abs() < 1e15
                {
                    #[allow(clippy::cast_possible_truncation, reason = "integral and below 2^53")]
                    let i = f as i64;
                    *value = Value::from(i);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(integral_floats),
            Value::Object(map) => map.values_mut().for_each(integral_floats),
            _ => {}
        }
    }
    integral_floats(&mut manifest);
    manifest.to_string()
}

/// Whether an object of this step kind gets an owner reference to the CSV it belongs to when it
/// is namespaced: everything but the CSV itself and generated Subscriptions (see the module
/// documentation).
pub fn owned_by_csv(kind: &str) -> bool {
    kind != CSV_KIND && kind != SUBSCRIPTION_KIND
}

/// The step creating `subscription`, a Subscription generated for a dependency
/// ([`crate::resolve::Dependency::subscription`]), which installs `bundle`. The manifest gains the
/// Operator-API component label of the dependency's package (`operators.coreos.com/<package>.<ns>`),
/// which upstream's adoption controller puts on every Subscription.
///
/// # Errors
/// [`StepsError::MissingField`] when the Subscription has no name or namespace.
pub fn subscription_step(subscription: &v1alpha1::Subscription, bundle: &str) -> Result<Step, StepsError> {
    let missing = |field| StepsError::MissingField {
        index: 0,
        kind: SUBSCRIPTION_KIND.to_owned(),
        field,
    };
    let name = subscription
        .metadata
        .name
        .clone()
        .ok_or(missing("metadata.name"))?;
    let namespace = subscription
        .metadata
        .namespace
        .clone()
        .ok_or(missing("metadata.namespace"))?;
    let mut manifest = serde_json::to_value(subscription).unwrap_or_default();
    manifest["apiVersion"] = json!(v1alpha1::API_VERSION);
    manifest["kind"] = json!(SUBSCRIPTION_KIND);
    if let Some(map) = manifest.as_object_mut() {
        map.remove("status");
    }
    if let Some(key) = component_label_key(&subscription.spec.name, &namespace) {
        merge_metadata(&mut manifest, "labels", &BTreeMap::from([(key, String::new())]));
    }
    let (group, version) = split_api_version(v1alpha1::API_VERSION);
    Ok(Step {
        resolving: bundle.to_owned(),
        resource: StepResource {
            source_name: subscription.spec.source.clone(),
            source_namespace: subscription.spec.source_namespace.clone(),
            group: group.to_owned(),
            version: version.to_owned(),
            kind: SUBSCRIPTION_KIND.to_owned(),
            name,
            manifest: Some(go_json(manifest)),
        },
        optional: false,
        status: StepStatus::Unknown,
    })
}

#[cfg(test)]
mod tests;
