//! catalog_source: the CatalogSource's own decisions (pure): which catalog its spec asks for, when
//! a catalog served by a registry must be read again, which connection state to report, and the
//! status message of a catalog that is served.
//!
//! The shell ([`crate::controller::catalog_source`]) reads the ConfigMap or asks the registry,
//! loads the result through the one catalog loader ([`crate::catalog::load`]) and writes what
//! these functions return. Messages say what is wrong and how to fix it; upstream's reasons are
//! kept ([`crate::api::reasons::catalog_source`]).
//!
//! # `sourceType: grpc` with `spec.address`
//!
//! Upstream's catalog-operator keeps a gRPC connection to the address, reports the channel's
//! state in `connectionState.lastObservedState` (`CONNECTING`, `READY`, `TRANSIENT_FAILURE`) and
//! re-reads the catalog when the connection becomes ready again. olm-rs checks the registry on
//! every reconcile instead (cheaply: `ListPackages` and `GetPackage`) and reads the whole catalog
//! again ([`grpc_refresh`]) when none has been read from that address yet, when the registry
//! answers again after a failure (it restarted or came back), when the packages or channel heads
//! it announces differ from the catalog served (it restarted with new content), or when
//! `updateStrategy.registryPoll.interval` has elapsed. A registry that goes away keeps its last
//! good catalog served, and the status says so ([`grpc_unreachable_message`]). A grpc source with
//! an `image` asks for a registry pod, which olm-rs does not run: it is refused with the fix.

use std::time::Duration;

use kube::ResourceExt;

use crate::{
    api::{
        reasons::catalog_source as reason,
        v1alpha1::{CatalogSource, SourceType, connection_state},
    },
    catalog::{Model, load::summarise},
};

/// Our `sourceType` for the catalog embedded in the controller.
pub const SOURCE_TYPE_BUILTIN: &str = "builtin";

/// What the spec asks for, once validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourcePlan {
    /// Read this ConfigMap (in the CatalogSource's namespace).
    ConfigMap(String),
    /// Serve the built-in catalog.
    Builtin,
    /// Read the catalog from the registry server at `address` (`HOST:PORT`), again every `poll`
    /// when set.
    Grpc {
        /// `spec.address`.
        address: String,
        /// `spec.updateStrategy.registryPoll.interval`.
        poll: Option<Duration>,
    },
    /// The spec is invalid or unsupported: (reason, message).
    Invalid(&'static str, String),
}

/// Validates the spec.
pub fn plan_source(cs: &CatalogSource) -> SourcePlan {
    let name = cs.name_any();
    match &cs.spec.source_type {
        t if t.is_config_map() => match cs.spec.config_map.as_deref().filter(|c| !c.is_empty()) {
            Some(cm) => SourcePlan::ConfigMap(cm.to_owned()),
            None => SourcePlan::Invalid(
                reason::SPEC_INVALID_ERROR,
                format!(
                    "CatalogSource {name} has sourceType {} but no spec.configMap; set spec.configMap to the name of a ConfigMap in this namespace holding the catalog",
                    t.as_str()
                ),
            ),
        },
        SourceType::Grpc => plan_grpc(cs),
        SourceType::Other(t) if t == SOURCE_TYPE_BUILTIN => SourcePlan::Builtin,
        other => SourcePlan::Invalid(
            reason::SPEC_INVALID_ERROR,
            format!(
                "unknown sourcetype: {}; CatalogSource {name} must use sourceType configmap (with spec.configMap) or builtin",
                other.as_str()
            ),
        ),
    }
}

fn plan_grpc(cs: &CatalogSource) -> SourcePlan {
    let name = cs.name_any();
    let image = cs.spec.image.as_deref().filter(|i| !i.is_empty());
    let address = cs
        .spec
        .address
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty());
    if let Some(image) = image {
        return SourcePlan::Invalid(
            reason::REGISTRY_SERVER_ERROR,
            format!(
                "CatalogSource {name}: sourceType grpc with spec.image {image} asks for a registry pod, which olm-rs does not run; serve the catalog yourself (kubectl olm catalog serve DIR --grpc 0.0.0.0:50051, or opm serve) and set spec.address to HOST:PORT without spec.image, or put the catalog in a ConfigMap (sourceType: configmap)"
            ),
        );
    }
    let Some(address) = address else {
        return SourcePlan::Invalid(
            reason::SPEC_INVALID_ERROR,
            format!(
                "CatalogSource {name} has sourceType grpc but no spec.address; set spec.address to the HOST:PORT of a registry server (opm serve, kubectl olm catalog serve)"
            ),
        );
    };
    let interval = cs
        .spec
        .update_strategy
        .as_ref()
        .and_then(|u| u.registry_poll.as_ref())
        .and_then(|p| p.interval.as_deref());
    let poll = match interval.map(operator_runtime::duration::parse) {
        None => None,
        Some(Ok(d)) if d.is_zero() => None,
        Some(Ok(d)) => Some(d),
        Some(Err(err)) => {
            return SourcePlan::Invalid(
                reason::INVALID_INTERVAL_ERROR,
                format!("CatalogSource {name}: spec.updateStrategy.registryPoll.interval: {err}"),
            );
        }
    };
    SourcePlan::Grpc {
        address: address.to_owned(),
        poll,
    }
}

