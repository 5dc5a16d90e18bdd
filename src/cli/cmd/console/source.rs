//! The console's data source (imperative shell): every read and the one write go through the
//! user's own client (their kubeconfig), so the API server checks each against the user's RBAC;
//! catalogs named with `--catalog` are read once at start.
//!
//! Catalogs of the cluster: each CatalogSource the user may list is read the way its spec says
//! ([`crate::plan::catalog_source::plan_source`]): `builtin` is the catalog embedded in this
//! binary (the same one the controller embeds), a ConfigMap is read as the user and loaded by
//! the one catalog loader, an image, a registry address or a catalogd URL is read as
//! `kubectl olm catalog --catalog ...` reads it. A catalog is loaded again only when what it was
//! loaded from changes (the spec, the ConfigMap's resourceVersion); one that cannot be read is
//! shown with the reason, never left out silently.
//!
//! Live updates: watches of Subscriptions, InstallPlans, CSVs, CatalogSources and OLM's Events
//! (all namespaces, as the user) each signal the pages on every change.

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    sync::Arc,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams},
    runtime::{WatchStreamExt, watcher},
};
use olm_console::{
    Source, SourceError,
    view::{CatalogSummary, Icon, InstalledPage, Overview, PackageSummary, PackageView, PlanView},
};
use tokio::sync::{Mutex, broadcast};

use crate::{
    api::v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
    catalog::{
        Model,
        load::{CatalogOrigin, catalog_from_data},
    },
    cli::{
        cluster::{Cluster, error_chain, is_not_found},
        cmd::cluster::{approve, shared::FIELD_MANAGER},
        registry::RegistryArgs,
    },
    plan::catalog_source::{SourcePlan, plan_source},
};

/// Events of OLM's objects only (Subscriptions, InstallPlans and CSVs are all `v1alpha1`).
const OLM_EVENTS: &str = "involvedObject.apiVersion=operators.coreos.com/v1alpha1";

/// One catalog as read: its summary line, and its model when it could be read.
pub struct Loaded {
    /// The first page's line.
    pub summary: CatalogSummary,
    /// The linked catalog.
    pub model: Option<Model>,
    /// The first page's packages, built once.
    pub packages: Vec<PackageSummary>,
}

impl Loaded {
    /// A catalog read from `model`, under `key`.
    pub fn new(
        key: &str,
        display_name: &str,
        publisher: &str,
        model: Model,
        problem: Option<String>,
    ) -> Loaded {
        let packages = crate::console_view::package_summaries(key, &model);
        Loaded {
            summary: crate::console_view::catalog_line(key, display_name, publisher, packages.len(), problem),
            model: Some(model),
            packages,
        }
    }

    /// A catalog that could not be read, and why.
    fn failed(key: &str, display_name: &str, publisher: &str, problem: String) -> Loaded {
        Loaded {
            summary: crate::console_view::catalog_line(key, display_name, publisher, 0, Some(problem)),
            model: None,
            packages: Vec::new(),
        }
    }
}

/// Reads `--catalog DIR|IMAGE|grpc://|https://` as the catalog verbs do (blocking: a pull or a
/// registry read runs its own runtime).
///
/// # Errors
/// The catalog verbs' [`crate::cli::CliError`], as text.
pub fn read_catalog(path: &Path, registry: &RegistryArgs) -> Result<Loaded, String> {
    let mut sink = std::io::sink();
    let catalog =
        crate::cli::cmd::catalog::shared::load(path, registry, &mut sink).map_err(|e| e.to_string())?;
    let problem = (catalog.decode_problems > 0).then(|| {
        format!(
            "{} documents could not be decoded; see `kubectl olm catalog validate`",
            catalog.decode_problems
        )
    });
    Ok(Loaded::new(
        &catalog.dir,
        &catalog.dir,
        "",
        catalog.model,
        problem,
    ))
}

/// The console's source: the user's cluster (when one could be configured) and local catalogs.
pub struct ClusterSource {
    cluster: Option<Cluster>,
    local: Vec<Arc<Loaded>>,
    registry: RegistryArgs,
    /// CatalogSource key → (what it was loaded from, the catalog).
    cache: Mutex<HashMap<String, (String, Arc<Loaded>)>>,
    changes: broadcast::Sender<()>,
}

