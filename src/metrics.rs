//! metrics: the Prometheus metrics the controller exports on `/metrics`.
//!
//! Names follow upstream OLM where a metric exists there, so dashboards keep working:
//! `csv_succeeded` and `csv_abnormal` (gauges per CSV), `subscription_sync_total`,
//! `install_plan_count`, `installplan_warnings_total`, `catalogsource_ready` and `olm_resolution_duration_seconds`. Ours are
//! prefixed `olmrs_`: reconcile duration and errors per controller.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Instant,
};

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

/// Labels of the per-controller reconcile metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// The controller (`subscription`, `installplan`, ...).
    pub controller: String,
    /// `ok` or `error`.
    pub result: String,
}

/// Labels of the reconcile error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The controller.
    pub controller: String,
    /// The failed stage (the error's `metric_label()`).
    pub error: String,
}

/// Labels of the per-CSV gauges (as upstream).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CsvLabels {
    /// CSV namespace.
    pub namespace: String,
    /// CSV name.
    pub name: String,
    /// CSV version.
    pub version: String,
}

/// Labels of `csv_abnormal` (upstream also carries phase and reason).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CsvAbnormalLabels {
    /// CSV namespace.
    pub namespace: String,
    /// CSV name.
    pub name: String,
    /// CSV version.
    pub version: String,
    /// Current phase.
    pub phase: String,
    /// Current reason.
    pub reason: String,
}

/// Labels of `subscription_sync_total` (as upstream).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SubscriptionLabels {
    /// Subscription name.
    pub name: String,
    /// The CSV it installs.
    pub installed: String,
    /// Its channel.
    pub channel: String,
    /// Its package.
    pub package: String,
    /// Its approval mode.
    pub approval: String,
}

/// Labels of `olmrs_api_requests_total`: every request the controller's client sends.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiRequestLabels {
    /// HTTP method (`GET`, `PATCH`, ...).
    pub method: String,
    /// The resource, with its subresource when there is one (`deployments`,
    /// `subscriptions/status`).
    pub resource: String,
    /// `cluster` (no namespace in the path), `global` (the controller's catalog namespace) or
    /// `namespace` (any other).
    pub scope: String,
}

/// The API request counter, shared by the client's counting layer ([`crate::k8s::counted`]) and
/// the registry.
pub type ApiRequests = Family<ApiRequestLabels, Counter>;

/// Labels of `catalogsource_ready`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CatalogLabels {
    /// CatalogSource namespace.
    pub namespace: String,
    /// CatalogSource name.
    pub name: String,
}

/// The series last recorded for one CSV.
type CsvSeries = (CsvLabels, Option<CsvAbnormalLabels>);

/// Every metric the controller exports, registered in one registry.
pub struct Metrics {
    registry: Mutex<Registry>,
    csv_series: Mutex<HashMap<(String, String), CsvSeries>>,
    /// Reconcile duration per controller and result.
    pub reconcile_duration: Family<ReconcileLabels, Histogram>,
    /// Reconcile errors per controller and stage.
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    /// 1 when the CSV is Succeeded, else 0.
    pub csv_succeeded: Family<CsvLabels, Gauge>,
    /// 1 when the CSV is not Succeeded (with its phase and reason).
    pub csv_abnormal: Family<CsvAbnormalLabels, Gauge>,
    /// Subscription syncs.
    pub subscription_sync_total: Family<SubscriptionLabels, Counter>,
    /// InstallPlans created.
    pub install_plan_count: Gauge,
    /// InstallPlan steps the API server answered with warnings (upstream's
    /// `installplan_warnings_total`).
    pub install_plan_warnings: Counter,
    /// 1 when the CatalogSource serves a valid catalog, else 0.
    pub catalogsource_ready: Family<CatalogLabels, Gauge>,
    /// Time spent resolving one Subscription.
    pub resolution_duration: Histogram,
    /// Seconds since each watch's last event (see `operator_runtime::watch`).
    pub store_last_event_age: operator_runtime::watch::AgeGauge,
    /// API requests sent, per method, resource and scope (counted by the client's layer).
    pub api_requests: ApiRequests,
}

