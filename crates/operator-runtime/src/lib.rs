//! operator-runtime: the plumbing every binary of the olm-rs workspace shares, written once.
//!
//! `olm-controller` and `redis-operator` are different products (OLM itself, and an operator OLM
//! installs), but they run the same way: a probe and metrics server, leader election for the
//! replicas of a Deployment, graceful shutdown on SIGTERM, structured logs, and per-object backoff
//! after a failed reconcile. Each of those lives here exactly once, so the two binaries cannot
//! drift apart (they had: one HTTP server timed out reads and the other did not, and one `/readyz`
//! said ready before its controller had started).
//!
//! - [`http`]: `/metrics`, `/healthz`, `/readyz` on hyper; the routing is a pure function.
//! - [`https`]: the webhook server over TLS, with the serving certificate re-read when rotated.
//! - [`lease`]: leader election with a `coordination.k8s.io/v1` Lease, expiry timed on the
//!   observer's clock as client-go does.
//! - [`shutdown`]: the SIGTERM/SIGINT future.
//! - [`telemetry`]: the `tracing` subscriber (text or JSON, filter from `RUST_LOG`).
//! - [`backoff`]: per-object exponential backoff.
//! - [`watch`]: every watch with a short timeout, backoff, and a supervisor that re-lists a
//!   silent one and names it in `/readyz`.
//! - [`duration`]: the `60s` / `2m` / `1h` duration flags.
//! - [`error_chain`]: an error and its causes on one line.
//!
//! Nothing here knows about OLM or Redis.

pub mod backoff;
pub mod duration;
pub mod http;
pub mod https;
pub mod lease;
pub mod shutdown;
pub mod slots;
pub mod telemetry;
pub mod watch;

/// An error and every `source()` below it, joined with `: ` (the `caused by` chain on one line).
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        // Many errors repeat their source's message in their own; print it once.
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    #[derive(Debug, thiserror::Error)]
    #[error("failed to load the catalog")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn an_error_chain_lists_every_cause_once() {
        let err = Outer(std::io::Error::other("disk on fire"));
        assert_eq!(
            super::error_chain(&err),
            "failed to load the catalog: disk on fire"
        );
    }
}
