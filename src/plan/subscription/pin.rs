//! pin: what a Subscription's `olm-rs.io/` annotations ask of its installs and upgrades, read
//! strictly (a value olm-rs cannot read is an error naming the annotation and the fix, never
//! ignored), and the history of the CSVs it installed.
//!
//! Annotations, not spec fields, so that the YAML stays portable: OLM v0 ignores annotations it
//! does not know, and a Subscription written for olm-rs applies unchanged to an upstream cluster
//! (where it simply is not pinned).
//!
//! | annotation | value | effect |
//! |---|---|---|
//! | [`VERSION_CEILING`] `olm-rs.io/version-ceiling` | a version, `1.0.0` (a leading `v` is allowed) | no bundle above it is installed: the first install takes the newest entry at or below it, an upgrade only hops to entries at or below it. A newer bundle is reported as `state: UpgradeAvailable` with `UpgradeHeld=True` reason `VersionPinned`, and no InstallPlan is made. |
//! | [`UPGRADE_APPROVAL`] `olm-rs.io/upgrade-approval` | `Manual` or `Automatic` | the approval of the InstallPlans that *upgrade* (replace an installed CSV); the first install keeps `spec.installPlanApproval`. `installPlanApproval: Automatic` with `upgrade-approval: Manual` installs at once, then holds every upgrade for `kubectl olm approve`. |
//! | [`INSTALLED_CSVS`] `olm-rs.io/installed-csvs` | written by the controller | the CSVs this Subscription installed, oldest first, comma separated (at most [`HISTORY_MAX`]); `kubectl olm rollback` reads it. |
//!
//! Any other `olm-rs.io/` annotation is refused ([`PinError::Unknown`]): a misspelt ceiling
//! must not pin nothing, silently.
//!
//! `UpgradeAvailable` is upstream's declared state for "a newer bundle exists" (consoles show
//! it as *Upgrade available*); upstream stopped setting it, and olm-rs sets it only for a
//! pinned Subscription, whose `currentCSV` stays the installed CSV.

use std::collections::BTreeMap;

use semver::Version;
use serde_json::Value;

use crate::api::v1alpha1::{API_VERSION, Approval, Subscription};

/// The annotation holding a Subscription's version ceiling.
pub const VERSION_CEILING: &str = "olm-rs.io/version-ceiling";
/// The annotation holding the approval of a Subscription's upgrades.
pub const UPGRADE_APPROVAL: &str = "olm-rs.io/upgrade-approval";
/// The annotation holding the CSVs a Subscription installed (kept by the controller).
pub const INSTALLED_CSVS: &str = "olm-rs.io/installed-csvs";
/// How many CSVs [`INSTALLED_CSVS`] keeps.
pub const HISTORY_MAX: usize = 10;

/// What the annotations ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins {
    /// The highest version to install.
    pub ceiling: Option<Version>,
    /// The approval of upgrade plans, when it differs from `spec.installPlanApproval`'s rule.
    pub upgrade_approval: Option<Approval>,
}

/// An annotation olm-rs cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    /// [`VERSION_CEILING`] is not a version.
    #[error(
        "annotation {VERSION_CEILING} {value:?} is not a semantic version ({problem}); nothing is \
         installed or upgraded until it is fixed: set it to a version such as 1.0.0, or remove it"
    )]
    Ceiling {
        /// The value.
        value: String,
        /// The parser's complaint.
        problem: String,
    },
    /// An `olm-rs.io/` annotation olm-rs does not know (a misspelt name would otherwise pin
    /// nothing, silently).
    #[error(
        "annotation {key} is not one olm-rs knows ({VERSION_CEILING}, {UPGRADE_APPROVAL}, \
         {INSTALLED_CSVS}); nothing is installed or upgraded until it is fixed: correct its name, or \
         remove it"
    )]
    Unknown {
        /// The annotation.
        key: String,
    },
    /// [`UPGRADE_APPROVAL`] is neither `Automatic` nor `Manual`.
    #[error(
        "annotation {UPGRADE_APPROVAL} {value:?} is neither Automatic nor Manual; nothing is \
         installed or upgraded until it is fixed: set it to Manual (upgrades wait for approval), \
         Automatic, or remove it"
    )]
    UpgradeApproval {
        /// The value.
        value: String,
    },
}

impl PinError {
    /// What is wrong, in one sentence.
    pub fn cause(&self) -> String {
        match self {
            PinError::Ceiling { value, problem } => {
                format!("annotation {VERSION_CEILING} {value:?} is not a semantic version ({problem})")
            }
            PinError::UpgradeApproval { value } => {
                format!("annotation {UPGRADE_APPROVAL} {value:?} is neither Automatic nor Manual")
            }
            PinError::Unknown { key } => format!(
                "annotation {key} is not one olm-rs knows ({VERSION_CEILING}, {UPGRADE_APPROVAL}, \
                 {INSTALLED_CSVS})"
            ),
        }
    }

