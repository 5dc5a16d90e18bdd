//! user_roles: the ClusterRoles that let the people of a namespace use the APIs its operators
//! provide, and the OperatorGroup's `olm.providedAPIs` annotation.
//!
//! # The rules (upstream `olm/operatorgroup.go`, `resolver/cache/operators.go`)
//!
//! 1. **Provided APIs** ([`provided_apis`]): a CSV provides each owned CRD version
//!    (`<plural>.<group>` split at the first dot) and each owned APIService
//!    (group, version, kind, plural = its `name`). An API is keyed `<Kind>.<version>.<group>`
//!    ([`ApiKey::gvk`]); the plural is not part of the key.
//! 2. **`olm.providedAPIs`** ([`provided_apis_annotation`]): the keys of every API provided by
//!    a CSV of the group's namespace, sorted and comma-joined; copied CSVs, CSVs not yet
//!    checked by the CSV controller (no phase) and CSVs failed
//!    `InterOperatorGroupOwnerConflict` are left out ([`claims_its_apis`]), so a CSV whose API
//!    another group provides never makes its own group a provider. A group with
//!    `spec.staticProvidedAPIs: true` keeps the annotation it was given.
//! 3. **Per-API roles** ([`provided_api_cluster_roles`], upstream `ensureClusterRolesForCSV`):
//!    per owned CRD version, `<crd>-<version>-{admin,edit,view}` granting `*`,
//!    `create/update/patch/delete`, `get/list/watch` on the resource, plus
//!    `<crd>-<version>-crdview` granting `get` on that CRD; per owned APIService the first
//!    three. Each carries `rbac.authorization.k8s.io/aggregate-to-<role>: "true"` (so the
//!    cluster's `admin`/`edit`/`view` roles pick it up), `olm.opgroup.permissions/
//!    aggregate-to-<hash>-<role>: "true"` with `<hash>` the FNV-1a 64 hex of the API key
//!    ([`api_hash`]), and `olm.managed: "true"`; its owner is the CRD or APIService
//!    (non-blocking, not controller), so the garbage collector removes it with the API.
//! 4. **Per-group roles** ([`operator_group_cluster_roles`], upstream
//!    `ensureOpGroupClusterRoles`): `olm.og.<group>.{admin,edit,view}-<suffix>`, `<suffix>` the
//!    base-62 SHA-224 of `<namespace>/<group>/<role>` ([`operator_group_role_name`]), labelled
//!    with the owner labels and `olm.managed`, aggregating (one selector per API, sorted) the
//!    per-API roles of the APIs in `olm.providedAPIs` and the member CSVs. With no API the
//!    role has no aggregation rule.
//! 5. **Deleted groups' roles** ([`orphaned_group_roles`], upstream `operatorGroupDeleted`):
//!    a group role whose owner labels name an OperatorGroup that no longer exists is deleted.
//!
//! # Where we differ from upstream
//!
//! Upstream deletes the roles in its OperatorGroup delete handler. Here a sweep compares the
//! stored group roles with the stored groups (a reconcile of a deleted group never runs):
//! shortly after any OperatorGroup event or a group role event naming a missing group, and
//! every five minutes ([`crate::controller::operator_group::sweep_task`]); so a role left by a
//! group deleted while olm-rs was down goes too.
//!
//! The per-API roles' owner reference names the CRD with kind `CustomResourceDefinition`
//! (upstream writes the lowercase `customresourcedefinition`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{
    api::rbac::v1::{AggregationRule, ClusterRole, PolicyRule},
    apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference},
};
use kube::ResourceExt;
use sha2::{Digest, Sha224};
use thiserror::Error;

use crate::{
    api::{
        labels::{MANAGED, OWNER, OWNER_KIND, OWNER_NAMESPACE},
        v1::OperatorGroup,
        v1alpha1::{ClusterServiceVersion, CsvPhase, CsvReason},
    },
    plan::copied_csv::is_copy,
};

/// The OperatorGroup annotation listing the APIs its operators provide.
pub const PROVIDED_APIS: &str = "olm.providedAPIs";
/// The role levels, in upstream's order.
pub const ROLE_LEVELS: [&str; 3] = ["admin", "edit", "view"];
/// Longest Kubernetes object name (ClusterRoles are not label-limited).
const NAME_LIMIT: usize = 253;

