//! wiring: what each kind's controller is built from, so that every kind sets up its own
//! kube-runtime `Controller` beside its reconcile (`<kind>::controller`), and `run` only builds
//! the reflectors, the shared context and the tasks around them.
//!
//! The rule it enforces: every trigger watch is made here, with the same watch settings and
//! reporting to the one [`SyncTracker`] (so `/readyz` and the watch supervisor see it), and every
//! controller runs with the same settings and error policy, its results logged under its name.

use std::{future::Future, sync::Arc};

use futures::{Stream, StreamExt};
use kube::{
    Client,
    core::PartialObjectMeta,
    runtime::{
        Controller,
        controller::{Action, Config as ControllerConfig},
        watcher,
    },
};

use super::{
    Context, Error, Shared, error_policy,
    stores::{SyncTracker, Watched, metadata_trigger, trigger, watch_config},
};

/// The parts every kind's controller is wired from.
pub(super) struct Wiring<'a> {
    /// Every watch reports its sync and health here.
    pub(super) sync: &'a SyncTracker,
    /// The controller's client.
    pub(super) client: &'a Client,
    /// The shared context (stores, caches, settings) each reconcile gets.
    pub(super) shared: &'a Arc<Shared>,
}

impl Wiring<'_> {
    /// The watch settings of every watch (a 30 s server-side timeout, bookmarks; see
    /// [`watch_config`]).
    pub(super) fn watch() -> watcher::Config {
        watch_config()
    }

    /// Objects a CSV's install owns (labelled `olm.owner.kind=ClusterServiceVersion`).
    pub(super) fn csv_owned() -> watcher::Config {
        watch_config().labels(&format!(
            "{}={}",
            crate::api::labels::OWNER_KIND,
            crate::plan::steps::CSV_KIND
        ))
    }

    /// Objects olm-rs manages (labelled `olm-rs.io/managed=true`).
    pub(super) fn managed() -> watcher::Config {
        watch_config().labels(&format!("{}=true", crate::api::labels::MANAGED))
    }

    /// A metadata-only trigger watch of `K` (names and namespaces, no store).
    pub(super) fn metadata<K>(
        &self,
        wc: watcher::Config,
    ) -> impl Stream<Item = Result<PartialObjectMeta<K>, watcher::Error>> + Send + use<K>
    where
        K: Watched,
    {
        metadata_trigger::<K>(self.sync, self.client.clone(), wc)
    }

    /// A full-object trigger watch of `K` on every namespace (for mappers that read a spec).
    pub(super) fn objects<K>(
        &self,
        wc: watcher::Config,
    ) -> impl Stream<Item = Result<K, watcher::Error>> + Send + use<K>
    where
        K: Watched,
    {
        trigger(self.sync, kube::Api::<K>::all(self.client.clone()), wc)
    }

    /// The context of the controller `name`.
    pub(super) fn context(&self, name: &'static str) -> Arc<Context> {
        Context::new(self.shared, name)
    }
}

/// The controllers' settings: kube-runtime's own concurrency limit starves objects under load,
/// so each controller's reconciles take a slot of `Context::slots` instead, granted in arrival
/// order (`context::instrumented`).
pub(super) fn settings() -> ControllerConfig {
    ControllerConfig::default()
}

/// Runs `controller` with `reconcile` and the shared error policy until shutdown, each result
/// logged under `name`.
pub(super) fn run<K, R, F>(
    controller: Controller<K>,
    reconcile: R,
    ctx: Arc<Context>,
    name: &'static str,
) -> impl Future<Output = ()> + Send + use<K, R, F>
where
    K: Watched,
    R: FnMut(Arc<K>, Arc<Context>) -> F + Send + 'static,
    F: Future<Output = Result<Action, Error>> + Send + 'static,
{
    controller
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(move |r| log_result(name, r))
}

/// A controller's result, logged at debug level (errors are counted and evented by the error
/// policy already).
async fn log_result<T, E: std::fmt::Display>(controller: &'static str, result: Result<T, E>) {
    if let Err(err) = result {
        tracing::debug!(controller, error = %err, "controller event");
    }
}
