//! applied: what the controllers remember having applied, so that an apply that would change
//! nothing is not sent again. Held by the shared context (one record per controller set, none in
//! statics); a watch event at a resourceVersion the apply did not return forgets the record.

use std::collections::HashMap;

/// What this process last applied for each OperatorCondition: the Role and RoleBinding are
/// applied again only when what they should hold changed, or when a watch shows them at a
/// resourceVersion the apply did not return (edited, deleted, or never applied since a
/// restart). Without it every reconcile (its own status write, its Role's and RoleBinding's
/// creation) re-sent both: about 8 requests per install.
///
/// `(namespace, name)` of an OperatorCondition → the hash of its desired Role and RoleBinding
/// and the resourceVersions the applies returned. Held by the shared context.
#[derive(Default)]
pub struct AppliedRbac(HashMap<(String, String), (u64, [String; 2])>);

impl AppliedRbac {
    /// Whether `hash` is what was applied last for `key`, and nothing changed since.
    pub fn fresh(&self, key: &(String, String), hash: u64) -> bool {
        self.0.get(key).is_some_and(|(applied, _)| *applied == hash)
    }

    /// Records what was applied for `key` and the resourceVersions the applies returned.
    pub fn record(&mut self, key: (String, String), hash: u64, versions: [String; 2]) {
        self.0.insert(key, (hash, versions));
    }

    /// A Role or RoleBinding of `key` seen at `version`: forgets the record unless the version
    /// is one the applies returned.
    pub fn observed(&mut self, key: &(String, String), version: &str) {
        if self
            .0
            .get(key)
            .is_some_and(|(_, versions)| !versions.iter().any(|v| v == version))
        {
            self.0.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rbac_record_is_fresh_until_what_it_holds_or_someone_else_changes_it() {
        let mut memo = AppliedRbac::default();
        let key = ("ops".to_owned(), "other.v1".to_owned());
        assert!(!memo.fresh(&key, 1), "never applied");
        memo.record(key.clone(), 1, ["10".into(), "11".into()]);
        assert!(memo.fresh(&key, 1));
        assert!(!memo.fresh(&key, 2), "what they should hold changed");
        memo.observed(&key, "11");
        assert!(memo.fresh(&key, 1), "the apply's own change");
        memo.observed(&key, "12");
        assert!(!memo.fresh(&key, 1), "a change this process did not make");
    }
}
