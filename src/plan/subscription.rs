//! status: a Subscription's next `status`, computed from what the controller observed.
//!
//! # The rule
//!
//! A Subscription's status answers three questions for the user: *which CSV is being worked
//! towards* (`currentCSV`), *which CSV is really there* (`installedCSV`), and *what is OLM waiting
//! for* (`state`, `installPlanRef` and the conditions). Upstream OLM computes it in four places
//! (the catalog-health reconciler, the InstallPlan reconciler, `ensureSubscriptionCSVState` and the
//! resolver's `setIPReference`); [`next_status`] does the same work in one pure function, in the
//! same order, so the controller writes one status per reconcile and skips the write when nothing
//! but timestamps changed ([`status_changed`]).
//!
//! The steps, applied to the previous status (or an empty one):
//!
//! 1. **Catalog health** (upstream `UpdateHealth`): `catalogHealth` lists every catalog the
//!    namespace can see, sorted by namespace and name. `CatalogSourcesUnhealthy` is `True` when
//!    there is no catalog at all (reason `NoCatalogSourcesFound`, message "dependency resolution
//!    requires at least one catalogsource"), when the targeted catalog is missing or unhealthy
//!    (reason `UnhealthyCatalogSourceFound`, messages "targeted catalogsource ns/name missing" /
//!    "... unhealthy", as upstream) or when any other visible catalog is unhealthy (same reason; the
//!    message names them and says they only affect dependency lookups); otherwise `False` with
//!    `AllCatalogSourcesHealthy`. Upstream briefly swaps the reason for `CatalogSourcesAdded`,
//!    `CatalogSourcesDeleted` or `CatalogSourcesUpdated` when the list changes, which hides
//!    whether the catalogs are healthy; we keep the healthy/unhealthy reason (the changed list is
//!    visible in `catalogHealth` itself). A health entry keeps its `lastUpdated` while its health
//!    does not change, so an unchanged namespace produces an unchanged status.
//! 2. **Resolution** (upstream `syncResolvingNamespace` + `setIPReference`): a failure sets
//!    `ResolutionFailed=True` with the failure's reason (`ConstraintsNotSatisfiable` or
//!    `ErrorPreventedResolution`) and its plain-language message; any success removes the
//!    condition. A new InstallPlan sets `currentCSV`, `installPlanRef`, the deprecated
//!    `installplan` reference, `installPlanGeneration` and `state: UpgradePending`. An adopted CSV
//!    (see [`super::Resolution::adopted`]) becomes `currentCSV`.
//! 3. **CSV state** (upstream `ensureSubscriptionCSVState`): when `currentCSV` names a CSV that
//!    exists, it becomes `installedCSV` and the state is `AtLatestKnown` (existence only, not phase
//!    `Succeeded`, as upstream); when it names a missing CSV the state is `UpgradePending`.
//! 4. **InstallPlan** (upstream `installPlanReconciler`): with an `installPlanRef`, the referenced
//!    plan is looked up by name. Missing: while `UpgradePending` the reference, `currentCSV` and
//!    state are cleared so resolution runs again (upstream's fix for deleted pending plans);
//!    otherwise `InstallPlanMissing=True` (`ReferencedInstallPlanNotFound`). Found: phase empty →
//!    `InstallPlanPending` (`InstallPlanNotYetReconciled`); `Planning`, `Installing`,
//!    `RequiresApproval` → `InstallPlanPending` with the phase as reason; `Failed` →
//!    `InstallPlanFailed` with the reason of the plan's `Installed=False` condition, else
//!    `InstallPlanFailed`; `Complete` → none of them. The message is the plan's `Installed`
//!    condition message, else its pending bundle-lookup messages; for a plan waiting for approval
//!    with no message we say how to approve it (upstream leaves it empty).
//!
//! # `UpgradeAvailable` (we set it; upstream never does)
//!
//! Upstream declares `state: UpgradeAvailable` but no code sets it since olm PR #2369. We set it
//! for one precise situation users ask about ("is an upgrade waiting for me?"): a CSV is installed
//! (`installedCSV` set), a different, newer CSV is the `currentCSV`, and the referenced InstallPlan
//! is `RequiresApproval` and not approved. Once approved the state returns to `UpgradePending`,
//! and once the new CSV exists to `AtLatestKnown`. A *first* install waiting for approval stays
//! `UpgradePending` (nothing is installed, so nothing can be upgraded), with
//! `InstallPlanPending=True` reason `RequiresApproval` telling why.
//!
//! # Times
//!
//! The function is pure: the caller passes `now`. Conditions follow the shared rules of
//! [`crate::status`]: an unchanged observation keeps its times, a changed one keeps its
//! `lastTransitionTime` unless its status flipped. `lastUpdated` moves to `now` only when
//! something other than timestamps changed ([`status_changed`], built on
//! [`crate::status::status_unchanged`]), so an unchanged world gives a byte-for-byte equal status
//! and the controller skips the write.

use k8s_openapi::{api::core::v1::ObjectReference, apimachinery::pkg::apis::meta::v1::Time};
use kube::ResourceExt;

