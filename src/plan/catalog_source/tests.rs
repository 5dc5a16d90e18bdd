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
            poll: Some(Duration::from_secs(600)),
            interval_problem: None,
        }
    );
    assert_eq!(
        plan_source(&grpc(Some("r:1"), None, None)),
        SourcePlan::Grpc {
            address: "r:1".into(),
            poll: None,
            interval_problem: None,
        }
    );
    let SourcePlan::Image(plan) = plan_source(&grpc(Some("r:1"), Some("quay.io/x/index:v1"), None)) else {
        panic!()
    };
    assert_eq!(plan.image, "quay.io/x/index:v1");
}

#[test]
fn an_address_interval_is_a_go_duration_and_a_bad_one_means_the_default_and_says_so() {
    // The same rule as for an image: a Go duration ("1.5h" yes, a bare "30" no).
    let SourcePlan::Grpc { poll, .. } = plan_source(&grpc(Some("r:1"), None, Some("1.5h"))) else {
        panic!()
    };
    assert_eq!(poll, Some(Duration::from_secs(5400)));
    for bad in ["soon", "30"] {
        for plan in [
            plan_source(&grpc(Some("r:1"), None, Some(bad))),
            plan_source(&http(Some("https://c"), Some(bad))),
        ] {
            let (SourcePlan::Grpc {
                poll,
                interval_problem,
                ..
            }
            | SourcePlan::Http {
                poll,
                interval_problem,
                ..
            }) = plan
            else {
                panic!("{plan:?}")
            };
            assert_eq!(poll, Some(DEFAULT_POLL), "{bad}");
            let m = interval_problem.expect("the problem is reported");
            assert!(
                m.contains("registryPoll.interval") && m.contains(bad) && m.contains("15m0s"),
                "{m}"
            );
        }
    }
}

#[test]
fn a_served_address_source_with_a_bad_interval_is_ready_with_reason_invalid_interval() {
    assert_eq!(source_status(Ok(&[]), None), (None, None));
    let (r, m) = source_status(Ok(&[]), Some("bad interval"));
    assert_eq!(
        (r, m.as_deref()),
        (Some("InvalidIntervalError"), Some("bad interval"))
    );
    let (r, m) = source_status(Ok(&["entry a.v2 has no bundle".into()]), Some("bad interval"));
    assert_eq!(r, Some("InvalidIntervalError"));
    let m = m.unwrap();
    assert!(m.starts_with("bad interval; catalog served without"), "{m}");
    let (r, m) = source_status(Err(("RegistryServerError", "down")), Some("bad interval"));
    assert_eq!(
        (r, m.as_deref()),
        (Some("RegistryServerError"), Some("down; bad interval"))
    );
}

fn http(address: Option<&str>, interval: Option<&str>) -> CatalogSource {
    let mut c = grpc(address, None, interval);
    c.spec.source_type = SourceType::Other("http".into());
    c
}

#[test]
fn an_http_source_needs_an_http_url_and_parses_its_interval() {
    assert_eq!(
        plan_source(&http(Some(" https://catalogd.svc/catalogs/hub "), Some("5m"))),
        SourcePlan::Http {
            url: "https://catalogd.svc/catalogs/hub".into(),
            poll: Some(Duration::from_secs(300)),
            interval_problem: None,
        }
    );
    assert_eq!(
        plan_source(&http(Some("http://127.0.0.1:8080"), None)),
        SourcePlan::Http {
            url: "http://127.0.0.1:8080".into(),
            poll: None,
            interval_problem: None,
        }
    );
    let SourcePlan::Invalid(r, m) = plan_source(&http(None, None)) else {
        panic!()
    };
    assert_eq!(r, "SpecInvalidError");
    assert!(m.contains("sourceType http but no spec.address"), "{m}");
    let SourcePlan::Invalid(_, m) = plan_source(&http(Some("catalogd:8080"), None)) else {
        panic!()
    };
    assert!(m.contains("not an https:// URL"), "{m}");
}

#[test]
fn an_http_source_refuses_the_fields_it_would_ignore() {
    let mut c = http(Some("https://c"), None);
    c.spec.image = Some("quay.io/x/index:v1".into());
    c.spec.secrets = vec!["pull".into()];
    let SourcePlan::Invalid(r, m) = plan_source(&c) else {
        panic!()
    };
    assert_eq!(r, "SpecInvalidError");
    assert!(
        m.contains("sets spec.image, spec.secrets; remove them") && m.contains("sourceType grpc"),
        "{m}"
    );
    let mut c = http(Some("https://c"), None);
    c.spec.grpc_pod_config = Some(Default::default());
    let SourcePlan::Invalid(_, m) = plan_source(&c) else {
        panic!()
    };
    assert!(m.contains("sets spec.grpcPodConfig; remove it"), "{m}");
}

