use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::api::v1alpha1::{InstallPlanConditionReason, InstallPlanConditionType, SubscriptionConditionType};

fn t(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).unwrap())
}

fn sub(status: ConditionStatus, reason: &str, message: &str) -> SubscriptionCondition {
    SubscriptionCondition {
        type_: SubscriptionConditionType::ResolutionFailed,
        status,
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: None,
        last_transition_time: None,
    }
}

#[test]
fn a_new_condition_type_is_added_with_both_times_set_to_now() {
    let mut conditions = vec![];
    let change = set_condition(&mut conditions, sub(ConditionStatus::True, "A", "m"), &t(10));
    assert_eq!(change, ConditionChange::Added);
    assert_eq!(conditions[0].last_transition_time, Some(t(10)));
    assert_eq!(conditions[0].last_heartbeat_time, Some(t(10)));
}

#[test]
fn setting_the_same_observation_again_keeps_every_timestamp() {
    let mut conditions = vec![];
    set_condition(&mut conditions, sub(ConditionStatus::True, "A", "m"), &t(10));
    let before = conditions.clone();
    let change = set_condition(&mut conditions, sub(ConditionStatus::True, "A", "m"), &t(99));
    assert_eq!(change, ConditionChange::Unchanged);
    assert_eq!(conditions, before);
}

#[test]
fn a_new_message_with_the_same_status_keeps_the_transition_time_and_bumps_the_heartbeat() {
    let mut conditions = vec![];
    set_condition(&mut conditions, sub(ConditionStatus::True, "A", "m"), &t(10));
    let change = set_condition(&mut conditions, sub(ConditionStatus::True, "B", "n"), &t(20));
    assert_eq!(change, ConditionChange::Updated);
    assert_eq!(conditions.len(), 1);
    assert_eq!(conditions[0].reason.as_deref(), Some("B"));
    assert_eq!(conditions[0].last_transition_time, Some(t(10)));
    assert_eq!(conditions[0].last_heartbeat_time, Some(t(20)));
}

#[test]
fn a_flipped_status_moves_the_transition_time() {
    let mut conditions = vec![];
    set_condition(&mut conditions, sub(ConditionStatus::True, "A", "m"), &t(10));
    let change = set_condition(&mut conditions, sub(ConditionStatus::False, "A", "m"), &t(30));
    assert_eq!(change, ConditionChange::Transitioned);
    assert_eq!(conditions[0].last_transition_time, Some(t(30)));
}

#[test]
fn install_plan_conditions_bump_their_update_time_on_change() {
    let cond = |status, reason| InstallPlanCondition {
        type_: Some(InstallPlanConditionType::Installed),
        status: Some(status),
        last_update_time: None,
        last_transition_time: None,
        reason: Some(reason),
        message: None,
    };
    let mut conditions = vec![];
    set_condition(
        &mut conditions,
        cond(
            ConditionStatus::False,
            InstallPlanConditionReason::InstallCheckFailed,
        ),
        &t(1),
    );
    set_condition(
        &mut conditions,
        cond(
            ConditionStatus::False,
            InstallPlanConditionReason::InstallComponentFailed,
        ),
        &t(2),
    );
    assert_eq!(conditions[0].last_transition_time, Some(t(1)));
    assert_eq!(conditions[0].last_update_time, Some(t(2)));
}

#[test]
fn metav1_conditions_see_a_new_observed_generation_as_a_change() {
    let mut conditions = vec![];
    let c = |generation| {
        metav1_condition(
            "MultipleOperatorGroup",
            ConditionStatus::True,
            "MultipleOperatorGroupsFound",
            "two",
            Some(generation),
            &t(0),
        )
    };
    set_condition(&mut conditions, c(1), &t(5));
    assert_eq!(
        set_condition(&mut conditions, c(1), &t(6)),
        ConditionChange::Unchanged
    );
    assert_eq!(
        set_condition(&mut conditions, c(2), &t(7)),
        ConditionChange::Updated
    );
    assert_eq!(conditions[0].last_transition_time, t(5));
    assert_eq!(conditions[0].observed_generation, Some(2));
}

#[test]
fn removing_a_condition_by_type_reports_whether_one_was_there() {
    let mut conditions = vec![];
    set_condition(&mut conditions, sub(ConditionStatus::True, "A", "m"), &t(10));
    assert!(!remove_condition(&mut conditions, "CatalogSourcesUnhealthy"));
    assert!(remove_condition(&mut conditions, "ResolutionFailed"));
    assert!(conditions.is_empty());
}

#[test]
fn statuses_differing_only_in_timestamps_are_unchanged() {
    let mut old = ClusterServiceVersionStatus::default();
    set_csv_phase(
        &mut old,
        CsvPhase::Pending,
        CsvReason::RequirementsUnknown,
        "m",
        &t(1),
    );
    let mut new = old.clone();
    new.last_update_time = Some(t(50));
    new.conditions[0].last_transition_time = Some(t(50));
    assert!(status_unchanged(&old, &new));
    new.message = Some("other".into());
    assert!(!status_unchanged(&old, &new));
}

#[test]
fn csv_history_grows_only_when_phase_or_reason_changes() {
    let mut s = ClusterServiceVersionStatus::default();
    assert!(set_csv_phase(
        &mut s,
        CsvPhase::Pending,
        CsvReason::RequirementsUnknown,
        "a",
        &t(1)
    ));
    assert!(set_csv_phase(
        &mut s,
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        "b",
        &t(2)
    ));
    // same phase and reason, new message: status updated, history not appended.
    assert!(set_csv_phase(
        &mut s,
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        "c",
        &t(3)
    ));
    assert!(!set_csv_phase(
        &mut s,
        CsvPhase::Pending,
        CsvReason::RequirementsNotMet,
        "c",
        &t(4)
    ));
    assert_eq!(s.conditions.len(), 2);
    assert_eq!(s.message.as_deref(), Some("c"));
    assert_eq!(s.last_update_time, Some(t(3)));
    // the phase never changed after t=1.
    assert_eq!(s.last_transition_time, Some(t(1)));
    assert!(set_csv_phase(
        &mut s,
        CsvPhase::InstallReady,
        CsvReason::AllRequirementsMet,
        "d",
        &t(5)
    ));
    assert_eq!(s.last_transition_time, Some(t(5)));
    assert_eq!(
        s.conditions.last().and_then(|c| c.phase.clone()),
        Some(CsvPhase::InstallReady)
    );
}

#[test]
fn csv_history_keeps_only_the_newest_twenty_entries() {
    let mut s = ClusterServiceVersionStatus::default();
    for i in 0..30 {
        let reason = if i % 2 == 0 {
            CsvReason::InstallWaiting
        } else {
            CsvReason::InstallSucceeded
        };
        set_csv_phase(&mut s, CsvPhase::Installing, reason, format!("{i}"), &t(i));
    }
    assert_eq!(s.conditions.len(), CSV_CONDITIONS_LENGTH_LIMIT);
    assert_eq!(s.conditions[0].message.as_deref(), Some("10"));
    assert_eq!(s.conditions[19].message.as_deref(), Some("29"));
}