impl ClusterSource {
    /// A source over `cluster` and the `local` catalogs. Call [`ClusterSource::watch`] inside
    /// a runtime to have pages follow the cluster.
    pub fn new(cluster: Option<Cluster>, local: Vec<Loaded>, registry: RegistryArgs) -> ClusterSource {
        let (changes, _) = broadcast::channel(64);
        ClusterSource {
            cluster,
            local: local.into_iter().map(Arc::new).collect(),
            registry,
            cache: Mutex::new(HashMap::new()),
            changes,
        }
    }

    /// Starts the watches that signal changes (one task per kind, for the life of the runtime).
    pub fn watch(&self) {
        let Some(cluster) = &self.cluster else {
            return;
        };
        let client = cluster.client.clone();
        spawn_watch(
            Api::<Subscription>::all(client.clone()),
            watcher::Config::default(),
            &self.changes,
        );
        spawn_watch(
            Api::<InstallPlan>::all(client.clone()),
            watcher::Config::default(),
            &self.changes,
        );
        spawn_watch(
            Api::<ClusterServiceVersion>::all(client.clone()),
            watcher::Config::default(),
            &self.changes,
        );
        spawn_watch(
            Api::<CatalogSource>::all(client.clone()),
            watcher::Config::default(),
            &self.changes,
        );
        spawn_watch(
            Api::<Event>::all(client),
            watcher::Config::default().fields(OLM_EVENTS),
            &self.changes,
        );
    }

    /// The cluster, or the error of a page that needs one.
    fn cluster(&self, action: &str) -> Result<&Cluster, SourceError> {
        self.cluster.as_ref().ok_or_else(|| SourceError::Read {
            action: action.to_string(),
            message: "no cluster is configured (pass --kubeconfig PATH or set KUBECONFIG)".into(),
        })
    }

