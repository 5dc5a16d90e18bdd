//! catalogd: OLM v1's catalogd HTTP API (`GET /api/v1/all`, `GET /api/v1/metas`), served from a
//! loaded catalog and read into one.
//!
//! # The rule
//!
//! This is the only module that speaks HTTP for catalogs (hyper to serve, reqwest to read).
//! What a response says is decided by pure functions, tested without a socket; the I/O around
//! them stays thin:
//!
//! - [`content`]: the catalog as catalogd stores it (JSON lines in walk order, keys sorted), its
//!   gzip form and the index `metas` filters;
//! - [`route`]: one request to one response, with catalogd's status codes and headers (`304` on
//!   `If-Modified-Since`, `400` on an unknown `metas` parameter, `404`, `405`, gzip), for one
//!   catalog at the root or many under `/catalogs/[NAMESPACE/]NAME/`;
//! - [`server`]: hyper's HTTP/1.1 server over [`route`], request logging at debug level and
//!   graceful shutdown;
//! - [`client`]: a conditional GET of `BASE/api/v1/all` (TLS verified, optional CA, plain HTTP
//!   only for loopback or listed hosts), decoded by the one catalog loader.

pub mod client;
pub mod content;
pub mod route;
pub mod server;

pub use client::{ClientError, ClientOptions, Fetched, fetch};
pub use content::{Content, ContentError};
pub use server::{Routes, ServeError, serve, serve_routes};
