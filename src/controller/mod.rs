//! controller: the OLM controllers on kube-runtime, and `run()` which wires them together.
//!
//! Five controllers, one per kind, each a pipeline `observe → decide → act → report`:
//! - [`catalog_source`]: loads ConfigMap and built-in catalogs into the shared [`cache`];
//! - [`operator_group`]: target namespaces and the one-group-per-namespace rule;
//! - [`subscription`]: resolution and the InstallPlan of each Subscription;
//! - [`install_plan`]: the approval gate and step execution;
//! - [`csv`]: the ClusterServiceVersion state machine and its Deployments.
//!
//! Every controller reads the other kinds from shared reflector stores ([`Stores`]) rather than
//! the API, writes with server-side apply under its own field manager (`olm-rs/<controller>`),
//! and only writes a status that changed. Only the replica holding the leader Lease runs them.

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    api::{apps::v1::Deployment, core::v1::ConfigMap},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    runtime::{
        Controller,
        controller::{Action, Config as ControllerConfig},
        reflector::Store,
        watcher,
    },
};

use crate::{
    api::{
        v1::OperatorGroup,
        v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
    },
    k8s::events::Events,
    metrics::Metrics,
};

pub mod cache;
pub mod catalog_source;
pub mod csv;
pub mod error;
pub mod install_plan;
pub mod mappers;
pub mod operator_group;
pub mod subscription;

pub use error::{Error, Result};

/// Settings of `olm-controller run`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The global catalog namespace (CatalogSources there serve every namespace).
    pub global_namespace: String,
    /// Where `/metrics`, `/healthz` and `/readyz` listen.
    pub metrics_bind: SocketAddr,
    /// Take a Lease before running the controllers.
    pub leader_elect: bool,
    /// Namespace of the leader Lease.
    pub lease_namespace: String,
    /// A directory that replaces the embedded built-in catalog.
    pub builtin_catalog: Option<PathBuf>,
    /// How long transient InstallPlan step errors are retried before the plan fails.
    pub install_plan_retry_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            global_namespace: "olm".into(),
            metrics_bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            leader_elect: false,
            lease_namespace: "olm".into(),
            builtin_catalog: None,
            install_plan_retry_timeout: Duration::from_secs(60),
        }
    }
}

/// The reflector stores every controller reads from.
#[derive(Clone)]
pub struct Stores {
    /// CatalogSources (all namespaces).
    pub catalog_sources: Store<CatalogSource>,
    /// Subscriptions.
    pub subscriptions: Store<Subscription>,
    /// InstallPlans.
    pub install_plans: Store<InstallPlan>,
    /// ClusterServiceVersions.
    pub csvs: Store<ClusterServiceVersion>,
    /// OperatorGroups.
    pub operator_groups: Store<OperatorGroup>,
}

/// What every controller shares.
pub struct Shared {
    /// The API client.
    pub client: Client,
    /// Settings.
    pub config: Config,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Parsed catalogs by CatalogSource.
    pub catalogs: cache::CatalogCache,
    /// Reflector stores.
    pub stores: Stores,
    backoff: Mutex<HashMap<String, u32>>,
}

impl Stores {
    /// Waits until every store has seen its initial list, so a reconcile never mistakes a
    /// cold cache for "no such object" (e.g. a CSV failing `NoOperatorGroup` at start-up).
    pub async fn ready(&self) {
        let _ = self.catalog_sources.wait_until_ready().await;
        let _ = self.subscriptions.wait_until_ready().await;
        let _ = self.install_plans.wait_until_ready().await;
        let _ = self.csvs.wait_until_ready().await;
        let _ = self.operator_groups.wait_until_ready().await;
    }
}

/// The context of one controller: the shared state plus its own Event recorder.
pub struct Context {
    /// Shared state.
    pub shared: Arc<Shared>,
    /// Events as this controller.
    pub events: Events,
    /// The controller's name (`subscription`, ...), used for the field manager and metrics.
    pub name: &'static str,
    /// The field manager `olm-rs/<name>`.
    pub manager: String,
}

impl Context {
    fn new(shared: &Arc<Shared>, name: &'static str) -> Arc<Self> {
        Arc::new(Self {
            shared: Arc::clone(shared),
            events: Events::new(shared.client.clone(), name),
            name,
            manager: crate::k8s::apply::field_manager(name),
        })
    }

    /// The API client.
    pub fn client(&self) -> Client {
        self.shared.client.clone()
    }

    /// Forgets the failure count of `key` (a successful reconcile).
    pub fn reset_backoff(&self, key: &str) {
        lock(&self.shared.backoff).remove(key);
    }

