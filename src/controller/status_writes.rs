//! status_writes: no status is written from a store that has not seen our last status write.
//!
//! A reconcile started from a store that lags behind our last status write starts from the
//! status as it was before that write. What it computes would either repeat the write, or,
//! when something else moved meanwhile, be a status built on the old one: a server-side apply of
//! it drops every field the last write added (a webhook CSV went `Succeeded` without the
//! `certsRotateAt` its previous write had set). So such a write waits: the watch event of our
//! last write reconciles the object again, from a store that has it. [`StatusWrite`] remembers,
//! per object, every resourceVersion known to be older than the last write; [`behind`] is the
//! pure rule.

/// The rule of [`super::Shared::behind_last_status_write`] for one object's `last` write: the
/// store shows a version from before it. The version the write itself returned is never behind
/// (a write that changed nothing on the server returns the version it started from).
pub(super) fn behind(last: Option<&StatusWrite>, resource_version: Option<&str>) -> bool {
    let Some(resource_version) = resource_version else {
        return false;
    };
    last.is_some_and(|last| {
        last.before.iter().any(|rv| rv == resource_version) && last.after.as_deref() != Some(resource_version)
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
    pub(super) at: Option<std::time::Instant>,
}

impl StatusWrite {
    /// The record after a write (resourceVersion `after`) from an object seen at the versions
    /// `seen`: what was known to precede the previous write, that write's own version, and
    /// `seen`, now all precede this one.
    pub(super) fn next(previous: Option<&Self>, seen: Vec<String>, after: Option<String>) -> Self {
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
            at: Some(std::time::Instant::now()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn versions(rvs: &[&str]) -> Vec<String> {
        rvs.iter().map(|rv| (*rv).to_owned()).collect()
    }

    #[test]
    pub(super) fn a_store_is_behind_only_while_it_shows_a_version_from_before_the_write() {
        // The reconcile started at version 10 and stamped annotations (version 11) before
        // writing phase Installing, which made version 12.
        let last = StatusWrite::next(None, versions(&["10", "11"]), Some("12".into()));
        assert!(behind(Some(&last), Some("10")), "store still at the start");
        assert!(
            behind(Some(&last), Some("11")),
            "store shows our own annotation write"
        );
        assert!(
            !behind(Some(&last), Some("12")),
            "the store shows the write: compare with it as usual"
        );
        assert!(
            !behind(Some(&last), Some("13")),
            "a newer version may carry someone else's status change: compare it as usual"
        );
        assert!(!behind(None, Some("10")), "nothing written yet");
        assert!(!behind(Some(&last), None));
    }

    #[test]
    pub(super) fn a_store_several_writes_behind_still_counts_as_before_the_last_write() {
        let first = StatusWrite::next(None, versions(&["10"]), Some("12".into()));
        let second = StatusWrite::next(Some(&first), versions(&["12"]), Some("15".into()));
        for stale in ["10", "12"] {
            assert!(
                behind(Some(&second), Some(stale)),
                "the store at {stale} has not seen the last write"
            );
        }
        assert!(!behind(Some(&second), Some("15")));
        assert!(!behind(Some(&second), Some("16")));
    }

    #[test]
    pub(super) fn a_write_that_changed_nothing_on_the_server_leaves_nothing_behind() {
        // Applied from version 20, the server found nothing to change: still version 20.
        let noop = StatusWrite::next(None, versions(&["20"]), Some("20".into()));
        assert!(
            !behind(Some(&noop), Some("20")),
            "the store shows the write's own version: it is not waiting for anything"
        );
        let next = StatusWrite::next(Some(&noop), versions(&["20"]), Some("21".into()));
        assert!(behind(Some(&next), Some("20")));
        assert!(!behind(Some(&next), Some("21")));
    }

    #[test]
    pub(super) fn the_versions_before_a_write_are_bounded() {
        let mut record = None;
        for rv in 0..100 {
            record = Some(StatusWrite::next(
                record.as_ref(),
                vec![rv.to_string()],
                Some((rv + 1).to_string()),
            ));
        }
        let record = record.unwrap();
        assert!(record.before.len() <= MAX_VERSIONS_BEFORE);
        assert!(record.before.contains(&"99".to_owned()));
    }
}
