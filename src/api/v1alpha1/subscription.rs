//! Subscription: keeps an operator installed and up to date from a catalog's channel.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{
        Affinity, EnvFromSource, EnvVar, ObjectReference, ResourceRequirements, Toleration, Volume,
        VolumeMount,
    },
    apimachinery::pkg::apis::meta::v1::{LabelSelector, Time},
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Approval;
use crate::api::{ConditionStatus, string_enum};

/// SubscriptionSpec defines an Application that can be installed: package `name` from the
/// CatalogSource `source` in `sourceNamespace`, following `channel` (empty: the default channel).
#[allow(
    clippy::duplicated_attributes,
    reason = "each printcolumn(...) repeats type_ = \"string\"; clippy reads them as one attribute"
)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "Subscription",
    plural = "subscriptions",
    singular = "subscription",
    shortname = "sub",
    shortname = "subs",
    category = "olm",
    namespaced,
    status = "SubscriptionStatus",
    derive = "PartialEq",
    doc = "Subscription keeps operators up to date by tracking changes to Catalogs.",
    printcolumn(
        name = "Package",
        type_ = "string",
        json_path = ".spec.name",
        description = "The package subscribed to"
    ),
    printcolumn(
        name = "Source",
        type_ = "string",
        json_path = ".spec.source",
        description = "The catalog source for the specified package"
    ),
    printcolumn(
        name = "Channel",
        type_ = "string",
        json_path = ".spec.channel",
        description = "The channel of updates to subscribe to"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionSpec {
    /// Name of the CatalogSource to install from.
    pub source: String,
    /// Namespace of that CatalogSource.
    pub source_namespace: String,
    /// The package to install.
    pub name: String,
    /// The channel to follow; empty or absent means the package's default channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The CSV to install first, instead of the channel head.
    #[serde(default, rename = "startingCSV", skip_serializing_if = "Option::is_none")]
    pub starting_csv: Option<String>,
    /// `Automatic` or `Manual`; absent means `Automatic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "approval_schema")]
    pub install_plan_approval: Option<Approval>,
    /// Overrides applied to the operator's Deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<SubscriptionConfig>,
}

impl SubscriptionSpec {
    /// The effective approval: `Automatic` when absent, empty or exactly `Automatic`; `Manual`
    /// for `Manual` **and for any other value**. Upstream treats everything but exactly `Manual`
    /// as Automatic, so a typo (`manual`) silently installs without approval; a value we do not
    /// know fails safe instead, and [`Self::unknown_approval`] lets the controller report it.
    pub fn approval(&self) -> Approval {
        match &self.install_plan_approval {
            None | Some(Approval::Automatic) => Approval::Automatic,
            Some(Approval::Other(v)) if v.is_empty() => Approval::Automatic,
            Some(_) => Approval::Manual,
        }
    }

    /// The `installPlanApproval` value when it is neither `Automatic` nor `Manual` (nor empty).
    pub fn unknown_approval(&self) -> Option<&str> {
        match &self.install_plan_approval {
            Some(Approval::Other(v)) if !v.is_empty() => Some(v),
            _ => None,
        }
    }

    /// The fields of `spec.config` that are set but never applied to the Deployments, as
    /// upstream never applies them (`selector`: the Deployments keep their bundle's selector).
    pub fn unapplied_config(&self) -> Vec<&'static str> {
        let Some(config) = &self.config else {
            return Vec::new();
        };
        config.selector.iter().map(|_| "selector").collect()
    }

    /// The channel, or `None` when absent or empty (both mean "the default channel").
    pub fn channel(&self) -> Option<&str> {
        self.channel.as_deref().filter(|c| !c.is_empty())
    }
}

/// The schema of `spec.installPlanApproval`: one of the two values OLM knows. Upstream's CRD
/// accepts any string; ours refuses the rest at admission (a value written before this CRD, or
/// by a writer that bypasses it, is still read and treated as `Manual`).
fn approval_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["Automatic", "Manual"],
        "nullable": true,
        "description": "Automatic or Manual; absent means Automatic."
    })
}

/// SubscriptionConfig contains configuration specified for a subscription; OLM applies it to
/// every Deployment of the installed CSV.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionConfig {
    /// Label selector for pods to be configured (declared upstream, never applied there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Replaces the pods' node selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Tolerations appended to the pods'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Replaces the containers' resource requirements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Environment sources appended to every container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    /// Environment variables merged by name into every container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Volumes replaced by name in the pod spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
    /// Volume mounts replaced by name in every container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
    /// Overrides the pods' affinity, per non-empty sub-field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Annotations added to the Deployments and pod templates (never overwriting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

