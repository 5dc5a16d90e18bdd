//! operator_group: which namespaces an operator watches, and whether it can.
//!
//! # The rules (upstream `olm/operatorgroup.go`, `api:.../clusterserviceversion.go`)
//!
//! An OperatorGroup in namespace `N` is the tenancy boundary for every operator installed
//! in `N`: it names the namespaces those operators watch, its *targets*.
//!
//! 1. **Targets** ([`target_namespaces`], upstream `getOperatorGroupTargets`): an explicit,
//!    non-empty `spec.targetNamespaces` wins and is taken as a set (it may not contain `""`,
//!    which means "all namespaces" and must be asked for by omission); otherwise a
//!    `spec.selector` with at least one requirement selects namespaces by label (possibly
//!    none — the member CSVs then fail `NoTargetNamespaces`); otherwise the group targets all
//!    namespaces, written `[""]`. The result is what the OperatorGroup controller writes to
//!    `status.namespaces`, sorted.
//! 2. **Member annotations** ([`member_annotations`]): every CSV in `N` carries
//!    `olm.operatorGroup=<group>`, `olm.operatorNamespace=N` and `olm.targetNamespaces=<the
//!    targets sorted and comma-joined>` (`""` for all namespaces). The Deployment install
//!    strategy copies the CSV's annotations onto pod templates, so operators learn what to
//!    watch through the downward API.
//! 3. **Install modes** ([`check_install_modes`], upstream `InstallModeSet.Supports`): the
//!    CSV's `installModes` must be a set (a type listed twice → `InvalidInstallModes`); no
//!    target at all → `NoTargetNamespaces`; one target equal to `N` needs `OwnNamespace`; the
//!    single target `""` needs `AllNamespaces`; one other namespace needs `SingleNamespace`;
//!    several need `MultiNamespace`, plus `OwnNamespace` if `N` is among them; `""` inside a
//!    set of several is invalid. A violation fails the CSV `UnsupportedOperatorGroup`.
//! 4. **One group per namespace** ([`select_operator_group`]): zero groups fail member CSVs
//!    `NoOperatorGroup`, more than one `TooManyOperatorGroups` (resolution fails too, with
//!    upstream's "expected 1 OperatorGroup in the namespace, found N").
//! 5. **The group's ServiceAccount** ([`service_account_status`], upstream
//!    `scoped.UserDefinedServiceAccountSyncer`): a group naming `spec.serviceAccountName` gets
//!    `status.serviceAccountRef` once that account exists in its namespace, and the condition
//!    `OperatorGroupServiceAccount=True` `ServiceAccountNotFound` "ServiceAccount NAME not found"
//!    while it does not (the reference is then dropped); a group naming none carries neither.
//!    The InstallPlans of its namespace then run as that account (scoped installs, see
//!    [`crate::plan::install_plan::group_check`]). Upstream's reference also records the
//!    account's `resourceVersion`; ours leaves it out, so editing the account does not rewrite
//!    every group naming it.
//!
//! # Where we differ from upstream
//!
//! Upstream's messages are terse Go errors ("SingleNamespace InstallModeType not supported,
//! cannot configure to watch one namespace"). Ours say what the group targets, which mode
//! that needs, what the CSV supports and what to change, e.g. "the OperatorGroup og-single
//! targets namespace team-a, which needs install mode SingleNamespace;
//! redis-operator.v1.0.0 supports OwnNamespace, AllNamespaces: target the operator namespace
//! or all namespaces". The *reasons* are upstream's, so tooling matching on them keeps
//! working.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{
    api::core::v1::ObjectReference,
    apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time},
};
use kube::ResourceExt;
use thiserror::Error;

use crate::api::{
    ConditionStatus,
    labels::{OPERATOR_GROUP, OPERATOR_NAMESPACE, TARGET_NAMESPACES},
    reasons,
    v1::OperatorGroup,
    v1alpha1::{CsvReason, InstallMode, InstallModeType},
};

