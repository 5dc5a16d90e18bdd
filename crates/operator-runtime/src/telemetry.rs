//! telemetry: structured logs through `tracing`, the same for every binary.
//!
//! The filter comes from `RUST_LOG` (default `info,kube=warn`), the format from
//! `--log-format text|json`. JSON lines carry the span fields (controller, object), so a log
//! pipeline can group every line of one reconcile.

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!("unknown log format '{other}'; use text or json")),
        }
    }
}

/// The filter used when `RUST_LOG` is not set.
pub const DEFAULT_FILTER: &str = "info,kube=warn,tower=warn,hyper=warn";

/// Installs the global subscriber. Calling it twice is harmless (the second call is ignored).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let registry = tracing_subscriber::registry().with(filter);
    let result = match format {
        LogFormat::Text => registry.with(fmt::layer().with_target(false)).try_init(),
        LogFormat::Json => registry
            .with(fmt::layer().json().flatten_event(true).with_current_span(true))
            .try_init(),
    };
    // Already initialised (tests, or a second call): keep the first subscriber.
    drop(result);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_formats_parse_from_their_flag_values() {
        assert_eq!("text".parse::<LogFormat>(), Ok(LogFormat::Text));
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert!("yaml".parse::<LogFormat>().unwrap_err().contains("text or json"));
    }
}
