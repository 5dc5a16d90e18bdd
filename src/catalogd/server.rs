//! server: [`route`] on hyper's HTTP/1.1 server, until a shutdown signal.
//!
//! Each request is logged at debug level (method, path and query, status, bytes, client), as
//! catalogd logs its requests. A client has [`READ_TIMEOUT`] to send its request head. Shutdown
//! is graceful: when the `shutdown` future completes the listener closes, every connection
//! finishes the response in flight and closes, and [`serve`] returns (after at most
//! [`DRAIN_TIMEOUT`], for clients that keep reading slowly).
//!
//! What answers is a [`Routes`]: one [`Content`] at the root (`kubectl-olm catalog serve`), or
//! many catalogs under `/catalogs/...` ([`super::route::Catalogs`], `olm-controller run
//! --serve-http`).

use std::{convert::Infallible, future::Future, net::SocketAddr, sync::Arc, time::Duration};

use http_body_util::Full;
use hyper::{Request, body::Incoming, header::HeaderValue, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::{net::TcpListener, sync::watch, task::JoinSet};
use tracing::debug;

use super::{
    content::Content,
    route::{self, route},
};

/// How long a client may take to send its request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits for responses in flight.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(20);

/// Failures of the server itself (never of one request).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}; pick a free port or another address (e.g. --http 127.0.0.1:8080)")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Binds `addr` (port 0 picks a free port; the listener says which).
///
/// # Errors
/// [`ServeError::Bind`].
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

fn header<'a>(req: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Answers one request (pure: see [`route`]).
pub trait Routes: Send + Sync + 'static {
    /// The response to `req`.
    fn route(&self, req: &route::Request<'_>) -> route::Response;
}

impl Routes for Content {
    fn route(&self, req: &route::Request<'_>) -> route::Response {
        route(self, req)
    }
}

fn answer(
    content: &dyn Routes,
    req: &Request<Incoming>,
    client: SocketAddr,
) -> hyper::Response<Full<bytes::Bytes>> {
    let routed = content.route(&route::Request {
        method: req.method().as_str(),
        path: req.uri().path(),
        query: req.uri().query(),
        accept_encoding: header(req, "accept-encoding"),
        if_modified_since: header(req, "if-modified-since"),
        if_unmodified_since: header(req, "if-unmodified-since"),
        if_none_match: req.headers().contains_key("if-none-match"),
    });
    debug!(
        method = %req.method(),
        uri = %req.uri(),
        status = routed.status,
        bytes = routed.body.len(),
        client = %client,
        "handled request"
    );
    let mut response = hyper::Response::new(Full::new(routed.body));
    *response.status_mut() =
        hyper::StatusCode::from_u16(routed.status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in routed.headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// Serves `content` on `listener` until `shutdown` completes, then drains the connections.
pub async fn serve(content: Arc<Content>, listener: TcpListener, shutdown: impl Future<Output = ()>) {
    serve_routes(content, listener, shutdown).await;
}

/// Serves what `routes` answers on `listener` until `shutdown` completes, then drains the
/// connections.
pub async fn serve_routes(
    routes: Arc<dyn Routes>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) {
    let content = routes;
    let (stop, stopping) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, client) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(err) => {
                    tracing::warn!(error = %err, "failed to accept a catalog HTTP connection");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let content = Arc::clone(&content);
        let mut stopping = stopping.clone();
        connections.spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let response = answer(content.as_ref(), &req, client);
                async move { Ok::<_, Infallible>(response) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            let result = tokio::select! {
                result = conn.as_mut() => result,
                _ = stopping.changed() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(err) = result {
                debug!(error = %err, client = %client, "catalog HTTP connection ended with an error");
            }
        });
        // Reap finished connections so the set does not grow with every client.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    let _ = stop.send(true);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        debug!("catalog HTTP connections still open after the drain timeout were closed");
        connections.abort_all();
    }
}