use crate::api::{
    ConditionStatus,
    reasons::subscription as reason,
    v1alpha1::{
        API_VERSION, Approval, InstallPlan, InstallPlanConditionType, InstallPlanPhase, InstallPlanReference,
        Subscription, SubscriptionCatalogHealth, SubscriptionCondition, SubscriptionConditionType as Cond,
        SubscriptionSpec, SubscriptionState, SubscriptionStatus,
    },
};

/// The health of one catalog the Subscription's namespace can see, as the controller observed it.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogHealthObservation {
    /// Reference to the CatalogSource (`namespace` and `name` are used to match the targeted
    /// catalog; `uid` is kept as given).
    pub catalog: ObjectReference,
    /// Whether the catalog is usable (`connectionState.lastObservedState: READY`).
    pub healthy: bool,
}

/// What resolution did in this reconcile, as input to [`next_status`].
#[derive(Debug, Clone, Copy)]
pub enum ResolutionStep<'a> {
    /// Resolution was not run (for example while an InstallPlan is pending, see
    /// [`needs_resolution`]); `ResolutionFailed` is left as it is.
    NotRun,
    /// Resolution failed; for a [`super::ResolutionError`] `e`, pass `e.reason()` and
    /// `e.to_string()`.
    Failed {
        /// Condition reason (`ConstraintsNotSatisfiable` or `ErrorPreventedResolution`).
        reason: &'a str,
        /// Plain-language message.
        message: &'a str,
    },
    /// Resolution found nothing to install for this Subscription.
    UpToDate {
        /// A CSV of the package, present in the namespace and owned by no Subscription, that
        /// this Subscription adopted (see [`super::Resolution::adopted`]).
        adopted: Option<&'a str>,
    },
    /// Resolution chose `csv` and the controller created `plan` for it.
    NewPlan {
        /// The CSV (bundle) name the plan installs.
        csv: &'a str,
        /// The InstallPlan just created (its name, uid and `spec.generation` are referenced).
        plan: &'a InstallPlan,
    },
}

/// Everything [`next_status`] looks at.
#[derive(Debug, Clone, Copy)]
pub struct StatusInput<'a> {
    /// The Subscription as read (spec and previous status).
    pub subscription: &'a Subscription,
    /// Health of every catalog visible to the namespace.
    pub catalog_health: &'a [CatalogHealthObservation],
    /// Names of the CSVs present in the Subscription's namespace.
    pub csvs: &'a [&'a str],
    /// InstallPlans present in the Subscription's namespace.
    pub install_plans: &'a [&'a InstallPlan],
    /// What resolution did.
    pub resolution: ResolutionStep<'a>,
    /// The time to stamp on whatever changes.
    pub now: &'a Time,
}

/// The Subscription's next status; see the module documentation for the rules.
pub fn next_status(input: &StatusInput<'_>) -> SubscriptionStatus {
    let sub = input.subscription;
    let now = input.now;
    let prev = sub.status.clone();
    let mut st = prev
        .clone()
        .unwrap_or_else(|| SubscriptionStatus::new(now.clone()));
    let mut conds = Conditions {
        list: Vec::new(),
        now,
    };
    std::mem::swap(&mut conds.list, &mut st.conditions);

    // 1. Catalog health.
    let (health, health_condition) = catalog_health(&sub.spec, input.catalog_health, prev.as_ref(), now);
    st.catalog_health = health;
    conds.set(health_condition);

    // 2. Resolution.
    let mut new_plan: Option<&InstallPlan> = None;
    match input.resolution {
        ResolutionStep::NotRun => {}
        ResolutionStep::Failed { reason, message } => {
            conds.set(condition(Cond::ResolutionFailed, true, reason, message));
        }
        ResolutionStep::UpToDate { adopted } => {
            conds.remove(&[Cond::ResolutionFailed]);
            if let Some(csv) = adopted {
                st.current_csv = Some(csv.to_owned());
            }
        }
        ResolutionStep::NewPlan { csv, plan } => {
            conds.remove(&[Cond::ResolutionFailed]);
            st.current_csv = Some(csv.to_owned());
            st.install_plan_ref = Some(plan_object_reference(plan));
            st.install_plan = Some(InstallPlanReference {
                api_version: API_VERSION.to_owned(),
                kind: "InstallPlan".to_owned(),
                name: plan.name_any(),
                uuid: plan.metadata.uid.clone().unwrap_or_default(),
            });
            st.install_plan_generation = plan.spec.generation.or(st.install_plan_generation);
            st.state = Some(SubscriptionState::UpgradePending);
            new_plan = Some(plan);
        }
    }

    // 3. CSV state.
    if let Some(current) = st.current_csv.clone().filter(|c| !c.is_empty()) {
        if input.csvs.contains(&current.as_str()) {
            st.installed_csv = Some(current);
            st.state = Some(SubscriptionState::AtLatestKnown);
        } else {
            st.state = Some(SubscriptionState::UpgradePending);
        }
    }

    // 4. InstallPlan.
    if let Some(plan_ref) = st.install_plan_ref.clone() {
        let name = plan_ref.name.unwrap_or_default();
        let found = new_plan
            .filter(|p| p.name_any() == name)
            .or_else(|| input.install_plans.iter().copied().find(|p| p.name_any() == name));
        match found {
            None => {
                conds.remove(&[Cond::InstallPlanPending, Cond::InstallPlanFailed]);
                if st.state == Some(SubscriptionState::UpgradePending) {
                    st.install_plan_ref = None;
                    st.install_plan = None;
                    st.current_csv = None;
                    st.state = Some(SubscriptionState::None);
                    conds.remove(&[Cond::InstallPlanMissing]);
                } else {
                    let namespace = plan_ref.namespace.unwrap_or_default();
                    conds.set(condition(
                        Cond::InstallPlanMissing,
                        true,
                        reason::REFERENCED_INSTALL_PLAN_NOT_FOUND,
                        &format!(
                            "InstallPlan {namespace}/{name} referenced by status.installPlanRef no \
                             longer exists"
                        ),
                    ));
                }
            }
            Some(plan) => {
                let desired = plan_condition(plan);
                for t in [
                    Cond::InstallPlanMissing,
                    Cond::InstallPlanPending,
                    Cond::InstallPlanFailed,
                ] {
                    if desired.as_ref().is_none_or(|c| c.type_ != t) {
                        conds.remove(&[t]);
                    }
                }
                if let Some(c) = desired {
                    conds.set(c);
                }
                let waits_for_approval =
                    plan_phase(plan) == InstallPlanPhase::RequiresApproval && !plan.spec.approved;
                let upgrade = match (&st.installed_csv, &st.current_csv) {
                    (Some(installed), Some(current)) => !installed.is_empty() && installed != current,
                    _ => false,
                };
                if waits_for_approval && upgrade && st.state == Some(SubscriptionState::UpgradePending) {
                    st.state = Some(SubscriptionState::UpgradeAvailable);
                }
            }
        }
    }

    st.conditions = conds.list;
    st.last_updated = match &prev {
        Some(p) if !status_changed(Some(p), &st) => p.last_updated.clone(),
        _ => now.clone(),
    };
    st
}

