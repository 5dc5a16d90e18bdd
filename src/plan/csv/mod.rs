//! csv: the ClusterServiceVersion state machine, as one pure function.
//!
//! # The lifecycle (upstream `olm/operator.go:transitionCSVState`, `olm/requirements.go`,
//! `install/deployment.go`, `install/status_viewer.go`)
//!
//! A CSV is created by an InstallPlan and then driven, one transition per reconcile, through
//!
//! ```text
//! "" ─▶ Pending ─▶ InstallReady ─▶ Installing ─▶ Succeeded ─▶ Replacing ─▶ Deleting
//!          ▲  │                       │   ▲          │
//!          │  └──────▶ Failed ◀───────┘   └──────────┘ (drift: back to InstallReady)
//!          └─────────────┘ (OperatorGroup fixed, requirements back, NeedsReinstall)
//! ```
//!
//! **Before the phase switch**, on every sync (except `Deleting`): the namespace must hold
//! exactly one OperatorGroup (else `Failed` `NoOperatorGroup` / `TooManyOperatorGroups`),
//! the CSV must carry the group's member annotations (when they differ, the decision asks
//! the shell to write them and continues with the wanted values), and the CSV's install
//! modes must support the group's targets (`InvalidInstallModes`, `NoTargetNamespaces`,
//! `UnsupportedOperatorGroup`; see [`super::operator_group`]). A CSV providing an API that
//! another OperatorGroup with intersecting targets already provides fails
//! `InterOperatorGroupOwnerConflict`, one providing an API its `spec.staticProvidedAPIs` group
//! does not list fails `CannotModifyStaticOperatorGroupProvidedAPIs`, and its Deployments are
//! deleted ([`group_conflict`]). A CSV that passes this rule says so in its decision
//! ([`CsvDecision::claim`]): the shell takes that claim of its APIs before doing anything the
//! decision asks, so of two CSVs deciding at once only the first installs, and the other fails
//! `InterOperatorGroupOwnerConflict` before it has a Deployment ([`claim_refused`]).
//!
//! **The phases:**
//!
//! - `""` → `Pending` `RequirementsUnknown` "requirements not yet checked".
//! - `Pending`: first, when it replaces a CSV whose OperatorCondition is not upgradeable
//!   ([`super::operator_condition`]: an `Upgradeable` override not `True`, else an
//!   `Upgradeable=False` or outdated status condition), stay `Pending`
//!   `OperatorConditionNotUpgradeable` with its message. Then requirements are checked and
//!   reported in `requirementStatus`: the server version is at least `spec.minKubeVersion`;
//!   every owned and required CRD exists, serves the version the CSV names and is `Established`; every ServiceAccount named by
//!   `permissions`/`clusterPermissions` exists and is not owned by an unrelated CSV. Unmet →
//!   stay `Pending` `RequirementsNotMet`. Another CSV outside this one's replacement chain
//!   owns one of its CRDs → `Failed` `OwnerConflict`. Replacing a CSV that is not yet
//!   `Replacing` → wait. Otherwise → `InstallReady` `AllRequirementsMet`. Whatever the
//!   outcome (but `Failed`), the components of the install that are missing or changed are
//!   restored with it ([`CsvDecision::restore`], see [`components`]): this is how a deleted
//!   ServiceAccount or Role comes back, and the requirement check that follows finds it.
//! - `InstallReady`: the install strategy runs — the decision carries the desired
//!   Deployments for the shell to apply — → `Installing` `InstallSucceeded` "waiting for
//!   install components to report healthy".
//! - `Installing`: every Deployment exists, is labelled as owned by this CSV with the
//!   current spec hash, has observed its generation, has rolled out all replicas and is
//!   `Available` → `Succeeded` `InstallSucceeded`. A Deployment past its progress deadline →
//!   `Failed` `InstallCheckFailed`. A Deployment whose spec hash or owner differs →
//!   `InstallReady` (apply again). A Deployment (or webhook Service) that does not exist →
//!   `Installing` `InstallWaiting` "installing: missing deployment with name=..." with the
//!   Deployments to apply again (those present are skipped by the shell). Still waiting →
//!   `Installing` `InstallWaiting`, until 5 minutes after `lastTransitionTime`, then `Failed`
//!   `InstallCheckFailed` "install timeout".
//! - `Succeeded`: a CSV in the namespace with `spec.replaces` naming this one → `Replacing`
//!   `BeingReplaced`; requirements lost (a ServiceAccount, or the RBAC the install made for
//!   it, deleted or changed: [`components`]) → `Failed` `RequirementsNotMet`; spec drift →
//!   `InstallReady`; a Deployment, webhook Service or other component missing, or unhealthy →
//!   `Failed` `ComponentUnhealthy` "installing: missing deployment with name=..." (or
//!   `InstallCheckFailed` past the progress deadline).
//! - `Failed`: with a fail-forward OperatorGroup and a replacement → `Replacing`; failed
//!   for an OperatorGroup reason (or `InterOperatorGroupOwnerConflict`,
//!   `CannotModifyStaticOperatorGroupProvidedAPIs`) that the pre-checks
//!   no longer see → `Pending`
//!   `RequirementsUnknown`; requirements unmet → `Pending` `RequirementsNotMet`; components
//!   healthy again → `Succeeded`; otherwise → `Pending` `NeedsReinstall` "installing: ...". An
//!   `InstallComponentFailedNoRetry` CSV stays frozen, an `OwnerConflict` stays while the
//!   conflict lasts, and `InvalidInstallModes` stays (only a new CSV fixes it).
//! - `Replacing`: a CSV still replacing an older one waits (the oldest in a chain goes
//!   first); when the replacement is `Succeeded` → `Deleting` `Replaced`.
//! - `Deleting`: the decision says `delete_self`; the shell deletes the CSV.
//!
//! **Failures outside the state machine** ([`failures`]): an object of the install strategy
//! the API server refuses fails the CSV `InstallComponentFailed` naming the object and the
//! fix; a CSV whose InstallPlan failed stays (or goes back to) `Pending`
//! `RequirementsNotMet` naming the plan's failed step, and one whose plan is retrying a
//! failed step waits in `Installing` instead of `Succeeded`.
//!
//! **Webhooks and owned APIServices** ([`webhooks`]): a CSV with `spec.webhookdefinitions`
//! or `spec.apiservicedefinitions.owned` gets, per webhook or APIService
//! Deployment, a CA and serving certificate (issued by the shell when [`webhooks::certs_due`]
//! says so), its Secret, Service and RBAC, the certificate mounted into the pod template, and
//! per description a Validating/MutatingWebhookConfiguration, the owned CRDs' conversion or an
//! APIService with the CA bundle (waited on until `Available`); all
//! applied with the Deployments in `InstallReady`. Invalid descriptions fail the CSV before the
//! phase switch (`InvalidWebhookDescription`, `UnsupportedOperatorGroup`); the CSV is healthy
//! only while every webhook object is in place with the CA in effect (else it is installed
//! again); a `Succeeded` CSV whose certificates are due goes `Pending` `NeedsCertRotation`, and
//! the install that follows records `certsLastUpdated`/`certsRotateAt`.
//!
//! **Upgrades** hand Deployments over by name: the new CSV's desired Deployments carry the
//! new owner labels and spec, so applying them re-owns the same-named Deployments of the old
//! CSV, as upstream's full `Update` does.
//!
//! **Status bookkeeping** (history appended only when phase or reason changes, trimmed to
//! 20, `lastTransitionTime` moving only with the phase) is [`crate::status::set_csv_phase`],
//! applied by [`CsvDecision::apply_to`]. When the new status is written at once and when it
//! waits (a new CSV's own plan still applying, a rollout's progress message) is
//! [`write_waits`].
//!
//! # Desired Deployments (upstream `install/deployment.go`)
//!
//! For each `spec.install.spec.deployments[]` entry: a Deployment of that name in the CSV's
//! namespace, labelled with the entry's `label` map plus `olm.managed=true` and the
//! `olm.owner*` labels, owned by the CSV (non-blocking, non-controller owner reference when
//! the CSV's uid is known); the pod template's annotations are its own overlaid with the
//! CSV's annotations (so `olm.targetNamespaces` reaches the operator through the downward
//! API); `revisionHistoryLimit: 1`; the owning Subscription's `spec.config` merged in (see
//! [`config`]: an invalid config fails the CSV `InstallComponentFailed`, and it stays `Failed`
//! until the config is fixed); then every container gets `OPERATOR_CONDITION_NAME=<csv>`
//! (replacing a variable of that name in place, even one the config set, else appended);
//! and `olm.deployment-spec-hash` = a hash of the resulting spec, so a config change is a
//! spec drift the CSV re-applies without a new InstallPlan. Deployments labelled as
//! owned by this CSV but no longer in its spec are listed for deletion.
//!
//! # Where we differ from upstream, and why
//!
//! - *No status write without news.* `lastUpdateTime` moves only when phase, reason or
//!   message change (upstream: every sync), so a steady CSV costs no API writes.
//! - *Waiting states requeue with a deadline.* The decision carries `requeue_after` so the
//!   5-minute install timeout fires on time even if no Deployment event arrives.
//! - *Not modelled:* the RBAC-rule authorizer check of upstream's requirements (the
//!   InstallPlan created the rules; we check the ServiceAccounts).
//! - *The `OperatorConditionNotUpgradeable` message says why and the way out*: upstream's
//!   "operator is not upgradeable: the operator is not upgradeable: <message>" becomes
//!   "operator is not upgradeable: OperatorCondition <replaced CSV>: <message> (...)", the
//!   same prefix, naming the object and how to let the upgrade proceed.
//! - *Installs heal* ([`components`]): upstream leaves a CSV whose ServiceAccount or RBAC was
//!   deleted in `Pending` `RequirementsNotMet` for good, and waits out the install timeout for a
//!   Deployment deleted while `Installing`; olm-rs puts them back (same phases and reasons on
//!   the way), and sends a Warning Event `ComponentMissing`/`ComponentChanged` naming each
//!   object it applies again ([`CsvDecision::missing`], [`CsvDecision::restore`]).
//! - *`kubectl.kubernetes.io/last-applied-configuration` is not copied* to pod templates: it
//!   is large, changes with every `kubectl apply` and would restart the operator for nothing.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    api::{
        apps::v1::{Deployment, DeploymentSpec},
        core::v1::EnvVar,
    },
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time},
};
use kube::ResourceExt;

