//! `operators.coreos.com/v1alpha1`: Subscription, InstallPlan, ClusterServiceVersion and
//! CatalogSource, shaped like upstream OLM's v1alpha1 API (see the parent module for the
//! compatibility rules).

mod catalog_source;
mod cluster_service_version;
mod install_plan;
mod subscription;

pub use catalog_source::*;
pub use cluster_service_version::*;
pub use install_plan::*;
pub use subscription::*;

/// The API version of every kind in this module.
pub const API_VERSION: &str = "operators.coreos.com/v1alpha1";

crate::api::string_enum! {
    /// How an InstallPlan is approved (`Approval`): `Automatic` or `Manual`.
    ///
    /// Upstream's CRDs do not restrict the value; upstream treats anything other than
    /// exactly `Manual` as automatic (see [`Approval::is_manual`]).
    pub enum Approval: default Automatic {
        /// Install as soon as the plan is computed.
        Automatic => "Automatic",
        /// Wait until someone sets `spec.approved: true` on the InstallPlan.
        Manual => "Manual",
    }
}

impl Approval {
    /// True only for exactly `Manual`, the upstream rule.
    pub fn is_manual(&self) -> bool {
        matches!(self, Self::Manual)
    }
}
