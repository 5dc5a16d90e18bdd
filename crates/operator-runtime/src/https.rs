//! https: the TLS server an operator's webhooks are served on (conversion, validating and
//! mutating webhooks the API server calls), with the serving certificate OLM mounts.
//!
//! The rule it enforces: the certificate on disk is the one served. OLM rotates a webhook's
//! certificate by rewriting its Secret, which the kubelet projects into the pod's files; the
//! server re-reads the certificate and key when the certificate file's modification time
//! changes (checked on each TLS handshake), so a rotation needs no restart. A pair that cannot
//! be loaded keeps the last good one serving (and logs why); at start-up, [`CertFiles::load`]
//! fails instead, naming the file.
//!
//! Requests are routed by a [`Handler`] (pure: method, path and body in, [`Response`] out), on
//! hyper's HTTP/1.1 server (ALPN `http/1.1`), with the probe server's read timeout and a cap on
//! the request body ([`MAX_BODY`]).

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

use http_body_util::{BodyExt, Limited};
use hyper::{Request, body::Incoming};
use hyper_util::rt::TokioIo;
use rustls::{
    ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert},
    sign::CertifiedKey,
};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::http::{READ_TIMEOUT, Response, serve_connection};

/// The largest request body accepted (a ConversionReview of many objects stays well below).
pub const MAX_BODY: usize = 16 * 1024 * 1024;
/// Where OLM mounts a webhook's serving certificate for operator-sdk style servers.
pub const OLM_APISERVER_CERT: &str = "/apiserver.local.config/certificates/apiserver.crt";
/// The key beside [`OLM_APISERVER_CERT`].
pub const OLM_APISERVER_KEY: &str = "/apiserver.local.config/certificates/apiserver.key";
/// Where OLM mounts the same certificate for controller-runtime style servers.
pub const OLM_WEBHOOK_CERT: &str = "/tmp/k8s-webhook-server/serving-certs/tls.crt";
/// The key beside [`OLM_WEBHOOK_CERT`].
pub const OLM_WEBHOOK_KEY: &str = "/tmp/k8s-webhook-server/serving-certs/tls.key";

/// Why the serving certificate could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or holds no PEM object of the expected kind.
    #[error("cannot load the TLS {what} from {}: {detail}", path.display())]
    Load {
        /// `certificate` or `private key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The reader's message.
        detail: String,
    },
    /// The key is of a type rustls cannot sign with, or does not match.
    #[error("the TLS private key {} is not usable: {detail}", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// rustls' message.
        detail: String,
    },
    /// rustls refused the server configuration.
    #[error("cannot configure the TLS server: {0}")]
    Config(#[from] rustls::Error),
}

/// Routes one webhook request.
pub trait Handler: Send + Sync {
    /// The response to `method path` with `body`.
    fn handle(&self, method: &str, path: &str, body: &[u8]) -> Response;
}

/// The certificate and key files, re-read when the certificate changes.
#[derive(Debug)]
pub struct CertFiles {
    cert: PathBuf,
    key: PathBuf,
    current: Mutex<(Option<SystemTime>, Arc<CertifiedKey>)>,
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn load_pair(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let load = |what: &'static str, path: &Path, detail: String| TlsError::Load {
        what,
        path: path.to_owned(),
        detail,
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| load("certificate", cert, e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| load("certificate", cert, e.to_string()))?;
    if chain.is_empty() {
        return Err(load("certificate", cert, "no PEM CERTIFICATE block".to_owned()));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| load("private key", key, e.to_string()))?;
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(chain, private, &provider).map_err(|e| TlsError::Key {
        path: key.to_owned(),
        detail: e.to_string(),
    })
}

impl CertFiles {
    /// Loads `cert` (PEM chain) and `key` (PEM private key).
    ///
    /// # Errors
    /// A file that cannot be read or parsed, or a key that does not match the certificate.
    pub fn load(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Result<Self, TlsError> {
        let (cert, key) = (cert.into(), key.into());
        let stamp = modified(&cert);
        let pair = load_pair(&cert, &key)?;
        Ok(Self {
            cert,
            key,
            current: Mutex::new((stamp, Arc::new(pair))),
        })
    }

    /// The pair to serve: re-read when the certificate file's modification time changed.
    fn get(&self) -> Arc<CertifiedKey> {
        let mut guard = match self.current.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let stamp = modified(&self.cert);
        if stamp.is_some() && stamp != guard.0 {
            match load_pair(&self.cert, &self.key) {
                Ok(pair) => {
                    tracing::info!(cert = %self.cert.display(), "reloaded the rotated TLS certificate");
                    *guard = (stamp, Arc::new(pair));
                }
                // Mid-rotation the key may not match the certificate yet: keep the old pair.
                Err(error) => tracing::warn!(%error, "keeping the previous TLS certificate"),
            }
        }
        Arc::clone(&guard.1)
    }
}

impl ResolvesServerCert for CertFiles {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.get())
    }
}

/// The rustls server configuration serving `certs` (ring, TLS 1.2 and 1.3, ALPN `http/1.1`).
///
/// # Errors
/// rustls refuses the protocol versions (not with ring's provider).
pub fn server_config(certs: Arc<CertFiles>) -> Result<ServerConfig, TlsError> {
    let mut config = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(certs);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

fn text(status: u16, body: &str) -> Response {
    Response {
        status,
        content_type: "text/plain; charset=utf-8",
        body: body.to_owned(),
    }
}

async fn respond(req: Request<Incoming>, handler: &dyn Handler) -> Response {
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => handler.handle(&method, &path, &body.to_bytes()),
        Err(error) => text(413, &format!("cannot read the request body: {error}\n")),
    }
}

/// Serves `handler` over TLS on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, config: ServerConfig, handler: Arc<dyn Handler>) {
    let acceptor = TlsAcceptor::from(Arc::new(config));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(conn) => conn,
            Err(err) => {
                tracing::warn!(error = %err, "failed to accept a webhook connection");
                continue;
            }
        };
        let (acceptor, handler) = (acceptor.clone(), Arc::clone(&handler));
        tokio::spawn(async move {
            let stream = match tokio::time::timeout(READ_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(err)) => {
                    tracing::debug!(error = %err, %peer, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let route = move |req: Request<Incoming>| {
                let handler = Arc::clone(&handler);
                async move { respond(req, &*handler).await }
            };
            serve_connection(TokioIo::new(stream), route, "webhook").await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_file_is_named_in_the_error() {
        let dir = std::env::temp_dir().join(format!("https-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let cert = dir.join("tls.crt");
        let err = CertFiles::load(&cert, dir.join("tls.key")).expect_err("missing");
        assert!(
            err.to_string().starts_with(&format!(
                "cannot load the TLS certificate from {}",
                cert.display()
            )),
            "{err}"
        );
        std::fs::write(&cert, "not pem").expect("write");
        let err = CertFiles::load(&cert, dir.join("tls.key")).expect_err("empty");
        assert!(err.to_string().contains("no PEM CERTIFICATE block"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
