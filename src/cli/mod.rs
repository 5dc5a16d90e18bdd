//! The `kubectl-olm` command line: clap definitions, the output formats, and one file per verb.
//!
//! Installed on `PATH` as `kubectl-olm`, the binary is also a kubectl plugin: `kubectl olm ...`.
//! This file holds only the argument definitions; [`cmd`] runs them, [`output`] prints, [`error`]
//! maps failures to exit codes, [`cluster`] connects to a cluster for the verbs that act on one
//! (`install`, `list`, `approve`, `uninstall`), [`registry`] holds the flags of the verbs that pull
//! or push images.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub mod cluster;
pub mod cmd;
pub mod error;
pub mod output;
pub mod registry;

pub use cmd::run;
pub use error::CliError;
pub use output::OutputFormat;

/// Default value of `--catalog`.
pub const DEFAULT_CATALOG: &str = "./catalog";

/// The CatalogSource `install` uses by default: the built-in one the controller's manifests create.
pub const DEFAULT_CATALOG_SOURCE: &str = "olm-rs-catalog";

/// The namespace of [`DEFAULT_CATALOG_SOURCE`].
pub const DEFAULT_CATALOG_SOURCE_NAMESPACE: &str = "olm";

const ROOT_EXAMPLES: &str = "\
Examples:
  # List the packages of the catalog in ./catalog
  kubectl olm catalog packages

  # Show how redis-operator 0.1.0 upgrades to the head of its default channel
  kubectl olm catalog upgrade-path redis-operator --from 0.1.0

  # Check a catalog the way `opm validate` does
  kubectl olm catalog validate path/to/catalog

  # Browse a catalog image, and push a catalog directory as one
  kubectl olm catalog packages --catalog quay.io/operatorhubio/catalog:latest
  kubectl olm catalog push ./catalog registry.local:5000/olm/catalog:v1

  # Install the Redis operator in namespace redis, creating its OperatorGroup
  kubectl olm install redis-operator -n redis --create-operator-group --approval Manual

  # See installed operators and approve the waiting InstallPlan
  kubectl olm list -A
  kubectl olm approve --subscription redis-operator -n redis

  # Enable bash completion for this shell
  source <(kubectl-olm completion bash)";

/// Browse, validate and render OLM file-based catalogs; install, list, approve and uninstall
/// operators on a cluster.
#[derive(Debug, Parser)]
#[command(name = "kubectl-olm", bin_name = "kubectl-olm", version, after_help = ROOT_EXAMPLES)]
pub struct Cli {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table, global = true)]
    pub output: OutputFormat,

    /// More logging on stderr (-v info, -vv debug, -vvv trace).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// Cluster connection flags (`--kubeconfig`, `--context`), used by the cluster verbs.
    #[command(flatten)]
    pub cluster: cluster::ClusterArgs,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Browse, validate and render file-based catalogs (no cluster needed); push catalog images.
    Catalog(CatalogArgs),
    /// Push registry+v1 bundle directories as bundle images.
    Bundle(BundleArgs),
    /// Install an operator: create its Subscription (and, with --create-operator-group, an OperatorGroup).
    #[command(after_help = "\
Examples:
  # Install the default channel's head, approving InstallPlans automatically
  kubectl olm install redis-operator -n redis --create-operator-group

  # Start at 0.1.0 on channel alpha and approve every InstallPlan by hand
  kubectl olm install redis-operator -n redis --channel alpha \\
      --starting-csv redis-operator.v0.1.0 --approval Manual

  # Show the objects without creating them
  kubectl olm install redis-operator -n redis --create-operator-group --dry-run -o yaml")]
    Install(InstallArgs),

    /// List installed operators: package, version, channel, state, CSV phase, upgrade waiting.
    #[command(after_help = "\
Examples:
  kubectl olm list -n redis
  kubectl olm list -A -o wide
  kubectl olm list -n redis -o json")]
    List(ListArgs),

    /// Approve an InstallPlan (or a Subscription's pending one) after showing what it installs.
    #[command(after_help = "\