use super::{
    encode_hash, hash_json,
    operator_condition::{UpgradeBlock, not_upgradeable_message},
    operator_group::{check_install_modes, member_annotations},
    steps::{CSV_KIND, owner_labels},
};
use crate::{
    api::{
        labels::{DEPLOYMENT_SPEC_HASH, MANAGED, OWNER},
        v1alpha1::{
            self, ClusterServiceVersion, ClusterServiceVersionStatus, CsvPhase, CsvReason, RequirementStatus,
            StatusReason,
        },
    },
    status::set_csv_phase,
};

/// How long a CSV may wait in `Installing` before it fails `InstallCheckFailed`.
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// How long after entering `Installing` a Deployment the stores do not show counts as deleted
/// and is applied again: the install applied it, and the Deployment store may lag behind that
/// apply for a moment (re-applying then would change nothing, but say it was missing).
pub const REAPPLY_MISSING_AFTER: Duration = Duration::from_secs(10);
/// Requeue period while requirements are missing.
pub const REQUIREMENTS_REQUEUE: Duration = Duration::from_secs(10);
/// Requeue period while waiting on another CSV or on Deployments.
pub const WAIT_REQUEUE: Duration = Duration::from_secs(5);
/// Requeue period while the replaced CSV's OperatorCondition holds the upgrade (a change of
/// that OperatorCondition wakes the CSV at once; this only bounds a missed event).
pub const NOT_UPGRADEABLE_REQUEUE: Duration = Duration::from_secs(60);
/// The annotation never copied to pod templates.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The env var naming the operator's OperatorCondition (= the CSV name).
pub const OPERATOR_CONDITION_ENV: &str = "OPERATOR_CONDITION_NAME";

/// A required APIService, as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequiredApiService {
    /// Condition `Available=True`.
    pub available: bool,
    /// Its uid.
    pub uid: Option<String>,
}

/// The owner reference every object the CSV's install strategy creates carries (Deployments,
/// webhook Services, Secrets and RBAC): not a controller, no blocking deletion, as upstream
/// (`ownerutil.NonBlockingOwner`). `None` until the CSV has a uid.
pub fn csv_owner_reference(csv: &ClusterServiceVersion) -> Option<OwnerReference> {
    csv.metadata.uid.as_ref().map(|uid| OwnerReference {
        api_version: v1alpha1::API_VERSION.to_owned(),
        kind: CSV_KIND.to_owned(),
        name: csv.name_any(),
        uid: uid.clone(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    })
}

/// The APIServices a CSV requires and does not own, by name `<version>.<group>`, sorted and
/// without repeats (upstream `GetRequiredAPIServiceDescriptions`).
pub fn required_api_service_names(csv: &ClusterServiceVersion) -> Vec<String> {
    let Some(defs) = csv.spec.api_service_definitions.as_ref() else {
        return Vec::new();
    };
    let name = |d: &v1alpha1::ApiServiceDescription| format!("{}.{}", d.version, d.group);
    let owned: std::collections::BTreeSet<String> = defs.owned.iter().map(name).collect();
    let required: std::collections::BTreeSet<String> = defs
        .required
        .iter()
        .map(name)
        .filter(|n| !owned.contains(n))
        .collect();
    required.into_iter().collect()
}

/// An OperatorGroup in the CSV's namespace, as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedOperatorGroup {
    /// Its name.
    pub name: String,
    /// Its `status.namespaces` (`None` until the OperatorGroup controller has written it).
    pub namespaces: Option<Vec<String>>,
    /// Whether it opted into `TechPreviewUnsafeFailForward` upgrades.
    pub fail_forward: bool,
}

