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
//!
//! On a terminal the preview ends with a question (`approve ...? [y/N]`); `--yes` (and any run
//! without a terminal: scripts, CI) approves without asking.
//!
//! The preview says what each step will do ([`crate::plan::preview`]): `new`, `changed` (with the
//! fields, compared with what a server-side dry-run apply of the step would leave, as the
//! controller applies it) or `unchanged`; the RBAC the plan grants, flagging wildcards,
//! `secrets`, `escalate`/`bind`/`impersonate`, nodes and admission webhooks; and the images
//! its operators will run; and, for an upgrade, what goes with the CSV it replaces (objects that
//! CSV owns which the plan does not keep, [`crate::plan::preview::removals`]). A step whose dry
//! run the API server refuses (its CRD is installed by the same plan) reads `unknown` with the
//! reason.

use kube::api::{Api, Patch, PatchParams};
use serde_json::Value;

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

use crate::plan::preview::step_manifests;
pub use crate::plan::preview::{Approvable, Preview, StepPreview, preview};

/// The field manager of the preview's dry-run applies: its own, so that a dry run never drops a
/// field the controller's manager owns (and a removal the plan would make is not shown).
const PREVIEW_MANAGER: &str = "kubectl-olm-preview";

/// Fills each step's `change` by comparing the live object with a server-side dry-run apply of
/// the step's manifest ([`crate::plan::preview::step_change`]). A step the API server cannot
/// dry-run (its kind is not served yet) reads `unknown`, with the reason.
pub async fn compare_steps(cluster: &Cluster, plan: &InstallPlan, shown: &mut Preview) {
    use crate::plan::{preview::step_change, steps};
    let ns = plan.metadata.namespace.clone().unwrap_or_default();
    let steps_in_plan = plan
        .status
        .as_ref()
        .map(|s| s.plan.as_slice())
        .unwrap_or_default();
    let mut discovered: std::collections::HashMap<
        kube::core::GroupVersionKind,
        (kube::api::ApiResource, kube::discovery::ApiCapabilities),
    > = std::collections::HashMap::new();
    for (step, view) in steps_in_plan.iter().zip(shown.steps.iter_mut()) {
        let Some(manifest) = step
            .resource
            .manifest
            .as_deref()
            .and_then(|m| serde_json::from_str::<Value>(m).ok())
        else {
            // Not listed yet (a bundle still being unpacked): nothing to compare.
            continue;
        };
        let (group, version, kind) = steps::step_gvk(&step.resource, &manifest);
        let mut object = steps::with_type(&manifest, &group, &version, &kind);
        let gvk = kube::core::GroupVersionKind::gvk(&group, &version, &kind);
        // One discovery request per kind (a plan holds several Roles, ServiceAccounts, ...).
        let found = match discovered.get(&gvk) {
            Some(found) => Ok(found.clone()),
            None => kube::discovery::pinned_kind(&cluster.client, &gvk).await,
        };
        let (resource, caps) = match found {
            Ok(found) => {
                discovered.insert(gvk, found.clone());
                found
            }
            Err(e) => {
                view.change = Some("unknown".into());
                view.note = Some(format!(
                    "{group}/{version} {kind} is not served yet ({}); the plan installs it first",
                    crate::k8s::message::describe(&e)
                ));
                continue;
            }
        };
        let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
        if namespaced && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("namespace".into(), Value::String(ns.clone()));
            // An owner reference whose uid the executor fills in (the plan's CSV) cannot be
            // sent as it is; the owner is not what the preview compares.
            if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
                refs.retain(|r| {
                    r.get("uid")
                        .and_then(Value::as_str)
                        .is_some_and(|u| !u.is_empty())
                });
            }
        }
        let api: Api<kube::api::DynamicObject> = if namespaced {
            Api::namespaced_with(cluster.client.clone(), &ns, &resource)
        } else {
            Api::all_with(cluster.client.clone(), &resource)
        };
        let live = match api.get_opt(&step.resource.name).await {
            Ok(live) => live.and_then(|o| serde_json::to_value(o).ok()),
            Err(e) => {
                view.change = Some("unknown".into());
                view.note = Some(crate::k8s::message::describe(&e));
                continue;
            }
        };
        if live.is_none() {
            view.change = Some(crate::plan::preview::Change::New.label().into());
            continue;
        }
        view.live_metadata = live.as_ref().and_then(|l| l.get("metadata")).cloned();
        if kind == "CustomResourceDefinition" {
            view.crd_verdict = Some(crd_verdict(cluster, &manifest, live.as_ref()).await);
        }
        let mut params = PatchParams::apply(PREVIEW_MANAGER).force();
        params.dry_run = true;
        match api
            .patch(&step.resource.name, &params, &Patch::Apply(&object))
            .await
        {
            Ok(applied) => {
                let applied = serde_json::to_value(applied).unwrap_or_default();
                let change = step_change(live.as_ref(), &applied);
                view.change = Some(change.label().into());
                if let crate::plan::preview::Change::Changed { fields } = change {
                    view.fields = fields;
                }
            }
            Err(e) => {
                view.change = Some("unknown".into());
                view.note = Some(format!(
                    "the API server refused the dry run: {}",
                    crate::k8s::message::describe(&e)
                ));
            }
        }
    }
    removed_objects(cluster, plan, &ns, shown).await;
}

