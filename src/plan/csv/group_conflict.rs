//! group_conflict: a CSV may not provide an API that another OperatorGroup with intersecting
//! target namespaces already provides (upstream `resolver.ReconcileAPIIntersection`, applied
//! in `olm/operator.go:syncClusterServiceVersion` before the phase switch).
//!
//! # The rule
//!
//! - A group's targets are its `status.namespaces` plus its own namespace; `[""]`
//!   (AllNamespaces) stays as it is and intersects every group with at least one target.
//! - The other groups whose targets intersect the CSV's group's targets are the rivals; the
//!   APIs they provide are the union of their `olm.providedAPIs`.
//! - The CSV's provided APIs ([`crate::plan::user_roles::provided_apis`]) meeting a rival's
//!   APIs → `Failed` `InterOperatorGroupOwnerConflict` "intersecting operatorgroups provide
//!   the same apis", and its Deployments are deleted (upstream `cleanupCSVDeployments`).
//! - Else, in a `spec.staticProvidedAPIs` group, providing an API its `olm.providedAPIs`
//!   does not list (upstream `AddAPIs` on a static group) → `Failed`
//!   `CannotModifyStaticOperatorGroupProvidedAPIs` ([`static_group_refusal`]), Deployments
//!   deleted likewise.
//!
//! # Where we differ from upstream, and why
//!
//! Upstream's CSV sync adds the CSV's APIs to its group's annotation and, when the group
//! already lists them and a rival does too, removes them again (`RemoveAPIs`), so whichever
//! CSV syncs next loses. Here the OperatorGroup controller writes the annotation from the
//! member CSVs that passed this check (phase set, not failed for this reason); when both
//! groups already list the API, a `spec.staticProvidedAPIs` group keeps it (upstream's static
//! group never yields either), else the group whose `<namespace>/<name>` sorts later loses, so
//! the outcome does not depend on sync order.
//!
//! # Claims: the conflict is settled before anything deploys
//!
//! Upstream's CSV does not leave phase `""` until its group's annotation lists its APIs
//! (`AddAPIs`, then a requeue), so a rival sees the claim before the CSV installs anything.
//! Here the annotation follows the member CSVs, so it comes *after* a CSV's first transitions,
//! and two CSVs installing at once would each see no rival and both deploy. The claim is
//! therefore also kept in the controller's memory ([`Claims`]; one replica holds the leader
//! Lease, so one ledger decides): a decision that passed this check names the claim it rests
//! on ([`Claim`]), and the shell takes it with [`Claims::take`] before acting on the decision;
//! `take` runs the same rule against the groups overlaid with every claim already taken
//! ([`Claims::overlay`]), so of two CSVs deciding at once the second is refused, decides again
//! on the overlay, and fails `InterOperatorGroupOwnerConflict` without a Deployment. The first
//! to claim wins, as upstream's first `AddAPIs` does. A claim is released when its CSV goes or
//! fails this check ([`Claims::release`], and [`Claims::retain`] for a CSV deleted without its
//! cleanup); after a restart the annotations, written by then, carry the claims.

use std::collections::{BTreeMap, BTreeSet};

use crate::plan::user_roles::ApiKey;

/// An OperatorGroup of the cluster and the APIs it provides, as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProvidingGroup {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its `status.namespaces` (`None` until written).
    pub namespaces: Option<Vec<String>>,
    /// Its `olm.providedAPIs`, parsed.
    pub provided_apis: BTreeSet<ApiKey>,
    /// `spec.staticProvidedAPIs`: its annotation is fixed, so it never yields an API.
    pub static_apis: bool,
}

impl ProvidingGroup {
    /// Its targets: `None` for AllNamespaces, else its namespaces plus its own (upstream
    /// `NewOperatorGroup`; a group without status has no target).
    fn targets(&self) -> Option<BTreeSet<&str>> {
        let list = self.namespaces.as_deref().unwrap_or_default();
        if list.first().is_some_and(String::is_empty) {
            return None;
        }
        let mut set: BTreeSet<&str> = list.iter().map(String::as_str).collect();
        if !set.is_empty() {
            set.insert(&self.namespace);
        }
        Some(set)
    }

    fn key(&self) -> (&str, &str) {
        (&self.namespace, &self.name)
    }
}

