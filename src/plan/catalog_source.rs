//! catalog_source: the CatalogSource's own decisions (pure): which catalog its spec asks for,
//! when a catalog image is polled again, when a catalog served by a registry must be read again,
//! which connection state to report, and the status message of a catalog that is served.
//!
//! The shell ([`crate::controller::catalog_source`]) reads the ConfigMap, pulls the image (off the
//! reconcile path) or asks the registry, loads the result through the one catalog loader
//! ([`crate::catalog::load`]) and writes what these functions return. Messages say what is wrong
//! and how to fix it; upstream's reasons are kept ([`crate::api::reasons::catalog_source`]).
//!
//! # `sourceType: grpc` with `spec.image`
//!
//! Catalog images follow upstream's rules where it has them: `updateStrategy.registryPoll.interval`
//! is a Go duration, and one that does not parse means the default 15m with reason
//! `InvalidIntervalError` ([`poll_interval`], the same for the address and http arms below: the
//! catalog is still served); polling happens only for an image with a `registryPoll`. Where upstream
//! runs a registry pod we pull the image ourselves, and say so in the status: `READY` while content
//! is served (a failed re-poll keeps the last good content and says why in `message`),
//! `TRANSIENT_FAILURE` with the registry's error while there is nothing to serve, `CONNECTING`
//! during the first pull.
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
//! good catalog served, and the status says so ([`grpc_unreachable_message`]). When both are set,
//! the image wins (upstream runs the image's registry and ignores the address).
//!
//! # `sourceType: http` with `spec.address` (olm-rs only)
//!
//! `spec.image`, `spec.configMap`, `spec.secrets` and `spec.grpcPodConfig` mean nothing here and
//! are refused (`SpecInvalidError`) rather than ignored. The address is the base URL of a
//! catalogd HTTP API (OLM v1's catalogd: a ClusterCatalog's
//! `status.urls.base`; or `kubectl olm catalog serve --http`). Every reconcile (each
//! `updateStrategy.registryPoll.interval`, default each minute) GETs `BASE/api/v1/all`,
//! conditionally: the `Last-Modified` of the catalog served goes out as `If-Modified-Since`
//! ([`http_if_modified_since`]), so an unchanged catalog costs a `304` and is kept. States are the
//! grpc arm's: `READY` while the server answers, `CONNECTING` when it does not answer in time,
//! `TRANSIENT_FAILURE` when it fails or is not catalogd; a server gone keeps the last good
//! catalog served and says so ([`http_unreachable_message`]).
//!
//! # Timestamps, as upstream's can be observed
//!
//! The API keeps `metav1.Time` to the second, and upstream's e2e suite (and tools written against
//! upstream) wait on the order of these timestamps, so each is decided here, from the status
//! before and the time passed in, and never moves unless something happened:
//!
//! - `configMapReference` ([`config_map_reference`]) is recorded when the ConfigMap's `uid` or
//!   `resourceVersion` differs from the one recorded (upstream's `IsAMatch`), with
//!   `lastUpdateTime` now; a change seen within the second the previous one was recorded is
//!   recorded at the next second (the catalog is served at once; the reconcile is requeued), so
//!   every new `lastUpdateTime` is later than the one before.
//! - `connectionState.lastConnect` ([`connection`]) moves when the state or address
//!   changes, when this process (re)loaded the catalog (its first load after a start, or new
//!   content: upstream connects to a new registry pod then), and while it is not later than
//!   `configMapReference.lastUpdateTime`: upstream records the ConfigMap change first and
//!   connects to the new pod after, so a watcher waits for `lastConnect > lastUpdateTime`. A
//!   `lastConnect` in the same second is left alone (writing it would change nothing
//!   observable) and the reconcile is requeued for the next second instead of sleeping.
//! - `registryService` ([`registry_service`]): upstream writes it when it (re)creates the
//!   registry pod and Service that serve the catalog (`configmap`, `grpc` with `image`), and
//!   `{protocol: grpc, createdAt}` for a `grpc` address. olm-rs serves every catalog
//!   in-process, with no Service per catalog, so it writes `{protocol: grpc, createdAt}` for every
//!   valid spec (what upstream writes when no Service of its own exists), `createdAt` renewed
//!   when the content served is replaced (a new ConfigMap version, a new image digest), as
//!   upstream's pod is. `serviceName`, `serviceNamespace` and `port` would name a Service that
//!   does not exist, so they are left out.

use std::time::Duration;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::ResourceExt;