/// The verbs of a role level (upstream `VerbsForSuffix`).
pub fn verbs_for(level: &str) -> &'static [&'static str] {
    match level {
        "admin" => &["*"],
        "edit" => &["create", "update", "patch", "delete"],
        _ => &["get", "list", "watch"],
    }
}

/// Why a CSV's provided APIs cannot be listed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum UserRoleError {
    /// An owned CRD name without a group.
    #[error(
        "ClusterServiceVersion {csv}: spec.customresourcedefinitions.owned name {name:?} is not \
         <plural>.<group>; use the CRD's metadata.name, e.g. redisclusters.cache.example.com"
    )]
    CrdName {
        /// The CSV.
        csv: String,
        /// The bad name.
        name: String,
    },
}

/// One provided API.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiKey {
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

impl ApiKey {
    /// `<Kind>.<version>.<group>` (upstream `APIKeyToGVKString`).
    pub fn gvk(&self) -> String {
        format!("{}.{}.{}", self.kind, self.version, self.group)
    }
}

/// Where a provided API comes from: a CRD (`<plural>.<group>`) or an APIService
/// (`<version>.<group>`), and the rules' resource name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvidedApi {
    /// Its key.
    pub key: ApiKey,
    /// The plural resource name.
    pub plural: String,
    /// The CRD name, or `None` for an APIService.
    pub crd: Option<String>,
}

impl ProvidedApi {
    /// The name of the owning object: the CRD, or the APIService `<version>.<group>`.
    pub fn owner_name(&self) -> String {
        self.crd
            .clone()
            .unwrap_or_else(|| format!("{}.{}", self.key.version, self.key.group))
    }
}

/// The APIs a CSV provides (rule 1), in the CSV's order.
///
/// # Errors
/// [`UserRoleError::CrdName`] for an owned CRD named without a group.
pub fn provided_apis(csv: &ClusterServiceVersion) -> Result<Vec<ProvidedApi>, UserRoleError> {
    let mut out = Vec::new();
    for owned in csv.spec.custom_resource_definitions.iter().flat_map(|d| &d.owned) {
        let Some((plural, group)) = owned.name.split_once('.') else {
            return Err(UserRoleError::CrdName {
                csv: csv.name_any(),
                name: owned.name.clone(),
            });
        };
        out.push(ProvidedApi {
            key: ApiKey {
                group: group.to_owned(),
                version: owned.version.clone(),
                kind: owned.kind.clone(),
            },
            plural: plural.to_owned(),
            crd: Some(owned.name.clone()),
        });
    }
    for owned in csv.spec.api_service_definitions.iter().flat_map(|d| &d.owned) {
        out.push(ProvidedApi {
            key: ApiKey {
                group: owned.group.clone(),
                version: owned.version.clone(),
                kind: owned.kind.clone(),
            },
            plural: owned.name.clone(),
            crd: None,
        });
    }
    Ok(out)
}

/// Whether a CSV's APIs count for its group's annotation: not a copy (upstream `IsCopied`:
/// [`is_copy`]), past the CSV controller's group checks (a phase is set) and not failed
/// `InterOperatorGroupOwnerConflict` (another group provides its APIs; see
/// [`crate::plan::csv::group_conflict`]).
pub fn claims_its_apis(csv: &ClusterServiceVersion) -> bool {
    let status = csv.status.as_ref();
    let phase = status.and_then(|s| s.phase.clone()).unwrap_or_default();
    let conflicted = phase == CsvPhase::Failed
        && status.and_then(|s| s.reason.as_ref()) == Some(&CsvReason::InterOperatorGroupOwnerConflict);
    !is_copy(csv) && phase != CsvPhase::None && !conflicted
}

/// The API keys provided by the CSVs of a namespace that claim them ([`claims_its_apis`]);
/// CSVs whose APIs cannot be listed are skipped (their own controller reports them).
pub fn namespace_provided_apis<'a>(
    csvs: impl IntoIterator<Item = &'a ClusterServiceVersion>,
) -> BTreeSet<ApiKey> {
    csvs.into_iter()
        .filter(|csv| claims_its_apis(csv))
        .filter_map(|csv| provided_apis(csv).ok())
        .flatten()
        .map(|p| p.key)
        .collect()
}

