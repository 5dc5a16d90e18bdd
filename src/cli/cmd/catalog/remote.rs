//! `--catalog grpc://HOST:PORT`: the catalog verbs read a running registry (`opm serve`,
//! `kubectl olm catalog serve`) through [`crate::grpc::client`] instead of a directory, into the
//! same blobs, so every browse verb (and `validate`) works on it unchanged.

use std::path::Path;

use operator_runtime::error_chain;
use tracing::warn;

use crate::{
    catalog::declcfg::{DeclarativeConfig, DecodeError},
    cli::CliError,
    grpc::{ClientOptions, fetch_catalog},
};

/// The address when `--catalog` names a registry (`grpc://...`).
#[must_use]
pub fn grpc_address(catalog: &Path) -> Option<&str> {
    catalog.to_str().filter(|s| s.starts_with("grpc://"))
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
