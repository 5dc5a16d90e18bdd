//! slots: how many reconciles of one controller run at once, granted in the order they asked.
//!
//! kube-runtime's controller can bound its reconciles itself (`Config::concurrency`), but while
//! every slot is busy the requests that wait are kept in a hash set and taken in hash order, so
//! under sustained load some objects wait until the load ends. Measured with kube-runtime 5 (the
//! test below, concurrency 4, 40 objects each requeued 50 ms after a 20 ms reconcile): 22 of the
//! 40 never ran again in 20 s. The whole-catalog acceptance run saw it as CSVs left `Pending` for
//! five minutes behind a CRD established long before. So the controllers here run
//! kube-runtime's runner unbounded and take a permit from [`Slots`] at the start of each
//! reconcile: tokio's semaphore grants permits first come, first served, so every object that
//! waits gets its turn. A reconcile waiting for its permit still counts as running for
//! kube-runtime, which holds that object's newer requests back as one, as it did before.

use std::sync::Arc;

use tokio::sync::{Semaphore, SemaphorePermit};

/// At most `n` reconciles at once, granted in arrival order.
#[derive(Debug, Clone)]
pub struct Slots(Arc<Semaphore>);

impl Slots {
    /// `n` slots (at least one).
    #[must_use]
    pub fn new(n: usize) -> Self {
        Self(Arc::new(Semaphore::new(n.max(1))))
    }

    /// Waits for a slot, after every reconcile that asked before; the slot is free again when the
    /// permit is dropped.
    pub async fn acquire(&self) -> Option<SemaphorePermit<'_>> {
        // The semaphore is never closed, so this never answers `None`.
        self.0.acquire().await.ok()
    }
}

#[cfg(test)]
mod tests;
