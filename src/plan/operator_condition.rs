//! operator_condition: the OperatorCondition of each ClusterServiceVersion, as pure functions.
//!
//! # The rule this module enforces
//!
//! An operator can say "do not upgrade me now", and OLM listens (upstream
//! `operators/operatorconditiongenerator_controller.go`, `operators/operatorcondition_controller.go`
//! and `olm/operatorconditions.go`):
//!
//! - **One OperatorCondition per CSV** ([`desired`]): same name and namespace, controlled by the
//!   CSV (owner reference `controller: true`, `blockOwnerDeletion: false`, so the garbage
//!   collector removes it with the CSV), `spec.serviceAccounts` = the ServiceAccounts of
//!   `clusterPermissions` then `permissions` as listed (`["default"]` when none), and
//!   `spec.deployments` = the install strategy's Deployment names, and the CSV's Operator
//!   component label (upstream's adoption controller labels it). Nothing else of the object is
//!   OLM's: the operator writes `spec.conditions`, an admin `spec.overrides`.
//! - **The operator may read and write its own OperatorCondition** ([`role`],
//!   [`role_binding`]): a Role and a RoleBinding named like it, labelled `olm.managed=true`,
//!   controlled by it, granting `get`, `update`, `patch` on `operatorconditions` for that one
//!   resource name to every ServiceAccount of `spec.serviceAccounts`.
//! - **What the operator says becomes the status** ([`synced_status`]): each condition of
//!   `spec.conditions` is copied into `status.conditions` with `observedGeneration` = the
//!   object's generation (unchanged ones, same status and generation, are left alone).
//! - **`Upgradeable` gates upgrades away from the CSV** ([`upgrade_blocker`]): a CSV replacing
//!   it stays `Pending` `OperatorConditionNotUpgradeable` while the replaced CSV's
//!   OperatorCondition has an `Upgradeable` override that is not `True`, or (without an
//!   override) an `Upgradeable` status condition that is `False` or was observed at an older
//!   generation than the object's. No OperatorCondition, or no `Upgradeable` condition, is
//!   upgradeable. Overrides always win over the operator's conditions. An override of any
//!   other type changes nothing, as upstream, and is reported ([`ignored_overrides`]).
//!
//! `OPERATOR_CONDITION_NAME` (= the CSV name) is put into every container of the operator's
//! Deployments by the install strategy itself ([`super::csv::desired_deployments`]), after the
//! Subscription's config as upstream, so upstream's separate Deployment fix-up is not needed.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject},
    apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, OwnerReference},
};
use kube::{Resource, ResourceExt};

use super::steps::CSV_KIND;
use crate::api::{
    GROUP,
    labels::MANAGED,
    v1alpha1::{self, ClusterServiceVersion},
    v2::{self, OperatorCondition, OperatorConditionSpec, OperatorConditionStatus, UPGRADEABLE},
};

/// The kind, as owner references name it.
pub const KIND: &str = "OperatorCondition";

/// The ServiceAccounts an operator runs as: `clusterPermissions` then `permissions`, as listed
/// (upstream keeps duplicates), or `["default"]` when the CSV names none.
pub fn service_account_names(csv: &ClusterServiceVersion) -> Vec<String> {
    let strategy = &csv.spec.install.spec;
    let names: Vec<String> = strategy
        .cluster_permissions
        .iter()
        .chain(strategy.permissions.iter())
        .map(|p| p.service_account_name.clone())
        .filter(|n| !n.is_empty())
        .collect();
    if names.is_empty() {
        vec!["default".to_owned()]
    } else {
        names
    }
}

/// The install strategy's Deployment names.
pub fn deployment_names(csv: &ClusterServiceVersion) -> Vec<String> {
    csv.spec
        .install
        .spec
        .deployments
        .iter()
        .map(|d| d.name.clone())
        .filter(|n| !n.is_empty())
        .collect()
}

