//! ClusterServiceVersion: one version of an operator — how to run it, what it owns and needs.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{admissionregistration::v1::RuleWithOperations, apps::v1::DeploymentSpec, rbac::v1::PolicyRule},
    apimachinery::pkg::{
        apis::meta::v1::{LabelSelector, Time},
        util::intstr::IntOrString,
    },
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{GoRequired, string_enum};

/// ClusterServiceVersionSpec declarations tell OLM how to install an operator that can manage
/// apps for a given version.
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats type_ = \"string\"; clippy reads them as one attribute"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "ClusterServiceVersion",
    plural = "clusterserviceversions",
    singular = "clusterserviceversion",
    shortname = "csv",
    shortname = "csvs",
    category = "olm",
    namespaced,
    status = "ClusterServiceVersionStatus",
    derive = "PartialEq",
    doc = "ClusterServiceVersion is a Custom Resource of type `ClusterServiceVersionSpec`.",
    printcolumn(
        name = "Display",
        type_ = "string",
        json_path = ".spec.displayName",
        description = "The name of the CSV"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".spec.version",
        description = "The version of the CSV"
    ),
    printcolumn(
        name = "Release",
        type_ = "string",
        json_path = ".spec.release",
        description = "The release of this version of the CSV"
    ),
    printcolumn(
        name = "Replaces",
        type_ = "string",
        json_path = ".spec.replaces",
        description = "The name of a CSV that this one replaces"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase")
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["install", "displayName"]))]
pub struct ClusterServiceVersionSpec {
    /// How to run the operator.
    #[serde(default)]
    pub install: NamedInstallStrategy,
    /// The operator's semantic version (kept as written; parse it where it matters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// A release identifier for rebuilds of the same version (dot-separated, max 20 chars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 20))]
    pub release: Option<String>,
    /// Maturity of the operator (free text, e.g. `alpha`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maturity: Option<String>,
    /// CRDs the operator owns and requires.
    #[serde(
        default,
        rename = "customresourcedefinitions",
        skip_serializing_if = "Option::is_none"
    )]
    pub custom_resource_definitions: Option<CustomResourceDefinitions>,
    /// Aggregated APIs the operator owns and requires.
    #[serde(
        default,
        rename = "apiservicedefinitions",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_service_definitions: Option<ApiServiceDefinitions>,
    /// Admission and conversion webhooks the operator serves.
    #[serde(default, rename = "webhookdefinitions", skip_serializing_if = "Vec::is_empty")]
    pub webhook_definitions: Vec<WebhookDescription>,
    /// Built-in APIs the operator needs.
    #[serde(default, rename = "nativeAPIs", skip_serializing_if = "Vec::is_empty")]
    pub native_apis: Vec<GroupVersionKind>,
    /// Minimum Kubernetes version the operator supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_kube_version: Option<String>,
    /// Human-readable name.
    #[serde(default)]
    pub display_name: String,
    /// Long description (Markdown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Search keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Maintainers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// The publisher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AppLink>,
    /// Related links.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<AppLink>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icon: Vec<Icon>,
    /// Which OperatorGroup target sets the operator supports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install_modes: Vec<InstallMode>,
    /// The CSV this one replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Labels (free-form organisation of CSVs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations (free-form metadata).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Label selector for related resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Cleanup behaviour when the CSV is deleted (API only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<CleanupSpec>,
    /// CSVs skipped in the upgrade graph (used when building catalogs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// Images the operator and its operands use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_images: Vec<RelatedImage>,
    /// CRD conversion webhooks (newer upstream field; accepted for compatibility).
    #[serde(
        default,
        rename = "conversionwebhookdefinitions",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conversion_webhook_definitions: Vec<ConversionWebhookDescription>,
}

/// The install strategy name OLM supports.
pub const INSTALL_STRATEGY_DEPLOYMENT: &str = "deployment";

