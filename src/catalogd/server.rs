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

/// Answers one request (see [`route`]). Routing is CPU work (a filtered body compressed on the
/// fly, a catalog's body written on its first request after a reload), so the server calls it on
/// the blocking pool, never on a runtime worker.
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
    routes: &dyn Routes,
    req: &Request<Incoming>,
    client: SocketAddr,
) -> hyper::Response<Full<bytes::Bytes>> {
    let routed = routes.route(&route::Request {
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
        let routes = Arc::clone(&routes);
        let mut stopping = stopping.clone();
        connections.spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let routes = Arc::clone(&routes);
                async move {
                    let routed = tokio::task::spawn_blocking(move || answer(routes.as_ref(), &req, client));
                    Ok::<_, Infallible>(routed.await.unwrap_or_else(|err| {
                        tracing::error!(error = %err, client = %client, "routing a catalog HTTP request failed");
                        let mut response = hyper::Response::new(Full::default());
                        *response.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
                        response
                    }))
                }
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

#[cfg(test)]
mod tests {
    use std::{
        io::{Read, Write},
        sync::{Mutex, mpsc},
    };

    use super::*;

    /// `/slow` waits (up to 10 s) for `/fast` to be routed; `/fast` says it was.
    struct Blocking {
        fast_routed: Mutex<mpsc::Sender<()>>,
        wait: Mutex<mpsc::Receiver<()>>,
    }

    impl Routes for Blocking {
        fn route(&self, req: &route::Request<'_>) -> route::Response {
            let status = if req.path == "/slow" {
                let waited = self.wait.lock().unwrap().recv_timeout(Duration::from_secs(10));
                if waited.is_ok() { 200 } else { 504 }
            } else {
                let _ = self.fast_routed.lock().unwrap().send(());
                200
            };
            route::Response {
                status,
                headers: Vec::new(),
                body: bytes::Bytes::new(),
            }
        }
    }

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text.lines().next().unwrap_or_default().to_owned()
    }

    /// On a runtime of one thread, a request whose routing blocks does not hold up another one:
    /// routing runs on the blocking pool.
    #[tokio::test(flavor = "current_thread")]
    async fn a_slow_route_does_not_block_the_runtime() {
        let (tx, rx) = mpsc::channel();
        let routes = Arc::new(Blocking {
            fast_routed: Mutex::new(tx),
            wait: Mutex::new(rx),
        });
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopping) = watch::channel(false);
        let mut stopped = stopping.clone();
        let server = tokio::spawn(serve_routes(routes, listener, async move {
            let _ = stopped.wait_for(|s| *s).await;
        }));
        let slow = tokio::task::spawn_blocking(move || get(addr, "/slow"));
        tokio::time::sleep(Duration::from_millis(200)).await;
        let fast = tokio::task::spawn_blocking(move || get(addr, "/fast"));
        assert_eq!(fast.await.unwrap(), "HTTP/1.1 200 OK");
        assert_eq!(slow.await.unwrap(), "HTTP/1.1 200 OK");
        stop.send(true).unwrap();
        server.await.unwrap();
    }
}
