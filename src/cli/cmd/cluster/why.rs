//! `kubectl-olm why SUB|CSV|IP`: why a Subscription is on its version, what comes next, and for
//! a failure its cause and fix, computed by [`crate::plan::subscription::why`] from what this
//! verb reads **as the user** (their kubeconfig, never the controller's rights): the
//! Subscription, the CSVs of its namespace, its CatalogSource and the catalog's content (a
//! `configmap` CatalogSource's ConfigMap, a catalog image pulled from its registry, a `grpc`
//! address, or for a `builtin` one the catalog built into olm-controller, which this binary
//! embeds as well; `--catalog` reads another copy instead). A CSV names the Subscription that
//! installed it; an InstallPlan its owning Subscription.
//!
//! Dependencies may come from any catalog the namespace sees, so every other CatalogSource of
//! the namespace and of the global catalog namespace (`--global-catalog-namespace`, `olm` as the
//! controller's default) is read too, with its priority, as the controller's resolver reads them.
//! One the user cannot list or read is reported with the reason (and resolution treats it as
//! unavailable, as the controller treats an unhealthy one), never skipped silently.
//!
//! The channel graph is drawn below the answer ([`crate::graph::render`]: `--graph text`, the
//! default, or `mermaid` / `dot`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, ResourceExt, api::ListParams};
use serde::Serialize;

use crate::{
    api::v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
    catalog::{Model, load::CatalogOrigin},
    cli::{
        CliError, GraphFormat, OutputFormat, WhyArgs,
        cluster::{Cluster, is_not_found},
        cmd::{
            catalog::shared,
            cluster::{
                approve::select_subscription,
                shared::{list_or_olm_missing, qualified},
            },
        },
        error::known_list,
        output::{self, Streams},
        registry::RegistryArgs,
    },
    graph::{self, RenderOptions},
    plan::subscription::why::{self, ReadCatalog, Why, WhyInput},
    resolve::{Catalog, CatalogKey, Catalogs, ExistingSubscription, Installed, InstalledCsv},
};

/// What `why` prints: the answer and, for `-o json|yaml`, the graph as drawn.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhyOutput {
    /// The object asked about, when it was not the Subscription (`installplan/NAME ...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    /// The answer.
    #[serde(flatten)]
    pub why: Why,
    /// The channel graph, drawn as `--graph` asks.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub graph: String,
}

/// A Subscription and what its answers need, read as the user.
pub struct Observed {
    /// The Subscription.
    pub subscription: Subscription,
    /// The CSVs of its namespace.
    pub csvs: Vec<ClusterServiceVersion>,
    /// The other Subscriptions of its namespace (and itself).
    pub subscriptions: Vec<Subscription>,
    /// Its catalog's content.
    pub model: Model,
    /// The catalog's `spec.priority`.
    pub priority: i32,
    /// The other CatalogSources of the namespace and of the global catalog namespace.
    pub others: Vec<ReadCatalog>,
    /// The namespaces whose CatalogSources could not be listed, and why.
    pub unlisted: Vec<(String, String)>,
    /// The global catalog namespace.
    pub global_namespace: String,
}

impl Observed {
    /// What the namespace holds, as resolution sees it.
    pub fn installed(&self) -> Installed {
        Installed {
            csvs: self.csvs.iter().map(InstalledCsv::from_csv).collect(),
            subscriptions: self
                .subscriptions
                .iter()
                .map(ExistingSubscription::from_subscription)
                .collect(),
        }
    }

    /// The Subscription's catalog and the others its namespace sees, as resolution sees them.
    pub fn catalogs(&self) -> Catalogs<'_> {
        let spec = &self.subscription.spec;
        let own = Catalog {
            key: CatalogKey::new(&spec.source_namespace, &spec.source),
            priority: self.priority,
            model: Some(&self.model),
            problem: None,
        };
        Catalogs {
            global_namespace: self.global_namespace.clone(),
            catalogs: std::iter::once(own)
                .chain(self.others.iter().map(ReadCatalog::catalog))
                .collect(),
        }
    }
}

