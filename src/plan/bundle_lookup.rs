//! bundle_lookup: the decisions about a bundle whose manifests are not in the catalog and must be
//! pulled from its bundle image (pure: time is passed in as the time elapsed).
//!
//! # Upstream (`catalog/operator.go:syncResolvingNamespace`, `bundle/bundle_unpacker.go`)
//!
//! A file-based catalog rendered by `opm render` carries, per bundle, an `image:` and
//! `olm.csv.metadata` instead of `olm.bundle.object` properties. Upstream's resolver returns a
//! `BundleLookup` (`path` = the image, `identifier` = the CSV, `replaces`, `catalogSourceRef`,
//! `properties`) for such a bundle; an unpack Job copies the image's `manifests/` into a
//! ConfigMap. Since olm PR #2942 (2023) **no InstallPlan is created until every lookup is
//! unpacked**: while the Job runs the Subscriptions get `BundleUnpacking=True` (reason
//! `UnpackingInProgress`, resync every 5 s); when the Job fails (its `activeDeadlineSeconds` is
//! the unpack timeout: `--bundle-unpack-timeout`, default 10m, overridden by the OperatorGroup
//! annotation `operatorframework.io/bundle-unpack-timeout`, `0` = none) the lookup gets
//! `BundleLookupFailed=True` and the Subscriptions `BundleUnpackFailed=True` (reason
//! `BundleUnpackFailed`), and a new attempt starts about 5 minutes later. Once unpacked, the
//! InstallPlan is created with the bundle's steps and the lookup, its conditions removed, in
//! `status.bundleLookups`.
//!
//! # Ours
//!
//! The same flow, with the controller pulling the image itself ([`crate::oci`], off the reconcile
//! path, cached by digest) instead of a Job:
//!
//! - [`needs_lookup`]: a bundle needs its image only when it has no inlined objects;
//! - [`unpack_timeout`]: the OperatorGroup annotation, a Go duration (default [`DEFAULT_TIMEOUT`];
//!   `0` = no timeout; negative = the default, as upstream); one that does not parse is a
//!   `BundleUnpackFailed` naming the OperatorGroup, the annotation and the fix (upstream fails
//!   the whole namespace sync with only a log line);
//! - [`lookup_state`]: from what the puller knows. Pulled → [`LookupState::Unpacked`]. A pull
//!   running or retrying (registry errors are retried with backoff, as an unpack Job retries an
//!   image pull) → `Pending` with the registry's last message. Longer than the timeout since the
//!   first attempt → `Failed` (reason `DeadlineExceeded`, the Job reason upstream shows); a
//!   content error (not a bundle image, an invalid bundle, an unsafe layer) fails at once
//!   (reason `InvalidBundle`): pulling again would give the same bytes. [`RETRY_AFTER`] after
//!   the failure, or after the OperatorGroup's `operatorframework.io/bundle-unpack-min-retry-interval`
//!   when it is set ([`unpack_settings`]), a new attempt window starts ([`LookupState::Retry`]).
//!   A failed lookup keeps no pull running ([`LookupState::stops_pulling`]): upstream's Job is
//!   killed at its deadline, so a pull that answers later never creates the plan.
//! - The bundle's CatalogSource gone (deleted after resolution; its pull Secrets are read from
//!   it): no pull starts, and the lookup is `BundleLookupPending` with upstream's reason
//!   `CatalogSourceMissing` ([`LookupState::CatalogSourceMissing`]) until it is back. A bundle
//!   already pulled needs nothing from it and goes on.
//! - [`lookup`]: the `BundleLookup` with its condition, and [`subscription_condition`] the
//!   Subscription condition it means.
//!
//! A Subscription that is unpacking never has `BundleUnpacking` and `BundleUnpackFailed` at once
//! (upstream can show both after a retry).

use std::time::Duration;

use k8s_openapi::{api::core::v1::ObjectReference, apimachinery::pkg::apis::meta::v1::Time};
use serde_json::{Value, json};

