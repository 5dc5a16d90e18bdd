//! lease: the controller's leader election, the workspace's shared [`operator_runtime::lease`]
//! (client-go's protocol, with the term timed on the observer's clock).

pub use operator_runtime::lease::{AcquireError, LeaderElector, Timing, identity};
