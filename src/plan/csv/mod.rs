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
//! `UnsupportedOperatorGroup`; see [`super::operator_group`]).
//!
//! **The phases:**
//!
//! - `""` → `Pending` `RequirementsUnknown` "requirements not yet checked".
//! - `Pending`: requirements are checked and reported in `requirementStatus`: the server
//!   version is at least `spec.minKubeVersion`; every owned and required CRD exists, serves
//!   the version the CSV names and is `Established`; every ServiceAccount named by
//!   `permissions`/`clusterPermissions` exists and is not owned by an unrelated CSV. Unmet →
//!   stay `Pending` `RequirementsNotMet`. Another CSV outside this one's replacement chain
//!   owns one of its CRDs → `Failed` `OwnerConflict`. Replacing a CSV that is not yet
//!   `Replacing` → wait. Otherwise → `InstallReady` `AllRequirementsMet`.
//! - `InstallReady`: the install strategy runs — the decision carries the desired
//!   Deployments for the shell to apply — → `Installing` `InstallSucceeded` "waiting for
//!   install components to report healthy".
//! - `Installing`: every Deployment exists, is labelled as owned by this CSV with the
//!   current spec hash, has observed its generation, has rolled out all replicas and is
//!   `Available` → `Succeeded` `InstallSucceeded`. A Deployment past its progress deadline →
//!   `Failed` `InstallCheckFailed`. A Deployment whose spec hash or owner differs →
//!   `InstallReady` (apply again). Still waiting → `Installing` `InstallWaiting`, until
//!   5 minutes after `lastTransitionTime`, then `Failed` `InstallCheckFailed` "install timeout".
//! - `Succeeded`: a CSV in the namespace with `spec.replaces` naming this one → `Replacing`
//!   `BeingReplaced`; requirements lost → `Failed` `RequirementsNotMet`; spec drift →
//!   `InstallReady`; unhealthy → `Failed` `ComponentUnhealthy` (or `InstallCheckFailed`
//!   past the progress deadline).
//! - `Failed`: with a fail-forward OperatorGroup and a replacement → `Replacing`; failed
//!   for an OperatorGroup reason that the pre-checks no longer see → `Pending`
//!   `RequirementsUnknown`; requirements unmet → `Pending` `RequirementsNotMet`; components
//!   healthy again → `Succeeded`; otherwise → `Pending` `NeedsReinstall`. An
//!   `InstallComponentFailedNoRetry` CSV stays frozen, an `OwnerConflict` stays while the
//!   conflict lasts, and `InvalidInstallModes` stays (only a new CSV fixes it).
//! - `Replacing`: a CSV still replacing an older one waits (the oldest in a chain goes
//!   first); when the replacement is `Succeeded` → `Deleting` `Replaced`.
//! - `Deleting`: the decision says `delete_self`; the shell deletes the CSV.
//!
//! **Upgrades** hand Deployments over by name: the new CSV's desired Deployments carry the
//! new owner labels and spec, so applying them re-owns the same-named Deployments of the old
//! CSV, as upstream's full `Update` does.
//!
//! **Status bookkeeping** (history appended only when phase or reason changes, trimmed to
//! 20, `lastTransitionTime` moving only with the phase) is [`crate::status::set_csv_phase`],
//! applied by [`CsvDecision::apply_to`].
//!
//! # Desired Deployments (upstream `install/deployment.go`)
//!
//! For each `spec.install.spec.deployments[]` entry: a Deployment of that name in the CSV's
//! namespace, labelled with the entry's `label` map plus `olm.managed=true` and the
//! `olm.owner*` labels, owned by the CSV (non-blocking, non-controller owner reference when
//! the CSV's uid is known); the pod template's annotations are its own overlaid with the
//! CSV's annotations (so `olm.targetNamespaces` reaches the operator through the downward
//! API); every container gets `OPERATOR_CONDITION_NAME=<csv>`; `revisionHistoryLimit: 1`;
//! and `olm.deployment-spec-hash` = a hash of the resulting spec. Deployments labelled as
//! owned by this CSV but no longer in its spec are listed for deletion.
//!
//! # Where we differ from upstream, and why
//!
//! - *No status write without news.* `lastUpdateTime` moves only when phase, reason or
//!   message change (upstream: every sync), so a steady CSV costs no API writes.
//! - *Waiting states requeue with a deadline.* The decision carries `requeue_after` so the
//!   5-minute install timeout fires on time even if no Deployment event arrives.
//! - *Not modelled:* copied CSVs (we grant target-namespace RBAC directly instead, see
//!   [`super::steps::target_namespace_rbac`]), APIServices and webhooks (no
//!   certificates are generated), the RBAC-rule authorizer check of upstream's
//!   requirements (the InstallPlan created the rules; we check the ServiceAccounts),
//!   `OperatorCondition` upgrade gates, provided-API annotations on OperatorGroups, and
//!   Subscription `spec.config` overrides of the Deployments.
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
    operator_group::{check_install_modes, member_annotations},
    steps::{CSV_KIND, owner_labels},
};
use crate::{
    api::{
        labels::{COMPONENT_LABEL_PREFIX, DEPLOYMENT_SPEC_HASH, MANAGED, OWNER},
        v1alpha1::{
            self, ClusterServiceVersion, ClusterServiceVersionStatus, CsvPhase, CsvReason, RequirementStatus,
            StatusReason,
        },
    },
    status::set_csv_phase,
};

/// How long a CSV may wait in `Installing` before it fails `InstallCheckFailed`.
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Requeue period while requirements are missing.
pub const REQUIREMENTS_REQUEUE: Duration = Duration::from_secs(10);
/// Requeue period while waiting on another CSV or on Deployments.
pub const WAIT_REQUEUE: Duration = Duration::from_secs(5);
/// The annotation never copied to pod templates.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The env var naming the operator's OperatorCondition (= the CSV name).
pub const OPERATOR_CONDITION_ENV: &str = "OPERATOR_CONDITION_NAME";

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
/// its caches (see the helpers [`replacement_of`], [`replacee_of`], [`crd_owner_conflicts`]
/// and [`ObservedDeployment::from_deployment`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// The OperatorGroups in the CSV's namespace.
    pub operator_groups: Vec<ObservedOperatorGroup>,
    /// Owned and required CRDs by name (a missing entry reads as absent).
    pub crds: BTreeMap<String, CrdState>,
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
}

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
    /// The CSV is `Deleting`: delete it.
    pub delete_self: bool,
    /// Reconcile again after this long even without events.
    pub requeue_after: Option<Duration>,
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
            delete_self: false,
            requeue_after: None,
        }
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

    let ctx = Context {
        csv,
        name: &name,
        namespace: &namespace,
        observed,
        annotations: &annotations,
        fail_forward: group.fail_forward,
    };
    with_patch(ctx.transition(&phase, reason.as_ref(), &status, now))
}

