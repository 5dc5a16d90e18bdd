use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::*;

const NS: &str = "operators";

fn t(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).unwrap())
}

/// A CSV with one webhook Deployment `wh.manager` serving a validating, a mutating and a
/// conversion webhook.
fn csv(all_namespaces_only: bool) -> ClusterServiceVersion {
    let modes = if all_namespaces_only {
        json!([{"type": "OwnNamespace", "supported": false}, {"type": "AllNamespaces", "supported": true}])
    } else {
        json!([{"type": "OwnNamespace", "supported": true}, {"type": "AllNamespaces", "supported": true}])
    };
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "op.v1", "namespace": NS, "uid": "uid-1"},
        "spec": {
            "displayName": "op",
            "customresourcedefinitions": {"owned": [{"name": "things.example.com", "version": "v1", "kind": "Thing"}]},
            "install": {"strategy": "deployment", "spec": {"deployments": [
                {"name": "wh.manager", "spec": {
                    "selector": {"matchLabels": {"app": "op"}},
                    "template": {"metadata": {"labels": {"app": "op"}},
                                 "spec": {"serviceAccountName": "op-sa", "containers": [
                                     {"name": "manager", "image": "op:1",
                                      "volumeMounts": [{"name": "old", "mountPath": WEBHOOK_CERT_PATH}]},
                                     {"name": "sidecar", "image": "side:1"}]}}}}
            ]}},
            "installModes": modes,
            "webhookdefinitions": [
                {"generateName": "vthing.example.com", "type": "ValidatingAdmissionWebhook",
                 "deploymentName": "wh.manager", "containerPort": 9443, "targetPort": 9443,
                 "sideEffects": "None", "admissionReviewVersions": ["v1"], "webhookPath": "/validate",
                 "failurePolicy": "Fail",
                 "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"], "resources": ["things"]}]},
                {"generateName": "mthing.example.com", "type": "MutatingAdmissionWebhook",
                 "deploymentName": "wh.manager", "containerPort": 9443, "targetPort": 9443,
                 "sideEffects": "None", "admissionReviewVersions": ["v1"], "webhookPath": "/mutate",
                 "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                            "operations": ["CREATE"], "resources": ["things"]}]},
                {"generateName": "cthing.example.com", "type": "ConversionWebhook",
                 "deploymentName": "wh.manager", "containerPort": 443, "targetPort": 9443,
                 "sideEffects": "None", "admissionReviewVersions": ["v1", "v1beta1"],
                 "webhookPath": "/convert", "conversionCRDs": ["things.example.com"]}
            ]
        }
    }))
    .unwrap()
}

fn csv_without_conversion() -> ClusterServiceVersion {
    let mut c = csv(false);
    c.spec.webhook_definitions.truncate(2);
    c
}

fn issued(now: &Time) -> IssuedCerts {
    let certs = crate::certs::issue(&hosts("wh.manager", NS), now.0).unwrap();
    IssuedCerts {
        ca_pem: certs.ca_pem,
        cert_pem: certs.cert_pem,
        key_pem: certs.key_pem,
        not_after: Time(certs.not_after),
    }
}

fn secret_of(certs: &IssuedCerts) -> CertSecret {
    CertSecret {
        ca_pem: Some(certs.ca_pem.clone().into_bytes()),
        cert_pem: Some(certs.cert_pem.clone().into_bytes()),
        key_pem: Some(certs.key_pem.clone().into_bytes()),
    }
}

#[test]
fn names_follow_upstream() {
    assert_eq!(service_name("wh.manager"), "wh-manager-service");
    assert_eq!(secret_name("wh.manager"), "wh-manager-service-cert");
    assert_eq!(
        hosts("wh", "ns"),
        [
            "wh-service.ns",
            "wh-service.ns.svc",
            "wh-service.ns.svc.cluster.local"
        ]
    );
    let a = config_name("ns", "wh", "vthing.example.com");
    assert!(a.starts_with("vthing.example.com-") && a.len() == "vthing.example.com-".len() + 5);
    assert_eq!(
        a,
        config_name("ns", "wh", "vthing.example.com"),
        "stable across CSVs"
    );
    assert_ne!(a, config_name("other", "wh", "vthing.example.com"));
}

#[test]
fn repeated_names_and_forbidden_rules_are_invalid() {
    let mut c = csv_without_conversion();
    c.spec.webhook_definitions[1].generate_name = "vthing.example.com".to_owned();
    let err = validate(&c).unwrap_err();
    assert_eq!(err, WebhookInvalid::Repeated("vthing.example.com".to_owned()));
    assert_eq!(err.reason(), CsvReason::InvalidWebhookDescription);

    for (groups, resources, why) in [
        (vec!["*"], vec!["pods"], "all groups"),
        (vec!["operators.coreos.com"], vec!["subscriptions"], "OLM group"),
        (
            vec!["admissionregistration.k8s.io"],
            vec!["*"],
            "MutatingWebhookConfiguration",
        ),
        (
            vec!["admissionregistration.k8s.io"],
            vec!["validatingwebhookconfigurations"],
            "ValidatingWebhookConfiguration",
        ),
    ] {
        let mut c = csv_without_conversion();
        c.spec.webhook_definitions[0].rules[0].api_groups =
            Some(groups.iter().map(|s| (*s).to_owned()).collect());
        c.spec.webhook_definitions[0].rules[0].resources =
            Some(resources.iter().map(|s| (*s).to_owned()).collect());
        let err = validate(&c).unwrap_err();
        assert_eq!(err.reason(), CsvReason::InvalidWebhookDescription);
        assert!(err.to_string().contains(why), "{err}");
    }
    let mut c = csv_without_conversion();
    c.spec.webhook_definitions[0].rules[0].api_groups = Some(vec!["admissionregistration.k8s.io".into()]);
    c.spec.webhook_definitions[0].rules[0].resources = Some(vec!["validatingadmissionpolicies".into()]);
    assert_eq!(validate(&c), Ok(()));
}