/// The OperatorCondition OLM keeps for `csv` (only the fields OLM owns), or `None` while the
/// CSV has no uid to be owned by (it was never read from the API server) and once it is going
/// (being deleted, or `Deleting` after its replacement succeeded): a new OperatorCondition
/// would only wait for the garbage collector.
pub fn desired(csv: &ClusterServiceVersion) -> Option<OperatorCondition> {
    let deleting = csv.metadata.deletion_timestamp.is_some()
        || csv.status.as_ref().and_then(|s| s.phase.as_ref()) == Some(&v1alpha1::CsvPhase::Deleting);
    if deleting {
        return None;
    }
    let uid = csv.metadata.uid.clone()?;
    let name = csv.name_any();
    let mut oc = OperatorCondition::new(
        &name,
        OperatorConditionSpec {
            service_accounts: service_account_names(csv),
            deployments: deployment_names(csv),
            ..OperatorConditionSpec::default()
        },
    );
    oc.metadata.namespace = csv.namespace();
    // The CSV's Operator component label, as upstream's adoption controller puts on every object
    // the CSV owns (so the Operator lists it).
    let component_labels = crate::api::labels::component_labels(csv.labels());
    oc.metadata.labels = (!component_labels.is_empty()).then_some(component_labels);
    oc.metadata.owner_references = Some(vec![controller_ref(v1alpha1::API_VERSION, CSV_KIND, &name, uid)]);
    Some(oc)
}

/// Whether the OperatorCondition seen in the cluster already has what [`desired`] asks for
/// (upstream compares owner references, deployments and ServiceAccounts).
pub fn up_to_date(desired: &OperatorCondition, seen: &OperatorCondition) -> bool {
    desired
        .labels()
        .iter()
        .all(|(k, v)| seen.labels().get(k) == Some(v))
        && desired.owner_references() == seen.owner_references()
        && desired.spec.deployments == seen.spec.deployments
        && desired.spec.service_accounts == seen.spec.service_accounts
}

fn controller_ref(api_version: &str, kind: &str, name: &str, uid: String) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid,
        controller: Some(true),
        block_owner_deletion: Some(false),
    }
}

/// Metadata of the Role and RoleBinding of `oc`: its name and namespace, `olm.managed=true`,
/// controlled by it. `None` without a uid.
fn owned_meta(oc: &OperatorCondition) -> Option<ObjectMeta> {
    let uid = oc.metadata.uid.clone()?;
    let name = oc.name_any();
    Some(ObjectMeta {
        name: Some(name.clone()),
        namespace: oc.namespace(),
        labels: Some(BTreeMap::from([(MANAGED.to_owned(), "true".to_owned())])),
        owner_references: Some(vec![controller_ref(v2::API_VERSION, KIND, &name, uid)]),
        ..ObjectMeta::default()
    })
}

/// The Role letting the operator get, update and patch its own OperatorCondition (and nothing
/// else). `None` while `oc` has no uid.
pub fn role(oc: &OperatorCondition) -> Option<Role> {
    Some(Role {
        metadata: owned_meta(oc)?,
        rules: Some(vec![PolicyRule {
            verbs: vec!["get".to_owned(), "update".to_owned(), "patch".to_owned()],
            api_groups: Some(vec![GROUP.to_owned()]),
            resources: Some(vec!["operatorconditions".to_owned()]),
            resource_names: Some(vec![oc.name_any()]),
            non_resource_urls: None,
        }]),
    })
}

/// The RoleBinding of [`role`] to every ServiceAccount of `spec.serviceAccounts`. `None` while
/// `oc` has no uid.
pub fn role_binding(oc: &OperatorCondition) -> Option<RoleBinding> {
    Some(RoleBinding {
        metadata: owned_meta(oc)?,
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_owned()),
            kind: "Role".to_owned(),
            name: oc.name_any(),
        },
        subjects: Some(
            oc.spec
                .service_accounts
                .iter()
                .map(|sa| Subject {
                    kind: "ServiceAccount".to_owned(),
                    name: sa.clone(),
                    // As upstream: no apiGroup (the core group) and no namespace (the binding's).
                    api_group: None,
                    namespace: None,
                })
                .collect(),
        ),
    })
}

/// The status once `spec.conditions` are copied in (upstream `syncOperatorConditionStatus`), or
/// `None` when every one of them is already there with the same status at the object's
/// generation. A copied condition keeps the `lastTransitionTime` the operator gave it when it
/// is new or its status changed, and the stored one otherwise (`meta.SetStatusCondition`).
pub fn synced_status(oc: &OperatorCondition) -> Option<OperatorConditionStatus> {
    let generation = oc.metadata.generation;
    let mut status = oc.status.clone().unwrap_or_default();
    let mut changed = false;
    for wanted in &oc.spec.conditions {
        let observed = Condition {
            observed_generation: generation,
            ..wanted.clone()
        };
        match status.conditions.iter_mut().find(|c| c.type_ == wanted.type_) {
            None => status.conditions.push(observed),
            Some(current) => {
                if current.status == wanted.status && current.observed_generation == generation {
                    continue;
                }
                let last_transition_time = if current.status == wanted.status {
                    current.last_transition_time.clone()
                } else {
                    wanted.last_transition_time.clone()
                };
                *current = Condition {
                    last_transition_time,
                    ..observed
                };
            }
        }
        changed = true;
    }
    changed.then_some(status)
}

