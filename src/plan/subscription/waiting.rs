//! waiting: which InstallPlan a Subscription points at and which upgrade waits for approval, as
//! `kubectl olm list` and the web console show them (pure, read from the Subscription's status
//! and the namespace's plans).

use crate::api::v1alpha1::{InstallPlan, InstallPlanPhase, Subscription};

fn ns_of<K: kube::Resource>(k: &K) -> &str {
    k.meta().namespace.as_deref().unwrap_or("")
}

fn name_of<K: kube::Resource>(k: &K) -> &str {
    k.meta().name.as_deref().unwrap_or("")
}

/// The name of the InstallPlan a Subscription points at: `status.installPlanRef`, else the
/// deprecated `status.installplan`.
pub fn install_plan_name(sub: &Subscription) -> Option<&str> {
    let status = sub.status.as_ref()?;
    status
        .install_plan_ref
        .as_ref()
        .and_then(|r| r.name.as_deref())
        .or_else(|| status.install_plan.as_ref().map(|r| r.name.as_str()))
        .filter(|n| !n.is_empty())
}

/// The CSV of `sub` waiting for approval: `currentCSV` ≠ `installedCSV`, installed by an
/// InstallPlan in `RequiresApproval` that is not approved yet.
pub fn waiting_upgrade(sub: &Subscription, plans: &[InstallPlan]) -> Option<String> {
    let status = sub.status.as_ref()?;
    let current = status.current_csv.as_deref().filter(|c| !c.is_empty())?;
    if status.installed_csv.as_deref() == Some(current) {
        return None;
    }
    let ns = ns_of(sub);
    let waiting = |p: &InstallPlan| {
        !p.spec.approved
            && p.status
                .as_ref()
                .is_some_and(|s| s.phase == InstallPlanPhase::RequiresApproval)
    };
    let referenced =
        install_plan_name(sub).and_then(|name| plans.iter().find(|p| ns_of(*p) == ns && name_of(*p) == name));
    let plan = match referenced {
        Some(p) => Some(p).filter(|p| waiting(p)),
        None => plans.iter().find(|p| {
            ns_of(*p) == ns && waiting(p) && p.spec.cluster_service_version_names.iter().any(|c| c == current)
        }),
    };
    plan.map(|_| current.to_string())
}