/// NamedInstallStrategy: the strategy name (`deployment`) and its details.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["strategy"]))]
pub struct NamedInstallStrategy {
    /// The strategy; only `deployment` is supported.
    #[serde(default)]
    pub strategy: String,
    /// The Deployments and permissions to create.
    #[serde(default, skip_serializing_if = "StrategyDetailsDeployment::is_empty")]
    pub spec: StrategyDetailsDeployment,
}

/// The parsed details of a Deployment install strategy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["deployments"]))]
pub struct StrategyDetailsDeployment {
    /// The Deployments to create.
    #[serde(default)]
    pub deployments: Vec<StrategyDeploymentSpec>,
    /// Namespaced RBAC for the operator's service accounts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<StrategyDeploymentPermissions>,
    /// Cluster-wide RBAC for the operator's service accounts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_permissions: Vec<StrategyDeploymentPermissions>,
}

impl StrategyDetailsDeployment {
    /// True when there is nothing to deploy and no permission to grant.
    pub fn is_empty(&self) -> bool {
        self.deployments.is_empty() && self.permissions.is_empty() && self.cluster_permissions.is_empty()
    }
}

/// The name, spec and labels of a Deployment OLM creates for the operator.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["name", "spec"]))]
pub struct StrategyDeploymentSpec {
    /// Deployment name.
    #[serde(default)]
    pub name: String,
    /// Deployment spec.
    #[serde(default)]
    pub spec: DeploymentSpec,
    /// Extra labels for the Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<BTreeMap<String, String>>,
}

/// RBAC rules for one service account.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["serviceAccountName", "rules"]))]
pub struct StrategyDeploymentPermissions {
    /// The service account the rules are granted to.
    #[serde(default)]
    pub service_account_name: String,
    /// The rules.
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
}

/// Describes a field of a custom resource for UIs (spec, status and action descriptors share it).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["path"]))]
pub struct Descriptor {
    /// JSON path of the field, relative to spec or status.
    #[serde(default)]
    pub path: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// UI hints (`urn:alm:descriptor:...`).
    #[serde(default, rename = "x-descriptors", skip_serializing_if = "Vec::is_empty")]
    pub x_descriptors: Vec<String>,
    /// A default or example value (any JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::api::preserve_unknown_fields")]
    pub value: Option<serde_json::Value>,
}

/// A Kubernetes resource type used by a custom resource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["name", "kind", "version"]))]
pub struct ApiResourceReference {
    /// Plural resource name.
    // Often left out by bundles; upstream reads it as empty.
    #[serde(default)]
    pub name: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Version.
    #[serde(default)]
    pub version: String,
}

/// CRDDescription: a CRD the operator owns or requires.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["name", "version", "kind"]))]
pub struct CrdDescription {
    /// `<plural>.<group>`.
    #[serde(default)]
    pub name: String,
    /// The version the operator uses.
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Kubernetes resources the custom resource creates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApiResourceReference>,
    /// Status field descriptors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_descriptors: Vec<Descriptor>,
    /// Spec field descriptors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spec_descriptors: Vec<Descriptor>,
    /// Action descriptors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub action_descriptors: Vec<Descriptor>,
}

/// The CRDs an operator owns (implicitly required too) and requires from others.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinitions {
    /// CRDs this operator provides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<CrdDescription>,
    /// CRDs another operator must provide.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<CrdDescription>,
}

/// APIServiceDescription: an aggregated API the operator owns or requires.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["name", "group", "version", "kind"]))]
pub struct ApiServiceDescription {
    /// Resource name.
    #[serde(default)]
    pub name: String,
    /// API group.
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// The Deployment serving the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_name: Option<String>,
    /// The container port serving the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<i32>,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Kubernetes resources the API's objects create.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApiResourceReference>,
    /// Status field descriptors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub status_descriptors: Vec<Descriptor>,
    /// Spec field descriptors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spec_descriptors: Vec<Descriptor>,
    /// Action descriptors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub action_descriptors: Vec<Descriptor>,
}

