//! package_server: `olm-controller run --serve-packages ADDR` serves the aggregated
//! `packages.operators.coreos.com/v1` API (PackageManifests) from the catalogs this process
//! already holds ([`super::cache`]), in place of upstream's packageserver Deployment.
//! Imperative shell: every answer is decided by [`crate::plan::package_manifest::api`].
//!
//! # What it does
//!
//! - **Registration**: it issues a CA and a serving certificate for the Service
//!   (`--packages-service NAMESPACE/NAME`, default `olm/olm-rs-packageserver`: its
//!   `NAME.NAMESPACE.svc` names) with [`crate::certs`], exactly as webhook certificates are
//!   issued (730 days), serves it, and applies the APIService `v1.packages.operators.coreos.com`
//!   naming the Service and that CA (field manager `olm-rs/packageserver`). The certificate is
//!   re-issued a day before it expires ([`crate::plan::csv::webhooks`]' rule for webhooks) and
//!   at every start (the APIService then trusts the new CA and the previous one, so requests
//!   under way keep verifying); it lives in memory only, so no Secret is read or written.
//! - **Authentication**: the aggregator's front-proxy client certificate is verified against
//!   `requestheader-client-ca-file` of ConfigMap `kube-system/extension-apiserver-authentication`,
//!   and its common name against `requestheader-allowed-names` (any name when the list is
//!   empty), as a generic API server's request-header authenticator does. Other callers get
//!   `401`, except on `/healthz`, `/livez` and `/readyz`. The `X-Remote-User` identity is not
//!   authorized again here: the API server has already checked RBAC before proxying (upstream
//!   also asks the API server with a SubjectAccessReview; olm-rs does not, see docs/controller.md).
//!   The ConfigMap is read at start (retried until it can be), then every 5 minutes.
//! - **Content**: each CatalogSource in the store whose catalog is cached gives its
//!   PackageManifests, built once per loaded catalog and CatalogSource facts and then kept
//!   (without icons: the icon subresource builds its one package again) until either changes;
//!   requests are answered on the blocking pool. Kept, the large-fbc corpus catalog's 782
//!   PackageManifests are about 18 MB (as JSON), what upstream's packageserver holds too.
//!
//! The server runs with the controllers (so only on the leader with `--leader-elect`).

use std::{
    collections::HashMap,
    net::SocketAddr,
    str::FromStr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use k8s_openapi::{
    api::core::v1::ConfigMap, jiff::Timestamp, kube_aggregator::pkg::apis::apiregistration::v1::APIService,
};
use kube::{Api, Client, runtime::reflector::Store};
use rustls::{
    RootCertStore, ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject},
    server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier},
    sign::CertifiedKey,
};

use super::{cache::CatalogCache, lock};
use crate::{
    api::v1alpha1::CatalogSource,
    catalog::{load::LoadedCatalog, model::Package},
    plan::package_manifest::{self as pm, PackageManifest, api},
};

/// The field manager of the APIService.
pub const MANAGER: &str = "olm-rs/packageserver";
/// The ConfigMap holding the front-proxy CA.
pub const AUTH_CONFIGMAP: &str = "extension-apiserver-authentication";
/// Its namespace.
pub const AUTH_NAMESPACE: &str = "kube-system";
/// How long before expiry the serving certificate is re-issued.
const ROTATE_BEFORE: Duration = Duration::from_secs(24 * 3600);
/// How long a client may take to send a request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the front-proxy CA is read again.
const REREAD_AUTH: Duration = Duration::from_secs(300);
/// How often a failed start step is retried.
const RETRY: Duration = Duration::from_secs(5);

/// `--packages-service NAMESPACE/NAME`: the Service the APIService names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl Default for ServiceRef {
    fn default() -> Self {
        Self {
            namespace: "olm".to_owned(),
            name: "olm-rs-packageserver".to_owned(),
        }
    }
}

