//! `olm-controller`: the OLM-compatible controller. `crds` prints (or writes) the CRDs of the
//! `operators.coreos.com` API; `run` starts the controllers.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "olm-controller",
    version,
    about = "Operator Lifecycle Manager compatible controller"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the operators.coreos.com CRDs as one YAML stream, or write one file per CRD.
    Crds {
        /// Write `<group>_<plural>.yaml` files into this directory instead of printing
        /// (e.g. `--dir manifests/crds`). Files of other CRDs are left alone.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Run the controllers against the cluster (kubeconfig or in-cluster config).
    Run(Box<RunArgs>),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the in-cluster config).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// The global catalog namespace: its CatalogSources serve every namespace.
    #[arg(long, default_value = "olm")]
    namespace: String,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, default_value = "127.0.0.1:8080")]
    metrics_bind: std::net::SocketAddr,
    /// Log format: text or json (filter with RUST_LOG).
    #[arg(long, default_value = "text")]
    log_format: olm_rs::telemetry::LogFormat,
    /// Run the controllers only while holding the leader Lease (safe with several replicas).
    #[arg(long)]
    leader_elect: bool,
    /// Namespace of the leader Lease.
    #[arg(long, default_value = "olm")]
    lease_namespace: String,
    /// The leader Lease's term: a standby takes over this long (plus one retry period) after
    /// the leader crashed; at once after a clean shutdown.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    lease_duration: std::time::Duration,
    /// How often the leader renews the Lease and a standby re-reads it (at most half the term).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    lease_retry_period: std::time::Duration,
    /// Serve this directory as the built-in catalog instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    builtin_catalog: Option<PathBuf>,
    /// How long transient InstallPlan step errors are retried (e.g. 60s, 2m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    install_plan_retry_timeout: std::time::Duration,
    /// Where catalog images (CatalogSources with spec.image) are unpacked, by digest; reused
    /// after a restart once the digest is checked.
    #[arg(long, value_name = "DIR", default_value = "/var/cache/olm-rs")]
    cache_dir: PathBuf,
    /// Speak plain HTTP to this registry, HOST:PORT (repeatable); every other registry needs TLS.
    #[arg(long, value_name = "HOST:PORT")]
    insecure_registry: Vec<String>,
    /// PEM CA certificates to trust for registries, in addition to the system roots.
    #[arg(long, value_name = "FILE")]
    registry_ca: Option<PathBuf>,
    /// How many catalog images are pulled at once.
    #[arg(long, value_name = "N", default_value_t = 2)]
    max_concurrent_pulls: usize,
    /// No copies of AllNamespaces operators' CSVs in every namespace, whatever the OLMConfig
    /// `cluster` says (either this flag or its `spec.features.disableCopiedCSVs: true`
    /// disables them); their existing copies are deleted.
    #[arg(long)]
    disable_copied_csvs: bool,
    /// Serve CatalogSource NAMESPACE/NAME's catalog on the registry gRPC API at ADDR, as its
    /// registry pod would (repeatable, one CatalogSource per address; e.g.
    /// olm/operatorhub=0.0.0.0:50051).
    #[arg(long, value_name = "NAMESPACE/NAME=ADDR")]
    serve_grpc: Vec<olm_rs::controller::serve::GrpcTarget>,
    /// Serve every loaded CatalogSource on the catalogd HTTP API at ADDR, under
    /// /catalogs/NAMESPACE/NAME/api/v1/all (and /catalogs/NAME/... for the global namespace).
    #[arg(long, value_name = "ADDR")]
    serve_http: Option<std::net::SocketAddr>,
    /// Serve the packages.operators.coreos.com/v1 API (PackageManifests of every loaded
    /// CatalogSource, as upstream's packageserver) over TLS at ADDR, and register it with the
    /// APIService v1.packages.operators.coreos.com (e.g. 0.0.0.0:5443).
    #[arg(long, value_name = "ADDR")]
    serve_packages: Option<std::net::SocketAddr>,
    /// The Service in front of --serve-packages, which the APIService names and the serving
    /// certificate is issued for.
    #[arg(
        long,
        value_name = "NAMESPACE/NAME",
        default_value = "olm/olm-rs-packageserver"
    )]
    packages_service: olm_rs::controller::package_server::ServiceRef,
    /// Serve the web console's pages read-only at ADDR, from the controller's caches (no
    /// Approve). Only a loopback address (127.0.0.1:PORT, [::1]:PORT); open it through
    /// `kubectl -n NAMESPACE port-forward deploy/olm-controller PORT:PORT` (docs/console.md).
    #[arg(long, value_name = "ADDR")]
    console: Option<std::net::SocketAddr>,
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    operator_runtime::duration::parse(text)
}

