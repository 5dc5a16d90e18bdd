//! plan: the pure decisions of cluster mode: which node leads which group, which slots each primary
//! should own, and which slots must move when primaries are added or removed.
//!
//! Redis Cluster splits the key space into 16384 hash slots; every slot must be owned by exactly one
//! primary for the cluster to report `cluster_state:ok`. The operator's rule:
//!
//! - **Groups.** Nodes are ordered by StatefulSet ordinal and cut into groups of
//!   `replicasPerPrimary + 1`; the first node of each group is its primary at formation, the rest
//!   replicate it. Growing `size` by whole groups therefore never changes an existing node's role.
//! - **Even split.** With `n` primaries, primary `i` owns `16384 / n` slots, and the first
//!   `16384 % n` primaries one more, as contiguous ranges in primary order.
//! - **Minimal moves.** When primaries are added, each existing primary keeps its lowest slots up to
//!   its new quota and gives the rest (from its highest slots down) to primaries under quota, in order.
//!   No slot moves between two primaries that are both at or under quota.
//! - **Draining.** When `size` shrinks, whole groups leave from the top (a StatefulSet removes its
//!   highest ordinals first). The primaries that stay get the even split of their own count as
//!   quota, the leaving primaries a quota of zero, and the same minimal-moves rule applies
//!   ([`drain`]): every slot of a leaving primary goes to a staying primary under quota, and staying
//!   primaries only give slots away if they were above their new quota already.
//! - **Minimum.** A Redis Cluster needs at least [`MIN_PRIMARIES`] primaries: a failover is
//!   authorised by a majority of primaries, and with fewer than three, losing one primary loses the
//!   majority, so the cluster could never promote a replica on its own.

use std::collections::BTreeMap;

/// Number of hash slots in a Redis Cluster.
pub const SLOTS: u16 = 16384;

/// The fewest primaries a cluster may have (failover needs a majority of primaries that survives
/// the loss of one).
pub const MIN_PRIMARIES: usize = 3;

/// An inclusive range of slots.
pub type SlotRange = (u16, u16);

/// The role planned for a node at formation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Primary of group `group`.
    Primary {
        /// Group index.
        group: usize,
    },
    /// Replica of the node at index `primary`.
    Replica {
        /// Index (in the ordered node list) of the group's primary.
        primary: usize,
    },
}

/// Roles of `nodes` nodes in groups of `replicas_per_primary + 1`.
#[must_use]
pub fn roles(nodes: usize, replicas_per_primary: usize) -> Vec<Role> {
    let group_size = replicas_per_primary + 1;
    (0..nodes)
        .map(|i| {
            if i % group_size == 0 {
                Role::Primary {
                    group: i / group_size,
                }
            } else {
                Role::Replica {
                    primary: i - i % group_size,
                }
            }
        })
        .collect()
}

/// The number of slots each of `primaries` primaries owns under the even split.
#[must_use]
pub fn quotas(primaries: usize) -> Vec<usize> {
    if primaries == 0 {
        return Vec::new();
    }
    let total = usize::from(SLOTS);
    (0..primaries)
        .map(|i| total / primaries + usize::from(i < total % primaries))
        .collect()
}

/// Contiguous slot ranges, one per primary, under the even split.
#[must_use]
pub fn slot_plan(primaries: usize) -> Vec<SlotRange> {
    let mut start = 0usize;
    quotas(primaries)
        .into_iter()
        .map(|q| {
            let range = (to_slot(start), to_slot(start + q - 1));
            start += q;
            range
        })
        .collect()
}

fn to_slot(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(SLOTS - 1)
}

/// One slot to move from one primary to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// The slot.
    pub slot: u16,
    /// Index (into the primaries list) of the current owner.
    pub from: usize,
    /// Index of the new owner.
    pub to: usize,
}

/// Moves that bring `owned` (slots per primary, in primary order) to the even split.
///
/// Slots owned by nobody are not moved (see [`unassigned`]); they are given out by `ADDSLOTS`.
#[must_use]
pub fn rebalance(owned: &[Vec<u16>]) -> Vec<Move> {
    rebalance_to(owned, &quotas(owned.len()))
}

