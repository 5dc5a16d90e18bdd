//! oci: all registry I/O (imperative shell) — pulling catalog and bundle images, pushing them,
//! and the on-disk cache of what was pulled.
//!
//! The rule this module enforces: **nothing from a registry is used before it is verified and
//! nothing unpacked can land outside the cache.** A tag is resolved to a digest first; every
//! manifest, config and layer is then fetched by digest and its bytes hashed against it
//! ([`verify_digest`]); layers are unpacked by [`unpack`], which refuses unsafe entries and caps
//! sizes; what was unpacked is kept under `<cache>/sha256/<hex>/<kind>/` and reused only after
//! the stored manifest hashes to the directory's name again ([`cache`]).
//!
//! It is the only user of `oci-client` (the maintained successor of `oci-distribution`), which
//! speaks the distribution API: the bearer-token exchange, the Basic fall-back, the
//! `Docker-Content-Digest` checks. What the images mean is ours:
//!
//! - a **catalog image** holds a file-based catalog in the directory named by its config label
//!   `operators.operatorframework.io.index.configs.v1` (default `/configs`), as
//!   `opm generate dockerfile` writes it; only that directory is unpacked;
//! - a **bundle image** holds a registry+v1 bundle: `manifests/` and `metadata/`.
//!
//! Manifests may be OCI or Docker v2 schema 2; an image index (manifest list) is narrowed to one
//! platform by [`platform::choose`]. Credentials come from docker config JSON ([`auth`]); TLS is
//! verified against the system roots plus an optional CA bundle; plain HTTP is used only for the
//! registries listed as insecure (`HOST:PORT`, loopback ones included).

pub mod auth;
pub mod cache;
pub mod platform;
mod pull;
pub mod push;
pub mod reference;
pub mod unpack;

use std::path::PathBuf;

use oci_client::errors::{OciDistributionError, OciErrorCode};
use sha2::Digest as _;

pub use auth::DockerConfig;
pub use reference::ImageRef;
pub use unpack::Limits;

/// The config label naming the catalog directory of a catalog image.
pub const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";

/// The catalog directory when the label is absent.
pub const DEFAULT_CONFIGS_DIR: &str = "/configs";

