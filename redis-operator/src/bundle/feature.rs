//! feature: what each release of the operator could do.
//!
//! Both the release history ([`super::release`]) and the permission table ([`super::rbac`]) are
//! keyed by these features, so they live apart from both: a release lists its features, and a rule
//! names the feature that made the code need it.

/// A capability a release introduced; older releases lack it in their CRD, CSV and permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// 0.2.0: `spec.resources`, `spec.storage` (PVCs, cleanup finalizer) and a PodDisruptionBudget.
    ResourcesAndStorage,
    /// 0.3.0: `spec.redisConfig` with the directive deny-list and the `Degraded` condition.
    RedisConfig,
    /// 1.0.0-rc.1: `spec.mode: cluster` and `spec.replicasPerPrimary` (sharded Redis Cluster).
    ClusterMode,
    /// 1.1.0: the CRD also serves the flat `v1alpha1` (storage stays `v1`), converted by the
    /// operator's conversion webhook; a validating webhook refuses bad specs at admission. Both are
    /// declared in the CSV's `webhookdefinitions`.
    Webhooks,
    /// 1.2.0: `v1alpha1` is no longer served (`served: false`; still listed, so nothing stored is
    /// dropped).
    V1Alpha1Unserved,
}
