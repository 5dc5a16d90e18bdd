//! Condition types and reasons OLM writes, spelled exactly as upstream so dashboards, alerts
//! and scripts written for upstream OLM keep matching. Grouped by the kind that carries them.
//! The typed enums in [`super::v1alpha1`] use the same spellings; these `&str` constants are
//! for building messages, events and metrics labels.

/// Subscription condition types (abnormal-true polarity) and their reasons.
pub mod subscription {
    /// Some CatalogSource used for resolution is unhealthy or missing.
    pub const CATALOG_SOURCES_UNHEALTHY: &str = "CatalogSourcesUnhealthy";
    /// The referenced InstallPlan does not exist.
    pub const INSTALL_PLAN_MISSING: &str = "InstallPlanMissing";
    /// The referenced InstallPlan is not finished.
    pub const INSTALL_PLAN_PENDING: &str = "InstallPlanPending";
    /// The referenced InstallPlan failed.
    pub const INSTALL_PLAN_FAILED: &str = "InstallPlanFailed";
    /// Resolution failed in the namespace.
    pub const RESOLUTION_FAILED: &str = "ResolutionFailed";
    /// `spec.installPlanApproval` is not a value OLM knows (olm-rs only).
    pub const INSTALL_PLAN_APPROVAL_INVALID: &str = "InstallPlanApprovalInvalid";
    /// Reason of `InstallPlanApprovalInvalid=True`: the value was treated as `Manual`.
    pub const UNKNOWN_APPROVAL_TREATED_AS_MANUAL: &str = "UnknownApprovalTreatedAsManual";
    /// An upgrade is held because the installed CSV is not `Succeeded` (olm-rs only: upstream
    /// does not hold it; it plans the upgrade at once and the new CSV waits in `Pending` until
    /// the old one is `Replacing`).
    pub const UPGRADE_HELD: &str = "UpgradeHeld";
    /// A `spec.config` field olm-rs (like upstream) does not apply is set (olm-rs only).
    pub const CONFIG_IGNORED: &str = "ConfigIgnored";
    /// Reason of `ConfigIgnored=True`.
    pub const CONFIG_FIELD_NOT_APPLIED: &str = "ConfigFieldNotApplied";
    /// Reason of `UpgradeHeld=True`.
    pub const INSTALLED_CSV_NOT_SUCCEEDED: &str = "InstalledCSVNotSucceeded";
    /// Reason of `UpgradeHeld=True` for a Subscription kept at or below its
    /// `olm-rs.io/version-ceiling` while a newer bundle exists (olm-rs only).
    pub const VERSION_PINNED: &str = "VersionPinned";
    /// Reason of `ResolutionFailed=True` when an `olm-rs.io/` annotation of the Subscription
    /// does not read (olm-rs only).
    pub const INVALID_ANNOTATION: &str = "InvalidAnnotation";
    /// Bundle content is being unpacked.
    pub const BUNDLE_UNPACKING: &str = "BundleUnpacking";
    /// Bundle unpacking failed.
    pub const BUNDLE_UNPACK_FAILED: &str = "BundleUnpackFailed";
    /// Roll-up of the deprecation conditions.
    pub const DEPRECATED: &str = "Deprecated";
    /// The package is deprecated.
    pub const PACKAGE_DEPRECATED: &str = "PackageDeprecated";
    /// The channel is deprecated.
    pub const CHANNEL_DEPRECATED: &str = "ChannelDeprecated";
    /// The installed bundle is deprecated.
    pub const BUNDLE_DEPRECATED: &str = "BundleDeprecated";