/// The `olm.providedAPIs` value: keys sorted and comma-joined (rule 2).
pub fn provided_apis_annotation(apis: &BTreeSet<ApiKey>) -> String {
    let set: BTreeSet<String> = apis.iter().map(ApiKey::gvk).collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

/// Parses an `olm.providedAPIs` value (upstream `GVKStringToProvidedAPISet`): entries
/// `<Kind>.<version>.<group>`, spaces ignored, malformed entries skipped.
pub fn parse_provided_apis(value: &str) -> BTreeSet<ApiKey> {
    value
        .split(',')
        .map(|s| s.replace(' ', ""))
        .filter_map(|s| {
            let mut parts = s.splitn(3, '.');
            let kind = parts.next().filter(|k| !k.is_empty())?;
            let version = parts.next().filter(|v| !v.is_empty())?;
            let group = parts.next()?;
            Some(ApiKey {
                group: group.to_owned(),
                version: version.to_owned(),
                kind: kind.to_owned(),
            })
        })
        .collect()
}

/// The annotation the group should carry, or `None` to leave it alone: a static group keeps
/// its own; a group with nothing provided and no annotation gets none (as upstream, which
/// only writes it once a CSV provides something).
pub fn desired_provided_apis(og: &OperatorGroup, provided: &BTreeSet<ApiKey>) -> Option<String> {
    if og.spec.static_provided_apis == Some(true) {
        return None;
    }
    let current = og.annotations().get(PROVIDED_APIS);
    let want = provided_apis_annotation(provided);
    match current {
        Some(have) if *have == want => None,
        None if want.is_empty() => None,
        _ => Some(want),
    }
}

/// FNV-1a 64 of the API key, in hex (upstream `APIKeyToGVKHash`).
pub fn api_hash(key: &ApiKey) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.gvk().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:x}")
}

/// The label a per-API role carries for the group roles to aggregate it.
pub fn aggregation_label(key: &ApiKey, level: &str) -> String {
    format!("olm.opgroup.permissions/aggregate-to-{}-{level}", api_hash(key))
}

