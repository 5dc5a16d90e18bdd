//! telemetry: structured logs through `tracing`, set up by the workspace's shared
//! [`operator_runtime::telemetry`] (filter from `RUST_LOG`, `--log-format text|json`).

pub use operator_runtime::telemetry::{DEFAULT_FILTER, LogFormat, init};