/// What a registry announces cheaply: every package with its default channel and the head of
/// each channel, sorted. Compared with the catalog served to notice a registry that restarted
/// with new content.
pub type Heads = Vec<(String, String, Vec<(String, String)>)>;

/// The [`Heads`] of a served catalog.
#[must_use]
pub fn heads_of(model: &Model) -> Heads {
    model
        .packages()
        .map(|p| {
            let channels = p
                .channels()
                .iter()
                .map(|c| (c.name.clone(), c.head().unwrap_or_default().to_owned()))
                .collect();
            (p.name.clone(), p.default_channel.clone(), channels)
        })
        .collect()
}

/// What the shell observed before deciding whether to read a registry's catalog again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcObserved {
    /// A catalog read from this address is being served.
    pub cached: bool,
    /// `connectionState.lastObservedState` before this reconcile.
    pub previous_state: Option<String>,
    /// Time since that catalog was read.
    pub since_read: Option<Duration>,
    /// `spec.updateStrategy.registryPoll.interval`.
    pub poll: Option<Duration>,
    /// The registry's [`Heads`] differ from the served catalog's.
    pub heads_changed: bool,
}

/// Why the whole catalog must be read again from a registry that answers, or `None` to keep
/// serving the one read before (see the module docs).
#[must_use]
pub fn grpc_refresh(observed: &GrpcObserved) -> Option<String> {
    if !observed.cached {
        return Some("no catalog has been read from this address yet".into());
    }
    match observed.previous_state.as_deref() {
        Some(connection_state::READY) => {}
        Some(state) => return Some(format!("the registry answers again (it was {state})")),
        None => return Some("the registry's state was unknown".into()),
    }
    if let (Some(poll), Some(since)) = (observed.poll, observed.since_read)
        && since >= poll
    {
        return Some(format!("updateStrategy.registryPoll.interval ({poll:?}) elapsed"));
    }
    if observed.heads_changed {
        return Some("the registry's packages or channel heads changed".into());
    }
    None
}

/// How a registry that did not answer failed, for `connectionState.lastObservedState` (one that
/// answers is `READY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reachability {
    /// No answer yet (the connection or the call is still pending when time ran out).
    Connecting(String),
    /// It refused, failed, or is not a registry.
    Failed(String),
}

impl Reachability {
    /// The gRPC connectivity state upstream reports for it.
    #[must_use]
    pub fn state(&self) -> &'static str {
        match self {
            Reachability::Connecting(_) => connection_state::CONNECTING,
            Reachability::Failed(_) => connection_state::TRANSIENT_FAILURE,
        }
    }
}

/// The message of a grpc CatalogSource whose registry does not answer: the error, and whether
/// the last good catalog (read at `last_read`) is still served.
#[must_use]
pub fn grpc_unreachable_message(address: &str, error: &str, last_read: Option<&str>) -> String {
    match last_read {
        Some(at) => format!(
            "registry {address} is unreachable: {error}; still serving the catalog read from it at {at}"
        ),
        None => format!(
            "registry {address} is unreachable: {error}; no catalog has been read from it yet; check that the registry server is running and that spec.address is its HOST:PORT"
        ),
    }
}

