//! The workspace's shared test helpers (`crates/test-support`), as `support::…` in this package's
//! integration tests, plus [`e2e`]: the helpers of this package's cluster suites.
pub use olm_test_support::*;

#[allow(
    dead_code,
    reason = "helpers kept for the suites as a whole; some are used by one only"
)]
pub mod e2e;