/// Whether two target sets share a namespace (`None` = AllNamespaces meets any non-empty set).
fn intersect(a: Option<&BTreeSet<&str>>, b: Option<&BTreeSet<&str>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (None, Some(s)) | (Some(s), None) => !s.is_empty(),
        (Some(a), Some(b)) => a.iter().any(|n| b.contains(n)),
    }
}

/// The upstream message of the conflict.
pub const CONFLICT_MESSAGE: &str = "intersecting operatorgroups provide the same apis";

/// The rival group (`<namespace>/<name>`) that already provides one of `apis`, when the CSV
/// of group `own` (in `groups`, or absent) may not provide them (module doc).
pub fn conflicting_group(
    own: &ProvidingGroup,
    apis: &BTreeSet<ApiKey>,
    groups: &[ProvidingGroup],
) -> Option<String> {
    if apis.is_empty() {
        return None;
    }
    let own_targets = own.targets();
    let subset = apis.is_subset(&own.provided_apis);
    groups
        .iter()
        .filter(|g| g.key() != own.key())
        .filter(|g| intersect(own_targets.as_ref(), g.targets().as_ref()))
        .filter(|g| !g.provided_apis.is_disjoint(apis))
        // Both already list the APIs: a static group keeps them, else the one sorting first.
        .find(|g| !subset || (!own.static_apis && (g.static_apis || g.key() < own.key())))
        .map(|g| format!("{}/{}", g.namespace, g.name))
}

/// The upstream message of a CSV refused by a static group, which [`static_group_refusal`]
/// follows with the object, the field and the fix.
pub const STATIC_MESSAGE: &str = "static provided api operatorgroup cannot be modified by these apis";

/// Why the `spec.staticProvidedAPIs` group `own` refuses a CSV providing `apis`: some are not
/// in its `olm.providedAPIs` (an admin fixed that list; OLM never extends it). `None` for a
/// group that is not static or already lists them all.
pub fn static_group_refusal(own: &ProvidingGroup, apis: &BTreeSet<ApiKey>) -> Option<String> {
    if !own.static_apis {
        return None;
    }
    let missing: Vec<String> = apis.difference(&own.provided_apis).map(ApiKey::gvk).collect();
    (!missing.is_empty()).then(|| {
        format!(
            "{STATIC_MESSAGE}: OperatorGroup {}/{} has spec.staticProvidedAPIs: true and its \
             olm.providedAPIs annotation does not list {}; add them to the annotation, or unset \
             spec.staticProvidedAPIs",
            own.namespace,
            own.name,
            missing.join(", ")
        )
    })
}

/// The claim a CSV's decision rests on: its group (`<namespace>`, `<name>`) provides these
/// APIs for it ([`Claims`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claim {
    /// The CSV's namespace.
    pub csv_namespace: String,
    /// The CSV's name.
    pub csv_name: String,
    /// Its OperatorGroup's namespace.
    pub group_namespace: String,
    /// Its OperatorGroup's name.
    pub group_name: String,
    /// The APIs it provides.
    pub apis: BTreeSet<ApiKey>,
}

/// The API claims this controller granted, by CSV (`namespace`, `name`) (module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    by_csv: BTreeMap<(String, String), Claim>,
}

impl Claims {
    /// `groups` with the APIs claimed for each added to its `provided_apis` (a claim of a
    /// group that is not in `groups` counts for nothing).
    pub fn overlay(&self, groups: &[ProvidingGroup]) -> Vec<ProvidingGroup> {
        let mut out = groups.to_vec();
        for claim in self.by_csv.values() {
            if let Some(group) = out
                .iter_mut()
                .find(|g| g.namespace == claim.group_namespace && g.name == claim.group_name)
            {
                group.provided_apis.extend(claim.apis.iter().cloned());
            }
        }
        out
    }