/// Moves that empty the primaries from index `keep` on (the groups leaving with a shrink) and bring
/// the first `keep` primaries to the even split of `keep`.
///
/// With `keep` at or above `owned.len()` this is [`rebalance`]; with `keep == 0` nothing can receive
/// the slots and no move is planned.
#[must_use]
pub fn drain(owned: &[Vec<u16>], keep: usize) -> Vec<Move> {
    if keep >= owned.len() {
        return rebalance(owned);
    }
    let mut quota = quotas(keep);
    quota.resize(owned.len(), 0);
    rebalance_to(owned, &quota)
}

/// Moves that bring each primary of `owned` to its `quota`: each primary keeps its lowest slots up
/// to its quota, and the rest, in primary order and from the highest slot down, fill the primaries
/// under quota in order. Missing quotas count as zero.
fn rebalance_to(owned: &[Vec<u16>], quota: &[usize]) -> Vec<Move> {
    let quota_of = |i: usize| quota.get(i).copied().unwrap_or(0);
    let mut surplus: Vec<Move> = Vec::new();
    for (from, slots) in owned.iter().enumerate() {
        let mut sorted = slots.clone();
        sorted.sort_unstable();
        let keep = quota_of(from).min(sorted.len());
        surplus.extend(
            sorted[keep..]
                .iter()
                .rev()
                .map(|&slot| Move { slot, from, to: from }),
        );
    }
    let mut moves = Vec::new();
    let mut donors = surplus.into_iter();
    for (to, slots) in owned.iter().enumerate() {
        for _ in slots.len()..quota_of(to) {
            match donors.next() {
                Some(mut m) => {
                    m.to = to;
                    moves.push(m);
                }
                None => return moves,
            }
        }
    }
    moves
}

/// Slots that no primary in `owned` owns.
#[must_use]
pub fn unassigned(owned: &[Vec<u16>]) -> Vec<u16> {
    let mut seen = vec![false; usize::from(SLOTS)];
    for s in owned.iter().flatten() {
        if let Some(x) = seen.get_mut(usize::from(*s)) {
            *x = true;
        }
    }
    (0..SLOTS).filter(|s| !seen[usize::from(*s)]).collect()
}

/// Compresses sorted slots into inclusive ranges.
#[must_use]
pub fn ranges(slots: &[u16]) -> Vec<SlotRange> {
    let mut out: Vec<SlotRange> = Vec::new();
    for &s in slots {
        match out.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(s) => *end = s,
            _ => out.push((s, s)),
        }
    }
    out
}

/// A node as `CLUSTER NODES` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservedNode {
    /// The node's cluster id.
    pub id: String,
    /// `ip:port` it announces.
    pub addr: String,
    /// Whether it is flagged `master`.
    pub primary: bool,
    /// The id of its primary, when it is a replica.
    pub replica_of: Option<String>,
    /// Whether this line describes the node that answered (`myself`).
    pub myself: bool,
    /// Whether the node is flagged failed (`fail`) or without address (`noaddr`).
    pub failed: bool,
    /// Slots it owns.
    pub slots: Vec<u16>,
    /// Its configuration epoch (`config-epoch`; a replica shows its primary's). Slot claims with the
    /// higher epoch win, so a primary that takes a slot must hold the highest one.
    pub config_epoch: u64,
}

/// The nodes planned as primaries (by [`roles`]; `ids[i]` is node `i`'s cluster id) that `view`
/// shows as replicas owning no slot while fewer than the planned number of primaries own slots.
///
/// A node added to grow the cluster can end up so: Redis (7+, `cluster-allow-replica-migration`)
/// makes a master that lost its last slot a replica of the node that took it, and a scale-up
/// whose move was cut short can leave the new primary that way. Nothing else would make it a
/// primary again, so the scale-up would stop one primary short for good.
#[must_use]
pub fn stranded_primaries(ids: &[String], replicas_per_primary: usize, view: &[ObservedNode]) -> Vec<usize> {
    let wanted = ids.len() / (replicas_per_primary + 1);
    let owners = view.iter().filter(|n| n.primary && !n.slots.is_empty()).count();
    if owners >= wanted {
        return Vec::new();
    }
    roles(ids.len(), replicas_per_primary)
        .iter()
        .enumerate()
        .filter(|(_, role)| matches!(role, Role::Primary { .. }))
        .filter(|(i, _)| {
            view.iter()
                .any(|n| n.id == ids[*i] && !n.primary && n.slots.is_empty())
        })
        .map(|(i, _)| i)
        .take(wanted - owners)
        .collect()
}

