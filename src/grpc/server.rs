//! server: the `api.Registry` tonic service over a [`Registry`], beside the standard
//! `grpc.health.v1.Health` service, until a shutdown signal.
//!
//! Each RPC is one call into [`Registry`] (pure) plus logging: a `debug` event per request with
//! the method, its arguments and its outcome (`RUST_LOG=olm_rs::grpc=debug` shows them). Streams
//! convert one bundle per message as the client reads, so `ListBundles` over a large catalog never
//! holds every message at once.
//!
//! Health answers `SERVING` for the whole server (`""`), for `api.Registry`, and for `Registry`,
//! the service name OLM's registry client asks about (`opm serve` answers `SERVING` to any name).
//!
//! Shutdown is graceful: when the `shutdown` future completes the listener closes, in-flight
//! requests finish, then [`serve`] returns.
//!
//! What is served is asked of a [`Source`] at every request: a fixed [`Registry`]
//! (`kubectl-olm catalog serve`), or whatever catalog a CatalogSource has in the controller's
//! cache at that moment (`olm-controller run --serve-grpc`), which answers `UNAVAILABLE` while
//! there is none.

use std::{future::Future, net::SocketAddr, pin::Pin, sync::Arc};

use futures::{Stream, stream};
use tokio::net::TcpListener;
use tonic::{Request, Response, Status, transport::server::TcpIncoming};
use tonic_health::ServingStatus;
use tracing::debug;

use crate::grpc::{
    api::{self, registry_server::RegistryServer},
    query::{QueryError, Registry},
};

/// Failures of the server itself (never of one request).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}; pick a free port or another address (e.g. --grpc 127.0.0.1:50051)")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The server stopped with a transport error.
    #[error("the gRPC server failed")]
    Transport(#[source] tonic::transport::Error),
}

/// How the server runs.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Largest request accepted, in bytes (tonic's default, 4 MiB, when `None`).
    pub max_request_bytes: Option<usize>,
}

type Answers<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

fn status(err: QueryError) -> Status {
    match err {
        QueryError::NotFound(message) => Status::not_found(message),
        QueryError::Convert(err) => Status::internal(err.to_string()),
    }
}

/// Logs one answered request at debug level and turns the error into a status.
fn answered<T>(method: &str, args: &str, result: Result<T, QueryError>) -> Result<T, Status> {
    match result {
        Ok(value) => {
            debug!(method, args, "answered");
            Ok(value)
        }
        Err(err) => {
            debug!(method, args, error = %err, "refused");
            Err(status(err))
        }
    }
}

fn streamed<T: Send + 'static>(
    method: &str,
    args: &str,
    result: Result<Vec<T>, QueryError>,
) -> Result<Response<Answers<T>>, Status> {
    let items = answered(method, args, result)?;
    Ok(Response::new(Box::pin(stream::iter(items.into_iter().map(Ok)))))
}

/// Where a server finds the registry to answer a request from.
pub trait Source: Send + Sync + 'static {
    /// The registry to answer from now, or why there is none (sent as `UNAVAILABLE`).
    ///
    /// # Errors
    /// A message naming what is not served and why.
    fn registry(&self) -> Result<Arc<Registry>, String>;
}

impl Source for Arc<Registry> {
    fn registry(&self) -> Result<Arc<Registry>, String> {
        Ok(Arc::clone(self))
    }
}

/// The `api.Registry` service.
#[derive(Clone)]
pub struct RegistryService {
    source: Arc<dyn Source>,
}

impl std::fmt::Debug for RegistryService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryService").finish_non_exhaustive()
    }
}

impl RegistryService {
    /// A service answering from `registry`.
    #[must_use]
    pub fn new(registry: Arc<Registry>) -> Self {
        Self {
            source: Arc::new(registry),
        }
    }

    /// A service answering from whatever `source` holds at each request.
    #[must_use]
    pub fn from_source(source: Arc<dyn Source>) -> Self {
        Self { source }
    }

    fn registry(&self, method: &str) -> Result<Arc<Registry>, Status> {
        self.source.registry().map_err(|message| {
            debug!(method, error = %message, "unavailable");
            Status::unavailable(message)
        })
    }
}

#[tonic::async_trait]
impl api::registry_server::Registry for RegistryService {
    type ListPackagesStream = Answers<api::PackageName>;
    type GetChannelEntriesThatReplaceStream = Answers<api::ChannelEntry>;
    type GetChannelEntriesThatProvideStream = Answers<api::ChannelEntry>;
    type GetLatestChannelEntriesThatProvideStream = Answers<api::ChannelEntry>;
    type ListBundlesStream = Answers<api::Bundle>;

    async fn list_packages(
        &self,
        _: Request<api::ListPackageRequest>,
    ) -> Result<Response<Self::ListPackagesStream>, Status> {
        let registry = self.registry("ListPackages")?;
        let names = registry.list_packages();
        let names = names.into_iter().map(|name| api::PackageName { name }).collect();
        streamed("ListPackages", "", Ok(names))
    }