/// The target-set spelling of "all namespaces".
pub const ALL_NAMESPACES: &str = "";

/// A namespace as the target computation sees it: its name and labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamespaceInfo {
    /// The namespace name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

impl NamespaceInfo {
    /// A namespace with these labels.
    #[cfg(test)]
    pub fn new<'a>(name: &str, labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self {
            name: name.to_owned(),
            labels: labels
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }
}

/// Why an OperatorGroup's targets cannot be computed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum TargetError {
    /// `spec.targetNamespaces` contains the empty string.
    #[error(
        "OperatorGroup {namespace}/{group}: spec.targetNamespaces contains \"\" (all namespaces); \
         remove spec.targetNamespaces and spec.selector to target all namespaces"
    )]
    EmptyTargetNamespace {
        /// The group's namespace.
        namespace: String,
        /// The group's name.
        group: String,
    },
    /// `spec.selector` has an expression Kubernetes would reject.
    #[error("OperatorGroup {namespace}/{group}: spec.selector is invalid: {problem}")]
    InvalidSelector {
        /// The group's namespace.
        namespace: String,
        /// The group's name.
        group: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// The OperatorGroup's target namespaces (rule 1 of the module doc), sorted and without
/// duplicates: the value of `status.namespaces`. `[""]` means all namespaces; an empty
/// vector means the selector matched nothing.
///
/// `namespaces` is every namespace of the cluster (only consulted for a selector).
///
/// # Errors
/// [`TargetError`] for `""` among explicit targets or an invalid selector.
pub fn target_namespaces(
    og: &OperatorGroup,
    namespaces: &[NamespaceInfo],
) -> Result<Vec<String>, TargetError> {
    let group = og.name_any();
    let namespace = og.namespace().unwrap_or_default();
    if let Some(explicit) = og.spec.target_namespaces.as_ref().filter(|t| !t.is_empty()) {
        if explicit.iter().any(|t| t == ALL_NAMESPACES) {
            return Err(TargetError::EmptyTargetNamespace { namespace, group });
        }
        let set: BTreeSet<&String> = explicit.iter().collect();
        return Ok(set.into_iter().cloned().collect());
    }
    let Some(selector) = og.spec.selector.as_ref().filter(|s| !selector_is_empty(s)) else {
        return Ok(vec![ALL_NAMESPACES.to_owned()]);
    };
    let mut matched = BTreeSet::new();
    for ns in namespaces {
        let matches =
            selector_matches(selector, &ns.labels).map_err(|problem| TargetError::InvalidSelector {
                namespace: namespace.clone(),
                group: group.clone(),
                problem,
            })?;
        if matches {
            matched.insert(ns.name.clone());
        }
    }
    Ok(matched.into_iter().collect())
}

fn selector_is_empty(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && selector.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// Whether `labels` match a Kubernetes label selector (`matchLabels` and `matchExpressions`
/// with `In`, `NotIn`, `Exists`, `DoesNotExist`). An empty selector matches everything.
///
/// # Errors
/// A description of the first invalid expression (unknown operator, values given to
/// `Exists`/`DoesNotExist`, no values for `In`/`NotIn`).
pub fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> Result<bool, String> {
    let mut all = true;
    for (key, value) in selector.match_labels.iter().flatten() {
        all &= labels.get(key) == Some(value);
    }
    for expr in selector.match_expressions.iter().flatten() {
        let values = expr.values.as_deref().unwrap_or_default();
        let got = labels.get(&expr.key);
        let ok = match expr.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => {
                return Err(format!(
                    "matchExpressions key {}: operator {} needs at least one value",
                    expr.key, expr.operator
                ));
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Err(format!(
                    "matchExpressions key {}: operator {} takes no values",
                    expr.key, expr.operator
                ));
            }
            "In" => got.is_some_and(|v| values.contains(v)),
            "NotIn" => got.is_none_or(|v| !values.contains(v)),
            "Exists" => got.is_some(),
            "DoesNotExist" => got.is_none(),
            other => {
                return Err(format!(
                    "matchExpressions key {}: unknown operator {other:?}; use In, NotIn, Exists or DoesNotExist",
                    expr.key
                ));
            }
        };
        all &= ok;
    }
    Ok(all)
}

/// The `olm.targetNamespaces` value: targets sorted and comma-joined (`""` for all).
pub fn target_namespaces_annotation(targets: &[String]) -> String {
    let set: BTreeSet<&str> = targets.iter().map(String::as_str).collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

/// The three annotations OLM stamps on every CSV of an OperatorGroup (rule 2).
pub fn member_annotations(
    group: &str,
    operator_namespace: &str,
    targets: &[String],
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (OPERATOR_GROUP.to_owned(), group.to_owned()),
        (OPERATOR_NAMESPACE.to_owned(), operator_namespace.to_owned()),
        (
            TARGET_NAMESPACES.to_owned(),
            target_namespaces_annotation(targets),
        ),
    ])
}

