//! The controllers' error type: one variant per pipeline stage, so a failure says where it
//! happened, and `metric_label()` gives the `error` label of `olmrs_reconcile_errors_total`.
//! API errors read as sentences ([`crate::k8s::message::describe`]), never as kube's debug dump,
//! because these messages reach statuses and Events.

use thiserror::Error;

use crate::k8s::message::describe;

/// Why a reconcile failed (the stage that failed).
#[derive(Debug, Error)]
pub enum Error {
    /// Reading the objects the decision needs failed.
    #[error("failed to observe {what}: {}", describe(.source))]
    Observe {
        /// What was being read.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The object itself is unusable (missing name or namespace).
    #[error("invalid object: {0}")]
    InvalidObject(String),
    /// Applying a desired object failed.
    #[error("failed to apply {what}: {}", describe(.source))]
    Apply {
        /// The object being applied (`Kind namespace/name`).
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Deleting an object failed.
    #[error("failed to delete {what}: {}", describe(.source))]
    Delete {
        /// The object being deleted.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Writing the status failed.
    #[error("failed to update the status of {what}: {}", describe(.source))]
    UpdateStatus {
        /// The object whose status was written.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Adding or removing the CSV finalizer failed.
    #[error("failed to handle the finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
    /// Cleaning up after a deleted object failed.
    #[error("failed to clean up {what}: {}", describe(.source))]
    Cleanup {
        /// What was being cleaned up.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Issuing a webhook Deployment's certificates failed.
    #[error("failed to issue certificates: {0}")]
    Certificates(#[from] crate::certs::CertError),
    /// No client acting as the namespace's install ServiceAccount could be had.
    #[error(transparent)]
    Account(#[from] crate::k8s::scoped::ScopedError),
}

impl Error {
    /// The stage, as a metric label.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Observe { .. } => "observe",
            Self::InvalidObject(_) => "invalid_object",
            Self::Apply { .. } => "apply",
            Self::Delete { .. } => "delete",
            Self::UpdateStatus { .. } => "update_status",
            Self::Finalizer(_) => "finalizer",
            Self::Cleanup { .. } => "cleanup",
            Self::Certificates(_) => "certificates",
            Self::Account(_) => "account",
        }
    }

    /// Shorthand for [`Error::Observe`].
    pub fn observe(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let what = what.into();
        move |source| Self::Observe { what, source }
    }

    /// Shorthand for [`Error::Apply`].
    pub fn apply(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let what = what.into();
        move |source| Self::Apply { what, source }
    }

    /// Shorthand for [`Error::UpdateStatus`].
    pub fn status(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Self {
        let what = what.into();
        move |source| Self::UpdateStatus { what, source }
    }
}

/// Result alias of the controllers.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stage_has_its_own_metric_label() {
        let err = Error::InvalidObject("no namespace".into());
        assert_eq!(err.metric_label(), "invalid_object");
        let not_found = || {
            kube::Error::Api(Box::new(kube::core::Status {
                code: 404,
                ..Default::default()
            }))
        };
        assert_eq!(Error::observe("x")(not_found()).metric_label(), "observe");
        assert_eq!(Error::apply("x")(not_found()).metric_label(), "apply");
        assert_eq!(Error::status("x")(not_found()).metric_label(), "update_status");
    }
}