    /// Reason of `CatalogSourcesUnhealthy=False`: every catalog is healthy.
    pub const ALL_CATALOG_SOURCES_HEALTHY: &str = "AllCatalogSourcesHealthy";
    /// Reason of `CatalogSourcesUnhealthy=True`: a catalog is unhealthy or missing.
    pub const UNHEALTHY_CATALOG_SOURCE_FOUND: &str = "UnhealthyCatalogSourceFound";
    /// No CatalogSource is available.
    pub const NO_CATALOG_SOURCES_FOUND: &str = "NoCatalogSourcesFound";
    /// Catalog health changed because sources were added.
    pub const CATALOG_SOURCES_ADDED: &str = "CatalogSourcesAdded";
    /// Catalog health changed because a source was updated.
    pub const CATALOG_SOURCES_UPDATED: &str = "CatalogSourcesUpdated";
    /// Catalog health changed because sources were deleted.
    pub const CATALOG_SOURCES_DELETED: &str = "CatalogSourcesDeleted";
    /// Reason of `InstallPlanMissing=True`.
    pub const REFERENCED_INSTALL_PLAN_NOT_FOUND: &str = "ReferencedInstallPlanNotFound";
    /// Reason of `InstallPlanPending=True` while the plan has no phase yet.
    pub const INSTALL_PLAN_NOT_YET_RECONCILED: &str = "InstallPlanNotYetReconciled";
    /// Reason of `InstallPlanFailed=True` when the plan gives no better reason.
    pub const INSTALL_PLAN_FAILED_REASON: &str = "InstallPlanFailed";
    /// Reason of `ResolutionFailed=True`: the constraints cannot be satisfied (not retried).
    pub const CONSTRAINTS_NOT_SATISFIABLE: &str = "ConstraintsNotSatisfiable";
    /// Reason of `ResolutionFailed=True`: another error prevented resolution (retried).
    pub const ERROR_PREVENTED_RESOLUTION: &str = "ErrorPreventedResolution";
    /// Reason of `BundleUnpacking=True`.
    pub const UNPACKING_IN_PROGRESS: &str = "UnpackingInProgress";
    /// Reason of `BundleUnpackFailed=True` for a fatal error.
    pub const ERROR_PREVENTED_UNPACKING: &str = "ErrorPreventedUnpacking";
    /// Reason of `BundleUnpackFailed=True` when the plan could not be ensured.
    pub const ENSURE_INSTALL_PLAN_FAILED: &str = "EnsureInstallPlanFailed";
    /// Declared upstream; the catalog is invalid.
    pub const INVALID_CATALOG: &str = "InvalidCatalog";
    /// Declared upstream; an upgrade succeeded.
    pub const UPGRADE_SUCCEEDED: &str = "UpgradeSucceeded";
}

/// InstallPlan condition types and reasons.
pub mod install_plan {
    /// The plan was resolved.
    pub const RESOLVED: &str = "Resolved";
    /// The plan was executed.
    pub const INSTALLED: &str = "Installed";
    /// Nothing known about the plan yet.
    pub const PLAN_UNKNOWN: &str = "PlanUnknown";
    /// A pre-install check failed.
    pub const INSTALL_CHECK_FAILED: &str = "InstallCheckFailed";
    /// Dependencies conflict.
    pub const DEPENDENCIES_CONFLICT: &str = "DependenciesConflict";
    /// Creating a step's object failed.
    pub const INSTALL_COMPONENT_FAILED: &str = "InstallComponentFailed";
}

/// BundleLookup condition types and reasons.
pub mod bundle_lookup {
    /// The lookup is not complete.
    pub const PENDING: &str = "BundleLookupPending";
    /// The lookup failed.
    pub const FAILED: &str = "BundleLookupFailed";
    /// The unpacked bundle was not persisted yet.
    pub const NOT_PERSISTED: &str = "BundleLookupNotPersisted";
    /// Reason of `BundleLookupNotPersisted`.
    pub const BUNDLE_NOT_UNPACKED: &str = "BundleNotUnpacked";
    /// The unpack job has not started.
    pub const JOB_NOT_STARTED: &str = "JobNotStarted";
    /// The unpack job is running.
    pub const JOB_INCOMPLETE: &str = "JobIncomplete";
    /// The CatalogSource of the bundle is gone.
    pub const CATALOG_SOURCE_MISSING: &str = "CatalogSourceMissing";
    /// The unpack job failed.
    pub const JOB_FAILED: &str = "JobFailed";
}