fn duration_buckets() -> impl Iterator<Item = f64> {
    [
        0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ]
    .into_iter()
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates and registers every metric (API requests counted by nothing: see
    /// [`Metrics::with_api_requests`]).
    pub fn new() -> Self {
        Self::with_api_requests(ApiRequests::default())
    }

    /// Creates and registers every metric, the API request counter being `api_requests` (the
    /// one the client's counting layer increments).
    pub fn with_api_requests(api_requests: ApiRequests) -> Self {
        let mut registry = Registry::default();
        let reconcile_duration =
            Family::<ReconcileLabels, Histogram>::new_with_constructor(|| Histogram::new(duration_buckets()));
        let reconcile_errors = Family::<ErrorLabels, Counter>::default();
        let csv_succeeded = Family::<CsvLabels, Gauge>::default();
        let csv_abnormal = Family::<CsvAbnormalLabels, Gauge>::default();
        let subscription_sync_total = Family::<SubscriptionLabels, Counter>::default();
        let install_plan_count = Gauge::default();
        let install_plan_warnings = Counter::default();
        let catalogsource_ready = Family::<CatalogLabels, Gauge>::default();
        let resolution_duration = Histogram::new(duration_buckets());
        let store_last_event_age =
            operator_runtime::watch::AgeGauge::register(&mut registry, "olm_store_last_event_age_seconds");
        registry.register(
            "olmrs_reconcile_duration_seconds",
            "Time spent in one reconcile, per controller and result",
            reconcile_duration.clone(),
        );
        registry.register(
            "olmrs_reconcile_errors",
            "Failed reconciles per controller and failed stage",
            reconcile_errors.clone(),
        );
        registry.register("csv_succeeded", "Successful CSV install", csv_succeeded.clone());
        registry.register("csv_abnormal", "CSV is not succeeded", csv_abnormal.clone());
        registry.register(
            "subscription_sync",
            "Monotonic count of subscription syncs",
            subscription_sync_total.clone(),
        );
        registry.register(
            "install_plan_count",
            "Number of install plans created by this controller",
            install_plan_count.clone(),
        );
        registry.register(
            "installplan_warnings",
            "Warnings the API server answered InstallPlan step writes with",
            install_plan_warnings.clone(),
        );
        registry.register(
            "catalogsource_ready",
            "State of a CatalogSource: 1 ready, 0 not ready",
            catalogsource_ready.clone(),
        );
        registry.register(
            "olm_resolution_duration_seconds",
            "The duration of a dependency resolution attempt",
            resolution_duration.clone(),
        );
        registry.register(
            "olmrs_api_requests",
            "API requests sent by the controller's client, per method, resource and scope",
            api_requests.clone(),
        );
        Self {
            registry: Mutex::new(registry),
            csv_series: Mutex::default(),
            reconcile_duration,
            reconcile_errors,
            csv_succeeded,
            csv_abnormal,
            subscription_sync_total,
            install_plan_count,
            install_plan_warnings,
            catalogsource_ready,
            resolution_duration,
            store_last_event_age,
            api_requests,
        }
    }

    /// Records every watch's time since its last event.
    pub fn record_watch_ages(&self, ages: &[operator_runtime::watch::WatchAge]) {
        self.store_last_event_age.record(ages);
    }

    /// Starts timing one reconcile; call [`ReconcileTimer::finish`] with its outcome.
    pub fn start_reconcile(self: &Arc<Self>, controller: &'static str) -> ReconcileTimer {
        ReconcileTimer {
            metrics: Arc::clone(self),
            controller,
            started: Instant::now(),
        }
    }

    /// Counts one failed reconcile.
    pub fn count_error(&self, controller: &str, error: &str) {
        self.reconcile_errors
            .get_or_create(&ErrorLabels {
                controller: controller.to_owned(),
                error: error.to_owned(),
            })
            .inc();
    }

    /// Records a CSV's phase in `csv_succeeded` / `csv_abnormal`.
    pub fn record_csv(&self, namespace: &str, name: &str, version: &str, phase: &str, reason: &str) {
        // Upstream keeps one series per CSV: drop the previous version/phase/reason combination.
        self.forget_csv(namespace, name);
        let labels = CsvLabels {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            version: version.to_owned(),
        };
        let succeeded = phase == "Succeeded";
        self.csv_succeeded
            .get_or_create(&labels)
            .set(i64::from(succeeded));
        let abnormal = (!succeeded).then(|| CsvAbnormalLabels {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            version: version.to_owned(),
            phase: phase.to_owned(),
            reason: reason.to_owned(),
        });
        if let Some(abnormal) = &abnormal {
            self.csv_abnormal.get_or_create(abnormal).set(1);
        }
        lock(&self.csv_series).insert((namespace.to_owned(), name.to_owned()), (labels, abnormal));
    }

    /// Forgets a CSV's series (it was deleted, or is about to be recorded again).
    pub fn forget_csv(&self, namespace: &str, name: &str) {
        let old = lock(&self.csv_series).remove(&(namespace.to_owned(), name.to_owned()));
        if let Some((labels, abnormal)) = old {
            self.csv_succeeded.remove(&labels);
            if let Some(abnormal) = abnormal {
                self.csv_abnormal.remove(&abnormal);
            }
        }
    }

    /// Renders every metric in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = lock(&self.registry);
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &registry);
        out
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Measures one reconcile (see [`Metrics::start_reconcile`]).
pub struct ReconcileTimer {
    metrics: Arc<Metrics>,
    controller: &'static str,
    started: Instant,
}

impl ReconcileTimer {
    /// Records the duration under `result` (`ok` / `error`).
    pub fn finish(self, ok: bool) {
        let result = if ok { "ok" } else { "error" };
        self.metrics
            .reconcile_duration
            .get_or_create(&ReconcileLabels {
                controller: self.controller.to_owned(),
                result: result.to_owned(),
            })
            .observe(self.started.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_request_counter_is_exported_with_its_labels() {
        let requests = ApiRequests::default();
        let metrics = Metrics::with_api_requests(requests.clone());
        requests
            .get_or_create(&ApiRequestLabels {
                method: "PATCH".into(),
                resource: "subscriptions/status".into(),
                scope: "namespace".into(),
            })
            .inc();
        let text = metrics.render();
        let line = "olmrs_api_requests_total{method=\"PATCH\",resource=\"subscriptions/status\",scope=\"namespace\"} 1";
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }

    #[test]
    fn the_upstream_metric_names_appear_in_the_text_output() {
        let metrics = Arc::new(Metrics::new());
        metrics.record_csv(
            "ns",
            "redis-operator.v0.1.0",
            "0.1.0",
            "Succeeded",
            "InstallSucceeded",
        );
        metrics.count_error("subscription", "resolve");
        metrics.start_reconcile("csv").finish(true);
        metrics.install_plan_count.inc();
        metrics.resolution_duration.observe(0.01);
        metrics
            .catalogsource_ready
            .get_or_create(&CatalogLabels {
                namespace: "olm".into(),
                name: "c".into(),
            })
            .set(1);
        let text = metrics.render();
        for name in [
            "csv_succeeded{",
            "olmrs_reconcile_errors_total{controller=\"subscription\",error=\"resolve\"} 1",
            "olmrs_reconcile_duration_seconds_count{controller=\"csv\",result=\"ok\"} 1",
            "install_plan_count 1",
            "catalogsource_ready{namespace=\"olm\",name=\"c\"} 1",
            "olm_resolution_duration_seconds_count 1",
        ] {
            assert!(text.contains(name), "{name} missing from:\n{text}");
        }
    }

    #[test]
    fn a_csv_has_one_abnormal_series_that_disappears_when_it_succeeds() {
        let metrics = Metrics::new();
        metrics.record_csv("ns", "a", "1.0.0", "Pending", "RequirementsNotMet");
        metrics.record_csv("ns", "a", "1.0.0", "Installing", "InstallWaiting");
        let text = metrics.render();
        assert!(!text.contains("RequirementsNotMet"));
        assert!(text.contains("InstallWaiting"));
        metrics.record_csv("ns", "a", "1.0.0", "Succeeded", "InstallSucceeded");
        let text = metrics.render();
        assert!(!text.contains("csv_abnormal{"), "{text}");
    }
}
