//! The `kubectl-olm` command line: clap definitions, the output formats, and one file per verb.
//!
//! Installed on `PATH` as `kubectl-olm`, the binary is also a kubectl plugin: `kubectl olm ...`.
//! This file holds only the argument definitions; [`cmd`] runs them, [`output`] prints, [`error`]
//! maps failures to exit codes. Cluster verbs (`install`, `list`, `approve`, `uninstall`) join the
//! [`Command`] enum when the controller lands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub mod cmd;
pub mod error;
pub mod output;

pub use cmd::run;
pub use error::CliError;
pub use output::OutputFormat;

/// Default value of `--catalog`.
pub const DEFAULT_CATALOG: &str = "./catalog";

const ROOT_EXAMPLES: &str = "\
Examples:
  # List the packages of the catalog in ./catalog
  kubectl olm catalog packages

  # Show how redis-operator 0.1.0 upgrades to the head of its default channel
  kubectl olm catalog upgrade-path redis-operator --from 0.1.0

  # Check a catalog the way `opm validate` does
  kubectl olm catalog validate path/to/catalog

  # Enable bash completion for this shell
  source <(kubectl-olm completion bash)";

/// Browse, validate and render OLM file-based catalogs.
#[derive(Debug, Parser)]
#[command(name = "kubectl-olm", bin_name = "kubectl-olm", version, after_help = ROOT_EXAMPLES)]
pub struct Cli {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table, global = true)]
    pub output: OutputFormat,

    /// More logging on stderr (-v info, -vv debug, -vvv trace).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Browse, validate and render file-based catalogs (no cluster needed).
    Catalog(CatalogArgs),
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
    /// Directory of the file-based catalog (YAML and JSON files, any depth).
    #[arg(long = "catalog", value_name = "DIR", default_value = DEFAULT_CATALOG, global = true)]
    pub catalog: PathBuf,

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
    fn upgrade_path_requires_from() {
        let err =
            Cli::try_parse_from(["kubectl-olm", "catalog", "upgrade-path", "redis-operator"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
