//! redis_operator: the bundled Redis operator, which reconciles `RedisCluster` objects.
//!
//! The operator follows the same split as the rest of olm-rs: pure modules decide, a thin shell acts.
//!
//! - [`crd`]: the `RedisCluster` API (`cache.example.com/v1`), whose generated schema is the CRD shipped
//!   in the latest bundle.
//! - [`release`]: the release history and the registry+v1 bundles rendered from it.
//! - [`rbac`]: the permissions the code uses, rendered into each CSV.
//! - [`manifest_yaml`]: the deterministic YAML writer the bundle files are rendered with.
pub mod cluster_mode;
pub mod config;
pub mod controller;
pub mod crd;
pub mod desired;
pub mod http;
pub mod manifest_yaml;
pub mod metrics;
pub mod rbac;
pub mod release;
pub mod status;
