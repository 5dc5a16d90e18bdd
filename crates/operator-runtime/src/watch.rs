//! watch: no reflector may stay stale without anyone noticing.
//!
//! After a kube-apiserver restart, a watch can be re-established against a server that then says
//! nothing (or a request can hang before the server answers at all); with kube-runtime's defaults
//! such a store stayed stale until the 290 s server-side timeout, while `/readyz` said ok. The rule
//! enforced here, for every watch of every binary:
//!
//! - every watch uses [`config`]: a short server-side timeout ([`WATCH_TIMEOUT`]), so streams are
//!   re-established regularly and kube-runtime's idle check (timeout + 5 s) cuts a dead
//!   connection, bookmarks, and lists served from the API server's watch cache (as client-go's
//!   informers do: a re-list is cheap);
//! - every watch goes through [`WatchHealth::supervised`]: errors (429 while CRDs are installed,
//!   404 for a CRD not installed yet, 5xx, a dropped connection) are retried with [`BACKOFF`]
//!   (0.5 s doubling to 5 s: kube-runtime's default climbs to 30 s, so a watch that failed a few
//!   times during a restart came back up to half a minute after its API server), and every event
//!   received is stamped;
//! - the backoff lives inside the restartable stream, so a forced restart cuts a backoff sleep
//!   short (a restart waited for the sleep to end);
//! - [`supervise`] looks at the stamps every [`TICK`]: a watch silent for longer than
//!   [`STALE_AFTER`] is restarted from a fresh list ([`decide`]); one still silent
//!   [`RELIST_GRACE`] later, or answering only errors for [`FAILING_AFTER`], is reported by
//!   `/readyz` by name ([`is_stale`], [`stale_text`]); and when the API server comes back after an
//!   outage, every watch is re-listed at once instead of waiting for its backoff or its silence
//!   to be noticed. An outage is a failed `/version` probe ([`Probe`]) or most watches failing
//!   at once ([`outage_seen`]: a restart shorter than a probe period, or one the probe's pooled
//!   connection did not see);
//! - every request of the client has a read timeout ([`tune_client`]): a request the API server
//!   accepted and never answers (a restart can leave one) fails after [`READ_TIMEOUT`] instead
//!   of hanging.
//!
//! A healthy watch of a quiet kind yields nothing to stamp: kube-runtime's watcher consumes
//! bookmarks and its re-watch after each [`WATCH_TIMEOUT`] internally. A dead connection is
//! already cut by its idle check; the silence bound only backs up a request that hangs before
//! the server answers, so it is several watch timeouts long, and a quiet store is re-listed (from
//! the watch cache) once per [`STALE_AFTER`], not every minute.
//!
//! [`decide`], [`stale_text`] and [`Probe`] are pure (time passed in); the rest is wiring.

