//! grpc: the registry gRPC API of OLM v0 catalogs (`api.Registry`, what `opm serve` exposes and
//! OLM's catalog-operator reads), served from and read into the catalog [`Model`].
//!
//! # The rule
//!
//! This is the only module that speaks gRPC (tonic). Everything a message says is decided by pure
//! functions over the model, tested without a socket; the tonic plumbing around them stays thin:
//!
//! - [`api`]: the messages and the tonic client/server, generated at build time from our own
//!   `proto/registry.proto` (names and field numbers of operator-registry's `pkg/api`, so upstream
//!   clients and servers interoperate with ours);
//! - [`convert`]: model → messages, with `opm serve`'s semantics (how a bundle's `csvJson`,
//!   `object`, `properties` and `dependencies` are filled), and messages → FBC blobs for the client;
//! - [`query`]: the index a server answers from, one function per RPC, as operator-registry's
//!   `pkg/cache` answers them (heads, replacements, providers, the default provider);
//! - [`server`]: the tonic service over [`query`], the standard `grpc.health.v1` service, request
//!   logging at debug level and graceful shutdown;
//! - [`client`]: reads a whole catalog (`ListPackages` + `GetPackage` + `ListBundles`) into the
//!   same [`DeclarativeConfig`](crate::catalog::DeclarativeConfig) the directory loader produces.
//!
//! [`Model`]: crate::catalog::Model

pub mod client;
pub mod convert;
pub mod query;
pub mod server;

#[cfg(test)]
mod tests;

/// The registry API, generated from `proto/registry.proto` by `build.rs` (prost + tonic).
#[allow(missing_docs, clippy::all, clippy::pedantic, clippy::unwrap_used)]
pub mod api {
    tonic::include_proto!("api");
}

pub use client::{ClientError, ClientOptions, Connection, Fetched, fetch_catalog};
pub use query::{IndexError, QueryError, Registry};
pub use server::{ServeError, ServeOptions, Source, serve, serve_source};