/// Why a registry operation failed. Every variant names the image.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The reference does not parse.
    #[error(transparent)]
    Reference(#[from] reference::ParseError),

    /// Credentials could not be read or used.
    #[error(transparent)]
    Credentials(#[from] auth::AuthError),

    /// The HTTP client could not be built (a bad CA bundle).
    #[error("failed to set up the registry client: {message}; pass a PEM file of CA certificates")]
    ClientSetup {
        /// What went wrong.
        message: String,
    },

    /// The registry has no such tag or digest.
    #[error(
        "image {image} not found: the registry has no manifest {what} in repository {repository}; check the \
         tag or digest and the repository name"
    )]
    NotFound {
        /// The image.
        image: String,
        /// `for tag "x"` or `with digest sha256:...`.
        what: String,
        /// The repository.
        repository: String,
    },

    /// The registry refused the credentials (or asked for some and none were given).
    #[error("registry {registry} refused access to image {image} ({detail}); {hint}")]
    Unauthorized {
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// What the registry said.
        detail: String,
        /// The fix.
        hint: &'static str,
    },

    /// The registry could not be reached, or spoke another protocol than expected.
    #[error(
        "failed to {step} of image {image}: cannot talk to registry {registry}; check that it is reachable; \
         a registry that speaks plain HTTP must be listed with --insecure-registry {registry}, one with a \
         private CA needs its CA (--registry-ca FILE)"
    )]
    Connect {
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// What was being done.
        step: &'static str,
        /// The client error.
        #[source]
        source: OciDistributionError,
    },

    /// Any other failure talking to the registry.
    #[error("failed to {step} of image {image}")]
    Registry {
        /// The image.
        image: String,
        /// What was being done (`resolve the tag`, `pull the manifest`, ...).
        step: &'static str,
        /// The client error.
        #[source]
        source: OciDistributionError,
    },

    /// Content did not hash to the digest it was fetched by.
    #[error(
        "image {image}: the {what} does not match its digest (expected {expected}, got {actual}); the registry \
         or something between served corrupt content, nothing of it was used"
    )]
    DigestMismatch {
        /// The image.
        image: String,
        /// `manifest`, `config`, `layer N`.
        what: String,
        /// The digest asked for.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },

    /// The manifest is of a kind we do not read.
    #[error(
        "image {image}: unsupported manifest media type {media_type:?}; expected an OCI or Docker v2 \
         schema 2 image manifest or index"
    )]
    UnsupportedManifest {
        /// The image.
        image: String,
        /// The media type found.
        media_type: String,
    },

    /// A manifest or config document is not the JSON it should be.
    #[error("image {image}: the {what} is not valid: {message}")]
    BadDocument {
        /// The image.
        image: String,
        /// `manifest`, `image index`, `config`.
        what: &'static str,
        /// The parse error.
        message: String,
    },

    /// An image index without a usable platform.
    #[error(
        "image {image} is a multi-platform index without linux/amd64 and with more than one platform ({}); \
         pull one platform's manifest by digest",
        platforms.join(", ")
    )]
    NoPlatform {
        /// The image.
        image: String,
        /// The platforms on offer.
        platforms: Vec<String>,
    },

    /// A layer of a media type we cannot unpack.
    #[error(
        "image {image}: layer {layer} has media type {media_type:?}; only tar, tar+gzip and tar+zstd layers \
         (OCI or Docker) can be unpacked"
    )]
    UnsupportedLayer {
        /// The image.
        image: String,
        /// The layer digest.
        layer: String,
        /// Its media type.
        media_type: String,
    },

    /// A blob larger than [`Limits::max_blob_size`].
    #[error(
        "image {image}: blob {blob} is larger than the {limit}-byte limit ({size}); the image is refused as \
         oversized (raise the blob size limit if it is legitimate)"
    )]
    BlobTooLarge {
        /// The image.
        image: String,
        /// The blob digest.
        blob: String,
        /// Its size (declared or reached).
        size: u64,
        /// The limit.
        limit: u64,
    },

    /// A layer could not be unpacked (an unsafe entry, a cap, a corrupt stream).
    #[error("failed to unpack image {image}")]
    Unpack {
        /// The image.
        image: String,
        /// The refusal.
        #[source]
        source: unpack::UnpackError,
    },

    /// The image has no catalog directory.
    #[error(
        "image {image} is not a catalog image: it has no {dir} directory (the directory its label {CONFIGS_LABEL} \
         names, /configs by default); build it with `kubectl-olm catalog push DIR IMAGE` or `opm generate \
         dockerfile`"
    )]
    NotACatalog {
        /// The image.
        image: String,
        /// The directory looked for.
        dir: String,
    },

    /// The image has no bundle manifests.
    #[error(
        "image {image} is not a registry+v1 bundle image: it has no /manifests directory; build it with \
         `kubectl-olm bundle push BUNDLE_DIR IMAGE` or `operator-sdk bundle`"
    )]
    NotABundle {
        /// The image.
        image: String,
    },

    /// The label names a directory that is not a safe relative path.
    #[error(
        "image {image}: label {CONFIGS_LABEL}={value:?} is not a directory inside the image; set it to /configs"
    )]
    BadConfigsLabel {
        /// The image.
        image: String,
        /// The label value.
        value: String,
    },

    /// Reading or writing the cache (or a directory to push) failed.
    #[error("failed to {action} {path}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// What is to be pushed is not a catalog or bundle.
    #[error("refusing to push {path}: {message}")]
    BadContent {
        /// The directory.
        path: PathBuf,
        /// What is wrong and the fix.
        message: String,
    },
}