/// Reads the Subscription `key` names in `ns` and everything its answers need.
///
/// # Errors
/// Lookup failures naming what exists; a 403 naming what the user may not read.
pub async fn observe(
    cluster: &Cluster,
    ns: &str,
    key: &str,
    sources: &Sources<'_>,
    err: &mut dyn std::io::Write,
) -> Result<Observed, CliError> {
    let subs_api: Api<Subscription> = Api::namespaced(cluster.client.clone(), ns);
    let subscriptions = list_or_olm_missing(cluster, &subs_api, "subscriptions", ns).await?;
    let subscription = select_subscription(&subscriptions, key, ns)?.clone();
    subscription_context(cluster, ns, subscription, subscriptions, sources, err).await
}

/// Where the catalogs are read from.
pub struct Sources<'a> {
    /// `--catalog`: the Subscription's catalog read from here instead.
    pub catalog: Option<&'a std::path::Path>,
    /// The global catalog namespace.
    pub global_namespace: &'a str,
    /// How to reach registries.
    pub registry: &'a RegistryArgs,
}

/// Reads, as the user, every CatalogSource besides `own` that resolution in `ns` sees
/// ([`why::other_sources`]). A namespace that cannot be listed, or a catalog that cannot be read,
/// is kept with the reason.
async fn other_catalogs(
    cluster: &Cluster,
    ns: &str,
    own: &CatalogKey,
    sources: &Sources<'_>,
    err: &mut dyn std::io::Write,
) -> (Vec<ReadCatalog>, Vec<(String, String)>) {
    let mut namespaces = vec![ns.to_owned(), sources.global_namespace.to_owned()];
    namespaces.dedup();
    let mut listed = Vec::new();
    let mut unlisted = Vec::new();
    for n in namespaces.iter().filter(|n| !n.is_empty()) {
        let api: Api<CatalogSource> = Api::namespaced(cluster.client.clone(), n);
        match api.list(&ListParams::default()).await {
            Ok(list) => listed.extend(list.items),
            Err(e) => unlisted.push((
                n.clone(),
                cluster
                    .api_error(&format!("list catalogsources in namespace {n}"), e)
                    .to_string(),
            )),
        }
    }
    let mut others = Vec::new();
    for cs in why::other_sources(&listed, ns, sources.global_namespace, own) {
        let content = read_catalog(cluster, cs, sources.registry, err)
            .await
            .map_err(|e| e.to_string());
        others.push(ReadCatalog {
            key: CatalogKey::new(cs.namespace().unwrap_or_default(), cs.name_any()),
            priority: priority_of(cs),
            content,
        });
    }
    (others, unlisted)
}

fn priority_of(cs: &CatalogSource) -> i32 {
    cs.spec
        .priority
        .and_then(|p| i32::try_from(p).ok())
        .unwrap_or_default()
}

async fn subscription_context(
    cluster: &Cluster,
    ns: &str,
    subscription: Subscription,
    subscriptions: Vec<Subscription>,
    sources: &Sources<'_>,
    err: &mut dyn std::io::Write,
) -> Result<Observed, CliError> {
    let catalog = sources.catalog;
    let registry = sources.registry;
    let csv_api: Api<ClusterServiceVersion> = Api::namespaced(cluster.client.clone(), ns);
    let csvs = list_or_olm_missing(cluster, &csv_api, "clusterserviceversions", ns).await?;
    let spec = &subscription.spec;
    let (cs_ns, cs_name) = (spec.source_namespace.as_str(), spec.source.as_str());
    let cs_api: Api<CatalogSource> = Api::namespaced(cluster.client.clone(), cs_ns);
    let source = match cs_api.get(cs_name).await {
        Ok(cs) => Some(cs),
        Err(e) if is_not_found(&e) => None,
        Err(e) => {
            return Err(cluster.api_error(&format!("get catalogsource {cs_name} in namespace {cs_ns}"), e));
        }
    };
    let priority = source.as_ref().map(priority_of).unwrap_or_default();
    let model = match (catalog, &source) {
        (Some(path), _) => shared::load(path, registry, err)?.model,
        (None, None) => {
            return Err(CliError::NotFound(format!(
                "catalogsource {cs_ns}/{cs_name} of subscription {} not found; pass --catalog DIR|IMAGE to \
                 read the catalog from elsewhere, or fix spec.source/spec.sourceNamespace",
                subscription.name_any()
            )));
        }
        (None, Some(cs)) => read_catalog(cluster, cs, registry, err).await?,
    };
    let own = CatalogKey::new(cs_ns, cs_name);
    let (others, unlisted) = other_catalogs(cluster, ns, &own, sources, err).await;
    Ok(Observed {
        subscription,
        csvs,
        subscriptions,
        model,
        priority,
        others,
        unlisted,
        global_namespace: sources.global_namespace.to_owned(),
    })
}

