//! `redis-operator`: runs the Redis operator, prints its CRD, or renders its OLM bundles.
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use std::sync::Arc;

use operator_runtime::http::{Readiness, ReadyState};

use redis_operator::{bundle::release, controller, crd, http, metrics::Metrics};

#[derive(Parser)]
#[command(
    name = "redis-operator",
    version,
    about = "The Redis operator shipped in the olm-rs catalog"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the operator: watch RedisClusters in WATCH_NAMESPACE (comma list; empty = all namespaces).
    ///
    /// Example: WATCH_NAMESPACE=redis redis-operator run --http-addr 0.0.0.0:8080
    Run {
        /// Namespaces to watch, as OLM passes them from `olm.targetNamespaces`.
        #[arg(long, env = "WATCH_NAMESPACE", default_value = "")]
        watch_namespace: String,
        /// Address of the /metrics, /healthz and /readyz server (port 0: any free port, logged).
        #[arg(long, default_value = "0.0.0.0:8080")]
        http_addr: String,
        /// Name of this pod, reported on events.
        #[arg(long, env = "POD_NAME")]
        pod_name: Option<String>,
    },
    /// Print the RedisCluster CustomResourceDefinition as YAML.
    Crd,
    /// Write every release's registry+v1 bundle and the channel file into DIR.
    ///
    /// Example: redis-operator bundles --out bundles/redis-operator
    Bundles {
        /// Directory that receives <version>/manifests, <version>/metadata and channels.yaml.
        #[arg(long)]
        out: PathBuf,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd => print!("{}", crd::crd_yaml()),
        Command::Bundles { out } => write_bundles(&out)?,
        Command::Run {
            watch_namespace,
            http_addr,
            pod_name,
        } => {
            tokio::runtime::Runtime::new()?.block_on(run(&watch_namespace, &http_addr, pod_name))?;
        }
    }
    Ok(())
}

async fn run(watch_namespace: &str, http_addr: &str, pod_name: Option<String>) -> Result<()> {
    operator_runtime::telemetry::init(operator_runtime::telemetry::LogFormat::Json);
    let namespaces = controller::parse_namespaces(watch_namespace);
    let client = kube::Client::try_default()
        .await
        .context("connecting to the Kubernetes API")?;
    let metrics = Arc::new(Metrics::default());
    let ready = Arc::new(Readiness::default());
    let listener = tokio::net::TcpListener::bind(http_addr)
        .await
        .with_context(|| format!("binding {http_addr}"))?;
    // Logged as bound, so `--http-addr 127.0.0.1:0` (any free port) tells where it listens.
    let http_addr = listener
        .local_addr()
        .map_or_else(|_| http_addr.to_owned(), |a| a.to_string());
    tracing::info!(%http_addr, ?namespaces, "starting redis-operator");
    let server = tokio::spawn(http::serve(listener, metrics.clone(), ready.clone()));
    // Not ready until the controller's stores have their initial lists (controller::run sets it).
    controller::run(client, namespaces, metrics, pod_name, ready.clone()).await;
    ready.set(ReadyState::Stopping);
    server.abort();
    Ok(())
}

fn write_bundles(out: &std::path::Path) -> Result<()> {
    for r in release::RELEASES {
        for (path, text) in r.files() {
            let file = out.join(r.version).join(path);
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
        }
    }
    let channels = out.join("channels.yaml");
    std::fs::write(&channels, release::channels_yaml())
        .with_context(|| format!("writing {}", channels.display()))?;
    Ok(())
}