#[test]
fn an_unknown_deployment_is_invalid() {
    let mut c = csv_without_conversion();
    c.spec.webhook_definitions[0].deployment_name = Some("nope".to_owned());
    let err = validate(&c).unwrap_err();
    assert!(err.to_string().contains("deploymentName \"nope\""), "{err}");
}

#[test]
fn descriptions_the_api_server_would_refuse_are_invalid() {
    let mut c = csv_without_conversion();
    c.spec.webhook_definitions[0].type_ = WebhookAdmissionType::empty();
    let err = validate(&c).unwrap_err();
    assert_eq!(err.reason(), CsvReason::InvalidWebhookDescription);
    assert!(err.to_string().contains("type \"\" is not"), "{err}");

    let mut c = csv_without_conversion();
    c.spec.webhook_definitions[1].side_effects = "Some".to_owned();
    let err = validate(&c).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("WebhookDescription mthing.example.com: sideEffects \"Some\""),
        "{err}"
    );
    c.spec.webhook_definitions[1].side_effects = "NoneOnDryRun".to_owned();
    assert_eq!(validate(&c), Ok(()));

    let mut c = csv(true);
    c.spec.webhook_definitions[2].admission_review_versions.clear();
    assert_eq!(
        validate(&c),
        Err(WebhookInvalid::NoReviewVersions("cthing.example.com".to_owned()))
    );
}

#[test]
fn one_container_port_forwarded_to_two_target_ports_is_invalid() {
    // The conversion webhook forwards 443 to 9443; a validating one on 443 to 8443 would
    // repeat port 443 in the Service.
    let mut c = csv(true);
    c.spec.webhook_definitions[0].container_port = Some(443);
    c.spec.webhook_definitions[0].target_port = Some(IntOrString::Int(8443));
    let err = validate(&c).unwrap_err();
    assert_eq!(err.reason(), CsvReason::InvalidWebhookDescription);
    assert_eq!(
        err.to_string(),
        "deployment wh.manager: WebhookDescription vthing.example.com and WebhookDescription \
         cthing.example.com both use containerPort 443 but forward it to different targetPorts; \
         give them the same targetPort or different containerPorts"
    );
    // The same target twice is one Service port.
    c.spec.webhook_definitions[0].target_port = Some(IntOrString::Int(9443));
    assert_eq!(validate(&c), Ok(()));
    let ports = service_ports(&c, "wh.manager");
    assert_eq!(
        ports.iter().map(|p| p.port).collect::<Vec<_>>(),
        [443, 9443],
        "{ports:?}"
    );
    // An APIService forwards its port to itself.
    let mut c = with_api_service(csv(true));
    c.spec.api_service_definitions.as_mut().unwrap().owned[0].container_port = None;
    let err = validate(&c).unwrap_err();
    assert!(
        err.to_string()
            .contains("and APIService v1alpha1.metrics.example.com both use containerPort 443"),
        "{err}"
    );
}

#[test]
fn an_api_service_of_an_unknown_deployment_fails_its_install() {
    let mut c = with_api_service(csv(true));
    c.spec.api_service_definitions.as_mut().unwrap().owned[0].deployment_name = Some("nope".to_owned());
    let err = validate(&c).unwrap_err();
    assert_eq!(err.reason(), CsvReason::ApiServiceInstallFailed);
    assert!(
        err.to_string()
            .starts_with("APIService v1alpha1.metrics.example.com: deploymentName \"nope\""),
        "{err}"
    );
}

#[test]
fn conversion_webhooks_need_an_all_namespaces_only_csv_and_owned_crds() {
    let err = validate(&csv(false)).unwrap_err();
    assert_eq!(err.reason(), CsvReason::UnsupportedOperatorGroup);
    assert!(err.to_string().contains("must support only AllNamespaces"));
    assert_eq!(validate(&csv(true)), Ok(()));

    let mut c = csv(true);
    c.spec.webhook_definitions[2].conversion_crds = vec!["others.example.com".to_owned()];
    assert!(matches!(
        validate(&c),
        Err(WebhookInvalid::ConversionCrdNotOwned { .. })
    ));
    c.spec.webhook_definitions[2].conversion_crds.clear();
    assert!(matches!(validate(&c), Err(WebhookInvalid::NoConversionCrds(_))));
}

#[test]
fn the_namespace_selector_scopes_to_the_targets() {
    assert_eq!(namespace_selector(&[String::new()]), None);
    let s = namespace_selector(&["b".to_owned(), "a".to_owned()]).unwrap();
    let req = &s.match_expressions.unwrap()[0];
    assert_eq!(req.key, "kubernetes.io/metadata.name");
    assert_eq!(req.operator, "In");
    assert_eq!(req.values.as_deref(), Some(&["a".to_owned(), "b".to_owned()][..]));
}

