//! InstallPlan: the resolved set of objects to create for one or more CSVs, and their progress.

use k8s_openapi::{api::core::v1::ObjectReference, apimachinery::pkg::apis::meta::v1::Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Approval;
use crate::api::{ConditionStatus, string_enum};

/// InstallPlanSpec defines a set of Application resources to be installed.
///
/// The short name is `ip`, as upstream; since Kubernetes 1.33 the built-in
/// `ipaddresses.networking.k8s.io` also claims `ip` and wins, so `kubectl get ip` lists
/// IPAddresses there — use `kubectl get installplan`.
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats type_ = \"string\"; clippy reads them as one attribute"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "InstallPlan",
    plural = "installplans",
    singular = "installplan",
    shortname = "ip",
    category = "olm",
    namespaced,
    status = "InstallPlanStatus",
    derive = "PartialEq",
    doc = "InstallPlan defines the installation of a set of operators.",
    printcolumn(
        name = "CSV",
        type_ = "string",
        json_path = ".spec.clusterServiceVersionNames[0]",
        description = "The first CSV in the list of clusterServiceVersionNames"
    ),
    printcolumn(
        name = "Approval",
        type_ = "string",
        json_path = ".spec.approval",
        description = "The approval mode"
    ),
    printcolumn(name = "Approved", type_ = "boolean", json_path = ".spec.approved")
)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanSpec {
    /// The CatalogSource the plan was resolved from (not set by the resolver upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// That CatalogSource's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_namespace: Option<String>,
    /// The CSVs this plan installs.
    pub cluster_service_version_names: Vec<String>,
    /// `Automatic` or `Manual`.
    pub approval: Approval,
    /// Whether the plan may be executed; a Manual plan waits until this is true.
    pub approved: bool,
    /// Per-namespace, monotonically increasing plan generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

string_enum! {
    /// The phase of an InstallPlan as a whole.
    pub enum InstallPlanPhase: default None {
        /// Not yet reconciled (the empty string).
        None => "",
        /// Being planned (declared upstream; plans are created already planned).
        Planning => "Planning",
        /// Waiting for `spec.approved: true`.
        RequiresApproval => "RequiresApproval",
        /// Steps are being applied.
        Installing => "Installing",
        /// Every step is done (terminal).
        Complete => "Complete",
        /// A step failed past its retry deadline (terminal).
        Failed => "Failed",
    }
}

impl InstallPlanPhase {
    /// `Complete` and `Failed` are final: a plan in them is never executed again.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Complete | Self::Failed)
    }
}

string_enum! {
    /// InstallPlan condition types.
    pub enum InstallPlanConditionType {
        /// The plan was resolved.
        Resolved => "Resolved",
        /// The plan was executed.
        Installed => "Installed",
    }
}

string_enum! {
    /// InstallPlan condition reasons.
    pub enum InstallPlanConditionReason {
        /// Nothing known about the plan yet.
        PlanUnknown => "PlanUnknown",
        /// A pre-install check (e.g. the attenuated service account) failed.
        InstallCheckFailed => "InstallCheckFailed",
        /// Dependencies conflict.
        DependenciesConflict => "DependenciesConflict",
        /// Creating a step's object failed.
        InstallComponentFailed => "InstallComponentFailed",
        /// A failed pre-install check cleared (upstream writes `False` with this reason and no
        /// message until the plan completes).
        Unknown => "Unknown",
    }
}

string_enum! {
    /// The status of one step of a plan.
    pub enum StepStatus: default Unknown {
        /// Not looked at yet.
        Unknown => "Unknown",
        /// The object does not exist.
        NotPresent => "NotPresent",
        /// The object already existed and was updated.
        Present => "Present",
        /// The object was created.
        Created => "Created",
        /// The object could not be created.
        NotCreated => "NotCreated",
        /// The object (a CRD) was created and is not established yet.
        WaitingForApi => "WaitingForApi",
        /// The kind is not one OLM installs.
        UnsupportedResource => "UnsupportedResource",
    }
}

impl StepStatus {
    /// Done steps are skipped when the plan is executed again.
    pub fn is_done(&self) -> bool {
        matches!(self, Self::Present | Self::Created | Self::WaitingForApi)
    }
}

