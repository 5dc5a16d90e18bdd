//! The cluster connection of the `kubectl-olm` verbs that act on a cluster (`install`, `list`,
//! `approve`, `uninstall`): which kubeconfig, context and namespace, and API errors turned into
//! messages that say which server was tried and what to do.
//!
//! Resolution follows kubectl: `--kubeconfig PATH` wins; else `KUBECONFIG` (a list of files,
//! merged); else `~/.kube/config`; else the in-cluster service account. `--context` picks a
//! context (the current one otherwise). The namespace is `-n/--namespace`, else the context's
//! namespace, else `default`.
//!
//! This is the imperative shell of the CLI: the verbs fetch objects through it and hand them to
//! their pure functions (building objects, computing rows, finding plans).

use std::{path::PathBuf, time::Duration};

use clap::Args;
use kube::{
    Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};

use crate::cli::CliError;

/// The `caused by` chain of an error on one line, and the `--timeout` grammar, as every binary
/// of the workspace writes and reads them.
pub use operator_runtime::{duration::parse as parse_duration, error_chain};

/// How long to wait for a TCP connection to the apiserver before saying it is unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for one API response.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Flags shared by every verb that talks to a cluster.
#[derive(Debug, Clone, Default, Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, value_name = "PATH", global = true)]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (default: its current context).
    #[arg(long, value_name = "NAME", global = true)]
    pub context: Option<String>,
}

/// A connected client and what it was made from, for messages.
#[derive(Clone)]
pub struct Cluster {
    /// The client.
    pub client: Client,
    /// The namespace to use when the user gave none: the context's, else `default`.
    pub default_namespace: String,
    /// Where the configuration came from (`kubeconfig /path`, `$KUBECONFIG`, `in-cluster`).
    pub source: String,
    /// The apiserver URL.
    pub server: String,
}

/// Where a kubeconfig comes from, in kubectl's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--kubeconfig PATH`.
    Flag(PathBuf),
    /// The `KUBECONFIG` environment variable (its value).
    Env(String),
    /// `~/.kube/config`.
    Home(PathBuf),
    /// No file: try the in-cluster service account.
    InCluster,
}

impl ConfigSource {
    /// Picks the source: the flag, else a non-empty `KUBECONFIG`, else `home/.kube/config` when it
    /// exists, else in-cluster. Pure: the caller passes the environment in.
    pub fn pick(flag: Option<&PathBuf>, env: Option<&str>, home_config: Option<(PathBuf, bool)>) -> Self {
        if let Some(path) = flag {
            return ConfigSource::Flag(path.clone());
        }
        if let Some(value) = env.filter(|v| v.split(':').any(|p| !p.is_empty())) {
            return ConfigSource::Env(value.to_string());
        }
        match home_config {
            Some((path, true)) => ConfigSource::Home(path),
            _ => ConfigSource::InCluster,
        }
    }

    /// How messages name this source.
    pub fn describe(&self) -> String {
        match self {
            ConfigSource::Flag(p) | ConfigSource::Home(p) => format!("kubeconfig {}", p.display()),
            ConfigSource::Env(v) => format!("kubeconfig {v} (from KUBECONFIG)"),
            ConfigSource::InCluster => "in-cluster service account".to_string(),
        }
    }
}

impl Cluster {
    /// Builds a client from the flags and the environment. No request is made yet.
    ///
    /// # Errors
    /// [`CliError::Kubeconfig`] naming the file and the fix.
    pub async fn connect(args: &ClusterArgs) -> Result<Cluster, CliError> {
        let home = std::env::var_os("HOME").map(|h| {
            let path = PathBuf::from(h).join(".kube").join("config");
            let exists = path.is_file();
            (path, exists)
        });
        let env = std::env::var("KUBECONFIG").ok();
        let source = ConfigSource::pick(args.kubeconfig.as_ref(), env.as_deref(), home);
        let fail = |message: String| CliError::Kubeconfig {
            config: source.describe(),
            message,
        };
        let options = KubeConfigOptions {
            context: args.context.clone(),
            cluster: None,
            user: None,
        };
        let mut config = match &source {
            ConfigSource::Flag(path) | ConfigSource::Home(path) => {
                let kubeconfig = Kubeconfig::read_from(path).map_err(|e| fail(error_chain(&e)))?;
                Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(|e| fail(error_chain(&e)))?
            }
            ConfigSource::Env(_) => {
                let kubeconfig = Kubeconfig::read().map_err(|e| fail(error_chain(&e)))?;
                Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(|e| fail(error_chain(&e)))?
            }
            ConfigSource::InCluster => Config::incluster().map_err(|e| {
                fail(format!(
                    "no kubeconfig found and not running in a cluster ({}); pass --kubeconfig PATH or set KUBECONFIG",
                    error_chain(&e)
                ))
            })?,
        };
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        let server = config.cluster_url.to_string();
        let default_namespace = config.default_namespace.clone();
        let client = Client::try_from(config).map_err(|e| fail(error_chain(&e)))?;
        Ok(Cluster {
            client,
            default_namespace,
            source: source.describe(),
            server,
        })
    }

    /// The namespace to act in: the flag's, else the context's default.
    pub fn namespace(&self, flag: Option<&str>) -> String {
        flag.filter(|n| !n.is_empty())
            .map_or_else(|| self.default_namespace.clone(), str::to_string)
    }

    /// Turns a failed request into a [`CliError`]: an answer from the apiserver keeps its message,
    /// a transport failure says which server and kubeconfig were tried.
    pub fn api_error(&self, action: &str, err: kube::Error) -> CliError {
        match err {
            kube::Error::Api(status) if status.code == 403 => CliError::Forbidden {
                action: action.to_string(),
                ask: crate::cli::error::forbidden_ask(&status.message),
            },
            kube::Error::Api(status) => CliError::Api {
                action: action.to_string(),
                message: status.message.clone(),
                code: status.code,
            },
            other => CliError::Unreachable {
                action: action.to_string(),
                server: self.server.clone(),
                source_desc: self.source.clone(),
                message: error_chain(&other),
            },
        }
    }
}

/// Whether a request failed because the object does not exist.
pub fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_flag_wins_over_the_environment() {
        let flag = PathBuf::from("/tmp/k");
        let picked = ConfigSource::pick(Some(&flag), Some("/x"), Some(("/h".into(), true)));
        assert_eq!(picked, ConfigSource::Flag(flag));
    }

    #[test]
    fn kubeconfig_env_comes_before_the_home_file_and_empty_values_are_ignored() {
        let home = Some((PathBuf::from("/h/.kube/config"), true));
        assert_eq!(
            ConfigSource::pick(None, Some("/a:/b"), home.clone()),
            ConfigSource::Env("/a:/b".into())
        );
        assert_eq!(
            ConfigSource::pick(None, Some(":"), home.clone()),
            ConfigSource::Home("/h/.kube/config".into())
        );
        assert_eq!(
            ConfigSource::pick(None, None, Some(("/h/.kube/config".into(), false))),
            ConfigSource::InCluster
        );
    }

    #[test]
    fn sources_are_described_by_path() {
        assert_eq!(ConfigSource::Flag("/k".into()).describe(), "kubeconfig /k");
        assert_eq!(
            ConfigSource::Env("/a".into()).describe(),
            "kubeconfig /a (from KUBECONFIG)"
        );
    }
}
