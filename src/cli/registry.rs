//! The registry flags of `kubectl-olm` (`--registry-config`, `--insecure-registry`,
//! `--registry-ca`, `--cache-dir`) and the glue that runs an [`oci`] pull or push from the
//! synchronous verbs, with a progress line on stderr when it takes more than a second.
//!
//! Defaults follow the container tools: credentials from `--registry-config`, else
//! `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json` when it exists; the cache in
//! `$XDG_CACHE_HOME/olm-rs`, else `~/.cache/olm-rs`.

use std::{
    ffi::OsString,
    future::Future,
    io::Write,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use clap::Args;

use crate::{cli::CliError, oci};

/// How to reach registries, shared by the verbs that pull or push images.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// A docker config.json with registry credentials (default: $DOCKER_CONFIG/config.json, else
    /// ~/.docker/config.json when it exists).
    #[arg(long, value_name = "FILE", global = true)]
    pub registry_config: Option<PathBuf>,

    /// Speak plain HTTP to this registry, HOST:PORT (repeatable); every other registry needs TLS.
    #[arg(long, value_name = "HOST:PORT", global = true, value_parser = parse_insecure)]
    pub insecure_registry: Vec<String>,

    /// PEM CA certificates to trust for registries, in addition to the system roots.
    #[arg(long, value_name = "FILE", global = true)]
    pub registry_ca: Option<PathBuf>,

    /// Where pulled images are unpacked, by digest (default: $XDG_CACHE_HOME/olm-rs, else
    /// ~/.cache/olm-rs).
    #[arg(long, value_name = "DIR", global = true)]
    pub cache_dir: Option<PathBuf>,

    /// Refuse an image whose layers unpack to more than this (bytes, or with Ki, Mi, Gi): the cap
    /// that stops decompression bombs.
    #[arg(long, value_name = "SIZE", global = true, value_parser = parse_size, default_value = "2Gi")]
    pub max_unpack_size: u64,

    /// Refuse an image with a catalog or bundle file larger than this (bytes, or with Ki, Mi, Gi).
    #[arg(long, value_name = "SIZE", global = true, value_parser = parse_size, default_value = "256Mi")]
    pub max_file_size: u64,
}

/// Parses `123`, `64Ki`, `256Mi`, `2Gi`.
fn parse_size(value: &str) -> Result<u64, String> {
    let (number, shift) = match value {
        v if v.ends_with("Ki") => (&v[..v.len() - 2], 10),
        v if v.ends_with("Mi") => (&v[..v.len() - 2], 20),
        v if v.ends_with("Gi") => (&v[..v.len() - 2], 30),
        v => (v, 0),
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1u64 << shift))
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            format!("{value:?} is not a size; write bytes or a number with Ki, Mi or Gi (e.g. 512Mi)")
        })
}

fn parse_insecure(value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && !value.contains("://")
        && !value.contains('/')
        && !value.contains(char::is_whitespace);
    if ok {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(format!(
            "{value:?} is not HOST:PORT (e.g. 127.0.0.1:5000, registry.local:5000)"
        ))
    }
}

/// The cache directory from `XDG_CACHE_HOME` and `HOME` (given, so this stays testable).
#[must_use]
pub fn default_cache_dir(xdg_cache_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    match xdg_cache_home.filter(|x| !x.is_empty()) {
        Some(xdg) => Some(PathBuf::from(xdg).join("olm-rs")),
        None => home
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".cache").join("olm-rs")),
    }
}

/// The docker config read by default, from `DOCKER_CONFIG` and `HOME`.
#[must_use]
pub fn default_registry_config(docker_config: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    match docker_config.filter(|d| !d.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir).join("config.json")),
        None => home
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".docker").join("config.json")),
    }
}

fn read_file(path: &Path, what: &str) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::Registry(format!("cannot read {what} {}: {e}", path.display())))
}