use crate::{
    api::{
        ConditionStatus,
        labels::{BUNDLE_UNPACK_MIN_RETRY_INTERVAL, BUNDLE_UNPACK_TIMEOUT},
        reasons::{bundle_lookup as bl_reason, subscription as sub_reason},
        v1alpha1::{BundleLookup, BundleLookupCondition, BundleLookupConditionType},
    },
    catalog::model::Bundle,
};

/// Upstream's `--bundle-unpack-timeout` default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How long after a failed lookup a new attempt starts (upstream: the failed Job's
/// `ttlSecondsAfterFinished` and the 5-minute requeue).
pub const RETRY_AFTER: Duration = Duration::from_secs(5 * 60);

/// Reason of `BundleLookupPending=True` while the image is being pulled (or retried).
pub const REASON_PULLING: &str = "ImagePulling";
/// Reason of `BundleLookupFailed=True` after the unpack timeout (upstream's Job reason).
pub const REASON_DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
/// Reason of `BundleLookupFailed=True` when the image does not hold a usable bundle.
pub const REASON_INVALID_BUNDLE: &str = "InvalidBundle";

/// The image to pull for `bundle`: `Some` only when the catalog inlines none of its manifests
/// and names an image.
#[must_use]
pub fn needs_lookup(bundle: &Bundle) -> Option<&str> {
    let inlined = !bundle.properties.bundle_objects.is_empty();
    (!inlined && !bundle.image.trim().is_empty()).then_some(bundle.image.as_str())
}

/// The unpack timeout from the OperatorGroup's annotations (`None`: no timeout).
///
/// # Errors
/// A message naming the OperatorGroup, the annotation, its value and the fix, when the value is
/// not a Go duration.
pub fn unpack_timeout(
    group: &str,
    annotations: Option<&std::collections::BTreeMap<String, String>>,
) -> Result<Option<Duration>, String> {
    let Some(text) = annotations.and_then(|a| a.get(BUNDLE_UNPACK_TIMEOUT)) else {
        return Ok(Some(DEFAULT_TIMEOUT));
    };
    // Go's `time.ParseDuration` takes one optional sign.
    let trimmed = text.trim();
    let (negative, magnitude) = match trimmed.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    match operator_runtime::duration::go(magnitude) {
        Some(d) if d.is_zero() => Ok(None),
        // Upstream ignores a negative timeout and uses the default.
        Some(_) if negative => Ok(Some(DEFAULT_TIMEOUT)),
        Some(d) => Ok(Some(d)),
        None => Err(format!(
            "OperatorGroup {group}: annotation {BUNDLE_UNPACK_TIMEOUT}={text:?} is not a duration; set it to a Go \
             duration such as 10m or 1h30m (0 for no timeout), or remove it for the default of 10m"
        )),
    }
}

/// How an OperatorGroup's bundle lookups are timed: the unpack timeout (`None`: none) and the
/// wait after a failure before a new attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpackSettings {
    /// `operatorframework.io/bundle-unpack-timeout` (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Option<Duration>,
    /// `operatorframework.io/bundle-unpack-min-retry-interval` (default [`RETRY_AFTER`]).
    pub retry_after: Duration,
}

impl Default for UnpackSettings {
    fn default() -> Self {
        Self {
            timeout: Some(DEFAULT_TIMEOUT),
            retry_after: RETRY_AFTER,
        }
    }
}