Examples:
  # Approve the InstallPlan a Subscription waits on
  kubectl olm approve --subscription redis-operator -n redis

  # Approve an InstallPlan by name
  kubectl olm approve install-x7k2p -n redis

  # Only show what the approval would install
  kubectl olm approve --subscription redis-operator -n redis --dry-run")]
    Approve(ApproveArgs),

    /// Show what an InstallPlan will change, without approving it.
    #[command(after_help = "\
Examples:
  # What the InstallPlan a Subscription waits on will create and change
  kubectl olm plan show --subscription redis-operator -n redis

  # The same for an InstallPlan by name, as JSON
  kubectl olm plan diff install-x7k2p -n redis -o json")]
    Plan(PlanArgs),

    /// Why a Subscription is on its version: the bundle, the edge, the catalog, the rejected
    /// candidates, the dependencies, what comes next, and for a failure its cause and fix.
    #[command(after_help = "\
Examples:
  # Why the Subscription redis-operator is on its version (by name or package)
  kubectl olm why redis-operator -n redis

  # The same for a CSV or an InstallPlan, with the channel graph as Mermaid
  kubectl olm why csv/redis-operator.v1.0.0 -n redis --graph mermaid
  kubectl olm why installplan/install-x7k2p -n redis -o json")]
    Why(WhyArgs),

    /// Go back to the CSV installed before the current one, when that is safe.
    #[command(after_help = "\
Examples:
  # Show the rollback plan and ask before doing it
  kubectl olm rollback redis-operator -n redis

  # Only check whether it is safe
  kubectl olm rollback redis-operator -n redis --dry-run")]
    Rollback(RollbackArgs),

    /// Uninstall an operator: delete its Subscription(s) and installed CSV; CRDs are kept unless --delete-crds.
    #[command(after_help = "\
Examples:
  kubectl olm uninstall redis-operator -n redis

  # Also delete the operator's CRDs (refused while custom resources of them remain)
  kubectl olm uninstall redis-operator -n redis --delete-crds")]
    Uninstall(UninstallArgs),

    /// Serve the web console on 127.0.0.1: catalogs, upgrade graphs, installed operators,
    /// InstallPlans to approve; every read and write is yours (your kubeconfig).
    #[command(after_help = "\
Examples:
  # Serve on http://127.0.0.1:8422/ and open it in the browser
  kubectl olm console --open

  # Another port, and a catalog directory besides the cluster's CatalogSources
  kubectl olm console --address 127.0.0.1:9000 --catalog ./catalog")]
    Console(cmd::console::ConsoleArgs),

    /// Print a shell completion script.
    #[command(after_help = "\
Examples:
  # bash, for this shell only
  source <(kubectl-olm completion bash)

  # zsh, installed for every session
  kubectl-olm completion zsh > \"${fpath[1]}/_kubectl-olm\"

  # fish
  kubectl-olm completion fish > ~/.config/fish/completions/kubectl-olm.fish")]
    Completion {
        /// The shell to write completions for.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the version of kubectl-olm.
    #[command(after_help = "Examples:\n  kubectl olm version\n  kubectl olm version -o json")]
    Version,
}

/// Approval modes of `install --approval`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ApprovalArg {
    /// Every InstallPlan is executed as soon as it is computed.
    #[default]
    #[value(name = "Automatic", alias = "automatic")]
    Automatic,
    /// Every InstallPlan waits for `kubectl olm approve`.
    #[value(name = "Manual", alias = "manual")]
    Manual,
}

