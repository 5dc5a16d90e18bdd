//! `redis-operator`: runs the Redis operator, prints its CRD, or renders its OLM bundles.
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use std::sync::Arc;

use operator_runtime::{
    http::{Readiness, ReadyState},
    https,
};

use redis_operator::{bundle::release, controller, crd, http, metrics::Metrics, webhook};

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
        #[command(flatten)]
        webhooks: WebhookArgs,
    },
    /// Serve only the conversion and validating webhooks: no controller, no Kubernetes API access.
    ///
    /// For a pod that only answers the API server (and for tests that run the webhooks where the
    /// API server cannot be reached). Fails when no serving certificate is found.
    ///
    /// Example: redis-operator webhooks --tls-cert-file tls.crt --tls-key-file tls.key
    Webhooks {
        #[command(flatten)]
        webhooks: WebhookArgs,
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

/// Where the conversion and validating webhooks listen and which certificate they serve.
#[derive(clap::Args, Clone, Debug)]
struct WebhookArgs {
    /// Address of the TLS server for POST /convert and /validate (empty: no webhooks).
    #[arg(long, default_value = "0.0.0.0:9443")]
    webhook_addr: String,
    /// Serving certificate (PEM), as OLM mounts it for webhook deployments; used when it exists.
    #[arg(long, default_value = https::OLM_APISERVER_CERT)]
    tls_cert_file: PathBuf,
    /// Private key (PEM) of --tls-cert-file.
    #[arg(long, default_value = https::OLM_APISERVER_KEY)]
    tls_key_file: PathBuf,
    /// Directory holding tls.crt and tls.key (OLM mounts the same certificate here too); used
    /// when --tls-cert-file does not exist. With neither, the webhooks are not served.
    #[arg(long, default_value = "/tmp/k8s-webhook-server/serving-certs")]
    webhook_cert_dir: PathBuf,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Crd => print!("{}", crd::crd_yaml()),
        Command::Webhooks { webhooks } => {
            tokio::runtime::Runtime::new()?.block_on(serve_webhooks_only(&webhooks))?;
        }
        Command::Bundles { out } => write_bundles(&out)?,
        Command::Run {
            watch_namespace,
            http_addr,
            pod_name,
            webhooks,
        } => {
            tokio::runtime::Runtime::new()?.block_on(run(
                &watch_namespace,
                &http_addr,
                pod_name,
                &webhooks,
            ))?;
        }
    }
    Ok(())
}

/// Starts the webhook server when a certificate is mounted; `None` when webhooks are off.
async fn start_webhooks(args: &WebhookArgs) -> Result<Option<tokio::task::JoinHandle<()>>> {
    if args.webhook_addr.is_empty() {
        return Ok(None);
    }
    let candidates = [
        (args.tls_cert_file.clone(), args.tls_key_file.clone()),
        (
            args.webhook_cert_dir.join("tls.crt"),
            args.webhook_cert_dir.join("tls.key"),
        ),
    ];
    let Some((cert, key)) = webhook::pick_cert(&candidates, std::path::Path::exists) else {
        tracing::info!(
            cert = %args.tls_cert_file.display(),
            cert_dir = %args.webhook_cert_dir.display(),
            "no webhook serving certificate mounted; /convert and /validate are not served"
        );
        return Ok(None);
    };
    let certs = Arc::new(https::CertFiles::load(&cert, &key)?);
    let listener = tokio::net::TcpListener::bind(&args.webhook_addr)
        .await
        .with_context(|| format!("binding the webhook address {}", args.webhook_addr))?;
    let addr = listener
        .local_addr()
        .map_or_else(|_| args.webhook_addr.clone(), |a| a.to_string());
    tracing::info!(webhook_addr = %addr, cert = %cert.display(), "serving /convert and /validate over TLS");
    Ok(Some(tokio::spawn(async move {
        if let Err(error) = webhook::serve(listener, certs).await {
            tracing::error!(%error, "the webhook server stopped");
        }
    })))
}

/// `redis-operator webhooks`: the webhook server alone, until it stops or the process is killed.
async fn serve_webhooks_only(args: &WebhookArgs) -> Result<()> {
    operator_runtime::telemetry::init(operator_runtime::telemetry::LogFormat::Json);
    let Some(server) = start_webhooks(args).await? else {
        anyhow::bail!(
            "no webhook serving certificate: neither --tls-cert-file {} nor {}/tls.crt exists \
             (or --webhook-addr is empty); pass the certificate OLM mounts",
            args.tls_cert_file.display(),
            args.webhook_cert_dir.display()
        );
    };
    server.await.context("the webhook server task")?;
    Ok(())
}

async fn run(
    watch_namespace: &str,
    http_addr: &str,
    pod_name: Option<String>,
    webhooks: &WebhookArgs,
) -> Result<()> {
    operator_runtime::telemetry::init(operator_runtime::telemetry::LogFormat::Json);
    let webhook_server = start_webhooks(webhooks).await?;
    let namespaces = controller::parse_namespaces(watch_namespace);
    let config = kube::Config::infer()
        .await
        .context("finding a kubeconfig or in-cluster config to reach the Kubernetes API")?;
    let client = kube::Client::try_from(operator_runtime::watch::tune_client(config))
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
    if let Some(webhook_server) = webhook_server {
        webhook_server.abort();
    }
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