    /// What to do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            PinError::Ceiling { .. } => "set it to a version such as 1.0.0, or remove it",
            PinError::UpgradeApproval { .. } => {
                "set it to Manual (upgrades wait for approval), Automatic, or remove it"
            }
            PinError::Unknown { .. } => "correct its name, or remove it",
        }
    }
}

/// The annotations of `sub`, read.
///
/// # Errors
/// The first annotation that does not read, naming it, its value and the fix.
pub fn pins(sub: &Subscription) -> Result<Pins, PinError> {
    let annotations = sub.metadata.annotations.as_ref();
    if let Some(key) = annotations.into_iter().flatten().map(|(k, _)| k).find(|k| {
        k.starts_with("olm-rs.io/")
            && ![VERSION_CEILING, UPGRADE_APPROVAL, INSTALLED_CSVS].contains(&k.as_str())
    }) {
        return Err(PinError::Unknown { key: key.clone() });
    }
    let get = |key: &str| annotations.and_then(|a| a.get(key)).map(|v| v.trim().to_owned());
    let ceiling = match get(VERSION_CEILING) {
        None => None,
        Some(value) => {
            let bare = value.strip_prefix('v').unwrap_or(&value);
            Some(Version::parse(bare).map_err(|e| PinError::Ceiling {
                value: value.clone(),
                problem: e.to_string(),
            })?)
        }
    };
    let upgrade_approval = match get(UPGRADE_APPROVAL).as_deref() {
        None => None,
        Some("Manual") => Some(Approval::Manual),
        Some("Automatic") => Some(Approval::Automatic),
        Some(other) => {
            return Err(PinError::UpgradeApproval {
                value: other.to_owned(),
            });
        }
    };
    Ok(Pins {
        ceiling,
        upgrade_approval,
    })
}

/// A newer bundle that the ceiling keeps out: reported, never planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedUpgrade {
    /// The installed CSV.
    pub installed: String,
    /// The bundle the next upgrade would install without the ceiling.
    pub available: String,
    /// Its version.
    pub version: Version,
    /// The ceiling.
    pub ceiling: Version,
}

impl PinnedUpgrade {
    /// The `UpgradeHeld` message: what is available, what holds it, and how to take it.
    pub fn message(&self) -> String {
        format!(
            "{} ({}) is available but the annotation {VERSION_CEILING} keeps this Subscription at \
             or below {}; {} stays installed: raise or remove the annotation to upgrade",
            self.available, self.version, self.ceiling, self.installed
        )
    }

    /// The bundle held back and the ceiling holding it, read back from a [`PinnedUpgrade::message`]
    /// (an `UpgradeHeld` condition's message); `None` for a message of any other shape.
    pub fn read_message(message: &str) -> Option<(String, String)> {
        let (available, rest) = message.split_once(" (")?;
        let (_, after) = rest.split_once(") is available but the annotation ")?;
        let (_, at) = after.split_once(" at or below ")?;
        let (ceiling, _) = at.split_once("; ")?;
        (!available.is_empty() && !ceiling.is_empty()).then(|| (available.to_owned(), ceiling.to_owned()))
    }
}

/// The CSVs `sub` installed, oldest first ([`INSTALLED_CSVS`]).
pub fn history(sub: &Subscription) -> Vec<String> {
    sub.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(INSTALLED_CSVS))
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The history after `installed` is recorded: appended unless it is already the last entry,
/// cut to the newest [`HISTORY_MAX`]. A CSV installed again (a rollback) is appended again,
/// so the list reads as the order things happened.
pub fn record(mut history: Vec<String>, installed: &str) -> Vec<String> {
    if history.last().map(String::as_str) != Some(installed) {
        history.push(installed.to_owned());
    }
    let excess = history.len().saturating_sub(HISTORY_MAX);
    history.drain(..excess);
    history
}