string_enum! {
    /// Where a Subscription stands (`status.state`).
    pub enum SubscriptionState: default None {
        /// Not resolved yet (the empty string).
        None => "",
        /// A newer bundle waits for approval (upstream defines it but never sets it; olm-rs does).
        UpgradeAvailable => "UpgradeAvailable",
        /// An InstallPlan for `currentCSV` exists and is not finished.
        UpgradePending => "UpgradePending",
        /// The installed CSV is the latest the catalog offers.
        AtLatestKnown => "AtLatestKnown",
        /// The referenced InstallPlan failed (upstream: only with fail-forward upgrades).
        Failed => "UpgradeFailed",
    }
}

string_enum! {
    /// The condition types a Subscription reports (abnormal-true polarity).
    pub enum SubscriptionConditionType {
        /// Some CatalogSource used for resolution is unhealthy or missing.
        CatalogSourcesUnhealthy => "CatalogSourcesUnhealthy",
        /// The referenced InstallPlan does not exist.
        InstallPlanMissing => "InstallPlanMissing",
        /// The referenced InstallPlan is not finished (reason: its phase).
        InstallPlanPending => "InstallPlanPending",
        /// The referenced InstallPlan failed.
        InstallPlanFailed => "InstallPlanFailed",
        /// Resolution failed in the Subscription's namespace.
        ResolutionFailed => "ResolutionFailed",
        /// `spec.installPlanApproval` is neither `Automatic` nor `Manual` and is treated as
        /// `Manual` (olm-rs only: upstream silently treats it as `Automatic`).
        InstallPlanApprovalInvalid => "InstallPlanApprovalInvalid",
        /// An upgrade waits for the installed CSV to be `Succeeded` (olm-rs only: upstream does
        /// not hold it; it plans the upgrade at once and the new CSV waits in `Pending`).
        UpgradeHeld => "UpgradeHeld",
        /// `spec.config` sets a field OLM declares but never applies (`selector`), so it has no
        /// effect (olm-rs only: upstream ignores it silently).
        ConfigIgnored => "ConfigIgnored",
        /// Bundle content is being unpacked.
        BundleUnpacking => "BundleUnpacking",
        /// Bundle unpacking failed.
        BundleUnpackFailed => "BundleUnpackFailed",
        /// Roll-up of the deprecation conditions below.
        Deprecated => "Deprecated",
        /// The package is deprecated in the catalog.
        PackageDeprecated => "PackageDeprecated",
        /// The channel is deprecated in the catalog.
        ChannelDeprecated => "ChannelDeprecated",
        /// The installed bundle is deprecated in the catalog.
        BundleDeprecated => "BundleDeprecated",
    }
}

/// SubscriptionCondition represents the latest available observations of a Subscription's state.
///
/// Upstream compares conditions by type, status, reason and message only; see
/// [`SubscriptionCondition::same_observation`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionCondition {
    /// Type of Subscription condition.
    #[serde(rename = "type")]
    pub type_: SubscriptionConditionType,
    /// Status of the condition, one of True, False, Unknown.
    pub status: ConditionStatus,
    /// One-word CamelCase reason for the condition's last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message indicating details about last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Last time we got an update on a given condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<Time>,
    /// Last time the condition transit from one status to another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

impl SubscriptionCondition {
    /// Equal ignoring timestamps (upstream's `Equals`).
    pub fn same_observation(&self, other: &Self) -> bool {
        self.type_ == other.type_
            && self.status == other.status
            && self.reason == other.reason
            && self.message == other.message
    }
}

/// The deprecated reference to a Subscription's latest InstallPlan (`status.installplan`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanReference {
    /// `operators.coreos.com/v1alpha1`.
    pub api_version: String,
    /// `InstallPlan`.
    pub kind: String,
    /// The InstallPlan's name.
    pub name: String,
    /// The InstallPlan's UID (upstream's JSON name is `uuid`).
    pub uuid: String,
}

/// SubscriptionCatalogHealth describes the health of a CatalogSource the Subscription knows about.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionCatalogHealth {
    /// Reference to the CatalogSource.
    pub catalog_source_ref: ObjectReference,
    /// Last time the health changed.
    pub last_updated: Time,
    /// True if the CatalogSource is healthy.
    pub healthy: bool,
}

/// The observed state of a Subscription.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionStatus {
    /// The CSV the Subscription is progressing to.
    #[serde(default, rename = "currentCSV", skip_serializing_if = "Option::is_none")]
    pub current_csv: Option<String>,
    /// The CSV currently installed by the Subscription.
    #[serde(default, rename = "installedCSV", skip_serializing_if = "Option::is_none")]
    pub installed_csv: Option<String>,
    /// Deprecated reference to the latest InstallPlan (use `installPlanRef`).
    #[serde(default, rename = "installplan", skip_serializing_if = "Option::is_none")]
    pub install_plan: Option<InstallPlanReference>,
    /// The current state of the Subscription.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SubscriptionState>,
    /// The reason the Subscription was transitioned to its current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The current generation of the InstallPlan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_generation: Option<i64>,
    /// Reference to the latest InstallPlan that contains the Subscription's current CSV.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_ref: Option<ObjectReference>,
    /// The Subscription's view of the health of the CatalogSources it resolves from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub catalog_health: Vec<SubscriptionCatalogHealth>,
    /// The latest available observations about the Subscription's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<SubscriptionCondition>,
    /// The last time the status was updated (required upstream).
    pub last_updated: Time,
}