/// Both unpack annotations of the OperatorGroup `group` (see [`unpack_timeout`]); the retry
/// interval is a non-negative Go duration.
///
/// # Errors
/// A message naming the OperatorGroup, the annotation, its value and the fix.
pub fn unpack_settings(
    group: &str,
    annotations: Option<&std::collections::BTreeMap<String, String>>,
) -> Result<UnpackSettings, String> {
    let timeout = unpack_timeout(group, annotations)?;
    let retry_after = match annotations.and_then(|a| a.get(BUNDLE_UNPACK_MIN_RETRY_INTERVAL)) {
        None => RETRY_AFTER,
        Some(text) => {
            let trimmed = text.trim();
            operator_runtime::duration::go(trimmed.strip_prefix('+').unwrap_or(trimmed)).ok_or_else(|| {
                format!(
                    "OperatorGroup {group}: annotation {BUNDLE_UNPACK_MIN_RETRY_INTERVAL}={text:?} is not a \
                     non-negative duration; set it to a Go duration such as 30s or 10m, or remove it for the \
                     default of 5m"
                )
            })?
        }
    };
    Ok(UnpackSettings { timeout, retry_after })
}

/// What the puller knows about the bundle image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Observation<'a> {
    /// The image was pulled and its bundle read.
    pub pulled: bool,
    /// A pull is running now.
    pub pulling: bool,
    /// Time since the first attempt of the current window (`None`: none made yet).
    pub elapsed: Option<Duration>,
    /// The last attempt's error.
    pub last_error: Option<&'a str>,
    /// Whether that error is about the content (pulling again gives the same answer).
    pub last_error_fatal: bool,
    /// The bundle's CatalogSource, as `namespace/name`, when it is not there.
    pub missing_catalog_source: Option<&'a str>,
}

/// Where a lookup stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupState {
    /// The manifests are here: create the InstallPlan.
    Unpacked,
    /// Still pulling: `BundleLookupPending=True` with this message.
    Pending(String),
    /// Failed: `BundleLookupFailed=True` with this reason and message; retry after `retry_in`.
    Failed {
        /// The lookup condition's reason.
        reason: &'static str,
        /// Its message (the registry's, or the timeout's).
        message: String,
        /// When a new attempt starts.
        retry_in: Duration,
    },
    /// The last failure is [`UnpackSettings::retry_after`] old: start a new attempt window.
    Retry,
    /// The bundle's CatalogSource is not there: nothing is pulled until it is
    /// (`BundleLookupPending=True`, reason `CatalogSourceMissing`, with this message).
    CatalogSourceMissing(String),
}

impl LookupState {
    /// True when no pull may run in this state: a failed lookup's pull is stopped, as upstream
    /// kills its unpack Job at the deadline.
    #[must_use]
    pub fn stops_pulling(&self) -> bool {
        matches!(self, LookupState::Failed { .. })
    }
}

/// Where the lookup of `image` stands (see the module documentation).
#[must_use]
pub fn lookup_state(image: &str, observed: &Observation<'_>, settings: &UnpackSettings) -> LookupState {
    let UnpackSettings { timeout, retry_after } = *settings;
    if observed.pulled {
        return LookupState::Unpacked;
    }
    if let Some(catalog) = observed.missing_catalog_source {
        return LookupState::CatalogSourceMissing(format!(
            "the CatalogSource {catalog} of bundle image {image} is not found (upstream: referenced \
             catalogsource not found); the image is pulled once it is back: recreate it, or point the \
             Subscription at another catalog"
        ));
    }
    let elapsed = observed.elapsed.unwrap_or_default();
    let failed = |reason, message: String, failed_for: Duration| {
        if failed_for >= retry_after {
            LookupState::Retry
        } else {
            LookupState::Failed {
                reason,
                message,
                retry_in: retry_after - failed_for,
            }
        }
    };
    if let (Some(error), true) = (observed.last_error, observed.last_error_fatal)
        && !observed.pulling
    {
        // The failure time is not kept; the window's age stands in for it (a content error
        // comes with the first attempts).
        return failed(REASON_INVALID_BUNDLE, error.to_owned(), elapsed);
    }
    if let Some(limit) = timeout
        && elapsed > limit
    {
        let last = observed
            .last_error
            .map_or_else(String::new, |e| format!("; the last attempt failed: {e}"));
        return failed(
            REASON_DEADLINE_EXCEEDED,
            format!(
                "bundle image {image} was not pulled within the unpack timeout of {}{last}; check the image \
                 and the registry (the timeout is the OperatorGroup annotation {BUNDLE_UNPACK_TIMEOUT})",
                go_format(limit)
            ),
            elapsed - limit,
        );
    }
    LookupState::Pending(match observed.last_error {
        Some(error) => format!("pulling bundle image {image} (retrying): {error}"),
        None => format!("pulling bundle image {image}"),
    })
}