#[test]
fn an_http_catalog_remembers_its_url_read_time_and_last_modified() {
    use crate::catalog::load::CatalogOrigin;
    let url = "https://c/catalogs/hub";
    let origin = CatalogOrigin::Http {
        url: url.into(),
        read_at: 1_700_000_000,
        last_modified: Some("Tue, 14 Nov 2023 22:13:20 GMT".into()),
    };
    assert_eq!(
        origin.http_read(url),
        Some((1_700_000_000, Some("Tue, 14 Nov 2023 22:13:20 GMT")))
    );
    // Another URL (spec.address changed), or another kind of source: not read from there.
    assert_eq!(origin.http_read("https://c/catalogs/other"), None);
    assert_eq!(origin.http_read("https://c/catalogs/hu"), None);
    assert_eq!(origin.registry_read_at(url), None);
    let without = CatalogOrigin::Http {
        url: url.into(),
        read_at: 5,
        last_modified: None,
    };
    assert_eq!(without.http_read(url), Some((5, None)));
    let registry = CatalogOrigin::Registry {
        address: "10.0.0.1:50051".into(),
        read_at: 7,
    };
    assert_eq!(registry.registry_read_at("10.0.0.1:50051"), Some(7));
    assert_eq!(registry.registry_read_at("10.0.0.2:50051"), None);
    let kept = http_unreachable_message(url, "connection refused", Some("2026-01-01T00:00:00Z"));
    assert!(
        kept.contains("still serving the catalog read from it at 2026"),
        "{kept}"
    );
    let none = http_unreachable_message(url, "404", None);
    assert!(
        none.contains("no catalog has been read") && none.contains("base URL"),
        "{none}"
    );
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

fn image_cs(interval: Option<&str>) -> CatalogSource {
    let mut spec = serde_json::json!({
        "sourceType": "grpc",
        "image": "quay.io/operatorhubio/catalog:latest",
        "secrets": ["pull"],
    });
    if let Some(i) = interval {
        spec["updateStrategy"] = serde_json::json!({"registryPoll": {"interval": i}});
    }
    CatalogSource::new("c", serde_json::from_value(spec).unwrap())
}

#[test]
fn grpc_with_an_image_is_pulled_and_polled_at_its_interval() {
    let SourcePlan::Image(plan) = plan_source(&image_cs(Some("1h30m"))) else {
        panic!()
    };
    assert_eq!(plan.image, "quay.io/operatorhubio/catalog:latest");
    assert_eq!(plan.secrets, ["pull"]);
    assert_eq!(plan.poll, Some(Duration::from_secs(5400)));
    assert_eq!(plan.interval_problem, None);
    let SourcePlan::Image(plan) = plan_source(&image_cs(None)) else {
        panic!()
    };
    assert_eq!(plan.poll, None);
}

#[test]
fn an_invalid_interval_means_the_default_15m_and_says_so() {
    for bad in ["often", "30", "-5m", "0s"] {
        let SourcePlan::Image(plan) = plan_source(&image_cs(Some(bad))) else {
            panic!()
        };
        assert_eq!(plan.poll, Some(DEFAULT_POLL), "{bad}");
        let m = plan.interval_problem.unwrap();
        assert!(
            m.starts_with("error parsing spec.updateStrategy.registryPoll.interval"),
            "{m}"
        );
        assert!(m.contains("15m0s"), "{m}");
    }
}

#[test]
fn intervals_are_go_durations() {
    assert_eq!(parse_go_duration("45m"), Some(Duration::from_secs(2700)));
    assert_eq!(parse_go_duration("1h30m"), Some(Duration::from_secs(5400)));
    assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
    assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
    for bad in ["", "30", "m", "1d", "1h 30m", "0s"] {
        assert_eq!(parse_go_duration(bad), None, "{bad:?}");
    }
}

#[test]
fn polls_are_due_when_never_made_or_after_the_interval() {
    let hour = Some(Duration::from_secs(3600));
    assert!(poll_due(None, hour, false));
    assert!(poll_due(None, None, true));
    assert!(!poll_due(Some(Duration::from_secs(60)), hour, true));
    assert!(poll_due(Some(Duration::from_secs(3600)), hour, true));
    assert!(!poll_due(Some(Duration::from_secs(1 << 20)), None, true));
    assert!(poll_due(Some(Duration::from_secs(1)), None, false));
}

#[test]
fn image_status_keeps_ready_on_a_failed_poll_and_fails_only_without_content() {
    let SourcePlan::Image(plan) = plan_source(&image_cs(Some("10m"))) else {
        panic!()
    };
    let ok = image_status(&plan, Some("sha256:a"), None, false, &[]);
    assert_eq!((ok.state, ok.reason, ok.message), ("READY", None, None));
    let stale = image_status(&plan, Some("sha256:a"), Some("registry down"), false, &[]);
    assert_eq!(stale.state, "READY");
    let m = stale.message.unwrap();
    assert!(
        m.contains(
            "serving quay.io/operatorhubio/catalog:latest (sha256:a); the last poll failed: registry down"
        ),
        "{m}"
    );
    let failed = image_status(&plan, None, Some("not found"), false, &[]);
    assert_eq!(
        (failed.state, failed.reason, failed.message.as_deref()),
        (
            "TRANSIENT_FAILURE",
            Some("RegistryServerError"),
            Some("not found")
        )
    );
    let first = image_status(&plan, None, None, true, &[]);
    assert_eq!(first.state, "CONNECTING");
    let SourcePlan::Image(bad) = plan_source(&image_cs(Some("soon"))) else {
        panic!()
    };
    let with_default = image_status(&bad, Some("sha256:a"), None, false, &[]);
    assert_eq!(with_default.reason, Some("InvalidIntervalError"));
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

#[test]
fn a_grpc_pod_config_is_reported_as_having_no_effect() {
    let mut source = grpc(None, Some("quay.io/x/index:v1"), None);
    assert_eq!(unapplied_spec_note(&source), None);
    source.spec.grpc_pod_config =
        serde_json::from_value(serde_json::json!({"nodeSelector": {"a": "b"}})).unwrap();
    let note = unapplied_spec_note(&source).expect("a note");
    assert!(
        note.contains("spec.grpcPodConfig") && note.contains("remove"),
        "{note}"
    );
    assert_eq!(
        with_note(Some("m".into()), Some(note.clone())),
        Some(format!("m; {note}"))
    );
    assert_eq!(with_note(None, Some(note.clone())), Some(note));
    assert_eq!(with_note(Some("m".into()), None), Some("m".into()));
}

// --- Timestamps (module docs, "Timestamps, as upstream's can be observed") ---

fn at(second: i64, millis: i64) -> Timestamp {
    Timestamp::from_millisecond(second * 1000 + millis).unwrap()
}

fn time(second: i64) -> Time {
    Time(at(second, 0))
}

fn seen_cm(rv: &str) -> ConfigMapSeen {
    ConfigMapSeen {
        name: "cm".into(),
        namespace: "ns".into(),
        uid: Some("u1".into()),
        resource_version: rv.into(),
    }
}

fn reference(rv: &str, second: i64) -> ConfigMapResourceReference {
    ConfigMapResourceReference {
        name: "cm".into(),
        namespace: "ns".into(),
        uid: Some("u1".into()),
        resource_version: Some(rv.into()),
        last_update_time: Some(time(second)),
    }
}

#[test]
fn a_config_map_reference_is_kept_while_it_matches_and_renewed_a_second_later_at_the_earliest() {
    // First sight: recorded now.
    let first = config_map_reference(None, seen_cm("10"), at(100, 300));
    assert!(first.value.renewed);
    assert_eq!(first.value.reference.resource_version.as_deref(), Some("10"));
    assert_eq!(first.value.reference.last_update_time, Some(Time(at(100, 300))));
    assert_eq!(first.again, None);

    // The same ConfigMap later: the reference (and its time) is kept.
    let same = config_map_reference(Some(&reference("10", 100)), seen_cm("10"), at(150, 0));
    assert!(!same.value.renewed);
    assert_eq!(same.value.reference, reference("10", 100));
    assert_eq!(same.again, None);

    // Changed in the second the previous one was recorded: kept, and looked at again just after
    // that second ends (700 ms left, plus the margin).
    let early = config_map_reference(Some(&reference("10", 100)), seen_cm("11"), at(100, 300));
    assert!(!early.value.renewed);
    assert_eq!(early.value.reference, reference("10", 100));
    assert_eq!(early.again, Some(Duration::from_millis(750)));

    // A second later it is recorded, later than the previous lastUpdateTime.
    let later = config_map_reference(Some(&reference("10", 100)), seen_cm("11"), at(101, 50));
    assert!(later.value.renewed);
    assert_eq!(later.value.reference.resource_version.as_deref(), Some("11"));
    assert_eq!(later.value.reference.last_update_time, Some(Time(at(101, 50))));

    // A ConfigMap replaced under the same name (new uid, same resourceVersion) is new too.
    let mut replaced = seen_cm("10");
    replaced.uid = Some("u2".into());
    assert!(
        config_map_reference(Some(&reference("10", 100)), replaced, at(120, 0))
            .value
            .renewed
    );
}

fn ready_since(second: i64) -> GrpcConnectionState {
    GrpcConnectionState {
        address: None,
        last_observed_state: connection_state::READY.into(),
        last_connect: Some(time(second)),
    }
}

fn seen<'a>(
    previous: Option<&'a GrpcConnectionState>,
    reloaded: bool,
    not_before: Option<&'a Time>,
) -> ConnectionSeen<'a> {
    ConnectionSeen {
        previous,
        state: connection_state::READY,
        address: None,
        reloaded,
        not_before,
    }
}