/// The aggregated APIs an operator owns and requires.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServiceDefinitions {
    /// APIs this operator serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<ApiServiceDescription>,
    /// APIs another operator must serve.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<ApiServiceDescription>,
}

string_enum! {
    /// The kinds of webhook OLM installs for an operator.
    pub enum WebhookAdmissionType {
        /// A validating admission webhook.
        ValidatingAdmissionWebhook => "ValidatingAdmissionWebhook",
        /// A mutating admission webhook.
        MutatingAdmissionWebhook => "MutatingAdmissionWebhook",
        /// A CRD conversion webhook.
        ConversionWebhook => "ConversionWebhook",
    }
}

impl WebhookAdmissionType {
    /// The empty type a description without `type` reads as (upstream's zero value).
    pub fn empty() -> Self {
        Self::Other(String::new())
    }
}

/// WebhookDescription: a webhook the operator serves.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&["generateName", "type", "sideEffects", "admissionReviewVersions"]))]
pub struct WebhookDescription {
    /// Webhook name (must be unique within the CSV).
    #[serde(default)]
    pub generate_name: String,
    /// The webhook kind.
    // Empty when missing, as upstream reads it.
    #[serde(rename = "type", default = "WebhookAdmissionType::empty")]
    #[schemars(extend("enum" = ["ValidatingAdmissionWebhook", "MutatingAdmissionWebhook", "ConversionWebhook"]))]
    pub type_: WebhookAdmissionType,
    /// The Deployment serving the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_name: Option<String>,
    /// The service port (default 443).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535), extend("default" = 443))]
    pub container_port: Option<i32>,
    /// The container port the service forwards to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<IntOrString>,
    /// Operations and resources the webhook intercepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleWithOperations>,
    /// `Ignore` or `Fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<String>,
    /// `Exact` or `Equivalent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_policy: Option<String>,
    /// Which objects the webhook sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_selector: Option<LabelSelector>,
    /// `None`, `NoneOnDryRun`, ... (required upstream).
    #[serde(default)]
    pub side_effects: String,
    /// Timeout for a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// AdmissionReview versions the webhook accepts.
    #[serde(default)]
    pub admission_review_versions: Vec<String>,
    /// `Never` or `IfNeeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinvocation_policy: Option<String>,
    /// The HTTP path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_path: Option<String>,
    /// CRDs converted by this webhook (conversion webhooks only).
    #[serde(default, rename = "conversionCRDs", skip_serializing_if = "Vec::is_empty")]
    pub conversion_crds: Vec<String>,
}

/// A CRD conversion webhook (the newer, dedicated form of a `ConversionWebhook` description).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = GoRequired(&[
    "generateName",
    "deploymentName",
    "conversionCRDs",
    "conversionReviewVersions"
]))]
pub struct ConversionWebhookDescription {
    /// Webhook name.
    #[serde(default)]
    pub generate_name: String,
    /// The Deployment serving the webhook.
    #[serde(default)]
    pub deployment_name: String,
    /// A URL instead of a service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The service port (default 443).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535), extend("default" = 443))]
    pub container_port: Option<i32>,
    /// The container port the service forwards to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<IntOrString>,
    /// The HTTP path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_path: Option<String>,
    /// CRDs converted by this webhook.
    #[serde(rename = "conversionCRDs", default)]
    #[schemars(length(min = 1))]
    pub conversion_crds: Vec<String>,
    /// ConversionReview versions the webhook accepts.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub conversion_review_versions: Vec<String>,
}

/// A group, version and kind.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
#[schemars(transform = GoRequired(&["group", "version", "kind"]))]
pub struct GroupVersionKind {
    /// API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
}

/// A maintainer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Maintainer {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// E-mail address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// A named link.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AppLink {
    /// Link text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// An icon.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(transform = GoRequired(&["base64data", "mediatype"]))]