/// Why an OperatorCondition holds the upgrade away from its CSV.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpgradeBlock {
    /// An admin's `spec.overrides` sets `Upgradeable` to something other than `True`.
    Override {
        /// The override's status.
        status: String,
        /// The override's message.
        message: String,
    },
    /// The operator reports `Upgradeable=False`.
    NotUpgradeable {
        /// The condition's message.
        message: String,
    },
    /// The `Upgradeable` status condition was observed at an older generation than the
    /// object's: OLM has not yet copied what the operator says now.
    Outdated {
        /// The stale condition's status.
        status: String,
    },
}

impl std::fmt::Display for UpgradeBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Override { status, message } => write!(
                f,
                "{message} (spec.overrides sets {UPGRADEABLE}={status}; remove the override or set it to \
                 True to let the upgrade proceed)"
            ),
            Self::NotUpgradeable { message } => write!(
                f,
                "{message} (the operator reports {UPGRADEABLE}=False; the upgrade proceeds once it \
                 reports True, or when an admin adds an {UPGRADEABLE}=True entry to spec.overrides)"
            ),
            Self::Outdated { status } => write!(
                f,
                "the operatorcondition status {UPGRADEABLE:?}={status:?} is outdated (observed at \
                 an older generation; it is refreshed from spec.conditions)"
            ),
        }
    }
}

/// The Warning to give when `spec.overrides` holds entries OLM does not act on: upstream reads
/// only an `Upgradeable` override (`isOperatorUpgradeable`), so an override of any other type
/// changes nothing, and an admin who wrote one must hear so rather than trust it.
pub fn ignored_overrides(oc: &OperatorCondition) -> Option<String> {
    let mut ignored: Vec<&str> = Vec::new();
    for t in oc.spec.overrides.iter().map(|o| o.type_.as_str()) {
        if t != UPGRADEABLE && !ignored.contains(&t) {
            ignored.push(t);
        }
    }
    if ignored.is_empty() {
        return None;
    }
    Some(format!(
        "spec.overrides of type {} has no effect: OLM acts only on an override of type \
         {UPGRADEABLE} (remove the entry; the operator reports other conditions in \
         spec.conditions)",
        ignored
            .iter()
            .map(|t| format!("{t:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Whether the upgrade away from the CSV whose OperatorCondition is `oc` must wait, and why
/// (upstream `isOperatorUpgradeable`): overrides first, then the status condition. No
/// OperatorCondition, or no `Upgradeable` entry, is upgradeable.
pub fn upgrade_blocker(oc: Option<&OperatorCondition>) -> Option<UpgradeBlock> {
    let oc = oc?;
    if let Some(o) = oc.spec.overrides.iter().find(|o| o.type_ == UPGRADEABLE) {
        return (o.status != "True").then(|| UpgradeBlock::Override {
            status: o.status.clone(),
            message: o.message.clone(),
        });
    }
    let c = oc
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == UPGRADEABLE)?;
    // As upstream: only an older generation is outdated (an operator writing the status
    // directly through the v1 API may record a newer one).
    if c.observed_generation.unwrap_or_default() < oc.meta().generation.unwrap_or_default() {
        return Some(UpgradeBlock::Outdated {
            status: c.status.clone(),
        });
    }
    (c.status == "False").then(|| UpgradeBlock::NotUpgradeable {
        message: c.message.clone(),
    })
}

/// The message of a CSV held `Pending` `OperatorConditionNotUpgradeable` by the OperatorCondition
/// of the CSV it replaces (upstream's prefix, then the reason and the way out).
pub fn not_upgradeable_message(replaced: &str, block: &UpgradeBlock) -> String {
    format!("operator is not upgradeable: OperatorCondition {replaced}: {block}")
}

#[cfg(test)]
mod tests;