/// Whether resolution should run for a Subscription with this status: not while it waits on an
/// InstallPlan it references (`UpgradePending` or `UpgradeAvailable` with an `installPlanRef`),
/// as upstream's `nothingToUpdate`. A failed plan keeps the Subscription waiting, as upstream
/// (without `TechPreviewUnsafeFailForward`); deleting the plan makes it resolve again.
pub fn needs_resolution(status: Option<&SubscriptionStatus>) -> bool {
    let Some(status) = status else {
        return true;
    };
    let waiting = matches!(
        status.state,
        Some(SubscriptionState::UpgradePending | SubscriptionState::UpgradeAvailable)
    );
    !(waiting && status.install_plan_ref.is_some())
}

/// Whether two statuses differ in anything but timestamps (`lastUpdated`, condition times, catalog
/// health `lastUpdated`). A controller writes the new status only when this is true.
pub fn status_changed(old: Option<&SubscriptionStatus>, new: &SubscriptionStatus) -> bool {
    old.is_none_or(|old| !crate::status::status_unchanged(old, new))
}

/// How the InstallPlan made for one Subscription is approved. Each Subscription gets its own
/// InstallPlan (see the module documentation of [`crate::resolve`]): a Manual Subscription's plan
/// starts in `RequiresApproval` with `approved: false`; any other value (upstream treats
/// everything but exactly `Manual` as Automatic) starts in `Installing` with `approved: true`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanApproval {
    /// `spec.approval` of the plan.
    pub approval: Approval,
    /// `spec.approved` of the plan.
    pub approved: bool,
    /// The phase the plan is created in.
    pub phase: InstallPlanPhase,
}

/// The approval of the InstallPlan created for a Subscription with this spec.
pub fn plan_approval(spec: &SubscriptionSpec) -> PlanApproval {
    if spec.approval().is_manual() {
        PlanApproval {
            approval: Approval::Manual,
            approved: false,
            phase: InstallPlanPhase::RequiresApproval,
        }
    } else {
        PlanApproval {
            approval: Approval::Automatic,
            approved: true,
            phase: InstallPlanPhase::Installing,
        }
    }
}

/// The condition list being rewritten, with the shared timestamp rules of [`crate::status`]
/// (a condition keeps its times while its observation does not change, and its
/// `lastTransitionTime` while its status does not flip).
struct Conditions<'a> {
    list: Vec<SubscriptionCondition>,
    now: &'a Time,
}

impl Conditions<'_> {
    fn set(&mut self, c: SubscriptionCondition) {
        crate::status::set_condition(&mut self.list, c, self.now);
    }

    fn remove(&mut self, types: &[Cond]) {
        for t in types {
            crate::status::remove_condition(&mut self.list, t.as_str());
        }
    }
}

fn condition(type_: Cond, status: bool, reason: &str, message: &str) -> SubscriptionCondition {
    SubscriptionCondition {
        type_,
        status: ConditionStatus::from_bool(status),
        reason: Some(reason.to_owned()),
        message: (!message.is_empty()).then(|| message.to_owned()),
        last_heartbeat_time: None,
        last_transition_time: None,
    }
}

fn ref_key(r: &ObjectReference) -> (String, String) {
    (
        r.namespace.clone().unwrap_or_default(),
        r.name.clone().unwrap_or_default(),
    )
}