/// InstallPlanCondition represents the overall status of the execution of an InstallPlan.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanCondition {
    /// The condition type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<InstallPlanConditionType>,
    /// True, False or Unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ConditionStatus>,
    /// Last time the condition was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Last time the condition's status changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// CamelCase reason for the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<InstallPlanConditionReason>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One object a plan creates, and where it came from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepResource {
    /// Name of the CatalogSource the object came from.
    pub source_name: String,
    /// Namespace of that CatalogSource.
    pub source_namespace: String,
    /// API group of the object (empty for the core group).
    pub group: String,
    /// API version of the object.
    pub version: String,
    /// Kind of the object.
    pub kind: String,
    /// Name of the object.
    pub name: String,
    /// The object itself, serialised as JSON text (or a reference to where it is stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
}

/// Step represents the status of an individual step in an InstallPlan.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// The CSV this step belongs to.
    pub resolving: String,
    /// The object to create.
    pub resource: StepResource,
    /// Whether failure of this step may be ignored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// The step's progress.
    pub status: StepStatus,
}

string_enum! {
    /// BundleLookup condition types.
    pub enum BundleLookupConditionType {
        /// The lookup is not complete.
        BundleLookupPending => "BundleLookupPending",
        /// The lookup failed.
        BundleLookupFailed => "BundleLookupFailed",
        /// The unpacked bundle was not persisted yet (internal).
        BundleLookupNotPersisted => "BundleLookupNotPersisted",
    }
}

/// The state of one bundle lookup.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleLookupCondition {
    /// Type of condition.
    #[serde(rename = "type")]
    pub type_: BundleLookupConditionType,
    /// Status of the condition, one of True, False, Unknown.
    pub status: ConditionStatus,
    /// The reason for the condition's last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human readable message indicating details about the transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Last time the condition was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Last time the condition transitioned from one status to another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// BundleLookup is a request to pull and unpack the content of a bundle to the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleLookup {
    /// Location of the bundle to pull, typically an image reference.
    pub path: String,
    /// The catalog-unique name of the operator (the CSV name).
    pub identifier: String,
    /// The bundle this one replaces.
    pub replaces: String,
    /// The CatalogSource the bundle path was resolved from.
    pub catalog_source_ref: ObjectReference,
    /// The overall state of the lookup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<BundleLookupCondition>,
    /// The effective properties of the unpacked bundle (JSON text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<String>,
}

/// InstallPlanStatus represents the information about the status of steps required to
/// complete installation. Status may trail the actual state of a system.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanStatus {
    /// The plan's phase.
    pub phase: InstallPlanPhase,
    /// The plan's conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<InstallPlanCondition>,
    /// Names of the CatalogSources the plan draws from (required upstream, may be empty).
    pub catalog_sources: Vec<String>,
    /// The steps, in the order they are applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<Step>,
    /// In-progress requests to pull and unpack bundle content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bundle_lookups: Vec<BundleLookup>,
    /// The service account used for a scoped install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attenuated_service_account_ref: Option<ObjectReference>,
    /// When execution started (the retry deadline is measured from here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// Details of the last execution error being retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl InstallPlanStatus {
    /// The condition of this type, if present.
    pub fn condition(&self, type_: &InstallPlanConditionType) -> Option<&InstallPlanCondition> {
        self.conditions.iter().find(|c| c.type_.as_ref() == Some(type_))
    }

    /// True while some step waits for its API (a CRD) to become established.
    pub fn needs_requeue(&self) -> bool {
        self.plan.iter().any(|s| s.status == StepStatus::WaitingForApi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_and_failed_are_the_only_terminal_phases() {
        let terminal: Vec<&str> = InstallPlanPhase::KNOWN
            .iter()
            .filter(|p| p.is_terminal())
            .map(InstallPlanPhase::as_str)
            .collect();
        assert_eq!(terminal, ["Complete", "Failed"]);
    }

    #[test]
    fn step_status_spells_waiting_for_api_like_upstream() {
        assert_eq!(StepStatus::WaitingForApi.as_str(), "WaitingForApi");
        assert!(StepStatus::Created.is_done());
        assert!(!StepStatus::Unknown.is_done());
    }

    #[test]
    fn a_plan_with_a_step_waiting_for_its_api_needs_a_requeue() {
        let step = |status| Step {
            resolving: "etcdoperator.v0.9.4".into(),
            resource: StepResource::default(),
            optional: false,
            status,
        };
        let mut status = InstallPlanStatus {
            plan: vec![step(StepStatus::Created)],
            ..Default::default()
        };
        assert!(!status.needs_requeue());
        status.plan.push(step(StepStatus::WaitingForApi));
        assert!(status.needs_requeue());
    }

    #[test]
    fn an_empty_catalog_sources_list_is_still_serialised_because_upstream_requires_it() {
        let json = serde_json::to_value(InstallPlanStatus::default()).unwrap();
        assert_eq!(json, serde_json::json!({"phase": "", "catalogSources": []}));
    }
}
