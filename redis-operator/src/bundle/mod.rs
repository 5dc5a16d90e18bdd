//! bundle: the operator's packaging for OLM, rendered from its code.
//!
//! The registry+v1 bundles in `bundles/redis-operator/` are generated from these modules and
//! checked in (`redis-operator bundles --out bundles/redis-operator`; `tests/it/redis_bundles.rs`
//! fails when the files drift):
//! - [`feature`]: what each release could do;
//! - [`release`]: the release history, and each release's CSV, CRD and metadata;
//! - [`rbac`]: the one list of API permissions the code uses, filtered per release;
//!
//! The files are written with `block_yaml::write`, the kubectl-style writer olm-rs uses too.
pub mod feature;
pub mod rbac;
pub mod release;

pub use feature::Feature;