pub struct Icon {
    /// Base64-encoded image data.
    #[serde(rename = "base64data", default)]
    pub base64_data: String,
    /// Media type, e.g. `image/svg+xml`.
    #[serde(rename = "mediatype", default)]
    pub media_type: String,
}

/// A container image the operator uses.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(transform = GoRequired(&["name", "image"]))]
pub struct RelatedImage {
    /// A name for the image.
    #[serde(default)]
    pub name: String,
    /// The image reference (preferably by digest).
    #[serde(default)]
    pub image: String,
}

/// Cleanup behaviour when the CSV is deleted.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[schemars(transform = GoRequired(&["enabled"]))]
pub struct CleanupSpec {
    /// Whether to delete the operator's custom resources.
    #[serde(default)]
    pub enabled: bool,
}

string_enum! {
    /// The OperatorGroup target sets an operator can run with.
    pub enum InstallModeType {
        /// Watches the namespace it runs in.
        OwnNamespace => "OwnNamespace",
        /// Watches one other namespace.
        SingleNamespace => "SingleNamespace",
        /// Watches several namespaces.
        MultiNamespace => "MultiNamespace",
        /// Watches every namespace.
        AllNamespaces => "AllNamespaces",
    }
}

impl InstallModeType {
    /// The empty type an install mode without `type` reads as (upstream's zero value).
    pub fn empty() -> Self {
        Self::Other(String::new())
    }
}

/// Whether an install mode is supported.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[schemars(transform = GoRequired(&["type", "supported"]))]
pub struct InstallMode {
    /// The install mode.
    // Empty when missing, as upstream reads it.
    #[serde(rename = "type", default = "InstallModeType::empty")]
    pub type_: InstallModeType,
    /// Whether the operator supports it.
    #[serde(default)]
    pub supported: bool,
}

string_enum! {
    /// The phase of a CSV.
    pub enum CsvPhase: default None {
        /// Not looked at yet (the empty string; also upstream's `CSVPhaseAny` wildcard).
        None => "",
        /// Accepted; requirements not (yet) met.
        Pending => "Pending",
        /// Requirements met; the install strategy has not run.
        InstallReady => "InstallReady",
        /// The install strategy ran; waiting for it to become healthy.
        Installing => "Installing",
        /// Installed and healthy.
        Succeeded => "Succeeded",
        /// Could not be installed or stopped being healthy.
        Failed => "Failed",
        /// Unknown (declared upstream, never set).
        Unknown => "Unknown",
        /// A newer CSV replaces this one.
        Replacing => "Replacing",
        /// Replaced; about to be deleted.
        Deleting => "Deleting",
    }
}

impl CsvPhase {
    /// Upstream's `CSVPhaseAny` (the empty string, matching every phase in queries).
    pub const ANY: CsvPhase = CsvPhase::None;
}

