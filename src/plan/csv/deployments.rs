//! deployments: the operator Deployments a CSV asks for (upstream `install/deployment.go`): the
//! install strategy's specs with OLM's labels, annotations, environment, the owning
//! Subscription's `spec.config` ([`super::config`]) and owner reference.

#[allow(
    clippy::wildcard_imports,
    reason = "the parent module's observed types and imports"
)]
use super::*;

/// The Deployments the CSV's install strategy asks for, with OLM's labels, pod-template
/// annotations (`annotations` overlaid: pass the CSV's annotations including the
/// OperatorGroup member annotations), `revisionHistoryLimit: 1`, `overrides` merged in, then
/// `OPERATOR_CONDITION_NAME`, and the `olm.deployment-spec-hash` label of the result (see the
/// module doc).
///
/// # Errors
/// The first Deployment `overrides` cannot be merged into.
pub fn desired_deployments(
    csv: &ClusterServiceVersion,
    annotations: &BTreeMap<String, String>,
    overrides: Option<&super::config::SubscriptionOverrides>,
) -> Result<Vec<Deployment>, super::config::ConfigError> {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    // The Operator-API component label the InstallPlan put on the CSV goes on its Deployments.
    let component_labels = crate::api::labels::component_labels(csv.labels());
    let owner = csv_owner_reference(csv);
    csv.spec
        .install
        .spec
        .deployments
        .iter()
        .map(|entry| {
            let mut spec: DeploymentSpec = entry.spec.clone();
            spec.revision_history_limit = Some(1);
            let template_meta = spec.template.metadata.get_or_insert_with(ObjectMeta::default);
            let template_annotations = template_meta.annotations.get_or_insert_with(BTreeMap::new);
            for (k, v) in annotations {
                if k != LAST_APPLIED {
                    template_annotations.insert(k.clone(), v.clone());
                }
            }
            let mut labels = entry.label.clone().unwrap_or_default();
            labels.insert(MANAGED.to_owned(), "true".to_owned());
            labels.extend(component_labels.clone());
            labels.extend(owner_labels(&name, &namespace));
            let mut deployment = Deployment {
                metadata: ObjectMeta {
                    name: Some(entry.name.clone()),
                    namespace: Some(namespace.clone()),
                    labels: Some(labels),
                    owner_references: owner.clone().map(|o| vec![o]),
                    ..Default::default()
                },
                spec,
                status: None,
            };
            if let Some(overrides) = overrides {
                super::config::apply_overrides(&mut deployment, overrides)?;
            }
            // After the Subscription's config, as upstream (`InjectEnvIntoDeployment`): in place
            // when the container already has the variable, else appended.
            if let Some(pod) = deployment.spec.template.spec.as_mut() {
                for container in &mut pod.containers {
                    let wanted = EnvVar {
                        name: OPERATOR_CONDITION_ENV.to_owned(),
                        value: Some(name.clone()),
                        value_from: None,
                    };
                    let env = container.env.get_or_insert_with(Vec::new);
                    match env.iter_mut().find(|e| e.name == OPERATOR_CONDITION_ENV) {
                        Some(existing) => *existing = wanted,
                        None => env.push(wanted),
                    }
                }
            }
            stamp_spec_hash(&mut deployment);
            Ok(deployment)
        })
        .collect()
}

/// Whether the Deployment the store shows already is what `desired` asks for: same spec hash,
/// every desired label, and the CSV's owner reference. Applying it again would change nothing.
#[must_use]
pub fn deployment_up_to_date(desired: &Deployment, seen: &Deployment) -> bool {
    let labels_match = desired
        .labels()
        .iter()
        .all(|(k, v)| seen.labels().get(k) == Some(v));
    let owners_match = desired
        .owner_references()
        .iter()
        .all(|o| seen.owner_references().iter().any(|s| s.uid == o.uid));
    labels_match && owners_match
}

/// The Deployment update strategy a spec asks for, with the API server's default
/// (`RollingUpdate`) when it names none.
fn strategy_type(deployment: &Deployment) -> &str {
    deployment
        .spec
        .strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("RollingUpdate")
}

/// The JSON merge patch to send before applying `desired` when the live Deployment (`seen`) has
/// another update strategy type, or `None` when the types agree.
///
/// Upstream replaces the whole Deployment on an upgrade, so a new strategy simply takes effect.
/// A server-side apply cannot do that when the old `rollingUpdate` block was filled in by the
/// API server's defaulting: no field manager owns it, so the apply keeps it, and the server
/// refuses `type: Recreate` beside a `rollingUpdate` ("may not be specified when strategy
/// `type` is 'Recreate'"). The patch sets the new type and the desired `rollingUpdate` —
/// `null` (removed) when the desired spec has none — in one write; the apply that follows then
/// owns the strategy as usual.
#[must_use]
pub fn strategy_switch_patch(desired: &Deployment, seen: &Deployment) -> Option<serde_json::Value> {
    let wanted = strategy_type(desired);
    if wanted == strategy_type(seen) {
        return None;
    }
    let rolling_update = desired
        .spec
        .strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| serde_json::to_value(r).ok())
        .unwrap_or(serde_json::Value::Null);
    Some(serde_json::json!({
        "spec": {"strategy": {"type": wanted, "rollingUpdate": rolling_update}}
    }))
}

/// Labels `deployment` with `olm.deployment-spec-hash`, the hash of its spec as it now is (the
/// install strategy's, then again after the webhooks' certificate mounts).
pub fn stamp_spec_hash(deployment: &mut Deployment) {
    let hash = encode_hash(hash_json(&deployment.spec), 13);
    deployment
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(DEPLOYMENT_SPEC_HASH.to_owned(), hash);
}
