//! config: the redis.conf the operator writes, and the rule for which `spec.redisConfig` lines it accepts.
//!
//! The operator owns the parts of redis.conf that its other objects depend on: the port the Services
//! and probes use, the data directory the volume is mounted at, the replication topology it builds
//! (`replicaof` in standalone mode, `cluster-*` in cluster mode), and the process model (foreground,
//! no daemonising). A user line that changed any of these would silently break the StatefulSet,
//! the probes or cluster formation, so such directives are refused. So are directives that load code
//! or other files (`include`, `loadmodule`, `enable-*-command`), `rename-command` (it can hide the
//! commands the probes and the operator send), and authentication directives (`requirepass`,
//! `masterauth`, `aclfile`, `user`): a password in a ConfigMap is not a secret, and the probes and
//! the cluster-forming code connect without credentials.
//!
//! Everything else (memory limits, eviction policy, persistence tuning, timeouts, ...) is passed
//! through after a syntax check: one directive per line, a lowercase-able name of letters, digits and
//! dashes, printable characters only. Blank lines and `#` comments are allowed and dropped.
//! A refused line is reported with its 1-based line number and text so the `Degraded` condition can
//! name it.

use super::crd::{Mode, RedisClusterSpec};

/// The Redis port, used by the Services, the probes and cluster formation.
pub const REDIS_PORT: u16 = 6379;
/// The Redis Cluster bus port (`REDIS_PORT + 10000`).
pub const CLUSTER_BUS_PORT: u16 = 16379;
/// Where the data volume is mounted in the Redis container.
pub const DATA_DIR: &str = "/data";

/// Directives (matched case-insensitively) refused in `spec.redisConfig`, with the reason.
pub const DENIED_DIRECTIVES: &[(&str, &str)] = &[
    ("port", "the Services and probes use port 6379"),
    (
        "bind",
        "Redis must listen on the pod address the Services route to",
    ),
    ("protected-mode", "the operator sets it for in-cluster access"),
    ("tls-port", "TLS is not managed by this operator"),
    ("unixsocket", "the operator connects over TCP"),
    ("dir", "the data directory is the mounted volume /data"),
    (
        "dbfilename",
        "the data files live where the operator mounts the volume",
    ),
    (
        "appenddirname",
        "the data files live where the operator mounts the volume",
    ),
    ("logfile", "Redis logs to stdout in a container"),
    ("pidfile", "the container runs Redis in the foreground"),
    ("daemonize", "the container runs Redis in the foreground"),
    ("supervised", "the container runs Redis in the foreground"),
    ("include", "it would load a file the operator does not control"),
    ("loadmodule", "it would load native code into Redis"),
    (
        "enable-module-command",
        "it would allow loading native code at runtime",
    ),
    ("enable-debug-command", "DEBUG can crash or stall the server"),
    (
        "enable-protected-configs",
        "it would allow changing protected settings at runtime",
    ),
    (
        "rename-command",
        "the probes and the operator rely on the standard command names",
    ),
    ("replicaof", "replication is set up by the operator"),
    ("slaveof", "replication is set up by the operator"),
    ("cluster-enabled", "set from spec.mode"),
    ("cluster-config-file", "managed by the operator in cluster mode"),
    ("cluster-port", "the cluster bus uses port 16379"),
    (
        "requirepass",
        "passwords do not belong in a ConfigMap and the probes connect without one",
    ),
    ("masterauth", "passwords do not belong in a ConfigMap"),
    ("aclfile", "ACLs are not managed by this operator"),
    ("user", "ACLs are not managed by this operator"),
];

/// Directive prefixes refused in `spec.redisConfig` (whole families the operator manages).
pub const DENIED_PREFIXES: &[(&str, &str)] = &[
    (
        "cluster-announce-",
        "the announced addresses are the pod addresses",
    ),
    ("tls-", "TLS is not managed by this operator"),
];

/// Why a `spec.redisConfig` line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A directive the operator manages itself.
    #[error(
        "spec.redisConfig line {line} `{text}`: directive `{directive}` is not allowed ({reason}); remove the line"
    )]
    DeniedDirective {
        /// 1-based line number.
        line: usize,
        /// The line as written.
        text: String,
        /// The refused directive, lowercased.
        directive: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A line that is not `directive [arguments]`.
    #[error(
        "spec.redisConfig line {line} `{text}`: not a redis.conf directive; write `name value` with a name of letters, digits and dashes"
    )]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// The line as written.
        text: String,
    },
}