fn catalog_health(
    spec: &SubscriptionSpec,
    observed: &[CatalogHealthObservation],
    prev: Option<&SubscriptionStatus>,
    now: &Time,
) -> (Vec<SubscriptionCatalogHealth>, SubscriptionCondition) {
    let mut sorted: Vec<&CatalogHealthObservation> = observed.iter().collect();
    sorted.sort_by_key(|o| ref_key(&o.catalog));
    let health: Vec<SubscriptionCatalogHealth> = sorted
        .iter()
        .map(|o| {
            let last_updated = prev
                .and_then(|p| {
                    p.catalog_health
                        .iter()
                        .find(|h| h.catalog_source_ref == o.catalog && h.healthy == o.healthy)
                })
                .map(|h| h.last_updated.clone())
                .unwrap_or_else(|| now.clone());
            SubscriptionCatalogHealth {
                catalog_source_ref: o.catalog.clone(),
                last_updated,
                healthy: o.healthy,
            }
        })
        .collect();

    let target = (spec.source_namespace.clone(), spec.source.clone());
    let targeted = sorted.iter().find(|o| ref_key(&o.catalog) == target);
    let others_unhealthy: Vec<String> = sorted
        .iter()
        .filter(|o| !o.healthy && ref_key(&o.catalog) != target)
        .map(|o| {
            let (ns, name) = ref_key(&o.catalog);
            format!("{ns}/{name}")
        })
        .collect();
    let target_name = format!("{}/{}", target.0, target.1);
    let condition = if sorted.is_empty() {
        self::condition(
            Cond::CatalogSourcesUnhealthy,
            true,
            reason::NO_CATALOG_SOURCES_FOUND,
            "dependency resolution requires at least one catalogsource",
        )
    } else if targeted.is_none() {
        self::condition(
            Cond::CatalogSourcesUnhealthy,
            true,
            reason::UNHEALTHY_CATALOG_SOURCE_FOUND,
            &format!("targeted catalogsource {target_name} missing"),
        )
    } else if targeted.is_some_and(|t| !t.healthy) {
        self::condition(
            Cond::CatalogSourcesUnhealthy,
            true,
            reason::UNHEALTHY_CATALOG_SOURCE_FOUND,
            &format!("targeted catalogsource {target_name} unhealthy"),
        )
    } else if !others_unhealthy.is_empty() {
        self::condition(
            Cond::CatalogSourcesUnhealthy,
            true,
            reason::UNHEALTHY_CATALOG_SOURCE_FOUND,
            &format!(
                "catalogsource {} unhealthy; the targeted catalogsource {target_name} is healthy \
                 and unhealthy catalogs are skipped when looking up dependencies",
                others_unhealthy.join(", ")
            ),
        )
    } else {
        self::condition(
            Cond::CatalogSourcesUnhealthy,
            false,
            reason::ALL_CATALOG_SOURCES_HEALTHY,
            "all available catalogsources are healthy",
        )
    };
    (health, condition)
}

fn plan_object_reference(plan: &InstallPlan) -> ObjectReference {
    ObjectReference {
        api_version: Some(API_VERSION.to_owned()),
        kind: Some("InstallPlan".to_owned()),
        name: Some(plan.name_any()),
        namespace: plan.metadata.namespace.clone(),
        uid: plan.metadata.uid.clone(),
        resource_version: plan.metadata.resource_version.clone(),
        field_path: None,
    }
}

fn plan_phase(plan: &InstallPlan) -> InstallPlanPhase {
    plan.status.as_ref().map(|s| s.phase.clone()).unwrap_or_default()
}

/// The InstallPlan condition of upstream's `CheckInstallPlanStatus`, or `None` when the plan is
/// complete (or in a phase this version does not know).
fn plan_condition(plan: &InstallPlan) -> Option<SubscriptionCondition> {
    let phase = plan_phase(plan);
    let message = plan_message(plan);
    match phase {
        InstallPlanPhase::None => Some(condition(
            Cond::InstallPlanPending,
            true,
            reason::INSTALL_PLAN_NOT_YET_RECONCILED,
            &message,
        )),
        InstallPlanPhase::Planning | InstallPlanPhase::Installing => Some(condition(
            Cond::InstallPlanPending,
            true,
            phase.as_str(),
            &message,
        )),
        InstallPlanPhase::RequiresApproval => {
            let message = if message.is_empty() && !plan.spec.approved {
                let name = plan.name_any();
                let ns = plan.namespace().unwrap_or_default();
                format!(
                    "InstallPlan {ns}/{name} waits for approval: run `kubectl-olm approve {name} \
                     -n {ns}` or `kubectl patch installplan {name} -n {ns} --type merge -p \
                     '{{\"spec\":{{\"approved\":true}}}}'`"
                )
            } else {
                message
            };
            Some(condition(
                Cond::InstallPlanPending,
                true,
                phase.as_str(),
                &message,
            ))
        }
        InstallPlanPhase::Failed => {
            let installed = installed_condition(plan);
            let reason = installed
                .filter(|c| c.status == Some(ConditionStatus::False))
                .and_then(|c| c.reason.as_ref())
                .map(|r| r.as_str().to_owned())
                .unwrap_or_else(|| reason::INSTALL_PLAN_FAILED_REASON.to_owned());
            Some(condition(Cond::InstallPlanFailed, true, &reason, &message))
        }
        InstallPlanPhase::Complete | InstallPlanPhase::Other(_) => None,
    }
}