/// Why a CSV cannot run with its OperatorGroup's targets (rule 3). `Display` is the
/// plain-language status message; [`InstallModeError::reason`] the upstream reason.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum InstallModeError {
    /// An install mode type is listed more than once.
    #[error(
        "{csv} lists install mode {mode} more than once in spec.installModes; each type may appear once \
         (fix the bundle's CSV)"
    )]
    DuplicateInstallModes {
        /// The CSV name.
        csv: String,
        /// The repeated type.
        mode: String,
    },
    /// The group selects no namespace.
    #[error(
        "the OperatorGroup {group} selects no namespace, so {csv} has nothing to watch: \
         label a namespace to match its selector, or set spec.targetNamespaces"
    )]
    NoTargetNamespaces {
        /// The OperatorGroup name.
        group: String,
        /// The CSV name.
        csv: String,
    },
    /// `""` (all namespaces) appears in a set of several targets.
    #[error(
        "the OperatorGroup {group} lists all namespaces (\"\") together with other namespaces; \
         target either all namespaces or a list of named namespaces"
    )]
    AllNamespacesInSet {
        /// The OperatorGroup name.
        group: String,
    },
    /// The targets need install modes the CSV does not support.
    #[error("{0}")]
    Unsupported(Box<UnsupportedTargets>),
}

/// The details of [`InstallModeError::Unsupported`]; `Display` is the status message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedTargets {
    /// The OperatorGroup name.
    pub group: String,
    /// The CSV name.
    pub csv: String,
    /// The namespace the operator is installed in.
    pub operator_namespace: String,
    /// The group's targets.
    pub targets: Vec<String>,
    /// Modes the targets need and the CSV lacks.
    pub missing: Vec<InstallModeType>,
    /// Modes the CSV supports.
    pub supported: Vec<InstallModeType>,
}

impl std::fmt::Display for UnsupportedTargets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the OperatorGroup {} targets {}, which needs install mode {}; {} supports {}: {}",
            self.group,
            describe_targets(&self.targets, &self.operator_namespace),
            join_modes(&self.missing, " and "),
            self.csv,
            supported_text(&self.supported),
            fix_text(&self.supported),
        )
    }
}

impl InstallModeError {
    /// The upstream CSV reason for this failure.
    pub fn reason(&self) -> CsvReason {
        match self {
            Self::DuplicateInstallModes { .. } => CsvReason::InvalidInstallModes,
            Self::NoTargetNamespaces { .. } => CsvReason::NoTargetNamespaces,
            Self::AllNamespacesInSet { .. } | Self::Unsupported(_) => CsvReason::UnsupportedOperatorGroup,
        }
    }
}