use crate::{
    api::{
        reasons::catalog_source as reason,
        v1alpha1::{
            CatalogSource, CatalogSourceStatus, ConfigMapResourceReference, GrpcConnectionState,
            RegistryServiceStatus, SourceType, connection_state,
        },
    },
    catalog::{Model, load::summarise},
};

/// Our `sourceType` for the catalog embedded in the controller.
pub const SOURCE_TYPE_BUILTIN: &str = "builtin";

/// Our `sourceType` for a catalogd HTTP API at `spec.address`.
pub const SOURCE_TYPE_HTTP: &str = "http";

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
        /// `spec.updateStrategy.registryPoll.interval` ([`poll_interval`]).
        poll: Option<Duration>,
        /// Why the interval was replaced by the default (reason `InvalidIntervalError`).
        interval_problem: Option<String>,
    },
    /// Read the catalog from the catalogd HTTP API whose base URL is `url`, checked again every
    /// `poll` (default: each minute).
    Http {
        /// `spec.address`.
        url: String,
        /// `spec.updateStrategy.registryPoll.interval` ([`poll_interval`]).
        poll: Option<Duration>,
        /// Why the interval was replaced by the default (reason `InvalidIntervalError`).
        interval_problem: Option<String>,
    },
    /// Pull this catalog image.
    Image(ImagePlan),
    /// The spec is invalid or unsupported: (reason, message).
    Invalid(&'static str, String),
}

/// A catalog image to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePlan {
    /// The image reference, as written.
    pub image: String,
    /// Pull Secrets in the CatalogSource's namespace, in order.
    pub secrets: Vec<String>,
    /// How often the tag is resolved again (`None`: never after the first pull).
    pub poll: Option<Duration>,
    /// Why the interval was replaced by the default (reason `InvalidIntervalError`).
    pub interval_problem: Option<String>,
}

/// Upstream's `DefaultRegistryPollDuration`.
pub const DEFAULT_POLL: Duration = Duration::from_secs(15 * 60);

/// A positive Go duration (`45m`, `1h30m`, `1.5h`, `30s`), as `time.ParseDuration` reads it:
/// every number needs a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`).
fn parse_go_duration(text: &str) -> Option<Duration> {
    operator_runtime::duration::go(text).filter(|d| !d.is_zero())
}

/// The poll interval of `updateStrategy.registryPoll.interval`: `(None, None)` without a
/// `registryPoll`; the default and a message when the interval does not parse.
pub fn poll_interval(cs: &CatalogSource) -> (Option<Duration>, Option<String>) {
    let Some(poll) = cs
        .spec
        .update_strategy
        .as_ref()
        .and_then(|u| u.registry_poll.as_ref())
    else {
        return (None, None);
    };
    match poll.interval.as_deref() {
        None => (Some(DEFAULT_POLL), None),
        Some(text) => match parse_go_duration(text) {
            Some(d) => (Some(d), None),
            None => (
                Some(DEFAULT_POLL),
                Some(format!(
                    "error parsing spec.updateStrategy.registryPoll.interval {text:?}. Using the default value of \
                     15m0s instead; set a duration such as 45m or 1h"
                )),
            ),
        },
    }
}

/// Whether a catalog image is due to be resolved again: never pulled, or its poll interval has
/// passed since the last attempt.
#[must_use]
pub fn poll_due(last_attempt: Option<Duration>, poll: Option<Duration>, served: bool) -> bool {
    match (served, last_attempt, poll) {
        (false, None, _) | (true, None, _) => true,
        (true, Some(since), Some(every)) => since >= every,
        (true, Some(_), None) => false,
        // Nothing served and an attempt made: the registry backoff decides when to retry.
        (false, Some(_), _) => true,
    }
}

/// What a catalog image's status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageStatus {
    /// `connectionState.lastObservedState`.
    pub state: &'static str,
    /// `reason`.
    pub reason: Option<&'static str>,
    /// `message`.
    pub message: Option<String>,
}

