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
    Run,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds { dir: None } => print_crds(),
        Command::Crds { dir: Some(dir) } => write_crds(&dir),
        Command::Run => Err(anyhow::anyhow!("the controller is not built yet")),
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