/// The group, version, kind and scope of each kind an installed CSV owns
/// ([`crate::plan::preview::OWNED_KINDS`]).
fn owned_kind_gvk(kind: &str) -> kube::core::GroupVersionKind {
    let (group, version) = match kind {
        "Deployment" => ("apps", "v1"),
        "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding" => ("rbac.authorization.k8s.io", "v1"),
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
            ("admissionregistration.k8s.io", "v1")
        }
        "APIService" => ("apiregistration.k8s.io", "v1"),
        _ => ("", "v1"),
    };
    kube::core::GroupVersionKind::gvk(group, version, kind)
}

/// Fills [`Preview::replaces`] and [`Preview::removals`]: for each CSV the plan's CSVs replace
/// (`spec.replaces`) that is installed in the namespace, the objects it owns (owner references
/// in the namespace; `olm.owner` labels elsewhere and cluster-wide), less what the plan keeps.
/// A list the user may not make is named in [`Preview::removals_note`], never skipped silently.
async fn removed_objects(cluster: &Cluster, plan: &InstallPlan, ns: &str, shown: &mut Preview) {
    use crate::{
        api::{labels, v1alpha1::ClusterServiceVersion},
        plan::preview::{OWNED_KINDS, ObjectId, kept_objects, removals},
    };
    let manifests = step_manifests(plan);
    let replaced: Vec<String> = manifests
        .iter()
        .filter(|(kind, _)| kind == crate::plan::steps::CSV_KIND)
        .filter_map(|(_, csv)| csv.pointer("/spec/replaces").and_then(Value::as_str))
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect();
    if replaced.is_empty() {
        return;
    }
    let kept = kept_objects(manifests.iter().map(|(kind, manifest)| (kind.as_str(), manifest)));
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(cluster.client.clone(), ns);
    let mut owned: Vec<ObjectId> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for old in replaced {
        let uid = match csvs.get_opt(&old).await {
            Ok(Some(csv)) => csv.metadata.uid.unwrap_or_default(),
            Ok(None) => continue,
            Err(e) => {
                notes.push(format!(
                    "get clusterserviceversion {old}: {}",
                    crate::k8s::message::describe(&e)
                ));
                continue;
            }
        };
        shown.replaces.push(old.clone());
        let by_label = format!("{}={old},{}={ns}", labels::OWNER, labels::OWNER_NAMESPACE);
        for (kind, namespaced) in OWNED_KINDS {
            let resource = kube::api::ApiResource::from_gvk(&owned_kind_gvk(kind));
            let mut lists = vec![(
                Api::<kube::api::DynamicObject>::all_with(cluster.client.clone(), &resource),
                kube::api::ListParams::default().labels(&by_label),
            )];
            if *namespaced {
                lists.push((
                    Api::namespaced_with(cluster.client.clone(), ns, &resource),
                    kube::api::ListParams::default(),
                ));
            }
            for (api, params) in lists {
                match api.list_metadata(&params).await {
                    Ok(list) => owned.extend(
                        list.items
                            .iter()
                            .filter(|o| {
                                params.label_selector.is_some()
                                    || o.metadata
                                        .owner_references
                                        .iter()
                                        .flatten()
                                        .any(|r| !uid.is_empty() && r.uid == uid)
                            })
                            .map(|o| {
                                ObjectId::new(
                                    kind,
                                    o.metadata.namespace.as_deref(),
                                    o.metadata.name.as_deref().unwrap_or_default(),
                                )
                            }),
                    ),
                    Err(e) => notes.push(format!(
                        "list {}{}: {}",
                        resource.plural,
                        if params.label_selector.is_some() {
                            " by label"
                        } else {
                            ""
                        },
                        crate::k8s::message::describe(&e)
                    )),
                }
            }
        }
    }
    shown.removals = removals(&owned, &kept, ns);
    if !notes.is_empty() {
        shown.removals_note = Some(format!(
            "what the upgrade removes may be incomplete: {}",
            notes.join("; ")
        ));
    }
}