/// The [`oci::Options`] the flags describe. Warnings (credential helpers we do not run) go to
/// `err`.
///
/// # Errors
/// [`CliError::Registry`] when a file cannot be read or parsed, or no cache directory is known.
pub fn options(args: &RegistryArgs, err: &mut dyn Write) -> Result<oci::Options, CliError> {
    let mut credentials = Vec::new();
    let config = match &args.registry_config {
        Some(path) => Some(path.clone()),
        None => default_registry_config(std::env::var_os("DOCKER_CONFIG"), std::env::var_os("HOME"))
            .filter(|p| p.is_file()),
    };
    if let Some(path) = config {
        let bytes = read_file(&path, "registry config")?;
        let parsed = oci::DockerConfig::parse(&path.display().to_string(), &bytes)
            .map_err(|e| CliError::Registry(e.to_string()))?;
        if !parsed.helpers.is_empty() {
            writeln!(
                err,
                "warning: {} names credential helpers ({}), which kubectl-olm does not run; registries that \
                 need them are accessed anonymously (add an `auths` entry instead)",
                path.display(),
                parsed.helpers.join(", ")
            )?;
        }
        credentials.push(parsed);
    }
    let ca_bundle = args
        .registry_ca
        .as_deref()
        .map(|p| read_file(p, "CA bundle"))
        .transpose()?;
    let cache_dir = match &args.cache_dir {
        Some(dir) => dir.clone(),
        None => default_cache_dir(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")).ok_or_else(
            || {
                CliError::Registry(
                    "no cache directory: HOME and XDG_CACHE_HOME are unset; pass --cache-dir DIR".to_owned(),
                )
            },
        )?,
    };
    Ok(oci::Options {
        credentials,
        ca_bundle,
        insecure: args.insecure_registry.clone(),
        cache_dir,
        limits: oci::Limits {
            max_total_size: args.max_unpack_size,
            max_file_size: args.max_file_size,
            ..oci::Limits::default()
        },
    })
}

/// A registry client for the flags.
///
/// # Errors
/// As [`options`], and [`CliError::Registry`] when the client cannot be built.
pub fn registry(args: &RegistryArgs, err: &mut dyn Write) -> Result<oci::Registry, CliError> {
    let options = options(args, err)?;
    oci::Registry::new(options).map_err(|e| CliError::registry(&e))
}

/// Runs `work` on a fresh single-threaded runtime; when it takes more than a second, `doing` is
/// written to `err` first and `done(elapsed)` after.
///
/// # Errors
/// [`CliError::Refused`] when the runtime cannot start; otherwise what `work` returns.
pub fn run_with_progress<T>(
    err: &mut dyn Write,
    doing: &str,
    work: impl Future<Output = Result<T, CliError>>,
    done: impl FnOnce(&T, Duration) -> String,
) -> Result<T, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Refused(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let started = Instant::now();
        let mut work = std::pin::pin!(work);
        let slow = tokio::select! {
            result = &mut work => return result,
            () = tokio::time::sleep(Duration::from_secs(1)) => true,
        };
        if slow {
            writeln!(err, "{doing} ...")?;
        }
        let value = work.await?;
        writeln!(err, "{}", done(&value, started.elapsed()))?;
        Ok(value)
    })
}

/// Pulls the catalog image `image` (or takes it from the cache).
///
/// # Errors
/// [`CliError::Registry`] with the registry's or the unpacker's message; [`CliError::Usage`] for a
/// reference that does not parse.
pub fn pull_catalog(args: &RegistryArgs, image: &str, err: &mut dyn Write) -> Result<oci::Pulled, CliError> {
    let image = oci::ImageRef::parse(image).map_err(|e| CliError::Usage(e.to_string()))?;
    let registry = registry(args, err)?;
    run_with_progress(
        err,
        &format!("pulling {image}"),
        async {
            registry
                .pull_catalog(&image)
                .await
                .map_err(|e| CliError::registry(&e))
        },
        |pulled, elapsed| {
            format!(
                "pulled {}@{} in {:.1}s",
                pulled.image,
                pulled.digest,
                elapsed.as_secs_f64()
            )
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_under_xdg_cache_home_else_home() {
        assert_eq!(
            default_cache_dir(Some("/x".into()), Some("/h".into())),
            Some(PathBuf::from("/x/olm-rs"))
        );
        assert_eq!(
            default_cache_dir(Some("".into()), Some("/h".into())),
            Some(PathBuf::from("/h/.cache/olm-rs"))
        );
        assert_eq!(default_cache_dir(None, None), None);
    }

    #[test]
    fn the_registry_config_is_under_docker_config_else_home() {
        assert_eq!(
            default_registry_config(Some("/d".into()), Some("/h".into())),
            Some(PathBuf::from("/d/config.json"))
        );
        assert_eq!(
            default_registry_config(None, Some("/h".into())),
            Some(PathBuf::from("/h/.docker/config.json"))
        );
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("64Ki"), Ok(64 << 10));
        assert_eq!(parse_size("2Gi"), Ok(2 << 30));
        assert!(parse_size("2GB").is_err());
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn insecure_registries_are_host_and_port_only() {
        assert_eq!(parse_insecure("127.0.0.1:5000").as_deref(), Ok("127.0.0.1:5000"));
        assert_eq!(
            parse_insecure("Registry.Local:5000").as_deref(),
            Ok("registry.local:5000")
        );
        assert!(parse_insecure("http://x:1").is_err());
        assert!(parse_insecure("x:1/repo").is_err());
    }
}
