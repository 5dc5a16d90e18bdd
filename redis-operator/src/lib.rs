//! redis_operator: the Redis operator shipped in the olm-rs catalog, which reconciles `RedisCluster`
//! objects.
//!
//! A crate of its own in the olm-rs workspace: it shares no code with the OLM side (it is what OLM
//! installs, not part of OLM). It follows the same split: pure modules decide, a thin shell acts.
//!
//! Pure (no I/O, no clock):
//! - [`crd`]: the `RedisCluster` API (`cache.example.com/v1`, and the deprecated flat `v1alpha1`),
//!   whose generated schemas are the CRD shipped in the latest bundle.
//! - [`config`]: redis.conf rendering and the `spec.redisConfig` deny-list.
//! - [`desired`]: the owned objects (ConfigMap, Services, StatefulSet, PodDisruptionBudget) from a spec.
//! - [`status`]: the status and its conditions from observed pods and the reconcile outcome.
//! - [`cluster_mode::plan`]: slot plans, roles and re-sharding moves of cluster mode.
//! - [`bundle`]: the release history, the permissions the code uses and the registry+v1 bundles
//!   rendered from them.
//! - [`metrics`]: the Prometheus metrics and their text format.
//! - [`convert`]: `v1alpha1` ⇄ `v1` conversion and the ConversionReview answer.
//! - [`validate`]: the AdmissionReview answer, refusing what the operator would refuse.
//!
//! Shell (I/O):
//! - [`controller`]: the reconcile loop against the Kubernetes API.
//! - [`cluster_mode`]: forming and re-sharding a Redis Cluster over RESP.
//! - [`http`]: `/metrics`, `/healthz`, `/readyz`.
//! - [`webhook`]: `POST /convert` and `POST /validate` over TLS with OLM's serving certificate.
pub mod bundle;
pub mod cluster_mode;
pub mod config;
pub mod controller;
pub mod convert;
pub mod crd;
pub mod desired;
pub mod http;
pub mod metrics;
pub mod status;
pub mod validate;
pub mod webhook;
