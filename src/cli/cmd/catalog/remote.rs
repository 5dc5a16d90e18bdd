//! `--catalog grpc://HOST:PORT` and `--catalog https://HOST/...`: the catalog verbs read a
//! running registry (`opm serve`, `kubectl olm catalog serve`) through [`crate::grpc::client`],
//! or a catalogd HTTP API (OLM v1's catalogd, `kubectl olm catalog serve --http`) through
//! [`crate::catalogd::client`], instead of a directory, into the same blobs, so every browse verb
//! (and `validate`) works on it unchanged.
//!
//! An HTTP catalog is verified against the system roots plus `--registry-ca`; plain `http://` is
//! read only from loopback or from a `HOST:PORT` listed with `--insecure-registry`.

use std::path::Path;

use operator_runtime::error_chain;
use tracing::warn;

use crate::{
    catalog::declcfg::{DeclarativeConfig, DecodeError},
    catalogd,
    cli::{CliError, registry::RegistryArgs},
    grpc::{ClientOptions, fetch_catalog},
};

/// The address when `--catalog` names a registry (`grpc://...`).
#[must_use]
pub fn grpc_address(catalog: &Path) -> Option<&str> {
    catalog.to_str().filter(|s| s.starts_with("grpc://"))
}

/// The URL when `--catalog` names a catalogd HTTP API (`https://...` or `http://...`).
#[must_use]
pub fn http_url(catalog: &Path) -> Option<&str> {
    catalog
        .to_str()
        .filter(|s| s.starts_with("https://") || s.starts_with("http://"))
}

/// Reads the whole catalog of the catalogd HTTP API at `url` (its base URL).
///
/// # Errors
/// [`CliError::LoadCatalog`] naming the URL and what went wrong; [`CliError::Registry`] when the
/// CA bundle cannot be read.
pub fn read_http(
    url: &str,
    registry: &RegistryArgs,
) -> Result<(DeclarativeConfig, Vec<DecodeError>), CliError> {
    let failed = |message: String| CliError::LoadCatalog {
        dir: url.into(),
        message,
    };
    let ca_bundle = registry
        .registry_ca
        .as_deref()
        .map(|p| {
            std::fs::read(p)
                .map_err(|e| CliError::Registry(format!("cannot read CA bundle {}: {e}", p.display())))
        })
        .transpose()?;
    let options = catalogd::ClientOptions {
        ca_bundle,
        insecure: registry.insecure_registry.clone(),
        ..catalogd::ClientOptions::default()
    };
    let client = catalogd::client::client(&options).map_err(|e| failed(error_chain(&e)))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(format!("cannot start the async runtime: {e}")))?;
    match runtime
        .block_on(catalogd::fetch(&client, url, &options, None))
        .map_err(|e| failed(error_chain(&e)))?
    {
        catalogd::Fetched::Catalog(catalog) => Ok((catalog.config, catalog.problems)),
        // Only sent when asked for with If-Modified-Since, which this read never sends.
        catalogd::Fetched::NotModified => Err(failed(
            "the server answered 304 Not Modified to a plain GET".into(),
        )),
    }
}

/// Reads the whole catalog served at `address`. Answers that did not fit the FBC blobs are
/// logged as warnings (`-v` shows them); they never stop browsing.
///
/// # Errors
/// [`CliError::LoadCatalog`] naming the server and the failed call.
pub fn read(address: &str) -> Result<(DeclarativeConfig, Vec<DecodeError>), CliError> {
    let failed = |message: String| CliError::LoadCatalog {
        dir: address.into(),
        message,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(format!("cannot start the async runtime: {e}")))?;
    let fetched = runtime
        .block_on(fetch_catalog(address, &ClientOptions::default()))
        .map_err(|e| failed(error_chain(&e)))?;
    for problem in &fetched.problems {
        warn!(registry = %fetched.address, "{problem}");
    }
    Ok((fetched.config, Vec::new()))
}