    /// Takes `claim` unless another group already provides one of its APIs, as
    /// [`conflicting_group`] judges on the overlaid `groups` (the CSV's own group as observed,
    /// or with no APIs when `groups` lacks it); `Err` names that rival (`<namespace>/<name>`).
    /// Taking a claim the CSV already holds changes nothing.
    pub fn take(&mut self, claim: Claim, groups: &[ProvidingGroup]) -> Result<(), String> {
        let key = (claim.csv_namespace.clone(), claim.csv_name.clone());
        if self.by_csv.get(&key) == Some(&claim) {
            return Ok(());
        }
        let overlaid = self.overlay(groups);
        let own = overlaid
            .iter()
            .find(|g| g.namespace == claim.group_namespace && g.name == claim.group_name)
            .cloned()
            .unwrap_or_else(|| ProvidingGroup {
                namespace: claim.group_namespace.clone(),
                name: claim.group_name.clone(),
                ..ProvidingGroup::default()
            });
        if let Some(rival) = conflicting_group(&own, &claim.apis, &overlaid) {
            return Err(rival);
        }
        self.by_csv.insert(key, claim);
        Ok(())
    }

    /// Forgets the claim of the CSV `namespace`/`name` (it is gone, or failed the check).
    pub fn release(&mut self, namespace: &str, name: &str) {
        self.by_csv.remove(&(namespace.to_owned(), name.to_owned()));
    }

    /// Keeps only the claims of the CSVs `exists` says are still there (a CSV deleted without
    /// its cleanup, its finalizer removed by hand, must not hold its APIs for ever).
    pub fn retain(&mut self, exists: impl Fn(&str, &str) -> bool) {
        self.by_csv.retain(|(ns, name), _| exists(ns, name));
    }