    /// Every catalog: the local ones, then each CatalogSource (loaded or taken from the cache).
    async fn catalogs(&self) -> Vec<Arc<Loaded>> {
        let mut out: Vec<Arc<Loaded>> = self.local.clone();
        let Some(cluster) = &self.cluster else {
            return out;
        };
        let api: Api<CatalogSource> = Api::all(cluster.client.clone());
        let sources = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(e) => {
                out.push(Arc::new(Loaded::failed(
                    "CatalogSources",
                    "",
                    "",
                    cluster
                        .api_error("list catalogsources in all namespaces", e)
                        .to_string(),
                )));
                return out;
            }
        };
        let mut cache = self.cache.lock().await;
        for cs in sources {
            let key = format!(
                "{}/{}",
                cs.metadata.namespace.as_deref().unwrap_or(""),
                cs.metadata.name.as_deref().unwrap_or("")
            );
            let loaded = self.catalog_source(cluster, &cs, &key, &mut cache).await;
            out.push(loaded);
        }
        out
    }

    /// One CatalogSource's catalog, loaded again only when its spec or ConfigMap changed.
    async fn catalog_source(
        &self,
        cluster: &Cluster,
        cs: &CatalogSource,
        key: &str,
        cache: &mut HashMap<String, (String, Arc<Loaded>)>,
    ) -> Arc<Loaded> {
        let ns = cs.metadata.namespace.clone().unwrap_or_default();
        let display = cs.spec.display_name.clone().unwrap_or_default();
        let publisher = cs.spec.publisher.clone().unwrap_or_default();
        let plan = plan_source(cs);
        let mut config_map = None;
        let fingerprint = match &plan {
            SourcePlan::ConfigMap(name) => {
                let api: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), &ns);
                match api.get(name).await {
                    Ok(cm) => {
                        let rv = cm.metadata.resource_version.clone().unwrap_or_default();
                        config_map = Some(cm);
                        format!("configmap {name} {rv}")
                    }
                    Err(e) => {
                        let message = cluster
                            .api_error(&format!("get configmap {name} in namespace {ns}"), e)
                            .to_string();
                        return Arc::new(Loaded::failed(key, &display, &publisher, message));
                    }
                }
            }
            other => format!("{other:?}"),
        };
        if let Some((seen, loaded)) = cache.get(key)
            && *seen == fingerprint
        {
            return loaded.clone();
        }
        let loaded = match plan {
            SourcePlan::Builtin => match crate::catalog::load::embedded_builtin() {
                Ok(c) => Loaded::new(
                    key,
                    &display,
                    &publisher,
                    c.model,
                    crate::console_view::joined(&c.problems),
                ),
                Err(e) => Loaded::failed(key, &display, &publisher, e.to_string()),
            },
            SourcePlan::ConfigMap(name) => {
                let cm = config_map.unwrap_or_default();
                let data: BTreeMap<String, String> = cm.data.unwrap_or_default();
                let origin = CatalogOrigin::ConfigMap {
                    resource_version: cm.metadata.resource_version.unwrap_or_default(),
                };
                match tokio::task::spawn_blocking(move || catalog_from_data(&data, origin)).await {
                    Ok(Ok(c)) => Loaded::new(
                        key,
                        &display,
                        &publisher,
                        c.model,
                        crate::console_view::joined(&c.problems),
                    ),
                    Ok(Err(e)) => Loaded::failed(key, &display, &publisher, format!("configmap {name}: {e}")),
                    Err(e) => Loaded::failed(key, &display, &publisher, e.to_string()),
                }
            }
            SourcePlan::Grpc { address, .. } => {
                self.remote(key, &display, &publisher, format!("grpc://{address}"))
                    .await
            }
            SourcePlan::Http { url, .. } => self.remote(key, &display, &publisher, url).await,
            SourcePlan::Image(image) => self.remote(key, &display, &publisher, image.image).await,
            SourcePlan::Invalid(reason, message) => {
                Loaded::failed(key, &display, &publisher, format!("{reason}: {message}"))
            }
        };
        let loaded = Arc::new(loaded);
        cache.insert(key.to_string(), (fingerprint, loaded.clone()));
        loaded
    }

    /// A catalog read the way `--catalog LOCATION` is.
    async fn remote(&self, key: &str, display: &str, publisher: &str, location: String) -> Loaded {
        let registry = self.registry.clone();
        let read =
            tokio::task::spawn_blocking(move || read_catalog(&PathBuf::from(location), &registry)).await;
        match read {
            Ok(Ok(mut loaded)) => {
                let Some(model) = loaded.model.take() else {
                    return Loaded::failed(key, display, publisher, "no catalog".into());
                };
                Loaded::new(key, display, publisher, model, loaded.summary.problem)
            }
            Ok(Err(message)) => Loaded::failed(key, display, publisher, message),
            Err(e) => Loaded::failed(key, display, publisher, e.to_string()),
        }
    }

    /// The catalog `key` and its model.
    async fn find(&self, key: &str) -> Option<Arc<Loaded>> {
        self.catalogs()
            .await
            .into_iter()
            .find(|c| c.summary.key == key && c.model.is_some())
    }

    /// Lists `K` in every namespace.
    async fn list_all<K>(
        &self,
        cluster: &Cluster,
        resource: &str,
        lp: &ListParams,
    ) -> Result<Vec<K>, SourceError>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::all(cluster.client.clone());
        let action = format!("list {resource} in all namespaces");
        api.list(lp)
            .await
            .map(|l| l.items)
            .map_err(|e| SourceError::Read {
                message: error_chain(&cluster.api_error(&action, e)),
                action,
            })
    }
}

/// The items read, or none with the failure noted for the page.
fn or_note<T>(read: Result<Vec<T>, SourceError>, problems: &mut Vec<String>) -> Vec<T> {
    read.unwrap_or_else(|e| {
        problems.push(e.to_string());
        Vec::new()
    })
}

/// A watch of `api` that signals `changes` on every event, for as long as the runtime runs.
fn spawn_watch<K>(api: Api<K>, config: watcher::Config, changes: &broadcast::Sender<()>)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let changes = changes.clone();
    tokio::spawn(async move {
        let mut stream = watcher(api, config).default_backoff().boxed();
        while let Some(event) = stream.next().await {
            match event {
                Ok(_) => {
                    let _ = changes.send(());
                }
                Err(e) => tracing::warn!(error = %error_chain(&e), "console watch failed; retrying"),
            }
        }
    });
}