impl FromStr for ServiceRef {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => Ok(Self {
                namespace: ns.to_owned(),
                name: name.to_owned(),
            }),
            _ => Err(format!(
                "{text:?}: expected NAMESPACE/NAME, the Service in front of the package server, e.g. olm/olm-rs-packageserver"
            )),
        }
    }
}

/// Why the package server could not start.
#[derive(Debug, thiserror::Error)]
pub enum PackageServerError {
    /// `--serve-packages` could not listen.
    #[error("--serve-packages {addr}: failed to listen: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Why one step of setting the server up failed (retried).
#[derive(Debug, thiserror::Error)]
enum SetupError {
    #[error("failed to read ConfigMap {AUTH_NAMESPACE}/{AUTH_CONFIGMAP}: {0}")]
    ReadAuth(#[source] kube::Error),
    #[error(
        "ConfigMap {AUTH_NAMESPACE}/{AUTH_CONFIGMAP} has no requestheader-client-ca-file: the API server runs without --requestheader-client-ca-file, so no aggregated API can authenticate it"
    )]
    NoRequestHeaderCa,
    #[error("requestheader-client-ca-file holds no usable CA certificate: {0}")]
    BadCa(String),
    #[error("failed to issue the serving certificate: {0}")]
    Issue(#[from] crate::certs::CertError),
    #[error("the issued serving certificate is not usable: {0}")]
    Key(String),
    #[error("failed to apply APIService v1.packages.operators.coreos.com: {0}")]
    ApplyApiService(#[source] kube::Error),
    #[error("cannot configure the TLS server: {0}")]
    Tls(#[from] rustls::Error),
}

/// The front-proxy trust: CA certificates and the allowed common names.
struct FrontProxy {
    roots: RootCertStore,
    allowed_names: Vec<String>,
}

async fn front_proxy(client: &Client) -> Result<FrontProxy, SetupError> {
    let cm = Api::<ConfigMap>::namespaced(client.clone(), AUTH_NAMESPACE)
        .get(AUTH_CONFIGMAP)
        .await
        .map_err(SetupError::ReadAuth)?;
    let data = cm.data.unwrap_or_default();
    let ca = data
        .get("requestheader-client-ca-file")
        .ok_or(SetupError::NoRequestHeaderCa)?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        let cert = cert.map_err(|e| SetupError::BadCa(e.to_string()))?;
        roots.add(cert).map_err(|e| SetupError::BadCa(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(SetupError::BadCa("no PEM CERTIFICATE block".to_owned()));
    }
    let allowed_names = data
        .get("requestheader-allowed-names")
        .and_then(|names| serde_json::from_str::<Vec<String>>(names).ok())
        .unwrap_or_default();
    Ok(FrontProxy { roots, allowed_names })
}

/// The serving certificate, replaced on rotation.
#[derive(Debug)]
struct ServingCert(Mutex<Arc<CertifiedKey>>);

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&lock(&self.0)))
    }
}

