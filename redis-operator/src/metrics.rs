//! metrics: the operator's Prometheus metrics and their text exposition format.
//!
//! Three families, as the operator tutorials recommend: reconcile duration as a histogram labelled by
//! result (`success`/`error`), reconcile errors by error kind, and the number of RedisClusters the
//! operator manages. Written by hand (a mutex-guarded map and a formatter) because three families do
//! not justify a metrics crate; the output follows the Prometheus text format 0.0.4.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt::Write as _,
    sync::Mutex,
};

/// Histogram bucket upper bounds, in seconds.
pub const BUCKETS: [f64; 10] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Inner {
    durations: BTreeMap<&'static str, Histogram>,
    errors: BTreeMap<String, u64>,
    managed: BTreeSet<String>,
}

/// The operator's metrics; shared between the controller and the HTTP server.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    /// Records one reconcile of `seconds` with `result` (`success` or `error`).
    pub fn observe_reconcile(&self, result: &'static str, seconds: f64) {
        if let Ok(mut m) = self.inner.lock() {
            let h = m.durations.entry(result).or_default();
            for (i, le) in BUCKETS.iter().enumerate() {
                if seconds <= *le {
                    h.counts[i] += 1;
                }
            }
            h.count += 1;
            h.sum += seconds;
        }
    }

    /// Counts one reconcile error of `kind`.
    pub fn count_error(&self, kind: &str) {
        if let Ok(mut m) = self.inner.lock() {
            *m.errors.entry(kind.to_owned()).or_default() += 1;
        }
    }

    /// Marks `key` (`namespace/name`) as managed or not.
    pub fn set_managed(&self, key: &str, managed: bool) {
        if let Ok(mut m) = self.inner.lock() {
            if managed {
                m.managed.insert(key.to_owned());
            } else {
                m.managed.remove(key);
            }
        }
    }

    /// The metrics in Prometheus text format.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let Ok(m) = self.inner.lock() else { return out };
        out.push_str("# HELP redis_operator_reconcile_duration_seconds Time spent in one reconcile.\n");
        out.push_str("# TYPE redis_operator_reconcile_duration_seconds histogram\n");
        for (result, h) in &m.durations {
            for (i, le) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "redis_operator_reconcile_duration_seconds_bucket{{result=\"{result}\",le=\"{le}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "redis_operator_reconcile_duration_seconds_bucket{{result=\"{result}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "redis_operator_reconcile_duration_seconds_sum{{result=\"{result}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "redis_operator_reconcile_duration_seconds_count{{result=\"{result}\"}} {}",
                h.count
            );
        }
        out.push_str("# HELP redis_operator_reconcile_errors_total Reconcile errors by kind.\n");
        out.push_str("# TYPE redis_operator_reconcile_errors_total counter\n");
        for (kind, n) in &m.errors {
            let _ = writeln!(
                out,
                "redis_operator_reconcile_errors_total{{error=\"{kind}\"}} {n}"
            );
        }
        out.push_str("# HELP redis_operator_managed_clusters RedisClusters managed by this operator.\n");
        out.push_str("# TYPE redis_operator_managed_clusters gauge\n");
        let _ = writeln!(out, "redis_operator_managed_clusters {}", m.managed.len());
        out
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
        assert!(text.contains("duration_seconds_bucket{result=\"success\",le=\"0.1\"} 0\n"));
        assert!(text.contains("duration_seconds_bucket{result=\"success\",le=\"0.25\"} 1\n"));
        assert!(text.contains("duration_seconds_bucket{result=\"success\",le=\"5\"} 2\n"));
        assert!(text.contains("duration_seconds_count{result=\"success\"} 2\n"));
        assert!(text.contains("duration_seconds_bucket{result=\"error\",le=\"0.01\"} 1\n"));
    }

    #[test]
    fn errors_are_counted_by_kind_and_managed_clusters_by_key() {
        let m = Metrics::default();
        m.count_error("apply");
        m.count_error("apply");
        m.set_managed("ns/a", true);
        m.set_managed("ns/b", true);
        m.set_managed("ns/a", false);
        let text = m.render();
        assert!(text.contains("redis_operator_reconcile_errors_total{error=\"apply\"} 2\n"));
        assert!(text.contains("redis_operator_managed_clusters 1\n"));
    }
}
