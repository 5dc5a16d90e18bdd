//! requirements: a CSV's `requirementStatus` (upstream `olm/requirements.go`): its owned and
//! required CRDs, the APIServices it requires and does not own, its `nativeAPIs`, its
//! ServiceAccounts with one `PolicyRule` dependent per rule, and the rule that a new CSV waits
//! only on the ServiceAccounts its own InstallPlan is still applying. Entries and messages are
//! upstream's (the CSV's own `minKubeVersion` entry "CSV minKubeVersion (1.25.0) less than server
//! version (v1.37.2)", a present ServiceAccount with an empty message), except where ours names
//! the fix or the other owner. The Role and RoleBinding (ClusterRole and ClusterRoleBinding) the
//! InstallPlan made for a `permissions` (`clusterPermissions`) entry must be in place and
//! unchanged when the CSV has such components ([`super::components`]); otherwise the account
//! is `PresentNotSatisfied` "Policy rule not satisfied for service account" and the entry's
//! rules `NotSatisfied`, as upstream's authorizer check says of rules nothing grants.

#[allow(
    clippy::wildcard_imports,
    reason = "the parent module's observed types and imports"
)]
use super::*;
use crate::api::v1alpha1::DependentStatus;

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
                format!("CSV minKubeVersion ({min}) less than server version ({server})"),
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
                // Upstream's words and reasons (its e2e suite compares them). An unserved
                // version carries no uid, as upstream records it only past that check.
                if !served_versions.iter().any(|v| v == &desc.version) {
                    (
                        StatusReason::NotPresent,
                        "CRD version not served".to_owned(),
                        None,
                    )
                } else if !established {
                    (
                        StatusReason::PresentNotAvailable,
                        "CRD is present but the Established condition is False (not available)".to_owned(),
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

    // Required APIServices (upstream: NotPresent when missing or not available, Present with
    // the uid); ours names which of the two.
    for api in required_api_service_names(csv) {
        let (status, message, uid) = match observed.required_api_services.get(&api) {
            None => (
                StatusReason::NotPresent,
                "APIService is not present: install the operator that provides it".to_owned(),
                None,
            ),
            Some(s) if !s.available => (
                StatusReason::NotPresent,
                "APIService is present but not Available".to_owned(),
                s.uid.clone(),
            ),
            Some(s) => (StatusReason::Present, String::new(), s.uid.clone()),
        };
        push(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            &api,
            status,
            message,
            uid,
        );
    }

    // Native APIs (upstream: the kind is listed by discovery of its group version), named
    // `<version>.<group>` as upstream names them (`v1.` for the core group).
    for api in &csv.spec.native_apis {
        let (status, message) = if observed.served_native_apis.contains(api) {
            (StatusReason::Present, "Native API exists".to_owned())
        } else {
            let group_version = if api.group.is_empty() {
                api.version.clone()
            } else {
                format!("{}/{}", api.group, api.version)
            };
            (
                StatusReason::NotPresent,
                format!(
                    "Native API does not exist: the API server serves no {} in {group_version}; \
                     install the component that provides it (spec.nativeAPIs)",
                    api.kind
                ),
            )
        };
        push(
            &api.group,
            &api.version,
            &api.kind,
            &format!("{}.{}", api.version, api.group),
            status,
            message,
            None,
        );
    }

    // ServiceAccounts as upstream's `permissionStatus`: one entry per account (namespaced rules
    // first, then cluster rules), an empty message when present, and one `PolicyRule`
    // dependent per rule. olm-rs grants exactly these rules through the InstallPlan's RBAC
    // steps and has no authorizer check, so a present, owned account's rules are `Satisfied`.
    let strategy = &csv.spec.install.spec;
    let replacee = csv.spec.replaces.clone().unwrap_or_default();
    let mut accounts: Vec<RequirementStatus> = Vec::new();
    let scoped = strategy
        .permissions
        .iter()
        .map(|p| ("namespaced", p))
        .chain(strategy.cluster_permissions.iter().map(|p| ("cluster", p)));
    let mut unsatisfied: std::collections::BTreeSet<usize> = std::collections::BTreeSet::new();
    for (scope, permission) in scoped {
        let sa = &permission.service_account_name;
        let index = match accounts.iter().position(|a| a.name == *sa) {
            Some(i) => i,
            None => {
                let state = observed.service_accounts.get(sa).cloned().unwrap_or_default();
                let (status, message) = match state {
                    ServiceAccountState::Absent => (
                        StatusReason::NotPresent,
                        "Service account does not exist".to_owned(),
                    ),
                    // Upstream's rule (`requirements.go`): a ServiceAccount owned by CSVs must be
                    // owned by this one (among others: versions share it); we also accept the
                    // CSV this one replaces, before the executor has added this CSV as an owner.
                    ServiceAccountState::Present { owner_csvs, .. } => {
                        let mine =
                            owner_csvs.is_empty() || owner_csvs.iter().any(|o| *o == name || *o == replacee);
                        match owner_csvs.first().filter(|_| !mine) {
                            Some(other) => (
                                StatusReason::PresentNotSatisfied,
                                format!(
                                    "Service account is owned by another ClusterServiceVersion ({other})"
                                ),
                            ),
                            None => (StatusReason::Present, String::new()),
                        }
                    }
                };
                accounts.push(RequirementStatus {
                    group: String::new(),
                    version: "v1".to_owned(),
                    kind: "ServiceAccount".to_owned(),
                    name: sa.clone(),
                    status,
                    message,
                    uuid: None,
                    dependents: Vec::new(),
                });
                accounts.len() - 1
            }
        };
        let account = &mut accounts[index];
        if account.status != StatusReason::Present && !unsatisfied.contains(&index) {
            continue;
        }
        // The Role and binding the install made for these rules (upstream
        // `permissionsPreviouslyCreated`): gone or changed, the rules are not granted.
        let granted =
            !super::components::rbac_unsatisfied(csv, permission, scope == "cluster", &observed.components);
        if !granted {
            unsatisfied.insert(index);
            account.status = StatusReason::PresentNotSatisfied;
            account.message = "Policy rule not satisfied for service account".to_owned();
        }
        for rule in &permission.rules {
            account.dependents.push(DependentStatus {
                group: "rbac.authorization.k8s.io".to_owned(),
                version: "v1".to_owned(),
                kind: "PolicyRule".to_owned(),
                status: if granted {
                    StatusReason::Satisfied
                } else {
                    StatusReason::NotSatisfied
                },
                uuid: None,
                message: Some(format!("{scope} rule:{}", go_rule_json(rule))),
            });
        }
    }
    for account in accounts {
        met &= account.status == StatusReason::Present;
        out.push(account);
    }
    (met, out)
}

/// A policy rule as Go's `encoding/json` writes an `rbacv1.PolicyRule` (field order `verbs`,
/// `apiGroups`, `resources`, `resourceNames`, `nonResourceURLs`; all but `verbs` omitted when
/// empty), for upstream's dependent messages.
pub fn go_rule_json(rule: &k8s_openapi::api::rbac::v1::PolicyRule) -> String {
    let mut map = serde_json::Map::new();
    map.insert("verbs".to_owned(), serde_json::json!(rule.verbs));
    let mut optional = |key: &str, value: &Option<Vec<String>>| {
        if let Some(items) = value.as_ref().filter(|v| !v.is_empty()) {
            map.insert(key.to_owned(), serde_json::json!(items));
        }
    };
    optional("apiGroups", &rule.api_groups);
    optional("resources", &rule.resources);
    optional("resourceNames", &rule.resource_names);
    optional("nonResourceURLs", &rule.non_resource_urls);
    serde_json::Value::Object(map).to_string()
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