/// The status message of a catalog that is served: nothing when the whole catalog was usable,
/// otherwise what was left out of it and how to see every problem.
pub fn served_message(left_out: &[String]) -> Option<String> {
    (!left_out.is_empty()).then(|| {
        format!(
            "catalog served without the parts that have problems ({} in all): {}; fix them in the catalog (`kubectl-olm catalog validate DIR` lists every problem)",
            left_out.len(),
            summarise(left_out)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1alpha1::CatalogSourceSpec;

    fn cs(source_type: &str, config_map: Option<&str>) -> CatalogSource {
        let mut spec: CatalogSourceSpec =
            serde_json::from_value(serde_json::json!({"sourceType": source_type})).unwrap();
        spec.config_map = config_map.map(Into::into);
        CatalogSource::new("c", spec)
    }

    #[test]
    fn configmap_and_internal_need_a_config_map() {
        assert_eq!(
            plan_source(&cs("configmap", Some("cm"))),
            SourcePlan::ConfigMap("cm".into())
        );
        assert_eq!(
            plan_source(&cs("internal", Some("cm"))),
            SourcePlan::ConfigMap("cm".into())
        );
        let SourcePlan::Invalid(r, m) = plan_source(&cs("configmap", None)) else {
            panic!()
        };
        assert_eq!(r, "SpecInvalidError");
        assert!(m.contains("spec.configMap"), "{m}");
    }

    #[test]
    fn unknown_and_grpc_source_types_are_reported_with_the_fix() {
        let SourcePlan::Invalid(r, m) = plan_source(&cs("sqlite", None)) else {
            panic!()
        };
        assert_eq!(r, "SpecInvalidError");
        assert!(m.starts_with("unknown sourcetype: sqlite"), "{m}");
        let SourcePlan::Invalid(r, m) = plan_source(&cs("grpc", None)) else {
            panic!()
        };
        assert_eq!(r, "SpecInvalidError");
        assert!(m.contains("spec.address"), "{m}");
        assert_eq!(plan_source(&cs("builtin", None)), SourcePlan::Builtin);
    }

    fn grpc(address: Option<&str>, image: Option<&str>, interval: Option<&str>) -> CatalogSource {
        let mut c = cs("grpc", None);
        c.spec.address = address.map(Into::into);
        c.spec.image = image.map(Into::into);
        if let Some(i) = interval {
            c.spec.update_strategy =
                serde_json::from_value(serde_json::json!({"registryPoll": {"interval": i}})).unwrap();
        }
        c
    }

    #[test]
    fn a_grpc_source_with_an_address_reads_the_registry_and_one_with_an_image_is_refused() {
        assert_eq!(
            plan_source(&grpc(Some("registry.ns.svc:50051"), None, Some("10m"))),
            SourcePlan::Grpc {
                address: "registry.ns.svc:50051".into(),
                poll: Some(Duration::from_secs(600))
            }
        );
        assert_eq!(
            plan_source(&grpc(Some("r:1"), None, None)),
            SourcePlan::Grpc {
                address: "r:1".into(),
                poll: None
            }
        );
        let SourcePlan::Invalid(r, m) = plan_source(&grpc(Some("r:1"), Some("quay.io/x/index:v1"), None))
        else {
            panic!()
        };
        assert_eq!(r, "RegistryServerError");
        assert!(
            m.contains("spec.address") && m.contains("quay.io/x/index:v1"),
            "{m}"
        );
        let SourcePlan::Invalid(r, m) = plan_source(&grpc(Some("r:1"), None, Some("soon"))) else {
            panic!()
        };
        assert_eq!(r, "InvalidIntervalError");
        assert!(m.contains("registryPoll.interval") && m.contains("soon"), "{m}");
    }

    fn observed() -> GrpcObserved {
        GrpcObserved {
            cached: true,
            previous_state: Some("READY".into()),
            since_read: Some(Duration::from_secs(60)),
            poll: Some(Duration::from_secs(600)),
            heads_changed: false,
        }
    }

    #[test]
    fn a_registry_catalog_is_read_again_when_new_back_polled_or_changed_and_kept_otherwise() {
        assert_eq!(grpc_refresh(&observed()), None);
        let first = GrpcObserved {
            cached: false,
            ..observed()
        };
        assert!(grpc_refresh(&first).unwrap().contains("yet"));
        let back = GrpcObserved {
            previous_state: Some("TRANSIENT_FAILURE".into()),
            ..observed()
        };
        assert!(grpc_refresh(&back).unwrap().contains("it was TRANSIENT_FAILURE"));
        let polled = GrpcObserved {
            since_read: Some(Duration::from_secs(600)),
            ..observed()
        };
        assert!(grpc_refresh(&polled).unwrap().contains("registryPoll"));
        let no_poll = GrpcObserved {
            since_read: Some(Duration::from_secs(6000)),
            poll: None,
            ..observed()
        };
        assert_eq!(grpc_refresh(&no_poll), None);
        let changed = GrpcObserved {
            heads_changed: true,
            ..observed()
        };
        assert!(grpc_refresh(&changed).unwrap().contains("heads changed"));
    }

    #[test]
    fn connection_states_are_upstreams_and_an_unreachable_registry_says_what_is_served() {
        assert_eq!(Reachability::Connecting("t".into()).state(), "CONNECTING");
        assert_eq!(Reachability::Failed("x".into()).state(), "TRANSIENT_FAILURE");
        let kept = grpc_unreachable_message("r:1", "connection refused", Some("2026-01-01T00:00:00Z"));
        assert!(
            kept.contains("still serving the catalog read from it at 2026-01-01T00:00:00Z"),
            "{kept}"
        );
        let none = grpc_unreachable_message("r:1", "connection refused", None);
        assert!(
            none.contains("no catalog has been read") && none.contains("spec.address"),
            "{none}"
        );
    }

    #[test]
    fn a_catalog_served_with_parts_left_out_says_so_and_a_whole_one_says_nothing() {
        assert_eq!(served_message(&[]), None);
        let message = served_message(&["package \"a\": channel \"s\": entry a.v2 has no bundle".into()])
            .expect("a message");
        assert!(
            message.contains("a.v2") && message.contains("1 in all"),
            "{message}"
        );
        assert!(message.contains("catalog validate"), "{message}");
    }
}