fn installed_condition(plan: &InstallPlan) -> Option<&crate::api::v1alpha1::InstallPlanCondition> {
    plan.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == Some(InstallPlanConditionType::Installed))
    })
}

/// upstream `extractMessage`: the `Installed` condition's message when known, else the pending
/// bundle lookups' messages, each followed by a period.
fn plan_message(plan: &InstallPlan) -> String {
    if let Some(c) = installed_condition(plan) {
        let known = c.status.as_ref().is_some_and(|s| *s != ConditionStatus::Unknown);
        if let (true, Some(m)) = (known, c.message.as_ref().filter(|m| !m.is_empty())) {
            return m.clone();
        }
    }
    let mut parts = Vec::new();
    if let Some(status) = &plan.status {
        for lookup in &status.bundle_lookups {
            for c in &lookup.conditions {
                let pending = c.type_.as_str() == crate::api::reasons::bundle_lookup::PENDING;
                let message = c.message.as_ref().filter(|m| !m.is_empty());
                if let (true, Some(m)) = (pending && c.status != ConditionStatus::Unknown, message) {
                    parts.push(format!("{m}."));
                }
            }
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use serde_json::{Value, json};

    use super::*;

    fn time(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).expect("valid test time"))
    }

    fn subscription(approval: &str, status: Option<Value>) -> Subscription {
        let mut sub = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": "redis", "namespace": "operators"},
            "spec": {"source": "ops", "sourceNamespace": "olm", "name": "redis-operator",
                     "channel": "stable", "installPlanApproval": approval},
        });
        if let (Some(obj), Some(status)) = (sub.as_object_mut(), status) {
            obj.insert("status".to_owned(), status);
        }
        serde_json::from_value(sub).expect("test subscription")
    }

    fn plan(name: &str, approval: &str, approved: bool, mut status: Value) -> InstallPlan {
        if let Some(obj) = status.as_object_mut() {
            obj.entry("phase").or_insert_with(|| json!(""));
            obj.entry("catalogSources").or_insert_with(|| json!([]));
        }
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "InstallPlan",
            "metadata": {"name": name, "namespace": "operators", "uid": format!("uid-{name}")},
            "spec": {"clusterServiceVersionNames": ["redis-operator.v0.2.0"],
                     "approval": approval, "approved": approved, "generation": 2},
            "status": status,
        }))
        .expect("test install plan")
    }

    fn healthy_catalogs() -> Vec<CatalogHealthObservation> {
        vec![CatalogHealthObservation {
            catalog: ObjectReference {
                name: Some("ops".to_owned()),
                namespace: Some("olm".to_owned()),
                uid: Some("uid-ops".to_owned()),
                ..ObjectReference::default()
            },
            healthy: true,
        }]
    }

    fn cond(st: &SubscriptionStatus, t: Cond) -> Option<&SubscriptionCondition> {
        st.condition(&t)
    }

    fn summary(st: &SubscriptionStatus) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>) {
        (
            st.state.as_ref().map(|s| s.as_str()),
            st.current_csv.as_deref(),
            st.installed_csv.as_deref(),
            st.install_plan_ref.as_ref().and_then(|r| r.name.as_deref()),
        )
    }

    #[test]
    fn a_new_plan_makes_the_subscription_upgrade_pending_with_a_pending_condition() {
        let sub = subscription("Automatic", None);
        let ip = plan("install-1", "Automatic", true, json!({"phase": "Installing"}));
        let health = healthy_catalogs();
        let now = time(100);
        let st = next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &health,
            csvs: &[],
            install_plans: &[],
            resolution: ResolutionStep::NewPlan {
                csv: "redis-operator.v0.2.0",
                plan: &ip,
            },
            now: &now,
        });
        assert_eq!(
            summary(&st),
            (
                Some("UpgradePending"),
                Some("redis-operator.v0.2.0"),
                None,
                Some("install-1")
            )
        );
        assert_eq!(st.install_plan_generation, Some(2));
        assert_eq!(
            st.install_plan.as_ref().map(|r| r.uuid.as_str()),
            Some("uid-install-1")
        );
        let pending = cond(&st, Cond::InstallPlanPending).expect("pending condition");
        assert_eq!(pending.status, ConditionStatus::True);
        assert_eq!(pending.reason.as_deref(), Some("Installing"));
        let health = cond(&st, Cond::CatalogSourcesUnhealthy).expect("health condition");
        assert_eq!(health.status, ConditionStatus::False);
        assert_eq!(health.reason.as_deref(), Some("AllCatalogSourcesHealthy"));
        assert_eq!(st.catalog_health.len(), 1);
        assert_eq!(st.last_updated, now);
    }

    #[test]
    fn the_state_machine_follows_the_plan_and_the_csv() {
        struct Case {
            name: &'static str,
            approval: &'static str,
            status: Value,
            plan: Option<(bool, Value)>,
            csvs: &'static [&'static str],
            expected: (Option<&'static str>, Option<&'static str>, Option<&'static str>),
            condition: Option<(Cond, &'static str)>,
        }
        let pending_upgrade = json!({
            "state": "UpgradePending", "currentCSV": "redis-operator.v0.2.0",
            "installedCSV": "redis-operator.v0.1.0", "lastUpdated": "2026-01-01T00:00:00Z",
            "installPlanRef": {"name": "install-1", "namespace": "operators"}
        });
        let pending_first = json!({
            "state": "UpgradePending", "currentCSV": "redis-operator.v0.2.0",
            "lastUpdated": "2026-01-01T00:00:00Z",
            "installPlanRef": {"name": "install-1", "namespace": "operators"}
        });
        let cases = [
            Case {
                name: "a Manual upgrade waiting for approval is UpgradeAvailable",
                approval: "Manual",
                status: pending_upgrade.clone(),
                plan: Some((false, json!({"phase": "RequiresApproval"}))),
                csvs: &["redis-operator.v0.1.0"],
                expected: (
                    Some("UpgradeAvailable"),
                    Some("redis-operator.v0.2.0"),
                    Some("redis-operator.v0.1.0"),
                ),
                condition: Some((Cond::InstallPlanPending, "RequiresApproval")),
            },
            Case {
                name: "an approved upgrade is UpgradePending again",
                approval: "Manual",
                status: pending_upgrade.clone(),
                plan: Some((true, json!({"phase": "Installing"}))),
                csvs: &["redis-operator.v0.1.0"],
                expected: (
                    Some("UpgradePending"),
                    Some("redis-operator.v0.2.0"),
                    Some("redis-operator.v0.1.0"),
                ),
                condition: Some((Cond::InstallPlanPending, "Installing")),
            },
            Case {
                name: "a first install waiting for approval stays UpgradePending",
                approval: "Manual",
                status: pending_first.clone(),
                plan: Some((false, json!({"phase": "RequiresApproval"}))),
                csvs: &[],
                expected: (Some("UpgradePending"), Some("redis-operator.v0.2.0"), None),
                condition: Some((Cond::InstallPlanPending, "RequiresApproval")),
            },
            Case {
                name: "once the CSV exists the Subscription is AtLatestKnown",
                approval: "Automatic",
                status: pending_first.clone(),
                plan: Some((true, json!({"phase": "Complete"}))),
                csvs: &["redis-operator.v0.2.0"],
                expected: (
                    Some("AtLatestKnown"),
                    Some("redis-operator.v0.2.0"),
                    Some("redis-operator.v0.2.0"),
                ),
                condition: None,
            },
            Case {
                name: "a plan with no phase yet is not yet reconciled",
                approval: "Automatic",
                status: pending_first.clone(),
                plan: Some((true, json!({}))),
                csvs: &[],
                expected: (Some("UpgradePending"), Some("redis-operator.v0.2.0"), None),
                condition: Some((Cond::InstallPlanPending, "InstallPlanNotYetReconciled")),
            },
            Case {
                name: "a failed plan reports the Installed condition's reason",
                approval: "Automatic",
                status: pending_first.clone(),
                plan: Some((
                    true,
                    json!({"phase": "Failed", "conditions": [{
                    "type": "Installed", "status": "False", "reason": "InstallComponentFailed",
                    "message": "error creating clusterrole redis: forbidden"}]}),
                )),
                csvs: &[],
                expected: (Some("UpgradePending"), Some("redis-operator.v0.2.0"), None),
                condition: Some((Cond::InstallPlanFailed, "InstallComponentFailed")),
            },
            Case {
                name: "a failed plan without an Installed condition reports InstallPlanFailed",
                approval: "Automatic",
                status: pending_first.clone(),
                plan: Some((true, json!({"phase": "Failed"}))),
                csvs: &[],
                expected: (Some("UpgradePending"), Some("redis-operator.v0.2.0"), None),
                condition: Some((Cond::InstallPlanFailed, "InstallPlanFailed")),
            },
            Case {
                name: "a pending plan deleted while UpgradePending clears the reference to resolve again",
                approval: "Automatic",
                status: pending_first.clone(),
                plan: None,
                csvs: &[],
                expected: (Some(""), None, None),
                condition: None,
            },
            Case {
                name: "a plan deleted after the install is reported missing",
                approval: "Automatic",
                status: json!({
                    "state": "AtLatestKnown", "currentCSV": "redis-operator.v0.2.0",
                    "installedCSV": "redis-operator.v0.2.0", "lastUpdated": "2026-01-01T00:00:00Z",
                    "installPlanRef": {"name": "install-1", "namespace": "operators"}
                }),
                plan: None,
                csvs: &["redis-operator.v0.2.0"],
                expected: (
                    Some("AtLatestKnown"),
                    Some("redis-operator.v0.2.0"),
                    Some("redis-operator.v0.2.0"),
                ),
                condition: Some((Cond::InstallPlanMissing, "ReferencedInstallPlanNotFound")),
            },
        ];
        for case in cases {
            let sub = subscription(case.approval, Some(case.status.clone()));
            let ip = case
                .plan
                .as_ref()
                .map(|(approved, status)| plan("install-1", case.approval, *approved, status.clone()));
            let plans: Vec<&InstallPlan> = ip.iter().collect();
            let health = healthy_catalogs();
            let now = time(200);
            let st = next_status(&StatusInput {
                subscription: &sub,
                catalog_health: &health,
                csvs: case.csvs,
                install_plans: &plans,
                resolution: ResolutionStep::NotRun,
                now: &now,
            });
            let (state, current, installed, _) = summary(&st);
            assert_eq!((state, current, installed), case.expected, "{}", case.name);
            let ip_conditions: Vec<(&Cond, Option<&str>)> = st
                .conditions
                .iter()
                .filter(|c| c.type_ != Cond::CatalogSourcesUnhealthy)
                .map(|c| (&c.type_, c.reason.as_deref()))
                .collect();
            let expected: Vec<(&Cond, Option<&str>)> =
                case.condition.iter().map(|(t, r)| (t, Some(*r))).collect();
            assert_eq!(ip_conditions, expected, "{}", case.name);
        }
    }

    #[test]
    fn plan_messages_come_from_the_plan_or_say_how_to_approve() {
        let sub = subscription(
            "Manual",
            Some(
                json!({"state": "UpgradePending", "currentCSV": "redis-operator.v0.2.0",
                "lastUpdated": "2026-01-01T00:00:00Z",
                "installPlanRef": {"name": "install-1", "namespace": "operators"}}),
            ),
        );
        let health = healthy_catalogs();
        let now = time(300);
        let run = |ip: &InstallPlan| {
            let plans = [ip];
            next_status(&StatusInput {
                subscription: &sub,
                catalog_health: &health,
                csvs: &[],
                install_plans: &plans,
                resolution: ResolutionStep::NotRun,
                now: &now,
            })
        };
        let waiting = run(&plan(
            "install-1",
            "Manual",
            false,
            json!({"phase": "RequiresApproval"}),
        ));
        assert_eq!(
            cond(&waiting, Cond::InstallPlanPending).and_then(|c| c.message.as_deref()),
            Some(
                "InstallPlan operators/install-1 waits for approval: run `kubectl-olm approve \
                 install-1 -n operators` or `kubectl patch installplan install-1 -n operators \
                 --type merge -p '{\"spec\":{\"approved\":true}}'`"
            )
        );
        let failed = run(&plan(
            "install-1",
            "Manual",
            true,
            json!({"phase": "Failed", "conditions": [{"type": "Installed", "status": "False",
                "reason": "InstallComponentFailed", "message": "error creating clusterrole redis"}]}),
        ));
        assert_eq!(
            cond(&failed, Cond::InstallPlanFailed).and_then(|c| c.message.as_deref()),
            Some("error creating clusterrole redis")
        );
        let unpacking = run(&plan(
            "install-1",
            "Manual",
            true,
            json!({"phase": "Installing", "bundleLookups": [{
                "path": "example.com/redis:v0.2.0", "identifier": "redis-operator.v0.2.0",
                "replaces": "", "catalogSourceRef": {"name": "ops", "namespace": "olm"},
                "conditions": [{"type": "BundleLookupPending", "status": "True",
                    "reason": "JobIncomplete", "message": "unpack job not completed"}]}]}),
        ));
        assert_eq!(
            cond(&unpacking, Cond::InstallPlanPending).and_then(|c| c.message.as_deref()),
            Some("unpack job not completed.")
        );
    }

    #[test]
    fn resolution_failures_set_and_successes_clear_resolution_failed() {
        let health = healthy_catalogs();
        let now = time(400);
        let sub = subscription("Automatic", None);
        let failed = next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &health,
            csvs: &[],
            install_plans: &[],
            resolution: ResolutionStep::Failed {
                reason: reason::CONSTRAINTS_NOT_SATISFIABLE,
                message: "package redis-operator has no channel 'stabel'",
            },
            now: &now,
        });
        let c = cond(&failed, Cond::ResolutionFailed).expect("condition");
        assert_eq!(c.status, ConditionStatus::True);
        assert_eq!(c.reason.as_deref(), Some("ConstraintsNotSatisfiable"));
        assert_eq!(
            c.message.as_deref(),
            Some("package redis-operator has no channel 'stabel'")
        );
        assert_eq!(failed.state, None);

        let mut sub = sub;
        sub.status = Some(failed);
        for step in [ResolutionStep::NotRun, ResolutionStep::UpToDate { adopted: None }] {
            let st = next_status(&StatusInput {
                subscription: &sub,
                catalog_health: &health,
                csvs: &[],
                install_plans: &[],
                resolution: step,
                now: &now,
            });
            let kept = matches!(step, ResolutionStep::NotRun);
            assert_eq!(cond(&st, Cond::ResolutionFailed).is_some(), kept, "{step:?}");
        }
    }

    #[test]
    fn an_adopted_csv_becomes_current_and_installed() {
        let sub = subscription("Automatic", None);
        let health = healthy_catalogs();
        let now = time(500);
        let st = next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &health,
            csvs: &["redis-operator.v0.1.0"],
            install_plans: &[],
            resolution: ResolutionStep::UpToDate {
                adopted: Some("redis-operator.v0.1.0"),
            },
            now: &now,
        });
        assert_eq!(
            summary(&st),
            (
                Some("AtLatestKnown"),
                Some("redis-operator.v0.1.0"),
                Some("redis-operator.v0.1.0"),
                None
            )
        );
    }

    #[test]
    fn catalog_health_names_the_targeted_or_other_unhealthy_catalogs() {
        let obs = |ns: &str, name: &str, healthy: bool| CatalogHealthObservation {
            catalog: ObjectReference {
                name: Some(name.to_owned()),
                namespace: Some(ns.to_owned()),
                ..ObjectReference::default()
            },
            healthy,
        };
        let cases = [
            (
                vec![],
                true,
                "NoCatalogSourcesFound",
                "dependency resolution requires at least one catalogsource",
            ),
            (
                vec![obs("olm", "other", true)],
                true,
                "UnhealthyCatalogSourceFound",
                "targeted catalogsource olm/ops missing",
            ),
            (
                vec![obs("olm", "ops", false)],
                true,
                "UnhealthyCatalogSourceFound",
                "targeted catalogsource olm/ops unhealthy",
            ),
            (
                vec![
                    obs("olm", "ops", true),
                    obs("operators", "zeta", false),
                    obs("olm", "beta", false),
                ],
                true,
                "UnhealthyCatalogSourceFound",
                "catalogsource olm/beta, operators/zeta unhealthy; the targeted catalogsource \
                 olm/ops is healthy and unhealthy catalogs are skipped when looking up dependencies",
            ),
            (
                vec![obs("olm", "ops", true)],
                false,
                "AllCatalogSourcesHealthy",
                "all available catalogsources are healthy",
            ),
        ];
        let sub = subscription("Automatic", None);
        let now = time(600);
        for (observed, unhealthy, reason, message) in cases {
            let st = next_status(&StatusInput {
                subscription: &sub,
                catalog_health: &observed,
                csvs: &[],
                install_plans: &[],
                resolution: ResolutionStep::NotRun,
                now: &now,
            });
            let c = cond(&st, Cond::CatalogSourcesUnhealthy).expect("condition");
            assert_eq!(c.status, ConditionStatus::from_bool(unhealthy), "{message}");
            assert_eq!(c.reason.as_deref(), Some(reason));
            assert_eq!(c.message.as_deref(), Some(message));
            let listed: Vec<(String, String)> = st
                .catalog_health
                .iter()
                .map(|h| ref_key(&h.catalog_source_ref))
                .collect();
            let mut sorted = listed.clone();
            sorted.sort();
            assert_eq!(listed, sorted, "catalogHealth is sorted");
        }
    }

    #[test]
    fn an_unchanged_world_gives_an_unchanged_status_with_its_old_times() {
        let ip = plan("install-1", "Automatic", true, json!({"phase": "Installing"}));
        let health = healthy_catalogs();
        let first_time = time(700);
        let first = next_status(&StatusInput {
            subscription: &subscription("Automatic", None),
            catalog_health: &health,
            csvs: &[],
            install_plans: &[],
            resolution: ResolutionStep::NewPlan {
                csv: "redis-operator.v0.2.0",
                plan: &ip,
            },
            now: &first_time,
        });
        let mut sub = subscription("Automatic", None);
        sub.status = Some(first.clone());
        let later = time(900);
        let plans = [&ip];
        let second = next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &health,
            csvs: &[],
            install_plans: &plans,
            resolution: ResolutionStep::NotRun,
            now: &later,
        });
        assert!(!status_changed(Some(&first), &second));
        assert_eq!(second, first, "times are kept too");

        // The CSV appearing changes the state, stamps lastUpdated, keeps untouched conditions'
        // transition times.
        let csvs = ["redis-operator.v0.2.0"];
        let third = next_status(&StatusInput {
            subscription: &sub,
            catalog_health: &health,
            csvs: &csvs,
            install_plans: &plans,
            resolution: ResolutionStep::NotRun,
            now: &later,
        });
        assert!(status_changed(Some(&first), &third));
        assert_eq!(third.last_updated, later);
        assert_eq!(
            cond(&third, Cond::CatalogSourcesUnhealthy).and_then(|c| c.last_transition_time.clone()),
            Some(first_time)
        );
    }

    #[test]
    fn resolution_waits_while_a_referenced_plan_is_pending() {
        let mut st = SubscriptionStatus::new(time(0));
        assert!(needs_resolution(None));
        assert!(needs_resolution(Some(&st)));
        st.state = Some(SubscriptionState::UpgradePending);
        assert!(needs_resolution(Some(&st)), "pending without a plan resolves");
        st.install_plan_ref = Some(ObjectReference {
            name: Some("install-1".to_owned()),
            ..ObjectReference::default()
        });
        assert!(!needs_resolution(Some(&st)));
        st.state = Some(SubscriptionState::UpgradeAvailable);
        assert!(!needs_resolution(Some(&st)));
        st.state = Some(SubscriptionState::AtLatestKnown);
        assert!(needs_resolution(Some(&st)), "at latest known looks for upgrades");
    }

    #[test]
    fn each_subscription_plan_takes_that_subscription_approval() {
        let manual = subscription("Manual", None);
        let automatic = subscription("Automatic", None);
        let odd = subscription("manual", None);
        assert_eq!(
            plan_approval(&manual.spec),
            PlanApproval {
                approval: Approval::Manual,
                approved: false,
                phase: InstallPlanPhase::RequiresApproval
            }
        );
        for spec in [&automatic.spec, &odd.spec] {
            assert_eq!(
                plan_approval(spec),
                PlanApproval {
                    approval: Approval::Automatic,
                    approved: true,
                    phase: InstallPlanPhase::Installing
                }
            );
        }
    }
}
