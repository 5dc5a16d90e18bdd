//! `kubectl-olm approve (INSTALLPLAN | --subscription SUB)`: shows what an InstallPlan will install,
//! then sets its `spec.approved: true` (a JSON merge patch, the same change as
//! `kubectl patch installplan X --type merge -p '{"spec":{"approved":true}}'`).
//!
//! Rules: with `--subscription` the plan is the one the Subscription points at
//! (`status.installPlanRef`, else the deprecated `status.installplan`); SUB may be the Subscription's
//! name or its package. The preview lists the plan's CSVs and every step (kind and name) before
//! anything changes, so `--dry-run` is a review. An already approved plan is reported and left
//! alone (exit 0); a finished plan (`Complete`, `Failed`) is refused, because approving it changes
//! nothing.

use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;

use crate::{
    api::v1alpha1::{InstallPlan, Subscription},
    cli::{
        ApproveArgs, CliError, OutputFormat,
        cluster::{Cluster, is_not_found},
        cmd::cluster::{
            list::install_plan_name,
            shared::{FIELD_MANAGER, list_or_olm_missing, qualified},
        },
        error::known_list,
        output::{self, Streams},
    },
};

/// One step of the plan, as the preview shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepPreview {
    /// Kind of the object.
    pub kind: String,
    /// Name of the object.
    pub name: String,
    /// `group/version` (or `version` for the core group).
    pub api_version: String,
    /// The step's status (`Unknown` before execution).
    pub status: String,
    /// The CSV the step belongs to.
    pub resolving: String,
}

/// What approving the plan will install.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// The InstallPlan.
    pub install_plan: String,
    /// Its namespace.
    pub namespace: String,
    /// Its phase before the approval.
    pub phase: String,
    /// Whether it is approved (after this command, unless `--dry-run`).
    pub approved: bool,
    /// The CSVs it installs.
    pub cluster_service_version_names: Vec<String>,
    /// The objects it creates, in order.
    pub steps: Vec<StepPreview>,
}

/// Whether a plan can be approved.
#[derive(Debug, PartialEq, Eq)]
pub enum Approvable {
    /// Not approved yet: approve it.
    Yes,
    /// Already approved: nothing to do.
    AlreadyApproved,
}