fn describe_targets(targets: &[String], operator_namespace: &str) -> String {
    match targets {
        [one] if one == ALL_NAMESPACES => "all namespaces".to_owned(),
        [one] if one == operator_namespace => format!("its own namespace {one}"),
        [one] => format!("namespace {one}"),
        many => format!("namespaces {}", many.join(", ")),
    }
}

fn join_modes(modes: &[InstallModeType], sep: &str) -> String {
    modes
        .iter()
        .map(InstallModeType::as_str)
        .collect::<Vec<_>>()
        .join(sep)
}

fn supported_text(supported: &[InstallModeType]) -> String {
    if supported.is_empty() {
        "no install mode".to_owned()
    } else {
        join_modes(supported, ", ")
    }
}

fn fix_text(supported: &[InstallModeType]) -> String {
    let options: Vec<&str> = supported
        .iter()
        .filter_map(|m| match m {
            InstallModeType::OwnNamespace => Some("the operator namespace"),
            InstallModeType::SingleNamespace => Some("one other namespace"),
            InstallModeType::MultiNamespace => Some("several namespaces"),
            InstallModeType::AllNamespaces => Some("all namespaces"),
            InstallModeType::Other(_) => None,
        })
        .collect();
    match options.as_slice() {
        [] => "no OperatorGroup can run this operator; install another version".to_owned(),
        [one] => format!("target {one}"),
        [init @ .., last] => format!("target {} or {last}", init.join(", ")),
    }
}

/// Checks the CSV's install modes against the group's targets (rule 3).
///
/// # Errors
/// [`InstallModeError`] naming the group, the CSV, the targets and the fix.
pub fn check_install_modes(
    csv: &str,
    install_modes: &[InstallMode],
    group: &str,
    operator_namespace: &str,
    targets: &[String],
) -> Result<(), InstallModeError> {
    let mut seen = BTreeSet::new();
    for mode in install_modes {
        if !seen.insert(mode.type_.as_str()) {
            return Err(InstallModeError::DuplicateInstallModes {
                csv: csv.to_owned(),
                mode: mode.type_.as_str().to_owned(),
            });
        }
    }
    let supports = |t: &InstallModeType| install_modes.iter().any(|m| &m.type_ == t && m.supported);
    let needed: Vec<InstallModeType> = match targets {
        [] => {
            return Err(InstallModeError::NoTargetNamespaces {
                group: group.to_owned(),
                csv: csv.to_owned(),
            });
        }
        [one] if one == operator_namespace => vec![InstallModeType::OwnNamespace],
        [one] if one == ALL_NAMESPACES => vec![InstallModeType::AllNamespaces],
        [_] => vec![InstallModeType::SingleNamespace],
        many => {
            if many.iter().any(|t| t == ALL_NAMESPACES) {
                return Err(InstallModeError::AllNamespacesInSet {
                    group: group.to_owned(),
                });
            }
            let mut needed = vec![InstallModeType::MultiNamespace];
            if many.iter().any(|t| t == operator_namespace) {
                needed.push(InstallModeType::OwnNamespace);
            }
            needed
        }
    };
    let missing: Vec<InstallModeType> = needed.into_iter().filter(|m| !supports(m)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(InstallModeError::Unsupported(Box::new(UnsupportedTargets {
        group: group.to_owned(),
        csv: csv.to_owned(),
        operator_namespace: operator_namespace.to_owned(),
        targets: targets.to_vec(),
        missing,
        supported: InstallModeType::KNOWN
            .iter()
            .filter(|t| supports(t))
            .cloned()
            .collect(),
    })))
}

/// Why a namespace has no usable OperatorGroup (rule 4).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum MembershipError {
    /// The namespace has no OperatorGroup.
    #[error(
        "namespace {namespace} has no OperatorGroup; create one (for example with \
         `kubectl-olm install PKG -n {namespace} --create-operator-group`)"
    )]
    NoOperatorGroup {
        /// The namespace.
        namespace: String,
    },
    /// The namespace has several OperatorGroups.
    #[error(
        "namespace {namespace} has {count} OperatorGroups ({names}); exactly one is allowed: delete all but one",
        count = groups.len(),
        names = groups.join(", ")
    )]
    TooManyOperatorGroups {
        /// The namespace.
        namespace: String,
        /// The groups' names, sorted.
        groups: Vec<String>,
    },
}