#[test]
fn last_connect_ends_up_later_than_the_config_map_update_without_sleeping() {
    // The ConfigMap change is recorded at 200.4 while the connection says READY since 150.
    let updated = time(200);
    let before = ready_since(150);
    let now = at(200, 400);
    let first = connection(&seen(Some(&before), true, Some(&updated)), now);
    // lastConnect is now, in the same second as lastUpdateTime: not later yet, so the reconcile
    // comes back when the next second has begun.
    assert_eq!(first.value.last_connect, Some(Time(now)));
    assert_eq!(first.again, Some(Duration::from_millis(650)));

    // The status as stored (to the second) read back within the same second: nothing to write.
    let stored = ready_since(200);
    let same_second = connection(&seen(Some(&stored), false, Some(&updated)), at(200, 900));
    assert_eq!(same_second.value, stored);
    assert_eq!(same_second.again, Some(Duration::from_millis(150)));

    // In the next second lastConnect moves past lastUpdateTime, and stays there.
    let next = connection(&seen(Some(&stored), false, Some(&updated)), at(201, 60));
    assert_eq!(next.value.last_connect, Some(Time(at(201, 60))));
    assert_eq!(next.again, None);
    let settled = ready_since(201);
    let steady = connection(&seen(Some(&settled), false, Some(&updated)), at(260, 0));
    assert_eq!(steady.value, settled);
    assert_eq!(steady.again, None);
}

