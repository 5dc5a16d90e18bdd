//! olm-rs: an Operator Lifecycle Manager compatible catalog and installer for Kubernetes.
//!
//! The crate is split the way the architecture notes ask: a pure core that decides and a thin
//! imperative shell that talks to the outside world.
//!
//! Functional core (synchronous, deterministic, no I/O, no tokio, no kube client):
//! - [`codec`]: the one place YAML/JSON text is turned into values and back.
//! - [`version_range`]: blang/semver range grammar used by `skipRange` and `olm.package.required`.
//! - [`catalog`]: file-based catalog (FBC) documents, the linked model, `opm validate` rules, the
//!   one catalog loader and the legacy ConfigMap catalog format.
//! - [`graph`]: a channel's upgrade graph: head, cycles, stranded entries, next hop, upgrade path.
//! - [`bundle`]: registry+v1 bundle directories (as in-memory file trees) and their FBC rendering.
//! - [`resolve`]: a Subscription's next bundle, its dependencies, and its status (plain-language failures).
//! - [`plan`]: install planning: OperatorGroup targets, InstallPlan steps, the CSV state machine.
//! - [`status`]: condition bookkeeping (timestamps kept unless the status flips) and write skipping.
//! - [`console_view`]: the web console's pages from olm-rs values, for both of its data sources
//!   (`kubectl olm console` and `olm-controller run --console`).
//!
//! Kubernetes API types (no client):
//! - [`api`]: the `operators.coreos.com` custom resources, compatible with upstream OLM.
//!
//! Imperative shell:
//! - [`controller`]: `olm-controller run`: the CatalogSource, OperatorGroup, Subscription,
//!   InstallPlan and CSV controllers on kube-runtime.
//! - [`k8s`]: server-side apply, Events, the leader Lease and the HTTP endpoints.
//! - [`metrics`]: the Prometheus metrics of the controller.
//! - [`telemetry`]: structured logging setup.
//! - [`certs`]: the CA and serving certificates of webhook Deployments (the CSV pipeline's only
//!   randomness).
//! - [`grpc`]: the registry gRPC API (`opm serve`'s): a server over a loaded catalog and a client
//!   reading one into the model.
//! - [`catalogd`]: OLM v1's catalogd HTTP API (`/api/v1/all`, `/api/v1/metas`): a server over a
//!   loaded catalog and a client reading one (conditional GET, gzip, verified TLS).
//! - [`source`]: reads catalogs and bundles from disk or stdin into the core's values.
//! - [`oci`]: all registry I/O: pulling catalog and bundle images (verified, unpacked safely,
//!   cached by digest) and pushing them.
//! - [`cli`]: the `kubectl-olm` command line.
//!
//! Public are the modules the binaries, the integration tests, the benches, the fuzz targets and
//! the Redis operator's end-to-end suite use (`api`, `bundle`, `catalog`, `cli`, `codec`,
//! `catalogd`, `controller`, `graph`, `grpc`, `oci`, `source`, `telemetry`, `version_range`); the rest is
//! `pub(crate)`, so the compiler reports code nothing uses.
#![warn(missing_docs)]

pub mod api;
pub mod bundle;
pub mod catalog;
pub mod catalogd;
pub(crate) mod certs;
pub mod cli;
pub mod codec;
pub(crate) mod console_view;
pub mod controller;
pub mod graph;
pub mod grpc;
pub(crate) mod k8s;
pub(crate) mod metrics;
pub mod oci;
pub(crate) mod plan;
pub(crate) mod resolve;
pub mod source;
pub(crate) mod status;
pub mod telemetry;
pub mod version_range;