    async fn get_package(
        &self,
        request: Request<api::GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        let registry = self.registry("GetPackage")?;
        let r = request.into_inner();
        answered("GetPackage", &r.name, registry.get_package(&r.name)).map(Response::new)
    }

    async fn get_bundle(
        &self,
        request: Request<api::GetBundleRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let registry = self.registry("GetBundle")?;
        let r = request.into_inner();
        let args = format!("{}/{}/{}", r.pkg_name, r.channel_name, r.csv_name);
        let result = registry.get_bundle(&r.pkg_name, &r.channel_name, &r.csv_name);
        answered("GetBundle", &args, result).map(Response::new)
    }

    async fn get_bundle_for_channel(
        &self,
        request: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let registry = self.registry("GetBundleForChannel")?;
        let r = request.into_inner();
        let args = format!("{}/{}", r.pkg_name, r.channel_name);
        let result = registry.get_bundle_for_channel(&r.pkg_name, &r.channel_name);
        answered("GetBundleForChannel", &args, result).map(Response::new)
    }

    async fn get_channel_entries_that_replace(
        &self,
        request: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        let registry = self.registry("GetChannelEntriesThatReplace")?;
        let r = request.into_inner();
        let result = registry.get_channel_entries_that_replace(&r.csv_name);
        streamed("GetChannelEntriesThatReplace", &r.csv_name, result)
    }

    async fn get_bundle_that_replaces(
        &self,
        request: Request<api::GetReplacementRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let registry = self.registry("GetBundleThatReplaces")?;
        let r = request.into_inner();
        let args = format!("{} in {}/{}", r.csv_name, r.pkg_name, r.channel_name);
        let result = registry.get_bundle_that_replaces(&r.csv_name, &r.pkg_name, &r.channel_name);
        answered("GetBundleThatReplaces", &args, result).map(Response::new)
    }

    async fn get_channel_entries_that_provide(
        &self,
        request: Request<api::GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        let registry = self.registry("GetChannelEntriesThatProvide")?;
        let r = request.into_inner();
        let args = format!("{}/{}/{}", r.group, r.version, r.kind);
        let result = registry.get_channel_entries_that_provide(&r.group, &r.version, &r.kind);
        streamed("GetChannelEntriesThatProvide", &args, result)
    }

    async fn get_latest_channel_entries_that_provide(
        &self,
        request: Request<api::GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        let registry = self.registry("GetLatestChannelEntriesThatProvide")?;
        let r = request.into_inner();
        let args = format!("{}/{}/{}", r.group, r.version, r.kind);
        let result = registry.get_latest_channel_entries_that_provide(&r.group, &r.version, &r.kind);
        streamed("GetLatestChannelEntriesThatProvide", &args, result)
    }

    async fn get_default_bundle_that_provides(
        &self,
        request: Request<api::GetDefaultProviderRequest>,
    ) -> Result<Response<api::Bundle>, Status> {
        let registry = self.registry("GetDefaultBundleThatProvides")?;
        let r = request.into_inner();
        let args = format!("{}/{}/{}", r.group, r.version, r.kind);
        let result = registry.get_default_bundle_that_provides(&r.group, &r.version, &r.kind);
        answered("GetDefaultBundleThatProvides", &args, result).map(Response::new)
    }

    async fn list_bundles(
        &self,
        _: Request<api::ListBundlesRequest>,
    ) -> Result<Response<Self::ListBundlesStream>, Status> {
        let registry = self.registry("ListBundles")?;
        let keys = registry.bundle_keys();
        debug!(method = "ListBundles", messages = keys.len(), "streaming");
        let messages = stream::iter(keys).map(move |(package, channel, name)| {
            registry.listed_bundle(&package, &channel, &name).map_err(status)
        });
        Ok(Response::new(Box::pin(messages)))
    }
}

use futures::StreamExt as _;

/// Binds `addr` (port 0 picks a free port; the listener says which).
///
/// # Errors
/// [`ServeError::Bind`].
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Serves `registry` on `listener` until `shutdown` completes, then drains in-flight requests.
///
/// # Errors
/// [`ServeError::Transport`] when the server fails.
pub async fn serve(
    registry: Arc<Registry>,
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    serve_source(Arc::new(registry), listener, options, shutdown).await
}

/// Serves what `source` holds at each request on `listener` until `shutdown` completes, then
/// drains in-flight requests.
///
/// # Errors
/// [`ServeError::Transport`] when the server fails.
pub async fn serve_source(
    source: Arc<dyn Source>,
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter.set_serving::<RegistryServer<RegistryService>>().await;
    for name in ["", "Registry"] {
        reporter.set_service_status(name, ServingStatus::Serving).await;
    }
    let mut service = RegistryServer::new(RegistryService::from_source(source));
    if let Some(limit) = options.max_request_bytes {
        service = service.max_decoding_message_size(limit);
    }
    tonic::transport::Server::builder()
        .add_service(health)
        .add_service(service)
        .serve_with_incoming_shutdown(TcpIncoming::from(listener), shutdown)
        .await
        .map_err(ServeError::Transport)
}
