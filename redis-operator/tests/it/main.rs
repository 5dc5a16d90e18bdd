//! Every integration suite of the Redis operator, as modules of one test binary (the operator and
//! its dependencies are linked once). Suites that use the local cluster take turns on it through
//! `olm_test_support::cluster::TestCluster::connect`, as the separate binaries they were did. Run
//! one suite with `cargo test -p redis-operator --test it <suite>::`.

mod container_image;
mod redis_bundles;
mod redis_cluster_mode;
mod redis_operator_e2e;
mod webhook_tls;