/// ClusterServiceVersion reasons (the phase is in `status.phase`).
pub mod csv {
    /// Requirements not checked yet.
    pub const REQUIREMENTS_UNKNOWN: &str = "RequirementsUnknown";
    /// Some requirement is missing.
    pub const REQUIREMENTS_NOT_MET: &str = "RequirementsNotMet";
    /// Every requirement is met.
    pub const ALL_REQUIREMENTS_MET: &str = "AllRequirementsMet";
    /// Another CSV owns an API this one owns.
    pub const OWNER_CONFLICT: &str = "OwnerConflict";
    /// Creating a component failed.
    pub const INSTALL_COMPONENT_FAILED: &str = "InstallComponentFailed";
    /// Creating a component failed in a way retrying cannot fix.
    pub const INSTALL_COMPONENT_FAILED_NO_RETRY: &str = "InstallComponentFailedNoRetry";
    /// The install strategy is invalid.
    pub const INVALID_INSTALL_STRATEGY: &str = "InvalidInstallStrategy";
    /// Waiting for the components to become healthy.
    pub const INSTALL_WAITING: &str = "InstallWaiting";
    /// The install strategy completed.
    pub const INSTALL_SUCCEEDED: &str = "InstallSucceeded";
    /// The install check failed.
    pub const INSTALL_CHECK_FAILED: &str = "InstallCheckFailed";
    /// A component stopped being healthy.
    pub const COMPONENT_UNHEALTHY: &str = "ComponentUnhealthy";
    /// A newer CSV replaces this one.
    pub const BEING_REPLACED: &str = "BeingReplaced";
    /// The newer CSV succeeded.
    pub const REPLACED: &str = "Replaced";
    /// Components must be installed again.
    pub const NEEDS_REINSTALL: &str = "NeedsReinstall";
    /// Serving certificates must be rotated.
    pub const NEEDS_CERT_ROTATION: &str = "NeedsCertRotation";
    /// An APIService resource has a problem.
    pub const API_SERVICE_RESOURCE_ISSUE: &str = "APIServiceResourceIssue";
    /// APIService resources must be installed again.
    pub const API_SERVICE_RESOURCES_NEED_REINSTALL: &str = "APIServiceResourcesNeedReinstall";
    /// Installing an APIService failed.
    pub const API_SERVICE_INSTALL_FAILED: &str = "APIServiceInstallFailed";
    /// A copy of a CSV running in another namespace.
    pub const COPIED: &str = "Copied";
    /// The install modes are invalid.
    pub const INVALID_INSTALL_MODES: &str = "InvalidInstallModes";
    /// The OperatorGroup selects no namespace.
    pub const NO_TARGET_NAMESPACES: &str = "NoTargetNamespaces";
    /// The OperatorGroup's targets are not supported by the install modes.
    pub const UNSUPPORTED_OPERATOR_GROUP: &str = "UnsupportedOperatorGroup";
    /// The namespace has no OperatorGroup.
    pub const NO_OPERATOR_GROUP: &str = "NoOperatorGroup";
    /// The namespace has more than one OperatorGroup.
    pub const TOO_MANY_OPERATOR_GROUPS: &str = "TooManyOperatorGroups";
    /// An intersecting OperatorGroup provides the same API.
    pub const INTER_OPERATOR_GROUP_OWNER_CONFLICT: &str = "InterOperatorGroupOwnerConflict";
    /// A static OperatorGroup would need its provided APIs changed.
    pub const CANNOT_MODIFY_STATIC_OPERATOR_GROUP_PROVIDED_APIS: &str =
        "CannotModifyStaticOperatorGroupProvidedAPIs";
    /// RBAC or the OperatorGroup service account changed.
    pub const DETECTED_CLUSTER_CHANGE: &str = "DetectedClusterChange";
    /// A webhook description is invalid.
    pub const INVALID_WEBHOOK_DESCRIPTION: &str = "InvalidWebhookDescription";
    /// The replaced operator's OperatorCondition blocks the upgrade.
    pub const OPERATOR_CONDITION_NOT_UPGRADEABLE: &str = "OperatorConditionNotUpgradeable";
    /// Waiting for cleanup.
    pub const WAITING_ON_CLEANUP: &str = "WaitingOnCleanup";
}

/// CatalogSource `status.reason` values.
pub mod catalog_source {
    /// A spec field is invalid (e.g. an unknown `sourceType`).
    pub const SPEC_INVALID_ERROR: &str = "SpecInvalidError";
    /// The ConfigMap is missing or its content is invalid.
    pub const CONFIG_MAP_ERROR: &str = "ConfigMapError";
    /// The registry server could not be reached or created.
    pub const REGISTRY_SERVER_ERROR: &str = "RegistryServerError";
    /// `updateStrategy.registryPoll.interval` is not a duration.
    pub const INVALID_INTERVAL_ERROR: &str = "InvalidIntervalError";
}

