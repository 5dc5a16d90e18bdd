//! `kubectl-olm install PKG`: creates the Subscription that makes OLM install a package, and, with
//! `--create-operator-group`, the OperatorGroup the namespace needs.
//!
//! Rules: OLM installs nothing in a namespace without exactly one OperatorGroup, so the verb checks
//! that first and refuses (naming the fix) rather than leaving a Subscription that never resolves.
//! A package already subscribed in the namespace is refused too (two Subscriptions to one package
//! fight over one CSV). The created OperatorGroup is named after the namespace and targets only it
//! (OwnNamespace), like `kubectl operator install --create-operator-group`. The Subscription is
//! named after the package; channel, startingCSV and approval are set only when given, so the
//! controller's defaults (default channel, channel head, Automatic) apply otherwise.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, PostParams};
use serde::Serialize;

use crate::{
    api::{
        v1::{OperatorGroup, OperatorGroupSpec},
        v1alpha1::{Approval, CatalogSource, Subscription, SubscriptionSpec},
    },
    cli::{
        ApprovalArg, CliError, InstallArgs, OutputFormat,
        cluster::{Cluster, is_not_found},
        cmd::cluster::shared::{FIELD_MANAGER, list_or_olm_missing, qualified},
        error::known_list,
        output::{self, Streams},
    },
};

/// Builds the Subscription `install` creates.
pub fn subscription(args: &InstallArgs, namespace: &str) -> Subscription {
    let mut sub = Subscription::new(
        &args.package,
        SubscriptionSpec {
            source: args.catalog_source.clone(),
            source_namespace: args.catalog_source_namespace.clone(),
            name: args.package.clone(),
            channel: args.channel.clone().filter(|c| !c.is_empty()),
            starting_csv: args.starting_csv.clone().filter(|c| !c.is_empty()),
            install_plan_approval: Some(match args.approval {
                ApprovalArg::Automatic => Approval::Automatic,
                ApprovalArg::Manual => Approval::Manual,
            }),
            config: None,
        },
    );
    sub.metadata.namespace = Some(namespace.to_string());
    sub
}

/// Builds the OperatorGroup `--create-operator-group` creates: named after the namespace,
/// targeting only it.
pub fn operator_group(namespace: &str) -> OperatorGroup {
    let mut og = OperatorGroup::new(
        namespace,
        OperatorGroupSpec {
            target_namespaces: Some(vec![namespace.to_string()]),
            ..OperatorGroupSpec::default()
        },
    );
    og.metadata.namespace = Some(namespace.to_string());
    og
}

/// What to do about the namespace's OperatorGroup.
#[derive(Debug, PartialEq, Eq)]
pub enum OperatorGroupPlan {
    /// The namespace has exactly one: use it.
    Existing(String),
    /// It has none and the flag asks to create one.
    Create,
}

/// Decides from the names of the namespace's OperatorGroups.
///
/// # Errors
/// [`CliError::NoOperatorGroup`] when there is none and `create` is false;
/// [`CliError::TooManyOperatorGroups`] when there are several.
pub fn plan_operator_group(
    existing: &[String],
    namespace: &str,
    create: bool,
) -> Result<OperatorGroupPlan, CliError> {
    match existing {
        [] if create => Ok(OperatorGroupPlan::Create),
        [] => Err(CliError::NoOperatorGroup {
            namespace: namespace.to_string(),
        }),
        [one] => Ok(OperatorGroupPlan::Existing(one.clone())),
        many => Err(CliError::TooManyOperatorGroups {
            namespace: namespace.to_string(),
            count: many.len(),
            names: many.join(", "),
        }),
    }
}

/// The Subscription in `subs` that already installs `package` (by `spec.name`, or by name).
pub fn existing_subscription<'a>(subs: &'a [Subscription], package: &str) -> Option<&'a Subscription> {
    subs.iter()
        .find(|s| s.spec.name == package)
        .or_else(|| subs.iter().find(|s| s.metadata.name.as_deref() == Some(package)))
}

/// One object `install` created, for `-o json|yaml`.
#[derive(Serialize)]
#[serde(untagged)]
enum Created {
    OperatorGroup(Box<OperatorGroup>),
    Subscription(Box<Subscription>),
}

#[derive(Serialize)]
struct List {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    items: Vec<Created>,
}