/// Arguments of `install`.
#[derive(Debug, Clone, Args)]
pub struct InstallArgs {
    /// The package to install (see `kubectl olm catalog packages`).
    pub package: String,
    /// Namespace to install into (default: the context's namespace, else `default`).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Channel to follow (default: the package's default channel, chosen by the controller).
    #[arg(short = 'c', long)]
    pub channel: Option<String>,
    /// The CSV to install first instead of the channel head, e.g. redis-operator.v0.1.0.
    #[arg(long, value_name = "CSV")]
    pub starting_csv: Option<String>,
    /// How InstallPlans are approved.
    #[arg(short = 'a', long, value_enum, default_value_t = ApprovalArg::Automatic)]
    pub approval: ApprovalArg,
    /// Create an OperatorGroup (named after the namespace, targeting it) when the namespace has none.
    #[arg(short = 'C', long)]
    pub create_operator_group: bool,
    /// The CatalogSource to install from.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_CATALOG_SOURCE)]
    pub catalog_source: String,
    /// The namespace of the CatalogSource.
    #[arg(long, value_name = "NS", default_value = DEFAULT_CATALOG_SOURCE_NAMESPACE)]
    pub catalog_source_namespace: String,
    /// Check and print the objects without creating them.
    #[arg(long)]
    pub dry_run: bool,
}

/// Arguments of `list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Namespace to list (default: the context's namespace, else `default`).
    #[arg(short = 'n', long, conflicts_with = "all_namespaces")]
    pub namespace: Option<String>,
    /// List every namespace.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

/// The InstallPlan a verb acts on: by name, or the one a Subscription points at (`approve`,
/// `plan show`).
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["install_plan", "subscription"])))]
pub struct PlanTarget {
    /// The InstallPlan.
    #[arg(value_name = "INSTALLPLAN")]
    pub install_plan: Option<String>,
    /// The InstallPlan this Subscription (or the Subscription of this package) points at.
    #[arg(short = 's', long, value_name = "SUB")]
    pub subscription: Option<String>,
    /// Namespace of the InstallPlan (default: the context's namespace, else `default`).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
}

/// Arguments of `approve`.
#[derive(Debug, Clone, Args)]
pub struct ApproveArgs {
    /// Which plan.
    #[command(flatten)]
    pub target: PlanTarget,
    /// Only print what the approval would install.
    #[arg(long)]
    pub dry_run: bool,
    /// Approve without asking. On a terminal, `approve` shows the preview and asks first;
    /// scripts (no terminal) are never asked.
    #[arg(short = 'y', long)]
    pub yes: bool,
}

/// Arguments of `plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// What to do with the plan.
    #[command(subcommand)]
    pub command: PlanCommand,
}

/// The verbs of `plan`.
#[derive(Debug, Clone, Subcommand)]
pub enum PlanCommand {
    /// Each step new, changed (field by field) or unchanged, the RBAC it grants, the images it
    /// runs and the CRD verdict: the preview `approve` shows, without approving.
    #[command(visible_alias = "diff")]
    Show(PlanShowArgs),
}

/// Arguments of `plan show`.
#[derive(Debug, Clone, Args)]
pub struct PlanShowArgs {
    /// Which plan.
    #[command(flatten)]
    pub target: PlanTarget,
}

/// Arguments of `why`.
#[derive(Debug, Clone, Args)]
pub struct WhyArgs {
    /// What to explain: a Subscription (name or package), `subscription/NAME`, `csv/NAME` or
    /// `installplan/NAME`.
    #[arg(value_name = "SUB|CSV|IP")]
    pub target: String,
    /// Namespace (default: the context's namespace, else `default`).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// How to draw the channel graph.
    #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
    pub graph: GraphFormat,
    /// Read the catalog from here (DIR, IMAGE, grpc://, https://) instead of the Subscription's
    /// CatalogSource.
    #[arg(long = "catalog", value_name = "DIR|IMAGE")]
    pub catalog: Option<PathBuf>,
    /// The global catalog namespace (the controller's --namespace): its CatalogSources serve
    /// every namespace, for dependencies.
    #[arg(long, value_name = "NS", default_value = DEFAULT_CATALOG_SOURCE_NAMESPACE)]
    pub global_catalog_namespace: String,
    /// How to reach registries when the catalog is an image.
    #[command(flatten)]
    pub registry: registry::RegistryArgs,
}