fn certified(certs: &crate::certs::ServingCerts) -> Result<CertifiedKey, SetupError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(certs.cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| SetupError::Key(e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(certs.key_pem.as_bytes())
        .map_err(|e| SetupError::Key(e.to_string()))?;
    CertifiedKey::from_der(chain, key, &rustls::crypto::ring::default_provider())
        .map_err(|e| SetupError::Key(e.to_string()))
}

/// Issues a certificate for the Service and registers its CA in the APIService, followed by
/// `also_trust` (the CA being replaced, so that connections made before the swap, or by an API
/// server that saw the APIService first, still verify). Returns the pair, its expiry and its CA.
async fn issue_and_register(
    client: &Client,
    service: &ServiceRef,
    also_trust: &str,
) -> Result<(CertifiedKey, Timestamp, String), SetupError> {
    let (ns, name) = (&service.namespace, &service.name);
    let hosts = vec![
        format!("{name}.{ns}.svc"),
        format!("{name}.{ns}.svc.cluster.local"),
        format!("{name}.{ns}"),
        name.clone(),
    ];
    let certs = crate::certs::issue(&hosts, Timestamp::now())?;
    let key = certified(&certs)?;
    let desired = api::api_service(ns, name, &format!("{}{also_trust}", certs.ca_pem));
    crate::k8s::apply::apply(
        &Api::<APIService>::all(client.clone()),
        api::API_SERVICE,
        &desired,
        MANAGER,
    )
    .await
    .map_err(SetupError::ApplyApiService)?;
    Ok((key, certs.not_after, certs.ca_pem))
}

/// The PackageManifests of one CatalogSource, kept while its catalog and facts stay the same.
struct Memo {
    catalog: Arc<LoadedCatalog>,
    source: pm::Source,
    manifests: Arc<Vec<PackageManifest>>,
}

/// What every request reads: the catalogs, the CatalogSources, and the manifests built so far.
struct Content {
    catalogs: Arc<CatalogCache>,
    sources: Store<CatalogSource>,
    global_namespace: String,
    memo: Mutex<HashMap<(String, String), Memo>>,
}

/// The head CSV as the registry API serves it (`GetBundleForChannel`'s `csvJson`: the inlined
/// CSV, or the one built from `olm.csv.metadata`).
fn registry_csv(
    package: &Package,
    channel: &crate::catalog::model::Channel,
    bundle: &crate::catalog::model::Bundle,
) -> Option<serde_json::Value> {
    // The inlined CSV (decoding only the manifests up to it), else the registry's stub built
    // from `olm.csv.metadata`.
    if let Some(csv) = bundle.csv() {
        return Some(csv);
    }
    let entry = channel.entry(&bundle.name)?;
    let message = crate::grpc::convert::bundle_message(package, channel, entry, bundle).ok()?;
    serde_json::from_str(&message.csv_json).ok()
}

fn source_facts(cs: &CatalogSource) -> pm::Source {
    pm::Source {
        namespace: cs.metadata.namespace.clone().unwrap_or_default(),
        name: cs.metadata.name.clone().unwrap_or_default(),
        display_name: cs.spec.display_name.clone().unwrap_or_default(),
        publisher: cs.spec.publisher.clone().unwrap_or_default(),
        labels: cs.metadata.labels.clone().unwrap_or_default(),
        created: cs.metadata.creation_timestamp.as_ref().map(|t| t.0),
    }
}

impl Content {
    /// `m` (picked from [`Content::all`]) with its icons, built again from its catalog.
    fn full(&self, m: &PackageManifest) -> Option<PackageManifest> {
        let memo = lock(&self.memo);
        let key = (
            m.status.catalog_source_namespace.clone(),
            m.status.catalog_source.clone(),
        );
        let entry = memo.get(&key)?;
        let package = entry.catalog.model.package(&m.metadata.name)?;
        let mut full = pm::manifest(&entry.source, package, &registry_csv)?;
        full.metadata.namespace.clone_from(&m.metadata.namespace);
        Some(full)
    }

    /// Every served catalog's PackageManifests, without icons (built now when new or changed).
    fn all(&self) -> Vec<Arc<Vec<PackageManifest>>> {
        let mut out = Vec::new();
        let mut memo = lock(&self.memo);
        let mut live = std::collections::HashSet::new();
        for cs in self.sources.state() {
            if cs.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let facts = source_facts(&cs);
            let key = (facts.namespace.clone(), facts.name.clone());
            let Some(catalog) = self.catalogs.get(&key.0, &key.1) else {
                continue;
            };
            live.insert(key.clone());
            let fresh = memo
                .get(&key)
                .is_some_and(|m| Arc::ptr_eq(&m.catalog, &catalog) && m.source == facts);
            if !fresh {
                // Kept without icons: they are most of a large catalog's PackageManifests
                // (36 of 55 MB for the corpus' large-fbc), and only the icon subresource, which
                // builds its one package again, serves them.
                let manifests = Arc::new(
                    pm::manifests(&facts, &catalog.model, &registry_csv)
                        .into_iter()
                        .map(pm::without_icons)
                        .collect(),
                );
                memo.insert(
                    key.clone(),
                    Memo {
                        catalog,
                        source: facts,
                        manifests,
                    },
                );
            }
            if let Some(m) = memo.get(&key) {
                out.push(Arc::clone(&m.manifests));
            }
        }
        memo.retain(|key, _| live.contains(key));
        out
    }
}

/// Whether a verified client certificate chain names an allowed front proxy.
fn allowed(chain: Option<&[CertificateDer<'_>]>, allowed_names: &[String]) -> bool {
    let Some(leaf) = chain.and_then(<[_]>::first) else {
        return false;
    };
    if allowed_names.is_empty() {
        return true;
    }
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(leaf.as_ref()) else {
        return false;
    };
    cert.subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .any(|cn| allowed_names.iter().any(|n| n == cn))
}

async fn handle(
    req: Request<Incoming>,
    content: Arc<Content>,
    authenticated: bool,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    let header = |name: hyper::header::HeaderName| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (method, path) = (req.method().as_str().to_owned(), req.uri().path().to_owned());
    let query = req.uri().query().unwrap_or_default().to_owned();
    let (accept, if_none_match) = (
        header(hyper::header::ACCEPT),
        header(hyper::header::IF_NONE_MATCH),
    );
    let reply = tokio::task::spawn_blocking(move || {
        // Discovery and health need no catalog: built (or checked) only for the resource.
        let catalogs = if path.contains(pm::RESOURCE) {
            content.all()
        } else {
            Vec::new()
        };
        let request = api::Request {
            method: &method,
            path: &path,
            query: &query,
            accept: &accept,
            if_none_match: &if_none_match,
            authenticated,
        };
        api::respond(
            &request,
            catalogs.iter().map(|c| c.as_slice()),
            &content.global_namespace,
            Timestamp::now(),
            &|m| content.full(m),
        )
    })
    .await
    .unwrap_or_else(|e| api::Reply {
        status: 500,
        content_type: "text/plain; charset=utf-8".to_owned(),
        etag: None,
        body: format!("internal error: {e}").into_bytes(),
    });
    let mut builder = hyper::Response::builder().status(reply.status);
    if !reply.content_type.is_empty() {
        builder = builder.header(hyper::header::CONTENT_TYPE, reply.content_type);
    }
    if let Some(etag) = reply.etag {
        builder = builder.header(hyper::header::ETAG, etag);
    }
    Ok(builder
        .body(Full::new(Bytes::from(reply.body)))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new()))))
}