use std::{
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use futures::{Stream, StreamExt};
use kube::runtime::{WatchStreamExt, watcher};

use crate::http::Readiness;

/// The server-side timeout of every watch call (kube-runtime's default is 290 s).
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(30);
/// A watch without any event for this long is re-listed (a quiet store too, since a healthy
/// idle watch yields nothing: the re-list is served from the API server's watch cache, and
/// unchanged objects trigger no reconcile).
pub const STALE_AFTER: Duration = Duration::from_secs(300);
/// How long a forced re-list may take before `/readyz` names the store.
pub const RELIST_GRACE: Duration = Duration::from_secs(30);
/// How long a watch may answer only errors (403, 404, 5xx, refused connections; retried with
/// backoff) before `/readyz` names it.
pub const FAILING_AFTER: Duration = Duration::from_secs(90);
/// How often [`supervise`] looks at the watches.
pub const TICK: Duration = Duration::from_secs(2);
/// How often (and with what timeout) [`supervise`] probes the API server's `/version`.
pub const PROBE_EVERY: Duration = Duration::from_secs(4);
/// How long a request may wait for the API server's next bytes: longer than [`WATCH_TIMEOUT`],
/// so a quiet healthy watch (which the server ends after it) is never cut.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// The retry delays of a failing watch (reset by its next event).
pub const BACKOFF: crate::backoff::Policy = crate::backoff::Policy {
    first: Duration::from_millis(500),
    max: Duration::from_secs(5),
};
/// Re-listing every watch because most of them fail happens at most this often (a cluster
/// where they keep failing, e.g. RBAC withdrawn, is not re-listed at every probe).
pub const RELIST_ALL_AFTER_ERRORS_EVERY: Duration = Duration::from_secs(30);

/// `config` with [`READ_TIMEOUT`] on every request (counted from the request's write, not from
/// when its pooled connection went idle). Every binary builds its client from this.
pub fn tune_client(mut config: kube::Config) -> kube::Config {
    config.read_timeout = Some(READ_TIMEOUT);
    config.reset_reader_on_write = true;
    config
}

/// [`BACKOFF`] as kube-runtime's stream backoff: the delay after the n-th error in a row.
#[derive(Debug, Default)]
struct WatchBackoff {
    errors: u32,
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.errors = self.errors.saturating_add(1);
        Some(BACKOFF.delay(self.errors))
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.errors = 0;
    }
}

/// The `watcher::Config` every watch starts from: [`WATCH_TIMEOUT`], bookmarks (kube-runtime's
/// default) and lists from the watch cache.
pub fn config() -> watcher::Config {
    let secs = u32::try_from(WATCH_TIMEOUT.as_secs()).unwrap_or(u32::MAX);
    watcher::Config::default().timeout(secs).any_semantic()
}

/// What to do with one watch, given how long it has been silent and how long ago it was last
/// restarted (`None`: never).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Events arrive: nothing to do.
    Fresh,
    /// Silent for longer than [`STALE_AFTER`], and no restart is in flight: re-list now.
    Relist,
    /// A re-list was forced recently; give it time.
    Wait,
}

/// Decides what to do with a watch (pure).
pub fn decide(silent_for: Duration, since_restart: Option<Duration>) -> Decision {
    if silent_for < STALE_AFTER {
        return Decision::Fresh;
    }
    match since_restart {
        // A restart newer than the last event is still running (a list can be slow, or the
        // watcher is backing off after errors): do not restart it again before the grace ends.
        Some(ago) if ago < silent_for && ago < RELIST_GRACE => Decision::Wait,
        _ => Decision::Relist,
    }
}

/// Whether `/readyz` reports the watch (pure): silent past [`STALE_AFTER`] + [`RELIST_GRACE`],
/// so a forced re-list did not bring it back either, or answering only errors for
/// [`FAILING_AFTER`] (`failing_for`: since the first error of the current run of errors, so one
/// error on a quiet watch is not reported at once).
pub fn is_stale(silent_for: Duration, failing_for: Option<Duration>) -> bool {
    silent_for >= STALE_AFTER + RELIST_GRACE || failing_for.is_some_and(|f| f >= FAILING_AFTER)
}

/// One line of `/readyz` for a stale watch (pure).
pub fn stale_text(name: &str, silent_for: Duration) -> String {
    format!(
        "{name}: no event for {}s (re-listing; check the API server and this controller's RBAC)",
        silent_for.as_secs()
    )
}

/// The `/readyz` lines of the stale watches among `ages`, optional ones left out (pure).
pub fn stale_lines(ages: &[WatchAge]) -> Vec<String> {
    ages.iter()
        .filter(|a| !a.optional && is_stale(a.silent_for, a.failing_for))
        .map(|a| stale_text(&a.name, a.silent_for))
        .collect()
}