/// Arguments of `rollback`.
#[derive(Debug, Clone, Args)]
pub struct RollbackArgs {
    /// The Subscription (name or package).
    #[arg(value_name = "SUB")]
    pub subscription: String,
    /// Namespace (default: the context's namespace, else `default`).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Only check and show the plan; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Roll back without asking (scripts without a terminal are never asked).
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// How long to wait for the new Subscription's InstallPlan, to approve it (0 to not wait).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = cluster::parse_duration)]
    pub timeout: std::time::Duration,
    /// Read the catalog from here instead of the Subscription's CatalogSource.
    #[arg(long = "catalog", value_name = "DIR|IMAGE")]
    pub catalog: Option<PathBuf>,
    /// The global catalog namespace (the controller's --namespace): its CatalogSources serve
    /// every namespace, for dependencies.
    #[arg(long, value_name = "NS", default_value = DEFAULT_CATALOG_SOURCE_NAMESPACE)]
    pub global_catalog_namespace: String,
    /// How to reach registries when the catalog is an image.
    #[command(flatten)]
    pub registry: registry::RegistryArgs,
}

/// Arguments of `uninstall`.
#[derive(Debug, Clone, Args)]
pub struct UninstallArgs {
    /// The package to uninstall.
    pub package: String,
    /// Namespace it is installed in (default: the context's namespace, else `default`).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Also delete the CRDs the CSV owns, if no custom resources of them remain.
    #[arg(long)]
    pub delete_crds: bool,
    /// How long to wait for the objects to be gone (30s, 2m, ...; 0 to not wait).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = cluster::parse_duration)]
    pub timeout: std::time::Duration,
}

/// Shells `completion` supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// GNU bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

/// The `catalog` verb group with its shared `--catalog` flag.
#[derive(Debug, Args)]
pub struct CatalogArgs {
    /// The file-based catalog: a directory (YAML and JSON files, any depth), a catalog image
    /// (oci://REGISTRY/REPO:TAG, REGISTRY/REPO@sha256:..., or REGISTRY/REPO:TAG), or
    /// grpc://HOST:PORT for a running registry (`opm serve`, `kubectl olm catalog serve`), or
    /// https://HOST/... for a catalogd HTTP API (its base URL; http:// only for loopback or an
    /// --insecure-registry HOST:PORT).
    #[arg(long = "catalog", value_name = "DIR|IMAGE", default_value = DEFAULT_CATALOG, global = true)]
    pub catalog: PathBuf,

    /// How to reach registries when the catalog is an image.
    #[command(flatten)]
    pub registry: registry::RegistryArgs,

    /// The catalog verb.
    #[command(subcommand)]
    pub verb: CatalogVerb,
}

/// Verbs under `catalog`.
#[derive(Debug, Subcommand)]
pub enum CatalogVerb {
    /// List packages: default channel, latest version, channels, description.
    #[command(after_help = "\
Examples:
  kubectl olm catalog packages
  kubectl olm catalog packages -o wide
  kubectl olm catalog packages --catalog path/to/catalog -o json")]
    Packages,

    /// List the channels of a package: head, number of entries, default marker.
    #[command(after_help = "\
Examples:
  kubectl olm catalog channels redis-operator
  kubectl olm catalog channels redis-operator -o json")]
    Channels {
        /// Package name.
        package: String,
    },

    /// List the bundles of a package with their upgrade edges.
    #[command(after_help = "\
Examples:
  kubectl olm catalog bundles redis-operator
  kubectl olm catalog bundles redis-operator --channel stable -o wide")]
    Bundles {
        /// Package name.
        package: String,
        /// Only bundles in this channel, with this channel's edges.
        #[arg(short = 'c', long)]
        channel: Option<String>,
    },

    /// Show a package: description, channels and heads, install modes, owned CRDs, maintainers, links.
    #[command(after_help = "\
Examples:
  kubectl olm catalog describe redis-operator
  kubectl olm catalog describe redis-operator -o yaml")]
    Describe {
        /// Package name.
        package: String,
    },