fn run(args: RunArgs) -> anyhow::Result<()> {
    // Refused before anything starts: the console's pages must never reach the pod network.
    if let Some(why) = args.console.and_then(olm_rs::controller::console::refuse_address) {
        anyhow::bail!(why);
    }
    olm_rs::telemetry::init(args.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    runtime.block_on(async move {
        let config = match &args.kubeconfig {
            Some(path) => {
                let kubeconfig = kube::config::Kubeconfig::read_from(path)
                    .with_context(|| format!("failed to read kubeconfig {}", path.display()))?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                    .await
                    .with_context(|| format!("failed to load kubeconfig {}", path.display()))?
            }
            None => kube::Config::infer()
                .await
                .context("failed to find a kubeconfig or in-cluster config; pass --kubeconfig")?,
        };
        let connection = operator_runtime::watch::tune_client(config);
        let registry_ca = match &args.registry_ca {
            Some(path) => Some(
                std::fs::read(path)
                    .with_context(|| format!("failed to read --registry-ca {}", path.display()))?,
            ),
            None => None,
        };
        let config = olm_rs::controller::Config {
            global_namespace: args.namespace,
            metrics_bind: args.metrics_bind,
            leader_elect: args.leader_elect,
            lease_namespace: args.lease_namespace,
            lease_timing: operator_runtime::lease::Timing::new(args.lease_duration, args.lease_retry_period)
                .map_err(|e| {
                    let flag = match e {
                        operator_runtime::lease::TimingError::LeaseDuration(_) => "--lease-duration",
                        operator_runtime::lease::TimingError::RetryPeriod { .. } => "--lease-retry-period",
                    };
                    anyhow::anyhow!("{flag}: {e}")
                })?,
            builtin_catalog: args.builtin_catalog,
            install_plan_retry_timeout: args.install_plan_retry_timeout,
            cache_dir: args.cache_dir,
            insecure_registries: args
                .insecure_registry
                .iter()
                .map(|r| r.to_ascii_lowercase())
                .collect(),
            registry_ca,
            max_concurrent_pulls: args.max_concurrent_pulls,
            disable_copied_csvs: args.disable_copied_csvs,
            serve_grpc: args.serve_grpc,
            serve_http: args.serve_http,
            serve_packages: args.serve_packages,
            packages_service: args.packages_service,
            console: args.console,
            connection: Some(connection.clone()),
            api_requests: olm_rs::controller::ApiRequests::default(),
        };
        // Every request the client sends is counted on /metrics (olmrs_api_requests_total).
        let client = config
            .client(connection)
            .context("failed to create the Kubernetes client")?;
        olm_rs::controller::run(client, config).await?;
        Ok(())
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds { dir: None } => print_crds(),
        Command::Crds { dir: Some(dir) } => write_crds(&dir),
        Command::Run(args) => run(*args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

fn print_crds() -> anyhow::Result<()> {
    let stream = olm_rs::api::crds_yaml_stream()?;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(stream.as_bytes()).and_then(|()| stdout.flush()) {
        // A closed pipe (`olm-controller crds | head`) is not an error.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("failed to write the CRDs to stdout"),
    }
}

fn write_crds(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("failed to create directory {}", dir.display()))?;
    for (name, text) in olm_rs::api::crd_files()? {
        let path = dir.join(&name);
        std::fs::write(&path, text).with_context(|| format!("failed to write {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