/// The status of a catalog image from what the puller knows: the digest served (if any), the
/// last error (if the last attempt failed), whether a pull is running, and what the served
/// catalog left out.
pub fn image_status(
    plan: &ImagePlan,
    served: Option<&str>,
    last_error: Option<&str>,
    pulling: bool,
    left_out: &[String],
) -> ImageStatus {
    use crate::api::v1alpha1::connection_state as state;
    let interval = plan.interval_problem.clone();
    match (served, last_error) {
        (Some(digest), error) => {
            let mut parts = Vec::new();
            if let Some(m) = &interval {
                parts.push(m.clone());
            }
            if let Some(e) = error {
                parts.push(format!(
                    "serving {} ({digest}); the last poll failed: {e}",
                    plan.image
                ));
            }
            if let Some(m) = served_message(left_out) {
                parts.push(m);
            }
            ImageStatus {
                state: state::READY,
                reason: interval.as_ref().map(|_| reason::INVALID_INTERVAL_ERROR),
                message: (!parts.is_empty()).then(|| parts.join("; ")),
            }
        }
        (None, Some(e)) if !pulling => ImageStatus {
            state: state::TRANSIENT_FAILURE,
            reason: Some(reason::REGISTRY_SERVER_ERROR),
            message: Some(match &interval {
                Some(m) => format!("{e}; {m}"),
                None => e.to_owned(),
            }),
        },
        (None, error) => ImageStatus {
            state: state::CONNECTING,
            reason: interval.as_ref().map(|_| reason::INVALID_INTERVAL_ERROR),
            message: Some(match error {
                Some(e) => format!("pulling {} again after: {e}", plan.image),
                None => format!("pulling {}", plan.image),
            }),
        },
    }
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
        SourceType::Other(t) if t == SOURCE_TYPE_HTTP => plan_http(cs),
        other => SourcePlan::Invalid(
            reason::SPEC_INVALID_ERROR,
            format!(
                "unknown sourcetype: {}; CatalogSource {name} must use sourceType grpc (with spec.image or spec.address), configmap (with spec.configMap), http (with spec.address) or builtin",
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
        let (poll, interval_problem) = poll_interval(cs);
        return SourcePlan::Image(ImagePlan {
            image: image.trim().to_owned(),
            secrets: cs.spec.secrets.clone(),
            poll,
            interval_problem,
        });
    }
    let Some(address) = address else {
        return SourcePlan::Invalid(
            reason::SPEC_INVALID_ERROR,
            format!(
                "CatalogSource {name} has sourceType grpc but neither spec.image nor spec.address; set spec.image to a catalog image (REGISTRY/REPO:TAG), or spec.address to the HOST:PORT of a registry server (opm serve, kubectl olm catalog serve)"
            ),
        );
    };
    let (poll, interval_problem) = poll_interval(cs);
    SourcePlan::Grpc {
        address: address.to_owned(),
        poll,
        interval_problem,
    }
}

fn plan_http(cs: &CatalogSource) -> SourcePlan {
    let name = cs.name_any();
    // Fields an http source would silently ignore: refused, so nobody believes they apply.
    let set = |text: Option<&str>| text.is_some_and(|t| !t.trim().is_empty());
    let ignored: Vec<&str> = [
        ("spec.image", set(cs.spec.image.as_deref())),
        ("spec.configMap", set(cs.spec.config_map.as_deref())),
        ("spec.secrets", !cs.spec.secrets.is_empty()),
        ("spec.grpcPodConfig", cs.spec.grpc_pod_config.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, is_set)| is_set.then_some(field))
    .collect();
    if !ignored.is_empty() {
        return SourcePlan::Invalid(
            reason::SPEC_INVALID_ERROR,
            format!(
                "CatalogSource {name} has sourceType http, which reads only spec.address (and spec.updateStrategy), but sets {}; remove {}, or use sourceType grpc with spec.image for a catalog image",
                ignored.join(", "),
                if ignored.len() == 1 { "it" } else { "them" }
            ),
        );
    }
    let address = cs
        .spec
        .address
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty());
    let Some(url) = address else {
        return SourcePlan::Invalid(
            reason::SPEC_INVALID_ERROR,
            format!(
                "CatalogSource {name} has sourceType http but no spec.address; set spec.address to the base URL of a catalogd HTTP API (https://HOST/catalogs/NAME, a ClusterCatalog's status.urls.base, or http://HOST:PORT of kubectl olm catalog serve --http)"
            ),
        );
    };
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return SourcePlan::Invalid(
            reason::SPEC_INVALID_ERROR,
            format!(
                "CatalogSource {name} has sourceType http but spec.address {url:?} is not an https:// URL; set it to the catalog's base URL (https://HOST/catalogs/NAME)"
            ),
        );
    }
    let (poll, interval_problem) = poll_interval(cs);
    SourcePlan::Http {
        url: url.to_owned(),
        poll,
        interval_problem,
    }
}