/// The content of CatalogSource `cs`, read as the user: its ConfigMap, its image, or its gRPC
/// address.
async fn read_catalog(
    cluster: &Cluster,
    cs: &CatalogSource,
    registry: &RegistryArgs,
    err: &mut dyn std::io::Write,
) -> Result<Model, CliError> {
    let ns = cs.namespace().unwrap_or_default();
    let name = cs.name_any();
    if let Some(cm_name) = cs.spec.config_map.as_deref().filter(|c| !c.is_empty()) {
        let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), &ns);
        let cm = api
            .get(cm_name)
            .await
            .map_err(|e| cluster.api_error(&format!("get configmap {cm_name} in namespace {ns}"), e))?;
        let data: BTreeMap<String, String> = cm.data.unwrap_or_default();
        let loaded = crate::catalog::load::catalog_from_data(
            &data,
            CatalogOrigin::ConfigMap {
                resource_version: cm.metadata.resource_version.unwrap_or_default(),
            },
        )
        .map_err(|e| CliError::LoadCatalog {
            dir: format!("configmap {ns}/{cm_name}").into(),
            message: e.to_string(),
        })?;
        return Ok(loaded.model);
    }
    if cs.spec.source_type.as_str() == "builtin" {
        // The catalog built into olm-controller, which kubectl-olm embeds too (the same files;
        // a controller started with --builtin-catalog DIR serves that directory instead:
        // pass --catalog DIR).
        return crate::catalog::load::embedded_builtin()
            .map(|loaded| loaded.model)
            .map_err(|e| CliError::LoadCatalog {
                dir: "the built-in catalog".into(),
                message: e.to_string(),
            });
    }
    let location = match (cs.spec.image.as_deref(), cs.spec.address.as_deref()) {
        (Some(image), _) if !image.is_empty() => image.to_owned(),
        (_, Some(address)) if !address.is_empty() => format!("grpc://{address}"),
        _ => {
            return Err(CliError::Refused(format!(
                "catalogsource {ns}/{name} has no configMap, image or address this command can read; \
                 pass --catalog DIR|IMAGE"
            )));
        }
    };
    Ok(shared::load(std::path::Path::new(&location), registry, err)?.model)
}

/// Draws the Subscription's channel as `format` asks.
pub fn draw_graph(model: &Model, package: &str, channel: &str, format: GraphFormat) -> String {
    let Some(pkg) = model.package(package) else {
        return String::new();
    };
    let Some(ch) = pkg.channel(channel) else {
        return String::new();
    };
    let opts = RenderOptions {
        channel: ch.name.clone(),
        package: pkg.name.clone(),
        is_default_channel: pkg.default_channel == ch.name,
    };
    match format {
        GraphFormat::Text => graph::render::text(ch.graph(), &opts),
        GraphFormat::Dot => graph::render::dot(ch.graph(), &opts),
        GraphFormat::Mermaid => graph::render::mermaid(ch.graph(), &opts),
    }
}