/// `10m0s`-style text of a duration (as Go prints one), whole seconds.
fn go_format(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, min, sec) => format!("{min}m{sec}s"),
        (h, min, sec) => format!("{h}h{min}m{sec}s"),
    }
}

/// What identifies a lookup: the image, the CSV, what it replaces, its catalog and properties.
#[derive(Debug, Clone, Copy)]
pub struct LookupInput<'a> {
    /// The bundle image.
    pub image: &'a str,
    /// The CSV name.
    pub identifier: &'a str,
    /// The CSV it replaces (empty for none).
    pub replaces: &'a str,
    /// The CatalogSource's namespace.
    pub catalog_namespace: &'a str,
    /// The CatalogSource's name.
    pub catalog_name: &'a str,
    /// The bundle's properties (`{"type", "value"}` objects).
    pub properties: &'a [Value],
}

/// The `BundleLookup` for `input` in `state`: `Pending` and `Failed` carry their condition;
/// `Unpacked` (the form an InstallPlan records) none.
#[must_use]
pub fn lookup(input: &LookupInput<'_>, state: &LookupState, now: &Time) -> BundleLookup {
    let condition = |type_, reason: &str, message: &str| BundleLookupCondition {
        type_,
        status: ConditionStatus::True,
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now.clone()),
    };
    let conditions = match state {
        LookupState::Unpacked => Vec::new(),
        LookupState::Pending(message) => vec![condition(
            BundleLookupConditionType::BundleLookupPending,
            REASON_PULLING,
            message,
        )],
        LookupState::Failed { reason, message, .. } => vec![condition(
            BundleLookupConditionType::BundleLookupFailed,
            reason,
            message,
        )],
        LookupState::Retry => vec![condition(
            BundleLookupConditionType::BundleLookupPending,
            REASON_PULLING,
            &format!("pulling bundle image {} again", input.image),
        )],
        LookupState::CatalogSourceMissing(message) => vec![condition(
            BundleLookupConditionType::BundleLookupPending,
            bl_reason::CATALOG_SOURCE_MISSING,
            message,
        )],
    };
    BundleLookup {
        path: input.image.to_owned(),
        identifier: input.identifier.to_owned(),
        replaces: input.replaces.to_owned(),
        // Upstream's resolver writes only the name and namespace.
        catalog_source_ref: ObjectReference {
            name: Some(input.catalog_name.to_owned()),
            namespace: Some(input.catalog_namespace.to_owned()),
            ..ObjectReference::default()
        },
        conditions,
        properties: Some(json!({ "properties": input.properties }).to_string()),
    }
}