/// The message of an http CatalogSource whose server did not answer with a catalog: the error,
/// and whether the last good catalog (read at `last_read`) is still served.
#[must_use]
pub fn http_unreachable_message(url: &str, error: &str, last_read: Option<&str>) -> String {
    match last_read {
        Some(at) => {
            format!("catalog server {url} failed: {error}; still serving the catalog read from it at {at}")
        }
        None => format!(
            "catalog server {url} failed: {error}; no catalog has been read from it yet; check that the catalogd HTTP API is reachable and that spec.address is the catalog's base URL"
        ),
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
    /// What failed.
    #[must_use]
    pub fn error(&self) -> &str {
        match self {
            Reachability::Connecting(e) | Reachability::Failed(e) => e,
        }
    }

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

/// The `reason` and `message` of a source that is not an image: none (or what was left out)
/// while its catalog is served, the failure otherwise. An interval replaced by the default
/// ([`poll_interval`]) adds reason `InvalidIntervalError` to a served catalog, and its message to
/// either, as the image arm does ([`image_status`]).
#[must_use]
pub fn source_status(
    outcome: Result<&[String], (&'static str, &str)>,
    interval_problem: Option<&str>,
) -> (Option<&'static str>, Option<String>) {
    match outcome {
        Ok(left_out) => {
            let parts: Vec<String> = interval_problem
                .map(str::to_owned)
                .into_iter()
                .chain(served_message(left_out))
                .collect();
            (
                interval_problem.map(|_| reason::INVALID_INTERVAL_ERROR),
                (!parts.is_empty()).then(|| parts.join("; ")),
            )
        }
        Err((r, m)) => (
            Some(r),
            Some(match interval_problem {
                Some(p) => format!("{m}; {p}"),
                None => m.to_owned(),
            }),
        ),
    }
}

/// The second a status time is stored with (`metav1.Time` keeps no fraction).
fn second(t: &Time) -> i64 {
    t.0.as_second()
}

/// How long from `now` until the second after `after` has begun (plus a little, so the clock
/// has certainly moved on when the reconcile runs again).
fn until_after(after: &Time, now: Timestamp) -> Duration {
    let target = i128::from(after.0.as_second() + 1) * 1_000_000_000;
    let left = u64::try_from((target - now.as_nanosecond()).max(0)).unwrap_or(u64::MAX);
    Duration::from_nanos(left) + Duration::from_millis(50)
}

/// The ConfigMap a `configmap` source read, as the shell saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMapSeen {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
}

/// A status field decided with its timestamp, and when to reconcile again because the
/// timestamp could not be recorded yet (see the module docs: the controller never sleeps).
#[derive(Debug, Clone, PartialEq)]
pub struct Timed<T> {
    /// The value to write.
    pub value: T,
    /// Reconcile again after this long.
    pub again: Option<Duration>,
}

/// The `configMapReference` to write and whether it is a new one (the content served was
/// replaced).
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// `status.configMapReference`.
    pub reference: ConfigMapResourceReference,
    /// Recorded in this reconcile.
    pub renewed: bool,
}

/// `status.configMapReference` for the ConfigMap `seen` (see the module docs): the previous one
/// while it matches (`uid` and `resourceVersion`, upstream's `IsAMatch`), a new one with
/// `lastUpdateTime` now otherwise, unless the previous one was recorded in this very second
/// (then it is kept, and the reconcile comes back in the next second).
#[must_use]
pub fn config_map_reference(
    previous: Option<&ConfigMapResourceReference>,
    seen: ConfigMapSeen,
    now: Timestamp,
) -> Timed<Reference> {
    let keep = |previous: &ConfigMapResourceReference, again| Timed {
        value: Reference {
            reference: previous.clone(),
            renewed: false,
        },
        again,
    };
    if let Some(prev) = previous {
        let matches = prev.name == seen.name
            && prev.namespace == seen.namespace
            && prev.uid == seen.uid
            && prev.resource_version.as_deref() == Some(seen.resource_version.as_str());
        if matches {
            return keep(prev, None);
        }
        if let Some(at) = &prev.last_update_time
            && second(at) >= now.as_second()
        {
            return keep(prev, Some(until_after(at, now)));
        }
    }
    Timed {
        value: Reference {
            reference: ConfigMapResourceReference {
                name: seen.name,
                namespace: seen.namespace,
                uid: seen.uid,
                resource_version: Some(seen.resource_version),
                last_update_time: Some(Time(now)),
            },
            renewed: true,
        },
        again: None,
    }
}

/// What the shell knows when deciding `status.connectionState`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionSeen<'a> {
    /// `status.connectionState` before this reconcile.
    pub previous: Option<&'a GrpcConnectionState>,
    /// `lastObservedState` now.
    pub state: &'static str,
    /// `address` now (a `grpc` address or an `http` URL).
    pub address: Option<String>,
    /// This reconcile put into the cache a catalog that was not served before: the first load
    /// in this process, or new content.
    pub reloaded: bool,
    /// `configMapReference.lastUpdateTime` being written: `lastConnect` must end up later.
    pub not_before: Option<&'a Time>,
}