/// Prints the answer as text.
///
/// # Errors
/// The write error.
pub fn write_why(out: &mut dyn std::io::Write, o: &WhyOutput) -> std::io::Result<()> {
    let w = &o.why;
    if let Some(asked) = &o.asked {
        writeln!(out, "{asked}")?;
    }
    writeln!(out, "subscription {} (package {})", w.subscription, w.package)?;
    writeln!(
        out,
        "  catalog:   {} (priority {}), channel {}",
        w.catalog, w.catalog_priority, w.channel
    )?;
    writeln!(out, "  approval:  {}", w.approval)?;
    if let Some(c) = &w.version_ceiling {
        writeln!(out, "  ceiling:   {c} (annotation olm-rs.io/version-ceiling)")?;
    }
    writeln!(out, "  state:     {}", w.state)?;
    match &w.installed {
        Some(i) => writeln!(
            out,
            "  installed: {}{} — {}",
            i.bundle,
            i.version
                .as_deref()
                .map(|v| format!(" ({v})"))
                .unwrap_or_default(),
            i.how
        )?,
        None => writeln!(out, "  installed: nothing yet")?,
    }
    writeln!(out, "  next:      {}", w.next)?;
    if let Some(f) = &w.failure {
        writeln!(out, "  failure:   {}", f.cause)?;
        writeln!(out, "  fix:       {}", f.fix)?;
    }
    if !w.dependencies.is_empty() {
        writeln!(out, "  dependencies:")?;
        for d in &w.dependencies {
            writeln!(out, "    {d}")?;
        }
    }
    if !w.other_catalogs.is_empty() {
        writeln!(out, "  other catalogs (dependencies may come from them):")?;
        for c in &w.other_catalogs {
            let priority = c.priority.map(|p| format!(" (priority {p})")).unwrap_or_default();
            match &c.problem {
                Some(problem) => writeln!(out, "    {}{priority}: not read: {problem}", c.catalog)?,
                None => writeln!(out, "    {}{priority}", c.catalog)?,
            }
        }
    }
    if !w.candidates.is_empty() {
        writeln!(out, "  channel entries (head first):")?;
        let rows: Vec<Vec<String>> = w
            .candidates
            .iter()
            .map(|c| {
                vec![
                    c.bundle.clone(),
                    c.version.clone().unwrap_or_default(),
                    c.verdict.clone(),
                ]
            })
            .collect();
        for line in output::table(&["BUNDLE", "VERSION", "VERDICT"], &rows).lines() {
            writeln!(out, "    {line}")?;
        }
    }
    if !o.graph.is_empty() {
        writeln!(out, "  channel graph:")?;
        for line in o.graph.lines() {
            writeln!(out, "    {line}")?;
        }
    }
    Ok(())
}

/// What the target names: its kind and name.
fn parse_target(target: &str) -> (&str, &str) {
    match target.split_once('/') {
        Some((kind, name)) => {
            let kind = match kind.to_ascii_lowercase().as_str() {
                "sub" | "subs" | "subscription" | "subscriptions" | "subscription.operators.coreos.com" => {
                    "subscription"
                }
                "csv"
                | "csvs"
                | "clusterserviceversion"
                | "clusterserviceversions"
                | "clusterserviceversion.operators.coreos.com" => "csv",
                "ip" | "installplan" | "installplans" | "installplan.operators.coreos.com" => "installplan",
                _ => "unknown",
            };
            (kind, name)
        }
        None => ("", target),
    }
}