/// Whether the InstallPlan will update the live CRD: `safe`, or its refusal in the plan's words
/// ([`crate::plan::crd_safety`]: no stored version dropped; existing objects valid against a
/// changed schema, read in each version, at most 500 per version here).
async fn crd_verdict(cluster: &Cluster, manifest: &Value, live: Option<&Value>) -> String {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    use crate::plan::crd_safety;
    let (Ok(new), Some(Ok(existing))) = (
        serde_json::from_value::<CustomResourceDefinition>(manifest.clone()),
        live.map(|l| serde_json::from_value::<CustomResourceDefinition>(l.clone())),
    ) else {
        return "not checked: the manifest or the live CRD does not read as apiextensions.k8s.io/v1".into();
    };
    if let Err(e) = crd_safety::stored_versions_kept(&existing, &new) {
        return format!("refused: {e}");
    }
    for (version, schema) in crd_safety::versions_to_validate(&existing, &new) {
        let gvk = kube::core::GroupVersionKind::gvk(&new.spec.group, &version, &new.spec.names.kind);
        let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, &new.spec.names.plural);
        let api: Api<kube::api::DynamicObject> = Api::all_with(cluster.client.clone(), &resource);
        let objects: Vec<Value> = match api.list(&kube::api::ListParams::default().limit(500)).await {
            Ok(list) => list
                .items
                .iter()
                .filter_map(|o| serde_json::to_value(o).ok())
                .collect(),
            Err(e) => {
                return format!(
                    "not checked: listing its {version} objects failed: {}",
                    crate::k8s::message::describe(&e)
                );
            }
        };
        if let Err(e) = crd_safety::existing_objects_valid(&new, &version, &schema, &objects) {
            return if crd_safety::uses_webhook_conversion(&new) {
                format!("warning (updated anyway: the CRD converts by webhook): {e}")
            } else {
                format!("refused: {e}")
            };
        }
    }
    "safe".into()
}

/// Decides whether `plan` can be approved ([`crate::plan::preview::approvable`]).
///
/// # Errors
/// [`CliError::Refused`] for a finished plan.
pub fn approvable(plan: &InstallPlan) -> Result<Approvable, CliError> {
    crate::plan::preview::approvable(plan).map_err(CliError::Refused)
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
    let compared = p.steps.iter().any(|s| s.change.is_some());
    let mut headers = vec!["KIND", "NAME", "STATUS"];
    if compared {
        headers.push("CHANGE");
    }
    if wide {
        headers.extend(["API VERSION", "RESOLVING"]);
    }
    let rows: Vec<Vec<String>> = p
        .steps
        .iter()
        .map(|s| {
            let mut r = vec![s.kind.clone(), s.name.clone(), s.status.clone()];
            if compared {
                r.push(s.change.clone().unwrap_or_default());
            }
            if wide {
                r.extend([s.api_version.clone(), s.resolving.clone()]);
            }
            r
        })
        .collect();
    for line in output::table(&headers, &rows).lines() {
        writeln!(out, "    {line}")?;
    }
    for s in &p.steps {
        for f in &s.fields {
            let show = |v: &Option<Value>| v.as_ref().map_or_else(|| "(none)".to_owned(), shown_value);
            writeln!(
                out,
                "    {} {}: {}: {} -> {}",
                s.kind,
                s.name,
                f.path,
                show(&f.before),
                show(&f.after)
            )?;
        }
        if let Some(note) = &s.note {
            writeln!(out, "    {} {}: {note}", s.kind, s.name)?;
        }
        if let Some(verdict) = &s.crd_verdict {
            writeln!(out, "    {} {}: update {verdict}", s.kind, s.name)?;
        }
    }
    if !p.removals.is_empty() {
        writeln!(
            out,
            "  Removed with {} once the upgrade is done ({}):",
            p.replaces.join(", "),
            p.removals.len()
        )?;
        let rows: Vec<Vec<String>> = p
            .removals
            .iter()
            .map(|o| {
                vec![
                    o.kind.clone(),
                    o.name.clone(),
                    o.namespace.clone().unwrap_or_else(|| "(cluster)".into()),
                ]
            })
            .collect();
        for line in output::table(&["KIND", "NAME", "NAMESPACE"], &rows).lines() {
            writeln!(out, "    {line}")?;
        }
    }
    if let Some(note) = &p.removals_note {
        writeln!(out, "  {note}")?;
    }
    if !p.grants.is_empty() {
        writeln!(out, "  RBAC granted ({} rules):", p.grants.len())?;
        let rows: Vec<Vec<String>> = p
            .grants
            .iter()
            .map(|g| {
                vec![
                    g.role.clone(),
                    match &g.scope {
                        crate::plan::preview::Scope::Cluster => "cluster-wide".to_owned(),
                        crate::plan::preview::Scope::Namespace(ns) => format!("namespace {ns}"),
                    },
                    g.api_groups
                        .iter()
                        .map(|x| if x.is_empty() { "core" } else { x.as_str() })
                        .collect::<Vec<_>>()
                        .join(","),
                    g.resources.join(","),
                    g.verbs.join(","),
                    g.flags.iter().map(|f| f.label()).collect::<Vec<_>>().join(", "),
                ]
            })
            .collect();
        let headers = ["ROLE", "SCOPE", "API GROUPS", "RESOURCES", "VERBS", "FLAGGED"];
        for line in output::table(&headers, &rows).lines() {
            writeln!(out, "    {line}")?;
        }
    }
    if !p.images.is_empty() {
        writeln!(out, "  Images: {}", p.images.join(", "))?;
    }
    Ok(())
}

