//! lease: leader election with a `coordination.k8s.io/v1` Lease, so two replicas never both act.
//!
//! The protocol is client-go's (`tools/leaderelection/leaderelection.go`):
//! - a replica may take the Lease when nobody holds it, when it already holds it, or when the
//!   holder's term has expired;
//! - **the term is timed on the observer's own clock**: a candidate remembers when *it* last saw
//!   the Lease record change (holder, renew time, transitions) and considers the holder gone
//!   only when `leaseDurationSeconds` have passed on its own monotonic clock since then. The
//!   holder's `renewTime` is never compared with the local wall clock, so a node whose clock is
//!   ahead or behind can neither steal a live Lease nor keep a dead one;
//! - every write is an optimistic update (the read `resourceVersion` is sent back), so two
//!   replicas racing for an expired Lease cannot both win: one gets a 409 Conflict and waits;
//! - the holder renews every `renew_every`; when renewals fail for longer than the lease
//!   duration it must assume it lost the Lease and stop. On shutdown the holder releases the
//!   Lease (empty holder) so a successor can start at once;
//! - **a Lease naming our identity that this process did not take is not ours** (client-go would
//!   take it at once, so two replicas sharing a `POD_NAME` would both lead): it is waited out like
//!   any other holder's, and when it is renewed meanwhile, a live twin holds it and the candidate
//!   refuses to start ([`AcquireError::DuplicateIdentity`]). A restarted process with the same
//!   identity simply waits one term.
//!
//! Failover after a crash takes at most the lease duration plus one retry period (10 s + 2 s by
//! default, as [`Timing`]); both are flags of olm-controller (the Redis operator does not elect a leader).
//!
//! [`observe`] and [`decide`] are the pure part and are unit-tested; [`LeaderElector`] does the
//! I/O. kube-runtime has no leader election; we keep this small module rather than
//! `kube-lease-manager` or `kubert::lease`, whose kube versions trail the kube 5 we build on.

use std::{
    sync::{
        Mutex, MutexGuard,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{ObjectMeta, PostParams},
};

/// What a candidate should do about a Lease it has just read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseDecision {
    /// Take (or keep) the Lease: nobody holds it, we hold it, or the holder's term expired.
    Take {
        /// True when the holder changes (the transitions counter goes up).
        new_holder: bool,
    },
    /// Someone else holds a valid Lease; try again after this long.
    Wait(Duration),
}

/// The part of a Lease record whose change proves the holder is alive.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    holder: String,
    renew_time: Option<Timestamp>,
    acquire_time: Option<Timestamp>,
    transitions: Option<i32>,
    duration_secs: i32,
}

impl Record {
    /// The record of `spec` (an absent Lease is an empty record).
    pub fn of(spec: Option<&LeaseSpec>) -> Self {
        let Some(spec) = spec else {
            return Self::default();
        };
        Self {
            holder: spec.holder_identity.clone().unwrap_or_default(),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
            transitions: spec.lease_transitions,
            duration_secs: spec.lease_duration_seconds.unwrap_or(15).max(1),
        }
    }
}

/// A record and the local (monotonic) time this candidate first saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// The record.
    pub record: Record,
    /// When this candidate first saw it, on its own clock.
    pub at: Instant,
}

/// The observation after reading `spec` at `now`: the previous one if the record did not change
/// (its clock keeps running), a fresh one if it did.
pub fn observe(previous: Option<&Observed>, spec: Option<&LeaseSpec>, now: Instant) -> Observed {
    let record = Record::of(spec);
    match previous {
        Some(prev) if prev.record == record => prev.clone(),
        _ => Observed { record, at: now },
    }
}

/// Whether the Lease, last seen as `previous` and now as `spec`, was renewed meanwhile under our
/// identity `me` by someone else (this process does not hold it): a twin with our identity is
/// alive.
pub fn twin_renewed(previous: Option<&Observed>, spec: Option<&LeaseSpec>, me: &str, mine: bool) -> bool {
    let record = Record::of(spec);
    !mine
        && record.holder == me
        && previous.is_some_and(|prev| prev.record.holder == me && prev.record != record)
}

