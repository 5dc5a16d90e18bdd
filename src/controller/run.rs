//! run: `olm-controller run`: the probe and metrics server, leader election, the reflectors
//! and the controllers wired together, until a signal or the loss of the lease.

#[allow(clippy::wildcard_imports, reason = "the controller module's shared imports")]
use super::*;
use futures::stream::BoxStream;

/// Runs the controllers until SIGTERM/SIGINT (or until the leader Lease is lost).
pub async fn run(client: Client, config: Config) -> std::result::Result<(), RunError> {
    let metrics = Arc::new(Metrics::with_api_requests(config.api_requests.clone()));
    let ready = Arc::new(Readiness::default());
    let listener = crate::k8s::http::bind(config.metrics_bind)
        .await
        .map_err(|source| RunError::Bind {
            addr: config.metrics_bind,
            source,
        })?;
    tracing::info!(addr = %config.metrics_bind, "serving /metrics, /healthz and /readyz");
    let http = tokio::spawn(crate::k8s::http::serve(
        listener,
        Arc::clone(&metrics),
        Arc::clone(&ready),
    ));

    let elector = config.leader_elect.then(|| {
        let identity =
            crate::k8s::lease::identity(std::env::var("POD_NAME").ok(), std::env::var("HOSTNAME").ok());
        crate::k8s::lease::LeaderElector::new(
            client.clone(),
            &config.lease_namespace,
            "olm-rs-controller",
            identity,
            config.lease_timing,
        )
    });
    if let Some(elector) = &elector {
        // A standby is ready: it is healthy and waiting to take over (see `Readiness`).
        ready.set(ReadyState::Standby);
        tracing::info!(identity = elector.identity(), "waiting for the leader lease");
        tokio::select! {
            acquired = elector.acquire() => match acquired {
                Ok(()) => tracing::info!("acquired the leader lease"),
                Err(twin) => { http.abort(); return Err(RunError::Lease(twin)); }
            },
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
                () = elector.keep_renewing() => Err(RunError::LostLease),
            },
            None => controllers.await,
        }
    };
    ready.set(ReadyState::Stopping);
    if let Some(elector) = &elector {
        elector.release().await;
    }
    http.abort();
    result
}