/// Runs `install`.
///
/// # Errors
/// Lookup failures (namespace, OperatorGroup, CatalogSource, an existing Subscription) and API errors.
pub async fn run(
    cluster: &Cluster,
    args: &InstallArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let ns = cluster.namespace(args.namespace.as_deref());
    let client = cluster.client.clone();

    let namespaces: Api<Namespace> = Api::all(client.clone());
    match namespaces.get_opt(&ns).await {
        Ok(Some(_)) => {}
        Ok(None) => {
            return Err(CliError::NotFound(format!(
                "namespace {ns} not found; create it first: kubectl create namespace {ns}"
            )));
        }
        // A user allowed in one namespace may not read Namespace objects: go on.
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        Err(e) => return Err(cluster.api_error(&format!("get namespace {ns}"), e)),
    }

    let subs_api: Api<Subscription> = Api::namespaced(client.clone(), &ns);
    let subs = list_or_olm_missing(cluster, &subs_api, "subscriptions", &ns).await?;
    if let Some(existing) = existing_subscription(&subs, &args.package) {
        return Err(CliError::AlreadySubscribed {
            package: args.package.clone(),
            namespace: ns,
            subscription: existing.metadata.name.clone().unwrap_or_default(),
        });
    }

    let og_api: Api<OperatorGroup> = Api::namespaced(client.clone(), &ns);
    let ogs = list_or_olm_missing(cluster, &og_api, "operatorgroups", &ns).await?;
    let og_names: Vec<String> = ogs.iter().filter_map(|o| o.metadata.name.clone()).collect();
    let og_plan = plan_operator_group(&og_names, &ns, args.create_operator_group)?;

    check_catalog_source(cluster, &args.catalog_source, &args.catalog_source_namespace).await?;

    let params = PostParams {
        dry_run: args.dry_run,
        field_manager: Some(FIELD_MANAGER.to_string()),
    };
    let mut created = Vec::new();
    if og_plan == OperatorGroupPlan::Create {
        let og = og_api
            .create(&params, &operator_group(&ns))
            .await
            .map_err(|e| cluster.api_error(&format!("create operatorgroup {ns} in namespace {ns}"), e))?;
        created.push(Created::OperatorGroup(Box::new(without_managed_fields(og))));
    }
    let sub = subs_api
        .create(&params, &subscription(args, &ns))
        .await
        .map_err(|e| {
            cluster.api_error(
                &format!("create subscription {} in namespace {ns}", args.package),
                e,
            )
        })?;
    created.push(Created::Subscription(Box::new(without_managed_fields(sub))));

    print_created(&created, args, &ns, format, streams)
}

/// Drops `metadata.managedFields`, which kubectl hides too unless asked.
fn without_managed_fields<K: kube::Resource>(mut object: K) -> K {
    object.meta_mut().managed_fields = None;
    object
}

fn print_created(
    created: &[Created],
    args: &InstallArgs,
    ns: &str,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let dry = if args.dry_run { " (dry run)" } else { "" };
    let lines: Vec<String> = created
        .iter()
        .map(|c| match c {
            Created::OperatorGroup(og) => {
                qualified::<OperatorGroup>(og.metadata.name.as_deref().unwrap_or(""))
            }
            Created::Subscription(s) => qualified::<Subscription>(s.metadata.name.as_deref().unwrap_or("")),
        })
        .collect();
    match format {
        OutputFormat::Json | OutputFormat::Yaml => {
            let items = created
                .iter()
                .map(|c| match c {
                    Created::OperatorGroup(og) => Created::OperatorGroup(og.clone()),
                    Created::Subscription(s) => Created::Subscription(s.clone()),
                })
                .collect();
            let list = List {
                api_version: output::LIST_API_VERSION,
                kind: "List",
                items,
            };
            output::print_object(streams.out, format, &list)?;
        }
        OutputFormat::Name => {
            for line in &lines {
                writeln!(streams.out, "{line}")?;
            }
        }
        OutputFormat::Table | OutputFormat::Wide => {
            for line in &lines {
                writeln!(streams.out, "{line} created{dry}")?;
            }
            if !args.dry_run {
                let next = match args.approval {
                    ApprovalArg::Manual => format!(
                        "InstallPlans wait for approval: kubectl olm approve --subscription {} -n {ns}",
                        args.package
                    ),
                    ApprovalArg::Automatic => "the controller resolves and installs it now".to_string(),
                };
                writeln!(streams.err, "{next}; follow it with: kubectl olm list -n {ns}")?;
            }
        }
    }
    Ok(())
}