/// Base-62 of a big-endian number, with Go's `big.Int.Text(62)` digits.
fn base62(bytes: &[u8]) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut num: Vec<u32> = bytes.iter().map(|b| u32::from(*b)).collect();
    let mut out = Vec::new();
    while num.iter().any(|d| *d != 0) {
        let mut rem = 0u32;
        for d in &mut num {
            let cur = rem * 256 + *d;
            *d = cur / 62;
            rem = cur % 62;
        }
        out.push(DIGITS[rem as usize]);
    }
    if out.is_empty() {
        out.push(b'0');
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// `olm.og.<group>.<level>-<suffix>` (upstream `getClusterRoleName`): the suffix is the
/// base-62 SHA-224 of `<namespace>/<group>/<level>`; a long group name is cut so the whole
/// stays within 253 characters.
pub fn operator_group_role_name(namespace: &str, group: &str, level: &str) -> String {
    let suffix = base62(&Sha224::digest(format!("{namespace}/{group}/{level}").as_bytes()));
    let limit = NAME_LIMIT - "olm.og..-".len() - level.len() - suffix.len();
    let name = if group.len() < limit {
        group
    } else {
        group.get(..limit).unwrap_or(group)
    };
    format!("olm.og.{name}.{level}-{suffix}")
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Whether the stored `current` role already holds everything `desired` sets: its labels, owner
/// references, aggregation rule, and (for a role that aggregates nothing) its rules. An
/// aggregated role's rules are filled by the API server's aggregation controller, so they are
/// not compared.
#[must_use]
pub fn role_is_current(desired: &ClusterRole, current: &ClusterRole) -> bool {
    let labels_held = desired
        .labels()
        .iter()
        .all(|(k, v)| current.labels().get(k) == Some(v));
    let owners_held = desired
        .owner_references()
        .iter()
        .all(|o| current.owner_references().contains(o));
    let rules_held = desired.aggregation_rule.is_some() || desired.rules == current.rules;
    labels_held && owners_held && desired.aggregation_rule == current.aggregation_rule && rules_held
}

/// The three roles of an OperatorGroup aggregating the per-API roles of `apis` (rule 4).
pub fn operator_group_cluster_roles(og: &OperatorGroup, apis: &BTreeSet<ApiKey>) -> Vec<ClusterRole> {
    let ns = og.namespace().unwrap_or_default();
    let name = og.name_any();
    ROLE_LEVELS
        .iter()
        .map(|level| {
            let selectors: BTreeSet<String> = apis.iter().map(|k| aggregation_label(k, level)).collect();
            let aggregation_rule = (!selectors.is_empty()).then(|| AggregationRule {
                cluster_role_selectors: Some(
                    selectors
                        .into_iter()
                        .map(|l| LabelSelector {
                            match_labels: Some(labels(&[(&l, "true")])),
                            match_expressions: None,
                        })
                        .collect(),
                ),
            });
            ClusterRole {
                metadata: ObjectMeta {
                    name: Some(operator_group_role_name(&ns, &name, level)),
                    labels: Some(labels(&[
                        (MANAGED, "true"),
                        (OWNER, &name),
                        (OWNER_KIND, "OperatorGroup"),
                        (OWNER_NAMESPACE, &ns),
                    ])),
                    ..ObjectMeta::default()
                },
                aggregation_rule,
                rules: None,
            }
        })
        .collect()
}

/// The OperatorGroup (`(namespace, name)`) a group role belongs to (rule 4: labelled
/// `olm.owner.kind=OperatorGroup` with `olm.owner` and `olm.owner.namespace`), if it is one.
pub fn owning_group(role: &ClusterRole) -> Option<(&str, &str)> {
    let labels = role.metadata.labels.as_ref()?;
    if labels.get(OWNER_KIND).map(String::as_str) != Some("OperatorGroup") {
        return None;
    }
    Some((labels.get(OWNER_NAMESPACE)?, labels.get(OWNER)?))
}

/// The names of the group roles ([`owning_group`]) whose OperatorGroup is not in `groups` (its
/// `(namespace, name)`s): delete them (rule 5, upstream `operatorGroupDeleted`).
pub fn orphaned_group_roles<'a>(
    roles: impl IntoIterator<Item = &'a ClusterRole>,
    groups: &BTreeSet<(String, String)>,
) -> Vec<String> {
    roles
        .into_iter()
        .filter(|role| {
            owning_group(role).is_some_and(|(ns, name)| !groups.contains(&(ns.to_owned(), name.to_owned())))
        })
        .map(ResourceExt::name_any)
        .collect()
}

/// The owner of a per-API role: the CRD or APIService, by uid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiOwner {
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

fn role(
    name: String,
    level: &str,
    key: &ApiKey,
    rule: PolicyRule,
    owner_ref: &OwnerReference,
) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(labels(&[
                (&format!("rbac.authorization.k8s.io/aggregate-to-{level}"), "true"),
                (&aggregation_label(key, level), "true"),
                (MANAGED, "true"),
            ])),
            owner_references: Some(vec![owner_ref.clone()]),
            ..ObjectMeta::default()
        },
        aggregation_rule: None,
        rules: Some(vec![rule]),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// The per-API roles of one provided API (rule 3), owned by `owner` (the CRD or APIService
/// it names).
pub fn provided_api_cluster_roles(api: &ProvidedApi, owner: &ApiOwner) -> Vec<ClusterRole> {
    let (api_version, kind) = if api.crd.is_some() {
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    } else {
        ("apiregistration.k8s.io/v1", "APIService")
    };
    let owner_ref = OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
        block_owner_deletion: Some(false),
        controller: Some(false),
    };
    let prefix = format!(
        "{}-{}-",
        api.crd.as_deref().unwrap_or(&api.plural),
        api.key.version
    );
    let mut out: Vec<ClusterRole> = ROLE_LEVELS
        .iter()
        .map(|level| {
            let rule = PolicyRule {
                api_groups: Some(vec![api.key.group.clone()]),
                resources: Some(vec![api.plural.clone()]),
                verbs: strings(verbs_for(level)),
                ..PolicyRule::default()
            };
            role(format!("{prefix}{level}"), level, &api.key, rule, &owner_ref)
        })
        .collect();
    if let Some(crd) = &api.crd {
        let rule = PolicyRule {
            api_groups: Some(strings(&["apiextensions.k8s.io"])),
            resources: Some(strings(&["customresourcedefinitions"])),
            resource_names: Some(vec![crd.clone()]),
            verbs: strings(&["get"]),
            ..PolicyRule::default()
        };
        out.push(role(
            format!("{prefix}crdview"),
            "view",
            &api.key,
            rule,
            &owner_ref,
        ));
    }
    out
}

#[cfg(test)]
mod tests;
