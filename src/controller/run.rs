//! run: `olm-controller run`: the probe and metrics server, leader election, the reflectors
//! and the controllers wired together, until a signal or the loss of the lease.

#[allow(clippy::wildcard_imports, reason = "the controller module's shared imports")]
use super::*;

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
    /// The leader Lease was lost; another replica takes over.
    #[error("lost the leader lease; stopping so another replica can take over")]
    LostLease,
}

pub(super) async fn shutdown_signal() {
    operator_runtime::shutdown::signal().await;
}

pub(super) async fn log_result<T, E: std::fmt::Display>(
    controller: &'static str,
    result: std::result::Result<T, E>,
) {
    if let Err(err) = result {
        tracing::debug!(controller, error = %err, "controller event");
    }
}

pub(super) async fn run_controllers(
    client: Client,
    config: Config,
    metrics: Arc<Metrics>,
    ready: Arc<crate::k8s::http::Readiness>,
) -> std::result::Result<(), RunError> {
    // Every watch: a 30 s server-side timeout, bookmarks, backoff, supervised (see `stores`).
    let wc = stores::watch_config;
    // kube-runtime's own limit starves objects under load; each controller's reconciles take
    // a slot of `Context::slots` instead, granted in arrival order (`context::instrumented`).
    let cfg = ControllerConfig::default;
    let sync = SyncTracker::default();
    let (synced_tx, synced_rx) = tokio::sync::watch::channel(false);

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
    let csv_owned = || {
        wc().labels(&format!(
            "{}={}",
            crate::api::labels::OWNER_KIND,
            crate::plan::steps::CSV_KIND
        ))
    };
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
        if kube::discovery::pinned_kind(&client, &oc_gvk).await.is_ok() {
            let flag = sync.flag("operatorconditions");
            let synced = flag.synced();
            let (store, stream) = reflected(oc_api, wc(), flag);
            (store, stream.boxed(), synced)
        } else {
            tracing::info!("the OperatorCondition CRD is not installed: no OperatorConditions until it is");
            let (store, stream, synced) = reflected_optional(&sync, "operatorconditions", oc_api, wc());
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
        &sync,
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
        catalog_sources: catalog_sources.clone(),
        subscriptions: subscriptions.clone(),
        install_plans: install_plans.clone(),
        csvs: csvs.clone(),
        operator_groups: operator_groups.clone(),
        deployments: deployments.clone(),
        service_accounts,
        cluster_roles,
        roles,
        role_bindings,
        cluster_role_bindings,
        operator_conditions: operator_conditions.clone(),
        operator_conditions_synced: oc_synced,
        olm_configs: olm_configs.clone(),
        olm_configs_synced,
    };
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
    // CSVs whose copies the OLMConfig reconcile found out of line, to the CSV controller.
    let (csv_requeue, csv_requeues) = futures::channel::mpsc::unbounded();
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

    // CatalogSources: re-read when the ConfigMap they name changes, and reconciled as soon as
    // the pull of their image finishes (not at the next requeue of the pull's wait).
    let catsrc_store = stores.catalog_sources.clone();
    let catsrc_ctl = Controller::for_stream(catsrc_stream, catalog_sources)
        .with_config(cfg())
        .watches_stream(
            metadata_trigger::<ConfigMap>(&sync, client.clone(), wc()),
            move |cm| mappers::catalog_sources_for_config_map(&catsrc_store.state(), &cm),
        )
        .reconcile_on(
            shared
                .images
                .finished()
                .map(|(ns, name)| reflector::ObjectRef::<CatalogSource>::new(&name).within(&ns)),
        )
        .shutdown_on_signal();

    // OperatorGroups: a sibling group appearing or leaving changes TooManyOperatorGroups.
    // Any group event, and a group role naming a missing group, also wakes the sweep that
    // deletes deleted groups' roles (`operator_group::sweep_task`).
    let og_store = stores.operator_groups.clone();
    let og_store2 = stores.operator_groups.clone();
    let og_store3 = stores.operator_groups.clone();
    let (sweep_tx, sweep_signals) = futures::channel::mpsc::unbounded::<()>();
    let sweep_tx2 = sweep_tx.clone();
    let og_ctl = Controller::for_stream(og_stream, operator_groups)
        .with_config(cfg())
        .watches_stream(
            metadata_trigger::<OperatorGroup>(&sync, client.clone(), wc()),
            move |og| {
                // The sweep task stopped: nothing left to tell.
                let _ = sweep_tx.unbounded_send(());
                mappers::siblings_in_namespace(&og_store.state(), og.namespace().as_deref())
            },
        )
        // Member CSVs change the group's provided APIs and user roles.
        .watches_stream(
            metadata_trigger::<ClusterServiceVersion>(&sync, client.clone(), wc()),
            move |csv| mappers::siblings_in_namespace(&og_store2.state(), csv.namespace().as_deref()),
        )
        // The ServiceAccount a group names appeared, changed or went (`status.serviceAccountRef`).
        .watches_stream(metadata_trigger::<ServiceAccount>(&sync, client.clone(), wc()), {
            let groups = stores.operator_groups.clone();
            move |sa| mappers::operator_groups_naming_account(&groups.state(), &sa)
        })
        // A group's own ClusterRole, or a per-API role of its members' APIs, changed or went:
        // put it back.
        .watches_stream(cluster_role_stream, {
            let csvs = stores.csvs.clone();
            move |role| {
                let group = mappers::operator_group_of(&role);
                if group.as_ref().is_some_and(|g| og_store3.get(g).is_none()) {
                    let _ = sweep_tx2.unbounded_send(());
                }
                mappers::operator_groups_for_cluster_role(&role, &csvs.state(), &og_store3.state())
            }
        })
        .shutdown_on_signal();

    // Subscriptions: their InstallPlans, CSVs, catalogs and OperatorGroups.
    let (s1, s2, s3) = (
        stores.subscriptions.clone(),
        stores.subscriptions.clone(),
        stores.subscriptions.clone(),
    );
    let global = shared.config.global_namespace.clone();
    let sub_ctl = Controller::for_stream(sub_stream, subscriptions)
        .with_config(cfg())
        .owns_stream(metadata_trigger::<InstallPlan>(&sync, client.clone(), wc()))
        .watches_stream(
            metadata_trigger::<CatalogSource>(&sync, client.clone(), wc()),
            move |cs| mappers::subscriptions_for_catalog(&s1.state(), &cs, &global),
        )
        .watches_stream(
            metadata_trigger::<ClusterServiceVersion>(&sync, client.clone(), wc()),
            move |csv| mappers::siblings_in_namespace(&s2.state(), csv.namespace().as_deref()),
        )
        .watches_stream(
            metadata_trigger::<OperatorGroup>(&sync, client.clone(), wc()),
            move |og| mappers::siblings_in_namespace(&s3.state(), og.namespace().as_deref()),
        )
        // A catalog loaded into the cache (after a restart its CatalogSource's status may not
        // change, so its watch says nothing).
        // A bundle image pulled: the Subscriptions waiting on it plan at once (not at their
        // next 5 s requeue).
        .reconcile_on(shared.bundles.finished().flat_map({
            let subs = stores.subscriptions.clone();
            move |(catalog_ns, _image)| {
                futures::stream::iter(mappers::subscriptions_waiting_on_bundles(
                    &subs.state(),
                    &catalog_ns,
                ))
            }
        }))
        .reconcile_on(shared.catalogs.loads().flat_map({
            let (subs, global) = (
                stores.subscriptions.clone(),
                shared.config.global_namespace.clone(),
            );
            move |(ns, name)| {
                futures::stream::iter(mappers::subscriptions_for_catalog_named(
                    &subs.state(),
                    &ns,
                    &name,
                    &global,
                ))
            }
        }))
        .shutdown_on_signal();

    // InstallPlans: an OperatorGroup in their namespace (a plan waits for one, see
    // `plan::install_plan::group_check`).
    // A Role, RoleBinding or ServiceAccount changing in their namespace: a failed scoped plan
    // there is retried (`plan::install_plan::retried_on_rbac_change`).
    let ip_store = stores.install_plans.clone();
    let ip_ctl = Controller::for_stream(ip_stream, install_plans)
        .with_config(cfg())
        .watches_stream(
            metadata_trigger::<OperatorGroup>(&sync, client.clone(), wc()),
            move |og| mappers::unfinished_plans_in(&ip_store.state(), og.namespace().as_deref()),
        )
        .watches_stream(
            metadata_trigger::<k8s_openapi::api::rbac::v1::Role>(&sync, client.clone(), wc()),
            rbac_mapper(stores.install_plans.clone(), Arc::clone(&shared)),
        )
        .watches_stream(
            metadata_trigger::<k8s_openapi::api::rbac::v1::RoleBinding>(&sync, client.clone(), wc()),
            rbac_mapper(stores.install_plans.clone(), Arc::clone(&shared)),
        )
        .watches_stream(
            metadata_trigger::<ServiceAccount>(&sync, client.clone(), wc()),
            rbac_mapper(stores.install_plans.clone(), Arc::clone(&shared)),
        )
        .shutdown_on_signal();

    // CSVs: their Deployments and ServiceAccounts, OperatorGroups, CRDs, the CSVs that
    // replace them, and their Subscription's config.
    let (c1, c2, c3) = (stores.csvs.clone(), stores.csvs.clone(), stores.csvs.clone());
    let csv_ctl = Controller::for_stream(csv_stream, csvs)
        .with_config(cfg())
        .owns_stream(deployment_stream)
        .owns_stream(sa_stream)
        // The rest of what an install owns, deletions included: the webhook Services and cert
        // Secrets (owner references), its RBAC here and in the target namespaces, its
        // ClusterRoles and its webhook configurations (`olm.owner*` labels).
        .owns_stream(metadata_trigger::<k8s_openapi::api::core::v1::Service>(
            &sync,
            client.clone(),
            wc().labels(&format!("{}=true", crate::api::labels::MANAGED)),
        ))
        .owns_stream(metadata_trigger::<k8s_openapi::api::core::v1::Secret>(
            &sync,
            client.clone(),
            wc().labels(&format!("{}=true", crate::api::labels::MANAGED)),
        ))
        .watches_stream(role_stream, |o| mappers::csv_of_owner_labels(&o))
        .watches_stream(role_binding_stream, |o| mappers::csv_of_owner_labels(&o))
        .watches_stream(cluster_role_binding_stream, |o| mappers::csv_of_owner_labels(&o))
        .watches_stream(
            metadata_trigger::<k8s_openapi::api::rbac::v1::ClusterRole>(&sync, client.clone(), csv_owned()),
            |o| mappers::csv_of_owner_labels(&o),
        )
        .watches_stream(
            metadata_trigger::<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration>(
                &sync,
                client.clone(),
                csv_owned(),
            ),
            |o| mappers::csv_of_owner_labels(&o),
        )
        .watches_stream(
            metadata_trigger::<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>(
                &sync,
                client.clone(),
                csv_owned(),
            ),
            |o| mappers::csv_of_owner_labels(&o),
        )
        .watches_stream(
            metadata_trigger::<OperatorGroup>(&sync, client.clone(), wc()),
            move |og| mappers::csvs_for_operator_group(&c1.state(), &og),
        )
        .watches_stream(
            trigger(&sync, Api::<ClusterServiceVersion>::all(client.clone()), wc()),
            // A copy is the copied-CSV controller's business (it watches copies itself).
            move |csv| match copied_csv::original_of(&csv) {
                Some(_) => Vec::new(),
                None => mappers::csvs_related_to(&c2.state(), &csv),
            },
        )
        .watches_stream(
            metadata_trigger::<CustomResourceDefinition>(&sync, client.clone(), wc()),
            move |crd| mappers::csvs_for_crd(&c3.state(), &crd.name_any()),
        )
        .watches_stream(sub_changes.map(Ok::<_, watcher::Error>), |sub| {
            mappers::csvs_for_subscription(&sub)
        })
        // Its OperatorCondition (the generator) and the one of the CSV it replaces (the gate).
        .watches_stream(oc_changes.map(Ok::<_, watcher::Error>), {
            let csvs = stores.csvs.clone();
            move |oc| operator_condition::csvs_for(&csvs.state(), &oc)
        })
        .reconcile_on(futures::stream::select(
            switch_changes.flat_map({
                let (csvs, groups) = (stores.csvs.clone(), stores.operator_groups.clone());
                move |()| {
                    futures::stream::iter(olm_config::csvs_of_all_namespaces_groups(
                        &csvs.state(),
                        &groups.state(),
                    ))
                }
            }),
            // CSVs whose copies the OLMConfig reconcile found out of line (upstream requeues them).
            csv_requeues,
        ))
        .shutdown_on_signal();

    // OperatorConditions: their Roles and RoleBindings, and their status.
    let managed = || wc().labels(&format!("{}=true", crate::api::labels::MANAGED));
    let oc_ctl = Controller::for_stream(oc_stream, operator_conditions)
        .with_config(cfg())
        .watches_stream(
            metadata_trigger::<k8s_openapi::api::rbac::v1::Role>(&sync, client.clone(), managed()),
            {
                let shared = Arc::clone(&shared);
                move |role| operator_condition::owner_of(&shared, &role)
            },
        )
        .watches_stream(
            metadata_trigger::<k8s_openapi::api::rbac::v1::RoleBinding>(&sync, client.clone(), managed()),
            {
                let shared = Arc::clone(&shared);
                move |binding| operator_condition::owner_of(&shared, &binding)
            },
        )
        .shutdown_on_signal();

    // Operators (issue 15): not a readiness gate (an old install may lack the CRD).
    let (operators, operator_stream, operators_synced) = reflected_optional(
        &sync,
        "operators",
        Api::<crate::api::v1::Operator>::all(client.clone()),
        wc(),
    );
    let operator_triggers =
        operator::triggers(&sync, client.clone(), operators.clone(), operators_synced, wc);
    let operator_ctl = Controller::for_stream(
        operator_stream.predicate_filter(kube::runtime::predicates::generation, Default::default()),
        operators,
    )
    // An install changes its labelled objects many times within a second, and each Operator
    // reconcile lists every component kind: one reconcile per burst is enough for a status
    // that only mirrors them.
    .with_config(cfg().debounce(Duration::from_secs(2)))
    .reconcile_on(operator_triggers)
    .shutdown_on_signal();
    let operator_ctx = Context::new(&shared, "operator");

    // APIServices labelled with a CSV owner: an orphan is deleted (upstream `syncAPIService`).
    let api_service_orphans = tokio::spawn(api_service::collect_orphans(
        Context::new(&shared, "apiservice"),
        metadata_trigger::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(
            &sync,
            client.clone(),
            wc().labels(api_service::SELECTOR),
        ),
    ));

    // The OLMConfig `cluster`: created when missing, its status follows the copies.
    tokio::spawn(olm_config::ensure_exists(client.clone()));
    let olm_config_ctl = Controller::for_stream(olm_config_stream, olm_configs)
        .with_config(ControllerConfig::default().debounce(Duration::from_secs(1)))
        .watches_stream(
            metadata_trigger::<ClusterServiceVersion>(
                &sync,
                client.clone(),
                wc().labels(crate::api::labels::COPIED_FROM),
            ),
            |_| Some(reflector::ObjectRef::new(crate::api::v1::OLM_CONFIG_NAME)),
        )
        .shutdown_on_signal();
    let olm_config_ctx = Context::new(&shared, "olmconfig");

    let catsrc_ctx = Context::new(&shared, "catalogsource");
    let og_ctx = Context::new(&shared, "operatorgroup");
    let sweep = tokio::spawn(operator_group::sweep_task(
        Context::new(&shared, "operatorgroup-sweep"),
        sweep_signals,
    ));
    let sub_ctx = Context::new(&shared, "subscription");
    let ip_ctx = Context::new(&shared, "installplan");
    let csv_ctx = Context::new(&shared, "csv");
    // Copied CSVs: their own queue, off the CSV controller's install path (`copied_csv`).
    let copies = tokio::spawn(copied_csv::run(
        Context::new(&shared, "copiedcsv"),
        metadata_trigger::<ClusterServiceVersion>(
            &sync,
            client.clone(),
            wc().labels(crate::api::labels::COPIED_FROM),
        ),
        metadata_trigger::<k8s_openapi::api::core::v1::Namespace>(&sync, client.clone(), wc()),
    ));
    let oc_ctx = Context::new(&shared, operator_condition::CONTROLLER);

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
        operator_ctl
            .run(operator::reconcile, error_policy, operator_ctx)
            .for_each(|r| log_result("operator", r)),
        oc_ctl
            .run(operator_condition::reconcile, error_policy, oc_ctx)
            .for_each(|r| log_result(operator_condition::CONTROLLER, r)),
        olm_config_ctl
            .run(olm_config::reconcile, error_policy, olm_config_ctx)
            .for_each(|r| log_result("olmconfig", r)),
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
    tracing::info!("controllers stopped");
    Ok(())
}

/// The InstallPlan trigger of a Role, RoleBinding or ServiceAccount event: records when the
/// namespace's RBAC changed and names its failed scoped plans.
fn rbac_mapper<K: Resource>(
    store: Store<InstallPlan>,
    shared: Arc<Shared>,
) -> impl Fn(K) -> Vec<kube::runtime::reflector::ObjectRef<InstallPlan>> {
    move |o| {
        let ns = o.meta().namespace.clone();
        if let Some(ns) = &ns {
            shared.note_rbac_change(ns);
        }
        mappers::failed_scoped_plans_in(&store.state(), ns.as_deref())
    }
}