/// The server-side apply that records `installed` in `sub`'s history, or `None` when it is
/// recorded already. It also carries the Operator component label the controller owns on the
/// same object (`label`), so the apply keeps it (an apply drops the fields its manager owned
/// and left out).
pub fn history_apply(
    sub: &Subscription,
    namespace: &str,
    installed: &str,
    label: Option<&str>,
) -> Option<Value> {
    let before = history(sub);
    let after = record(before.clone(), installed);
    if after == before {
        return None;
    }
    let labels: BTreeMap<&str, &str> = label.into_iter().map(|k| (k, "")).collect();
    Some(serde_json::json!({
        "apiVersion": API_VERSION,
        "kind": "Subscription",
        "metadata": {
            "name": sub.metadata.name.clone().unwrap_or_default(),
            "namespace": namespace,
            "labels": labels,
            "annotations": {INSTALLED_CSVS: after.join(",")},
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(annotations: &[(&str, &str)]) -> Subscription {
        let mut s: Subscription = serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "redis", "namespace": "ns"},
            "spec": {"name": "redis-operator", "source": "c", "sourceNamespace": "olm"},
        }))
        .expect("a Subscription");
        s.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        s
    }

    #[test]
    fn no_annotation_pins_nothing() {
        assert_eq!(pins(&sub(&[])), Ok(Pins::default()));
    }

    #[test]
    fn a_ceiling_and_an_upgrade_approval_are_read() {
        let p = pins(&sub(&[(VERSION_CEILING, "v1.0.0"), (UPGRADE_APPROVAL, "Manual")])).unwrap();
        assert_eq!(p.ceiling, Some(Version::new(1, 0, 0)));
        assert_eq!(p.upgrade_approval, Some(Approval::Manual));
    }

    #[test]
    fn an_unreadable_ceiling_names_the_annotation_its_value_and_the_fix() {
        let err = pins(&sub(&[(VERSION_CEILING, "1.0")])).unwrap_err().to_string();
        assert!(
            err.starts_with("annotation olm-rs.io/version-ceiling \"1.0\" is not a semantic version ("),
            "{err}"
        );
        assert!(
            err.ends_with("set it to a version such as 1.0.0, or remove it"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_upgrade_approval_is_refused_not_ignored() {
        let err = pins(&sub(&[(UPGRADE_APPROVAL, "manual")])).unwrap_err();
        assert_eq!(
            err,
            PinError::UpgradeApproval {
                value: "manual".into()
            }
        );
        assert!(
            err.to_string()
                .contains("olm-rs.io/upgrade-approval \"manual\" is neither")
        );
    }

    #[test]
    fn a_misspelt_olm_rs_annotation_is_refused_not_ignored() {
        let err = pins(&sub(&[("olm-rs.io/version-cieling", "1.0.0")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "annotation olm-rs.io/version-cieling is not one olm-rs knows (olm-rs.io/version-ceiling, \
             olm-rs.io/upgrade-approval, olm-rs.io/installed-csvs); nothing is installed or upgraded \
             until it is fixed: correct its name, or remove it"
        );
        // Other prefixes are not olm-rs's business.
        assert_eq!(pins(&sub(&[("example.com/x", "y")])), Ok(Pins::default()));
    }

    #[test]
    fn a_held_upgrade_message_reads_back_as_its_bundle_and_ceiling() {
        let held = PinnedUpgrade {
            installed: "redis-operator.v1.0.0".into(),
            available: "redis-operator.v1.1.0".into(),
            version: Version::new(1, 1, 0),
            ceiling: Version::new(1, 0, 0),
        };
        assert_eq!(
            PinnedUpgrade::read_message(&held.message()),
            Some(("redis-operator.v1.1.0".into(), "1.0.0".into()))
        );
        assert_eq!(
            PinnedUpgrade::read_message("waiting for redis-operator.v1.0.0 (Installing)"),
            None
        );
        assert_eq!(PinnedUpgrade::read_message(""), None);
    }

    #[test]
    fn the_history_appends_new_csvs_once_and_keeps_the_newest() {
        let h = record(vec!["a.v1".into()], "a.v2");
        assert_eq!(h, ["a.v1", "a.v2"]);
        assert_eq!(record(h.clone(), "a.v2"), h);
        // A rollback is history too.
        assert_eq!(record(h, "a.v1"), ["a.v1", "a.v2", "a.v1"]);
        let long: Vec<String> = (0..HISTORY_MAX).map(|i| format!("a.v{i}")).collect();
        let cut = record(long, "a.new");
        assert_eq!(cut.len(), HISTORY_MAX);
        assert_eq!(cut.first().map(String::as_str), Some("a.v1"));
        assert_eq!(cut.last().map(String::as_str), Some("a.new"));
    }

    #[test]
    fn the_history_apply_keeps_the_label_and_is_skipped_when_recorded() {
        let s = sub(&[(INSTALLED_CSVS, "redis.v1")]);
        assert_eq!(history(&s), ["redis.v1"]);
        assert_eq!(history_apply(&s, "ns", "redis.v1", Some("l")), None);
        let apply = history_apply(&s, "ns", "redis.v2", Some("redis-operator.ns")).unwrap();
        assert_eq!(
            apply["metadata"]["annotations"][INSTALLED_CSVS],
            "redis.v1,redis.v2"
        );
        assert_eq!(apply["metadata"]["labels"]["redis-operator.ns"], "");
    }
}
