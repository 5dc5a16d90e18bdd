//! backoff: how long to wait before retrying an object whose reconcile failed.
//!
//! kube-runtime retries a failed object on the delay the error policy returns, but keeps no count
//! per object. [`PerObject`] keeps that count and forgets it when the object reconciles cleanly,
//! so one broken object backs off while the others don't. The delays double from a first delay up
//! to a cap ([`Policy`]): the OLM controller starts at 1 s, the Redis operator at 5 s; both stop
//! at 5 minutes.

use std::{
    collections::HashMap,
    hash::Hash,
    sync::{Mutex, MutexGuard},
    time::Duration,
};

/// Doubling delays: `first`, `2 × first`, `4 × first`, ..., never more than `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The delay after the first failure.
    pub first: Duration,
    /// The longest delay.
    pub max: Duration,
}

impl Policy {
    /// The delay after the `attempts`-th failure in a row (`attempts` ≥ 1; 0 counts as 1).
    pub fn delay(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(16);
        self.first.saturating_mul(1u32 << doublings).min(self.max)
    }
}

/// 1 s, 2 s, 4 s, ... capped at 5 minutes.
pub const DEFAULT: Policy = Policy {
    first: Duration::from_secs(1),
    max: Duration::from_secs(300),
};

/// [`DEFAULT`]'s delay after the `attempts`-th failure in a row.
pub fn delay(attempts: u32) -> Duration {
    DEFAULT.delay(attempts)
}

/// Failures in a row, per object key.
#[derive(Debug)]
pub struct PerObject<K> {
    policy: Policy,
    attempts: Mutex<HashMap<K, u32>>,
}

impl<K: Hash + Eq> PerObject<K> {
    /// Counts failures under `policy`.
    pub fn new(policy: Policy) -> Self {
        Self {
            policy,
            attempts: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one more failure of `key`; returns how many in a row and how long to wait.
    pub fn fail(&self, key: K) -> (u32, Duration) {
        let mut map = lock(&self.attempts);
        let attempts = map.entry(key).or_insert(0);
        *attempts = attempts.saturating_add(1);
        (*attempts, self.policy.delay(*attempts))
    }

    /// Forgets `key`'s failures (it reconciled cleanly).
    pub fn reset(&self, key: &K) {
        lock(&self.attempts).remove(key);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap() {
        let secs: Vec<u64> = (1..=11).map(|n| delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(delay(u32::MAX), Duration::from_secs(300));
        let five = Policy {
            first: Duration::from_secs(5),
            max: Duration::from_secs(300),
        };
        let secs: Vec<u64> = (1..=9).map(|n| five.delay(n).as_secs()).collect();
        assert_eq!(secs, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
    }

    #[test]
    fn each_object_backs_off_on_its_own_and_a_success_resets_it() {
        let b = PerObject::new(DEFAULT);
        assert_eq!(b.fail("a"), (1, Duration::from_secs(1)));
        assert_eq!(b.fail("a"), (2, Duration::from_secs(2)));
        assert_eq!(b.fail("b"), (1, Duration::from_secs(1)));
        b.reset(&"a");
        assert_eq!(b.fail("a"), (1, Duration::from_secs(1)));
    }
}