/// Whether most watches answer errors at once (pure): at least two of the watches `/readyz`
/// names, and at least half of them. One kind failing (its CRD missing, its RBAC) is not an
/// outage; the API server restarting fails them all.
pub fn outage_seen(ages: &[WatchAge]) -> bool {
    let watched = ages.iter().filter(|a| !a.optional).count();
    let failing = ages
        .iter()
        .filter(|a| !a.optional && a.failing_for.is_some())
        .count();
    failing >= 2 && failing * 2 >= watched
}

/// Whether the API server went away and came back (pure): fed one probe result at a time.
#[derive(Debug, Default)]
pub struct Probe {
    failed: u32,
}

impl Probe {
    /// Records one probe; `true` when it succeeded after at least one failure (the server
    /// restarted or was unreachable: every watch should re-list).
    pub fn observe(&mut self, ok: bool) -> bool {
        if ok {
            std::mem::take(&mut self.failed) > 0
        } else {
            self.failed = self.failed.saturating_add(1);
            false
        }
    }

    /// Probes failed in a row so far.
    pub fn failures(&self) -> u32 {
        self.failed
    }
}

/// One supervised watch.
#[derive(Debug)]
struct Entry {
    name: String,
    /// Milliseconds since [`WatchHealth`]'s epoch of the last event (or of the watch's creation).
    last_event: AtomicU64,
    /// Milliseconds since the epoch of the last forced restart, `u64::MAX` for never.
    last_restart: AtomicU64,
    /// Milliseconds since the epoch of the first error of the current run of errors (the
    /// watcher is backing off), `u64::MAX` while the last item was an event.
    failing_since: AtomicU64,
    /// Never named in `/readyz` (a kind whose CRD may be missing); still re-listed and reported.
    optional: bool,
    restart: tokio::sync::watch::Sender<u64>,
}

/// A watch's age, as [`supervise`] reports it each tick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchAge {
    /// The watch's name (its store, or `trigger:<kind>`).
    pub name: String,
    /// Time since its last event.
    pub silent_for: Duration,
    /// Time since the first of the errors it has answered since its last event (`None`: its
    /// last answer was an event).
    pub failing_for: Option<Duration>,
    /// Never named in `/readyz` (see [`WatchHealth::supervised_optional`]).
    pub optional: bool,
}

/// The per-watch gauge of seconds since the last event, the same in every binary:
/// register it once under the binary's metric name, and feed it from [`supervise`]'s reports.
#[derive(Clone, Debug, Default)]
pub struct AgeGauge(
    prometheus_client::metrics::family::Family<
        AgeLabels,
        prometheus_client::metrics::gauge::Gauge<f64, AtomicU64>,
    >,
);

/// The label of [`AgeGauge`]: the watch's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
pub struct AgeLabels {
    /// The watch (a store's name, or `trigger:<plural>` for a trigger-only watch).
    pub store: String,
}

impl AgeGauge {
    /// A gauge registered in `registry` as `name`.
    pub fn register(registry: &mut prometheus_client::registry::Registry, name: &str) -> Self {
        let gauge = Self::default();
        registry.register(
            name,
            "Seconds since a watch (a reflector store or a trigger) last received an event",
            gauge.0.clone(),
        );
        gauge
    }

    /// Records every watch's time since its last event.
    pub fn record(&self, ages: &[WatchAge]) {
        for age in ages {
            self.0
                .get_or_create(&AgeLabels {
                    store: age.name.clone(),
                })
                .set(age.silent_for.as_secs_f64());
        }
    }
}

/// The registry of every supervised watch of a process.
#[derive(Debug)]
pub struct WatchHealth {
    epoch: Instant,
    entries: Mutex<Vec<Arc<Entry>>>,
}

impl Default for WatchHealth {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            entries: Mutex::default(),
        }
    }
}

impl WatchHealth {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn entries(&self) -> Vec<Arc<Entry>> {
        match self.entries.lock() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// A supervised watch named `name`: `make` builds a fresh watcher (called again for each
    /// forced re-list), errors are retried with kube-runtime's default backoff, and every event
    /// is stamped.
    pub fn supervised<K, S, F, N>(
        self: &Arc<Self>,
        name: N,
        make: F,
    ) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + use<K, S, F, N>
    where
        N: Into<String>,
        K: Send + 'static,
        S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
        F: FnMut() -> S + Send + 'static,
    {
        self.register(name.into(), false, make)
    }