/// Why [`run`] failed to start or stopped abnormally (the binary adds its `anyhow` context).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The probe and metrics address could not be bound.
    #[error("failed to listen on {addr}: {source}")]
    Bind {
        /// `--metrics-bind`.
        addr: SocketAddr,
        /// The bind error.
        source: std::io::Error,
    },
    /// `--builtin-catalog` could not be loaded.
    #[error("failed to load the built-in catalog: {0}")]
    BuiltinCatalog(#[source] cache::BuiltinDirError),
    /// Another replica with our identity holds the leader Lease.
    #[error(transparent)]
    Lease(#[from] crate::k8s::lease::AcquireError),
    /// `--serve-grpc` or `--serve-http` could not listen.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
    /// `--serve-packages` could not listen.
    #[error(transparent)]
    Packages(#[from] package_server::PackageServerError),
    /// `--console` is refused or could not listen.
    #[error(transparent)]
    Console(#[from] console::ConsoleError),
    /// The leader Lease was lost; another replica takes over.
    #[error("lost the leader lease; stopping so another replica can take over")]
    LostLease,
}

pub(super) async fn shutdown_signal() {
    operator_runtime::shutdown::signal().await;
}

pub(super) async fn run_controllers(
    client: Client,
    config: Config,
    metrics: Arc<Metrics>,
    ready: Arc<crate::k8s::http::Readiness>,
) -> std::result::Result<(), RunError> {
    let sync = SyncTracker::default();
    let (synced_tx, synced_rx) = tokio::sync::watch::channel(false);
    let Reflected {
        stores,
        catalog_sources: catsrc_stream,
        subscriptions: sub_stream,
        install_plans: ip_stream,
        csvs: csv_stream,
        csv_feeds,
        operator_groups: og_stream,
        cluster_roles: cluster_role_stream,
        operator_conditions: oc_stream,
        olm_configs: olm_config_stream,
        csv_requeue,
    } = reflect(&client, &sync).await;

    let catalogs = Arc::new(
        cache::CatalogCache::new(config.builtin_catalog.as_deref()).map_err(RunError::BuiltinCatalog)?,
    );
    // The catalogs on the wire (`--serve-grpc`, `--serve-http`): bound now, so a busy port fails
    // the start; stopped after the controllers.
    let (stop_serving, serving) = tokio::sync::watch::channel(false);
    let servers = serve::start(
        &catalogs,
        &config.global_namespace,
        &config.serve_grpc,
        config.serve_http,
        &serving,
    )
    .await?;
    // The PackageManifest API (`--serve-packages`): bound now, stopped with the servers above.
    let packages = match config.serve_packages {
        Some(addr) => Some(
            package_server::start(
                client.clone(),
                Arc::clone(&catalogs),
                stores.catalog_sources.clone(),
                config.global_namespace.clone(),
                addr,
                config.packages_service.clone(),
                serving.clone(),
            )
            .await?,
        ),
        None => None,
    };
    // The read-only web console (`--console`): bound now, stopped with the servers above; it
    // reads the stores and the catalog cache, and is never a readiness gate.
    let console = match config.console {
        Some(addr) => {
            Some(console::start(addr, stores.clone(), Arc::clone(&catalogs), serving.clone()).await?)
        }
        None => None,
    };
    let images = image_puller::ImagePuller::new(
        crate::oci::Options {
            credentials: Vec::new(),
            ca_bundle: config.registry_ca.clone(),
            insecure: config.insecure_registries.clone(),
            cache_dir: config.cache_dir.clone(),
            limits: crate::oci::Limits::default(),
        },
        config.max_concurrent_pulls,
    );
    let shared = Arc::new(Shared {
        csv_requeue,
        client: client.clone(),
        scoped: crate::k8s::scoped::ScopedClients::new(config.connection.clone()),
        config,
        metrics,
        catalogs,
        bundles: images.sibling(),
        images,
        stores: stores.clone(),
        catalogd: std::sync::OnceLock::new(),
        backoff: operator_runtime::backoff::PerObject::new(operator_runtime::backoff::DEFAULT),
        discovery: Mutex::default(),
        status_writes: Mutex::default(),
        rbac_changes: Mutex::default(),
        server_version: tokio::sync::OnceCell::new(),
        condition_rbac: Mutex::default(),
        event_permits: Arc::new(tokio::sync::Semaphore::new(EVENT_PUBLISHERS)),
        synced: synced_rx,
        api_claims: Mutex::default(),
        copies: copied_csv::Copies::default(),
    });

    // Each kind's controller is set up beside its reconcile (`<kind>::controller`).
    let w = wiring::Wiring {
        sync: &sync,
        client: &client,
        shared: &shared,
    };
    let catalog_source_ctl = catalog_source::controller(&w, catsrc_stream, stores.catalog_sources.clone());
    // Any group event, and a group role naming a missing group, wakes the sweep that deletes
    // deleted groups' roles.
    let (sweep_tx, sweep_signals) = futures::channel::mpsc::unbounded::<()>();
    let operator_group_ctl = operator_group::controller(
        &w,
        og_stream,
        stores.operator_groups.clone(),
        cluster_role_stream,
        sweep_tx,
    );
    let subscription_ctl = subscription::controller(&w, sub_stream, stores.subscriptions.clone());
    let install_plan_ctl = install_plan::controller(&w, ip_stream, stores.install_plans.clone());
    let csv_ctl = csv::controller(&w, csv_stream, stores.csvs.clone(), csv_feeds);
    let operator_condition_ctl =
        operator_condition::controller(&w, oc_stream, stores.operator_conditions.clone());
    // Operators (issue 15): optional, like the OperatorCondition CRD above.
    let (operators, operator_stream, operators_synced) = reflected_optional(
        &sync,
        "operators",
        Api::<crate::api::v1::Operator>::all(client.clone()),
        stores::watch_config(),
    );
    let operator_ctl = operator::controller(&w, operator_stream, operators, operators_synced);
    // The OLMConfig `cluster`: created when missing, its status follows the copies.
    tokio::spawn(olm_config::ensure_exists(client.clone()));
    let olm_config_ctl = olm_config::controller(&w, olm_config_stream, stores.olm_configs.clone());

    // Beside the controllers: orphaned APIServices (labelled with a CSV owner) deleted
    // (upstream `syncAPIService`), the sweep of deleted groups' roles, and the copied CSVs on
    // their own queue, off the CSV controller's install path (`copied_csv`).
    let api_service_orphans = tokio::spawn(api_service::collect_orphans(
        w.context("apiservice"),
        w.metadata::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(
            wiring::Wiring::watch().labels(api_service::SELECTOR),
        ),
    ));
    let sweep = tokio::spawn(operator_group::sweep_task(
        w.context("operatorgroup-sweep"),
        sweep_signals,
    ));
    let copies = tokio::spawn(copied_csv::run(
        w.context("copiedcsv"),
        w.metadata::<ClusterServiceVersion>(wiring::Wiring::watch().labels(crate::api::labels::COPIED_FROM)),
        w.metadata::<k8s_openapi::api::core::v1::Namespace>(wiring::Wiring::watch()),
    ));

    ready.set(ReadyState::Syncing);
    // Re-lists silent watches, names stale ones in /readyz, exports their ages.
    let supervisor = tokio::spawn(operator_runtime::watch::supervise(
        sync.health(),
        client.clone(),
        Arc::clone(&ready),
        {
            let metrics = Arc::clone(&shared.metrics);
            move |ages| metrics.record_watch_ages(ages)
        },
    ));
    let readiness = {
        let ready = Arc::clone(&ready);
        async move {
            let mut tick = tokio::time::interval(Duration::from_millis(50));
            loop {
                tick.tick().await;
                let pending = sync.pending();
                if pending.is_empty() {
                    break;
                }
                tracing::trace!(?pending, "waiting for the caches");
            }
            let _ = synced_tx.send(true);
            ready.set(ReadyState::Ready);
            tracing::info!("caches synced; ready");
        }
    };
    let readiness = tokio::spawn(readiness);

    tokio::join!(
        catalog_source_ctl,
        operator_group_ctl,
        subscription_ctl,
        install_plan_ctl,
        csv_ctl,
        operator_ctl,
        operator_condition_ctl,
        olm_config_ctl,
    );
    copies.abort();
    readiness.abort();
    supervisor.abort();
    sweep.abort();
    api_service_orphans.abort();
    let _ = stop_serving.send(true);
    servers.drained().await;
    if let Some(packages) = packages {
        let _ = packages.await;
    }
    if let Some(console) = console {
        let _ = console.await;
    }
    tracing::info!("controllers stopped");
    Ok(())
}

/// The reflectors' stores (read by every controller) and the streams feeding them, each passed
/// to the controller of its kind; the CSV controller also hears of what the Subscription,
/// OperatorCondition and OLMConfig streams pass on.
struct Reflected {
    stores: Stores,
    catalog_sources: BoxStream<'static, WatchResult<CatalogSource>>,
    subscriptions: BoxStream<'static, WatchResult<Subscription>>,
    install_plans: BoxStream<'static, WatchResult<InstallPlan>>,
    csvs: BoxStream<'static, WatchResult<ClusterServiceVersion>>,
    csv_feeds: csv::Feeds,
    operator_groups: BoxStream<'static, WatchResult<OperatorGroup>>,
    cluster_roles: BoxStream<'static, WatchResult<k8s_openapi::api::rbac::v1::ClusterRole>>,
    operator_conditions: BoxStream<'static, WatchResult<crate::api::v2::OperatorCondition>>,
    olm_configs: BoxStream<'static, WatchResult<crate::api::v1::OLMConfig>>,
    /// Where the OLMConfig reconcile sends CSVs whose copies are out of line (`csv_feeds.requeues`).
    csv_requeue: futures::channel::mpsc::UnboundedSender<reflector::ObjectRef<ClusterServiceVersion>>,
}

/// One event of a watch.
type WatchResult<K> = std::result::Result<K, watcher::Error>;

/// Builds every reflector (each reporting to `sync`), before any controller runs.
async fn reflect(client: &Client, sync: &SyncTracker) -> Reflected {
    // Every watch: a 30 s server-side timeout, bookmarks, backoff, supervised (see `stores`).
    let wc = stores::watch_config;
    let (catalog_sources, catsrc_stream) = reflected(
        Api::<CatalogSource>::all(client.clone()),
        wc(),
        sync.flag("catalogsources"),
    );
    let (subscriptions, sub_stream) = reflected(
        Api::<Subscription>::all(client.clone()),
        wc(),
        sync.flag("subscriptions"),
    );
    let (install_plans, ip_stream) = reflected(
        Api::<InstallPlan>::all(client.clone()),
        wc(),
        sync.flag("installplans"),
    );
    // The CSV controller hears of Subscription changes through the Subscription reflector's
    // own stream (its store is updated before an object is passed on), filtered to the
    // changes its CSVs read: no second watch, and no reconcile that reads a stale store.
    let (sub_changes_tx, sub_changes) = futures::channel::mpsc::unbounded::<Subscription>();
    let sub_stream = sub_stream.inspect({
        let mut filter = mappers::SubscriptionConfigChanges::default();
        move |event| {
            if let Ok(sub) = event
                && filter.changed(sub)
            {
                // The CSV controller stopped: nothing left to tell.
                let _ = sub_changes_tx.unbounded_send(sub.clone());
            }
        }
    });
    // Copied CSVs stay out of the store (and so of every controller and of resolution).
    let (csvs, csv_stream) = reflected(
        Api::<ClusterServiceVersion>::all(client.clone()),
        wc().labels(&format!("!{}", crate::api::labels::COPIED_FROM)),
        sync.flag("clusterserviceversions"),
    );
    let (operator_groups, og_stream) = reflected(
        Api::<OperatorGroup>::all(client.clone()),
        wc(),
        sync.flag("operatorgroups"),
    );
    // What a CSV's install owns, deletions included: the CSV controller puts back what goes.
    let csv_owned = wiring::Wiring::csv_owned;
    let (deployments, deployment_stream) = reflected_with_deletions(
        Api::<Deployment>::all(client.clone()),
        csv_owned(),
        sync.flag("deployments"),
    );
    let (service_accounts, sa_stream) = reflected_with_deletions(
        Api::<PartialObjectMeta<ServiceAccount>>::all(client.clone()),
        wc(),
        sync.flag("serviceaccounts"),
    );
    let (roles, role_stream) = reflected_with_deletions(
        Api::<k8s_openapi::api::rbac::v1::Role>::all(client.clone()),
        csv_owned(),
        sync.flag("roles"),
    );
    let (role_bindings, role_binding_stream) = reflected_with_deletions(
        Api::<k8s_openapi::api::rbac::v1::RoleBinding>::all(client.clone()),
        csv_owned(),
        sync.flag("rolebindings"),
    );
    let (cluster_role_bindings, cluster_role_binding_stream) = reflected_with_deletions(
        Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(client.clone()),
        csv_owned(),
        sync.flag("clusterrolebindings"),
    );

    // Deletions included: a deleted user role is put back by its OperatorGroup.
    let (cluster_roles, cluster_role_stream) = reflected_with_deletions(
        Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(client.clone()),
        wc().labels(&format!("{}=true", crate::api::labels::MANAGED)),
        sync.flag("clusterroles"),
    );

    // OperatorConditions: a store like the others when the CRD is served at startup; else an
    // optional watch, like Operators below (an old install may lack the CRD), that fills the
    // store if the CRD appears. The CSV controller hears of their changes through the
    // reflector's own stream.
    let oc_api = Api::<crate::api::v2::OperatorCondition>::all(client.clone());
    let oc_gvk = GroupVersionKind::gvk(crate::api::GROUP, "v2", crate::plan::operator_condition::KIND);
    let (operator_conditions, oc_stream, oc_synced) =
        if kube::discovery::pinned_kind(client, &oc_gvk).await.is_ok() {
            let flag = sync.flag("operatorconditions");
            let synced = flag.synced();
            let (store, stream) = reflected(oc_api, wc(), flag);
            (store, stream.boxed(), synced)
        } else {
            tracing::info!("the OperatorCondition CRD is not installed: no OperatorConditions until it is");
            let (store, stream, synced) = reflected_optional(sync, "operatorconditions", oc_api, wc());
            (store, stream.boxed(), synced)
        };
    let (oc_changes_tx, oc_changes) =
        futures::channel::mpsc::unbounded::<crate::api::v2::OperatorCondition>();
    let oc_stream = oc_stream.inspect(move |event| {
        if let Ok(oc) = event {
            // The CSV controller stopped: nothing left to tell.
            let _ = oc_changes_tx.unbounded_send(oc.clone());
        }
    });

    // OLMConfig (issue 15): optional like the Operator CRD, never a readiness gate. Changes of
    // its copied-CSV switch send the AllNamespaces groups' CSVs back through the CSV controller.
    let (olm_configs, olm_config_stream, olm_configs_synced) = reflected_optional(
        sync,
        "olmconfigs",
        Api::<crate::api::v1::OLMConfig>::all(client.clone()),
        wc(),
    );
    let (switch_tx, switch_changes) = futures::channel::mpsc::unbounded::<()>();
    let olm_config_stream = olm_config_stream.inspect({
        let mut filter = olm_config::SwitchChanges::default();
        move |event| {
            if let Ok(config) = event
                && filter.changed(config)
            {
                let _ = switch_tx.unbounded_send(());
            }
        }
    });

    let stores = Stores {
        catalog_sources,
        subscriptions,
        install_plans,
        csvs,
        operator_groups,
        deployments,
        service_accounts,
        cluster_roles,
        roles,
        role_bindings,
        cluster_role_bindings,
        operator_conditions,
        operator_conditions_synced: oc_synced,
        olm_configs,
        olm_configs_synced,
    };
    let (csv_requeue, requeues) = futures::channel::mpsc::unbounded();
    Reflected {
        stores,
        catalog_sources: catsrc_stream.boxed(),
        subscriptions: sub_stream.boxed(),
        install_plans: ip_stream.boxed(),
        csvs: csv_stream.boxed(),
        csv_feeds: csv::Feeds {
            deployments: deployment_stream.boxed(),
            service_accounts: sa_stream.boxed(),
            roles: role_stream.boxed(),
            role_bindings: role_binding_stream.boxed(),
            cluster_role_bindings: cluster_role_binding_stream.boxed(),
            subscription_changes: sub_changes,
            condition_changes: oc_changes,
            copy_switch: switch_changes,
            requeues,
        },
        operator_groups: og_stream.boxed(),
        cluster_roles: cluster_role_stream.boxed(),
        operator_conditions: oc_stream.boxed(),
        olm_configs: olm_config_stream.boxed(),
        csv_requeue,
    }
}