/// Decides whether `me` may take the Lease it observed, at `now` on its own clock. `mine` says
/// whether this process holds it (its last write took or renewed it): a Lease naming `me` that
/// this process never took is another process's, and waited out like any other.
pub fn decide(observed: &Observed, me: &str, mine: bool, now: Instant) -> LeaseDecision {
    let holder = observed.record.holder.as_str();
    if holder.is_empty() {
        return LeaseDecision::Take { new_holder: true };
    }
    if holder == me && mine {
        return LeaseDecision::Take { new_holder: false };
    }
    let term = Duration::from_secs(u64::try_from(observed.record.duration_secs).unwrap_or(15));
    let expires = observed.at + term;
    if now < expires {
        LeaseDecision::Wait(expires - now)
    } else {
        LeaseDecision::Take { new_holder: true }
    }
}

/// The identity of this replica: `POD_NAME` when set (unique per pod), else the host name or
/// `replica`, with a random suffix, so two processes on one host never share an identity.
pub fn identity(pod_name: Option<String>, host_name: Option<String>) -> String {
    if let Some(pod) = pod_name.filter(|p| !p.is_empty()) {
        return pod;
    }
    let base = host_name
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "replica".into());
    format!("{base}-{:08x}", random_suffix())
}

fn random_suffix() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    // Truncation keeps 32 random bits.
    #[allow(clippy::cast_possible_truncation, reason = "any 32 bits of the hash will do")]
    let short = h.finish() as u32;
    short
}

/// The term of the Lease and how often it is renewed (and re-read by a standby).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// `leaseDurationSeconds`: how long a holder that stopped renewing keeps the Lease.
    pub lease_duration: Duration,
    /// How often the holder renews and a standby re-reads.
    pub retry_period: Duration,
}

impl Default for Timing {
    /// A 10 s term, renewed every 2 s: a standby takes over at most 12 s after the holder
    /// crashed (at once after a clean shutdown, which releases the Lease).
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl Timing {
    /// A timing, refused when the holder could not renew within its term.
    ///
    /// # Errors
    /// [`TimingError`] when the term is not whole seconds of at least one, or the retry period
    /// is zero or more than half of it (the binary names its flag).
    pub fn new(lease_duration: Duration, retry_period: Duration) -> Result<Self, TimingError> {
        if lease_duration < Duration::from_secs(1) || lease_duration.subsec_nanos() != 0 {
            return Err(TimingError::LeaseDuration(lease_duration));
        }
        if retry_period.is_zero() || retry_period * 2 > lease_duration {
            return Err(TimingError::RetryPeriod {
                retry_period,
                lease_duration,
            });
        }
        Ok(Self {
            lease_duration,
            retry_period,
        })
    }
}

/// A [`Timing`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TimingError {
    /// The term is under a second or not whole seconds.
    #[error("the lease duration {0:?} must be whole seconds, at least 1s (a Lease counts whole seconds)")]
    LeaseDuration(Duration),
    /// The holder could not renew before its term ends.
    #[error(
        "the retry period {retry_period:?} must be above zero and at most half of the lease duration {lease_duration:?}, so the holder renews before its term ends"
    )]
    RetryPeriod {
        /// The retry period asked for.
        retry_period: Duration,
        /// The term asked for.
        lease_duration: Duration,
    },
}

/// Why a candidate gave up.
#[derive(Debug, thiserror::Error)]
pub enum AcquireError {
    /// Another live process renews the Lease under our identity.
    #[error(
        "another replica with identity {identity:?} holds the leader Lease {lease} and keeps renewing it; give each replica its own identity (POD_NAME from the downward API, or leave POD_NAME unset for a random suffix)"
    )]
    DuplicateIdentity {
        /// Our (shared) identity.
        identity: String,
        /// The Lease, `namespace/name`.
        lease: String,
    },
}