#[test]
fn rotation_is_due_without_a_valid_fresh_secret() {
    let now = t(1_800_000_000);
    let h = hosts("wh.manager", NS);
    let certs = issued(&now);
    let good = secret_of(&certs);
    assert!(rotation_due(None, &h, None, &now), "no Secret");
    assert!(!rotation_due(Some(&good), &h, None, &now), "fresh and valid");
    let mut no_ca = good.clone();
    no_ca.ca_pem = None;
    assert!(rotation_due(Some(&no_ca), &h, None, &now), "missing CA key");
    let mut junk = good.clone();
    junk.cert_pem = Some(b"junk".to_vec());
    assert!(rotation_due(Some(&junk), &h, None, &now), "malformed");
    let other = issued(&now);
    let mut wrong_ca = good.clone();
    wrong_ca.ca_pem = Some(other.ca_pem.into_bytes());
    assert!(
        rotation_due(Some(&wrong_ca), &h, None, &now),
        "not signed by its CA"
    );
    let elsewhere = hosts("wh.manager", "elsewhere");
    assert!(rotation_due(Some(&good), &elsewhere, None, &now), "wrong hosts");
    // One day before expiry (upstream's min-fresh) it is due; two days before, not.
    let expiry = certs.not_after.0.as_second();
    assert!(rotation_due(Some(&good), &h, None, &t(expiry - 24 * 3600 + 60)));
    assert!(!rotation_due(Some(&good), &h, None, &t(expiry - 2 * 24 * 3600)));
    assert!(rotation_due(Some(&good), &h, None, &t(expiry + 60)), "expired");
    // The CSV's certsRotateAt forces it.
    assert!(rotation_due(Some(&good), &h, Some(&t(1_800_000_000)), &now));
    assert!(!rotation_due(Some(&good), &h, Some(&t(1_900_000_000)), &now));
}

#[test]
fn the_plan_builds_every_object_with_the_issued_ca() {
    let now = t(1_800_000_000);
    let c = csv(true);
    let certs = issued(&now);
    let observed = ObservedWebhooks {
        issued: BTreeMap::from([("wh.manager".to_owned(), certs.clone())]),
        ..Default::default()
    };
    assert_eq!(certs_due(&c, &ObservedWebhooks::default(), &now).len(), 1);
    let p = plan(&c, &[String::new()], &observed, &now);
    assert!(p.missing.is_empty());
    assert_eq!(
        p.rotating,
        Some(Time(certs.not_after.0.checked_sub(MIN_FRESH).unwrap()))
    );
    let o = &p.objects;

    let svc = &o.services[0];
    assert_eq!(svc.metadata.name.as_deref(), Some("wh-manager-service"));
    let spec = svc.spec.as_ref().unwrap();
    assert_eq!(
        spec.selector,
        Some(BTreeMap::from([("app".to_owned(), "op".to_owned())]))
    );
    let ports: Vec<(Option<String>, i32, Option<IntOrString>)> = spec
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .map(|p| (p.name.clone(), p.port, p.target_port.clone()))
        .collect();
    assert_eq!(
        ports,
        [
            (Some("9443".to_owned()), 9443, Some(IntOrString::Int(9443))),
            (Some("443".to_owned()), 443, Some(IntOrString::Int(9443))),
        ]
    );

    let secret = &o.secrets[0];
    assert_eq!(secret.metadata.name.as_deref(), Some("wh-manager-service-cert"));
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.as_ref().unwrap();
    assert_eq!(data["olmCAKey"].0, certs.ca_pem.as_bytes());
    assert_eq!(data["tls.crt"].0, certs.cert_pem.as_bytes());
    assert_eq!(data["tls.key"].0, certs.key_pem.as_bytes());
    assert_eq!(secret.metadata.owner_references.as_ref().unwrap()[0].uid, "uid-1");
    assert_eq!(
        o.roles[0].metadata.name.as_deref(),
        Some("wh-manager-service-cert")
    );
    assert_eq!(o.role_bindings[0].subjects.as_ref().unwrap()[0].name, "op-sa");
    assert_eq!(
        o.role_bindings[1].metadata.namespace.as_deref(),
        Some("kube-system")
    );
    assert_eq!(
        o.cluster_role_bindings[0].metadata.name.as_deref(),
        Some("wh-manager-service-system:auth-delegator")
    );

    let v = &o.validating[0];
    let labels = v.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["olm.owner"], "op.v1");
    assert_eq!(labels["olm.owner.namespace"], NS);
    assert_eq!(labels["olm.owner.kind"], "ClusterServiceVersion");
    assert_eq!(
        labels["olm.webhook-description-generate-name"],
        "vthing.example.com"
    );
    assert!(labels.contains_key(WEBHOOK_HASH));
    let hook = &v.webhooks.as_ref().unwrap()[0];
    assert_eq!(hook.name, "vthing.example.com");
    assert_eq!(hook.namespace_selector, None, "AllNamespaces");
    let svc_ref = hook.client_config.service.as_ref().unwrap();
    assert_eq!(
        (
            svc_ref.name.as_str(),
            svc_ref.namespace.as_str(),
            svc_ref.path.as_deref(),
            svc_ref.port
        ),
        ("wh-manager-service", NS, Some("/validate"), Some(9443))
    );
    assert_eq!(
        hook.client_config.ca_bundle.as_ref().unwrap().0,
        certs.ca_pem.as_bytes()
    );
    let m = &o.mutating[0].webhooks.as_ref().unwrap()[0];
    assert_eq!(m.name, "mthing.example.com");

    let conv = &o.conversions["things.example.com"];
    assert_eq!(conv.strategy, "Webhook");
    let w = conv.webhook.as_ref().unwrap();
    assert_eq!(w.conversion_review_versions, ["v1", "v1beta1"]);
    let cc = w.client_config.as_ref().unwrap();
    assert_eq!(cc.ca_bundle.as_ref().unwrap().0, certs.ca_pem.as_bytes());
    let s = cc.service.as_ref().unwrap();
    assert_eq!((s.path.as_deref(), s.port), (Some("/convert"), Some(443)));
}

