//! metrics: the operator's Prometheus metrics, on `prometheus-client` like the OLM controller's.
//!
//! Three families, as the operator tutorials recommend: reconcile duration as a histogram labelled by
//! result (`success`/`error`), reconcile errors by error kind, and the number of RedisClusters the
//! operator manages. Exposed in the OpenMetrics text format by [`Metrics::render`].

use std::{
    collections::BTreeSet,
    sync::{Mutex, MutexGuard},
};

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

/// Histogram bucket upper bounds, in seconds.
pub const BUCKETS: [f64; 10] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    error: String,
}

fn new_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The operator's metrics; shared between the controller and the HTTP server.
pub struct Metrics {
    registry: Registry,
    durations: Family<ResultLabels, Histogram, fn() -> Histogram>,
    errors: Family<ErrorLabels, Counter>,
    managed: Gauge,
    managed_keys: Mutex<BTreeSet<String>>,
    watch_ages: operator_runtime::watch::AgeGauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("redis_operator");
        let durations = Family::<ResultLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            new_histogram as fn() -> Histogram,
        );
        let errors = Family::<ErrorLabels, Counter>::default();
        let managed = Gauge::default();
        registry.register(
            "reconcile_duration_seconds",
            "Time spent in one reconcile",
            durations.clone(),
        );
        registry.register("reconcile_errors", "Reconcile errors by kind", errors.clone());
        registry.register(
            "managed_clusters",
            "RedisClusters managed by this operator",
            managed.clone(),
        );
        let watch_ages =
            operator_runtime::watch::AgeGauge::register(&mut registry, "store_last_event_age_seconds");
        Self {
            registry,
            watch_ages,
            durations,
            errors,
            managed,
            managed_keys: Mutex::default(),
        }
    }
}

impl Metrics {
    /// Records one reconcile of `seconds` with `result` (`success` or `error`).
    pub fn observe_reconcile(&self, result: &'static str, seconds: f64) {
        self.durations
            .get_or_create(&ResultLabels { result })
            .observe(seconds);
    }

    /// Counts one reconcile error of `kind`.
    pub fn count_error(&self, kind: &str) {
        self.errors
            .get_or_create(&ErrorLabels {
                error: kind.to_owned(),
            })
            .inc();
    }

    /// Marks `key` (`namespace/name`) as managed or not.
    pub fn set_managed(&self, key: &str, managed: bool) {
        let mut keys = lock(&self.managed_keys);
        if managed {
            keys.insert(key.to_owned());
        } else {
            keys.remove(key);
        }
        self.managed.set(i64::try_from(keys.len()).unwrap_or(i64::MAX));
    }

    /// Records every watch's time since its last event (see `operator_runtime::watch`).
    pub fn record_watch_ages(&self, ages: &[operator_runtime::watch::WatchAge]) {
        self.watch_ages.record(ages);
    }

    /// The metrics in the OpenMetrics text format.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_fall_into_cumulative_buckets_per_result() {
        let m = Metrics::default();
        m.observe_reconcile("success", 0.2);
        m.observe_reconcile("success", 3.0);
        m.observe_reconcile("error", 0.01);
        let text = m.render();
        assert!(
            text.contains("# TYPE redis_operator_reconcile_duration_seconds histogram\n"),
            "{text}"
        );
        assert!(
            text.contains("duration_seconds_bucket{le=\"0.1\",result=\"success\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("duration_seconds_bucket{le=\"0.25\",result=\"success\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("duration_seconds_bucket{le=\"5.0\",result=\"success\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("duration_seconds_bucket{le=\"+Inf\",result=\"success\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("duration_seconds_count{result=\"success\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("duration_seconds_bucket{le=\"0.01\",result=\"error\"} 1\n"),
            "{text}"
        );
    }

    #[test]
    fn errors_are_counted_by_kind_and_managed_clusters_by_key() {
        let m = Metrics::default();
        m.count_error("apply");
        m.count_error("apply");
        m.set_managed("ns/a", true);
        m.set_managed("ns/b", true);
        m.set_managed("ns/a", false);
        m.set_managed("ns/b", true);
        let text = m.render();
        assert!(
            text.contains("redis_operator_reconcile_errors_total{error=\"apply\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("redis_operator_managed_clusters 1\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