/// Parses the output of `CLUSTER NODES`, skipping malformed lines and importing/migrating markers.
#[must_use]
pub fn parse_cluster_nodes(text: &str) -> Vec<ObservedNode> {
    let mut nodes = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 8 {
            continue;
        }
        let flags: Vec<&str> = fields[2].split(',').collect();
        let addr = fields[1].split('@').next().unwrap_or_default().to_owned();
        let mut slots = Vec::new();
        for spec in &fields[8..] {
            if spec.starts_with('[') {
                continue;
            }
            let (a, b) = spec.split_once('-').unwrap_or((spec, spec));
            if let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>()) {
                slots.extend(a..=b.min(SLOTS - 1));
            }
        }
        nodes.push(ObservedNode {
            id: fields[0].to_owned(),
            addr,
            primary: flags.contains(&"master"),
            replica_of: (fields[3] != "-").then(|| fields[3].to_owned()),
            myself: flags.contains(&"myself"),
            failed: flags
                .iter()
                .any(|f| matches!(*f, "fail" | "noaddr" | "handshake")),
            slots,
            config_epoch: fields[6].parse().unwrap_or(0),
        });
    }
    nodes
}

/// The value of `key` in `CLUSTER INFO` output.
#[must_use]
pub fn info_field<'a>(info: &'a str, key: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.trim().strip_prefix(key)?.strip_prefix(':'))
}

/// Slots per primary id, from a set of observed nodes.
#[must_use]
pub fn ownership(nodes: &[ObservedNode]) -> BTreeMap<String, Vec<u16>> {
    nodes
        .iter()
        .filter(|n| n.primary)
        .map(|n| (n.id.clone(), n.slots.clone()))
        .collect()
}

/// Why the nodes' configuration epochs are not settled yet, or `None` when they are.
///
/// A slot belongs to whichever primary claims it with the highest configuration epoch. The node
/// that takes a slot (`SETSLOT NODE` on the importing node) raises its own epoch above the highest
/// one *it knows of*. If that knowledge is stale, or two primaries still share an epoch (Redis then
/// renumbers one of them on its own, at any moment), an older claim of the source can win the slot
/// back; a new primary that loses its only slot that way even turns itself into a replica of the
/// source (Redis 7's replica migration). So slots move only once `views` (each node's `CLUSTER
/// NODES`) agree on every primary's epoch and no two primaries share one.
#[must_use]
pub fn epochs_unsettled(views: &[Vec<ObservedNode>]) -> Option<String> {
    let first = views.first()?;
    let primaries: BTreeMap<&str, u64> = first
        .iter()
        .filter(|n| n.primary)
        .map(|n| (n.id.as_str(), n.config_epoch))
        .collect();
    let mut seen: BTreeMap<u64, &str> = BTreeMap::new();
    for (id, epoch) in &primaries {
        if let Some(other) = seen.insert(*epoch, id) {
            return Some(format!("primaries {other} and {id} share config epoch {epoch}"));
        }
    }
    for view in &views[1..] {
        let theirs: BTreeMap<&str, u64> = view
            .iter()
            .filter(|n| n.primary)
            .map(|n| (n.id.as_str(), n.config_epoch))
            .collect();
        if theirs != primaries {
            return Some(format!(
                "nodes disagree on the primaries' config epochs: {primaries:?} vs {theirs:?}"
            ));
        }
    }
    None
}