    /// As [`Self::supervised`], for a watch `/readyz` never names: a kind whose CRD an older
    /// install may lack (its watch answers 404 for good). It is still re-listed when silent and
    /// its age reported.
    pub fn supervised_optional<K, S, F, N>(
        self: &Arc<Self>,
        name: N,
        make: F,
    ) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + use<K, S, F, N>
    where
        N: Into<String>,
        K: Send + 'static,
        S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
        F: FnMut() -> S + Send + 'static,
    {
        self.register(name.into(), true, make)
    }

    fn register<K, S, F>(
        self: &Arc<Self>,
        base: String,
        optional: bool,
        make: F,
    ) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + use<K, S, F>
    where
        K: Send + 'static,
        S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
        F: FnMut() -> S + Send + 'static,
    {
        let (restart, _) = tokio::sync::watch::channel(0);
        let mut entries = match self.entries.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        // Two watches of one kind (e.g. two triggers) get `name`, `name#2`, ...
        let same = entries
            .iter()
            .filter(|e| e.name == base || e.name.starts_with(&format!("{base}#")))
            .count();
        let entry = Arc::new(Entry {
            name: if same == 0 {
                base
            } else {
                format!("{base}#{}", same + 1)
            },
            last_event: AtomicU64::new(self.now_ms()),
            last_restart: AtomicU64::new(u64::MAX),
            failing_since: AtomicU64::new(u64::MAX),
            optional,
            restart,
        });
        entries.push(Arc::clone(&entry));
        drop(entries);
        let health = Arc::clone(self);
        let stamp = Arc::clone(&entry);
        let mut make = make;
        restartable(entry, move || make().backoff(WatchBackoff::default())).inspect(move |event| {
            let now = health.now_ms();
            if event.is_ok() {
                stamp.failing_since.store(u64::MAX, Ordering::Release);
                stamp.last_event.store(now, Ordering::Release);
            } else {
                // Only the first error of a run starts the clock.
                let _ =
                    stamp
                        .failing_since
                        .compare_exchange(u64::MAX, now, Ordering::AcqRel, Ordering::Acquire);
            }
        })
    }

    /// Every watch's time since its last event.
    pub fn ages(&self) -> Vec<WatchAge> {
        let now = self.now_ms();
        self.entries()
            .iter()
            .map(|e| WatchAge {
                name: e.name.clone(),
                silent_for: Duration::from_millis(now.saturating_sub(e.last_event.load(Ordering::Acquire))),
                failing_for: match e.failing_since.load(Ordering::Acquire) {
                    u64::MAX => None,
                    at => Some(Duration::from_millis(now.saturating_sub(at))),
                },
                optional: e.optional,
            })
            .collect()
    }