/// The preview of `plan`.
pub fn preview(plan: &InstallPlan) -> Preview {
    let status = plan.status.as_ref();
    Preview {
        install_plan: plan.metadata.name.clone().unwrap_or_default(),
        namespace: plan.metadata.namespace.clone().unwrap_or_default(),
        phase: status.map(|s| s.phase.as_str().to_string()).unwrap_or_default(),
        approved: plan.spec.approved,
        cluster_service_version_names: plan.spec.cluster_service_version_names.clone(),
        steps: status
            .map(|s| {
                s.plan
                    .iter()
                    .map(|step| StepPreview {
                        kind: step.resource.kind.clone(),
                        name: step.resource.name.clone(),
                        api_version: if step.resource.group.is_empty() {
                            step.resource.version.clone()
                        } else {
                            format!("{}/{}", step.resource.group, step.resource.version)
                        },
                        status: step.status.as_str().to_string(),
                        resolving: step.resolving.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Decides whether `plan` can be approved.
///
/// # Errors
/// [`CliError::Refused`] for a finished plan.
pub fn approvable(plan: &InstallPlan) -> Result<Approvable, CliError> {
    let name = plan.metadata.name.as_deref().unwrap_or("");
    if plan.spec.approved {
        return Ok(Approvable::AlreadyApproved);
    }
    match plan.status.as_ref().map(|s| &s.phase) {
        Some(phase) if phase.is_terminal() => Err(CliError::Refused(format!(
            "installplan {name} is already {phase}; approving it changes nothing (see `kubectl olm list` for what waits for approval)"
        ))),
        _ => Ok(Approvable::Yes),
    }
}

/// The Subscription `key` names: by name, else the one whose package is `key`.
///
/// # Errors
/// [`CliError::NotFound`] listing the Subscriptions of the namespace.
pub fn select_subscription<'a>(
    subs: &'a [Subscription],
    key: &str,
    namespace: &str,
) -> Result<&'a Subscription, CliError> {
    subs.iter()
        .find(|s| s.metadata.name.as_deref() == Some(key))
        .or_else(|| subs.iter().find(|s| s.spec.name == key))
        .ok_or_else(|| {
            CliError::NotFound(format!(
                "subscription {key} not found in namespace {namespace}; subscriptions: {}; pass -n NAMESPACE, or see `kubectl olm list -A`",
                known_list(subs.iter().map(|s| format!(
                    "{} (package {})",
                    s.metadata.name.as_deref().unwrap_or(""),
                    s.spec.name
                )))
            ))
        })
}

/// The InstallPlan a Subscription waits on.
///
/// # Errors
/// [`CliError::Refused`] when it points at none yet, saying what the Subscription reports.
pub fn pending_plan(sub: &Subscription) -> Result<String, CliError> {
    if let Some(name) = install_plan_name(sub) {
        return Ok(name.to_string());
    }
    let name = sub.metadata.name.as_deref().unwrap_or("");
    let ns = sub.metadata.namespace.as_deref().unwrap_or("");
    let status = sub.status.as_ref();
    let state = status
        .and_then(|s| s.state.as_ref())
        .map(|s| s.as_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("not resolved yet");
    let problems: Vec<String> = status
        .map(|s| {
            s.conditions
                .iter()
                .filter(|c| c.status == crate::api::ConditionStatus::True)
                .map(|c| format!("{}: {}", c.type_, c.message.as_deref().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    let why = if problems.is_empty() {
        String::new()
    } else {
        format!(" ({})", problems.join("; "))
    };
    Err(CliError::Refused(format!(
        "subscription {name} in namespace {ns} has no InstallPlan yet (state: {state}){why}; wait for the controller to resolve it and check `kubectl olm list -n {ns}`"
    )))
}

/// Prints the preview as text.
///
/// # Errors
/// The write error.
pub fn write_preview(out: &mut dyn std::io::Write, p: &Preview, wide: bool) -> std::io::Result<()> {
    let phase = if p.phase.is_empty() {
        "not reconciled yet"
    } else {
        &p.phase
    };
    writeln!(
        out,
        "installplan {} in namespace {} ({phase}) installs:",
        p.install_plan, p.namespace
    )?;
    writeln!(
        out,
        "  ClusterServiceVersions: {}",
        known_list(&p.cluster_service_version_names)
    )?;
    if p.steps.is_empty() {
        writeln!(out, "  Steps: none listed yet (the controller fills status.plan)")?;
        return Ok(());
    }
    writeln!(out, "  Steps ({}):", p.steps.len())?;
    let mut headers = vec!["KIND", "NAME", "STATUS"];
    if wide {
        headers.extend(["API VERSION", "RESOLVING"]);
    }
    let rows: Vec<Vec<String>> = p
        .steps
        .iter()
        .map(|s| {
            let mut r = vec![s.kind.clone(), s.name.clone(), s.status.clone()];
            if wide {
                r.extend([s.api_version.clone(), s.resolving.clone()]);
            }
            r
        })
        .collect();
    for line in output::table(&headers, &rows).lines() {
        writeln!(out, "    {line}")?;
    }
    Ok(())
}

/// Runs `approve`.
///
/// # Errors
/// Lookup failures (Subscription, InstallPlan), a finished plan, API errors.
pub async fn run(
    cluster: &Cluster,
    args: &ApproveArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let ns = cluster.namespace(args.namespace.as_deref());
    let plans: Api<InstallPlan> = Api::namespaced(cluster.client.clone(), &ns);
    let name = match (&args.install_plan, &args.subscription) {
        (Some(name), _) => name.clone(),
        (None, Some(key)) => {
            let subs_api: Api<Subscription> = Api::namespaced(cluster.client.clone(), &ns);
            let subs = list_or_olm_missing(cluster, &subs_api, "subscriptions", &ns).await?;
            pending_plan(select_subscription(&subs, key, &ns)?)?
        }
        (None, None) => {
            return Err(CliError::Usage(
                "pass an InstallPlan name or --subscription SUB".to_string(),
            ));
        }
    };
    let plan = match plans.get(&name).await {
        Ok(p) => p,
        Err(e) if is_not_found(&e) => {
            let known = match plans.list(&kube::api::ListParams::default()).await {
                Ok(l) => known_list(l.items.iter().filter_map(|p| p.metadata.name.clone())),
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    return Err(CliError::OlmNotInstalled {
                        resource: "installplans".into(),
                    });
                }
                Err(_) => "unknown".into(),
            };
            return Err(CliError::NotFound(format!(
                "installplan {name} not found in namespace {ns}; installplans: {known}; pass -n NAMESPACE or --subscription SUB"
            )));
        }
        Err(e) => return Err(cluster.api_error(&format!("get installplan {name} in namespace {ns}"), e)),
    };
    let mut shown = preview(&plan);
    let qname = qualified::<InstallPlan>(&name);
    if approvable(&plan)? == Approvable::AlreadyApproved {
        match format {
            OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &shown)?,
            OutputFormat::Name => writeln!(streams.out, "{qname}")?,
            _ => writeln!(
                streams.out,
                "{qname} is already approved (phase {}); nothing to do",
                if shown.phase.is_empty() {
                    "not reconciled yet"
                } else {
                    &shown.phase
                }
            )?,
        }
        return Ok(());
    }
    if matches!(format, OutputFormat::Table | OutputFormat::Wide) {
        write_preview(streams.out, &shown, format == OutputFormat::Wide)?;
    }
    let params = PatchParams {
        dry_run: args.dry_run,
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PatchParams::default()
    };
    let patch = serde_json::json!({"spec": {"approved": true}});
    let patched = plans
        .patch(&name, &params, &Patch::Merge(&patch))
        .await
        .map_err(|e| cluster.api_error(&format!("approve installplan {name} in namespace {ns}"), e))?;
    shown.approved = patched.spec.approved;
    let dry = if args.dry_run { " (dry run)" } else { "" };
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &shown)?,
        OutputFormat::Name => writeln!(streams.out, "{qname}")?,
        _ => writeln!(streams.out, "{qname} approved{dry}")?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        api::v1alpha1::{InstallPlanPhase, Step, StepResource, StepStatus},
        cli::cmd::cluster::list::tests::{plan, sub},
    };

    fn step(kind: &str, name: &str, group: &str) -> Step {
        Step {
            resolving: "redis.v2".into(),
            resource: StepResource {
                source_name: "olm-rs-catalog".into(),
                source_namespace: "olm".into(),
                group: group.into(),
                version: "v1".into(),
                kind: kind.into(),
                name: name.into(),
                manifest: None,
            },
            optional: false,
            status: StepStatus::Unknown,
        }
    }

    fn waiting_plan() -> InstallPlan {
        let mut p = plan(
            "ns",
            "ip-2",
            &["redis.v2"],
            InstallPlanPhase::RequiresApproval,
            false,
        );
        if let Some(s) = p.status.as_mut() {
            s.plan = vec![
                step(
                    "CustomResourceDefinition",
                    "redisclusters.cache.example.com",
                    "apiextensions.k8s.io",
                ),
                step("ServiceAccount", "redis-operator", ""),
                step("ClusterServiceVersion", "redis.v2", "operators.coreos.com"),
            ];
        }
        p
    }

    #[test]
    fn the_preview_lists_the_csvs_and_every_step_in_order() {
        let p = preview(&waiting_plan());
        assert_eq!(p.cluster_service_version_names, ["redis.v2"]);
        let steps: Vec<(&str, &str, &str)> = p
            .steps
            .iter()
            .map(|s| (s.kind.as_str(), s.name.as_str(), s.api_version.as_str()))
            .collect();
        assert_eq!(
            steps,
            [
                (
                    "CustomResourceDefinition",
                    "redisclusters.cache.example.com",
                    "apiextensions.k8s.io/v1"
                ),
                ("ServiceAccount", "redis-operator", "v1"),
                ("ClusterServiceVersion", "redis.v2", "operators.coreos.com/v1"),
            ]
        );
        assert_eq!(p.phase, "RequiresApproval");
        assert!(!p.approved);
    }

    #[test]
    fn the_text_preview_shows_kind_name_and_status_columns() {
        let mut out = Vec::new();
        write_preview(&mut out, &preview(&waiting_plan()), false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "installplan ip-2 in namespace ns (RequiresApproval) installs:\n  \
             ClusterServiceVersions: redis.v2\n  Steps (3):\n    \
             KIND                       NAME                              STATUS\n    \
             CustomResourceDefinition   redisclusters.cache.example.com   Unknown\n    \
             ServiceAccount             redis-operator                    Unknown\n    \
             ClusterServiceVersion      redis.v2                          Unknown\n"
        );
    }

    #[test]
    fn approved_plans_are_left_alone_and_finished_ones_refused() {
        assert_eq!(approvable(&waiting_plan()).unwrap(), Approvable::Yes);
        let approved = plan("ns", "ip", &["x"], InstallPlanPhase::Installing, true);
        assert_eq!(approvable(&approved).unwrap(), Approvable::AlreadyApproved);
        let done = plan("ns", "ip", &["x"], InstallPlanPhase::Complete, false);
        let err = approvable(&done).unwrap_err();
        assert!(err.to_string().contains("already Complete"), "{err}");
        assert_eq!(err.exit_code(), 1);
    }

    #[test]
    fn the_pending_plan_comes_from_the_install_plan_ref() {
        let s = sub(
            "ns",
            "redis-operator",
            Some("redis.v1"),
            Some("redis.v2"),
            Some("ip-2"),
        );
        assert_eq!(pending_plan(&s).unwrap(), "ip-2");
    }

    #[test]
    fn a_subscription_without_a_plan_says_what_it_reports() {
        let s = sub("ns", "redis-operator", None, None, None);
        let err = pending_plan(&s).unwrap_err().to_string();
        assert!(
            err.starts_with("subscription redis-operator in namespace ns has no InstallPlan yet"),
            "{err}"
        );
    }

    #[test]
    fn a_subscription_is_selected_by_name_or_package_and_a_miss_lists_them() {
        let mut a = sub("ns", "redis-operator", None, None, None);
        a.metadata.name = Some("my-redis".into());
        let subs = [a];
        assert!(select_subscription(&subs, "my-redis", "ns").is_ok());
        assert!(select_subscription(&subs, "redis-operator", "ns").is_ok());
        let err = select_subscription(&subs, "etcd", "ns").unwrap_err().to_string();
        assert!(
            err.contains("subscription etcd not found in namespace ns; subscriptions: my-redis (package redis-operator)"),
            "{err}"
        );
    }
}