/// Configuration epochs for `fresh` nodes that have never been part of a cluster, given the highest
/// epoch the cluster they join already uses: one distinct epoch each, above all existing ones, set
/// with `CLUSTER SET-CONFIG-EPOCH` before they meet anyone (as `redis-cli --cluster create` does),
/// so Redis never has to renumber colliding primaries while slots move.
#[must_use]
pub fn fresh_epochs(highest_known: u64, fresh: usize) -> Vec<u64> {
    (1..=fresh as u64).map(|k| highest_known + k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_primaries_split_16384_slots_as_redis_cli_does() {
        assert_eq!(slot_plan(3), [(0, 5461), (5462, 10922), (10923, 16383)]);
    }

    #[test]
    fn every_plan_covers_each_slot_exactly_once() {
        for n in 1..=20 {
            let plan = slot_plan(n);
            let mut next = 0u32;
            for (a, b) in plan {
                assert_eq!(u32::from(a), next);
                next = u32::from(b) + 1;
            }
            assert_eq!(next, 16384, "{n} primaries");
        }
    }

    #[test]
    fn groups_of_replicas_follow_their_primary_in_ordinal_order() {
        assert_eq!(
            roles(6, 1),
            [
                Role::Primary { group: 0 },
                Role::Replica { primary: 0 },
                Role::Primary { group: 1 },
                Role::Replica { primary: 2 },
                Role::Primary { group: 2 },
                Role::Replica { primary: 4 },
            ]
        );
        assert_eq!(
            roles(3, 0),
            [
                Role::Primary { group: 0 },
                Role::Primary { group: 1 },
                Role::Primary { group: 2 }
            ]
        );
    }

    #[test]
    fn adding_a_fourth_primary_moves_a_quarter_of_the_slots_to_it_and_nothing_else() {
        let mut owned: Vec<Vec<u16>> = slot_plan(3).into_iter().map(|(a, b)| (a..=b).collect()).collect();
        owned.push(Vec::new());
        let moves = rebalance(&owned);
        assert_eq!(moves.len(), 4096);
        assert!(moves.iter().all(|m| m.to == 3 && m.from < 3));
        for m in &moves {
            owned[m.from].retain(|s| *s != m.slot);
            owned[m.to].push(m.slot);
        }
        let counts: Vec<usize> = owned.iter().map(Vec::len).collect();
        assert_eq!(counts, quotas(4));
        assert!(rebalance(&owned).is_empty(), "a balanced cluster needs no moves");
    }

    fn apply(owned: &mut [Vec<u16>], moves: &[Move]) {
        for m in moves {
            owned[m.from].retain(|s| *s != m.slot);
            owned[m.to].push(m.slot);
        }
    }

    #[test]
    fn draining_the_fourth_primary_gives_its_slots_to_the_three_that_stay_and_moves_nothing_else() {
        let mut owned: Vec<Vec<u16>> = slot_plan(4).into_iter().map(|(a, b)| (a..=b).collect()).collect();
        let moves = drain(&owned, 3);
        assert_eq!(moves.len(), 4096, "exactly the leaving primary's slots move");
        assert!(moves.iter().all(|m| m.from == 3 && m.to < 3));
        apply(&mut owned, &moves);
        let counts: Vec<usize> = owned.iter().map(Vec::len).collect();
        assert_eq!(counts, [5462, 5461, 5461, 0]);
        assert!(unassigned(&owned).is_empty(), "every slot still has an owner");
        assert!(drain(&owned, 3).is_empty(), "a drained cluster needs no moves");
    }

    #[test]
    fn draining_two_groups_at_once_empties_both_and_keeps_every_slot_owned() {
        let mut owned: Vec<Vec<u16>> = slot_plan(5).into_iter().map(|(a, b)| (a..=b).collect()).collect();
        let moves = drain(&owned, 3);
        assert!(moves.iter().all(|m| m.from >= 3 && m.to < 3));
        apply(&mut owned, &moves);
        assert!(owned[3].is_empty() && owned[4].is_empty());
        let counts: Vec<usize> = owned[..3].iter().map(Vec::len).collect();
        assert_eq!(counts, quotas(3));
        assert!(unassigned(&owned).is_empty());
    }

    #[test]
    fn draining_with_nothing_to_keep_or_nothing_to_remove_degrades_gracefully() {
        let owned: Vec<Vec<u16>> = slot_plan(3).into_iter().map(|(a, b)| (a..=b).collect()).collect();
        assert!(drain(&owned, 0).is_empty(), "nobody can receive slots");
        assert!(
            drain(&owned, 3).is_empty(),
            "keeping everyone is a plain rebalance"
        );
        assert!(drain(&[], 3).is_empty());
    }

    #[test]
    fn ranges_compress_consecutive_slots() {
        assert_eq!(ranges(&[1, 2, 3, 7, 9, 10]), [(1, 3), (7, 7), (9, 10)]);
        assert!(ranges(&[]).is_empty());
    }

    #[test]
    fn unassigned_lists_the_slots_nobody_owns() {
        let owned = vec![(0..16000).collect::<Vec<u16>>(), vec![16001]];
        let free = unassigned(&owned);
        assert_eq!(free.first(), Some(&16000));
        assert_eq!(free.len(), 16384 - 16001);
    }

    #[test]
    fn cluster_nodes_output_is_parsed_with_ranges_and_migration_markers() {
        let text = "\
07c3 127.0.0.1:30004@40004 slave e7d1 0 1426238317239 4 connected
e7d1 127.0.0.1:30001@40001,host myself,master - 0 0 1 connected 0-2 5 [6->-292f]
292f 127.0.0.1:30002@40002 master,fail - 0 1426238316232 2 disconnected
broken line";
        let nodes = parse_cluster_nodes(text);
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0].replica_of.as_deref(), Some("e7d1"));
        assert!(!nodes[0].primary);
        assert_eq!(nodes[1].addr, "127.0.0.1:30001");
        assert!(nodes[1].myself && nodes[1].primary);
        assert_eq!(nodes[1].slots, [0, 1, 2, 5]);
        assert!(nodes[2].failed);
        assert_eq!(
            nodes.iter().map(|n| n.config_epoch).collect::<Vec<_>>(),
            [4, 1, 2]
        );
    }

    fn node(id: &str, primary: bool, epoch: u64) -> ObservedNode {
        ObservedNode {
            id: id.to_owned(),
            addr: String::new(),
            primary,
            replica_of: (!primary).then(|| "a".to_owned()),
            myself: false,
            failed: false,
            slots: Vec::new(),
            config_epoch: epoch,
        }
    }

    #[test]
    fn a_planned_primary_left_a_replica_is_stranded_only_while_primaries_are_missing() {
        let ids: Vec<String> = (0..8).map(|i| format!("n{i}")).collect();
        let owner = |id: &str, slots: Vec<u16>| ObservedNode {
            slots,
            ..node(id, true, 1)
        };
        // Three owners (n0, n2, n4), n6 (planned primary of group 3) a replica of n0.
        let mut view = vec![
            owner("n0", vec![1]),
            owner("n2", vec![2]),
            owner("n4", vec![3]),
            node("n1", false, 1),
            node("n3", false, 1),
            node("n5", false, 1),
            node("n6", false, 1),
            node("n7", false, 1),
        ];
        assert_eq!(stranded_primaries(&ids, 1, &view), [6]);
        // n6 owning a slot again: nothing is stranded.
        view[6] = owner("n6", vec![4]);
        assert_eq!(stranded_primaries(&ids, 1, &view), Vec::<usize>::new());
        // A planned replica (n7) that is a replica is where it belongs; an empty master is not stranded.
        view[6] = node("n6", true, 1);
        assert_eq!(stranded_primaries(&ids, 1, &view), Vec::<usize>::new());
    }

    #[test]
    fn epochs_are_settled_when_every_view_agrees_and_primaries_are_distinct() {
        let view = vec![node("a", true, 1), node("b", true, 2), node("r", false, 1)];
        assert_eq!(epochs_unsettled(&[view.clone(), view.clone(), view]), None);
    }

    #[test]
    fn two_primaries_with_one_epoch_are_not_settled() {
        let view = vec![node("a", true, 0), node("b", true, 0)];
        let why = epochs_unsettled(&[view]).expect("collision");
        assert!(why.contains("share config epoch 0"), "{why}");
    }

    #[test]
    fn a_node_with_a_stale_view_of_an_epoch_is_not_settled() {
        let current = vec![node("a", true, 3), node("b", true, 2)];
        let stale = vec![node("a", true, 1), node("b", true, 2)];
        let why = epochs_unsettled(&[current, stale]).expect("stale");
        assert!(why.contains("disagree"), "{why}");
    }

    #[test]
    fn fresh_nodes_get_distinct_epochs_above_the_highest_known() {
        assert_eq!(fresh_epochs(0, 3), [1, 2, 3]);
        assert_eq!(fresh_epochs(6, 2), [7, 8]);
        assert!(fresh_epochs(6, 0).is_empty());
    }

    #[test]
    fn info_fields_are_found_by_key() {
        let info = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n";
        assert_eq!(info_field(info, "cluster_state"), Some("ok"));
        assert_eq!(info_field(info, "cluster_slots_assigned"), Some("16384"));
        assert_eq!(info_field(info, "missing"), None);
    }
}