#[test]
fn a_single_namespace_group_scopes_the_admission_webhooks() {
    let now = t(1_800_000_000);
    let observed = ObservedWebhooks {
        issued: BTreeMap::from([("wh.manager".to_owned(), issued(&now))]),
        ..Default::default()
    };
    let p = plan(&csv_without_conversion(), &["team-a".to_owned()], &observed, &now);
    let hook = &p.objects.validating[0].webhooks.as_ref().unwrap()[0];
    assert_eq!(
        hook.namespace_selector,
        namespace_selector(&["team-a".to_owned()])
    );
}

#[test]
fn a_fresh_secret_is_reused_and_nothing_rotates() {
    let now = t(1_800_000_000);
    let c = csv(true);
    let certs = issued(&now);
    let observed = ObservedWebhooks {
        secrets: BTreeMap::from([("wh.manager".to_owned(), secret_of(&certs))]),
        ..Default::default()
    };
    assert!(certs_due(&c, &observed, &now).is_empty());
    let p = plan(&c, &[String::new()], &observed, &now);
    assert_eq!(p.rotating, None);
    assert_eq!(
        p.objects.secrets[0].data.as_ref().unwrap()["olmCAKey"].0,
        certs.ca_pem.as_bytes()
    );
    // Nothing is installed yet: the first missing object is named.
    assert_eq!(
        p.not_installed(&observed).as_deref(),
        Some(format!(
            "ValidatingWebhookConfiguration {} is not installed",
            config_name(NS, "wh.manager", "vthing.example.com")
        ))
        .as_deref()
    );
}

#[test]
fn installed_objects_are_recognised_and_stale_configs_listed() {
    let now = t(1_800_000_000);
    let c = csv(true);
    let certs = issued(&now);
    let mut observed = ObservedWebhooks {
        secrets: BTreeMap::from([("wh.manager".to_owned(), secret_of(&certs))]),
        ..Default::default()
    };
    let p = plan(&c, &[String::new()], &observed, &now);
    for v in &p.objects.validating {
        observed.configs.push(ObservedConfig {
            kind: ConfigKind::Validating,
            name: v.metadata.name.clone().unwrap(),
            generate_name: None,
            hash: v.metadata.labels.as_ref().unwrap().get(WEBHOOK_HASH).cloned(),
        });
    }
    for m in &p.objects.mutating {
        observed.configs.push(ObservedConfig {
            kind: ConfigKind::Mutating,
            name: m.metadata.name.clone().unwrap(),
            generate_name: None,
            hash: m.metadata.labels.as_ref().unwrap().get(WEBHOOK_HASH).cloned(),
        });
    }
    assert_eq!(
        p.not_installed(&observed).as_deref(),
        Some("the conversion webhook of CRD things.example.com is not installed")
    );
    observed.conversions.insert(
        "things.example.com".to_owned(),
        ObservedConversion {
            strategy: Some("Webhook".to_owned()),
            ca_bundle: Some(certs.ca_pem.clone().into_bytes()),
            service: Some((NS.to_owned(), "wh-manager-service".to_owned())),
        },
    );
    assert_eq!(p.not_installed(&observed), None);

    observed.configs.push(ObservedConfig {
        kind: ConfigKind::Mutating,
        name: "gone.example.com-abcde".to_owned(),
        generate_name: Some("gone.example.com".to_owned()),
        hash: None,
    });
    let p = plan(&c, &[String::new()], &observed, &now);
    assert_eq!(
        p.objects.stale,
        [(ConfigKind::Mutating, "gone.example.com-abcde".to_owned())]
    );
}