    /// Draw the upgrade graph of a channel (the default channel unless --channel).
    #[command(after_help = "\
Examples:
  kubectl olm catalog graph redis-operator
  kubectl olm catalog graph redis-operator --channel candidate --format mermaid
  kubectl olm catalog graph redis-operator --format dot | dot -Tsvg > graph.svg")]
    Graph {
        /// Package name.
        package: String,
        /// Channel to draw; the package's default channel when absent.
        #[arg(short = 'c', long)]
        channel: Option<String>,
        /// Drawing format (with -o table or wide).
        #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
        format: GraphFormat,
    },

    /// Show every hop OLM would install from a version to the head of a channel.
    #[command(after_help = "\
Examples:
  kubectl olm catalog upgrade-path redis-operator --from 0.1.0
  kubectl olm catalog upgrade-path redis-operator --from 0.2.0 --channel candidate -o json")]
    UpgradePath {
        /// Package name.
        package: String,
        /// Installed version (`0.1.0`) or bundle name (`redis-operator.v0.1.0`).
        #[arg(long, value_name = "VERSION")]
        from: String,
        /// Channel to follow; the package's default channel when absent.
        #[arg(short = 'c', long)]
        channel: Option<String>,
    },

    /// Check a catalog with the rules `opm validate` applies; exit 1 when it is invalid.
    #[command(after_help = "\
Examples:
  kubectl olm catalog validate
  kubectl olm catalog validate path/to/catalog
  kubectl olm catalog validate path/to/catalog -o json")]
    Validate {
        /// Catalog directory; overrides --catalog.
        dir: Option<PathBuf>,
    },

    /// Serve the catalog on the registry gRPC API (`opm serve`'s) and/or the catalogd HTTP API
    /// (OLM v1's) until SIGINT or SIGTERM.
    #[command(after_help = "\
Examples:
  kubectl olm catalog serve catalog --grpc 127.0.0.1:50051
  kubectl olm catalog serve catalog --grpc 127.0.0.1:50051 --http 127.0.0.1:8080   # both at once
  kubectl olm catalog serve catalog --http 0.0.0.0:8080   # only catalogd's /api/v1/all and /api/v1/metas
  kubectl olm catalog serve path/to/catalog --grpc 0.0.0.0:50051 -vv   # log every request")]
    Serve(crate::cli::cmd::catalog::serve::ServeArgs),
    /// Push a catalog directory as a catalog image (one layer under /configs, the configs label).
    #[command(after_help = "\
Examples:
  kubectl olm catalog push ./catalog registry.local:5000/olm/catalog:v1
  kubectl olm catalog push ./catalog 127.0.0.1:5000/catalog:dev --insecure-registry 127.0.0.1:5000")]
    Push {
        /// The file-based catalog directory.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// Where to push it: REGISTRY/REPO:TAG.
        #[arg(value_name = "IMAGE")]
        image: String,
    },

