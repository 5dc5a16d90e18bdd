//! Every integration suite of the root package, as modules of one test binary: the crate, the
//! controller and the CLI are linked once instead of once per suite (a cold `make test` builds one
//! binary here, one in `redis-operator/tests/it`).
//!
//! The rule it keeps: suites that were separate binaries (run one after the other by `cargo test`)
//! still never share the local cluster at the same moment. `TestCluster::connect` hands the
//! cluster to one suite at a time (the suite is the file the call is in); the tests of that suite
//! run side by side as before, each suite's own `SERIAL` lock still orders its controller tests,
//! and suites that need no cluster (CLI snapshots, fixtures, registries, gRPC) run beside any of
//! them. Run one suite with `cargo test --test it <suite>::`.

// Helpers: the workspace's test support plus the root package's cluster helpers, the corpus
// helpers shared with `benches/`, and the OLM v0 object comparisons of two suites.
#[path = "../../benches/support.rs"]
mod corpus;
mod fidelity;
mod support;

mod architecture;
mod bundle_image;
mod catalog_fixtures;
mod catalog_image_e2e;
mod catalogd_http;
mod cli;
mod cli_catalog_fresh;
mod cli_cluster;
mod cli_corpus;
mod cluster_smoke;
mod console_browser;
mod container_image;
mod crds;
mod faults;
mod grpc_interop;
mod leader_election;
mod oci_registry;
mod olm_e2e;
mod operator_condition_e2e;
mod opm_oracle;
mod package_manifests_e2e;
mod pod_network;
mod redis_webhooks_e2e;
mod upstream_fidelity;
mod watch_recovery;
mod webhooks_e2e;
mod yaml_fast_path;