    /// Counts one more failure of `key` and returns the delay before the next try.
    pub fn next_backoff(&self, key: &str) -> Duration {
        let mut map = lock(&self.shared.backoff);
        let attempts = map.entry(key.to_owned()).or_insert(0);
        *attempts = attempts.saturating_add(1);
        backoff_delay(*attempts)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Exponential backoff per object: 1 s, 2 s, 4 s, ... capped at 5 minutes.
pub fn backoff_delay(attempts: u32) -> Duration {
    let exp = attempts.saturating_sub(1).min(9);
    Duration::from_secs((1u64 << exp).min(300))
}

/// The backoff key of an object.
pub fn object_key<K: Resource<DynamicType = ()>>(controller: &str, obj: &K) -> String {
    format!(
        "{controller}/{}/{}",
        obj.namespace().unwrap_or_default(),
        obj.name_any()
    )
}

/// The shared error policy: count the error, log it, retry with per-object backoff.
pub fn error_policy<K: Resource<DynamicType = ()>>(obj: Arc<K>, err: &Error, ctx: Arc<Context>) -> Action {
    ctx.shared.metrics.count_error(ctx.name, err.metric_label());
    let key = object_key(ctx.name, obj.as_ref());
    let delay = ctx.next_backoff(&key);
    tracing::warn!(controller = ctx.name, object = %key, error = %err, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// Runs a reconcile body with metrics and backoff bookkeeping.
pub async fn instrumented<K, F>(obj: Arc<K>, ctx: Arc<Context>, body: F) -> Result<Action>
where
    K: Resource<DynamicType = ()>,
    F: std::future::Future<Output = Result<Action>>,
{
    let timer = ctx.shared.metrics.start_reconcile(ctx.name);
    let result = body.await;
    timer.finish(result.is_ok());
    if result.is_ok() {
        ctx.reset_backoff(&object_key(ctx.name, obj.as_ref()));
    }
    result
}

/// Runs the controllers until SIGTERM/SIGINT (or until the leader Lease is lost).
pub async fn run(client: Client, config: Config) -> anyhow_free::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let ready = Arc::new(AtomicBool::new(false));
    let listener = crate::k8s::http::bind(config.metrics_bind)
        .await
        .map_err(|e| anyhow_free::RunError(format!("failed to listen on {}: {e}", config.metrics_bind)))?;
    tracing::info!(addr = %config.metrics_bind, "serving /metrics, /healthz and /readyz");
    let http = tokio::spawn(crate::k8s::http::serve(
        listener,
        Arc::clone(&metrics),
        Arc::clone(&ready),
    ));

    let elector = config.leader_elect.then(|| {
        let identity = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| format!("olm-controller-{}", std::process::id()));
        crate::k8s::lease::LeaderElector::new(
            client.clone(),
            &config.lease_namespace,
            "olm-rs-controller",
            identity,
        )
    });
    if let Some(elector) = &elector {
        tracing::info!(identity = elector.identity(), "waiting for the leader lease");
        tokio::select! {
            () = elector.acquire() => tracing::info!("acquired the leader lease"),
            () = shutdown_signal() => { http.abort(); return Ok(()); }
        }
    }

    let result = {
        let controllers = run_controllers(
            client.clone(),
            config.clone(),
            Arc::clone(&metrics),
            Arc::clone(&ready),
        );
        match &elector {
            Some(elector) => tokio::select! {
                r = controllers => r,
                () = elector.keep_renewing() => Err(anyhow_free::RunError("lost the leader lease; stopping so another replica can take over".into())),
            },
            None => controllers.await,
        }
    };
    ready.store(false, Ordering::Relaxed);
    if let Some(elector) = &elector {
        elector.release().await;
    }
    http.abort();
    result
}

/// Errors of [`run`], kept free of `anyhow` (the binary wraps them).
pub mod anyhow_free {
    /// `run` failed to start or stopped abnormally.
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    pub struct RunError(pub String);
    /// Result of [`super::run`].
    pub type Result<T> = std::result::Result<T, RunError>;
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

async fn log_result<T, E: std::fmt::Display>(controller: &'static str, result: std::result::Result<T, E>) {
    if let Err(err) = result {
        tracing::debug!(controller, error = %err, "controller event");
    }
}

async fn run_controllers(
    client: Client,
    config: Config,
    metrics: Arc<Metrics>,
    ready: Arc<AtomicBool>,
) -> anyhow_free::Result<()> {
    let wc = watcher::Config::default;
    let cfg = || ControllerConfig::default().concurrency(4);

    let catsrc_ctl = Controller::new(Api::<CatalogSource>::all(client.clone()), wc()).with_config(cfg());
    let og_ctl = Controller::new(Api::<OperatorGroup>::all(client.clone()), wc()).with_config(cfg());
    let sub_ctl = Controller::new(Api::<Subscription>::all(client.clone()), wc()).with_config(cfg());
    let ip_ctl = Controller::new(Api::<InstallPlan>::all(client.clone()), wc()).with_config(cfg());
    let csv_ctl = Controller::new(Api::<ClusterServiceVersion>::all(client.clone()), wc()).with_config(cfg());

    let stores = Stores {
        catalog_sources: catsrc_ctl.store(),
        subscriptions: sub_ctl.store(),
        install_plans: ip_ctl.store(),
        csvs: csv_ctl.store(),
        operator_groups: og_ctl.store(),
    };
    let catalogs = cache::CatalogCache::new(config.builtin_catalog.as_deref())
        .map_err(|e| anyhow_free::RunError(format!("failed to load the built-in catalog: {e}")))?;
    let shared = Arc::new(Shared {
        client: client.clone(),
        config,
        metrics,
        catalogs,
        stores: stores.clone(),
        backoff: Mutex::default(),
    });

    // CatalogSources: re-read when the ConfigMap they name changes.
    let catsrc_store = stores.catalog_sources.clone();
    let catsrc_ctl = catsrc_ctl
        .watches(Api::<ConfigMap>::all(client.clone()), wc(), move |cm| {
            mappers::catalog_sources_for_config_map(&catsrc_store.state(), &cm)
        })
        .shutdown_on_signal();

    // OperatorGroups: a sibling group appearing or leaving changes TooManyOperatorGroups.
    let og_store = stores.operator_groups.clone();
    let og_ctl = og_ctl
        .watches(Api::<OperatorGroup>::all(client.clone()), wc(), move |og| {
            mappers::siblings_in_namespace(&og_store.state(), og.namespace().as_deref())
        })
        .shutdown_on_signal();

    // Subscriptions: their InstallPlans, CSVs, catalogs and OperatorGroups.
    let (s1, s2, s3) = (
        stores.subscriptions.clone(),
        stores.subscriptions.clone(),
        stores.subscriptions.clone(),
    );
    let global = shared.config.global_namespace.clone();
    let sub_ctl = sub_ctl
        .owns(Api::<InstallPlan>::all(client.clone()), wc())
        .watches(Api::<CatalogSource>::all(client.clone()), wc(), move |cs| {
            mappers::subscriptions_for_catalog(&s1.state(), &cs, &global)
        })
        .watches(
            Api::<ClusterServiceVersion>::all(client.clone()),
            wc(),
            move |csv| mappers::siblings_in_namespace(&s2.state(), csv.namespace().as_deref()),
        )
        .watches(Api::<OperatorGroup>::all(client.clone()), wc(), move |og| {
            mappers::siblings_in_namespace(&s3.state(), og.namespace().as_deref())
        })
        .shutdown_on_signal();

    let ip_ctl = ip_ctl.shutdown_on_signal();

    // CSVs: their Deployments, OperatorGroups, CRDs and the CSVs that replace them.
    let (c1, c2, c3) = (stores.csvs.clone(), stores.csvs.clone(), stores.csvs.clone());
    let csv_ctl = csv_ctl
        .owns(
            Api::<Deployment>::all(client.clone()),
            wc().labels("olm.owner.kind=ClusterServiceVersion"),
        )
        .watches(Api::<OperatorGroup>::all(client.clone()), wc(), move |og| {
            mappers::siblings_in_namespace(&c1.state(), og.namespace().as_deref())
        })
        .watches(
            Api::<ClusterServiceVersion>::all(client.clone()),
            wc(),
            move |csv| mappers::csvs_related_to(&c2.state(), &csv),
        )
        .watches(
            Api::<CustomResourceDefinition>::all(client.clone()),
            wc(),
            move |crd| mappers::csvs_for_crd(&c3.state(), &crd.name_any()),
        )
        .shutdown_on_signal();

    let catsrc_ctx = Context::new(&shared, "catalogsource");
    let og_ctx = Context::new(&shared, "operatorgroup");
    let sub_ctx = Context::new(&shared, "subscription");
    let ip_ctx = Context::new(&shared, "installplan");
    let csv_ctx = Context::new(&shared, "csv");

    let readiness = {
        let stores = stores.clone();
        let ready = Arc::clone(&ready);
        async move {
            let _ = stores.catalog_sources.wait_until_ready().await;
            let _ = stores.subscriptions.wait_until_ready().await;
            let _ = stores.install_plans.wait_until_ready().await;
            let _ = stores.csvs.wait_until_ready().await;
            let _ = stores.operator_groups.wait_until_ready().await;
            ready.store(true, Ordering::Relaxed);
            tracing::info!("caches synced; ready");
        }
    };
    tokio::spawn(readiness);

    tokio::join!(
        catsrc_ctl
            .run(catalog_source::reconcile, error_policy, catsrc_ctx)
            .for_each(|r| log_result("catalogsource", r)),
        og_ctl
            .run(operator_group::reconcile, error_policy, og_ctx)
            .for_each(|r| log_result("operatorgroup", r)),
        sub_ctl
            .run(subscription::reconcile, error_policy, sub_ctx)
            .for_each(|r| log_result("subscription", r)),
        ip_ctl
            .run(install_plan::reconcile, error_policy, ip_ctx)
            .for_each(|r| log_result("installplan", r)),
        csv_ctl
            .run(csv::reconcile, error_policy, csv_ctx)
            .for_each(|r| log_result("csv", r)),
    );
    tracing::info!("controllers stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_per_failure_and_is_capped_at_five_minutes() {
        assert_eq!(backoff_delay(1), Duration::from_secs(1));
        assert_eq!(backoff_delay(2), Duration::from_secs(2));
        assert_eq!(backoff_delay(4), Duration::from_secs(8));
        assert_eq!(backoff_delay(50), Duration::from_secs(300));
    }
}