#[test]
fn certificates_are_mounted_where_upstream_mounts_them() {
    let now = t(1_800_000_000);
    let c = csv(true);
    let observed = ObservedWebhooks {
        issued: BTreeMap::from([("wh.manager".to_owned(), issued(&now))]),
        ..Default::default()
    };
    let p = plan(&c, &[String::new()], &observed, &now);
    let mut deployments = desired_deployments(&c, &BTreeMap::new(), None).unwrap();
    let hash_before = deployments[0].labels()[DEPLOYMENT_SPEC_HASH].clone();
    p.mount_certs(&mut deployments);
    let d = &deployments[0];
    assert_ne!(
        d.labels()[DEPLOYMENT_SPEC_HASH],
        hash_before,
        "the spec hash follows the mount"
    );
    let template = &d.spec.template;
    assert!(
        template
            .metadata
            .as_ref()
            .unwrap()
            .annotations
            .as_ref()
            .unwrap()
            .contains_key(CA_HASH)
    );
    let pod = template.spec.as_ref().unwrap();
    let volumes = pod.volumes.as_ref().unwrap();
    let secret_of_volume = |name: &str| {
        let v = volumes.iter().find(|v| v.name == name).unwrap();
        let s = v.secret.as_ref().unwrap();
        (
            s.secret_name.clone().unwrap(),
            s.items
                .as_ref()
                .unwrap()
                .iter()
                .map(|i| i.path.clone())
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        secret_of_volume(APISERVICE_CERT_VOLUME),
        (
            "wh-manager-service-cert".to_owned(),
            vec!["apiserver.crt".to_owned(), "apiserver.key".to_owned()]
        )
    );
    assert_eq!(
        secret_of_volume(WEBHOOK_CERT_VOLUME),
        (
            "wh-manager-service-cert".to_owned(),
            vec!["tls.crt".to_owned(), "tls.key".to_owned()]
        )
    );
    for container in &pod.containers {
        let mounts = container.volume_mounts.as_ref().unwrap();
        let at = |path: &str| {
            mounts
                .iter()
                .find(|m| m.mount_path == path)
                .map(|m| m.name.clone())
        };
        assert_eq!(at(APISERVICE_CERT_PATH).as_deref(), Some(APISERVICE_CERT_VOLUME));
        assert_eq!(
            at(WEBHOOK_CERT_PATH).as_deref(),
            Some(WEBHOOK_CERT_VOLUME),
            "replaces a mount at the same path"
        );
    }
}

#[test]
fn a_due_certificate_without_issued_ones_is_missing() {
    let now = t(1_800_000_000);
    let p = plan(&csv(true), &[String::new()], &ObservedWebhooks::default(), &now);
    assert_eq!(p.missing, ["wh.manager"]);
    assert!(p.objects.secrets.is_empty());
    assert!(
        p.not_installed(&ObservedWebhooks::default())
            .unwrap()
            .contains("serving certificate")
    );
}

// --- The state machine with webhooks -------------------------------------------------------

/// A CSV of `csv(true)` in `phase`, member of an AllNamespaces group.
fn in_phase(phase: CsvPhase, reason: CsvReason) -> ClusterServiceVersion {
    let mut c = csv(true);
    let mut annotations = member_annotations("og", NS, &[String::new()]);
    annotations.extend(c.annotations().clone());
    c.metadata.annotations = Some(annotations);
    c.status = Some(ClusterServiceVersionStatus {
        phase: Some(phase),
        reason: Some(reason),
        ..Default::default()
    });
    c
}

/// Requirements met, the Deployment as the plan wants it, and `webhooks` observed.
fn observed_with(c: &ClusterServiceVersion, webhooks: ObservedWebhooks, now: &Time) -> Observed {
    let mut observed = Observed::default()
        .with_og("og", &[""])
        .with_crd(
            "things.example.com",
            CrdState::Present {
                established: true,
                served_versions: vec!["v1".to_owned()],
                uid: None,
            },
        )
        .with_service_account("op-sa", &[]);
    observed.webhooks = webhooks;
    let p = plan(c, &[String::new()], &observed.webhooks, now);
    let mut desired = desired_deployments(c, c.annotations(), None).unwrap();
    p.mount_certs(&mut desired);
    observed.with_deployment(
        "wh.manager",
        ObservedDeployment {
            owner: Some("op.v1".into()),
            spec_hash: desired[0].labels().get(DEPLOYMENT_SPEC_HASH).cloned(),
            generation: Some(1),
            observed_generation: Some(1),
            desired_replicas: 1,
            replicas: 1,
            updated_replicas: 1,
            available_replicas: 1,
            available: true,
            progress_deadline_exceeded: false,
        },
    )
}

/// What the shell records after applying `objects`.
fn installed(mut w: ObservedWebhooks, objects: &WebhookObjects) -> ObservedWebhooks {
    for s in &objects.secrets {
        w.secrets
            .insert("wh.manager".to_owned(), CertSecret::from_secret(s));
    }
    for s in &objects.services {
        w.services
            .insert("wh.manager".to_owned(), ObservedService::from_service(s));
    }
    let hash = |m: &ObjectMeta| m.labels.as_ref().and_then(|l| l.get(WEBHOOK_HASH)).cloned();
    for v in &objects.validating {
        w.configs.push(ObservedConfig {
            kind: ConfigKind::Validating,
            name: v.metadata.name.clone().unwrap(),
            generate_name: None,
            hash: hash(&v.metadata),
        });
    }
    for m in &objects.mutating {
        w.configs.push(ObservedConfig {
            kind: ConfigKind::Mutating,
            name: m.metadata.name.clone().unwrap(),
            generate_name: None,
            hash: hash(&m.metadata),
        });
    }
    for (crd, c) in &objects.conversions {
        let cc = c.webhook.as_ref().and_then(|w| w.client_config.as_ref());
        w.conversions.insert(
            crd.clone(),
            ObservedConversion {
                strategy: Some(c.strategy.clone()),
                ca_bundle: cc.and_then(|c| c.ca_bundle.as_ref()).map(|b| b.0.clone()),
                service: None,
            },
        );
    }
    w
}

#[test]
fn install_applies_the_webhook_objects_and_records_the_rotation_time() {
    let now = t(1_800_000_000);
    let c = in_phase(CsvPhase::InstallReady, CsvReason::AllRequirementsMet);
    let certs = issued(&now);
    let w = ObservedWebhooks {
        issued: BTreeMap::from([("wh.manager".to_owned(), certs.clone())]),
        ..Default::default()
    };
    let d = decide(&c, &observed_with(&c, w, &now), &now);
    assert_eq!(d.phase, CsvPhase::Installing);
    let objects = d.webhooks.clone().expect("webhook objects to apply");
    assert_eq!(
        (
            objects.validating.len(),
            objects.mutating.len(),
            objects.conversions.len()
        ),
        (1, 1, 1)
    );
    let rotate_at = Time(certs.not_after.0.checked_sub(MIN_FRESH).unwrap());
    assert_eq!(d.certs_rotate_at, Some(rotate_at.clone()));
    let mut status = c.status.clone().unwrap();
    d.apply_to(&mut status, &now);
    assert_eq!(status.certs_last_updated, Some(now.clone()));
    assert_eq!(status.certs_rotate_at, Some(rotate_at));
    let template = d.desired_deployments[0].spec.template.metadata.as_ref().unwrap();
    assert!(template.annotations.as_ref().unwrap().contains_key(CA_HASH));
}

#[test]
fn the_csv_succeeds_only_once_every_webhook_object_is_in_place() {
    let now = t(1_800_000_000);
    let c = in_phase(CsvPhase::Installing, CsvReason::InstallSucceeded);
    let certs = issued(&now);
    let w = ObservedWebhooks {
        secrets: BTreeMap::from([("wh.manager".to_owned(), secret_of(&certs))]),
        ..Default::default()
    };
    // Deployment ready, webhook configurations missing: installed again, not Succeeded.
    let d = decide(&c, &observed_with(&c, w.clone(), &now), &now);
    assert_eq!(d.phase, CsvPhase::InstallReady, "{}", d.message);
    assert!(d.message.contains("is not installed"), "{}", d.message);

    let objects = plan(&c, &[String::new()], &w, &now).objects;
    let d = decide(&c, &observed_with(&c, installed(w, &objects), &now), &now);
    assert_eq!(d.phase, CsvPhase::Succeeded, "{}", d.message);
}

#[test]
fn a_succeeded_csv_with_certificates_due_needs_a_rotation() {
    let now = t(1_800_000_000);
    let mut c = in_phase(CsvPhase::Succeeded, CsvReason::InstallSucceeded);
    let certs = issued(&now);
    let w = ObservedWebhooks {
        secrets: BTreeMap::from([("wh.manager".to_owned(), secret_of(&certs))]),
        ..Default::default()
    };
    let objects = plan(&c, &[String::new()], &w, &now).objects;
    let w = installed(w, &objects);
    assert_eq!(
        decide(&c, &observed_with(&c, w.clone(), &now), &now).phase,
        CsvPhase::Succeeded
    );

    // certsRotateAt passed: the shell issued fresh certificates.
    c.status.as_mut().unwrap().certs_rotate_at = Some(t(1_799_999_999));
    let mut due = w;
    due.issued.insert("wh.manager".to_owned(), issued(&now));
    let d = decide(&c, &observed_with(&c, due, &now), &now);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Pending, CsvReason::NeedsCertRotation)
    );
}