#[test]
fn last_connect_moves_on_a_new_state_an_address_or_a_reload_and_only_then() {
    let before = ready_since(100);
    // Nothing happened: kept.
    let kept = connection(&seen(Some(&before), false, None), at(300, 0));
    assert_eq!(kept.value, before);
    // The catalog was loaded again (a restart, new content): upstream reconnects, lastConnect moves.
    let reloaded = connection(&seen(Some(&before), true, None), at(300, 0));
    assert_eq!(reloaded.value.last_connect, Some(time(300)));
    // Another state.
    let mut failing = seen(Some(&before), false, None);
    failing.state = connection_state::TRANSIENT_FAILURE;
    let failed = connection(&failing, at(300, 0));
    assert_eq!(failed.value.last_observed_state, "TRANSIENT_FAILURE");
    assert_eq!(failed.value.last_connect, Some(time(300)));
    // Another address.
    let mut moved = seen(Some(&before), false, None);
    moved.address = Some("registry:50051".into());
    assert_eq!(connection(&moved, at(300, 0)).value.last_connect, Some(time(300)));
    // Nothing before: now.
    assert_eq!(
        connection(&seen(None, false, None), at(300, 0))
            .value
            .last_connect,
        Some(time(300))
    );
}

#[test]
fn the_registry_service_says_grpc_for_valid_specs_and_keeps_its_creation_time_until_renewed() {
    let first = registry_service(None, true, false, at(100, 0)).unwrap();
    assert_eq!(
        serde_json::to_value(&first).unwrap(),
        serde_json::json!({"protocol": "grpc", "createdAt": "1970-01-01T00:01:40Z"})
    );
    assert_eq!(
        registry_service(Some(&first), true, false, at(500, 0)),
        Some(first.clone())
    );
    assert_eq!(
        registry_service(Some(&first), true, true, at(500, 0))
            .unwrap()
            .created_at,
        Some(time(500))
    );
    assert_eq!(registry_service(Some(&first), false, false, at(500, 0)), None);
    // One naming a Service (written by upstream before olm-rs took over) is replaced.
    let upstreams = RegistryServiceStatus {
        service_name: Some("c".into()),
        port: Some("50051".into()),
        ..first
    };
    assert_eq!(
        registry_service(Some(&upstreams), true, false, at(500, 0)).unwrap(),
        RegistryServiceStatus {
            protocol: Some("grpc".into()),
            created_at: Some(time(500)),
            ..RegistryServiceStatus::default()
        }
    );
}

#[test]
fn decided_timestamps_are_compared_as_stored() {
    let status = |connect: Time| CatalogSourceStatus {
        connection_state: Some(GrpcConnectionState {
            last_connect: Some(connect),
            ..ready_since(0)
        }),
        ..CatalogSourceStatus::default()
    };
    assert!(!decided_times_changed(
        &status(time(7)),
        &status(Time(at(7, 900)))
    ));
    assert!(decided_times_changed(&status(time(7)), &status(time(8))));
    let with_reference = CatalogSourceStatus {
        config_map_reference: Some(reference("1", 7)),
        ..status(time(8))
    };
    assert!(decided_times_changed(&status(time(8)), &with_reference));
}
