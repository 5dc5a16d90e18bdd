//! The local cluster belongs to one suite at a time.
//!
//! The rule it enforces: tests of different suites never use the cluster at the same moment. The
//! suites were separate test binaries, which `cargo test` runs one after the other; now that each
//! package has one test binary (`tests/it/`), their tests would otherwise run side by side, and a
//! suite that restarts the API server (`faults`), runs two controllers for an election
//! (`leader_election`) or runs a controller watching every namespace (`olm_e2e`, `webhooks_e2e`, …)
//! would act on another suite's objects. A test joins the suite that holds the cluster at once; a
//! test of another suite waits until the holder's last test is done. Within a suite nothing
//! changes: its tests run side by side as before, and its own locks order them.
//!
//! Joining is not fair on purpose: a waiting suite does not stop its holder's next tests from
//! joining, so a test that connects twice can never wait for itself. A suite only waits longer.
//!
//! No crate offers a "many readers of one kind" lock (a reader-writer lock has one kind of reader);
//! it is a mutex-guarded count and a [`Notify`], with no I/O.

use std::sync::{Mutex, PoisonError};

use tokio::sync::Notify;

/// Who holds the cluster: a suite (a test file) and how many of its tests.
#[derive(Debug, Default)]
struct Holders {
    suite: Option<&'static str>,
    count: usize,
}

/// A gate that lets the tests of one suite at a time through.
#[derive(Debug)]
pub struct SuiteGate {
    holders: Mutex<Holders>,
    released: Notify,
}

impl Default for SuiteGate {
    fn default() -> Self {
        Self::new()
    }
}

impl SuiteGate {
    /// An open gate.
    pub const fn new() -> Self {
        Self {
            holders: Mutex::new(Holders {
                suite: None,
                count: 0,
            }),
            released: Notify::const_new(),
        }
    }

    /// Enters for `suite`: at once when the gate is free or held by `suite`, else when the suite
    /// holding it has left.
    pub async fn enter(&self, suite: &'static str) -> Pass<'_> {
        let mut told = false;
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            // Registered before the check, so a release between the check and the wait wakes us.
            released.as_mut().enable();
            {
                let mut holders = self.holders.lock().unwrap_or_else(PoisonError::into_inner);
                match holders.suite {
                    Some(holder) if holder != suite => {
                        if !told {
                            eprintln!("{suite}: waiting for {holder} to finish with the cluster");
                            told = true;
                        }
                    }
                    _ => {
                        holders.suite = Some(suite);
                        holders.count += 1;
                        return Pass { gate: self };
                    }
                }
            }
            released.await;
        }
    }

    /// The suite holding the gate, if any.
    pub fn holder(&self) -> Option<&'static str> {
        self.holders.lock().unwrap_or_else(PoisonError::into_inner).suite
    }
}

/// One test's passage: the gate is released when the suite's last pass drops.
#[derive(Debug)]
pub struct Pass<'a> {
    gate: &'a SuiteGate,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut holders = self.gate.holders.lock().unwrap_or_else(PoisonError::into_inner);
        holders.count = holders.count.saturating_sub(1);
        if holders.count == 0 {
            holders.suite = None;
            drop(holders);
            self.gate.released.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn leaked() -> &'static SuiteGate {
        Box::leak(Box::new(SuiteGate::new()))
    }

    #[tokio::test]
    async fn tests_of_one_suite_hold_the_gate_together() {
        let gate = leaked();
        let a = gate.enter("tests/it/olm_e2e.rs").await;
        let b = tokio::time::timeout(Duration::from_secs(1), gate.enter("tests/it/olm_e2e.rs"))
            .await
            .expect("a second test of the same suite enters at once");
        drop(a);
        assert_eq!(
            gate.holder(),
            Some("tests/it/olm_e2e.rs"),
            "held while one test is left"
        );
        drop(b);
        assert_eq!(gate.holder(), None);
    }

    #[tokio::test]
    async fn another_suite_waits_until_the_last_test_of_the_holder_is_done() {
        let gate = leaked();
        let first = gate.enter("tests/it/faults.rs").await;
        let second = gate.enter("tests/it/faults.rs").await;
        let waiter = tokio::spawn(async move {
            let _pass = gate.enter("tests/it/cli_cluster.rs").await;
            gate.holder()
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "entered while faults held the cluster");
        drop(first);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "entered while one faults test was left");
        drop(second);
        let held = tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("woken when the gate was released")
            .expect("the waiting task");
        assert_eq!(held, Some("tests/it/cli_cluster.rs"));
        assert_eq!(gate.holder(), None);
    }
}