/// Result alias for this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether the registry itself failed (unreachable, a server error), as opposed to the image
    /// or the credentials being wrong: only such failures make a caller back off the registry.
    #[must_use]
    pub fn is_registry_fault(&self) -> bool {
        matches!(self, Error::Connect { .. } | Error::Registry { .. })
    }
}

/// The `sha256:<hex>` digest of `bytes`.
#[must_use]
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// Checks that `bytes` hash to `expected`.
///
/// # Errors
/// [`Error::DigestMismatch`] naming the image and what was checked.
pub fn verify_digest(image: &str, what: &str, bytes: &[u8], expected: &str) -> Result<()> {
    let actual = sha256_digest(bytes);
    if actual == expected {
        Ok(())
    } else {
        Err(Error::DigestMismatch {
            image: image.to_owned(),
            what: what.to_owned(),
            expected: expected.to_owned(),
            actual,
        })
    }
}

/// How a client error reads to a user: a missing tag, refused credentials, or anything else.
fn classify(image: &ImageRef, step: &'static str, source: OciDistributionError) -> Error {
    let not_found = || Error::NotFound {
        image: image.to_string(),
        what: match (image.digest(), image.tag()) {
            (Some(d), _) => format!("with digest {d}"),
            (None, Some(t)) => format!("for tag {t:?}"),
            (None, None) => String::new(),
        },
        repository: image.repository().to_owned(),
    };
    let unauthorized = |detail: String| Error::Unauthorized {
        image: image.to_string(),
        registry: image.registry_host().to_owned(),
        detail,
        hint: "check the credentials for this registry (--registry-config FILE, a docker config.json; or the \
               CatalogSource's spec.secrets)",
    };
    match source {
        OciDistributionError::UnauthorizedError { .. } => unauthorized("HTTP 401 Unauthorized".to_owned()),
        OciDistributionError::AuthenticationFailure(reason) => {
            unauthorized(format!("token request failed: {}", reason.trim()))
        }
        OciDistributionError::RegistryError { envelope, url } => {
            let first = envelope.errors.first();
            match first.map(|e| &e.code) {
                Some(OciErrorCode::ManifestUnknown | OciErrorCode::NameUnknown | OciErrorCode::NotFound)
                    if step != "pull a blob" =>
                {
                    not_found()
                }
                Some(OciErrorCode::Unauthorized | OciErrorCode::Denied) => {
                    unauthorized(first.map(|e| e.message.clone()).unwrap_or_default())
                }
                _ => Error::Registry {
                    image: image.to_string(),
                    step,
                    source: OciDistributionError::RegistryError { envelope, url },
                },
            }
        }
        OciDistributionError::ServerError { code: 404, .. } if step != "pull a blob" => not_found(),
        OciDistributionError::ServerError {
            code: code @ (401 | 403),
            message,
            ..
        } => {
            let detail = serde_json::from_str::<oci_client::errors::OciEnvelope>(&message)
                .ok()
                .and_then(|e| e.errors.into_iter().next().map(|e| e.message))
                .unwrap_or_default();
            unauthorized(format!("HTTP {code} {detail}").trim().to_owned())
        }
        OciDistributionError::DigestError(oci_client::errors::DigestError::VerificationError {
            expected,
            actual,
        }) => Error::DigestMismatch {
            image: image.to_string(),
            what: step.trim_start_matches("pull the ").to_owned(),
            expected,
            actual,
        },
        OciDistributionError::RequestError(e) if e.is_connect() || e.is_timeout() || e.is_request() => {
            Error::Connect {
                image: image.to_string(),
                registry: image.registry_host().to_owned(),
                step,
                source: OciDistributionError::RequestError(e),
            }
        }
        source => Error::Registry {
            image: image.to_string(),
            step,
            source,
        },
    }
}