/// `status.connectionState` (see the module docs): the previous one, with its `lastConnect`,
/// unless the state or address changed, the catalog was (re)loaded, or `lastConnect` is not
/// later than `not_before`; then `lastConnect` is now, when that is a later second than the one
/// recorded. While `lastConnect` is not later than `not_before`, the reconcile comes back in the
/// next second.
#[must_use]
pub fn connection(seen: &ConnectionSeen<'_>, now: Timestamp) -> Timed<GrpcConnectionState> {
    let previous_connect = seen
        .previous
        .filter(|p| p.last_observed_state == seen.state && p.address == seen.address)
        .and_then(|p| p.last_connect.as_ref());
    let not_later = |at: &Time| seen.not_before.is_some_and(|nb| second(at) <= second(nb));
    let keep = previous_connect.is_some_and(|at| {
        // Within the second it was recorded nothing observable would change.
        second(at) >= now.as_second() || !(seen.reloaded || not_later(at))
    });
    let last_connect = match previous_connect {
        Some(at) if keep => at.clone(),
        _ => Time(now),
    };
    let again = seen
        .not_before
        .filter(|_| not_later(&last_connect))
        .map(|nb| until_after(nb, now));
    Timed {
        value: GrpcConnectionState {
            address: seen.address.clone(),
            last_observed_state: seen.state.to_owned(),
            last_connect: Some(last_connect),
        },
        again,
    }
}

/// `status.registryService` (see the module docs): none for a spec that is not valid;
/// otherwise `{protocol: grpc, createdAt}`, `createdAt` kept from `previous` unless the content
/// served was `renewed` (or `previous` said something else).
#[must_use]
pub fn registry_service(
    previous: Option<&RegistryServiceStatus>,
    valid: bool,
    renewed: bool,
    now: Timestamp,
) -> Option<RegistryServiceStatus> {
    if !valid {
        return None;
    }
    let wanted = RegistryServiceStatus {
        protocol: Some("grpc".into()),
        ..RegistryServiceStatus::default()
    };
    let created_at = previous
        .filter(|p| {
            !renewed
                && RegistryServiceStatus {
                    created_at: None,
                    ..(*p).clone()
                } == wanted
        })
        .and_then(|p| p.created_at.clone())
        .unwrap_or(Time(now));
    Some(RegistryServiceStatus {
        created_at: Some(created_at),
        ..wanted
    })
}

/// Whether a timestamp decided here ([`config_map_reference`], [`connection`],
/// [`registry_service`]) differs between `old` and `new` as stored (to the second): the shell
/// skips status writes that would only move ticking timestamps, but not these.
#[must_use]
pub fn decided_times_changed(old: &CatalogSourceStatus, new: &CatalogSourceStatus) -> bool {
    let stored = |t: Option<&Time>| t.map(second);
    let times = |s: &CatalogSourceStatus| {
        (
            stored(s.connection_state.as_ref().and_then(|c| c.last_connect.as_ref())),
            stored(
                s.config_map_reference
                    .as_ref()
                    .and_then(|r| r.last_update_time.as_ref()),
            ),
            stored(s.registry_service.as_ref().and_then(|r| r.created_at.as_ref())),
        )
    };
    times(old) != times(new)
}

/// What the spec sets that olm-rs accepts but cannot apply, for the status message:
/// `spec.grpcPodConfig` configures the registry pod upstream runs for a `grpc` source; olm-rs
/// runs none (it pulls the image or reads the address itself), so the field has no effect.
#[must_use]
pub fn unapplied_spec_note(cs: &CatalogSource) -> Option<String> {
    cs.spec.grpc_pod_config.as_ref().map(|_| {
        format!(
            "spec.grpcPodConfig of CatalogSource {} has no effect: olm-rs runs no registry pod; remove the field",
            cs.name_any()
        )
    })
}

/// `message` with `note` appended (either may be absent).
#[must_use]
pub fn with_note(message: Option<String>, note: Option<String>) -> Option<String> {
    match (message, note) {
        (Some(m), Some(n)) => Some(format!("{m}; {n}")),
        (m, n) => m.or(n),
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
mod tests;