/// The Subscription condition a lookup's state means: `(BundleUnpackFailed?, reason, message)`;
/// `None` once unpacked.
#[must_use]
pub fn subscription_condition(lookup: &BundleLookup) -> Option<(bool, &'static str, String)> {
    let condition = lookup.conditions.first()?;
    let message = condition.message.clone().unwrap_or_default();
    match condition.type_ {
        BundleLookupConditionType::BundleLookupFailed => Some((
            true,
            sub_reason::BUNDLE_UNPACK_FAILED,
            format!(
                "bundle unpacking failed for {} - {}: {message}; a new attempt starts within 5 minutes",
                lookup.identifier,
                condition.reason.as_deref().unwrap_or_default()
            ),
        )),
        _ => Some((false, sub_reason::UNPACKING_IN_PROGRESS, message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const IMAGE: &str = "quay.io/example/redis-bundle@sha256:abc";

    fn settings(timeout: Option<Duration>) -> UnpackSettings {
        UnpackSettings {
            timeout,
            ..UnpackSettings::default()
        }
    }

    #[test]
    fn the_min_retry_interval_annotation_sets_the_wait_before_a_new_attempt() {
        let of = |pairs: &[(&str, &str)]| {
            let annotations: BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            unpack_settings("og", Some(&annotations))
        };
        assert_eq!(of(&[]), Ok(UnpackSettings::default()));
        let set = of(&[
            (BUNDLE_UNPACK_MIN_RETRY_INTERVAL, "30s"),
            (BUNDLE_UNPACK_TIMEOUT, "2m"),
        ])
        .unwrap();
        assert_eq!(set.retry_after, Duration::from_secs(30));
        assert_eq!(set.timeout, Some(Duration::from_secs(120)));
        let err = of(&[(BUNDLE_UNPACK_MIN_RETRY_INTERVAL, "-1m")]).unwrap_err();
        assert!(
            err.contains("og") && err.contains(BUNDLE_UNPACK_MIN_RETRY_INTERVAL) && err.contains("30s"),
            "{err}"
        );
        assert!(of(&[(BUNDLE_UNPACK_MIN_RETRY_INTERVAL, "soon")]).is_err());
        // A failure 31 s old starts a new attempt under a 30 s interval, not under the default.
        let failed = Observation {
            elapsed: Some(Duration::from_secs(31)),
            last_error: Some("not a bundle image"),
            last_error_fatal: true,
            ..Observation::default()
        };
        assert_eq!(lookup_state(IMAGE, &failed, &set), LookupState::Retry);
        assert!(matches!(
            lookup_state(IMAGE, &failed, &UnpackSettings::default()),
            LookupState::Failed { .. }
        ));
    }

    fn timeout_of(value: &str) -> Result<Option<Duration>, String> {
        let annotations = BTreeMap::from([(BUNDLE_UNPACK_TIMEOUT.to_owned(), value.to_owned())]);
        unpack_timeout("og", Some(&annotations))
    }

    #[test]
    fn the_unpack_timeout_is_the_annotation_as_a_go_duration_with_upstreams_default_and_zero() {
        assert_eq!(unpack_timeout("og", None), Ok(Some(DEFAULT_TIMEOUT)));
        assert_eq!(
            unpack_timeout("og", Some(&BTreeMap::new())),
            Ok(Some(DEFAULT_TIMEOUT))
        );
        assert_eq!(timeout_of("2m30s"), Ok(Some(Duration::from_secs(150))));
        assert_eq!(timeout_of("1h"), Ok(Some(Duration::from_secs(3600))));
        assert_eq!(timeout_of("0"), Ok(None));
        assert_eq!(timeout_of("0s"), Ok(None));
        assert_eq!(timeout_of("-1m"), Ok(Some(DEFAULT_TIMEOUT)));
        assert_eq!(timeout_of("+90s"), Ok(Some(Duration::from_secs(90))));
        // Go reads `-0` as zero: no timeout, not a negative one.
        assert_eq!(timeout_of("-0s"), Ok(None));
        assert!(timeout_of("++1m").is_err());
        assert!(timeout_of("-ten").is_err());
        let err = timeout_of("ten minutes").unwrap_err();
        assert!(err.starts_with(
            "OperatorGroup og: annotation operatorframework.io/bundle-unpack-timeout=\"ten minutes\""
        ));
        assert!(err.contains("such as 10m"), "{err}");
        assert!(timeout_of("10").unwrap_err().contains("not a duration"));
    }

    #[test]
    fn a_pull_in_progress_is_pending_with_the_registrys_last_message() {
        let state = lookup_state(
            IMAGE,
            &Observation {
                pulling: true,
                elapsed: Some(Duration::from_secs(5)),
                ..Observation::default()
            },
            &UnpackSettings::default(),
        );
        assert_eq!(
            state,
            LookupState::Pending(format!("pulling bundle image {IMAGE}"))
        );
        let state = lookup_state(
            IMAGE,
            &Observation {
                elapsed: Some(Duration::from_secs(30)),
                last_error: Some("image x not found"),
                ..Observation::default()
            },
            &UnpackSettings::default(),
        );
        assert_eq!(
            state,
            LookupState::Pending(format!(
                "pulling bundle image {IMAGE} (retrying): image x not found"
            ))
        );
        // No timeout: pending for ever.
        let state = lookup_state(
            IMAGE,
            &Observation {
                elapsed: Some(Duration::from_secs(86_400)),
                ..Observation::default()
            },
            &settings(None),
        );
        assert!(matches!(state, LookupState::Pending(_)));
    }

    #[test]
    fn pulled_is_unpacked_even_after_the_timeout() {
        let observed = Observation {
            pulled: true,
            elapsed: Some(Duration::from_secs(3600)),
            ..Observation::default()
        };
        assert_eq!(
            lookup_state(IMAGE, &observed, &UnpackSettings::default()),
            LookupState::Unpacked
        );
    }

    #[test]
    fn past_the_timeout_the_lookup_fails_then_retries_five_minutes_later() {
        let at = |secs| Observation {
            elapsed: Some(Duration::from_secs(secs)),
            last_error: Some("registry r refused access"),
            ..Observation::default()
        };
        let timeout = Some(Duration::from_secs(120));
        assert!(matches!(
            lookup_state(IMAGE, &at(120), &settings(timeout)),
            LookupState::Pending(_)
        ));
        let LookupState::Failed {
            reason,
            message,
            retry_in,
        } = lookup_state(IMAGE, &at(121), &settings(timeout))
        else {
            panic!("not failed");
        };
        assert_eq!(reason, REASON_DEADLINE_EXCEEDED);
        assert_eq!(retry_in, Duration::from_secs(299));
        assert_eq!(
            message,
            format!(
                "bundle image {IMAGE} was not pulled within the unpack timeout of 2m0s; the last attempt failed: \
                 registry r refused access; check the image and the registry (the timeout is the OperatorGroup \
                 annotation operatorframework.io/bundle-unpack-timeout)"
            )
        );
        assert_eq!(
            lookup_state(IMAGE, &at(420), &settings(timeout)),
            LookupState::Retry
        );
    }

    #[test]
    fn a_content_error_fails_at_once() {
        let observed = Observation {
            elapsed: Some(Duration::from_secs(1)),
            last_error: Some("image x is not a registry+v1 bundle image"),
            last_error_fatal: true,
            ..Observation::default()
        };
        let state = lookup_state(IMAGE, &observed, &UnpackSettings::default());
        assert!(
            matches!(&state, LookupState::Failed { reason, .. } if *reason == REASON_INVALID_BUNDLE),
            "{state:?}"
        );
    }

    fn input<'a>(properties: &'a [Value]) -> LookupInput<'a> {
        LookupInput {
            image: IMAGE,
            identifier: "redis-operator.v0.2.0",
            replaces: "redis-operator.v0.1.0",
            catalog_namespace: "olm",
            catalog_name: "redis",
            properties,
        }
    }

    #[test]
    fn lookups_carry_upstreams_fields_and_conditions_and_map_to_subscription_conditions() {
        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let properties = vec![
            json!({"type": "olm.package", "value": {"packageName": "redis-operator", "version": "0.2.0"}}),
        ];
        let done = lookup(&input(&properties), &LookupState::Unpacked, &now);
        assert_eq!(done.path, IMAGE);
        assert_eq!(done.identifier, "redis-operator.v0.2.0");
        assert_eq!(done.replaces, "redis-operator.v0.1.0");
        assert_eq!(done.catalog_source_ref.name.as_deref(), Some("redis"));
        assert_eq!(done.catalog_source_ref.namespace.as_deref(), Some("olm"));
        assert_eq!(
            serde_json::to_value(&done.catalog_source_ref).unwrap(),
            json!({"name": "redis", "namespace": "olm"}),
            "upstream's resolver sets no apiVersion or kind"
        );
        assert!(done.conditions.is_empty());
        assert_eq!(
            done.properties.as_deref(),
            Some(
                r#"{"properties":[{"type":"olm.package","value":{"packageName":"redis-operator","version":"0.2.0"}}]}"#
            )
        );
        assert_eq!(subscription_condition(&done), None);

        let pending = lookup(
            &input(&properties),
            &LookupState::Pending("pulling x".into()),
            &now,
        );
        assert_eq!(
            pending.conditions[0].type_,
            BundleLookupConditionType::BundleLookupPending
        );
        assert_eq!(pending.conditions[0].reason.as_deref(), Some(REASON_PULLING));
        assert_eq!(
            subscription_condition(&pending),
            Some((false, sub_reason::UNPACKING_IN_PROGRESS, "pulling x".to_owned()))
        );

        let failed = LookupState::Failed {
            reason: REASON_DEADLINE_EXCEEDED,
            message: "too slow".into(),
            retry_in: RETRY_AFTER,
        };
        let failed = lookup(&input(&properties), &failed, &now);
        assert_eq!(
            failed.conditions[0].type_,
            BundleLookupConditionType::BundleLookupFailed
        );
        let (is_failure, reason, message) = subscription_condition(&failed).unwrap();
        assert!(is_failure);
        assert_eq!(reason, sub_reason::BUNDLE_UNPACK_FAILED);
        assert_eq!(
            message,
            "bundle unpacking failed for redis-operator.v0.2.0 - DeadlineExceeded: too slow; a new attempt starts \
             within 5 minutes"
        );
    }

    #[test]
    fn a_missing_catalog_source_holds_the_pull_with_upstreams_reason_and_a_failed_lookup_stops_its_pull() {
        let missing = Observation {
            missing_catalog_source: Some("olm/gone"),
            elapsed: Some(Duration::from_secs(3600)),
            ..Observation::default()
        };
        let state = lookup_state(IMAGE, &missing, &UnpackSettings::default());
        let LookupState::CatalogSourceMissing(message) = &state else {
            panic!("{state:?}");
        };
        assert!(
            message.contains("olm/gone") && message.contains(IMAGE),
            "{message}"
        );
        assert!(!state.stops_pulling());
        let properties = Vec::new();
        let entry = lookup(
            &LookupInput {
                image: IMAGE,
                identifier: "redis-operator.v0.2.0",
                replaces: "",
                catalog_namespace: "olm",
                catalog_name: "gone",
                properties: &properties,
            },
            &state,
            &Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        );
        assert_eq!(
            entry.conditions[0].type_,
            BundleLookupConditionType::BundleLookupPending
        );
        assert_eq!(
            entry.conditions[0].reason.as_deref(),
            Some("CatalogSourceMissing")
        );
        assert_eq!(
            subscription_condition(&entry),
            Some((false, sub_reason::UNPACKING_IN_PROGRESS, message.clone()))
        );
        // A bundle already pulled needs nothing from its CatalogSource.
        let pulled = Observation {
            pulled: true,
            ..missing
        };
        assert_eq!(
            lookup_state(IMAGE, &pulled, &UnpackSettings::default()),
            LookupState::Unpacked
        );

        // Past the timeout the lookup fails and its pull is stopped; while pending it runs.
        let late = Observation {
            pulling: true,
            elapsed: Some(Duration::from_secs(700)),
            ..Observation::default()
        };
        assert!(lookup_state(IMAGE, &late, &UnpackSettings::default()).stops_pulling());
        let early = Observation {
            elapsed: Some(Duration::from_secs(5)),
            ..late
        };
        assert!(!lookup_state(IMAGE, &early, &UnpackSettings::default()).stops_pulling());
    }
}