/// A changed value as the text preview shows it: as JSON, or for a long object or list (a CRD
/// version with its schema) its size, with the way to see it whole.
fn shown_value(value: &Value) -> String {
    let text = value.to_string();
    match value {
        Value::Object(map) if text.len() > 120 => {
            format!("{{an object of {} fields; -o yaml shows it}}", map.len())
        }
        Value::Array(items) if text.len() > 120 => {
            format!("[a list of {} items; -o yaml shows it]", items.len())
        }
        _ => text,
    }
}

/// The plan `target` names (its namespace, name and object) and its preview, each step
/// compared with the cluster ([`compare_steps`]).
///
/// # Errors
/// Lookup failures (Subscription, InstallPlan), API errors.
async fn find_plan(
    cluster: &Cluster,
    target: &crate::cli::PlanTarget,
) -> Result<(String, String, InstallPlan, Preview), CliError> {
    let ns = cluster.namespace(target.namespace.as_deref());
    let ns = ns.as_str();
    let plans: Api<InstallPlan> = Api::namespaced(cluster.client.clone(), ns);
    let name = match (target.install_plan.as_ref(), target.subscription.as_ref()) {
        (Some(name), _) => name.clone(),
        (None, Some(key)) => {
            let subs_api: Api<Subscription> = Api::namespaced(cluster.client.clone(), ns);
            let subs = list_or_olm_missing(cluster, &subs_api, "subscriptions", ns).await?;
            pending_plan(select_subscription(&subs, key, ns)?)?
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
    compare_steps(cluster, &plan, &mut shown).await;
    Ok((ns.to_owned(), name, plan, shown))
}

/// Runs `plan show` (`plan diff`): the preview of `approve`, nothing approved.
///
/// # Errors
/// Lookup failures (Subscription, InstallPlan), API errors.
pub async fn show(
    cluster: &Cluster,
    args: &crate::cli::PlanShowArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let (_, _, _, shown) = find_plan(cluster, &args.target).await?;
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &shown)?,
        OutputFormat::Name => writeln!(streams.out, "{}", qualified::<InstallPlan>(&shown.install_plan))?,
        _ => write_preview(streams.out, &shown, format == OutputFormat::Wide)?,
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
    let (ns, name, plan, mut shown) = find_plan(cluster, &args.target).await?;
    let plans: Api<InstallPlan> = Api::namespaced(cluster.client.clone(), &ns);
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
        if !args.dry_run && !args.yes && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            write!(streams.err, "approve {qname}? [y/N] ")?;
            streams.err.flush()?;
            let mut answer = String::new();
            std::io::stdin().read_line(&mut answer)?;
            if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
                return Err(CliError::Refused(format!(
                    "{qname} left unapproved; answer y to approve it, or pass --yes"
                )));
            }
        }
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
