//! queue: the work queue of the copied-CSV controller, keyed by original CSV, as client-go's
//! workqueue keeps one (no I/O: the runner in the parent module drives it).
//!
//! The rules:
//! - a key waits at most once: adding a key already waiting changes nothing, so a burst of
//!   triggers (500 namespaces created, 500 copies written) is one sync;
//! - a key is synced by one worker at a time: a key added while it is being synced waits until
//!   that sync is done ([`WorkQueue::done`]), then runs once more, so a change seen during a sync
//!   is never lost and never synced twice at once;
//! - keys are handed out in the order they were added;
//! - a key may be scheduled for later ([`WorkQueue::after`]: a resync, or a retry after a
//!   failure); of several schedules of one key the earliest counts, so timers never pile up.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    hash::Hash,
    time::Instant,
};

/// The queue's state (module doc).
#[derive(Debug)]
pub struct WorkQueue<K> {
    waiting: VecDeque<K>,
    queued: HashSet<K>,
    running: HashSet<K>,
    /// Added while running: queued again when done.
    dirty: HashSet<K>,
    scheduled: HashMap<K, Instant>,
}

impl<K> Default for WorkQueue<K> {
    fn default() -> Self {
        Self {
            waiting: VecDeque::new(),
            queued: HashSet::new(),
            running: HashSet::new(),
            dirty: HashSet::new(),
            scheduled: HashMap::new(),
        }
    }
}

impl<K: Clone + Eq + Hash> WorkQueue<K> {
    /// Asks for a sync of `key` now.
    pub fn add(&mut self, key: K) {
        if self.running.contains(&key) {
            self.dirty.insert(key);
        } else if self.queued.insert(key.clone()) {
            self.waiting.push_back(key);
        }
    }

    /// The next key to sync (marked running), if any waits.
    pub fn next(&mut self) -> Option<K> {
        let key = self.waiting.pop_front()?;
        self.queued.remove(&key);
        self.running.insert(key.clone());
        Some(key)
    }

    /// The sync of `key` is over; it waits again if it was added meanwhile.
    pub fn done(&mut self, key: &K) {
        self.running.remove(key);
        if self.dirty.remove(key) {
            self.add(key.clone());
        }
    }

    /// Asks for a sync of `key` at `at` (the earliest of its schedules counts).
    pub fn after(&mut self, key: K, at: Instant) {
        self.scheduled
            .entry(key)
            .and_modify(|when| *when = (*when).min(at))
            .or_insert(at);
    }

    /// Adds every key whose schedule is due at `now`.
    pub fn add_due(&mut self, now: Instant) {
        let due: Vec<K> = self
            .scheduled
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.scheduled.remove(&key);
            self.add(key);
        }
    }

    /// When the next schedule is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.scheduled.values().min().copied()
    }

    /// Keys syncing now.
    #[cfg(test)]
    pub fn running(&self) -> usize {
        self.running.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_burst_of_triggers_for_one_key_is_one_sync_in_arrival_order() {
        let mut q = WorkQueue::default();
        for _ in 0..500 {
            q.add("a");
        }
        q.add("b");
        q.add("a");
        assert_eq!(q.next(), Some("a"));
        assert_eq!(q.next(), Some("b"));
        assert_eq!(q.next(), None);
        assert_eq!(q.running(), 2);
    }

    #[test]
    fn a_key_added_while_it_syncs_runs_once_more_after_and_never_twice_at_once() {
        let mut q = WorkQueue::default();
        q.add("a");
        assert_eq!(q.next(), Some("a"));
        q.add("a");
        q.add("a");
        assert_eq!(q.next(), None, "not while it runs");
        q.done(&"a");
        assert_eq!(q.next(), Some("a"));
        q.done(&"a");
        assert_eq!(q.next(), None, "once more, not twice");
        assert_eq!(q.running(), 0);
    }

    #[test]
    fn of_several_schedules_of_a_key_the_earliest_counts_and_fires_once() {
        let mut q = WorkQueue::default();
        let now = Instant::now();
        q.after("a", now + Duration::from_secs(300));
        q.after("a", now + Duration::from_secs(5));
        q.after("a", now + Duration::from_secs(60));
        assert_eq!(q.next_due(), Some(now + Duration::from_secs(5)));
        q.add_due(now);
        assert_eq!(q.next(), None, "not due yet");
        q.add_due(now + Duration::from_secs(5));
        assert_eq!(q.next(), Some("a"));
        assert_eq!(q.next_due(), None, "one timer, gone once fired");
    }
}