string_enum! {
    /// Why a CSV is in its phase.
    pub enum CsvReason {
        /// Requirements not checked yet.
        RequirementsUnknown => "RequirementsUnknown",
        /// Some requirement is missing (see `requirementStatus`).
        RequirementsNotMet => "RequirementsNotMet",
        /// Every requirement is met.
        AllRequirementsMet => "AllRequirementsMet",
        /// Another CSV owns an API this one owns.
        OwnerConflict => "OwnerConflict",
        /// Creating a component failed.
        InstallComponentFailed => "InstallComponentFailed",
        /// Creating a component failed in a way retrying cannot fix.
        InstallComponentFailedNoRetry => "InstallComponentFailedNoRetry",
        /// The install strategy is invalid.
        InvalidInstallStrategy => "InvalidInstallStrategy",
        /// Waiting for the components to become healthy.
        InstallWaiting => "InstallWaiting",
        /// The install strategy completed.
        InstallSucceeded => "InstallSucceeded",
        /// The install check failed (e.g. a deployment missed its deadline).
        InstallCheckFailed => "InstallCheckFailed",
        /// A component stopped being healthy.
        ComponentUnhealthy => "ComponentUnhealthy",
        /// A newer CSV replaces this one.
        BeingReplaced => "BeingReplaced",
        /// The newer CSV succeeded.
        Replaced => "Replaced",
        /// Components must be installed again.
        NeedsReinstall => "NeedsReinstall",
        /// Serving certificates must be rotated.
        NeedsCertRotation => "NeedsCertRotation",
        /// An APIService resource has a problem.
        ApiServiceResourceIssue => "APIServiceResourceIssue",
        /// APIService resources must be installed again.
        ApiServiceResourcesNeedReinstall => "APIServiceResourcesNeedReinstall",
        /// Installing an APIService failed.
        ApiServiceInstallFailed => "APIServiceInstallFailed",
        /// A copy of a CSV running in another namespace.
        Copied => "Copied",
        /// The install modes are invalid (duplicates).
        InvalidInstallModes => "InvalidInstallModes",
        /// The OperatorGroup selects no namespace.
        NoTargetNamespaces => "NoTargetNamespaces",
        /// The OperatorGroup's targets are not supported by the install modes.
        UnsupportedOperatorGroup => "UnsupportedOperatorGroup",
        /// The namespace has no OperatorGroup.
        NoOperatorGroup => "NoOperatorGroup",
        /// The namespace has more than one OperatorGroup.
        TooManyOperatorGroups => "TooManyOperatorGroups",
        /// An intersecting OperatorGroup provides the same API.
        InterOperatorGroupOwnerConflict => "InterOperatorGroupOwnerConflict",
        /// A static OperatorGroup would need its provided APIs changed.
        CannotModifyStaticOperatorGroupProvidedApis => "CannotModifyStaticOperatorGroupProvidedAPIs",
        /// RBAC or the OperatorGroup service account changed.
        DetectedClusterChange => "DetectedClusterChange",
        /// A webhook description is invalid.
        InvalidWebhookDescription => "InvalidWebhookDescription",
        /// The replaced operator's OperatorCondition blocks the upgrade.
        OperatorConditionNotUpgradeable => "OperatorConditionNotUpgradeable",
        /// Waiting for cleanup (declared upstream, unused).
        WaitingOnCleanup => "WaitingOnCleanup",
    }
}

impl CsvReason {
    /// Reasons that mean the CSV failed because of its OperatorGroup (upstream never copies
    /// such a CSV into target namespaces).
    pub fn is_operator_group_failure(&self) -> bool {
        matches!(
            self,
            Self::OwnerConflict
                | Self::InvalidInstallModes
                | Self::NoTargetNamespaces
                | Self::UnsupportedOperatorGroup
                | Self::NoOperatorGroup
                | Self::TooManyOperatorGroups
                | Self::InterOperatorGroupOwnerConflict
                | Self::CannotModifyStaticOperatorGroupProvidedApis
        )
    }
}

/// One entry of a CSV's phase history.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionCondition {
    /// The phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<CsvPhase>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// CamelCase reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<CsvReason>,
    /// Last time the status was updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Last time the phase changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// How many entries of phase history a CSV keeps (upstream `ConditionsLengthLimit`).
pub const CSV_CONDITIONS_LENGTH_LIMIT: usize = 20;

string_enum! {
    /// The state of a requirement or dependent.
    pub enum StatusReason {
        /// The requirement exists.
        Present => "Present",
        /// The requirement does not exist.
        NotPresent => "NotPresent",
        /// The requirement exists but does not satisfy the CSV.
        PresentNotSatisfied => "PresentNotSatisfied",
        /// The requirement (a CRD) exists but is not established.
        PresentNotAvailable => "PresentNotAvailable",
        /// A dependent (e.g. an RBAC rule) is satisfied.
        Satisfied => "Satisfied",
        /// A dependent is not satisfied.
        NotSatisfied => "NotSatisfied",
    }
}

