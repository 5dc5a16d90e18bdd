//! The workspace's shared test helpers (`crates/test-support`), as `support::…` in this package's
//! integration tests.
pub use olm_test_support::*;