/// A candidate for one Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    lease: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    /// How often the holder renews (and a standby re-reads the Lease).
    pub renew_every: Duration,
    observed: Mutex<Option<Observed>>,
    /// Whether this process holds the Lease (its last write took or renewed it).
    mine: AtomicBool,
}

impl LeaderElector {
    /// A candidate called `identity` for the Lease `namespace/name` with the given [`Timing`].
    pub fn new(client: kube::Client, namespace: &str, name: &str, identity: String, timing: Timing) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            lease: format!("{namespace}/{name}"),
            name: name.to_owned(),
            identity,
            lease_duration: timing.lease_duration,
            renew_every: timing.retry_period,
            observed: Mutex::new(None),
            mine: AtomicBool::new(false),
        }
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    fn observed(&self) -> MutexGuard<'_, Option<Observed>> {
        match self.observed.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Tries once to take or renew the Lease. `Ok(None)` = we hold it now;
    /// `Ok(Some(wait))` = someone else does; `Err(Ok(..))` = a twin with our identity holds it.
    ///
    /// # Errors
    /// The API server's answer when reading or writing the Lease fails (a 409 Conflict is not an
    /// error: another replica won the race), or the duplicate identity.
    pub async fn try_acquire(&self) -> Result<Option<Duration>, Result<AcquireError, kube::Error>> {
        let current = self.api.get_opt(&self.name).await.map_err(Err)?;
        let spec = current.as_ref().and_then(|l| l.spec.as_ref());
        let local_now = Instant::now();
        let mine = self.mine.load(Ordering::SeqCst);
        let decision = {
            let mut observed = self.observed();
            if twin_renewed(observed.as_ref(), spec, &self.identity, mine) {
                return Err(Ok(AcquireError::DuplicateIdentity {
                    identity: self.identity.clone(),
                    lease: self.lease.clone(),
                }));
            }
            let seen = observe(observed.as_ref(), spec, local_now);
            let decision = decide(&seen, &self.identity, mine, local_now);
            *observed = Some(seen);
            decision
        };
        let new_holder = match decision {
            LeaseDecision::Wait(wait) => {
                self.mine.store(false, Ordering::SeqCst);
                return Ok(Some(wait.min(self.renew_every)));
            }
            LeaseDecision::Take { new_holder } => new_holder,
        };
        let now = Timestamp::now();
        let old = spec.cloned().unwrap_or_default();
        let spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(i32::try_from(self.lease_duration.as_secs()).unwrap_or(15)),
            acquire_time: if new_holder {
                Some(MicroTime(now))
            } else {
                old.acquire_time.clone()
            },
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(
                old.lease_transitions.unwrap_or(0) + i32::from(new_holder && current.is_some()),
            ),
            ..LeaseSpec::default()
        };
        let result = match current {
            Some(mut lease) => {
                lease.spec = Some(spec);
                self.api.replace(&self.name, &PostParams::default(), &lease).await
            }
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
        };
        match result {
            Ok(_) => {
                self.mine.store(true, Ordering::SeqCst);
                Ok(None)
            }
            // Someone else wrote the Lease between our read and write: they won this round.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                self.mine.store(false, Ordering::SeqCst);
                Ok(Some(self.renew_every))
            }
            Err(err) => Err(Err(err)),
        }
    }

    /// Blocks until this candidate holds the Lease.
    ///
    /// # Errors
    /// [`AcquireError::DuplicateIdentity`] when a live twin holds it under our identity.
    pub async fn acquire(&self) -> Result<(), AcquireError> {
        let mut warned = false;
        loop {
            match self.try_acquire().await {
                Ok(None) => return Ok(()),
                Ok(Some(wait)) => {
                    let holder = self
                        .observed()
                        .as_ref()
                        .map(|o| o.record.holder.clone())
                        .unwrap_or_default();
                    if holder == self.identity && !warned {
                        warned = true;
                        tracing::warn!(
                            identity = %self.identity,
                            "the leader lease names our own identity but this process never took it: waiting out its term (a restart), and refusing to start if it is renewed (a second replica with the same identity)"
                        );
                    }
                    tracing::debug!(holder_wait = ?wait, "lease held by another replica");
                    tokio::time::sleep(wait).await;
                }
                Err(Ok(twin)) => return Err(twin),
                Err(Err(err)) => {
                    tracing::warn!(error = %err, "failed to read or write the leader lease");
                    tokio::time::sleep(self.renew_every).await;
                }
            }
        }
    }

    /// Renews the Lease until a renewal has failed for a whole lease duration, or another replica
    /// holds it (returns then: the caller must stop acting).
    pub async fn keep_renewing(&self) {
        let mut last_ok = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.renew_every).await;
            match self.try_acquire().await {
                Ok(None) => last_ok = tokio::time::Instant::now(),
                Ok(Some(_)) | Err(Ok(_)) => {
                    tracing::error!("lost the leader lease to another replica");
                    return;
                }
                Err(Err(err)) => {
                    tracing::warn!(error = %err, "failed to renew the leader lease");
                    if last_ok.elapsed() >= self.lease_duration {
                        return;
                    }
                }
            }
        }
    }

    /// Gives the Lease up (empty holder), if we still hold it.
    pub async fn release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else {
            return;
        };
        let holds =
            lease.spec.as_ref().and_then(|s| s.holder_identity.as_deref()) == Some(self.identity.as_str());
        if !holds {
            return;
        }
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = None;
            spec.renew_time = None;
        }
        self.mine.store(false, Ordering::SeqCst);
        if let Err(err) = self.api.replace(&self.name, &PostParams::default(), &lease).await {
            tracing::warn!(error = %err, "failed to release the leader lease");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn held_by(holder: &str, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(wall(renewed))),
            ..LeaseSpec::default()
        }
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_missing_or_released_lease_is_taken() {
        let t0 = Instant::now();
        assert_eq!(
            decide(&observe(None, None, t0), "a", false, t0),
            LeaseDecision::Take { new_holder: true }
        );
        let released = LeaseSpec::default();
        assert_eq!(
            decide(&observe(None, Some(&released), t0), "a", false, t0),
            LeaseDecision::Take { new_holder: true }
        );
    }

    #[test]
    fn the_holder_keeps_its_lease() {
        let t0 = Instant::now();
        let seen = observe(None, Some(&held_by("a", 0)), t0);
        assert_eq!(
            decide(&seen, "a", true, t0 + secs(100)),
            LeaseDecision::Take { new_holder: false }
        );
    }

    #[test]
    fn a_valid_lease_of_another_replica_makes_us_wait_for_its_remaining_term_on_our_clock() {
        let t0 = Instant::now();
        let seen = observe(None, Some(&held_by("b", 0)), t0);
        assert_eq!(
            decide(&seen, "a", true, t0 + secs(10)),
            LeaseDecision::Wait(secs(5))
        );
    }

    #[test]
    fn an_unchanged_lease_expires_a_term_after_we_first_saw_it() {
        let t0 = Instant::now();
        let first = observe(None, Some(&held_by("b", 0)), t0);
        // Read again 16 s later, unchanged: the observation keeps its first time.
        let again = observe(Some(&first), Some(&held_by("b", 0)), t0 + secs(16));
        assert_eq!(again.at, t0);
        assert_eq!(
            decide(&again, "a", true, t0 + secs(16)),
            LeaseDecision::Take { new_holder: true }
        );
    }

    #[test]
    fn a_renewed_lease_is_not_expired() {
        let t0 = Instant::now();
        let first = observe(None, Some(&held_by("b", 0)), t0);
        // 12 s later the holder renewed (its renewTime moved): the term starts again from now.
        let renewed = observe(Some(&first), Some(&held_by("b", 12)), t0 + secs(12));
        assert_eq!(renewed.at, t0 + secs(12));
        assert_eq!(
            decide(&renewed, "a", true, t0 + secs(20)),
            LeaseDecision::Wait(secs(7))
        );
    }

    #[test]
    fn a_holder_whose_clock_is_far_off_neither_loses_nor_keeps_its_lease_wrongly() {
        let t0 = Instant::now();
        // The holder's clock is 10 minutes behind ours: its renewTime looks long expired, but it
        // keeps renewing, so the record changes and the lease is live.
        let behind = observe(None, Some(&held_by("b", -600)), t0);
        let renewed = observe(Some(&behind), Some(&held_by("b", -595)), t0 + secs(5));
        assert_eq!(
            decide(&renewed, "a", true, t0 + secs(6)),
            LeaseDecision::Wait(secs(14))
        );
        // The holder's clock is 10 minutes ahead and it stopped renewing: its renewTime looks
        // fresh for ten more minutes, yet the lease expires a term after we last saw it change.
        let ahead = observe(None, Some(&held_by("b", 600)), t0);
        let still = observe(Some(&ahead), Some(&held_by("b", 600)), t0 + secs(15));
        assert_eq!(
            decide(&still, "a", true, t0 + secs(15)),
            LeaseDecision::Take { new_holder: true }
        );
    }

    #[test]
    fn without_a_pod_name_two_replicas_on_one_host_get_different_identities() {
        assert_eq!(identity(Some("olm-0".into()), Some("node".into())), "olm-0");
        let a = identity(None, Some("node".into()));
        let b = identity(None, Some("node".into()));
        assert!(a.starts_with("node-") && b.starts_with("node-"), "{a} {b}");
        assert_ne!(a, b);
        assert!(identity(Some(String::new()), None).starts_with("replica-"));
    }

    #[test]
    fn a_lease_naming_our_identity_that_this_process_never_took_is_waited_out() {
        let t0 = Instant::now();
        // Restarted with the same POD_NAME: the dead process's Lease is not ours to renew at once.
        let seen = observe(None, Some(&held_by("a", 0)), t0);
        assert_eq!(
            decide(&seen, "a", false, t0 + secs(3)),
            LeaseDecision::Wait(secs(12))
        );
        let still = observe(Some(&seen), Some(&held_by("a", 0)), t0 + secs(15));
        assert_eq!(
            decide(&still, "a", false, t0 + secs(15)),
            LeaseDecision::Take { new_holder: true }
        );
        // Nobody renewed it meanwhile: no twin.
        assert!(!twin_renewed(Some(&seen), Some(&held_by("a", 0)), "a", false));
    }

    #[test]
    fn a_lease_renewed_under_our_identity_by_another_process_is_a_twin() {
        let t0 = Instant::now();
        let seen = observe(None, Some(&held_by("a", 0)), t0);
        assert!(twin_renewed(Some(&seen), Some(&held_by("a", 2)), "a", false));
        // Our own renewals, another holder's, or a first look are not.
        assert!(!twin_renewed(Some(&seen), Some(&held_by("a", 2)), "a", true));
        assert!(!twin_renewed(Some(&seen), Some(&held_by("b", 2)), "a", false));
        assert!(!twin_renewed(None, Some(&held_by("a", 2)), "a", false));
    }

    #[test]
    fn timings_whose_holder_could_not_renew_in_time_are_refused() {
        assert_eq!(
            Timing::new(secs(10), secs(2)).map(|t| t.lease_duration),
            Ok(secs(10))
        );
        assert_eq!(
            Timing::new(secs(10), secs(6)),
            Err(TimingError::RetryPeriod {
                retry_period: secs(6),
                lease_duration: secs(10)
            })
        );
        assert_eq!(
            Timing::new(Duration::from_millis(500), secs(0)),
            Err(TimingError::LeaseDuration(Duration::from_millis(500)))
        );
        assert_eq!(
            Timing::new(Duration::from_millis(1500), secs(0)),
            Err(TimingError::LeaseDuration(Duration::from_millis(1500)))
        );
        assert!(
            TimingError::LeaseDuration(Duration::from_millis(500))
                .to_string()
                .contains("whole seconds, at least 1s")
        );
        let default = Timing::default();
        assert!(default.lease_duration + default.retry_period <= secs(15));
    }
}