#[test]
fn invalid_descriptions_fail_the_csv_before_anything_is_installed() {
    let now = t(1_800_000_000);
    let mut c = in_phase(CsvPhase::Pending, CsvReason::RequirementsUnknown);
    c.spec.webhook_definitions[1].generate_name = "vthing.example.com".to_owned();
    let d = decide(&c, &observed_with(&c, ObservedWebhooks::default(), &now), &now);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Failed, CsvReason::InvalidWebhookDescription)
    );
    assert!(d.desired_deployments.is_empty() && d.webhooks.is_none());

    let mut c = in_phase(CsvPhase::Pending, CsvReason::RequirementsUnknown);
    c.spec.install_modes = csv(false).spec.install_modes;
    let d = decide(&c, &observed_with(&c, ObservedWebhooks::default(), &now), &now);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Failed, CsvReason::UnsupportedOperatorGroup)
    );
}

// --- Owned APIServices ------------------------------------------------------------------------

/// A CSV of `csv(true)` whose `wh.manager` also serves the APIService `v1alpha1.metrics.example.com`.
fn with_api_service(mut c: ClusterServiceVersion) -> ClusterServiceVersion {
    c.spec.api_service_definitions = serde_json::from_value(json!({"owned": [{
        "name": "metrics", "group": "metrics.example.com", "version": "v1alpha1", "kind": "Metric",
        "deploymentName": "wh.manager", "containerPort": 6443
    }]}))
    .unwrap();
    c
}

fn seen_api_service(owner: &str, ca: &[u8], available: bool) -> ObservedApiService {
    ObservedApiService {
        owner: Some((CSV_KIND.to_owned(), NS.to_owned(), owner.to_owned())),
        ca_bundle: Some(ca.to_vec()),
        service: Some((NS.to_owned(), "wh-manager-service".to_owned())),
        available,
        owner_retiring: false,
    }
}