    /// Restarts the watches [`decide`] says to, or all of them (`all`); returns the names restarted.
    fn restart(&self, all: bool) -> Vec<String> {
        let now = self.now_ms();
        let mut restarted = Vec::new();
        for e in self.entries() {
            let silent_for = Duration::from_millis(now.saturating_sub(e.last_event.load(Ordering::Acquire)));
            let since_restart = match e.last_restart.load(Ordering::Acquire) {
                u64::MAX => None,
                at => Some(Duration::from_millis(now.saturating_sub(at))),
            };
            if all || decide(silent_for, since_restart) == Decision::Relist {
                e.last_restart.store(now, Ordering::Release);
                // The fresh watcher starts a fresh run of errors (and of backoff).
                e.failing_since.store(u64::MAX, Ordering::Release);
                e.restart
                    .send_modify(|generation| *generation = generation.wrapping_add(1));
                restarted.push(e.name.clone());
            }
        }
        restarted
    }
}

/// A stream that rebuilds its watcher whenever `entry`'s restart generation changes.
fn restartable<K, S, F>(
    entry: Arc<Entry>,
    mut make: F,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static
where
    K: Send + 'static,
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    F: FnMut() -> S + Send + 'static,
{
    let current: Pin<Box<S>> = Box::pin(make());
    let changes = entry.restart.subscribe();
    // `entry` rides along so the restart sender lives as long as the stream.
    futures::stream::unfold(
        (entry, changes, make, current),
        |(entry, mut changes, mut make, mut current)| async move {
            loop {
                tokio::select! {
                    biased;
                    changed = changes.changed() => {
                        if changed.is_ok() {
                            tracing::debug!(watch = %entry.name, "restarting the watch from a fresh list");
                            current = Box::pin(make());
                        }
                    }
                    item = current.next() => return item.map(|item| (item, (entry, changes, make, current))),
                }
            }
        },
    )
}

/// Watches the watches until the future is dropped: re-lists silent ones, re-lists all of them
/// when the API server comes back after failed probes, tells `ready` which are stale and hands
/// every watch's age to `report` (the binary's metric).
pub async fn supervise(
    health: Arc<WatchHealth>,
    client: kube::Client,
    ready: Arc<Readiness>,
    mut report: impl FnMut(&[WatchAge]) + Send,
) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut probe = Probe::default();
    let mut last_probe: Option<Instant> = None;
    let mut last_relist_after_errors: Option<Instant> = None;
    loop {
        tick.tick().await;
        let mut all = false;
        let errors_everywhere = outage_seen(&health.ages())
            && last_relist_after_errors.is_none_or(|at| at.elapsed() >= RELIST_ALL_AFTER_ERRORS_EVERY);
        let failures = probe.failures();
        if errors_everywhere {
            if failures == 0 {
                tracing::warn!("most watches answer errors: probing the API server");
            }
            // Counted as a failed probe: the next probe that answers re-lists every watch.
            probe.observe(false);
        }
        if errors_everywhere || last_probe.is_none_or(|at| at.elapsed() >= PROBE_EVERY) {
            last_probe = Some(Instant::now());
            let ok = matches!(
                tokio::time::timeout(PROBE_EVERY, client.apiserver_version()).await,
                Ok(Ok(_))
            );
            all = probe.observe(ok);
            if all {
                if errors_everywhere {
                    last_relist_after_errors = Some(Instant::now());
                }
                tracing::warn!(failures, "the API server answers again: re-listing every watch");
            } else if !ok && failures == 0 {
                tracing::warn!("the API server does not answer /version");
            }
        }
        let restarted = health.restart(all);
        if !all && !restarted.is_empty() {
            tracing::info!(watches = ?restarted, "re-listing watches silent for {}s", STALE_AFTER.as_secs());
        }
        let ages = health.ages();
        ready.set_stale(stale_lines(&ages));
        report(&ages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn a_watch_is_relisted_once_silent_past_the_limit_and_given_time_to_come_back() {
        assert_eq!(decide(S(5), None), Decision::Fresh);
        assert_eq!(decide(STALE_AFTER - S(1), None), Decision::Fresh);
        assert_eq!(decide(STALE_AFTER, None), Decision::Relist);
        // Restarted 3 s ago, silent since before that: the re-list is running.
        assert_eq!(decide(STALE_AFTER + S(3), Some(S(3))), Decision::Wait);
        // The re-list has had its grace and still nothing: restart again.
        assert_eq!(
            decide(STALE_AFTER + RELIST_GRACE, Some(RELIST_GRACE)),
            Decision::Relist
        );
        // An old restart followed by events and a new silence: restart.
        assert_eq!(decide(STALE_AFTER, Some(S(600))), Decision::Relist);
    }

    #[test]
    fn readyz_names_a_watch_only_once_its_relist_failed_too_or_it_kept_failing() {
        assert!(!is_stale(STALE_AFTER, None));
        assert!(is_stale(STALE_AFTER + RELIST_GRACE, None));
        // Answering only errors (RBAC, a missing CRD): named well before the re-list bound.
        assert!(!is_stale(FAILING_AFTER - S(1), Some(FAILING_AFTER - S(1))));
        assert!(is_stale(FAILING_AFTER, Some(FAILING_AFTER)));
        assert!(
            !is_stale(FAILING_AFTER, None),
            "a quiet healthy watch is not stale"
        );
        assert!(
            !is_stale(S(200), Some(S(0))),
            "one error on a watch quiet for long is not reported until the errors last"
        );
        assert_eq!(
            stale_text("clusterserviceversions", S(95)),
            "clusterserviceversions: no event for 95s (re-listing; check the API server and this \
             controller's RBAC)"
        );
    }

    #[test]
    fn a_quiet_healthy_watch_is_relisted_at_most_once_per_several_watch_timeouts() {
        // kube-runtime re-watches every WATCH_TIMEOUT and swallows bookmarks without yielding:
        // a quiet store is silent although healthy, so the forced re-list must not come every
        // minute, and a dead connection is cut by kube-runtime's own idle check (timeout + 5 s).
        assert!(STALE_AFTER >= WATCH_TIMEOUT * 10, "{STALE_AFTER:?}");
        assert_eq!(decide(S(120), None), Decision::Fresh);
        assert!(FAILING_AFTER < STALE_AFTER);
    }

    #[test]
    fn the_probe_asks_for_a_relist_when_the_server_comes_back() {
        let mut probe = Probe::default();
        assert!(!probe.observe(true), "up all along");
        assert!(!probe.observe(false));
        assert!(!probe.observe(false));
        assert_eq!(probe.failures(), 2);
        assert!(probe.observe(true), "back after an outage");
        assert!(!probe.observe(true), "once");
    }

    #[test]
    fn most_watches_failing_at_once_is_an_outage_one_failing_kind_is_not() {
        let age = |name: &str, failing: bool, optional| WatchAge {
            name: name.to_owned(),
            silent_for: S(3),
            failing_for: failing.then_some(S(1)),
            optional,
        };
        let one_kind = [
            age("csvs", true, false),
            age("subs", false, false),
            age("plans", false, false),
        ];
        assert!(!outage_seen(&one_kind), "one kind's RBAC or CRD");
        let most = [
            age("csvs", true, false),
            age("subs", true, false),
            age("plans", false, false),
            age("deployments", false, false),
        ];
        assert!(outage_seen(&most), "half of them");
        let optional_only = [
            age("operators", true, true),
            age("conditions", true, true),
            age("csvs", false, false),
        ];
        assert!(!outage_seen(&optional_only), "optional kinds missing their CRDs");
        assert!(
            !outage_seen(&[age("csvs", true, false)]),
            "a lone watch is one kind"
        );
    }

    #[test]
    fn a_failing_watch_retries_within_seconds_and_every_request_has_a_read_timeout() {
        let delays: Vec<_> = WatchBackoff::default().take(7).collect();
        assert_eq!(
            delays,
            [Duration::from_millis(500), S(1), S(2), S(4), S(5), S(5), S(5)]
        );
        let mut backoff = WatchBackoff::default();
        backoff.nth(5);
        kube::runtime::utils::Backoff::reset(&mut backoff);
        assert_eq!(backoff.next(), Some(Duration::from_millis(500)));

        let config = tune_client(kube::Config::new("https://127.0.0.1:6443".parse().unwrap()));
        assert_eq!(config.read_timeout, Some(READ_TIMEOUT));
        assert!(config.reset_reader_on_write);
        assert!(
            READ_TIMEOUT > WATCH_TIMEOUT + S(5),
            "a quiet healthy watch is never cut"
        );
    }

    #[tokio::test]
    async fn a_restart_cuts_a_backoff_sleep_short() {
        let health = Arc::new(WatchHealth::default());
        let mut built = 0_u32;
        let stream = health.supervised("things", move || {
            built += 1;
            let this = built;
            let items: Vec<Result<watcher::Event<u32>, watcher::Error>> = if this == 1 {
                (0..3).map(|_| Err(watcher::Error::NoResourceVersion)).collect()
            } else {
                vec![Ok(watcher::Event::Apply(this))]
            };
            futures::stream::iter(items).chain(futures::stream::pending())
        });
        let mut stream = Box::pin(stream);
        for _ in 0..3 {
            assert!(matches!(stream.next().await, Some(Err(_))));
        }
        // The third error in a row: the watch now sleeps 2 s before its next try. A restart (the
        // API server is back) must not wait for that sleep.
        assert_eq!(health.restart(true), ["things"]);
        let restarted = Instant::now();
        let next = stream.next().await;
        assert!(matches!(next, Some(Ok(watcher::Event::Apply(2)))), "{next:?}");
        assert!(
            restarted.elapsed() < Duration::from_secs(1),
            "the restart waited {:?} for the backoff",
            restarted.elapsed()
        );
        assert!(health.ages()[0].failing_for.is_none());
    }

    #[test]
    fn the_watch_config_has_a_short_timeout_bookmarks_and_cached_lists() {
        let wc = config();
        assert_eq!(wc.timeout, Some(30));
        assert!(wc.bookmarks);
        assert_eq!(wc.list_semantic, watcher::ListSemantic::Any);
    }

    #[tokio::test]
    async fn a_restart_rebuilds_the_watcher_and_events_are_stamped() {
        let health = Arc::new(WatchHealth::default());
        let mut built = 0_u32;
        let stream = health.supervised("things", move || {
            built += 1;
            let first = built;
            // Each watcher yields its build number once, then stays silent.
            futures::stream::iter([Ok(watcher::Event::Apply(first))]).chain(futures::stream::pending())
        });
        let mut stream = Box::pin(stream);
        assert!(matches!(stream.next().await, Some(Ok(watcher::Event::Apply(1)))));
        assert!(health.ages()[0].silent_for < S(1));
        assert_eq!(
            health.restart(false),
            Vec::<String>::new(),
            "fresh: nothing restarted"
        );
        assert_eq!(health.restart(true), vec!["things".to_owned()]);
        let next = tokio::time::timeout(S(5), stream.next()).await;
        assert!(matches!(next, Ok(Some(Ok(watcher::Event::Apply(2))))), "{next:?}");
        let _twin = health.supervised("things", || {
            futures::stream::pending::<Result<watcher::Event<u32>, _>>()
        });
        let names: Vec<_> = health.ages().into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["things", "things#2"]);
    }

    #[tokio::test]
    async fn an_erroring_watch_is_marked_failing_and_an_optional_one_never_reaches_readyz() {
        let health = Arc::new(WatchHealth::default());
        let failing = health.supervised_optional("operators", || {
            futures::stream::iter([Err::<watcher::Event<u32>, _>(watcher::Error::NoResourceVersion)])
                .chain(futures::stream::pending())
        });
        let mut failing = Box::pin(failing);
        assert!(matches!(failing.next().await, Some(Err(_))));
        let ages = health.ages();
        assert!(ages[0].failing_for.is_some() && ages[0].optional, "{ages:?}");

        let long = |name: &str, failing: bool, optional| WatchAge {
            name: name.to_owned(),
            silent_for: FAILING_AFTER,
            failing_for: failing.then_some(FAILING_AFTER),
            optional,
        };
        assert_eq!(
            stale_lines(&[
                long("csvs", true, false),
                long("operators", true, true),
                long("quiet", false, false),
            ]),
            [stale_text("csvs", FAILING_AFTER)]
        );
    }
}