/// Validates `spec.redisConfig` and returns the accepted directive lines, trimmed.
///
/// # Errors
/// The first refused line, with its number and text.
pub fn validate_redis_config(config: &str) -> Result<Vec<String>, ConfigError> {
    let mut accepted = Vec::new();
    for (i, raw) in config.lines().enumerate() {
        let line = i + 1;
        let text = raw.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let directive = text
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let well_formed = !directive.is_empty()
            && directive.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && directive.starts_with(|c: char| c.is_ascii_alphabetic())
            && text.chars().all(|c| !c.is_control() || c == '\t');
        if !well_formed {
            return Err(ConfigError::Malformed {
                line,
                text: text.to_owned(),
            });
        }
        let denied = DENIED_DIRECTIVES
            .iter()
            .find(|(d, _)| *d == directive)
            .or_else(|| DENIED_PREFIXES.iter().find(|(p, _)| directive.starts_with(p)));
        if let Some((_, reason)) = denied {
            return Err(ConfigError::DeniedDirective {
                line,
                text: text.to_owned(),
                directive,
                reason,
            });
        }
        accepted.push(text.to_owned());
    }
    Ok(accepted)
}

/// The complete redis.conf for `spec`, or the first refused `redisConfig` line.
///
/// # Errors
/// See [`validate_redis_config`].
pub fn render_redis_conf(spec: &RedisClusterSpec) -> Result<String, ConfigError> {
    let extra = validate_redis_config(spec.redis_config.as_deref().unwrap_or_default())?;
    let mut conf = format!(
        "# Managed by redis-operator; edit spec.redisConfig of the RedisCluster instead.\n\
         port {REDIS_PORT}\n\
         bind 0.0.0.0 ::\n\
         protected-mode no\n\
         daemonize no\n\
         dir {DATA_DIR}\n"
    );
    if spec.storage.is_some() {
        conf.push_str("appendonly yes\n");
    } else {
        // Without a volume the data dies with the pod, so snapshots only cost I/O.
        conf.push_str("appendonly no\nsave \"\"\n");
    }
    if spec.mode == Mode::Cluster {
        conf.push_str(&format!(
            "cluster-enabled yes\ncluster-config-file {DATA_DIR}/nodes.conf\ncluster-node-timeout 5000\n"
        ));
    }
    if !extra.is_empty() {
        conf.push_str("# From spec.redisConfig:\n");
        for line in extra {
            conf.push_str(&line);
            conf.push('\n');
        }
    }
    Ok(conf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(config: &str) -> RedisClusterSpec {
        serde_json::from_value(serde_json::json!({"size": 3, "redisConfig": config})).expect("spec")
    }

    #[test]
    fn ordinary_tuning_lines_pass_through_and_comments_are_dropped() {
        let lines = validate_redis_config("# memory\nmaxmemory 200mb\n\n  maxmemory-policy allkeys-lru  \n")
            .expect("valid");
        assert_eq!(lines, ["maxmemory 200mb", "maxmemory-policy allkeys-lru"]);
    }

    #[test]
    fn a_denied_directive_is_refused_naming_its_line_number_and_text() {
        let err = validate_redis_config("maxmemory 1gb\nDir /tmp\n").expect_err("denied");
        assert_eq!(
            err,
            ConfigError::DeniedDirective {
                line: 2,
                text: "Dir /tmp".into(),
                directive: "dir".into(),
                reason: "the data directory is the mounted volume /data",
            }
        );
        assert!(err.to_string().contains("line 2 `Dir /tmp`"), "{err}");
    }

    #[test]
    fn every_denied_directive_and_prefix_is_refused() {
        for (d, _) in DENIED_DIRECTIVES {
            assert!(validate_redis_config(&format!("{d} x")).is_err(), "{d}");
        }
        assert!(validate_redis_config("cluster-announce-ip 1.2.3.4").is_err());
        assert!(validate_redis_config("tls-cert-file /x").is_err());
    }

    #[test]
    fn lines_that_are_not_directives_are_malformed() {
        for bad in ["= 1", "max_memory 1", "-x y", "maxmemory 1\u{7}"] {
            assert!(
                matches!(
                    validate_redis_config(bad),
                    Err(ConfigError::Malformed { line: 1, .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_rendered_conf_has_the_managed_settings_then_the_user_lines() {
        let conf = render_redis_conf(&spec("maxmemory 100mb")).expect("conf");
        assert!(conf.contains("port 6379\n") && conf.contains("dir /data\n"));
        assert!(conf.contains("save \"\"\n"), "no storage means no snapshots");
        assert!(!conf.contains("cluster-enabled"));
        assert!(conf.ends_with("# From spec.redisConfig:\nmaxmemory 100mb\n"));
    }

    #[test]
    fn cluster_mode_enables_the_cluster_with_its_config_file_in_the_data_dir() {
        let mut s = spec("");
        s.mode = Mode::Cluster;
        let conf = render_redis_conf(&s).expect("conf");
        assert!(conf.contains("cluster-enabled yes\ncluster-config-file /data/nodes.conf\n"));
    }
}