/// How to reach registries: credentials, TLS, plain-HTTP exceptions, the cache, the caps.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Docker configs searched in order for a registry's credentials.
    pub credentials: Vec<DockerConfig>,
    /// PEM CA certificates trusted in addition to the system roots.
    pub ca_bundle: Option<Vec<u8>>,
    /// Registries (`HOST:PORT`) spoken to over plain HTTP.
    pub insecure: Vec<String>,
    /// Where pulled images are unpacked, by digest.
    pub cache_dir: PathBuf,
    /// Size and count caps.
    pub limits: Limits,
}

/// What a pull produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// The image as asked for.
    pub image: String,
    /// The digest the reference resolved to (of the index, when the image is multi-platform).
    pub digest: String,
    /// The unpacked content: the catalog directory, or the bundle directory (with `manifests/`).
    pub dir: PathBuf,
    /// Whether the content came from the cache without pulling layers.
    pub cached: bool,
}

/// A registry client with its options; cheap to clone.
#[derive(Clone)]
pub struct Registry {
    client: oci_client::Client,
    options: std::sync::Arc<Options>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// A client for `options`.
    ///
    /// # Errors
    /// [`Error::ClientSetup`] when the CA bundle is not PEM certificates.
    pub fn new(options: Options) -> Result<Self> {
        // reqwest needs a process-wide rustls provider; ring is the one kube already uses. A
        // second install (another client, a test) is refused by rustls and harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut config = oci_client::client::ClientConfig {
            protocol: oci_client::client::ClientProtocol::HttpsExcept(options.insecure.clone()),
            // Indexes are narrowed by `platform::choose`, never by the client.
            platform_resolver: None,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            user_agent: concat!("olm-rs/", env!("CARGO_PKG_VERSION")),
            ..Default::default()
        };
        if let Some(pem) = &options.ca_bundle {
            if !String::from_utf8_lossy(pem).contains("-----BEGIN CERTIFICATE-----") {
                return Err(Error::ClientSetup {
                    message: "the CA bundle holds no PEM certificate".to_owned(),
                });
            }
            config
                .extra_root_certificates
                .push(oci_client::client::Certificate {
                    encoding: oci_client::client::CertificateEncoding::Pem,
                    data: pem.clone(),
                });
        }
        let client = oci_client::Client::try_from(config).map_err(|e| Error::ClientSetup {
            message: operator_runtime::error_chain(&e),
        })?;
        Ok(Self {
            client,
            options: std::sync::Arc::new(options),
        })
    }

    /// The options this client was built with.
    #[must_use]
    pub fn options(&self) -> &Options {
        &self.options
    }

    fn credentials(&self, image: &ImageRef) -> Result<oci_client::secrets::RegistryAuth> {
        Ok(auth::select(&self.options.credentials, image.registry_host())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_checked_and_a_mismatch_names_what_and_both_digests() {
        let d = sha256_digest(b"abc");
        assert_eq!(
            d,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        verify_digest("img", "config", b"abc", &d).unwrap();
        let err = verify_digest("img", "layer 1", b"abd", &d)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("image img: the layer 1 does not match its digest (expected sha256:ba78"),
            "{err}"
        );
    }

    #[test]
    fn registry_errors_become_not_found_or_unauthorized() {
        let image = ImageRef::parse("127.0.0.1:5000/cat:nope").unwrap();
        let envelope: oci_client::errors::OciEnvelope =
            serde_json::from_str(r#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#)
                .unwrap();
        let err = classify(
            &image,
            "resolve the tag",
            OciDistributionError::RegistryError {
                envelope,
                url: "u".into(),
            },
        );
        assert_eq!(
            err.to_string(),
            "image 127.0.0.1:5000/cat:nope not found: the registry has no manifest for tag \"nope\" in \
             repository cat; check the tag or digest and the repository name"
        );
        let err = classify(
            &image,
            "resolve the tag",
            OciDistributionError::UnauthorizedError { url: "u".into() },
        );
        assert!(err.to_string().contains("refused access"), "{err}");
        assert!(err.to_string().contains("--registry-config"), "{err}");
    }
}