#[test]
fn an_owned_api_service_gets_the_ca_bundle_and_a_port_on_the_service() {
    let now = t(1_800_000_000);
    let c = with_api_service(csv(true));
    let certs = issued(&now);
    let observed = ObservedWebhooks {
        issued: BTreeMap::from([("wh.manager".to_owned(), certs.clone())]),
        ..Default::default()
    };
    let p = plan(&c, &[String::new()], &observed, &now);
    let a = &p.objects.api_services[0];
    assert_eq!(a["metadata"]["name"], "v1alpha1.metrics.example.com");
    assert_eq!(a["metadata"]["labels"]["olm.owner"], "op.v1");
    assert_eq!(a["metadata"]["labels"]["olm.managed"], "true");
    assert_eq!(a["spec"]["groupPriorityMinimum"], 2000);
    assert_eq!(a["spec"]["versionPriority"], 15);
    assert_eq!(
        a["spec"]["service"],
        json!({"namespace": NS, "name": "wh-manager-service", "port": 6443})
    );
    assert_eq!(
        a["spec"]["caBundle"],
        json!(base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            &certs.ca_pem
        ))
    );
    let ports: Vec<i32> = p.objects.services[0]
        .spec
        .as_ref()
        .unwrap()
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .map(|p| p.port)
        .collect();
    assert_eq!(ports, [9443, 443, 6443]);
}

#[test]
fn an_api_service_only_csv_is_a_cert_deployment_too() {
    let mut c = with_api_service(csv(true));
    c.spec.webhook_definitions.clear();
    assert_eq!(cert_deployments(&c), ["wh.manager"]);
    let now = t(1_800_000_000);
    assert_eq!(certs_due(&c, &ObservedWebhooks::default(), &now).len(), 1);
}

#[test]
fn the_csv_waits_for_its_api_service_to_be_available() {
    let now = t(1_800_000_000);
    let mut c = with_api_service(in_phase(CsvPhase::Installing, CsvReason::InstallSucceeded));
    c.spec.webhook_definitions.clear();
    let certs = issued(&now);
    let w = ObservedWebhooks {
        secrets: BTreeMap::from([("wh.manager".to_owned(), secret_of(&certs))]),
        ..Default::default()
    };
    let p = plan(&c, &[String::new()], &w, &now);
    assert_eq!(
        p.not_installed(&w).as_deref(),
        Some("APIService v1alpha1.metrics.example.com is not installed")
    );
    let mut w2 = installed(w, &p.objects);
    w2.api_services.insert(
        "v1alpha1.metrics.example.com".to_owned(),
        seen_api_service("op.v1", certs.ca_pem.as_bytes(), false),
    );
    let d = decide(&c, &observed_with(&c, w2.clone(), &now), &now);
    assert_eq!(d.phase, CsvPhase::Installing);
    assert!(
        d.message
            .contains("APIService v1alpha1.metrics.example.com is not available"),
        "{}",
        d.message
    );

    w2.api_services
        .get_mut("v1alpha1.metrics.example.com")
        .unwrap()
        .available = true;
    let d = decide(&c, &observed_with(&c, w2, &now), &now);
    assert_eq!(d.phase, CsvPhase::Succeeded, "{}", d.message);
}

#[test]
fn an_api_service_of_another_csv_is_an_owner_conflict() {
    let now = t(1_800_000_000);
    let mut c = with_api_service(in_phase(CsvPhase::Pending, CsvReason::RequirementsUnknown));
    c.spec.webhook_definitions.clear();
    let mut w = ObservedWebhooks::default();
    w.api_services.insert(
        "v1alpha1.metrics.example.com".to_owned(),
        seen_api_service("someone-else.v3", b"ca", true),
    );
    let d = decide(&c, &observed_with(&c, w.clone(), &now), &now);
    assert_eq!((d.phase, d.reason), (CsvPhase::Failed, CsvReason::OwnerConflict));
    assert!(d.message.contains("someone-else.v3"), "{}", d.message);

    // A CSV being replaced or deleted may hand it over, as upstream.
    w.api_services
        .get_mut("v1alpha1.metrics.example.com")
        .unwrap()
        .owner_retiring = true;
    assert_eq!(api_service_conflict(&c, &w), None);
    w.api_services
        .get_mut("v1alpha1.metrics.example.com")
        .unwrap()
        .owner_retiring = false;
    assert!(api_service_conflict(&c, &w).is_some());

    // The CSV it replaces may hand it over.
    c.spec.replaces = Some("someone-else.v3".to_owned());
    assert_eq!(api_service_conflict(&c, &w), None);
}

#[test]
fn a_succeeded_csv_whose_api_service_went_missing_reports_a_resource_issue_and_reinstalls() {
    let now = t(1_800_000_000);
    let mut c = with_api_service(in_phase(CsvPhase::Succeeded, CsvReason::InstallSucceeded));
    c.spec.webhook_definitions.clear();
    let certs = issued(&now);
    let w = ObservedWebhooks {
        secrets: BTreeMap::from([("wh.manager".to_owned(), secret_of(&certs))]),
        ..Default::default()
    };
    let d = decide(&c, &observed_with(&c, w.clone(), &now), &now);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Failed, CsvReason::ApiServiceResourceIssue)
    );
    assert!(
        d.message.contains("could not retrieve generated APIService"),
        "{}",
        d.message
    );

    let mut failed = c.clone();
    failed.status = Some(ClusterServiceVersionStatus {
        phase: Some(CsvPhase::Failed),
        reason: Some(CsvReason::ApiServiceResourceIssue),
        ..Default::default()
    });
    let d = decide(&failed, &observed_with(&failed, w, &now), &now);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Pending, CsvReason::ApiServiceResourcesNeedReinstall)
    );
}