    /// Whether the CSV `namespace`/`name` holds a claim.
    #[cfg(test)]
    pub fn holds(&self, namespace: &str, name: &str) -> bool {
        self.by_csv.contains_key(&(namespace.to_owned(), name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::user_roles::parse_provided_apis;

    fn group(ns: &str, name: &str, targets: Option<&[&str]>, apis: &str) -> ProvidingGroup {
        ProvidingGroup {
            namespace: ns.into(),
            name: name.into(),
            namespaces: targets.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
            provided_apis: parse_provided_apis(apis),
            static_apis: false,
        }
    }

    const API: &str = "RedisCluster.v1.cache.example.com";

    #[test]
    fn a_rival_with_intersecting_targets_and_the_same_api_conflicts() {
        let apis = parse_provided_apis(API);
        let own = group("a", "og-a", Some(&["a"]), "");
        // AllNamespaces intersects everything.
        let all = group("d", "og-d", Some(&[""]), API);
        assert_eq!(
            conflicting_group(&own, &apis, &[own.clone(), all]),
            Some("d/og-d".into())
        );
        // A group targeting the CSV's namespace.
        let targeting = group("d", "og-d", Some(&["x", "a"]), API);
        assert_eq!(
            conflicting_group(&own, &apis, &[targeting]),
            Some("d/og-d".into())
        );
        // The CSV's group is AllNamespaces: any rival with a target intersects.
        let own_all = group("a", "og-a", Some(&[""]), "");
        let single = group("d", "og-d", Some(&["d"]), API);
        assert_eq!(
            conflicting_group(&own_all, &apis, &[single]),
            Some("d/og-d".into())
        );
    }

    #[test]
    fn disjoint_targets_other_apis_or_no_status_do_not_conflict() {
        let apis = parse_provided_apis(API);
        let own = group("a", "og-a", Some(&["a"]), "");
        let disjoint = group("d", "og-d", Some(&["d"]), API);
        let other_api = group("e", "og-e", Some(&[""]), "Other.v1.x.io");
        let no_status = group("f", "og-f", None, API);
        assert_eq!(
            conflicting_group(&own, &apis, &[disjoint, other_api, no_status]),
            None
        );
        // A CSV providing nothing never conflicts; its own group is not a rival.
        let all = group("d", "og-d", Some(&[""]), API);
        assert_eq!(conflicting_group(&own, &BTreeSet::new(), &[all]), None);
        let own_listing = group("a", "og-a", Some(&["a"]), API);
        assert_eq!(
            conflicting_group(&own_listing, &apis, std::slice::from_ref(&own_listing)),
            None
        );
    }

    #[test]
    fn when_both_groups_list_the_api_the_later_group_loses() {
        let apis = parse_provided_apis(API);
        let first = group("a", "og", Some(&[""]), API);
        let second = group("b", "og", Some(&[""]), API);
        let groups = [first.clone(), second.clone()];
        assert_eq!(conflicting_group(&first, &apis, &groups), None);
        assert_eq!(conflicting_group(&second, &apis, &groups), Some("a/og".into()));
        // A static group keeps its APIs whatever its name.
        let fixed = ProvidingGroup {
            static_apis: true,
            ..second.clone()
        };
        let groups = [first.clone(), fixed.clone()];
        assert_eq!(conflicting_group(&first, &apis, &groups), Some("b/og".into()));
        assert_eq!(conflicting_group(&fixed, &apis, &groups), None);
    }

    #[test]
    fn a_static_group_refuses_a_csv_providing_an_api_its_annotation_does_not_list() {
        let apis = parse_provided_apis(&format!("{API},Other.v1.x.io"));
        let listing_one = ProvidingGroup {
            static_apis: true,
            ..group("a", "og", Some(&["a"]), API)
        };
        let refusal = static_group_refusal(&listing_one, &apis).expect("refused");
        assert!(refusal.starts_with(STATIC_MESSAGE), "{refusal}");
        assert!(
            refusal.contains("OperatorGroup a/og") && refusal.contains("does not list Other.v1.x.io;"),
            "names the group and only the missing API: {refusal}"
        );
        let listing_all = ProvidingGroup {
            provided_apis: apis.clone(),
            ..listing_one.clone()
        };
        assert_eq!(static_group_refusal(&listing_all, &apis), None);
        // A group that is not static extends its annotation instead.
        let dynamic = group("a", "og", Some(&["a"]), API);
        assert_eq!(static_group_refusal(&dynamic, &apis), None);
    }

    fn claim(csv_ns: &str, group: &ProvidingGroup, apis: &str) -> Claim {
        Claim {
            csv_namespace: csv_ns.into(),
            csv_name: "widget.v1".into(),
            group_namespace: group.namespace.clone(),
            group_name: group.name.clone(),
            apis: parse_provided_apis(apis),
        }
    }

    #[test]
    fn of_two_csvs_claiming_the_same_api_at_once_the_first_wins_whatever_the_names() {
        // Neither group lists the API yet (the annotations come later): both CSVs passed the
        // check on what they observed; the ledger lets only the first through.
        for (first, second) in [("a", "b"), ("b", "a")] {
            let g1 = group(first, "og", Some(&[first, second]), "");
            let g2 = group(second, "og", Some(&[second, first]), "");
            let groups = [g1.clone(), g2.clone()];
            let mut claims = Claims::default();
            assert_eq!(claims.take(claim(first, &g1, API), &groups), Ok(()));
            // Taking it again is a no-op.
            assert_eq!(claims.take(claim(first, &g1, API), &groups), Ok(()));
            assert_eq!(
                claims.take(claim(second, &g2, API), &groups),
                Err(format!("{first}/og"))
            );
            assert!(claims.holds(first, "widget.v1") && !claims.holds(second, "widget.v1"));
            // The loser decides again on the overlay and sees the rival.
            let overlaid = claims.overlay(&groups);
            let own = overlaid
                .iter()
                .find(|g| g.namespace == second)
                .cloned()
                .expect("own");
            assert_eq!(
                conflicting_group(&own, &parse_provided_apis(API), &overlaid),
                Some(format!("{first}/og"))
            );
            // The winner goes (here without its cleanup): the other one may claim.
            claims.retain(|ns, _| ns != first);
            assert_eq!(claims.take(claim(second, &g2, API), &groups), Ok(()));
        }
    }

    #[test]
    fn claims_of_groups_that_do_not_intersect_or_of_other_apis_both_stand() {
        let a = group("a", "og", Some(&["a"]), "");
        let b = group("b", "og", Some(&["b"]), "");
        let c = group("c", "og", Some(&[""]), "");
        let groups = [a.clone(), b.clone(), c.clone()];
        let mut claims = Claims::default();
        assert_eq!(claims.take(claim("a", &a, API), &groups), Ok(()));
        assert_eq!(claims.take(claim("b", &b, API), &groups), Ok(()));
        // AllNamespaces intersects both: refused.
        assert_eq!(claims.take(claim("c", &c, API), &groups), Err("a/og".into()));
        // Another API is no conflict.
        assert_eq!(claims.take(claim("c", &c, "Other.v1.x.io"), &groups), Ok(()));
        // A claim of a group that is gone counts for nothing.
        assert_eq!(
            claims.overlay(std::slice::from_ref(&b))[0].provided_apis,
            parse_provided_apis(API)
        );
    }
}