struct Context<'a> {
    csv: &'a ClusterServiceVersion,
    name: &'a str,
    namespace: &'a str,
    observed: &'a Observed,
    annotations: &'a BTreeMap<String, String>,
    fail_forward: bool,
}

/// The health of the install strategy's Deployments.
enum Health {
    /// All installed and ready.
    Healthy,
    /// A Deployment exceeded its progress deadline.
    Unrecoverable(String),
    /// A Deployment's spec or owner differs: apply again.
    Drifted(String),
    /// Waiting for a Deployment (missing, rolling out, unavailable).
    Waiting(String),
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
            CsvPhase::InstallReady => self.install(),
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

    fn pending(&self) -> CsvDecision {
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

    fn install(&self) -> CsvDecision {
        let mut d = CsvDecision::to(
            CsvPhase::Installing,
            CsvReason::InstallSucceeded,
            "waiting for install components to report healthy",
        )
        .requeue(WAIT_REQUEUE);
        d.desired_deployments = desired_deployments(self.csv, self.annotations);
        d.stale_deployments = self.stale_deployments();
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
        let desired = desired_deployments(self.csv, self.annotations);
        let mut waiting = None;
        for deployment in &desired {
            let name = deployment.name_any();
            let Some(seen) = self.observed.deployments.get(&name) else {
                waiting.get_or_insert(format!("deployment {name} is not created yet"));
                continue;
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
        match waiting {
            Some(message) => Health::Waiting(message),
            None => Health::Healthy,
        }
    }

    fn installing(&self, status: &ClusterServiceVersionStatus, now: &Time) -> CsvDecision {
        match self.health() {
            Health::Healthy => succeeded_now(),
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
            Health::Waiting(m) => {
                let since = status
                    .last_transition_time
                    .as_ref()
                    .map(|t| now.0.duration_since(t.0))
                    .and_then(|d| Duration::try_from(d).ok())
                    .unwrap_or_default();
                if since >= INSTALL_TIMEOUT {
                    return CsvDecision::to(
                        CsvPhase::Failed,
                        CsvReason::InstallCheckFailed,
                        "install timeout",
                    );
                }
                CsvDecision::to(
                    CsvPhase::Installing,
                    CsvReason::InstallWaiting,
                    format!("installing: {m}"),
                )
                .requeue(WAIT_REQUEUE.min(INSTALL_TIMEOUT.saturating_sub(since)))
            }
        }
    }

    fn succeeded(&self) -> CsvDecision {
        if let Some(next) = &self.observed.replacement {
            return being_replaced(&next.name);
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
        match self.health() {
            Health::Healthy => CsvDecision::keep(self.csv).requirements(statuses),
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
            Health::Waiting(m) => CsvDecision::to(
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
                | CsvReason::UnsupportedOperatorGroup,
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
        match self.health() {
            Health::Healthy => succeeded_now().requirements(statuses),
            Health::Unrecoverable(m) | Health::Drifted(m) | Health::Waiting(m) => CsvDecision::to(
                CsvPhase::Pending,
                CsvReason::NeedsReinstall,
                format!("needs reinstall: {m}"),
            )
            .requirements(statuses),
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

fn succeeded_now() -> CsvDecision {
    CsvDecision::to(
        CsvPhase::Succeeded,
        CsvReason::InstallSucceeded,
        "install strategy completed with no errors",
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

/// The requirement check of upstream `requirements.go` (minus the RBAC authorizer): returns
/// whether everything is met, and one status per requirement.
pub fn requirement_status(
    csv: &ClusterServiceVersion,
    observed: &Observed,
) -> (bool, Vec<RequirementStatus>) {
    let name = csv.name_any();
    let mut out = Vec::new();
    let mut met = true;
    let mut push = |group: &str,
                    version: &str,
                    kind: &str,
                    object: &str,
                    status: StatusReason,
                    message: String,
                    uuid: Option<String>| {
        met &= status == StatusReason::Present;
        out.push(RequirementStatus {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            name: object.to_owned(),
            status,
            message,
            uuid,
            dependents: Vec::new(),
        });
    };

    if let (Some(min), Some(server)) = (
        csv.spec.min_kube_version.as_deref(),
        observed.server_version.as_deref(),
    ) && !min.trim().is_empty()
    {
        let ok = match (lenient_version(min), lenient_version(server)) {
            (Some(min_v), Some(server_v)) => (server_v >= min_v).then_some(String::new()).ok_or(format!(
                "CSV version requirement not met: minKubeVersion ({min}) > server version ({server})"
            )),
            (None, _) => Err(format!(
                "spec.minKubeVersion {min:?} is not a version; use a form like 1.25.0"
            )),
            (_, None) => Err(format!("cannot compare with server version {server:?}")),
        };
        let (status, message) = match ok {
            Ok(_) => (
                StatusReason::Present,
                "CSV minKubeVersion requirement met".to_owned(),
            ),
            Err(m) => (StatusReason::PresentNotSatisfied, m),
        };
        push(
            crate::api::GROUP,
            "v1alpha1",
            CSV_KIND,
            &name,
            status,
            message,
            None,
        );
    }

    let crds = csv.spec.custom_resource_definitions.clone().unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    for desc in crds.owned.iter().chain(crds.required.iter()) {
        if !seen.insert(desc.name.clone()) {
            continue;
        }
        let state = observed.crds.get(&desc.name).cloned().unwrap_or_default();
        let (status, message, uid) = match state {
            CrdState::Absent => (StatusReason::NotPresent, "CRD is not present".to_owned(), None),
            CrdState::Present {
                established,
                served_versions,
                uid,
            } => {
                if !served_versions.iter().any(|v| v == &desc.version) {
                    (
                        StatusReason::PresentNotSatisfied,
                        format!(
                            "CRD does not serve version {} (serves {})",
                            desc.version,
                            served_versions.join(", ")
                        ),
                        uid,
                    )
                } else if !established {
                    (
                        StatusReason::PresentNotAvailable,
                        "CRD is present but not established yet".to_owned(),
                        uid,
                    )
                } else {
                    (
                        StatusReason::Present,
                        "CRD is present and Established condition is true".to_owned(),
                        uid,
                    )
                }
            }
        };
        push(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            &desc.name,
            status,
            message,
            uid,
        );
    }

    let strategy = &csv.spec.install.spec;
    let replacee = csv.spec.replaces.clone().unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    for permission in strategy
        .permissions
        .iter()
        .chain(strategy.cluster_permissions.iter())
    {
        let sa = &permission.service_account_name;
        if !seen.insert(sa.clone()) {
            continue;
        }
        let state = observed.service_accounts.get(sa).cloned().unwrap_or_default();
        let (status, message, uid) = match state {
            ServiceAccountState::Absent => (
                StatusReason::NotPresent,
                "Service account does not exist".to_owned(),
                None,
            ),
            // Upstream's rule (`requirements.go`): a ServiceAccount owned by CSVs must be owned
            // by this one (among others: versions share it); we also accept the CSV this one
            // replaces, before the executor has added this CSV as an owner.
            ServiceAccountState::Present { owner_csvs, uid } => {
                let mine = owner_csvs.is_empty() || owner_csvs.iter().any(|o| *o == name || *o == replacee);
                match owner_csvs.first().filter(|_| !mine) {
                    Some(other) => (
                        StatusReason::PresentNotSatisfied,
                        format!("Service account is owned by another ClusterServiceVersion ({other})"),
                        uid,
                    ),
                    None => (StatusReason::Present, "Service account exists".to_owned(), uid),
                }
            }
        };
        push("", "v1", "ServiceAccount", sa, status, message, uid);
    }
    (met, out)
}

/// Parses `v1.37.0+k3s1`, `1.25`, `1.25.3-rc.1` leniently into (major, minor, patch).
fn lenient_version(text: &str) -> Option<(u64, u64, u64)> {
    let core = text.trim().trim_start_matches('v');
    let core = core.split(['-', '+']).next().unwrap_or_default();
    let mut parts = core.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |p| p.parse().ok())?;
    let patch = parts.next().map_or(Some(0), |p| p.parse().ok())?;
    Some((major, minor, patch))
}

/// The Deployments the CSV's install strategy asks for, with OLM's labels, pod-template
/// annotations (`annotations` overlaid: pass the CSV's annotations including the
/// OperatorGroup member annotations), `OPERATOR_CONDITION_NAME`, `revisionHistoryLimit: 1`
/// and the `olm.deployment-spec-hash` label (see the module doc).
pub fn desired_deployments(
    csv: &ClusterServiceVersion,
    annotations: &BTreeMap<String, String>,
) -> Vec<Deployment> {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    // The Operator-API component label the InstallPlan put on the CSV goes on its Deployments.
    let component_labels: BTreeMap<String, String> = csv
        .labels()
        .iter()
        .filter(|(k, _)| k.starts_with(COMPONENT_LABEL_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let owner = csv.metadata.uid.as_ref().map(|uid| OwnerReference {
        api_version: v1alpha1::API_VERSION.to_owned(),
        kind: CSV_KIND.to_owned(),
        name: name.clone(),
        uid: uid.clone(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    });
    csv.spec
        .install
        .spec
        .deployments
        .iter()
        .map(|entry| {
            let mut spec: DeploymentSpec = entry.spec.clone();
            spec.revision_history_limit = Some(1);
            let template_meta = spec.template.metadata.get_or_insert_with(ObjectMeta::default);
            let template_annotations = template_meta.annotations.get_or_insert_with(BTreeMap::new);
            for (k, v) in annotations {
                if k != LAST_APPLIED {
                    template_annotations.insert(k.clone(), v.clone());
                }
            }
            if let Some(pod) = spec.template.spec.as_mut() {
                for container in &mut pod.containers {
                    let env = container.env.get_or_insert_with(Vec::new);
                    env.retain(|e| e.name != OPERATOR_CONDITION_ENV);
                    env.push(EnvVar {
                        name: OPERATOR_CONDITION_ENV.to_owned(),
                        value: Some(name.clone()),
                        value_from: None,
                    });
                }
            }
            let mut labels = entry.label.clone().unwrap_or_default();
            labels.insert(MANAGED.to_owned(), "true".to_owned());
            labels.extend(component_labels.clone());
            labels.extend(owner_labels(&name, &namespace));
            labels.insert(DEPLOYMENT_SPEC_HASH.to_owned(), encode_hash(hash_json(&spec), 13));
            Deployment {
                metadata: ObjectMeta {
                    name: Some(entry.name.clone()),
                    namespace: Some(namespace.clone()),
                    labels: Some(labels),
                    owner_references: owner.clone().map(|o| vec![o]),
                    ..Default::default()
                },
                spec,
                status: None,
            }
        })
        .collect()
}

/// Whether every requirement a new CSV misses is a ServiceAccount that one of `plans` (the
/// InstallPlans of its namespace), still `Installing`, has yet to apply for it. The plan creates
/// the CSV first, so the other objects can carry its owner reference, and its ServiceAccounts
/// right after: recording `Pending`/`RequirementsNotMet` for those milliseconds would cost a
/// status write, two Events and a Subscription reconcile, and the ServiceAccounts' creation
/// triggers the next reconcile anyway. (Upstream writes the `Pending` phase; the difference
/// lasts until the plan's next step.)
#[must_use]
pub fn waits_only_on_own_plan<'a>(
    csv_name: &str,
    requirements: &[RequirementStatus],
    plans: impl IntoIterator<Item = &'a v1alpha1::InstallPlanStatus>,
) -> bool {
    let installing: Vec<&v1alpha1::InstallPlanStatus> = plans
        .into_iter()
        .filter(|p| p.phase == v1alpha1::InstallPlanPhase::Installing)
        .collect();
    let pending_in_plan = |sa: &str| {
        installing.iter().any(|p| {
            p.plan.iter().any(|step| {
                step.resolving == csv_name
                    && step.resource.kind == "ServiceAccount"
                    && step.resource.name == sa
                    && !matches!(
                        step.status,
                        v1alpha1::StepStatus::Created | v1alpha1::StepStatus::Present
                    )
            })
        })
    };
    let mut unmet = requirements
        .iter()
        .filter(|r| r.status != StatusReason::Present)
        .peekable();
    unmet.peek().is_some() && unmet.all(|r| r.kind == "ServiceAccount" && pending_in_plan(&r.name))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    use super::*;
    use crate::api::labels::{MANAGED, OWNER_KIND, OWNER_NAMESPACE, TARGET_NAMESPACES};

    const CRD: &str = "redisclusters.cache.example.com";
    const ME: &str = "redis-operator.v1.1.0";
    const OLD: &str = "redis-operator.v1.0.0";
    const NEW: &str = "redis-operator.v1.2.0";

    fn t(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
    }

    /// Test builder for CSVs: `Csv::test().phase(..).reason(..).build()`.
    struct Csv(ClusterServiceVersion);

    impl Csv {
        fn test() -> Self {
            let mut csv: ClusterServiceVersion = serde_json::from_value(json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "ClusterServiceVersion",
                "metadata": {"name": ME, "namespace": "operators", "uid": "uid-me",
                             "annotations": {"capabilities": "Basic Install", LAST_APPLIED: "{}"}},
                "spec": {
                    "displayName": "Redis",
                    "customresourcedefinitions": {"owned": [{"name": CRD, "version": "v1", "kind": "RedisCluster"}]},
                    "install": {"strategy": "deployment", "spec": {
                        "deployments": [{"name": "redis-operator", "label": {"app": "redis"}, "spec": {
                            "selector": {"matchLabels": {"app": "redis"}},
                            "template": {"metadata": {"labels": {"app": "redis"}, "annotations": {"t": "1"}},
                                         "spec": {"containers": [{"name": "manager", "image": "redis-op:1",
                                                                  "env": [{"name": OPERATOR_CONDITION_ENV, "value": "stale"}]}]}}}}],
                        "permissions": [{"serviceAccountName": "redis-operator",
                                         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}]
                    }},
                    "installModes": [
                        {"type": "OwnNamespace", "supported": true},
                        {"type": "SingleNamespace", "supported": false},
                        {"type": "MultiNamespace", "supported": false},
                        {"type": "AllNamespaces", "supported": true}
                    ]
                }
            }))
            .unwrap();
            csv.status = Some(ClusterServiceVersionStatus::default());
            Self(csv)
        }
        fn status(&mut self) -> &mut ClusterServiceVersionStatus {
            self.0.status.get_or_insert_with(Default::default)
        }
        fn phase(mut self, phase: CsvPhase) -> Self {
            self.status().phase = Some(phase);
            self
        }
        fn reason(mut self, reason: CsvReason) -> Self {
            self.status().reason = Some(reason);
            self
        }
        fn transitioned_at(mut self, time: Time) -> Self {
            self.status().last_transition_time = Some(time);
            self
        }
        fn replaces(mut self, name: &str) -> Self {
            self.0.spec.replaces = Some(name.to_owned());
            self
        }
        fn min_kube_version(mut self, v: &str) -> Self {
            self.0.spec.min_kube_version = Some(v.to_owned());
            self
        }
        fn install_modes(mut self, modes: &[(&str, bool)]) -> Self {
            self.0.spec.install_modes = modes
                .iter()
                .map(|(t, s)| v1alpha1::InstallMode {
                    type_: v1alpha1::InstallModeType::parse(t),
                    supported: *s,
                })
                .collect();
            self
        }
        fn member_of(mut self, og: &str, targets: &str) -> Self {
            let a = self.0.metadata.annotations.get_or_insert_with(BTreeMap::new);
            a.insert("olm.operatorGroup".into(), og.into());
            a.insert("olm.operatorNamespace".into(), "operators".into());
            a.insert(TARGET_NAMESPACES.into(), targets.into());
            self
        }
        fn build(self) -> ClusterServiceVersion {
            self.0
        }
    }

    fn established() -> CrdState {
        CrdState::Present {
            established: true,
            served_versions: vec!["v1".into()],
            uid: Some("crd-uid".into()),
        }
    }

    /// Observed state of a namespace where every requirement is met.
    fn ready() -> Observed {
        Observed::default()
            .with_og("og", &["operators"])
            .with_crd(CRD, established())
            .with_service_account("redis-operator", &[ME])
    }

    fn healthy_deployment(csv: &ClusterServiceVersion) -> ObservedDeployment {
        let desired = desired_deployments(csv, &annotations_for(csv));
        ObservedDeployment {
            owner: Some(ME.into()),
            spec_hash: desired[0].labels().get(DEPLOYMENT_SPEC_HASH).cloned(),
            generation: Some(2),
            observed_generation: Some(2),
            desired_replicas: 1,
            replicas: 1,
            updated_replicas: 1,
            available_replicas: 1,
            available: true,
            progress_deadline_exceeded: false,
        }
    }

    fn annotations_for(csv: &ClusterServiceVersion) -> BTreeMap<String, String> {
        let mut a = csv.annotations().clone();
        a.extend(member_annotations("og", "operators", &["operators".to_owned()]));
        a
    }

    fn with_healthy(observed: Observed, csv: &ClusterServiceVersion) -> Observed {
        observed.with_deployment("redis-operator", healthy_deployment(csv))
    }

    fn outcome(d: &CsvDecision) -> (CsvPhase, CsvReason) {
        (d.phase.clone(), d.reason.clone())
    }

    // ── pre-checks ───────────────────────────────────────────────────────────────────────

    #[test]
    fn a_namespace_without_an_operator_group_fails_the_csv_with_no_operator_group() {
        let d = decide(&Csv::test().build(), &Observed::default(), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::NoOperatorGroup));
        assert!(d.message.contains("namespace operators has no OperatorGroup"));
    }

    #[test]
    fn two_operator_groups_fail_the_csv_with_too_many_operator_groups_naming_both() {
        let observed = ready().with_og("og-2", &["operators"]);
        let d = decide(&Csv::test().phase(CsvPhase::Succeeded).build(), &observed, &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::TooManyOperatorGroups));
        assert!(d.message.contains("(og, og-2)"));
    }

    #[test]
    fn an_operator_group_targeting_an_unsupported_namespace_fails_with_unsupported_operator_group() {
        let observed = ready();
        let observed = Observed {
            operator_groups: vec![ObservedOperatorGroup {
                name: "og-single".into(),
                namespaces: Some(vec!["team-a".into()]),
                fail_forward: false,
            }],
            ..observed
        };
        let d = decide(&Csv::test().build(), &observed, &t(0));
        assert_eq!(
            outcome(&d),
            (CsvPhase::Failed, CsvReason::UnsupportedOperatorGroup)
        );
        assert!(
            d.message
                .contains("target the operator namespace or all namespaces"),
            "{}",
            d.message
        );
    }

    #[test]
    fn duplicate_install_modes_fail_with_invalid_install_modes() {
        let csv = Csv::test()
            .install_modes(&[("OwnNamespace", true), ("OwnNamespace", false)])
            .build();
        let d = decide(&csv, &ready(), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::InvalidInstallModes));
    }

    #[test]
    fn a_selector_matching_nothing_fails_with_no_target_namespaces() {
        let observed = Observed::default().with_og("og", &[]);
        let d = decide(&Csv::test().build(), &observed, &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::NoTargetNamespaces));
    }

    #[test]
    fn an_operator_group_without_status_keeps_a_new_csv_pending_and_requeues() {
        let observed = Observed {
            operator_groups: vec![ObservedOperatorGroup {
                name: "og".into(),
                namespaces: None,
                fail_forward: false,
            }],
            ..Observed::default()
        };
        let d = decide(&Csv::test().build(), &observed, &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsUnknown));
        assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
    }

    #[test]
    fn missing_member_annotations_are_returned_for_the_shell_to_write() {
        let d = decide(&Csv::test().build(), &ready(), &t(0));
        let a = d.annotations.expect("annotations to write");
        assert_eq!(a["olm.operatorGroup"], "og");
        assert_eq!(a[TARGET_NAMESPACES], "operators");
        assert_eq!(a["capabilities"], "Basic Install");
        let d = decide(&Csv::test().member_of("og", "operators").build(), &ready(), &t(0));
        assert_eq!(d.annotations, None);
    }

    // ── the phases ───────────────────────────────────────────────────────────────────────

    #[test]
    fn a_new_csv_goes_pending_with_requirements_unknown() {
        let d = decide(&Csv::test().build(), &ready(), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsUnknown));
        assert_eq!(d.message, "requirements not yet checked");
    }

    #[test]
    fn a_pending_csv_with_a_missing_crd_stays_pending_with_requirements_not_met() {
        let observed = Observed::default()
            .with_og("og", &["operators"])
            .with_service_account("redis-operator", &[ME]);
        let d = decide(&Csv::test().phase(CsvPhase::Pending).build(), &observed, &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsNotMet));
        let reqs = d.requirement_status.unwrap();
        let crd = reqs.iter().find(|r| r.name == CRD).unwrap();
        assert_eq!(crd.status, StatusReason::NotPresent);
        let sa = reqs.iter().find(|r| r.name == "redis-operator").unwrap();
        assert_eq!(sa.status, StatusReason::Present);
        assert_eq!(d.requeue_after, Some(REQUIREMENTS_REQUEUE));
    }

    #[test]
    fn a_crd_that_is_not_established_is_present_not_available() {
        let observed = ready().with_crd(
            CRD,
            CrdState::Present {
                established: false,
                served_versions: vec!["v1".into()],
                uid: None,
            },
        );
        let d = decide(&Csv::test().phase(CsvPhase::Pending).build(), &observed, &t(0));
        assert_eq!(d.reason, CsvReason::RequirementsNotMet);
        let reqs = d.requirement_status.unwrap();
        assert_eq!(reqs[0].status, StatusReason::PresentNotAvailable);
    }

    #[test]
    fn a_crd_not_serving_the_csvs_version_does_not_satisfy_it() {
        let observed = ready().with_crd(
            CRD,
            CrdState::Present {
                established: true,
                served_versions: vec!["v2".into()],
                uid: None,
            },
        );
        let (met, reqs) = requirement_status(&Csv::test().build(), &observed);
        assert!(!met);
        assert_eq!(reqs[0].status, StatusReason::PresentNotSatisfied);
        assert!(reqs[0].message.contains("does not serve version v1"));
    }

    #[test]
    fn a_service_account_owned_by_an_unrelated_csv_is_not_satisfied() {
        let observed = ready().with_service_account("redis-operator", &["other.v1"]);
        let (met, reqs) = requirement_status(&Csv::test().build(), &observed);
        assert!(!met);
        let sa = reqs.iter().find(|r| r.kind == "ServiceAccount").unwrap();
        assert_eq!(sa.status, StatusReason::PresentNotSatisfied);
        // owned by the CSV being replaced is fine.
        let observed = ready().with_service_account("redis-operator", &[OLD]);
        assert!(requirement_status(&Csv::test().replaces(OLD).build(), &observed).0);
        // shared between this CSV and its replacement (an upgrade in progress) is fine too.
        let me = Csv::test().build().name_any();
        let observed = ready().with_service_account("redis-operator", &[&me, "redis-operator.v9.9.9"]);
        assert!(requirement_status(&Csv::test().build(), &observed).0);
    }

    #[test]
    fn a_server_older_than_min_kube_version_is_not_satisfied() {
        let observed = Observed {
            server_version: Some("v1.24.3+k3s1".into()),
            ..ready()
        };
        let (met, reqs) = requirement_status(&Csv::test().min_kube_version("1.25.0").build(), &observed);
        assert!(!met);
        assert!(
            reqs[0]
                .message
                .contains("minKubeVersion (1.25.0) > server version (v1.24.3+k3s1)")
        );
        let observed = Observed {
            server_version: Some("v1.37.0".into()),
            ..ready()
        };
        assert!(requirement_status(&Csv::test().min_kube_version("1.25").build(), &observed).0);
    }

    #[test]
    fn a_pending_csv_with_all_requirements_goes_install_ready() {
        let d = decide(&Csv::test().phase(CsvPhase::Pending).build(), &ready(), &t(0));
        assert_eq!(
            outcome(&d),
            (CsvPhase::InstallReady, CsvReason::AllRequirementsMet)
        );
        assert!(
            d.requirement_status
                .unwrap()
                .iter()
                .all(|r| r.status == StatusReason::Present)
        );
        assert!(d.desired_deployments.is_empty());
    }

    #[test]
    fn a_pending_csv_owning_a_crd_another_csv_owns_fails_with_owner_conflict() {
        let observed = Observed {
            crd_owner_conflicts: vec![CrdOwnerConflict {
                crd: CRD.into(),
                csv: "other.v1".into(),
            }],
            ..ready()
        };
        let d = decide(&Csv::test().phase(CsvPhase::Pending).build(), &observed, &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::OwnerConflict));
        assert!(
            d.message
                .contains("already owned by ClusterServiceVersion other.v1")
        );
    }

    #[test]
    fn a_pending_upgrade_waits_until_the_old_csv_is_replacing() {
        let csv = Csv::test()
            .replaces(OLD)
            .phase(CsvPhase::Pending)
            .reason(CsvReason::RequirementsNotMet)
            .build();
        let d = decide(&csv, &ready().with_replacee(OLD, CsvPhase::Succeeded), &t(0));
        assert_eq!(d.phase, CsvPhase::Pending);
        assert_eq!(d.reason, CsvReason::RequirementsNotMet);
        assert!(
            d.message
                .contains("waiting for redis-operator.v1.0.0 (phase Succeeded)")
        );
        assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
        let d = decide(&csv, &ready().with_replacee(OLD, CsvPhase::Replacing), &t(0));
        assert_eq!(
            outcome(&d),
            (CsvPhase::InstallReady, CsvReason::AllRequirementsMet)
        );
    }

    #[test]
    fn an_install_ready_csv_creates_its_deployments_and_goes_installing() {
        let csv = Csv::test().phase(CsvPhase::InstallReady).build();
        let d = decide(&csv, &ready(), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallSucceeded));
        assert_eq!(d.message, "waiting for install components to report healthy");
        assert_eq!(d.desired_deployments.len(), 1);
        assert_eq!(d.desired_deployments[0].name_any(), "redis-operator");
    }

    #[test]
    fn install_ready_lists_deployments_this_csv_owns_but_no_longer_declares_as_stale() {
        let csv = Csv::test().phase(CsvPhase::InstallReady).build();
        let observed = ready()
            .with_deployment(
                "old-helper",
                ObservedDeployment {
                    owner: Some(ME.into()),
                    ..Default::default()
                },
            )
            .with_deployment(
                "someone-elses",
                ObservedDeployment {
                    owner: Some("x.v1".into()),
                    ..Default::default()
                },
            );
        assert_eq!(decide(&csv, &observed, &t(0)).stale_deployments, ["old-helper"]);
    }

    #[test]
    fn an_installing_csv_with_available_deployments_succeeds() {
        let csv = Csv::test()
            .phase(CsvPhase::Installing)
            .transitioned_at(t(0))
            .build();
        let d = decide(&csv, &with_healthy(ready(), &csv), &t(10));
        assert_eq!(outcome(&d), (CsvPhase::Succeeded, CsvReason::InstallSucceeded));
        assert_eq!(d.message, "install strategy completed with no errors");
    }

    #[test]
    fn an_installing_csv_waits_for_an_unavailable_deployment_with_a_requeue() {
        let csv = Csv::test()
            .phase(CsvPhase::Installing)
            .transitioned_at(t(0))
            .build();
        let mut dep = healthy_deployment(&csv);
        dep.available = false;
        dep.available_replicas = 0;
        let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(10));
        assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallWaiting));
        assert!(
            d.message.contains("0 of 1 updated replicas are available"),
            "{}",
            d.message
        );
        assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
    }

    #[test]
    fn an_installing_csv_waits_for_a_rollout_in_progress() {
        let csv = Csv::test()
            .phase(CsvPhase::Installing)
            .transitioned_at(t(0))
            .build();
        let mut dep = healthy_deployment(&csv);
        dep.generation = Some(3);
        let d = decide(
            &csv,
            &ready().with_deployment("redis-operator", dep.clone()),
            &t(1),
        );
        assert!(d.message.contains("waiting for the new spec to be observed"));
        dep.generation = Some(2);
        dep.updated_replicas = 0;
        let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(1));
        assert!(d.message.contains("0 out of 1 new replicas have been updated"));
    }

    #[test]
    fn an_installing_csv_still_waiting_after_five_minutes_fails_with_install_check_failed() {
        let csv = Csv::test()
            .phase(CsvPhase::Installing)
            .transitioned_at(t(0))
            .build();
        let d = decide(&csv, &ready(), &t(299));
        assert_eq!(outcome(&d), (CsvPhase::Installing, CsvReason::InstallWaiting));
        assert_eq!(d.requeue_after, Some(Duration::from_secs(1)));
        let d = decide(&csv, &ready(), &t(300));
        assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::InstallCheckFailed));
        assert_eq!(d.message, "install timeout");
    }

    #[test]
    fn an_installing_csv_whose_deployment_missed_its_deadline_fails_at_once() {
        let csv = Csv::test()
            .phase(CsvPhase::Installing)
            .transitioned_at(t(0))
            .build();
        let mut dep = healthy_deployment(&csv);
        dep.progress_deadline_exceeded = true;
        let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(1));
        assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::InstallCheckFailed));
        assert!(d.message.contains("exceeded its progress deadline"));
    }

    #[test]
    fn an_installing_csv_whose_deployment_spec_drifted_goes_back_to_install_ready() {
        let csv = Csv::test()
            .phase(CsvPhase::Installing)
            .transitioned_at(t(0))
            .build();
        let mut dep = healthy_deployment(&csv);
        dep.spec_hash = Some("old".into());
        let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(1));
        assert_eq!(outcome(&d), (CsvPhase::InstallReady, CsvReason::InstallWaiting));
    }

    #[test]
    fn a_succeeded_csv_with_a_replacement_goes_replacing() {
        let csv = Csv::test().phase(CsvPhase::Succeeded).build();
        let observed = with_healthy(ready(), &csv).with_replacement(NEW, CsvPhase::Pending);
        let d = decide(&csv, &observed, &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Replacing, CsvReason::BeingReplaced));
        assert_eq!(d.message, format!("being replaced by csv: {NEW}"));
    }

    #[test]
    fn a_healthy_succeeded_csv_stays_succeeded_and_its_status_does_not_change() {
        let csv = Csv::test()
            .member_of("og", "operators")
            .phase(CsvPhase::Succeeded)
            .reason(CsvReason::InstallSucceeded)
            .build();
        let mut csv = csv;
        csv.status.as_mut().unwrap().message = Some("install strategy completed with no errors".into());
        let observed = with_healthy(ready(), &csv);
        let d = decide(&csv, &observed, &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Succeeded, CsvReason::InstallSucceeded));
        let mut status = csv.status.clone().unwrap();
        // first application records the requirement status; afterwards nothing changes.
        d.apply_to(&mut status, &t(5));
        let before = status.clone();
        assert!(!decide(&csv, &observed, &t(9)).apply_to(&mut status, &t(9)));
        assert_eq!(status, before);
    }

    #[test]
    fn a_succeeded_csv_that_lost_a_requirement_fails_with_requirements_not_met() {
        let csv = Csv::test().phase(CsvPhase::Succeeded).build();
        let observed = with_healthy(ready(), &csv).with_crd(CRD, CrdState::Absent);
        let d = decide(&csv, &observed, &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::RequirementsNotMet));
    }

    #[test]
    fn a_succeeded_csv_with_an_unavailable_deployment_fails_with_component_unhealthy() {
        let csv = Csv::test().phase(CsvPhase::Succeeded).build();
        let mut dep = healthy_deployment(&csv);
        dep.available = false;
        let d = decide(&csv, &ready().with_deployment("redis-operator", dep), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Failed, CsvReason::ComponentUnhealthy));
    }

    #[test]
    fn a_failed_csv_whose_operator_group_was_fixed_goes_back_to_pending() {
        let csv = Csv::test()
            .phase(CsvPhase::Failed)
            .reason(CsvReason::UnsupportedOperatorGroup)
            .build();
        let d = decide(&csv, &ready(), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsUnknown));
    }

    #[test]
    fn a_failed_csv_whose_components_are_healthy_again_succeeds() {
        let csv = Csv::test()
            .phase(CsvPhase::Failed)
            .reason(CsvReason::ComponentUnhealthy)
            .build();
        let d = decide(&csv, &with_healthy(ready(), &csv), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Succeeded, CsvReason::InstallSucceeded));
    }

    #[test]
    fn a_failed_csv_with_unhealthy_components_needs_a_reinstall() {
        let csv = Csv::test()
            .phase(CsvPhase::Failed)
            .reason(CsvReason::InstallCheckFailed)
            .build();
        let d = decide(&csv, &ready(), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::NeedsReinstall));
    }

    #[test]
    fn a_failed_csv_that_lost_requirements_goes_pending_with_requirements_not_met() {
        let csv = Csv::test()
            .phase(CsvPhase::Failed)
            .reason(CsvReason::ComponentUnhealthy)
            .build();
        let d = decide(&csv, &ready().with_crd(CRD, CrdState::Absent), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Pending, CsvReason::RequirementsNotMet));
    }

    #[test]
    fn a_failed_csv_with_invalid_install_modes_or_no_retry_stays_failed() {
        let no_retry = CsvReason::InstallComponentFailedNoRetry;
        let csv = Csv::test()
            .phase(CsvPhase::Failed)
            .reason(no_retry.clone())
            .build();
        assert_eq!(
            outcome(&decide(&csv, &ready(), &t(0))),
            (CsvPhase::Failed, no_retry)
        );
        let csv = Csv::test()
            .phase(CsvPhase::Failed)
            .reason(CsvReason::InvalidInstallModes)
            .install_modes(&[("OwnNamespace", true), ("OwnNamespace", true)])
            .build();
        assert_eq!(
            outcome(&decide(&csv, &ready(), &t(0))),
            (CsvPhase::Failed, CsvReason::InvalidInstallModes)
        );
    }

    #[test]
    fn a_failed_owner_conflict_stays_failed_while_the_conflict_lasts() {
        let csv = Csv::test()
            .phase(CsvPhase::Failed)
            .reason(CsvReason::OwnerConflict)
            .build();
        let conflicted = Observed {
            crd_owner_conflicts: vec![CrdOwnerConflict {
                crd: CRD.into(),
                csv: "other.v1".into(),
            }],
            ..ready()
        };
        assert_eq!(
            outcome(&decide(&csv, &conflicted, &t(0))),
            (CsvPhase::Failed, CsvReason::OwnerConflict)
        );
        // once the other operator is gone, the CSV reinstalls.
        assert_eq!(
            outcome(&decide(&csv, &ready(), &t(0))),
            (CsvPhase::Pending, CsvReason::NeedsReinstall)
        );
    }

    #[test]
    fn a_failed_csv_with_a_fail_forward_group_and_a_replacement_goes_replacing() {
        let csv = Csv::test()
            .phase(CsvPhase::Failed)
            .reason(CsvReason::InstallCheckFailed)
            .build();
        let mut observed = ready().with_replacement(NEW, CsvPhase::Pending);
        let d = decide(&csv, &observed, &t(0));
        assert_eq!(
            d.phase,
            CsvPhase::Pending,
            "default strategy never replaces a failed CSV"
        );
        observed.operator_groups[0].fail_forward = true;
        let d = decide(&csv, &observed, &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Replacing, CsvReason::BeingReplaced));
    }

    #[test]
    fn a_replacing_csv_is_deleted_once_its_replacement_succeeded() {
        let csv = Csv::test()
            .phase(CsvPhase::Replacing)
            .reason(CsvReason::BeingReplaced)
            .build();
        let d = decide(&csv, &ready().with_replacement(NEW, CsvPhase::Installing), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Replacing, CsvReason::BeingReplaced));
        assert_eq!(d.requeue_after, Some(WAIT_REQUEUE));
        let d = decide(&csv, &ready().with_replacement(NEW, CsvPhase::Succeeded), &t(0));
        assert_eq!(outcome(&d), (CsvPhase::Deleting, CsvReason::Replaced));
        assert!(!d.delete_self, "the Deleting phase is recorded first");
    }

    #[test]
    fn a_replacing_csv_that_still_replaces_an_older_one_waits_its_turn() {
        let csv = Csv::test()
            .replaces(OLD)
            .phase(CsvPhase::Replacing)
            .reason(CsvReason::BeingReplaced)
            .build();
        let observed = ready()
            .with_replacee(OLD, CsvPhase::Replacing)
            .with_replacement(NEW, CsvPhase::Succeeded);
        assert_eq!(decide(&csv, &observed, &t(0)).phase, CsvPhase::Replacing);
    }

    #[test]
    fn a_deleting_csv_asks_to_be_deleted_whatever_else_is_observed() {
        let csv = Csv::test()
            .phase(CsvPhase::Deleting)
            .reason(CsvReason::Replaced)
            .build();
        let d = decide(&csv, &Observed::default(), &t(0));
        assert!(d.delete_self);
        assert_eq!(d.phase, CsvPhase::Deleting);
    }

    // ── desired Deployments ──────────────────────────────────────────────────────────────

    #[test]
    fn desired_deployments_carry_olm_labels_owner_annotations_env_and_history_limit() {
        let csv = Csv::test().build();
        let deployments = desired_deployments(&csv, &annotations_for(&csv));
        let d = &deployments[0];
        let labels = d.labels();
        assert_eq!(labels["app"], "redis");
        assert_eq!(labels[MANAGED], "true");
        assert_eq!(labels[OWNER], ME);
        assert_eq!(labels[OWNER_NAMESPACE], "operators");
        assert_eq!(labels[OWNER_KIND], "ClusterServiceVersion");
        assert!(!labels[DEPLOYMENT_SPEC_HASH].is_empty());
        assert_eq!(d.metadata.namespace.as_deref(), Some("operators"));
        let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.uid.as_str(), owner.controller), ("uid-me", Some(false)));
        let spec = &d.spec;
        assert_eq!(spec.revision_history_limit, Some(1));
        let template_annotations = spec
            .template
            .metadata
            .as_ref()
            .unwrap()
            .annotations
            .as_ref()
            .unwrap();
        assert_eq!(template_annotations["t"], "1");
        assert_eq!(template_annotations[TARGET_NAMESPACES], "operators");
        assert_eq!(template_annotations["capabilities"], "Basic Install");
        assert!(!template_annotations.contains_key(LAST_APPLIED));
        let env = spec.template.spec.as_ref().unwrap().containers[0]
            .env
            .as_ref()
            .unwrap();
        let cond: Vec<_> = env.iter().filter(|e| e.name == OPERATOR_CONDITION_ENV).collect();
        assert_eq!(cond.len(), 1);
        assert_eq!(cond[0].value.as_deref(), Some(ME));
    }

    #[test]
    fn desired_deployments_carry_the_operator_component_label_of_their_csv_and_nothing_else_of_it() {
        // The InstallPlan labels the CSV `operators.coreos.com/<package>.<namespace>` (empty
        // value, upstream's Operator-API component label); its Deployments inherit exactly that.
        let mut csv = Csv::test().build();
        csv.metadata.labels = Some(BTreeMap::from([
            (
                "operators.coreos.com/redis-operator.operators".to_owned(),
                String::new(),
            ),
            ("team".to_owned(), "a".to_owned()),
        ]));
        let labels = desired_deployments(&csv, &annotations_for(&csv))[0]
            .labels()
            .clone();
        assert_eq!(
            labels
                .get("operators.coreos.com/redis-operator.operators")
                .map(String::as_str),
            Some("")
        );
        assert!(!labels.contains_key("team"), "{labels:?}");
        // Without the label on the CSV, none is invented.
        let bare = Csv::test().build();
        let labels = desired_deployments(&bare, &annotations_for(&bare))[0]
            .labels()
            .clone();
        assert!(
            !labels.keys().any(|k| k.starts_with(COMPONENT_LABEL_PREFIX)),
            "{labels:?}"
        );
    }

    #[test]
    fn the_spec_hash_changes_when_the_target_namespaces_change() {
        let csv = Csv::test().build();
        let hash = |targets: &str| {
            let mut a = annotations_for(&csv);
            a.insert(TARGET_NAMESPACES.into(), targets.into());
            desired_deployments(&csv, &a)[0].labels()[DEPLOYMENT_SPEC_HASH].clone()
        };
        assert_eq!(hash("operators"), hash("operators"));
        assert_ne!(hash("operators"), hash(""));
    }

    #[test]
    fn an_upgrade_takes_over_the_old_csvs_deployment_by_name() {
        // The old CSV's deployment is observed; the new CSV in InstallReady applies its own
        // spec with itself as owner, and while the old owner is still observed it re-applies.
        let csv = Csv::test().replaces(OLD).phase(CsvPhase::InstallReady).build();
        let d = decide(&csv, &ready().with_replacee(OLD, CsvPhase::Replacing), &t(0));
        assert_eq!(d.desired_deployments[0].labels()[OWNER], ME);
        let csv = Csv::test()
            .replaces(OLD)
            .phase(CsvPhase::Installing)
            .transitioned_at(t(0))
            .build();
        let mut old = healthy_deployment(&csv);
        old.owner = Some(OLD.into());
        let d = decide(&csv, &ready().with_deployment("redis-operator", old), &t(1));
        assert_eq!(d.phase, CsvPhase::InstallReady);
        assert!(d.message.contains("owned by redis-operator.v1.0.0"));
    }

    #[test]
    fn observed_deployments_are_read_from_labels_and_status() {
        let dep: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "x", "generation": 4, "labels": {OWNER: ME, DEPLOYMENT_SPEC_HASH: "h"}},
            "spec": {"replicas": 2, "selector": {}, "template": {}},
            "status": {"observedGeneration": 4, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1,
                       "conditions": [{"type": "Available", "status": "True"},
                                      {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]}
        }))
        .unwrap();
        let o = ObservedDeployment::from_deployment(&dep);
        assert_eq!(o.owner.as_deref(), Some(ME));
        assert_eq!(o.spec_hash.as_deref(), Some("h"));
        assert_eq!(
            (o.desired_replicas, o.updated_replicas, o.available_replicas),
            (2, 2, 1)
        );
        assert!(o.available && o.progress_deadline_exceeded);
    }

    // ── helpers for the shell ───────────────────────────────────────────────────────────

    fn named(name: &str, replaces: Option<&str>, owns: &[&str]) -> ClusterServiceVersion {
        let mut csv = Csv::test().build();
        csv.metadata.name = Some(name.into());
        csv.spec.replaces = replaces.map(str::to_owned);
        csv.spec.custom_resource_definitions = Some(v1alpha1::CustomResourceDefinitions {
            owned: owns
                .iter()
                .map(|n| v1alpha1::CrdDescription {
                    name: (*n).into(),
                    version: "v1".into(),
                    kind: "K".into(),
                    display_name: None,
                    description: None,
                    resources: vec![],
                    status_descriptors: vec![],
                    spec_descriptors: vec![],
                    action_descriptors: vec![],
                })
                .collect(),
            required: vec![],
        });
        csv
    }

    #[test]
    fn owner_conflicts_ignore_the_replacement_chain_but_not_strangers() {
        let old = named(OLD, None, &[CRD]);
        let me = named(ME, Some(OLD), &[CRD]);
        let new = named(NEW, Some(ME), &[CRD]);
        let stranger = named("other.v1", None, &[CRD]);
        let all = vec![old.clone(), me.clone(), new.clone()];
        assert!(crd_owner_conflicts(&me, &all).is_empty());
        assert_eq!(
            replacement_of(ME, &all).map(|c| c.name_any()),
            Some(NEW.to_owned())
        );
        assert_eq!(replacee_of(&me, &all).map(|c| c.name_any()), Some(OLD.to_owned()));
        let mut with_stranger = all;
        with_stranger.push(stranger);
        assert_eq!(
            crd_owner_conflicts(&me, &with_stranger),
            vec![CrdOwnerConflict {
                crd: CRD.into(),
                csv: "other.v1".into()
            }]
        );
    }

    #[test]
    fn the_status_history_follows_a_whole_install() {
        let mut csv = Csv::test().member_of("og", "operators").build();
        let mut observed = ready();
        let mut phases = vec![];
        for second in 0..6 {
            let now = t(second);
            let d = decide(&csv, &observed, &now);
            if !d.desired_deployments.is_empty() {
                observed = with_healthy(observed, &csv);
            }
            d.apply_to(csv.status.as_mut().unwrap(), &now);
            phases.push(d.phase.as_str().to_owned());
        }
        assert_eq!(
            phases,
            [
                "Pending",
                "InstallReady",
                "Installing",
                "Succeeded",
                "Succeeded",
                "Succeeded"
            ]
        );
        let history: Vec<_> = csv
            .status
            .as_ref()
            .unwrap()
            .conditions
            .iter()
            .map(|c| c.phase.clone().unwrap())
            .collect();
        assert_eq!(
            history,
            [
                CsvPhase::Pending,
                CsvPhase::InstallReady,
                CsvPhase::Installing,
                CsvPhase::Succeeded
            ]
        );
        assert_eq!(csv.status.as_ref().unwrap().last_transition_time, Some(t(3)));
    }

    fn sa_requirement(name: &str, status: StatusReason) -> RequirementStatus {
        RequirementStatus {
            group: String::new(),
            version: "v1".into(),
            kind: "ServiceAccount".into(),
            name: name.into(),
            status,
            message: String::new(),
            uuid: None,
            dependents: Vec::new(),
        }
    }

    fn plan_with_sa_step(phase: &str, csv: &str, sa: &str, step: &str) -> v1alpha1::InstallPlanStatus {
        serde_json::from_value(serde_json::json!({
            "phase": phase,
            "catalogSources": [],
            "plan": [{
                "resolving": csv,
                "resource": {"sourceName": "c", "sourceNamespace": "ns", "group": "", "version": "v1",
                             "kind": "ServiceAccount", "name": sa},
                "status": step,
            }],
        }))
        .unwrap()
    }

    #[test]
    fn a_new_csv_waits_silently_only_for_service_accounts_its_installing_plan_still_has_to_apply() {
        let missing = [sa_requirement("op", StatusReason::NotPresent)];
        let applying = plan_with_sa_step("Installing", "op.v1", "op", "Unknown");
        assert!(waits_only_on_own_plan("op.v1", &missing, [&applying]));

        // Another CSV's plan, a plan that already applied the account, a failed plan, or no
        // plan at all: the requirement is reported as usual.
        let other = plan_with_sa_step("Installing", "other.v1", "op", "Unknown");
        assert!(!waits_only_on_own_plan("op.v1", &missing, [&other]));
        let applied = plan_with_sa_step("Installing", "op.v1", "op", "Created");
        assert!(!waits_only_on_own_plan("op.v1", &missing, [&applied]));
        let failed = plan_with_sa_step("Failed", "op.v1", "op", "Unknown");
        assert!(!waits_only_on_own_plan("op.v1", &missing, [&failed]));
        assert!(!waits_only_on_own_plan("op.v1", &missing, []));

        // A missing requirement that is not a ServiceAccount, or nothing missing at all.
        let mut crd = sa_requirement("widgets.example.com", StatusReason::NotPresent);
        crd.kind = "CustomResourceDefinition".into();
        assert!(!waits_only_on_own_plan(
            "op.v1",
            &[missing[0].clone(), crd],
            [&applying]
        ));
        let present = [sa_requirement("op", StatusReason::Present)];
        assert!(!waits_only_on_own_plan("op.v1", &present, [&applying]));
    }
}