/// Binds `addr` and serves the API from `catalogs` until `stop` turns true; the certificate,
/// the APIService and the front-proxy trust are set up in the background (retried, logged).
///
/// # Errors
/// [`PackageServerError::Bind`] when `addr` cannot be bound.
pub async fn start(
    client: Client,
    catalogs: Arc<CatalogCache>,
    sources: Store<CatalogSource>,
    global_namespace: String,
    addr: SocketAddr,
    service: ServiceRef,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<()>, PackageServerError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| PackageServerError::Bind { addr, source })?;
    let local = listener.local_addr().unwrap_or(addr);
    let content = Arc::new(Content {
        catalogs,
        sources,
        global_namespace,
        memo: Mutex::default(),
    });
    Ok(tokio::spawn(async move {
        tokio::select! {
            () = serve(client, content, listener, local, service) => {}
            _ = stop.wait_for(|s| *s) => {}
        }
    }))
}

/// Retries `step` every [`RETRY`] until it succeeds, logging each failure.
async fn retried<T, F, Fut>(what: &str, mut step: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, SetupError>>,
{
    loop {
        match step().await {
            Ok(v) => return v,
            Err(error) => {
                tracing::warn!(%error, "package server: {what} failed; retrying in {}s", RETRY.as_secs());
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

async fn serve(
    client: Client,
    content: Arc<Content>,
    listener: tokio::net::TcpListener,
    local: SocketAddr,
    service: ServiceRef,
) {
    let proxy = retried("reading the front-proxy CA", || front_proxy(&client)).await;
    let (key, mut not_after, mut ca) = retried("registering the APIService", || {
        issue_and_register(&client, &service, "")
    })
    .await;
    let cert = Arc::new(ServingCert(Mutex::new(Arc::new(key))));
    let auth = match Auth::new(proxy, &cert) {
        Ok(auth) => Arc::new(Mutex::new(Arc::new(auth))),
        Err(error) => {
            tracing::error!(%error, "package server: cannot configure TLS; not serving");
            return;
        }
    };
    // The front-proxy CA, re-read every few minutes: new connections use the CA and names the
    // cluster publishes now (an API server restarted with a rotated CA is trusted again).
    let refresh = {
        let (client, cert, auth) = (client.clone(), Arc::clone(&cert), Arc::clone(&auth));
        async move {
            loop {
                tokio::time::sleep(REREAD_AUTH).await;
                match front_proxy(&client)
                    .await
                    .and_then(|proxy| Auth::new(proxy, &cert))
                {
                    Ok(next) => *lock(&auth) = Arc::new(next),
                    Err(error) => {
                        tracing::warn!(%error, "package server: keeping the front-proxy CA read before")
                    }
                }
            }
        }
    };
    // Rotation: a day before expiry, a new CA and certificate; the APIService trusts both CAs
    // until the next rotation, so no request fails while the API server catches up.
    let rotation = {
        let (client, service, cert) = (client.clone(), service.clone(), Arc::clone(&cert));
        async move {
            loop {
                let wait = not_after
                    .as_second()
                    .saturating_sub(Timestamp::now().as_second())
                    .saturating_sub(i64::try_from(ROTATE_BEFORE.as_secs()).unwrap_or(0));
                tokio::time::sleep(Duration::from_secs(u64::try_from(wait).unwrap_or(0))).await;
                let (key, next, next_ca) = retried("rotating the serving certificate", || {
                    issue_and_register(&client, &service, &ca)
                })
                .await;
                *lock(&cert.0) = Arc::new(key);
                (not_after, ca) = (next, next_ca);
                tracing::info!(%not_after, "package server: rotated the serving certificate");
            }
        }
    };
    tracing::info!(addr = %local, apiservice = api::API_SERVICE, service = %format!("{}/{}", service.namespace, service.name), "serving packages.operators.coreos.com/v1");
    let accept = async move {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(conn) => conn,
                Err(error) => {
                    tracing::warn!(%error, "package server: failed to accept a connection");
                    continue;
                }
            };
            let (auth, content) = (Arc::clone(&lock(&auth)), Arc::clone(&content));
            tokio::spawn(async move {
                let stream =
                    match tokio::time::timeout(Duration::from_secs(10), auth.acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(error)) => {
                            tracing::debug!(%error, %peer, "package server: TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    };
                let authenticated = allowed(stream.get_ref().1.peer_certificates(), &auth.allowed_names);
                let service = service_fn(move |req| handle(req, Arc::clone(&content), authenticated));
                // A client that sends no request head within the timeout (an idle kept-alive
                // connection included) is disconnected; the aggregator reconnects.
                if let Err(error) = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_READ_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    tracing::debug!(%error, %peer, "package server: connection ended");
                }
            });
        }
    };
    tokio::join!(rotation, refresh, accept);
}

/// What a new connection is accepted with: the TLS configuration trusting the front-proxy CA,
/// and the common names allowed.
struct Auth {
    acceptor: tokio_rustls::TlsAcceptor,
    allowed_names: Vec<String>,
}

impl Auth {
    fn new(proxy: FrontProxy, cert: &Arc<ServingCert>) -> Result<Self, SetupError> {
        let config = server_config(proxy.roots, Arc::clone(cert))?;
        Ok(Self {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            allowed_names: proxy.allowed_names,
        })
    }
}

/// TLS 1.2/1.3 with ring, ALPN `http/1.1`, the rotating serving certificate, and client
/// certificates verified against the front-proxy CA when presented (a kubelet probe presents
/// none, and is answered only on the health endpoints).
fn server_config(roots: RootCertStore, cert: Arc<ServingCert>) -> Result<ServerConfig, SetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
        .allow_unauthenticated()
        .build()
        .map_err(|e| SetupError::BadCa(e.to_string()))?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(cert);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(common_name: &str) -> CertificateDer<'static> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    #[test]
    fn only_a_presented_certificate_naming_an_allowed_front_proxy_authenticates() {
        let names = vec!["front-proxy-client".to_owned()];
        assert!(allowed(Some(&[leaf("front-proxy-client")]), &names));
        assert!(!allowed(Some(&[leaf("someone-else")]), &names));
        assert!(!allowed(None, &names), "no certificate");
        assert!(!allowed(Some(&[]), &names), "an empty chain");
        // No names published: any certificate the CA signed will do, as the API server's own
        // request-header authenticator accepts.
        assert!(allowed(Some(&[leaf("someone-else")]), &[]));
    }

    #[test]
    fn manifests_are_built_once_per_catalog_and_follow_their_catalog_source() {
        use kube::runtime::{reflector, watcher};
        let catalogs = Arc::new(CatalogCache::new(None).unwrap());
        let (sources, mut writer) = reflector::store::<CatalogSource>();
        let source = |display: &str| -> CatalogSource {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                "metadata": {"name": "ops", "namespace": "olm"},
                "spec": {"sourceType": "builtin", "displayName": display},
            }))
            .unwrap()
        };
        writer.apply_watcher_event(&watcher::Event::Apply(source("A")));
        let content = Content {
            catalogs: Arc::clone(&catalogs),
            sources,
            global_namespace: "olm".to_owned(),
            memo: Mutex::default(),
        };
        assert!(content.all().is_empty(), "no catalog loaded yet");
        catalogs.insert("olm", "ops", catalogs.builtin().unwrap());
        let first = content.all();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0][0].metadata.name, "redis-operator");
        assert!(
            Arc::ptr_eq(&first[0], &content.all()[0]),
            "kept while nothing changed"
        );
        // Kept without icons; the icon subresource's package is built again, with them.
        let kept = &first[0][0];
        assert!(
            kept.status
                .channels
                .iter()
                .all(|c| c.current_csv_desc.icon.is_empty())
        );
        let full = content.full(kept).unwrap();
        assert_eq!(full.metadata.name, kept.metadata.name);
        assert!(
            full.status
                .channels
                .iter()
                .any(|c| !c.current_csv_desc.icon.is_empty())
        );
        assert_eq!(pm::without_icons(full), *kept);
        // A new display name: built again.
        writer.apply_watcher_event(&watcher::Event::Apply(source("B")));
        let renamed = content.all();
        assert!(!Arc::ptr_eq(&first[0], &renamed[0]));
        assert_eq!(renamed[0][0].status.catalog_source_display_name, "B");
        // The catalog reloaded: built again.
        catalogs.insert(
            "olm",
            "ops",
            Arc::new(crate::controller::cache::embedded_builtin().unwrap()),
        );
        assert!(!Arc::ptr_eq(&renamed[0], &content.all()[0]));
        // The CatalogSource gone: nothing served, nothing kept.
        writer.apply_watcher_event(&watcher::Event::Delete(source("B")));
        assert!(content.all().is_empty());
        assert!(lock(&content.memo).is_empty());
    }

    #[test]
    fn the_service_flag_is_namespace_slash_name() {
        let service: ServiceRef = "olm/olm-rs-packageserver".parse().unwrap();
        assert_eq!(service, ServiceRef::default());
        for bad in ["olm", "/name", "olm/", "a/b/c"] {
            assert!(bad.parse::<ServiceRef>().is_err(), "{bad}");
        }
    }
}
