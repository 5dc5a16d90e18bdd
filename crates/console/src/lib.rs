//! olm-console: the olm-rs web console (issue 26): catalogs and their packages, a package's
//! upgrade graphs drawn as SVG, installed operators across namespaces, and a pending InstallPlan
//! with its preview and an Approve button; live through server-sent events.
//!
//! # Why a crate of its own
//!
//! The console is a separate product with its own dependencies (axum's routing, forms and SSE),
//! and both olm-rs binaries start it (`kubectl olm console`; `olm-controller run --console`,
//! read-only). So it must not depend on olm-rs: it defines its own view types ([`view`]) and a
//! data-source trait ([`server::Source`]); olm-rs implements the source over the user's
//! kubeconfig and catalogs (`src/cli/cmd/console/`) and over the controller's caches
//! (`src/controller/console.rs`), and depends on this crate, never the other way round.
//!
//! # Layout
//!
//! - [`view`]: what the pages show, as plain data.
//! - [`escape`]: HTML and query-string escaping, shared by the two renderers.
//! - [`graph`]: an upgrade graph's layout and its SVG (pure).
//! - [`html`]: the pages (pure; every data text escaped).
//! - [`server`]: the routes, the Host and CSRF checks, the SSE stream, the embedded assets
//!   (`assets/console.css`, `assets/console.js`: a small hand-written script, no Node tool chain).

pub mod escape;
pub mod graph;
pub mod html;
pub mod server;
pub mod view;

pub use server::{Options, Source, SourceError, new_token, router, serve};