/// OperatorGroup condition types and reasons.
pub mod operator_group {
    /// Condition type about the group's service account.
    pub const SERVICE_ACCOUNT: &str = "OperatorGroupServiceAccount";
    /// Reason: the named service account does not exist.
    pub const SERVICE_ACCOUNT_NOT_FOUND: &str = "ServiceAccountNotFound";
    /// Condition type: more than one OperatorGroup in the namespace.
    pub const MULTIPLE_OPERATOR_GROUP: &str = "MultipleOperatorGroup";
    /// Reason of `MultipleOperatorGroup=True`.
    pub const MULTIPLE_OPERATOR_GROUPS_FOUND: &str = "MultipleOperatorGroupsFound";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1alpha1::{
        CsvReason, InstallPlanConditionReason, InstallPlanConditionType, SubscriptionConditionType,
    };

    #[test]
    fn subscription_condition_constants_match_the_typed_enum() {
        for (constant, typed) in [
            (
                subscription::CATALOG_SOURCES_UNHEALTHY,
                SubscriptionConditionType::CatalogSourcesUnhealthy,
            ),
            (
                subscription::INSTALL_PLAN_MISSING,
                SubscriptionConditionType::InstallPlanMissing,
            ),
            (
                subscription::INSTALL_PLAN_PENDING,
                SubscriptionConditionType::InstallPlanPending,
            ),
            (
                subscription::INSTALL_PLAN_FAILED,
                SubscriptionConditionType::InstallPlanFailed,
            ),
            (
                subscription::RESOLUTION_FAILED,
                SubscriptionConditionType::ResolutionFailed,
            ),
            (
                subscription::BUNDLE_UNPACKING,
                SubscriptionConditionType::BundleUnpacking,
            ),
            (
                subscription::BUNDLE_UNPACK_FAILED,
                SubscriptionConditionType::BundleUnpackFailed,
            ),
            (subscription::DEPRECATED, SubscriptionConditionType::Deprecated),
        ] {
            assert_eq!(SubscriptionConditionType::parse(constant), typed);
        }
    }

    #[test]
    fn install_plan_constants_match_the_typed_enums() {
        assert_eq!(
            InstallPlanConditionType::parse(install_plan::INSTALLED),
            InstallPlanConditionType::Installed
        );
        assert_eq!(
            InstallPlanConditionReason::parse(install_plan::INSTALL_COMPONENT_FAILED),
            InstallPlanConditionReason::InstallComponentFailed
        );
    }

    #[test]
    fn every_csv_reason_constant_is_a_known_typed_reason() {
        let constants = [
            csv::REQUIREMENTS_UNKNOWN,
            csv::REQUIREMENTS_NOT_MET,
            csv::ALL_REQUIREMENTS_MET,
            csv::OWNER_CONFLICT,
            csv::INSTALL_COMPONENT_FAILED,
            csv::INSTALL_COMPONENT_FAILED_NO_RETRY,
            csv::INVALID_INSTALL_STRATEGY,
            csv::INSTALL_WAITING,
            csv::INSTALL_SUCCEEDED,
            csv::INSTALL_CHECK_FAILED,
            csv::COMPONENT_UNHEALTHY,
            csv::BEING_REPLACED,
            csv::REPLACED,
            csv::NEEDS_REINSTALL,
            csv::NEEDS_CERT_ROTATION,
            csv::API_SERVICE_RESOURCE_ISSUE,
            csv::API_SERVICE_RESOURCES_NEED_REINSTALL,
            csv::API_SERVICE_INSTALL_FAILED,
            csv::COPIED,
            csv::INVALID_INSTALL_MODES,
            csv::NO_TARGET_NAMESPACES,
            csv::UNSUPPORTED_OPERATOR_GROUP,
            csv::NO_OPERATOR_GROUP,
            csv::TOO_MANY_OPERATOR_GROUPS,
            csv::INTER_OPERATOR_GROUP_OWNER_CONFLICT,
            csv::CANNOT_MODIFY_STATIC_OPERATOR_GROUP_PROVIDED_APIS,
            csv::DETECTED_CLUSTER_CHANGE,
            csv::INVALID_WEBHOOK_DESCRIPTION,
            csv::OPERATOR_CONDITION_NOT_UPGRADEABLE,
            csv::WAITING_ON_CLEANUP,
        ];
        for constant in constants {
            assert!(
                CsvReason::parse(constant).is_known(),
                "{constant} is not a CsvReason"
            );
        }
        assert_eq!(constants.len(), CsvReason::KNOWN.len());
    }
}
