//! k8s: the controller's only doors to the API server and the network.
//!
//! - [`apply`]: server-side apply with one field manager per controller, status writes that
//!   are skipped when nothing changed, and the dynamic apply of InstallPlan step objects.
//! - [`counted`]: every API request the client sends, counted in the metrics.
//! - [`events`]: core/v1 Events as upstream OLM writes them, repeats counted on one Event.
//! - [`lease`]: leader election with a `coordination.k8s.io/v1` Lease.
//! - [`message`]: a kube error as a readable sentence for statuses and Events.
//! - [`http`]: the `/metrics`, `/healthz` and `/readyz` endpoints.
//! - [`scoped`]: clients acting as a ServiceAccount (scoped installs).

pub mod apply;
pub mod counted;
pub mod events;
pub mod http;
pub mod lease;
pub mod message;
pub mod scoped;
