//! `redis-operator`: runs the Redis operator, prints its CRD, or renders its OLM bundles.
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use olm_rs::redis_operator::{crd, release};

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