impl MembershipError {
    /// The upstream CSV reason for this failure.
    pub fn reason(&self) -> CsvReason {
        match self {
            Self::NoOperatorGroup { .. } => CsvReason::NoOperatorGroup,
            Self::TooManyOperatorGroups { .. } => CsvReason::TooManyOperatorGroups,
        }
    }
}

/// The namespace's single OperatorGroup, from the names of the groups in it.
///
/// # Errors
/// [`MembershipError`] when there is none or more than one.
pub fn select_operator_group<'a, T>(
    namespace: &str,
    groups: &'a [T],
    name: impl Fn(&T) -> &str,
) -> Result<&'a T, MembershipError> {
    match groups {
        [one] => Ok(one),
        [] => Err(MembershipError::NoOperatorGroup {
            namespace: namespace.to_owned(),
        }),
        many => {
            let mut names: Vec<String> = many.iter().map(|g| name(g).to_owned()).collect();
            names.sort();
            Err(MembershipError::TooManyOperatorGroups {
                namespace: namespace.to_owned(),
                groups: names,
            })
        }
    }
}

/// The `MultipleOperatorGroup` condition an OperatorGroup carries when its namespace holds
/// other groups too (`None` when it is alone: the shell removes the condition then).
pub fn multiple_groups_condition(
    namespace: &str,
    group_names: &[String],
    generation: Option<i64>,
    now: &Time,
) -> Option<Condition> {
    if group_names.len() < 2 {
        return None;
    }
    let mut names = group_names.to_vec();
    names.sort();
    Some(crate::status::metav1_condition(
        reasons::operator_group::MULTIPLE_OPERATOR_GROUP,
        ConditionStatus::True,
        reasons::operator_group::MULTIPLE_OPERATOR_GROUPS_FOUND,
        format!(
            "namespace {namespace} has {} OperatorGroups ({}); exactly one is allowed: delete all but one",
            names.len(),
            names.join(", ")
        ),
        generation,
        now,
    ))
}

/// The account a group's `spec.serviceAccountName` names, as the cluster holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamedAccount<'a> {
    /// The group names no account.
    None,
    /// The group names an account its namespace does not hold.
    Missing,
    /// The account exists, with this uid.
    Found {
        /// The account's uid.
        uid: Option<&'a str>,
    },
}

/// A group's `status.serviceAccountRef` and `OperatorGroupServiceAccount` condition (rule 5):
/// the reference to write, and the condition to hold (`None`: the condition is removed).
pub fn service_account_status(
    group: &OperatorGroup,
    account: NamedAccount<'_>,
    now: &Time,
) -> (Option<ObjectReference>, Option<Condition>) {
    match (named_service_account(group), account) {
        (Some(name), NamedAccount::Found { uid }) => (
            Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("ServiceAccount".into()),
                namespace: group.namespace(),
                name: Some(name.to_owned()),
                uid: uid.map(str::to_owned),
                ..ObjectReference::default()
            }),
            None,
        ),
        (Some(name), _) => (
            None,
            Some(crate::status::metav1_condition(
                reasons::operator_group::SERVICE_ACCOUNT,
                ConditionStatus::True,
                reasons::operator_group::SERVICE_ACCOUNT_NOT_FOUND,
                format!("ServiceAccount {name} not found"),
                None,
                now,
            )),
        ),
        (None, _) => (None, None),
    }
}

/// The account a group names (`spec.serviceAccountName`, empty meaning none).
pub fn named_service_account(group: &OperatorGroup) -> Option<&str> {
    group
        .spec
        .service_account_name
        .as_deref()
        .filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests;