/// A CRD the CSV owns or requires, as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CrdState {
    /// No such CRD.
    #[default]
    Absent,
    /// The CRD exists.
    Present {
        /// Whether its `Established` condition is `True`.
        established: bool,
        /// The versions it serves.
        served_versions: Vec<String>,
        /// Its uid.
        uid: Option<String>,
    },
}

/// A ServiceAccount named by the CSV's permissions, as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ServiceAccountState {
    /// No such ServiceAccount.
    #[default]
    Absent,
    /// It exists.
    Present {
        /// Names of the CSVs its owner references point at.
        owner_csvs: Vec<String>,
        /// Its uid.
        uid: Option<String>,
    },
}

/// One Deployment of the install strategy (or one labelled as owned by the CSV), as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedDeployment {
    /// Its `olm.owner` label (the owning CSV's name).
    pub owner: Option<String>,
    /// Its `olm.deployment-spec-hash` label.
    pub spec_hash: Option<String>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.observedGeneration`.
    pub observed_generation: Option<i64>,
    /// `spec.replicas` (default 1).
    pub desired_replicas: i32,
    /// `status.replicas`.
    pub replicas: i32,
    /// `status.updatedReplicas`.
    pub updated_replicas: i32,
    /// `status.availableReplicas`.
    pub available_replicas: i32,
    /// Condition `Available=True`.
    pub available: bool,
    /// Condition `Progressing=False` with reason `ProgressDeadlineExceeded`.
    pub progress_deadline_exceeded: bool,
}

impl ObservedDeployment {
    /// Reads what the state machine needs from a Deployment.
    pub fn from_deployment(deployment: &Deployment) -> Self {
        let labels = deployment.labels();
        let status = deployment.status.as_ref();
        let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or_default();
        let has = |type_: &str, status_: &str, reason: Option<&str>| {
            conditions.iter().any(|c| {
                c.type_.as_deref() == Some(type_)
                    && c.status.as_deref() == Some(status_)
                    && reason.is_none_or(|r| c.reason.as_deref() == Some(r))
            })
        };
        Self {
            owner: labels.get(OWNER).cloned(),
            spec_hash: labels.get(DEPLOYMENT_SPEC_HASH).cloned(),
            generation: deployment.metadata.generation,
            observed_generation: status.and_then(|s| s.observed_generation),
            desired_replicas: deployment.spec.replicas.unwrap_or(1),
            replicas: status.and_then(|s| s.replicas).unwrap_or_default(),
            updated_replicas: status.and_then(|s| s.updated_replicas).unwrap_or_default(),
            available_replicas: status.and_then(|s| s.available_replicas).unwrap_or_default(),
            available: has("Available", "True", None),
            progress_deadline_exceeded: has("Progressing", "False", Some("ProgressDeadlineExceeded")),
        }
    }
}

/// Another CSV of the namespace, by name and phase.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OtherCsv {
    /// Its name.
    pub name: String,
    /// Its phase.
    pub phase: CsvPhase,
}

/// A CRD this CSV owns that an unrelated CSV owns too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrdOwnerConflict {
    /// The CRD name.
    pub crd: String,
    /// The other CSV.
    pub csv: String,
}

/// Everything the state machine needs to know about the cluster; the shell fills it from
/// its caches (see the helpers [`replacement_of`], [`replacee_of`], [`crd_owner_conflicts`],
/// [`owning_subscription`] and [`ObservedDeployment::from_deployment`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    /// The OperatorGroups in the CSV's namespace.
    pub operator_groups: Vec<ObservedOperatorGroup>,
    /// Owned and required CRDs by name (a missing entry reads as absent).
    pub crds: BTreeMap<String, CrdState>,
    /// The APIServices the CSV requires and does not own (`spec.apiservicedefinitions.required`)
    /// by name `<version>.<group>`; a missing entry: no such APIService.
    pub required_api_services: BTreeMap<String, RequiredApiService>,
    /// ServiceAccounts by name (a missing entry reads as absent).
    pub service_accounts: BTreeMap<String, ServiceAccountState>,
    /// The strategy's Deployments, and any labelled as owned by this CSV, by name.
    pub deployments: BTreeMap<String, ObservedDeployment>,
    /// A CSV in the namespace whose `spec.replaces` is this CSV.
    pub replacement: Option<OtherCsv>,
    /// The CSV this one's `spec.replaces` names, if it still exists.
    pub replacee: Option<OtherCsv>,
    /// CRDs this CSV owns that an unrelated CSV of the namespace owns too.
    pub crd_owner_conflicts: Vec<CrdOwnerConflict>,
    /// The API server's version (`gitVersion`, e.g. `v1.37.0`), if known.
    pub server_version: Option<String>,
    /// The CSV's `spec.nativeAPIs` that the API server serves: discovery of the group version
    /// lists a resource of the kind (upstream `isGVKRegistered`).
    pub served_native_apis: std::collections::BTreeSet<crate::api::v1alpha1::GroupVersionKind>,
    /// The `spec.config` of the Subscription that owns the CSV, if it has one.
    pub overrides: Option<SubscriptionOverrides>,
    /// The InstallPlan that installs this CSV, when it failed or is retrying a failed step
    /// ([`own_plan_state`]); such a CSV is never `Succeeded`.
    pub own_plan: Option<OwnPlanState>,
    /// The objects of the CSV's webhooks, and the certificates the shell issued
    /// ([`webhooks`]).
    pub webhooks: webhooks::ObservedWebhooks,
    /// Why the OperatorCondition of the CSV this one replaces holds the upgrade, when it does
    /// ([`super::operator_condition::upgrade_blocker`]).
    pub replacee_not_upgradeable: Option<UpgradeBlock>,
    /// Every OperatorGroup of the cluster with its targets and `olm.providedAPIs`
    /// ([`group_conflict`]).
    pub providing_groups: Vec<group_conflict::ProvidingGroup>,
    /// The ServiceAccounts and RBAC the CSV's InstallPlan created for it, with their live
    /// state ([`components`]); empty when no `Complete` plan names the CSV.
    pub components: Vec<components::Component>,
    /// The RBAC its install made in the OperatorGroup's other target namespaces, with their
    /// live state ([`components::target_components`]).
    pub target_components: Vec<components::Component>,
}

#[cfg(test)]
impl Observed {
    /// Adds an OperatorGroup with these resolved target namespaces.
    pub fn with_og(mut self, name: &str, namespaces: &[&str]) -> Self {
        self.operator_groups.push(ObservedOperatorGroup {
            name: name.to_owned(),
            namespaces: Some(namespaces.iter().map(|s| (*s).to_owned()).collect()),
            fail_forward: false,
        });
        self
    }

    /// Sets the state of a CRD.
    pub fn with_crd(mut self, name: &str, state: CrdState) -> Self {
        self.crds.insert(name.to_owned(), state);
        self
    }

    /// Records a ServiceAccount as present, owned by these CSVs.
    pub fn with_service_account(mut self, name: &str, owner_csvs: &[&str]) -> Self {
        self.service_accounts.insert(
            name.to_owned(),
            ServiceAccountState::Present {
                owner_csvs: owner_csvs.iter().map(|s| (*s).to_owned()).collect(),
                uid: None,
            },
        );
        self
    }

    /// Sets an observed Deployment.
    pub fn with_deployment(mut self, name: &str, deployment: ObservedDeployment) -> Self {
        self.deployments.insert(name.to_owned(), deployment);
        self
    }

    /// Records the CSV replacing this one.
    pub fn with_replacement(mut self, name: &str, phase: CsvPhase) -> Self {
        self.replacement = Some(OtherCsv {
            name: name.to_owned(),
            phase,
        });
        self
    }

    /// Records the CSV this one replaces.
    pub fn with_replacee(mut self, name: &str, phase: CsvPhase) -> Self {
        self.replacee = Some(OtherCsv {
            name: name.to_owned(),
            phase,
        });
        self
    }
}

/// The CSV in `csvs` whose `spec.replaces` names `name` (upstream `isBeingReplaced`).
pub fn replacement_of<'a>(
    name: &str,
    csvs: &'a [ClusterServiceVersion],
) -> Option<&'a ClusterServiceVersion> {
    csvs.iter()
        .find(|c| c.spec.replaces.as_deref() == Some(name) && c.name_any() != name)
}

/// The CSV in `csvs` named by `csv.spec.replaces` (upstream `isReplacing`).
pub fn replacee_of<'a>(
    csv: &ClusterServiceVersion,
    csvs: &'a [ClusterServiceVersion],
) -> Option<&'a ClusterServiceVersion> {
    let replaces = csv.spec.replaces.as_deref().filter(|r| !r.is_empty())?;
    csvs.iter().find(|c| c.name_any() == replaces)
}

/// CRDs `csv` owns that another CSV of `csvs` owns too, ignoring CSVs in `csv`'s replacement
/// chain (its replacees and replacements, transitively; upstream `crdOwnerConflicts`).
pub fn crd_owner_conflicts(
    csv: &ClusterServiceVersion,
    csvs: &[ClusterServiceVersion],
) -> Vec<CrdOwnerConflict> {
    let me = csv.name_any();
    let mut chain = std::collections::BTreeSet::from([me.clone()]);
    let mut current = me.clone();
    while let Some(next) = replacement_of(&current, csvs) {
        if !chain.insert(next.name_any()) {
            break;
        }
        current = next.name_any();
    }
    let mut current = csv.clone();
    while let Some(prev) = replacee_of(&current, csvs) {
        if !chain.insert(prev.name_any()) {
            break;
        }
        current = prev.clone();
    }
    let owned = csv
        .spec
        .custom_resource_definitions
        .as_ref()
        .map(|c| c.owned.as_slice())
        .unwrap_or_default();
    let mut out = Vec::new();
    for other in csvs.iter().filter(|c| !chain.contains(&c.name_any())) {
        for crd in owned {
            if other.spec.owns_crd(&crd.name) {
                out.push(CrdOwnerConflict {
                    crd: crd.name.clone(),
                    csv: other.name_any(),
                });
            }
        }
    }
    out
}

/// What the shell should do with a CSV after one reconcile.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvDecision {
    /// The phase to record.
    pub phase: CsvPhase,
    /// The reason to record.
    pub reason: CsvReason,
    /// The message to record.
    pub message: String,
    /// The new `requirementStatus`, when requirements were checked (`None`: keep).
    pub requirement_status: Option<Vec<RequirementStatus>>,
    /// The CSV's full annotations after merging the OperatorGroup member annotations, when
    /// they differ from what the CSV carries (`None`: nothing to write).
    pub annotations: Option<BTreeMap<String, String>>,
    /// Deployments to apply now (server-side apply; they carry this CSV as owner).
    pub desired_deployments: Vec<Deployment>,
    /// Deployments labelled as owned by this CSV that its spec no longer lists: delete them.
    pub stale_deployments: Vec<String>,
    /// The webhook objects to apply with the Deployments ([`webhooks`]).
    pub webhooks: Option<webhooks::WebhookObjects>,
    /// New certificates are installed: record `certsLastUpdated` = now and this
    /// `certsRotateAt`.
    pub certs_rotate_at: Option<Time>,
    /// The CSV is `Deleting`: delete it.
    pub delete_self: bool,
    /// Components of the install that are missing or changed: apply their manifests
    /// ([`components`]), and publish an Event naming each.
    pub restore: Vec<ComponentIssue>,
    /// Install-strategy objects found missing and applied again with this decision (their
    /// Deployments are in `desired_deployments`): one Event `ComponentMissing` each.
    pub missing: Vec<String>,
    /// Reconcile again after this long even without events.
    pub requeue_after: Option<Duration>,
    /// The API claim the decision rests on: the CSV passed the inter-group check, and the
    /// shell takes this claim before acting ([`group_conflict::Claims::take`]); when refused,
    /// it decides again on the claims taken meanwhile.
    pub claim: Option<group_conflict::Claim>,
}

impl CsvDecision {
    fn to(phase: CsvPhase, reason: CsvReason, message: impl Into<String>) -> Self {
        Self {
            phase,
            reason,
            message: message.into(),
            requirement_status: None,
            annotations: None,
            desired_deployments: Vec::new(),
            stale_deployments: Vec::new(),
            webhooks: None,
            certs_rotate_at: None,
            delete_self: false,
            restore: Vec::new(),
            missing: Vec::new(),
            requeue_after: None,
            claim: None,
        }
    }

    /// Whether the decision fails the CSV for the inter-group rule, so the claim it may hold
    /// goes ([`group_conflict::Claims::release`]).
    pub fn gives_up_claim(&self) -> bool {
        self.phase == CsvPhase::Failed
            && matches!(
                self.reason,
                CsvReason::InterOperatorGroupOwnerConflict
                    | CsvReason::CannotModifyStaticOperatorGroupProvidedApis
            )
    }

    /// Keep the CSV's current phase, reason and message.
    fn keep(csv: &ClusterServiceVersion) -> Self {
        let status = csv.status.clone().unwrap_or_default();
        Self::to(
            status.phase.unwrap_or_default(),
            status.reason.unwrap_or(CsvReason::RequirementsUnknown),
            status.message.unwrap_or_default(),
        )
    }

    fn requeue(mut self, after: Duration) -> Self {
        self.requeue_after = Some(after);
        self
    }

    fn requirements(mut self, statuses: Vec<RequirementStatus>) -> Self {
        self.requirement_status = Some(statuses);
        self
    }

    /// Records the decision in `status` (phase bookkeeping of [`set_csv_phase`], plus the
    /// requirement status); true if anything changed.
    pub fn apply_to(&self, status: &mut ClusterServiceVersionStatus, now: &Time) -> bool {
        let mut changed = set_csv_phase(
            status,
            self.phase.clone(),
            self.reason.clone(),
            self.message.clone(),
            now,
        );
        if let Some(requirements) = &self.requirement_status
            && &status.requirement_status != requirements
        {
            status.requirement_status = requirements.clone();
            changed = true;
        }
        if let Some(rotate_at) = &self.certs_rotate_at {
            status.certs_last_updated = Some(now.clone());
            status.certs_rotate_at = Some(rotate_at.clone());
            changed = true;
        }
        // Go writes the (omitempty) struct `status.cleanup` as `{}` on every status update; so
        // does a status that changes for another reason (never a write of its own).
        if changed && status.cleanup.is_none() {
            status.cleanup = Some(crate::api::v1alpha1::CleanupStatus::default());
        }
        changed
    }
}

/// Decides the CSV's next step from its current state and the observed cluster (see the
/// module doc for every transition). `now` is the current time.
pub fn decide(csv: &ClusterServiceVersion, observed: &Observed, now: &Time) -> CsvDecision {
    let status = csv.status.clone().unwrap_or_default();
    let phase = status.phase.clone().unwrap_or_default();
    let reason = status.reason.clone();
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();

    if phase == CsvPhase::Deleting {
        let mut d = CsvDecision::keep(csv);
        d.delete_self = true;
        return d;
    }
    if reason == Some(CsvReason::InstallComponentFailedNoRetry) && phase == CsvPhase::Failed {
        return CsvDecision::keep(csv);
    }

    // Pre-checks: the OperatorGroup and the install modes.
    let group =
        match super::operator_group::select_operator_group(&namespace, &observed.operator_groups, |g| {
            g.name.as_str()
        }) {
            Ok(group) => group,
            Err(e) => return CsvDecision::to(CsvPhase::Failed, e.reason(), e.to_string()),
        };
    let Some(targets) = group.namespaces.as_deref() else {
        if phase == CsvPhase::None {
            return CsvDecision::to(
                CsvPhase::Pending,
                CsvReason::RequirementsUnknown,
                format!(
                    "waiting for OperatorGroup {} to list its target namespaces",
                    group.name
                ),
            )
            .requeue(WAIT_REQUEUE);
        }
        return CsvDecision::keep(csv).requeue(WAIT_REQUEUE);
    };
    let wanted = member_annotations(&group.name, &namespace, targets);
    let mut annotations = csv.annotations().clone();
    let differ = wanted.iter().any(|(k, v)| annotations.get(k) != Some(v));
    annotations.extend(wanted);
    let annotation_patch = differ.then(|| annotations.clone());
    let with_patch = |mut d: CsvDecision| {
        d.annotations = annotation_patch.clone();
        d
    };
    if let Err(e) = check_install_modes(&name, &csv.spec.install_modes, &group.name, &namespace, targets) {
        return with_patch(CsvDecision::to(CsvPhase::Failed, e.reason(), e.to_string()));
    }
    if let Err(e) = webhooks::validate(csv) {
        return with_patch(CsvDecision::to(CsvPhase::Failed, e.reason(), e.to_string()));
    }
    if let Some(conflict) = inter_group_conflict(csv, &namespace, &group.name, targets, observed) {
        return with_patch(conflict);
    }
    // Passed: the decision rests on the CSV's claim of its APIs (module doc of group_conflict).
    let claim = super::user_roles::provided_apis(csv)
        .ok()
        .filter(|apis| !apis.is_empty())
        .map(|apis| group_conflict::Claim {
            csv_namespace: namespace.clone(),
            csv_name: name.clone(),
            group_namespace: namespace.clone(),
            group_name: group.name.clone(),
            apis: apis.into_iter().map(|a| a.key).collect(),
        });

    let webhooks = webhooks::plan(csv, targets, &observed.webhooks, now);
    let desired = desired_deployments(csv, &annotations, observed.overrides.as_ref()).map(|mut d| {
        webhooks.mount_certs(&mut d);
        d
    });
    let ctx = Context {
        csv,
        name: &name,
        namespace: &namespace,
        observed,
        fail_forward: group.fail_forward,
        desired,
        webhooks,
    };
    let mut d = with_patch(ctx.transition(&phase, reason.as_ref(), &status, now));
    d.claim = claim;
    d
}

/// Requeue period of a CSV failed `InterOperatorGroupOwnerConflict` (a rival group in another
/// namespace changing does not wake it).
pub const GROUP_CONFLICT_REQUEUE: Duration = Duration::from_secs(60);

/// `Failed` `InterOperatorGroupOwnerConflict` when another OperatorGroup with intersecting
/// targets provides one of the CSV's APIs, else `CannotModifyStaticOperatorGroupProvidedAPIs`
/// when its static group does not list them ([`group_conflict`]); its Deployments go.
fn inter_group_conflict(
    csv: &ClusterServiceVersion,
    namespace: &str,
    group: &str,
    targets: &[String],
    observed: &Observed,
) -> Option<CsvDecision> {
    // An owned CRD without a group fails elsewhere (requirements); it provides nothing here.
    let apis = super::user_roles::provided_apis(csv).ok()?;
    let apis = apis.into_iter().map(|a| a.key).collect();
    let own = observed
        .providing_groups
        .iter()
        .find(|g| g.namespace == namespace && g.name == group)
        .cloned()
        .unwrap_or_else(|| group_conflict::ProvidingGroup {
            namespace: namespace.to_owned(),
            name: group.to_owned(),
            namespaces: Some(targets.to_vec()),
            provided_apis: std::collections::BTreeSet::new(),
            static_apis: false,
        });
    let (reason, message) =
        if group_conflict::conflicting_group(&own, &apis, &observed.providing_groups).is_some() {
            (
                CsvReason::InterOperatorGroupOwnerConflict,
                group_conflict::CONFLICT_MESSAGE.to_owned(),
            )
        } else {
            let refusal = group_conflict::static_group_refusal(&own, &apis)?;
            (CsvReason::CannotModifyStaticOperatorGroupProvidedApis, refusal)
        };
    Some(conflict_decision(csv, reason, message, observed))
}

/// The decision of a CSV whose claim the shell could not take ([`group_conflict::Claims::take`]
/// refused it: a rival group claimed one of its APIs first): `Failed`
/// `InterOperatorGroupOwnerConflict`, as [`decide`] says once it sees the rival's claim.
pub fn claim_refused(csv: &ClusterServiceVersion, observed: &Observed) -> CsvDecision {
    conflict_decision(
        csv,
        CsvReason::InterOperatorGroupOwnerConflict,
        group_conflict::CONFLICT_MESSAGE.to_owned(),
        observed,
    )
}

/// `Failed` for an inter-group rule: the CSV's Deployments go (upstream `cleanupCSVDeployments`).
fn conflict_decision(
    csv: &ClusterServiceVersion,
    reason: CsvReason,
    message: String,
    observed: &Observed,
) -> CsvDecision {
    let name = csv.name_any();
    let mut d = CsvDecision::to(CsvPhase::Failed, reason, message);
    d.stale_deployments = observed
        .deployments
        .iter()
        .filter(|(_, dep)| dep.owner.as_deref() == Some(name.as_str()))
        .map(|(n, _)| n.clone())
        .collect();
    d.requeue(GROUP_CONFLICT_REQUEUE)
}

struct Context<'a> {
    csv: &'a ClusterServiceVersion,
    name: &'a str,
    namespace: &'a str,
    observed: &'a Observed,
    fail_forward: bool,
    /// The Deployments to apply, or why the Subscription's config cannot be applied.
    desired: Result<Vec<Deployment>, ConfigError>,
    /// The webhook objects and certificates ([`webhooks::plan`]).
    webhooks: webhooks::WebhookPlan,
}

/// The health of the install strategy's Deployments.
enum Health {
    /// All installed and ready.
    Healthy,
    /// A Deployment exceeded its progress deadline.
    Unrecoverable(String),
    /// A Deployment's spec or owner differs: apply again.
    Drifted(String),
    /// An object of the install strategy is gone (upstream's `ComponentMissing` strategy error:
    /// "missing deployment with name=...").
    Missing(String),
    /// Waiting for a Deployment (missing, rolling out, unavailable).
    Waiting(String),
    /// The Subscription's `spec.config` cannot be applied.
    Invalid(ConfigError),
}

impl Context<'_> {
    fn transition(
        &self,
        phase: &CsvPhase,
        reason: Option<&CsvReason>,
        status: &ClusterServiceVersionStatus,
        now: &Time,
    ) -> CsvDecision {
        match phase {
            CsvPhase::Pending => self.pending(),
            CsvPhase::InstallReady => self.install(status),
            CsvPhase::Installing => self.installing(status, now),
            CsvPhase::Succeeded => self.succeeded(),
            CsvPhase::Failed => self.failed(reason),
            CsvPhase::Replacing => self.replacing(),
            _ => CsvDecision::to(
                CsvPhase::Pending,
                CsvReason::RequirementsUnknown,
                "requirements not yet checked",
            ),
        }
    }

    /// `Pending`, with the install's missing or changed components to restore ([`components`]):
    /// whatever the requirement check says, they are written again now, so that the check
    /// that follows their watch event finds them.
    fn pending(&self) -> CsvDecision {
        let mut d = self.pending_phase();
        if d.phase != CsvPhase::Failed {
            d.restore = components::issues(&self.observed.components);
        }
        d
    }

    fn pending_phase(&self) -> CsvDecision {
        // First, as upstream: the CSV it replaces must be upgradeable (its OperatorCondition).
        if let (Some(prev), Some(block)) = (&self.observed.replacee, &self.observed.replacee_not_upgradeable)
        {
            return CsvDecision::to(
                CsvPhase::Pending,
                CsvReason::OperatorConditionNotUpgradeable,
                not_upgradeable_message(&prev.name, block),
            )
            .requeue(NOT_UPGRADEABLE_REQUEUE);
        }
        let (met, statuses) = requirement_status(self.csv, self.observed);
        if !met {
            return CsvDecision::to(
                CsvPhase::Pending,
                CsvReason::RequirementsNotMet,
                "one or more requirements couldn't be found",
            )
            .requirements(statuses)
            .requeue(REQUIREMENTS_REQUEUE);
        }
        if let Some(conflict) = self.observed.crd_owner_conflicts.first() {
            return CsvDecision::to(
                CsvPhase::Failed,
                CsvReason::OwnerConflict,
                format!(
                    "CRD {} is already owned by ClusterServiceVersion {} in namespace {}; \
                     uninstall that operator or install {} in another namespace",
                    conflict.crd, conflict.csv, self.namespace, self.name
                ),
            )
            .requirements(statuses);
        }
        if let Some(conflict) = webhooks::api_service_conflict(self.csv, &self.observed.webhooks) {
            return CsvDecision::to(CsvPhase::Failed, CsvReason::OwnerConflict, conflict)
                .requirements(statuses);
        }
        if let Some(held) = self.observed.own_plan.as_ref().and_then(plan_failed) {
            return held.requirements(statuses);
        }
        if let Some(prev) = &self.observed.replacee
            && !matches!(prev.phase, CsvPhase::Replacing | CsvPhase::Deleting)
        {
            let mut d = CsvDecision::keep(self.csv)
                .requirements(statuses)
                .requeue(WAIT_REQUEUE);
            d.message = format!(
                "waiting for {} (phase {}) to be marked as being replaced",
                prev.name,
                if prev.phase.as_str().is_empty() {
                    "none"
                } else {
                    prev.phase.as_str()
                }
            );
            return d;
        }
        CsvDecision::to(
            CsvPhase::InstallReady,
            CsvReason::AllRequirementsMet,
            "all requirements found, attempting install",
        )
        .requirements(statuses)
    }

    fn install(&self, status: &ClusterServiceVersionStatus) -> CsvDecision {
        let mut d = CsvDecision::to(
            CsvPhase::Installing,
            CsvReason::InstallSucceeded,
            "waiting for install components to report healthy",
        )
        .requeue(WAIT_REQUEUE);
        match &self.desired {
            Ok(desired) => d.desired_deployments = desired.clone(),
            Err(e) => return invalid_config(e),
        }
        d.stale_deployments = self.stale_deployments();
        if webhooks::has_cert_resources(self.csv) {
            d.webhooks = Some(self.webhooks.objects.clone());
            d.certs_rotate_at = self.webhooks.rotating.clone();
        }
        // A reinstall of a CSV that was installed names what it puts back (a first install
        // creates everything and names nothing).
        let installed_before = status
            .conditions
            .iter()
            .any(|c| c.phase == Some(CsvPhase::Succeeded));
        if installed_before {
            d.missing = self.missing_deployments();
            d.missing
                .extend(self.webhooks.missing_services(&self.observed.webhooks));
            d.missing.extend(
                webhooks::cert_deployments(self.csv)
                    .iter()
                    .filter(|dep| !self.observed.webhooks.secrets.contains_key(*dep))
                    .map(|dep| format!("Secret {}/{}", self.namespace, webhooks::secret_name(dep))),
            );
        }
        d
    }

    fn stale_deployments(&self) -> Vec<String> {
        let wanted: Vec<&str> = self
            .csv
            .spec
            .install
            .spec
            .deployments
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        self.observed
            .deployments
            .iter()
            .filter(|(name, d)| d.owner.as_deref() == Some(self.name) && !wanted.contains(&name.as_str()))
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn health(&self) -> Health {
        let desired = match &self.desired {
            Ok(desired) => desired,
            Err(e) => return Health::Invalid(e.clone()),
        };
        if let Some(m) = self.webhooks.not_installed(&self.observed.webhooks) {
            return Health::Drifted(m);
        }
        match self.webhooks.service_issue(&self.observed.webhooks) {
            Some((true, m)) => return Health::Missing(m),
            Some((false, m)) => return Health::Drifted(m),
            None => {}
        }
        let mut waiting = None;
        for deployment in desired {
            let name = deployment.name_any();
            let Some(seen) = self.observed.deployments.get(&name) else {
                return Health::Missing(format!("missing deployment with name={name}"));
            };
            if seen.owner.as_deref() != Some(self.name) {
                return Health::Drifted(format!(
                    "deployment {name} is owned by {}; taking it over",
                    seen.owner.as_deref().unwrap_or("nobody")
                ));
            }
            let want_hash = deployment.labels().get(DEPLOYMENT_SPEC_HASH);
            if seen.spec_hash.as_ref() != want_hash {
                return Health::Drifted(format!(
                    "deployment {name} does not match the CSV's spec; updating it"
                ));
            }
            if seen.progress_deadline_exceeded {
                return Health::Unrecoverable(format!("deployment {name} exceeded its progress deadline"));
            }
            if let Some(message) = rollout_wait(&name, seen) {
                waiting.get_or_insert(message);
            }
        }
        if waiting.is_none() {
            waiting = self.webhooks.unavailable(&self.observed.webhooks);
        }
        match waiting {
            Some(message) => Health::Waiting(message),
            None => Health::Healthy,
        }
    }

    fn installing(&self, status: &ClusterServiceVersionStatus, now: &Time) -> CsvDecision {
        match self.health() {
            Health::Healthy => held_by_plan(succeeded_now(), self.observed.own_plan.as_ref()),
            Health::Invalid(e) => invalid_config(&e),
            Health::Unrecoverable(m) => CsvDecision::to(
                CsvPhase::Failed,
                CsvReason::InstallCheckFailed,
                format!("install failed: {m}"),
            ),
            Health::Drifted(m) => CsvDecision::to(
                CsvPhase::InstallReady,
                CsvReason::InstallWaiting,
                format!("installing: {m}"),
            ),
            Health::Missing(m) => {
                // Upstream waits here until the install times out; the missing Deployments
                // are applied again instead (those present are left as they are), once the
                // install is older than the store's lag behind our own apply.
                let mut d = Self::waiting(status, now, &m);
                let since = since_transition(status, now);
                if d.phase == CsvPhase::Installing && since < REAPPLY_MISSING_AFTER {
                    let rest = REAPPLY_MISSING_AFTER.saturating_sub(since);
                    d.requeue_after = d.requeue_after.map(|r| r.min(rest)).or(Some(rest));
                } else if d.phase == CsvPhase::Installing
                    && let Ok(desired) = &self.desired
                {
                    d.desired_deployments = desired.clone();
                    d.missing = self.missing_deployments();
                    if webhooks::has_cert_resources(self.csv) && self.webhooks.rotating.is_none() {
                        d.webhooks = Some(self.webhooks.objects.clone());
                        d.missing
                            .extend(self.webhooks.missing_services(&self.observed.webhooks));
                    }
                }
                d
            }
            Health::Waiting(m) => Self::waiting(status, now, &m),
        }
    }

    /// The names (`Deployment <ns>/<name>`) of the strategy's Deployments that do not exist.
    fn missing_deployments(&self) -> Vec<String> {
        self.csv
            .spec
            .install
            .spec
            .deployments
            .iter()
            .filter(|d| !self.observed.deployments.contains_key(&d.name))
            .map(|d| format!("Deployment {}/{}", self.namespace, d.name))
            .collect()
    }

    /// Still `Installing` with `message`, until [`INSTALL_TIMEOUT`] after the last transition.
    fn waiting(status: &ClusterServiceVersionStatus, now: &Time, m: &str) -> CsvDecision {
        let since = since_transition(status, now);
        if since >= INSTALL_TIMEOUT {
            return CsvDecision::to(CsvPhase::Failed, CsvReason::InstallCheckFailed, "install timeout");
        }
        CsvDecision::to(
            CsvPhase::Installing,
            CsvReason::InstallWaiting,
            format!("installing: {m}"),
        )
        .requeue(WAIT_REQUEUE.min(INSTALL_TIMEOUT.saturating_sub(since)))
    }

    fn succeeded(&self) -> CsvDecision {
        if let Some(next) = &self.observed.replacement {
            return being_replaced(&next.name);
        }
        if let Some((_, issue)) = self.webhooks.api_service_issue(self.csv, &self.observed.webhooks) {
            return CsvDecision::to(CsvPhase::Failed, CsvReason::ApiServiceResourceIssue, issue);
        }
        if self.webhooks.rotating.is_some() {
            return CsvDecision::to(
                CsvPhase::Pending,
                CsvReason::NeedsCertRotation,
                "CSV owns resources that require a cert refresh",
            );
        }
        let (met, statuses) = requirement_status(self.csv, self.observed);
        if !met {
            return CsvDecision::to(
                CsvPhase::Failed,
                CsvReason::RequirementsNotMet,
                "requirements no longer met",
            )
            .requirements(statuses);
        }
        if let Some(issue) = components::issues(&self.observed.components).first() {
            return CsvDecision::to(
                CsvPhase::Failed,
                CsvReason::ComponentUnhealthy,
                format!("installing: {issue}"),
            )
            .requirements(statuses);
        }
        match self.health() {
            Health::Healthy => {
                let mut d = self
                    .observed
                    .own_plan
                    .as_ref()
                    .and_then(plan_failed)
                    .unwrap_or_else(|| CsvDecision::keep(self.csv))
                    .requirements(statuses);
                // As upstream's `ensureRBACInTargetNamespace` on every sync: the target
                // namespaces' RBAC is put back without a phase change.
                if d.phase == CsvPhase::Succeeded {
                    d.restore = components::issues(&self.observed.target_components);
                }
                d
            }
            Health::Invalid(e) => invalid_config(&e).requirements(statuses),
            Health::Unrecoverable(m) => CsvDecision::to(
                CsvPhase::Failed,
                CsvReason::InstallCheckFailed,
                format!("install failed: {m}"),
            ),
            Health::Drifted(m) => CsvDecision::to(
                CsvPhase::InstallReady,
                CsvReason::ComponentUnhealthy,
                format!("installing: {m}"),
            ),
            Health::Missing(m) | Health::Waiting(m) => CsvDecision::to(
                CsvPhase::Failed,
                CsvReason::ComponentUnhealthy,
                format!("installing: {m}"),
            ),
        }
    }

    fn failed(&self, reason: Option<&CsvReason>) -> CsvDecision {
        if self.fail_forward
            && let Some(next) = &self.observed.replacement
        {
            return being_replaced(&next.name);
        }
        match reason {
            Some(
                CsvReason::NoTargetNamespaces
                | CsvReason::NoOperatorGroup
                | CsvReason::TooManyOperatorGroups
                | CsvReason::UnsupportedOperatorGroup
                | CsvReason::InterOperatorGroupOwnerConflict
                | CsvReason::CannotModifyStaticOperatorGroupProvidedApis,
            ) => {
                return CsvDecision::to(
                    CsvPhase::Pending,
                    CsvReason::RequirementsUnknown,
                    "InstallModes now support target namespaces",
                );
            }
            Some(CsvReason::InvalidInstallModes) => return CsvDecision::keep(self.csv),
            Some(CsvReason::OwnerConflict) if !self.observed.crd_owner_conflicts.is_empty() => {
                return CsvDecision::keep(self.csv);
            }
            _ => {}
        }
        let (met, statuses) = requirement_status(self.csv, self.observed);
        if !met {
            return CsvDecision::to(
                CsvPhase::Pending,
                CsvReason::RequirementsNotMet,
                "requirements not met",
            )
            .requirements(statuses)
            .requeue(REQUIREMENTS_REQUEUE);
        }
        if reason == Some(&CsvReason::ApiServiceResourceIssue)
            && let Some((adoptable, issue)) =
                self.webhooks.api_service_issue(self.csv, &self.observed.webhooks)
        {
            // An APIService another CSV owns stays Failed; anything else is reinstalled.
            if !adoptable {
                return CsvDecision::keep(self.csv).requirements(statuses);
            }
            return CsvDecision::to(
                CsvPhase::Pending,
                CsvReason::ApiServiceResourcesNeedReinstall,
                issue,
            )
            .requirements(statuses);
        }
        if let Some(issue) = components::issues(&self.observed.components).first() {
            return CsvDecision::to(
                CsvPhase::Pending,
                CsvReason::NeedsReinstall,
                format!("installing: {issue}"),
            )
            .requirements(statuses);
        }
        match self.health() {
            Health::Healthy => {
                held_by_plan(succeeded_now(), self.observed.own_plan.as_ref()).requirements(statuses)
            }
            // Reinstalling would fail the same way: stay Failed until the config is fixed.
            Health::Invalid(e) => invalid_config(&e).requirements(statuses),
            // Upstream's message (`updateInstallStatus` with `NeedsReinstall`): "installing: ...".
            Health::Unrecoverable(m) | Health::Drifted(m) | Health::Missing(m) | Health::Waiting(m) => {
                CsvDecision::to(
                    CsvPhase::Pending,
                    CsvReason::NeedsReinstall,
                    format!("installing: {m}"),
                )
                .requirements(statuses)
            }
        }
    }

    fn replacing(&self) -> CsvDecision {
        if self.observed.replacee.is_some() {
            // Not the oldest of the chain: deleting it now would break the chain.
            return CsvDecision::keep(self.csv).requeue(WAIT_REQUEUE);
        }
        match &self.observed.replacement {
            Some(next) if next.phase == CsvPhase::Succeeded => CsvDecision::to(
                CsvPhase::Deleting,
                CsvReason::Replaced,
                "has been replaced by a newer ClusterServiceVersion that has successfully installed.",
            ),
            _ => CsvDecision::keep(self.csv).requeue(WAIT_REQUEUE),
        }
    }
}

/// How long ago the CSV's phase last changed (zero when unknown or in the future).
fn since_transition(status: &ClusterServiceVersionStatus, now: &Time) -> Duration {
    status
        .last_transition_time
        .as_ref()
        .map(|t| now.0.duration_since(t.0))
        .and_then(|d| Duration::try_from(d).ok())
        .unwrap_or_default()
}

fn succeeded_now() -> CsvDecision {
    CsvDecision::to(
        CsvPhase::Succeeded,
        CsvReason::InstallSucceeded,
        "install strategy completed with no errors",
    )
}

/// Upstream fails a CSV whose install strategy cannot be applied `InstallComponentFailed`.
fn invalid_config(e: &ConfigError) -> CsvDecision {
    CsvDecision::to(
        CsvPhase::Failed,
        CsvReason::InstallComponentFailed,
        format!("install strategy failed: {e}"),
    )
}

fn being_replaced(by: &str) -> CsvDecision {
    CsvDecision::to(
        CsvPhase::Replacing,
        CsvReason::BeingReplaced,
        format!("being replaced by csv: {by}"),
    )
}

/// Why a rollout is not done yet (upstream `DeploymentStatus` in `status_viewer.go`).
fn rollout_wait(name: &str, d: &ObservedDeployment) -> Option<String> {
    if d.generation.unwrap_or_default() > d.observed_generation.unwrap_or_default() {
        return Some(format!(
            "deployment {name}: waiting for the new spec to be observed"
        ));
    }
    if d.updated_replicas < d.desired_replicas {
        return Some(format!(
            "deployment {name}: waiting for rollout to finish: {} out of {} new replicas have been updated",
            d.updated_replicas, d.desired_replicas
        ));
    }
    if d.replicas > d.updated_replicas {
        return Some(format!(
            "deployment {name}: waiting for rollout to finish: {} old replicas are pending termination",
            d.replicas - d.updated_replicas
        ));
    }
    if !d.available {
        return Some(format!(
            "deployment {name} is not available: {} of {} updated replicas are available",
            d.available_replicas, d.updated_replicas
        ));
    }
    None
}

pub mod components;
pub mod config;
mod deployments;
mod failures;
pub mod group_conflict;
mod requirements;
pub mod webhooks;
mod writes;

pub use components::{ComponentIssue, ComponentKey, desired_components, package_of, target_components};
pub use config::{ConfigError, SubscriptionOverrides, owning_subscription};
pub use deployments::{deployment_up_to_date, desired_deployments, strategy_switch_patch};
pub use failures::{
    ApplyFailure, OwnPlanState, apply_failed, held_by_plan, own_plan_state, plan_failed, repeats_failure,
};
pub use requirements::{requirement_status, waits_only_on_own_plan};
pub use writes::write_waits;
#[cfg(test)]
use writes::{OWN_PLAN_REQUEUE, PROGRESS_INTERVAL, progress_only};

#[cfg(test)]
mod tests;