/// Fails when the CatalogSource does not exist, listing those that do. Skipped when the user may
/// not read CatalogSources.
async fn check_catalog_source(cluster: &Cluster, name: &str, namespace: &str) -> Result<(), CliError> {
    let api: Api<CatalogSource> = Api::namespaced(cluster.client.clone(), namespace);
    match api.get_opt(name).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => {
            let all: Api<CatalogSource> = Api::all(cluster.client.clone());
            let known = match all.list(&ListParams::default()).await {
                Ok(list) => known_list(list.items.iter().map(|c| {
                    format!(
                        "{}/{}",
                        c.metadata.namespace.as_deref().unwrap_or(""),
                        c.metadata.name.as_deref().unwrap_or("")
                    )
                })),
                Err(_) => "unknown (cannot list them)".to_string(),
            };
            Err(CliError::CatalogSourceNotFound {
                name: name.to_string(),
                namespace: namespace.to_string(),
                known,
            })
        }
        Err(kube::Error::Api(s)) if s.code == 403 => Ok(()),
        Err(e) if is_not_found(&e) => Err(CliError::OlmNotInstalled {
            resource: "catalogsources".to_string(),
        }),
        Err(e) => Err(cluster.api_error(&format!("get catalogsource {namespace}/{name}"), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata helper so tests can build Subscriptions by name.
    fn named(name: &str, package: &str) -> Subscription {
        Subscription {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_string()),
                ..kube::api::ObjectMeta::default()
            },
            spec: SubscriptionSpec {
                source: "s".into(),
                source_namespace: "olm".into(),
                name: package.to_string(),
                channel: None,
                starting_csv: None,
                install_plan_approval: None,
                config: None,
            },
            status: None,
        }
    }

    fn args() -> InstallArgs {
        InstallArgs {
            package: "redis-operator".into(),
            namespace: None,
            channel: None,
            starting_csv: None,
            approval: ApprovalArg::Automatic,
            create_operator_group: false,
            catalog_source: "olm-rs-catalog".into(),
            catalog_source_namespace: "olm".into(),
            dry_run: false,
        }
    }

    #[test]
    fn the_subscription_is_named_after_the_package_and_leaves_channel_to_the_controller() {
        let sub = subscription(&args(), "redis");
        let json = serde_json::to_value(&sub).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "Subscription",
                "metadata": {"name": "redis-operator", "namespace": "redis"},
                "spec": {
                    "source": "olm-rs-catalog",
                    "sourceNamespace": "olm",
                    "name": "redis-operator",
                    "installPlanApproval": "Automatic"
                }
            })
        );
    }

    #[test]
    fn channel_starting_csv_and_manual_approval_are_carried_over() {
        let mut a = args();
        a.channel = Some("alpha".into());
        a.starting_csv = Some("redis-operator.v0.1.0".into());
        a.approval = ApprovalArg::Manual;
        let sub = subscription(&a, "redis");
        assert_eq!(sub.spec.channel.as_deref(), Some("alpha"));
        assert_eq!(sub.spec.starting_csv.as_deref(), Some("redis-operator.v0.1.0"));
        assert_eq!(sub.spec.approval(), Approval::Manual);
    }

    #[test]
    fn an_empty_channel_flag_means_the_default_channel() {
        let mut a = args();
        a.channel = Some(String::new());
        assert_eq!(subscription(&a, "x").spec.channel, None);
    }

    #[test]
    fn the_created_operator_group_is_named_after_the_namespace_and_targets_only_it() {
        let og = operator_group("redis");
        assert_eq!(og.metadata.name.as_deref(), Some("redis"));
        assert_eq!(og.metadata.namespace.as_deref(), Some("redis"));
        assert_eq!(og.spec.target_namespaces, Some(vec!["redis".to_string()]));
        assert_eq!(og.spec.selector, None);
    }

    #[test]
    fn without_an_operator_group_install_fails_unless_asked_to_create_one() {
        let err = plan_operator_group(&[], "redis", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "namespace redis has no OperatorGroup; pass --create-operator-group or create one \
             (kubectl apply -f operatorgroup.yaml with spec.targetNamespaces: [redis])"
        );
        assert_eq!(err.exit_code(), 1);
        assert_eq!(
            plan_operator_group(&[], "redis", true).unwrap(),
            OperatorGroupPlan::Create
        );
    }

    #[test]
    fn an_existing_operator_group_is_used_even_with_the_flag() {
        let plan = plan_operator_group(&["og".into()], "redis", true).unwrap();
        assert_eq!(plan, OperatorGroupPlan::Existing("og".into()));
    }

    #[test]
    fn two_operator_groups_are_refused_with_their_names() {
        let err = plan_operator_group(&["a".into(), "b".into()], "redis", true).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("has 2 OperatorGroups (a, b)"), "{text}");
    }

    #[test]
    fn an_existing_subscription_is_found_by_package_or_by_name() {
        let subs = vec![named("mine", "redis-operator"), named("etcd", "other")];
        assert_eq!(
            existing_subscription(&subs, "redis-operator").and_then(|s| s.metadata.name.as_deref()),
            Some("mine")
        );
        assert!(existing_subscription(&subs, "etcd").is_some());
        assert!(existing_subscription(&subs, "nothing").is_none());
    }
}