impl Source for ClusterSource {
    async fn overview(&self) -> Result<Overview, SourceError> {
        let catalogs = self.catalogs().await;
        let mut packages: Vec<PackageSummary> =
            Vec::with_capacity(catalogs.iter().map(|c| c.packages.len()).sum());
        for c in &catalogs {
            packages.extend(c.packages.iter().cloned());
        }
        Ok(Overview {
            catalogs: catalogs.iter().map(|c| c.summary.clone()).collect(),
            packages: Arc::from(packages),
        })
    }

    async fn package(&self, catalog: &str, name: &str) -> Result<Option<PackageView>, SourceError> {
        let Some(loaded) = self.find(catalog).await else {
            return Ok(None);
        };
        let Some(p) = loaded.model.as_ref().and_then(|m| m.package(name)) else {
            return Ok(None);
        };
        let mut problems = Vec::new();
        let subs: Vec<Subscription> = match &self.cluster {
            Some(cluster) => self
                .list_all(cluster, "subscriptions", &ListParams::default())
                .await
                .unwrap_or_else(|e| {
                    problems.push(format!("installed versions are not shown: {e}"));
                    Vec::new()
                }),
            None => Vec::new(),
        };
        let mine: Vec<&Subscription> = subs
            .iter()
            .filter(|s| {
                s.spec.name == name && format!("{}/{}", s.spec.source_namespace, s.spec.source) == catalog
            })
            .collect();
        let mut view = crate::console_view::package(catalog, p, &mine);
        view.problems = problems;
        Ok(Some(view))
    }

    async fn icon(&self, catalog: &str, name: &str) -> Result<Option<Icon>, SourceError> {
        Ok(self.find(catalog).await.and_then(|c| {
            c.model
                .as_ref()?
                .package(name)
                .and_then(crate::console_view::icon)
        }))
    }

    async fn installed(&self) -> Result<InstalledPage, SourceError> {
        let cluster = self.cluster("list subscriptions in all namespaces")?;
        let all = ListParams::default();
        let subs: Vec<Subscription> = self.list_all(cluster, "subscriptions", &all).await?;
        let mut problems = Vec::new();
        let csvs: Vec<ClusterServiceVersion> = or_note(
            self.list_all(cluster, "clusterserviceversions", &all).await,
            &mut problems,
        );
        let plans: Vec<InstallPlan> =
            or_note(self.list_all(cluster, "installplans", &all).await, &mut problems);
        let events: Vec<Event> = or_note(
            self.list_all(cluster, "events", &ListParams::default().fields(OLM_EVENTS))
                .await,
            &mut problems,
        );
        Ok(InstalledPage {
            operators: crate::console_view::installed(&subs, &csvs, &plans, &events),
            problems,
        })
    }

    async fn plan(&self, namespace: &str, name: &str) -> Result<Option<PlanView>, SourceError> {
        let cluster = self.cluster("get installplan")?;
        let api: Api<InstallPlan> = Api::namespaced(cluster.client.clone(), namespace);
        let plan = match api.get(name).await {
            Ok(p) => p,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => {
                let action = format!("get installplan {name} in namespace {namespace}");
                return Err(SourceError::Read {
                    message: error_chain(&cluster.api_error(&action, e)),
                    action,
                });
            }
        };
        let mut shown = approve::preview(&plan);
        approve::compare_steps(cluster, &plan, &mut shown).await;
        Ok(Some(crate::console_view::plan(&plan, &shown)))
    }

    async fn approve(&self, namespace: &str, name: &str) -> Result<(), SourceError> {
        let fail = |message: String| SourceError::Approve {
            namespace: namespace.to_string(),
            name: name.to_string(),
            message,
        };
        let cluster = self.cluster("approve").map_err(|e| fail(e.to_string()))?;
        let api: Api<InstallPlan> = Api::namespaced(cluster.client.clone(), namespace);
        let plan = api.get(name).await.map_err(|e| fail(error_chain(&e)))?;
        approve::approvable(&plan).map_err(|e| fail(e.to_string()))?;
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PatchParams::default()
        };
        let patch = serde_json::json!({"spec": {"approved": true}});
        api.patch(name, &params, &Patch::Merge(&patch))
            .await
            .map_err(|e| fail(error_chain(&e)))?;
        let _ = self.changes.send(());
        Ok(())
    }

    fn changes(&self) -> broadcast::Receiver<()> {
        self.changes.subscribe()
    }
}
