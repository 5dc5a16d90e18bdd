//! status_writes: when a status write would only repeat this controller's last one.
//!
//! A reconcile started from a store that has not seen our last status write yet would compute
//! the same status again and write it again. [`StatusWrite`] remembers, per object, the last
//! status written and every resourceVersion known to be older than that write; [`repeats`] is
//! the pure rule.

/// The rule of [`super::Shared::repeats_last_status_write`] for one object's `last` write.
pub(super) fn repeats(
    last: Option<&StatusWrite>,
    resource_version: Option<&str>,
    status: &serde_json::Value,
) -> bool {
    let Some(resource_version) = resource_version else {
        return false;
    };
    last.is_some_and(|last| {
        last.before.iter().any(|rv| rv == resource_version)
            && crate::k8s::apply::same_ignoring_time(&last.status, status)
    })
}

/// How many status writes [`Shared::record_status_write`] remembers before starting over.
pub(super) const MAX_REMEMBERED_STATUS_WRITES: usize = 4096;

/// How many resourceVersions of one object [`StatusWrite::before`] keeps.
pub(super) const MAX_VERSIONS_BEFORE: usize = 16;

/// The last status this controller wrote for an object, with every resourceVersion of the
/// object this controller knows to be older than that write: those its reconciles started
/// from and those its own writes returned (including earlier status writes), up to the write.
/// A store showing one of them has not seen the write yet, however far behind it is.
#[derive(Clone, Debug, Default)]
pub(super) struct StatusWrite {
    pub(super) before: Vec<String>,
    pub(super) after: Option<String>,
    pub(super) status: serde_json::Value,
    pub(super) at: Option<std::time::Instant>,
}

impl StatusWrite {
    /// The record after writing `status` (resourceVersion `after`) from an object seen at the
    /// versions `seen`: what was known to precede the previous write, that write's own version,
    /// and `seen`, now all precede this one.
    pub(super) fn next(
        previous: Option<&Self>,
        seen: Vec<String>,
        after: Option<String>,
        status: serde_json::Value,
    ) -> Self {
        let mut before: Vec<String> = previous
            .map(|p| p.before.iter().cloned().chain(p.after.clone()).collect())
            .unwrap_or_default();
        for rv in seen {
            if !before.contains(&rv) {
                before.push(rv);
            }
        }
        if before.len() > MAX_VERSIONS_BEFORE {
            before.drain(..before.len() - MAX_VERSIONS_BEFORE);
        }
        Self {
            before,
            after,
            status,
            at: Some(std::time::Instant::now()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn status(phase: &str, time: &str) -> serde_json::Value {
        serde_json::json!({"phase": phase, "lastUpdateTime": time})
    }

    pub(super) fn versions(rvs: &[&str]) -> Vec<String> {
        rvs.iter().map(|rv| (*rv).to_owned()).collect()
    }

    #[test]
    pub(super) fn a_status_write_repeats_only_while_the_store_shows_a_version_from_before_it() {
        // The reconcile started at version 10 and stamped annotations (version 11) before
        // writing phase Installing, which made version 12.
        let last = StatusWrite::next(
            None,
            versions(&["10", "11"]),
            Some("12".into()),
            status("Installing", "t1"),
        );
        let same = status("Installing", "t2");
        assert!(
            repeats(Some(&last), Some("10"), &same),
            "store still at the start"
        );
        assert!(
            repeats(Some(&last), Some("11"), &same),
            "store shows our own annotation write"
        );
        assert!(
            !repeats(Some(&last), Some("12"), &same),
            "the store shows the write: compare with it as usual"
        );
        assert!(
            !repeats(Some(&last), Some("13"), &same),
            "a newer version may carry someone else's status change: compare it as usual"
        );
        let other = status("Succeeded", "t2");
        assert!(
            !repeats(Some(&last), Some("10"), &other),
            "a different status is written"
        );
        assert!(!repeats(None, Some("10"), &same), "nothing written yet");
        assert!(!repeats(Some(&last), None, &same));
    }

    #[test]
    pub(super) fn a_store_several_writes_behind_still_counts_as_before_the_last_write() {
        let first = StatusWrite::next(
            None,
            versions(&["10"]),
            Some("12".into()),
            status("Installing", "t1"),
        );
        let second = StatusWrite::next(
            Some(&first),
            versions(&["12"]),
            Some("15".into()),
            status("Succeeded", "t2"),
        );
        let again = status("Succeeded", "t3");
        for stale in ["10", "12"] {
            assert!(
                repeats(Some(&second), Some(stale), &again),
                "the store at {stale} has seen neither write"
            );
        }
        assert!(!repeats(Some(&second), Some("15"), &again));
        assert!(!repeats(Some(&second), Some("16"), &again));
    }

    #[test]
    pub(super) fn the_versions_before_a_write_are_bounded() {
        let mut record = None;
        for rv in 0..100 {
            record = Some(StatusWrite::next(
                record.as_ref(),
                vec![rv.to_string()],
                Some((rv + 1).to_string()),
                status("Installing", "t"),
            ));
        }
        let record = record.unwrap();
        assert!(record.before.len() <= MAX_VERSIONS_BEFORE);
        assert!(record.before.contains(&"99".to_owned()));
    }
}