#[test]
fn a_deleted_webhook_service_goes_failed_then_needs_reinstall_and_is_applied_again() {
    let now = t(1_800_000_000);
    let certs = issued(&now);
    let w = ObservedWebhooks {
        secrets: BTreeMap::from([("wh.manager".to_owned(), secret_of(&certs))]),
        ..Default::default()
    };
    let c = in_phase(CsvPhase::Succeeded, CsvReason::InstallSucceeded);
    let objects = plan(&c, &[String::new()], &w, &now).objects;
    let mut gone = installed(w, &objects);
    gone.services.clear();
    let service = format!("{NS}/wh-manager-service");

    let d = decide(&c, &observed_with(&c, gone.clone(), &now), &now);
    assert_eq!(
        (d.phase, d.reason, d.message),
        (
            CsvPhase::Failed,
            CsvReason::ComponentUnhealthy,
            format!("installing: missing Service {service}")
        )
    );
    let c = in_phase(CsvPhase::Failed, CsvReason::ComponentUnhealthy);
    let d = decide(&c, &observed_with(&c, gone.clone(), &now), &now);
    assert_eq!(
        (d.phase, d.reason),
        (CsvPhase::Pending, CsvReason::NeedsReinstall)
    );

    // Installing with the Service gone: applied again at once, named for the Event.
    let mut c = in_phase(CsvPhase::Installing, CsvReason::InstallWaiting);
    c.status.as_mut().unwrap().last_transition_time = Some(t(1_800_000_000 - 60));
    let d = decide(&c, &observed_with(&c, gone, &now), &now);
    assert_eq!(d.phase, CsvPhase::Installing, "{}", d.message);
    assert_eq!(d.missing, [format!("Service {service}")]);
    assert_eq!(d.webhooks.map(|o| o.services.len()), Some(1));
}

#[test]
fn a_webhook_service_is_changed_only_when_its_selector_or_the_install_ports_differ() {
    let now = t(1_800_000_000);
    let certs = issued(&now);
    let w = ObservedWebhooks {
        secrets: BTreeMap::from([("wh.manager".to_owned(), secret_of(&certs))]),
        ..Default::default()
    };
    let c = in_phase(CsvPhase::Succeeded, CsvReason::InstallSucceeded);
    let p = plan(&c, &[String::new()], &w, &now);
    let mut w = installed(w, &p.objects);
    assert_eq!(p.service_issue(&w), None);
    // A port someone added is theirs.
    let seen = w.services.get_mut("wh.manager").unwrap();
    seen.ports.push((9999, "9999".to_owned()));
    assert_eq!(p.service_issue(&w), None);
    // A selector changed is a drift: installed again (InstallReady), not a reinstall.
    w.services.get_mut("wh.manager").unwrap().selector.clear();
    let (missing, message) = p.service_issue(&w).unwrap();
    assert!(!missing);
    assert!(message.contains("does not match"), "{message}");
    let d = decide(&c, &observed_with(&c, w, &now), &now);
    assert_eq!(d.phase, CsvPhase::InstallReady, "{}", d.message);
}

#[test]
fn a_configuration_upstream_named_for_a_description_is_updated_in_place() {
    let now = t(1_800_000_000);
    let c = csv(true);
    let certs = issued(&now);
    let mut observed = ObservedWebhooks {
        secrets: BTreeMap::from([("wh.manager".to_owned(), secret_of(&certs))]),
        ..Default::default()
    };
    let fresh = plan(&c, &[String::new()], &observed, &now);
    let stable = fresh.objects.validating[0].metadata.name.clone().unwrap();
    let generate_name = fresh.objects.validating[0].metadata.labels.as_ref().unwrap()
        [WEBHOOK_DESCRIPTION_GENERATE_NAME]
        .clone();
    // What upstream OLM v0 left: `<generateName>-<random>`, labelled for the description.
    let upstream = format!("{generate_name}-x7k2p");
    observed.configs.push(ObservedConfig {
        kind: ConfigKind::Validating,
        name: upstream.clone(),
        generate_name: Some(generate_name.clone()),
        hash: None,
    });
    let p = plan(&c, &[String::new()], &observed, &now);
    assert_eq!(
        p.objects.validating[0].metadata.name.as_deref(),
        Some(upstream.as_str())
    );
    assert!(p.objects.stale.is_empty(), "{:?}", p.objects.stale);

    // Both there (an olm-rs install of the same CSV and a leftover): the stable one is kept.
    observed.configs.push(ObservedConfig {
        kind: ConfigKind::Validating,
        name: stable.clone(),
        generate_name: Some(generate_name),
        hash: None,
    });
    let p = plan(&c, &[String::new()], &observed, &now);
    assert_eq!(
        p.objects.validating[0].metadata.name.as_deref(),
        Some(stable.as_str())
    );
    assert_eq!(p.objects.stale, [(ConfigKind::Validating, upstream)]);
}