impl SubscriptionStatus {
    /// An empty status stamped with `now`.
    pub fn new(now: Time) -> Self {
        Self {
            current_csv: None,
            installed_csv: None,
            install_plan: None,
            state: None,
            reason: None,
            install_plan_generation: None,
            install_plan_ref: None,
            catalog_health: Vec::new(),
            conditions: Vec::new(),
            last_updated: now,
        }
    }

    /// The condition of this type, if present.
    pub fn condition(&self, type_: &SubscriptionConditionType) -> Option<&SubscriptionCondition> {
        self.conditions.iter().find(|c| &c.type_ == type_)
    }

    /// Adds or replaces the condition of the same type.
    pub fn set_condition(&mut self, condition: SubscriptionCondition) {
        match self.conditions.iter_mut().find(|c| c.type_ == condition.type_) {
            Some(slot) => *slot = condition,
            None => self.conditions.push(condition),
        }
    }

    /// Removes every condition of these types.
    pub fn remove_conditions(&mut self, types: &[SubscriptionConditionType]) {
        self.conditions.retain(|c| !types.contains(&c.type_));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(approval: Option<&str>) -> SubscriptionSpec {
        SubscriptionSpec {
            source: "operatorhubio-catalog".into(),
            source_namespace: "olm".into(),
            name: "etcd".into(),
            channel: Some(String::new()),
            starting_csv: None,
            install_plan_approval: approval.map(Approval::parse),
            config: None,
        }
    }

    #[test]
    fn only_automatic_or_nothing_means_automatic_and_an_unknown_value_fails_safe_to_manual() {
        assert_eq!(spec(Some("Manual")).approval(), Approval::Manual);
        assert_eq!(spec(Some("Automatic")).approval(), Approval::Automatic);
        assert_eq!(spec(None).approval(), Approval::Automatic);
        assert_eq!(spec(Some("")).approval(), Approval::Automatic);
        for typo in ["manual", "Sometimes", "automatic"] {
            assert_eq!(spec(Some(typo)).approval(), Approval::Manual, "{typo}");
            assert_eq!(spec(Some(typo)).unknown_approval(), Some(typo));
        }
        assert_eq!(spec(Some("Manual")).unknown_approval(), None);
        assert_eq!(spec(None).unknown_approval(), None);
    }

    #[test]
    fn a_config_selector_is_the_one_unapplied_config_field() {
        let mut s = spec(None);
        assert!(s.unapplied_config().is_empty());
        s.config = Some(SubscriptionConfig {
            node_selector: Some(BTreeMap::from([("disk".into(), "ssd".into())])),
            ..SubscriptionConfig::default()
        });
        assert!(s.unapplied_config().is_empty());
        s.config.as_mut().unwrap().selector = Some(LabelSelector::default());
        assert_eq!(s.unapplied_config(), ["selector"]);
    }

    #[test]
    fn an_empty_channel_means_the_default_channel() {
        assert_eq!(spec(None).channel(), None);
        let mut s = spec(None);
        s.channel = Some("stable".into());
        assert_eq!(s.channel(), Some("stable"));
    }

    #[test]
    fn the_failed_state_is_spelled_upgrade_failed_like_upstream() {
        assert_eq!(SubscriptionState::Failed.as_str(), "UpgradeFailed");
        assert_eq!(SubscriptionState::parse(""), SubscriptionState::None);
    }

    #[test]
    fn setting_a_condition_replaces_the_one_of_the_same_type() {
        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let mut status = SubscriptionStatus::new(now);
        let cond = |status: ConditionStatus, reason: &str| SubscriptionCondition {
            type_: SubscriptionConditionType::ResolutionFailed,
            status,
            reason: Some(reason.into()),
            message: None,
            last_heartbeat_time: None,
            last_transition_time: None,
        };
        status.set_condition(cond(ConditionStatus::True, "ConstraintsNotSatisfiable"));
        status.set_condition(cond(ConditionStatus::False, "Resolved"));
        assert_eq!(status.conditions.len(), 1);
        assert_eq!(
            status
                .condition(&SubscriptionConditionType::ResolutionFailed)
                .map(|c| &c.status),
            Some(&ConditionStatus::False)
        );
        status.remove_conditions(&[SubscriptionConditionType::ResolutionFailed]);
        assert!(status.conditions.is_empty());
    }
}
