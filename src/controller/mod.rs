//! controller: the OLM controllers on kube-runtime, and `run()` which wires them together.
//!
//! One controller per kind, each a pipeline `observe → decide → act → report`:
//! - [`catalog_source`]: loads ConfigMap, built-in and image catalogs (pulled in the background
//!   by [`image_puller`]) into the shared [`cache`];
//! - [`operator_group`]: target namespaces and the one-group-per-namespace rule;
//! - [`subscription`]: resolution and the InstallPlan of each Subscription;
//! - [`install_plan`]: the approval gate and step execution;
//! - [`csv`]: the ClusterServiceVersion state machine and its Deployments;
//! - [`olm_config`]: the OLMConfig `cluster` (created when missing), its status, and the
//!   copied-CSV switch it holds;
//! - [`operator`]: the `operators.coreos.com/v1` Operator `<package>.<namespace>` listing the
//!   objects carrying its component label;
//! - [`operator_condition`]: each CSV's OperatorCondition (created by the CSV controller), its
//!   Role and RoleBinding, and its status.
//!
//! Beside them, [`serve`] puts the cached catalogs on the wire, [`package_server`] serves
//! the `packages.operators.coreos.com/v1` PackageManifest API from them, and [`console`] serves
//! the web console's pages read-only from the caches and stores.
//!
//! The shell around them is split by concern: [`context`] (what the controllers share, the error
//! policy, Events), [`stores`] (reflectors and their sync), [`status_writes`] (no status
//! written from a store that lags behind the last write), `wiring` (what each kind's `controller`
//! function builds its kube-runtime controller from: the trigger watches, the settings, the
//! error policy) and [`run`](mod@run) (the server, the lease, the reflectors, and each kind's
//! controller started beside the tasks around them).
//!
//! Every controller reads the other kinds from shared reflector stores ([`Stores`]) rather than
//! the API, writes with server-side apply under its own field manager (`olm-rs/<controller>`),
//! and only writes a status that changed. Only the replica holding the leader Lease runs them.
//!
//! Every reflector is built here ([`reflected`]) so that its first complete list can be
//! observed: `/readyz` turns ready once all stores have synced (a standby replica, waiting for
//! the lease, counts as ready; see [`crate::k8s::http`]), and reconciles wait for that too.
//! Watches on other kinds that only need a name and namespace use metadata-only watches, which
//! keeps ConfigMaps and CRDs out of memory.

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
use k8s_openapi::api::{apps::v1::Deployment, core::v1::ServiceAccount};
use kube::{
    Api, Client, Resource, ResourceExt,
    core::{ApiResource, GroupVersionKind, PartialObjectMeta},
    discovery::ApiCapabilities,
    runtime::{
        PredicateConfig, WatchStreamExt, controller::Action, predicates, reflector, reflector::Store, watcher,
    },
};

use crate::{
    api::{
        v1::OperatorGroup,
        v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
    },
    k8s::{
        events::Events,
        http::{Readiness, ReadyState},
    },
    metrics::Metrics,
};

pub mod api_service;
pub mod cache;
pub mod catalog_source;
pub mod console;
pub mod copied_csv;
pub mod csv;
pub mod error;
pub mod image_puller;
pub mod install_plan;
pub mod mappers;
pub mod olm_config;
pub mod operator;
pub mod operator_condition;
pub mod operator_group;
pub mod package_server;
pub mod serve;
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
    /// The leader Lease's term and retry period (failover after a crash takes at most their sum).
    pub lease_timing: crate::k8s::lease::Timing,
    /// A directory that replaces the embedded built-in catalog.
    pub builtin_catalog: Option<PathBuf>,
    /// How long transient InstallPlan step errors are retried before the plan fails.
    pub install_plan_retry_timeout: Duration,
    /// Where catalog images are unpacked, by digest.
    pub cache_dir: PathBuf,
    /// Registries (`HOST:PORT`) spoken to over plain HTTP.
    pub insecure_registries: Vec<String>,
    /// PEM CA certificates trusted for registries besides the system roots.
    pub registry_ca: Option<Vec<u8>>,
    /// How many catalog images are pulled at once.
    pub max_concurrent_pulls: usize,
    /// Copied CSVs off for AllNamespaces OperatorGroups whatever the OLMConfig `cluster` says
    /// (either this or its `disableCopiedCSVs` disables them).
    pub disable_copied_csvs: bool,
    /// CatalogSources served on the registry gRPC API, one per address ([`serve`]).
    pub serve_grpc: Vec<serve::GrpcTarget>,
    /// Where every CatalogSource is served on the catalogd HTTP API ([`serve`]).
    pub serve_http: Option<SocketAddr>,
    /// Where the `packages.operators.coreos.com/v1` API is served ([`package_server`]).
    pub serve_packages: Option<SocketAddr>,
    /// The Service the APIService of that API names ([`package_server`]).
    pub packages_service: package_server::ServiceRef,
    /// Where the read-only web console is served, a loopback address ([`console`]).
    pub console: Option<SocketAddr>,
    /// The connection settings the client was built from: scoped installs act as a group's
    /// ServiceAccount through them ([`crate::k8s::scoped`]); `None` refuses scoped plans.
    pub connection: Option<kube::Config>,
    /// The counter the client's [`crate::k8s::counted`] layer increments, exported on
    /// `/metrics` (counts nothing unless the client came from [`Config::client`]).
    pub api_requests: ApiRequests,
}

pub use crate::metrics::{ApiRequestLabels, ApiRequests};

impl Config {
    /// The client of `connection` whose every request is counted on `/metrics`
    /// (`olmrs_api_requests_total`, [`crate::k8s::counted`]).
    pub fn client(&self, connection: kube::Config) -> std::result::Result<Client, kube::Error> {
        Ok(kube::client::ClientBuilder::try_from(connection)?
            .with_layer(&crate::k8s::counted::CountRequests::new(
                self.api_requests.clone(),
                self.global_namespace.clone(),
            ))
            .build())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            global_namespace: "olm".into(),
            metrics_bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            leader_elect: false,
            lease_namespace: "olm".into(),
            lease_timing: crate::k8s::lease::Timing::default(),
            builtin_catalog: None,
            install_plan_retry_timeout: Duration::from_secs(60),
            cache_dir: std::env::temp_dir().join("olm-rs-cache"),
            insecure_registries: Vec::new(),
            registry_ca: None,
            max_concurrent_pulls: 2,
            disable_copied_csvs: false,
            serve_grpc: Vec::new(),
            serve_http: None,
            serve_packages: None,
            packages_service: package_server::ServiceRef::default(),
            console: None,
            connection: None,
            api_requests: crate::metrics::ApiRequests::default(),
        }
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

mod applied;
mod context;
mod run;
mod status_writes;
mod stores;
#[cfg(test)]
mod testing;
mod wiring;

pub use context::*;
pub use run::*;
pub use stores::*;