/// Runs `why`.
///
/// # Errors
/// Lookup failures, unreadable catalogs, API errors (a 403 names what may not be read).
pub async fn run(
    cluster: &Cluster,
    args: &WhyArgs,
    format: OutputFormat,
    streams: &mut Streams<'_>,
) -> Result<(), CliError> {
    let ns = cluster.namespace(args.namespace.as_deref());
    let (kind, name) = parse_target(&args.target);
    let subs_api: Api<Subscription> = Api::namespaced(cluster.client.clone(), &ns);
    let subs = list_or_olm_missing(cluster, &subs_api, "subscriptions", &ns).await?;
    let by_csv = |csv: &str| {
        subs.iter().find(|s| {
            s.status.as_ref().is_some_and(|st| {
                st.installed_csv.as_deref() == Some(csv) || st.current_csv.as_deref() == Some(csv)
            })
        })
    };
    let (sub, asked) = match kind {
        "unknown" => {
            return Err(CliError::Usage(format!(
                "cannot explain {}: name a subscription, csv/NAME or installplan/NAME",
                args.target
            )));
        }
        "csv" => {
            let sub = by_csv(name).ok_or_else(|| {
                CliError::NotFound(format!(
                    "no subscription in namespace {ns} installed or installs csv {name}; subscriptions: {}",
                    known_list(subs.iter().map(|s| format!(
                        "{} ({})",
                        s.name_any(),
                        s.status.as_ref().and_then(|st| st.installed_csv.clone()).unwrap_or_default()
                    )))
                ))
            })?;
            (
                sub,
                Some(format!(
                    "{} is installed by:",
                    qualified::<ClusterServiceVersion>(name)
                )),
            )
        }
        "installplan" => {
            let api: Api<InstallPlan> = Api::namespaced(cluster.client.clone(), &ns);
            let plan = api.get(name).await.map_err(|e| {
                if is_not_found(&e) {
                    CliError::NotFound(format!("installplan {name} not found in namespace {ns}"))
                } else {
                    cluster.api_error(&format!("get installplan {name} in namespace {ns}"), e)
                }
            })?;
            let owner = plan
                .owner_references()
                .iter()
                .find(|o| o.kind == "Subscription")
                .map(|o| o.name.clone());
            let sub = owner
                .as_deref()
                .and_then(|o| subs.iter().find(|s| s.name_any() == o))
                .ok_or_else(|| {
                    CliError::NotFound(format!(
                        "installplan {name} in namespace {ns} belongs to no subscription there (owner: {})",
                        owner.as_deref().unwrap_or("none")
                    ))
                })?;
            let phase = plan
                .status
                .as_ref()
                .map(|s| s.phase.as_str().to_owned())
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "not reconciled yet".to_owned());
            (
                sub,
                Some(format!(
                    "{} ({phase}, installs {}) was made for:",
                    qualified::<InstallPlan>(name),
                    known_list(&plan.spec.cluster_service_version_names)
                )),
            )
        }
        "subscription" => (select_subscription(&subs, name, &ns)?, None),
        _ => match select_subscription(&subs, name, &ns) {
            Ok(sub) => (sub, None),
            Err(e) => match by_csv(name) {
                Some(sub) => (
                    sub,
                    Some(format!(
                        "{} is installed by:",
                        qualified::<ClusterServiceVersion>(name)
                    )),
                ),
                None => return Err(e),
            },
        },
    };
    let sub = sub.clone();
    let sources = Sources {
        catalog: args.catalog.as_deref(),
        global_namespace: &args.global_catalog_namespace,
        registry: &args.registry,
    };
    let observed = subscription_context(cluster, &ns, sub, subs.clone(), &sources, streams.err).await?;
    let installed = observed.installed();
    let catalogs = observed.catalogs();
    let status = observed.subscription.status.as_ref();
    let csv_name = status
        .and_then(|s| s.installed_csv.clone().or_else(|| s.current_csv.clone()))
        .unwrap_or_default();
    let csv = observed.csvs.iter().find(|c| c.name_any() == csv_name);
    let csv_state = csv.and_then(|c| c.status.as_ref()).and_then(|s| {
        Some((
            s.phase.as_ref()?,
            s.reason.as_ref().map(|r| r.as_str()).unwrap_or_default(),
            s.message.as_deref().unwrap_or_default(),
        ))
    });
    let answer = why::explain(&WhyInput {
        subscription: &observed.subscription,
        catalogs: &catalogs,
        installed: &installed,
        csv: csv_state.map(|(phase, reason, message)| (csv_name.as_str(), phase, reason, message)),
        unlisted: &observed.unlisted,
    });
    let graph = draw_graph(&observed.model, &answer.package, &answer.channel, args.graph);
    let shown = WhyOutput {
        asked,
        why: answer,
        graph,
    };
    match format {
        OutputFormat::Json | OutputFormat::Yaml => output::print_object(streams.out, format, &shown)?,
        OutputFormat::Name => writeln!(
            streams.out,
            "{}",
            qualified::<Subscription>(&observed.subscription.name_any())
        )?,
        _ => write_why(streams.out, &shown)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::catalog::{DeclarativeConfig, declcfg::Origin};

    /// Package `a`, channel `stable`: a.v1 ← a.v2 (replaces) ← a.v3 (replaces, skipRange
    /// `>=1.0.0 <3.0.0`), plus the deprecated a.v0 before them.
    fn fixture() -> Model {
        fixture_requiring(None)
    }

    /// [`fixture`], its head a.v3 requiring package `b` at `range`, if given.
    fn fixture_requiring(range: Option<&str>) -> Model {
        let required: Vec<Value> = range
            .map(
                |r| json!({"type": "olm.package.required", "value": {"packageName": "b", "versionRange": r}}),
            )
            .into_iter()
            .collect();
        let bundle = |name: &str, version: &str, extra: Vec<Value>| {
            let mut properties =
                vec![json!({"type": "olm.package", "value": {"packageName": "a", "version": version}})];
            properties.extend(extra);
            json!({"schema": "olm.bundle", "package": "a", "name": name, "image": format!("quay.io/a/bundle:{version}"),
                   "properties": properties})
        };
        let mut cfg = DeclarativeConfig::default();
        let docs = [
            json!({"schema": "olm.package", "name": "a", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "a", "name": "stable", "entries": [
                {"name": "a.v0"},
                {"name": "a.v1", "replaces": "a.v0"},
                {"name": "a.v2", "replaces": "a.v1"},
                {"name": "a.v3", "replaces": "a.v2", "skipRange": ">=1.0.0 <3.0.0"}]}),
            bundle(
                "a.v0",
                "0.9.0",
                vec![json!({"type": "olm.deprecated", "value": {}})],
            ),
            bundle("a.v1", "1.0.0", vec![]),
            bundle("a.v2", "2.0.0", vec![]),
            bundle("a.v3", "3.0.0", required),
        ];
        for (i, doc) in docs.into_iter().enumerate() {
            cfg.add_value(Origin::new("c.json", i), doc).unwrap();
        }
        Model::from_config(cfg)
    }

    fn subscription(annotations: Value, spec: Value, status: Value) -> Subscription {
        let mut full = json!({"source": "cat", "sourceNamespace": "olm", "name": "a", "channel": "stable"});
        if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
            full.extend(extra.clone());
        }
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "a", "namespace": "ops", "annotations": annotations},
            "spec": full, "status": status,
        }))
        .unwrap()
    }

    /// Package `b` (channel `stable`, default): b.v1 1.0.0, in another catalog.
    fn other_catalog() -> Model {
        let mut cfg = DeclarativeConfig::default();
        let docs = [
            json!({"schema": "olm.package", "name": "b", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "b", "name": "stable", "entries": [{"name": "b.v1"}]}),
            json!({"schema": "olm.bundle", "package": "b", "name": "b.v1", "image": "quay.io/b/bundle:1.0.0",
                   "properties": [{"type": "olm.package", "value": {"packageName": "b", "version": "1.0.0"}}]}),
        ];
        for (i, doc) in docs.into_iter().enumerate() {
            cfg.add_value(Origin::new("b.json", i), doc).unwrap();
        }
        Model::from_config(cfg)
    }

    fn answer(sub: Subscription, csvs: &[(&str, &str)]) -> String {
        answer_with(sub, csvs, fixture(), Vec::new(), Vec::new())
    }

    fn answer_with(
        sub: Subscription,
        csvs: &[(&str, &str)],
        model: Model,
        others: Vec<ReadCatalog>,
        unlisted: Vec<(String, String)>,
    ) -> String {
        let observed = Observed {
            subscription: sub,
            csvs: csvs
                .iter()
                .map(|(name, version)| {
                    serde_json::from_value(json!({
                        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                        "metadata": {"name": name, "namespace": "ops", "annotations": {
                            "operatorframework.io/properties":
                                json!({"properties": [{"type": "olm.package", "value": {"packageName": "a", "version": version}}]}).to_string()}},
                        "spec": {"version": version, "displayName": "A",
                                 "install": {"strategy": "deployment", "spec": {"deployments": []}}},
                        "status": {"phase": "Succeeded"},
                    }))
                    .unwrap()
                })
                .collect(),
            subscriptions: Vec::new(),
            model,
            priority: 10,
            others,
            unlisted,
            global_namespace: "olm".into(),
        };
        let installed = observed.installed();
        let catalogs = observed.catalogs();
        let why = why::explain(&WhyInput {
            subscription: &observed.subscription,
            catalogs: &catalogs,
            installed: &installed,
            csv: None,
            unlisted: &observed.unlisted,
        });
        let graph = draw_graph(&observed.model, &why.package, &why.channel, GraphFormat::Text);
        let mut out = Vec::new();
        write_why(
            &mut out,
            &WhyOutput {
                asked: None,
                why,
                graph,
            },
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn why_explains_a_pinned_subscription_its_edge_and_the_rejected_entries() {
        let sub = subscription(
            json!({"olm-rs.io/version-ceiling": "2.0.0", "olm-rs.io/installed-csvs": "a.v1,a.v2"}),
            json!({"installPlanApproval": "Automatic"}),
            json!({"state": "UpgradeAvailable", "installedCSV": "a.v2", "currentCSV": "a.v2",
                   "lastUpdated": "2026-01-01T00:00:00Z"}),
        );
        insta::assert_snapshot!(answer(sub, &[("a.v2", "2.0.0")]));
    }

    #[test]
    fn why_explains_a_fresh_install_and_a_failure_with_its_fix() {
        let fresh = subscription(json!({}), json!({"installPlanApproval": "Manual"}), json!(null));
        insta::assert_snapshot!("fresh", answer(fresh, &[]));
        let failing = subscription(json!({}), json!({"channel": "fast"}), json!(null));
        insta::assert_snapshot!("failing", answer(failing, &[]));
    }

    #[test]
    fn a_dependency_comes_from_another_catalog_and_an_unread_catalog_is_named() {
        let fresh = subscription(json!({}), json!({"installPlanApproval": "Manual"}), json!(null));
        let others = || {
            vec![
                ReadCatalog {
                    key: CatalogKey::new("ops", "extra"),
                    priority: 5,
                    content: Ok(other_catalog()),
                },
                ReadCatalog {
                    key: CatalogKey::new("olm", "private"),
                    priority: 0,
                    content: Err(
                        "you may not get configmap private in namespace olm: ask for \"get\" \
                                  on configmaps in namespace olm for user alice"
                            .into(),
                    ),
                },
            ]
        };
        let unlisted = vec![(
            "team".to_owned(),
            "you may not list catalogsources in namespace team".to_owned(),
        )];
        let text = answer_with(
            fresh.clone(),
            &[],
            fixture_requiring(Some(">=1.0.0")),
            others(),
            unlisted,
        );
        assert!(
            text.contains("(required by a.v3): b.v1 1.0.0 from catalog ops/extra channel stable"),
            "{text}"
        );
        insta::assert_snapshot!(text);

        // Without the other catalog the dependency is not found, and the unread one is named
        // where resolution looked.
        let only_unread: Vec<ReadCatalog> = others().into_iter().skip(1).collect();
        let text = answer_with(
            fresh,
            &[],
            fixture_requiring(Some(">=1.0.0")),
            only_unread,
            Vec::new(),
        );
        assert!(
            text.contains("olm/private (unreadable: you may not get configmap"),
            "{text}"
        );
        assert!(
            text.contains("    olm/private (priority 0): not read: you may not get configmap"),
            "{text}"
        );
    }

    #[test]
    fn the_other_catalogs_are_those_of_the_namespace_and_the_global_namespace() {
        let cs = |ns: &str, name: &str| -> CatalogSource {
            serde_json::from_value(json!({
                "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                "metadata": {"name": name, "namespace": ns}, "spec": {"sourceType": "grpc"}}))
            .unwrap()
        };
        let listed = [
            cs("olm", "z"),
            cs("ops", "extra"),
            cs("olm", "olm-rs-catalog"),
            cs("elsewhere", "hidden"),
            cs("olm", "a"),
        ];
        let own = CatalogKey::new("olm", "olm-rs-catalog");
        let names = |v: Vec<&CatalogSource>| -> Vec<String> {
            v.iter()
                .map(|c| format!("{}/{}", c.namespace().unwrap_or_default(), c.name_any()))
                .collect()
        };
        assert_eq!(
            names(why::other_sources(&listed, "ops", "olm", &own)),
            ["olm/a", "olm/z", "ops/extra"]
        );
        // A Subscription in the global namespace itself sees it once.
        assert_eq!(
            names(why::other_sources(&listed, "olm", "olm", &own)),
            ["olm/a", "olm/z"]
        );
    }

    #[test]
    fn targets_name_their_kind_or_none() {
        assert_eq!(parse_target("redis"), ("", "redis"));
        assert_eq!(parse_target("csv/redis.v1"), ("csv", "redis.v1"));
        assert_eq!(
            parse_target("InstallPlan/install-1"),
            ("installplan", "install-1")
        );
        assert_eq!(parse_target("sub/redis"), ("subscription", "redis"));
        assert_eq!(parse_target("pod/x"), ("unknown", "x"));
    }
}