    /// Render registry+v1 bundle directories as FBC olm.bundle documents (YAML, or -o json).
    #[command(after_help = "\
Examples:
  kubectl olm catalog render bundles/redis-operator/0.1.0
  kubectl olm catalog render bundles/redis-operator/*/ -o json")]
    Render {
        /// Bundle directories, each holding manifests/ and metadata/.
        #[arg(required = true, value_name = "BUNDLE_DIR")]
        bundles: Vec<PathBuf>,
    },
}

/// The `bundle` verb group.
#[derive(Debug, Args)]
pub struct BundleArgs {
    /// How to reach registries.
    #[command(flatten)]
    pub registry: registry::RegistryArgs,

    /// The bundle verb.
    #[command(subcommand)]
    pub verb: BundleVerb,
}

/// Verbs under `bundle`.
#[derive(Debug, Subcommand)]
pub enum BundleVerb {
    /// Push a registry+v1 bundle directory as a bundle image, labelled from metadata/annotations.yaml.
    #[command(after_help = "\
Examples:
  kubectl olm bundle push bundles/redis-operator/0.1.0 registry.local:5000/olm/redis-operator-bundle:v0.1.0")]
    Push {
        /// The bundle directory, holding manifests/ and metadata/.
        #[arg(value_name = "BUNDLE_DIR")]
        dir: PathBuf,
        /// Where to push it: REGISTRY/REPO:TAG.
        #[arg(value_name = "IMAGE")]
        image: String,
    },
}

/// Drawing formats of `catalog graph`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// A tree readable in a terminal.
    #[default]
    Text,
    /// Graphviz DOT.
    Dot,
    /// Mermaid flowchart.
    Mermaid,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn catalog_defaults_to_the_catalog_directory_in_the_working_directory() {
        let cli = Cli::try_parse_from(["kubectl-olm", "catalog", "packages"]).unwrap();
        let Command::Catalog(args) = cli.command else {
            panic!("not a catalog verb")
        };
        assert_eq!(args.catalog, PathBuf::from("./catalog"));
        assert_eq!(cli.output, OutputFormat::Table);
    }

    #[test]
    fn output_and_catalog_flags_are_accepted_after_the_verb() {
        let cli = Cli::try_parse_from([
            "kubectl-olm",
            "catalog",
            "channels",
            "redis-operator",
            "-o",
            "json",
            "--catalog",
            "x",
        ])
        .unwrap();
        assert_eq!(cli.output, OutputFormat::Json);
        let Command::Catalog(args) = cli.command else {
            panic!("not a catalog verb")
        };
        assert_eq!(args.catalog, PathBuf::from("x"));
    }

    #[test]
    fn install_defaults_to_the_builtin_catalog_source_and_automatic_approval() {
        let cli = Cli::try_parse_from(["kubectl-olm", "install", "redis-operator"]).unwrap();
        let Command::Install(args) = cli.command else {
            panic!("not install")
        };
        assert_eq!(args.catalog_source, "olm-rs-catalog");
        assert_eq!(args.catalog_source_namespace, "olm");
        assert_eq!(args.approval, ApprovalArg::Automatic);
        assert_eq!(args.channel, None);
        assert!(!args.create_operator_group);
    }

    #[test]
    fn approve_needs_exactly_one_of_an_installplan_and_a_subscription() {
        let none = Cli::try_parse_from(["kubectl-olm", "approve"]).unwrap_err();
        assert_eq!(none.exit_code(), 2);
        let both =
            Cli::try_parse_from(["kubectl-olm", "approve", "ip-1", "--subscription", "s"]).unwrap_err();
        assert_eq!(both.exit_code(), 2);
        assert!(Cli::try_parse_from(["kubectl-olm", "approve", "--subscription", "s"]).is_ok());
    }

    #[test]
    fn list_refuses_a_namespace_together_with_all_namespaces() {
        let err = Cli::try_parse_from(["kubectl-olm", "list", "-n", "x", "-A"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn kubeconfig_and_context_are_accepted_after_the_verb() {
        let cli =
            Cli::try_parse_from(["kubectl-olm", "list", "--kubeconfig", "/tmp/k", "--context", "c"]).unwrap();
        assert_eq!(cli.cluster.kubeconfig, Some(PathBuf::from("/tmp/k")));
        assert_eq!(cli.cluster.context.as_deref(), Some("c"));
    }

    #[test]
    fn uninstall_timeout_takes_units() {
        let cli = Cli::try_parse_from(["kubectl-olm", "uninstall", "p", "--timeout", "2m"]).unwrap();
        let Command::Uninstall(args) = cli.command else {
            panic!("not uninstall")
        };
        assert_eq!(args.timeout, std::time::Duration::from_secs(120));
    }

    #[test]
    fn upgrade_path_requires_from() {
        let err =
            Cli::try_parse_from(["kubectl-olm", "catalog", "upgrade-path", "redis-operator"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