/// The state of a requirement's dependent (e.g. one RBAC rule of a service account).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct DependentStatus {
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// `Satisfied` or `NotSatisfied`.
    pub status: StatusReason,
    /// UID of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The state of one requirement of a CSV.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct RequirementStatus {
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Object name.
    pub name: String,
    /// Whether it is present and satisfying.
    pub status: StatusReason,
    /// Details (required upstream).
    pub message: String,
    /// UID of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Dependents of the requirement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependents: Vec<DependentStatus>,
}

/// A named object, possibly namespaced.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ResourceInstance {
    /// Name.
    pub name: String,
    /// Namespace; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Objects of one group and kind.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ResourceList {
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// The objects.
    pub instances: Vec<ResourceInstance>,
}

/// Cleanup progress while a CSV is being deleted.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CleanupStatus {
    /// Custom resources whose deletion blocks on finalizers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_deletion: Vec<ResourceList>,
}

/// ClusterServiceVersionStatus: where the CSV is in its lifecycle. May trail the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionStatus {
    /// Current phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<CsvPhase>,
    /// Human-readable details of the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// CamelCase reason for the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<CsvReason>,
    /// Last time the status was updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Last time the phase changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Phase history (at most [`CSV_CONDITIONS_LENGTH_LIMIT`] entries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ClusterServiceVersionCondition>,
    /// The state of each requirement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requirement_status: Vec<RequirementStatus>,
    /// Last time the serving certificates were updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs_last_updated: Option<Time>,
    /// When the serving certificates rotate next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs_rotate_at: Option<Time>,
    /// Cleanup progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<CleanupStatus>,
}

impl ClusterServiceVersionSpec {
    /// True if this CSV owns the CRD `<plural>.<group>`.
    pub fn owns_crd(&self, name: &str) -> bool {
        self.custom_resource_definitions
            .as_ref()
            .is_some_and(|c| c.owned.iter().any(|d| d.name == name))
    }

    /// Whether the install modes mark this type as supported.
    pub fn supports_install_mode(&self, mode: &InstallModeType) -> bool {
        self.install_modes.iter().any(|m| &m.type_ == mode && m.supported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_with_api_in_their_name_keep_upstreams_capitals() {
        assert_eq!(
            CsvReason::ApiServiceResourceIssue.as_str(),
            "APIServiceResourceIssue"
        );
        assert_eq!(
            CsvReason::parse("CannotModifyStaticOperatorGroupProvidedAPIs"),
            CsvReason::CannotModifyStaticOperatorGroupProvidedApis
        );
        assert_eq!(CsvReason::AllRequirementsMet.as_str(), "AllRequirementsMet");
        assert_eq!(CsvReason::InstallSucceeded.as_str(), "InstallSucceeded");
    }

    #[test]
    fn the_any_phase_is_the_empty_string() {
        assert_eq!(CsvPhase::ANY.as_str(), "");
        assert_eq!(CsvPhase::parse("Succeeded"), CsvPhase::Succeeded);
    }

    #[test]
    fn an_install_strategy_without_spec_reads_as_no_deployments() {
        let s: NamedInstallStrategy =
            serde_json::from_value(serde_json::json!({"strategy": "deployment"})).unwrap();
        assert!(s.spec.deployments.is_empty());
    }

    #[test]
    fn install_mode_support_requires_supported_true() {
        let spec: ClusterServiceVersionSpec = serde_json::from_value(serde_json::json!({
            "displayName": "x",
            "install": {"strategy": "deployment", "spec": {"deployments": []}},
            "installModes": [
                {"type": "OwnNamespace", "supported": true},
                {"type": "AllNamespaces", "supported": false}
            ]
        }))
        .unwrap();
        assert!(spec.supports_install_mode(&InstallModeType::OwnNamespace));
        assert!(!spec.supports_install_mode(&InstallModeType::AllNamespaces));
        assert!(!spec.supports_install_mode(&InstallModeType::MultiNamespace));
    }
}
