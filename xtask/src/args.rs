//! args: the command line of `cargo xtask` (what each bench takes, and its defaults).

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::catalog::Catalog;

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    about = "The benches of olm-rs on the local cluster (docs/benchmarks.md)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::enum_variant_names, reason = "the command names are bench-*")]
pub enum Command {
    /// olm-controller on one fixture operator: sequential and parallel installs, peak RSS, API
    /// requests per install (from /metrics) and status writes that change nothing.
    BenchController(ControllerArgs),
    /// Copied CSVs: one AllNamespaces operator installed while N namespaces exist.
    BenchCopies(CopiesArgs),
    /// Recovery figures under faults (apiserver restart, leader failover), from tests/it/faults.rs.
    BenchFaults(FaultsArgs),
    /// A catalog image served by olm-controller: cold pull, warm restart, peak RSS.
    BenchImage(ImageArgs),
    /// Whole-catalog acceptance: every package of a catalog installed at once, each outcome
    /// compared with the expected one (then, with --walks, each default channel walked).
    Accept(AcceptArgs),
    /// Upstream OLM v0 (binaries given by --bin-dir, nothing built) on the same acceptance bench.
    AcceptUpstream(UpstreamArgs),
}

/// How the controller reads the bench's catalog.
#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
pub enum Source {
    /// The catalogd HTTP API: every manifest stays inlined.
    Http,
    /// The registry gRPC API: ListBundles leaves out the manifests of a bundle with an image (as
    /// opm does), so those installs pull bundle images from their registries.
    Grpc,
}

#[derive(Debug, Args)]
pub struct AcceptArgs {
    /// Where kubectl-olm and olm-controller are (default $CARGO_TARGET_DIR/debug, else
    /// target/debug).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Only this package (repeatable).
    #[arg(long, value_name = "NAME")]
    pub package: Vec<String>,
    /// Only the first N packages (by name).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
    /// Seconds until every install is settled.
    #[arg(long, default_value_t = 300.0, value_parser = positive)]
    pub timeout: f64,
    /// Seconds for the walks phase.
    #[arg(long, default_value_t = 600.0, value_parser = positive)]
    pub walk_timeout: f64,
    /// The catalog: a file-based catalog directory, an archive of one (.tar, .tar.gz, .tar.zst)
    /// or a catalog image (default: certified-operators-v4.16.tar.zst of the shared corpus).
    #[arg(long, value_name = "DIR|ARCHIVE|IMAGE", value_parser = parse_catalog)]
    pub catalog: Option<Catalog>,
    /// Expected outcomes, TSV `package<TAB>outcome<TAB>why` (default:
    /// tests/fixtures/accept-catalog/certified-v4.16.tsv for the default catalog; none for
    /// another: outcomes are reported, not compared).
    #[arg(long)]
    pub expect: Option<PathBuf>,
    /// Results, TSV.
    #[arg(long, default_value = "target/accept-catalog.tsv")]
    pub out: PathBuf,
    /// How the controller reads the catalog.
    #[arg(long, value_enum, default_value_t = Source::Http)]
    pub source: Source,
    /// The controller's catalog namespace.
    #[arg(long, default_value = "olm")]
    pub namespace: String,
    /// Then walk each default channel from its oldest entry.
    #[arg(long)]
    pub walks: bool,
    /// Leave the last phase's namespaces and objects in place.
    #[arg(long)]
    pub keep: bool,
    /// No cluster: check the bench's premises on the catalog (one head with an inlined CSV per
    /// default channel, an OperatorGroup for every head and walk start, the expect file listing
    /// exactly the catalog's packages, a predicted walk for each package).
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Args)]
pub struct UpstreamArgs {
    /// Where upstream's olm and catalog, opm and registry-client are (default target/peers/bin).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Upstream's source tree, whose deploy/chart/crds are applied (default
    /// target/peers/olm-src).
    #[arg(long)]
    pub olm_src: Option<PathBuf>,
    /// Only this package (repeatable).
    #[arg(long, value_name = "NAME")]
    pub package: Vec<String>,
    /// Only the first N packages (by name).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
    /// Seconds until every install is settled.
    #[arg(long, default_value_t = 400.0, value_parser = positive)]
    pub timeout: f64,
    /// Seconds for the walks phase.
    #[arg(long, default_value_t = 600.0, value_parser = positive)]
    pub walk_timeout: f64,
    /// Then walk each default channel from its oldest entry (accept's walk phase, with upstream's
    /// controllers).
    #[arg(long)]
    pub walks: bool,
    /// kubectl-olm for the walks' `catalog graph` and `catalog upgrade-path` (default
    /// target/release/kubectl-olm if present, else target/debug/kubectl-olm).
    #[arg(long)]
    pub cli: Option<PathBuf>,
    /// The catalog, as accept takes it (default: certified-operators-v4.16.tar.zst of the shared
    /// corpus).
    #[arg(long, value_name = "DIR|ARCHIVE|IMAGE", value_parser = parse_catalog)]
    pub catalog: Option<Catalog>,
    /// Outcomes to compare with (default: olm-rs's for the default catalog; none for another).
    #[arg(long)]
    pub expect: Option<PathBuf>,
    /// Results, TSV (the walks: <out>-walks.tsv).
    #[arg(long, default_value = "target/accept-upstream.tsv")]
    pub out: PathBuf,
    /// Upstream's catalog namespace.
    #[arg(long, default_value = "olm")]
    pub namespace: String,
    /// Leave the last phase's namespaces and the CatalogSource in place.
    #[arg(long)]
    pub keep: bool,
    /// No cluster: render the catalog with opm, strip the images, serve it with opm and check
    /// registry-client's listing.
    #[arg(long)]
    pub check: bool,
}

fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

#[derive(Debug, Args)]
pub struct ControllerArgs {
    /// The olm-controller binary (default target/release/olm-controller if built, else
    /// target/debug/olm-controller).
    #[arg(long)]
    pub controller: Option<PathBuf>,
    /// Sequential installs in (a).
    #[arg(long, default_value_t = 20)]
    pub sequential: usize,
    /// Subscriptions created at once in (b).
    #[arg(long, default_value_t = 100)]
    pub parallel: usize,
    /// Seconds to wait for each step.
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    /// Targets replacing the built-in ones (`<figure> <op> <number>` lines).
    #[arg(long)]
    pub expect: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CopiesArgs {
    /// Namespaces that exist before the install.
    #[arg(long, default_value_t = 500)]
    pub namespaces: usize,
    /// Namespaces created after the copies are present.
    #[arg(long, default_value_t = 20)]
    pub late: usize,
    /// The olm-controller binary (default as bench-controller).
    #[arg(long)]
    pub controller: Option<PathBuf>,
    /// Targets replacing the built-in ones.
    #[arg(long)]
    pub expect: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct FaultsArgs {
    /// Runs of each fault test.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub runs: u16,
    /// Targets replacing the built-in ones.
    #[arg(long)]
    pub expect: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImageArgs {
    /// The catalog: a directory or archive (pushed to a local registry first) or an image
    /// reference (served as it is). Default: large-fbc.tar.zst of ../shared/corpus.
    #[arg(long, value_parser = parse_catalog)]
    pub catalog: Option<Catalog>,
    /// A registry (`HOST:PORT`) spoken to over plain HTTP, for an image --catalog.
    #[arg(long)]
    pub insecure_registry: Option<String>,
    /// The olm-controller binary (default as bench-controller).
    #[arg(long)]
    pub controller: Option<PathBuf>,
    /// The kubectl-olm binary that pushes the catalog (default beside the controller).
    #[arg(long)]
    pub cli: Option<PathBuf>,
    /// Seconds to wait for READY.
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    /// Targets replacing the built-in ones.
    #[arg(long)]
    pub expect: Option<PathBuf>,
}

fn parse_catalog(text: &str) -> Result<Catalog, String> {
    Catalog::parse(text).map_err(|e| e.to_string())
}

/// The binary `name` of `$CARGO_TARGET_DIR` (else target/): release if built, else debug.
pub fn default_binary(repo: &Path, name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo.join("target"), PathBuf::from);
    let release = target.join("release").join(name);
    if release.is_file() {
        release
    } else {
        target.join("debug").join(name)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[test]
    fn each_bench_has_the_scripts_defaults() {
        let Command::BenchController(a) = Cli::try_parse_from(["xtask", "bench-controller"])
            .expect("parses")
            .command
        else {
            panic!("bench-controller");
        };
        assert_eq!((a.sequential, a.parallel, a.timeout), (20, 100, 120.0));
        let Command::BenchCopies(a) = Cli::try_parse_from(["xtask", "bench-copies"])
            .expect("parses")
            .command
        else {
            panic!("bench-copies");
        };
        assert_eq!((a.namespaces, a.late), (500, 20));
        let Command::BenchFaults(a) = Cli::try_parse_from(["xtask", "bench-faults", "--runs", "5"])
            .expect("parses")
            .command
        else {
            panic!("bench-faults");
        };
        assert_eq!(a.runs, 5);
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(Cli::try_parse_from(["xtask", "bench-faults", "--runs", "0"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "bench-copies", "--namespaces", "-1"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "bench-image", "--catalog", "no-such-thing"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "bench-controller", "--unknown"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "accept", "--limit", "0"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "accept", "--timeout", "0"]).is_err());
        assert!(Cli::try_parse_from(["xtask", "accept", "--source", "ftp"]).is_err());
        let Command::Accept(a) =
            Cli::try_parse_from(["xtask", "accept", "--package", "a", "--package", "b", "--walks"])
                .expect("parses")
                .command
        else {
            panic!("accept");
        };
        assert_eq!(a.package, vec!["a".to_owned(), "b".to_owned()]);
        assert!(a.walks && !a.keep);
        assert_eq!(
            (a.timeout, a.walk_timeout, a.source),
            (300.0, 600.0, Source::Http)
        );
        assert_eq!(a.out, PathBuf::from("target/accept-catalog.tsv"));
        let Command::AcceptUpstream(u) = Cli::try_parse_from([
            "xtask",
            "accept-upstream",
            "--walks",
            "--walk-timeout",
            "30",
            "--cli",
            "/x/kubectl-olm",
            "--out",
            "/o/up.tsv",
        ])
        .expect("parses")
        .command
        else {
            panic!("accept-upstream");
        };
        assert!(u.walks && u.walk_timeout == 30.0 && u.timeout == 400.0);
        assert_eq!(u.cli, Some(PathBuf::from("/x/kubectl-olm")));
        for bad in [["--walk-timeout", "0"], ["--timeout", "-1"], ["--limit", "0"]] {
            let argv = ["xtask", "accept-upstream", bad[0], bad[1]];
            assert!(Cli::try_parse_from(argv).is_err(), "{bad:?}");
        }
        let ok = Cli::try_parse_from(["xtask", "bench-image", "--catalog", "127.0.0.1:5000/c/large:v1"])
            .expect("an image reference");
        let Command::BenchImage(a) = ok.command else {
            panic!("bench-image");
        };
        assert_eq!(
            a.catalog,
            Some(Catalog::Image("127.0.0.1:5000/c/large:v1".into()))
        );
    }
}
