use std::collections::BTreeSet;

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use kube::api::ObjectMeta;

use super::*;
use crate::api::v1::{Features, OLMConfigSpec};

fn t(secs: i64) -> Time {
    Time(Timestamp::from_second(secs).unwrap())
}

fn config(disable: Option<bool>, interval: Option<&str>) -> OLMConfig {
    OLMConfig {
        metadata: ObjectMeta {
            name: Some("cluster".into()),
            ..ObjectMeta::default()
        },
        spec: OLMConfigSpec {
            features: Some(Features {
                disable_copied_csvs: disable,
                package_server_sync_interval: interval.map(str::to_owned),
            }),
        },
        status: None,
    }
}

fn namespaces(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn original(copies: &[&str]) -> Original {
    Original {
        namespace: "operators".into(),
        name: "redis-operator.v1.0.0".into(),
        copies: namespaces(copies),
    }
}

fn condition<'a>(status: &'a OLMConfigStatus, type_: &str) -> &'a Condition {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition in {status:?}"))
}

fn decide_with(config: &OLMConfig, flag: bool, originals: &[Original]) -> Decision {
    let active = namespaces(&["default", "operators", "team-a"]);
    decide(
        &Observed {
            config,
            flag,
            active_namespaces: &active,
            originals,
        },
        &t(100),
    )
}

#[test]
fn the_flag_or_the_object_disables_copies_and_no_object_leaves_them_on() {
    assert!(!copies_disabled(false, None));
    assert!(copies_disabled(true, None));
    assert!(!copies_disabled(false, Some(&config(None, None))));
    assert!(!copies_disabled(false, Some(&config(Some(false), None))));
    assert!(copies_disabled(false, Some(&config(Some(true), None))));
    assert!(copies_disabled(true, Some(&config(Some(false), None))));
}

#[test]
fn enabled_with_every_copy_present_is_upstreams_enabled_condition() {
    let d = decide_with(&config(None, None), false, &[original(&["default", "team-a"])]);
    let c = condition(&d.status, DISABLED_COPIED_CSVS);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        (
            "False",
            REASON_ENABLED,
            "Copied CSVs are enabled and present across the cluster"
        )
    );
    assert!(d.out_of_line.is_empty());
    assert!(d.changed);
}

#[test]
fn enabled_with_a_copy_missing_says_so_and_names_the_csv_to_look_at_again() {
    let d = decide_with(&config(Some(false), None), false, &[original(&["default"])]);
    let c = condition(&d.status, DISABLED_COPIED_CSVS);
    assert_eq!(c.reason, REASON_ENABLED);
    assert_eq!(
        c.message,
        "Copied CSVs are enabled and at least one copied CSVs is missing"
    );
    assert_eq!(d.out_of_line, ["operators/redis-operator.v1.0.0"]);
}

#[test]
fn disabled_is_true_once_no_copy_is_left_and_false_while_one_is() {
    let left = decide_with(&config(Some(true), None), false, &[original(&["default"])]);
    let c = condition(&left.status, DISABLED_COPIED_CSVS);
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", REASON_DISABLED));
    assert!(c.message.contains("at least one unexpected copied CSV was found"));
    let clean = decide_with(&config(Some(true), None), false, &[original(&[])]);
    let c = condition(&clean.status, DISABLED_COPIED_CSVS);
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", REASON_DISABLED));
    assert_eq!(
        c.message,
        "Copied CSVs are disabled and no unexpected copied CSVs were found for operators installed in AllNamespace mode"
    );
    assert!(clean.out_of_line.is_empty());
}

#[test]
fn the_flag_overrides_an_enabling_object_and_the_message_names_the_fix() {
    let d = decide_with(&config(Some(false), None), true, &[]);
    let c = condition(&d.status, DISABLED_COPIED_CSVS);
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", REASON_DISABLED));
    assert!(c.message.contains("--disable-copied-csvs"), "{}", c.message);
    assert!(c.message.contains("remove the flag"), "{}", c.message);
    // Both agreeing: upstream's message, unchanged.
    let d = decide_with(&config(Some(true), None), true, &[]);
    assert!(
        !condition(&d.status, DISABLED_COPIED_CSVS)
            .message
            .contains("--disable")
    );
}

#[test]
fn an_unchanged_observation_keeps_its_time_and_is_not_written_again() {
    let mut stored = config(None, None);
    let first = decide_with(&stored, false, &[]);
    stored.status = Some(first.status.clone());
    let active = namespaces(&["default"]);
    let again = decide(
        &Observed {
            config: &stored,
            flag: false,
            active_namespaces: &active,
            originals: &[],
        },
        &t(500),
    );
    assert!(!again.changed);
    assert_eq!(again.status, first.status);
    assert_eq!(
        condition(&again.status, DISABLED_COPIED_CSVS).last_transition_time,
        t(100)
    );
}

#[test]
fn the_sync_interval_is_reported_while_set_and_the_condition_goes_with_the_field() {
    let mut stored = config(None, Some("1h30m"));
    let d = decide_with(&stored, false, &[]);
    let c = condition(&d.status, SYNC_INTERVAL_IGNORED);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", REASON_NO_PACKAGE_SERVER)
    );
    assert!(
        c.message
            .contains("spec.features.packageServerSyncInterval (1h30m)")
    );
    assert!(c.message.contains("Remove the field"));
    stored.status = Some(d.status);
    stored.spec.features = None;
    let d = decide_with(&stored, false, &[]);
    assert!(d.changed);
    assert!(
        d.status
            .conditions
            .iter()
            .all(|c| c.type_ != SYNC_INTERVAL_IGNORED)
    );
}
