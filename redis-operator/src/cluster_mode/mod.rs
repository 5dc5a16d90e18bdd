//! cluster_mode: forms and maintains a Redis Cluster over a set of nodes.
//!
//! The operator's reconcile knows the nodes as pods; the tests know them as `redis-server` processes
//! on loopback ports. Both hand this module a [`NodeSource`] (the nodes and their addresses, in
//! ordinal order) and call [`converge`], which talks to the nodes over RESP and brings the cluster to
//! the shape [`plan`] describes. Every step first observes and only acts on a difference, so calling
//! it again on a healthy cluster sends no writes, and a run interrupted half-way is finished by the
//! next one. The steps:
//!
//! 1. **Meet.** Ask each node for its id (`CLUSTER MYID`); give each node that was never in a cluster
//!    its own configuration epoch above all existing ones (`CLUSTER SET-CONFIG-EPOCH`, as
//!    `redis-cli --cluster create` does); the first node sends `CLUSTER MEET` to every node it does
//!    not know yet; wait until every node's `CLUSTER NODES` lists all ids, none in handshake.
//! 2. **Slots.** If no primary owns a slot, give the planned primaries the even split with
//!    `CLUSTER ADDSLOTSRANGE`. Otherwise keep the current owners (whatever failovers happened), add
//!    planned primaries that are still empty masters until there are `size / (replicasPerPrimary+1)`
//!    primaries, hand slots nobody owns to the smallest primary, and move slots along
//!    [`plan::rebalance`], once every node agrees on the primaries' epochs and no two share one
//!    ([`plan::epochs_unsettled`]: otherwise an older claim can win a moved slot back). A move is the cluster's live re-sharding protocol: `SETSLOT IMPORTING` on the
//!    target, `SETSLOT MIGRATING` on the source, `MIGRATE` of the keys `GETKEYSINSLOT` returns until
//!    none are left, then `SETSLOT NODE` on the target, the source and every other primary. Slots
//!    holding keys therefore move with their data; empty slots cost four commands.
//! 3. **Replicas.** Each planned replica that is still an empty master runs `CLUSTER REPLICATE` to its
//!    group's primary (or whoever replaced it after a failover). Existing replicas are left alone.
//! 4. **Wait** until every node reports `cluster_state:ok`.
//!
//! Shrinking is [`shrink`], run by the reconcile *before* the StatefulSet loses its highest
//! ordinals (a StatefulSet always scales down from the top, so the leaving nodes are the last ones
//! of the [`NodeSource`]):
//!
//! 1. **Drain.** Wait until the staying nodes report `cluster_state:ok`, then move every slot of the
//!    leaving primaries onto the staying ones along [`plan::drain`], with the same live re-sharding
//!    protocol as above (keys move with their slots), and wait until every staying node sees the
//!    leaving nodes own nothing.
//! 2. **Reattach.** A staying replica whose primary is leaving (possible after a failover across
//!    groups) replicates its planned primary instead; the leaving replicas are dropped with their
//!    primaries.
//! 3. **Forget.** Every staying node runs `CLUSTER FORGET` for every leaving node it still lists
//!    (the forgotten id is banned from gossip for a minute, so the order between nodes does not
//!    matter), then each leaving node that still knows other nodes runs `CLUSTER RESET SOFT` so it
//!    stops claiming membership, and we wait until the staying nodes know only each other and
//!    report `cluster_state:ok`.
//!
//! Only then may the StatefulSet be lowered. Like [`converge`], a second call finds nothing to do.
//! Fewer than [`plan::MIN_PRIMARIES`] primaries is refused before any write.

pub mod plan;
pub mod resp;

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use resp::{Connection, Reply, RespError};

/// One Redis node: a stable name (the pod name) and its `ip:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Stable name, for messages.
    pub name: String,
    /// `ip:port` the other nodes and the operator reach it on (an IP: `CLUSTER MEET` needs one).
    pub addr: String,
}

/// The nodes of one cluster and their addresses, in ordinal order.
pub trait NodeSource {
    /// The nodes, ordered by ordinal.
    fn nodes(&self) -> Vec<Node>;
}

impl NodeSource for [Node] {
    fn nodes(&self) -> Vec<Node> {
        self.to_vec()
    }
}

impl NodeSource for Vec<Node> {
    fn nodes(&self) -> Vec<Node> {
        self.clone()
    }
}

/// Errors forming or maintaining the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The node count does not fit the group size.
    #[error(
        "cannot form a cluster of {nodes} nodes with {replicas_per_primary} replicas per primary: size must be a multiple of {} with at least 3 primaries",
        replicas_per_primary + 1
    )]
    BadTopology {
        /// Number of nodes.
        nodes: usize,
        /// Replicas per primary.
        replicas_per_primary: usize,
    },
    /// Talking to a node failed.
    #[error("failed to talk to node {node}")]
    Node {
        /// Node name.
        node: String,
        /// The RESP error.
        #[source]
        source: RespError,
    },
    /// A node's address is not `ip:port`.
    #[error("node {node} has address `{addr}`, expected ip:port")]
    BadAddress {
        /// Node name.
        node: String,
        /// The address.
        addr: String,
    },
    /// Converging ended with fewer primaries owning slots than planned (the next reconcile
    /// converges again).
    #[error(
        "the cluster has {found} primaries owning slots after converging, {wanted} planned; \
         converging again should place the rest"
    )]
    TooFewPrimaries {
        /// Primaries planned (`size / (replicasPerPrimary + 1)`).
        wanted: usize,
        /// Primaries owning slots in the first node's view.
        found: usize,
    },
    /// The cluster did not reach a state in time.
    #[error("timed out after {timeout:?} waiting for {what}")]
    NotConverged {
        /// What we waited for.
        what: String,
        /// How long we waited.
        timeout: Duration,
    },
}

/// What [`converge`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Nodes introduced with `CLUSTER MEET`.
    pub met: usize,
    /// Slots given out with `ADDSLOTSRANGE`.
    pub slots_added: usize,
    /// Slots moved between primaries.
    pub slots_moved: usize,
    /// Replicas attached with `CLUSTER REPLICATE`.
    pub replicas_attached: usize,
    /// Primaries after the run.
    pub primaries: usize,
}

impl Outcome {
    /// Whether the run changed anything.
    #[must_use]
    pub fn changed(&self) -> bool {
        self.met + self.slots_added + self.slots_moved + self.replicas_attached > 0
    }
}

/// Options for [`converge`].
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Timeout of each command.
    pub command_timeout: Duration,
    /// How long to wait for gossip and `cluster_state:ok`.
    pub settle_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            command_timeout: Duration::from_secs(5),
            settle_timeout: Duration::from_secs(60),
        }
    }
}

struct Peer {
    node: Node,
    id: String,
    conn: Connection,
}

impl Peer {
    async fn cmd(&mut self, args: &[&str]) -> Result<Reply, ClusterError> {
        self.conn.cmd(args).await.map_err(|source| ClusterError::Node {
            node: self.node.name.clone(),
            source,
        })
    }

    async fn text(&mut self, args: &[&str]) -> Result<String, ClusterError> {
        self.conn.text(args).await.map_err(|source| ClusterError::Node {
            node: self.node.name.clone(),
            source,
        })
    }

    async fn view(&mut self) -> Result<Vec<plan::ObservedNode>, ClusterError> {
        Ok(plan::parse_cluster_nodes(
            &self.text(&["CLUSTER", "NODES"]).await?,
        ))
    }

    fn ip_port(&self) -> Result<(&str, &str), ClusterError> {
        self.node
            .addr
            .rsplit_once(':')
            .ok_or_else(|| ClusterError::BadAddress {
                node: self.node.name.clone(),
                addr: self.node.addr.clone(),
            })
    }
}

/// Brings the nodes of `source` to a healthy Redis Cluster with `replicas_per_primary` replicas each.
///
/// # Errors
/// A bad topology, an unreachable node, a refused command, or a cluster that does not settle.
pub async fn converge(
    source: &(impl NodeSource + ?Sized),
    replicas_per_primary: usize,
    opts: Options,
) -> Result<Outcome, ClusterError> {
    let nodes = source.nodes();
    let group = replicas_per_primary + 1;
    if !nodes.len().is_multiple_of(group) || nodes.len() / group < 3 {
        return Err(ClusterError::BadTopology {
            nodes: nodes.len(),
            replicas_per_primary,
        });
    }
    let nodes_len = nodes.len();
    let mut peers = connect(nodes, opts).await?;
    let met = meet(&mut peers, opts).await?
        + reclaim_stranded_primaries(&mut peers, replicas_per_primary, opts).await?;
    // A node that just joined answers CLUSTERDOWN (and refuses MIGRATE) until gossip has taught it
    // the slot map; when the cluster already serves slots, wait for every node to say so first.
    let serving = peers[0].view().await?.iter().any(|n| !n.slots.is_empty());
    if serving {
        wait_state_ok(&mut peers, opts).await?;
    }
    let (slots_added, slots_moved) = assign_slots(&mut peers, replicas_per_primary, opts).await?;
    let replicas_attached = attach_replicas(&mut peers, replicas_per_primary, opts).await?;
    wait_replicas_visible(&mut peers, replicas_per_primary, opts).await?;
    wait_state_ok(&mut peers, opts).await?;
    let primaries = peers[0]
        .view()
        .await?
        .iter()
        .filter(|n| n.primary && !n.slots.is_empty())
        .count();
    if primaries < nodes_len / group {
        return Err(ClusterError::TooFewPrimaries {
            wanted: nodes_len / group,
            found: primaries,
        });
    }
    Ok(Outcome {
        met,
        slots_added,
        slots_moved,
        replicas_attached,
        primaries,
    })
}

/// One wait for the cluster to settle: gossip and failure detection are asynchronous, so an
/// observation that is not there yet is retried every 100 ms until [`Options::settle_timeout`]
/// (counted from [`Settle::new`]) has passed.
struct Settle {
    deadline: tokio::time::Instant,
    timeout: Duration,
}

impl Settle {
    fn new(opts: Options) -> Self {
        Self {
            deadline: tokio::time::Instant::now() + opts.settle_timeout,
            timeout: opts.settle_timeout,
        }
    }

    /// Sleeps before the next observation, or fails naming `what` the wait was for once the
    /// deadline has passed.
    async fn until(&self, what: impl FnOnce() -> String) -> Result<(), ClusterError> {
        if tokio::time::Instant::now() > self.deadline {
            return Err(ClusterError::NotConverged {
                what: what(),
                timeout: self.timeout,
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(())
    }
}

async fn connect(nodes: Vec<Node>, opts: Options) -> Result<Vec<Peer>, ClusterError> {
    let mut peers = Vec::with_capacity(nodes.len());
    for node in nodes {
        let mut conn = Connection::connect(&node.addr, opts.command_timeout)
            .await
            .map_err(|source| ClusterError::Node {
                node: node.name.clone(),
                source,
            })?;
        let id = conn
            .text(&["CLUSTER", "MYID"])
            .await
            .map_err(|source| ClusterError::Node {
                node: node.name.clone(),
                source,
            })?;
        peers.push(Peer { node, id, conn });
    }
    Ok(peers)
}

/// What [`shrink`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShrinkOutcome {
    /// Names of the leaving nodes (the ones after `keep`).
    pub removed: Vec<String>,
    /// Slots moved off the leaving primaries.
    pub slots_moved: usize,
    /// Staying replicas moved off a leaving primary with `CLUSTER REPLICATE`.
    pub replicas_reattached: usize,
    /// `CLUSTER FORGET` commands sent to staying nodes.
    pub forgets: usize,
    /// Leaving nodes told to leave with `CLUSTER RESET SOFT`.
    pub resets: usize,
}

impl ShrinkOutcome {
    /// Whether the run changed anything.
    #[must_use]
    pub fn changed(&self) -> bool {
        self.slots_moved + self.replicas_reattached + self.forgets + self.resets > 0
    }
}

/// Removes the nodes of `source` after the first `keep` from the cluster without losing a slot or a
/// key: their slots move to the first `keep` nodes, staying replicas of leaving primaries are
/// reattached, the staying nodes forget the leaving ones and the leaving ones reset. The leaving
/// nodes must still be reachable; stop them only after this returns `Ok`.
///
/// # Errors
/// `keep` below the minimum or not whole groups, an unreachable node, a refused command, slots a
/// leaving primary still owns after the moves, or a cluster that does not settle.
pub async fn shrink(
    source: &(impl NodeSource + ?Sized),
    keep: usize,
    replicas_per_primary: usize,
    opts: Options,
) -> Result<ShrinkOutcome, ClusterError> {
    let nodes = source.nodes();
    let group = replicas_per_primary + 1;
    if !keep.is_multiple_of(group) || keep / group < plan::MIN_PRIMARIES || keep > nodes.len() {
        return Err(ClusterError::BadTopology {
            nodes: keep,
            replicas_per_primary,
        });
    }
    let mut peers = connect(nodes, opts).await?;
    let removed: Vec<String> = peers[keep..].iter().map(|p| p.node.name.clone()).collect();
    let leaving: BTreeSet<String> = peers[keep..].iter().map(|p| p.id.clone()).collect();
    let view = peers[0].view().await?;
    if view.iter().any(|n| !n.slots.is_empty()) {
        wait_state_ok(&mut peers[..keep], opts).await?;
    }
    let slots_moved = drain_slots(&mut peers, keep, replicas_per_primary, &leaving, opts).await?;
    let replicas_reattached = reattach(&mut peers, keep, replicas_per_primary, &leaving).await?;

    let mut forgets = 0;
    for p in &mut peers[..keep] {
        let known: Vec<String> = p
            .view()
            .await?
            .into_iter()
            .filter(|n| leaving.contains(&n.id))
            .map(|n| n.id)
            .collect();
        for id in known {
            p.cmd(&["CLUSTER", "FORGET", &id]).await?;
            forgets += 1;
        }
    }
    let mut resets = 0;
    for p in &mut peers[keep..] {
        if p.view().await?.len() > 1 {
            p.cmd(&["CLUSTER", "RESET", "SOFT"]).await?;
            resets += 1;
        }
    }
    let wait = Settle::new(opts);
    for p in &mut peers[..keep] {
        loop {
            let still = p.view().await?.iter().filter(|n| leaving.contains(&n.id)).count();
            if still == 0 {
                break;
            }
            wait.until(|| format!("{} to forget {still} leaving nodes", p.node.name))
                .await?;
        }
    }
    if peers[0].view().await?.iter().any(|n| !n.slots.is_empty()) {
        wait_state_ok(&mut peers[..keep], opts).await?;
    }
    Ok(ShrinkOutcome {
        removed,
        slots_moved,
        replicas_reattached,
        forgets,
        resets,
    })
}

/// Moves every slot of the leaving primaries onto the staying ones and waits until every staying
/// node sees the leaving ones own nothing.
async fn drain_slots(
    peers: &mut [Peer],
    keep: usize,
    replicas_per_primary: usize,
    leaving: &BTreeSet<String>,
    opts: Options,
) -> Result<usize, ClusterError> {
    let view = peers[0].view().await?;
    let index_of = |id: &str| peers.iter().position(|p| p.id == id);
    let mut staying: Vec<(usize, Vec<u16>)> = view
        .iter()
        .filter(|n| n.primary && !n.slots.is_empty() && !leaving.contains(&n.id))
        .filter_map(|n| Some((index_of(&n.id)?, n.slots.clone())))
        .collect();
    staying.sort_by_key(|(_, slots)| slots.iter().min().copied());
    let mut going: Vec<(usize, Vec<u16>)> = view
        .iter()
        .filter(|n| n.primary && !n.slots.is_empty() && leaving.contains(&n.id))
        .filter_map(|n| Some((index_of(&n.id)?, n.slots.clone())))
        .collect();
    going.sort_by_key(|(_, slots)| slots.iter().min().copied());
    if going.is_empty() {
        return Ok(0);
    }
    // Planned primaries among the staying nodes that are still empty masters receive slots too.
    let wanted = keep / (replicas_per_primary + 1);
    for (i, role) in plan::roles(keep, replicas_per_primary).iter().enumerate() {
        if staying.len() >= wanted {
            break;
        }
        let empty_master = view
            .iter()
            .any(|n| n.id == peers[i].id && n.primary && n.slots.is_empty());
        if matches!(role, plan::Role::Primary { .. }) && empty_master && !staying.iter().any(|(o, _)| *o == i)
        {
            staying.push((i, Vec::new()));
        }
    }
    let keep_primaries = staying.len();
    let owners: Vec<(usize, Vec<u16>)> = staying.into_iter().chain(going).collect();
    let owned: Vec<Vec<u16>> = owners.iter().map(|(_, s)| s.clone()).collect();
    let moves = plan::drain(&owned, keep_primaries);
    // A drained primary may turn itself into a replica (Redis 7's replica migration), and SETSLOT
    // is refused on replicas: only the staying primaries hear about moves besides source and target.
    let staying_peers: Vec<usize> = owners[..keep_primaries].iter().map(|(i, _)| *i).collect();
    wait_epochs_settled(peers, opts).await?;
    for m in &moves {
        move_slot(peers, &staying_peers, owners[m.from].0, owners[m.to].0, m.slot).await?;
    }
    let wait = Settle::new(opts);
    for p in &mut peers[..keep] {
        loop {
            let left: usize = p
                .view()
                .await?
                .iter()
                .filter(|n| n.primary && leaving.contains(&n.id))
                .map(|n| n.slots.len())
                .sum();
            if left == 0 {
                break;
            }
            wait.until(|| format!("{} to see {left} slots leave the removed primaries", p.node.name))
                .await?;
        }
    }
    Ok(moves.len())
}

/// Staying replicas of leaving primaries replicate their planned primary (or whoever replaced it).
async fn reattach(
    peers: &mut [Peer],
    keep: usize,
    replicas_per_primary: usize,
    leaving: &BTreeSet<String>,
) -> Result<usize, ClusterError> {
    let roles = plan::roles(keep, replicas_per_primary);
    let view = peers[0].view().await?;
    let by_id: BTreeMap<String, plan::ObservedNode> = view.into_iter().map(|n| (n.id.clone(), n)).collect();
    let mut reattached = 0;
    for (i, role) in roles.iter().enumerate() {
        let follows_leaver = by_id
            .get(&peers[i].id)
            .and_then(|n| n.replica_of.as_ref())
            .is_some_and(|primary| leaving.contains(primary));
        if !follows_leaver {
            continue;
        }
        let planned = match role {
            plan::Role::Replica { primary } => peers[*primary].id.clone(),
            // A planned primary that ended up replicating a leaver (a failover moved it): any
            // staying primary that serves slots will do; take the lowest ordinal.
            plan::Role::Primary { .. } => {
                let serving = peers[..keep]
                    .iter()
                    .find(|p| by_id.get(&p.id).is_some_and(|n| n.primary && !n.slots.is_empty()));
                match serving {
                    Some(p) => p.id.clone(),
                    None => continue,
                }
            }
        };
        let target = match by_id.get(&planned) {
            Some(n) if !n.primary => n.replica_of.clone().unwrap_or_else(|| planned.clone()),
            _ => planned,
        };
        if target == peers[i].id || leaving.contains(&target) {
            continue;
        }
        peers[i].cmd(&["CLUSTER", "REPLICATE", &target]).await?;
        reattached += 1;
    }
    Ok(reattached)
}

async fn meet(peers: &mut [Peer], opts: Options) -> Result<usize, ClusterError> {
    set_fresh_epochs(peers).await?;
    let known: BTreeSet<String> = peers[0].view().await?.into_iter().map(|n| n.id).collect();
    let mut met = 0;
    for i in 1..peers.len() {
        if known.contains(&peers[i].id) {
            continue;
        }
        let (ip, port) = peers[i].ip_port()?;
        let (ip, port) = (ip.to_owned(), port.to_owned());
        peers[0].cmd(&["CLUSTER", "MEET", &ip, &port]).await?;
        met += 1;
    }
    let ids: BTreeSet<String> = peers.iter().map(|p| p.id.clone()).collect();
    let wait = Settle::new(opts);
    for p in peers.iter_mut() {
        loop {
            let view = p.view().await?;
            let seen: BTreeSet<String> = view.iter().filter(|n| !n.failed).map(|n| n.id.clone()).collect();
            if ids.is_subset(&seen) {
                break;
            }
            wait.until(|| format!("{} to see all {} nodes", p.node.name, ids.len()))
                .await?;
        }
    }
    Ok(met)
}

/// Makes the planned primaries that were left replicas without slots ([`plan::stranded_primaries`])
/// empty masters again: `CLUSTER RESET SOFT` (a replica's copy of its primary's data is dropped;
/// it keeps its id and epochs), `CLUSTER BUMPEPOCH` (an epoch of its own), then a `CLUSTER MEET`
/// from the first node, and a wait until every
/// node sees it as a master. Returns how many were met again.
async fn reclaim_stranded_primaries(
    peers: &mut [Peer],
    replicas_per_primary: usize,
    opts: Options,
) -> Result<usize, ClusterError> {
    let ids: Vec<String> = peers.iter().map(|p| p.id.clone()).collect();
    let stranded = plan::stranded_primaries(&ids, replicas_per_primary, &peers[0].view().await?);
    for &i in &stranded {
        tracing::warn!(node = %peers[i].node.name, "a planned primary is a replica without slots: resetting it to an empty master");
        peers[i].cmd(&["CLUSTER", "RESET", "SOFT"]).await?;
        // As a replica it carried its primary's configuration epoch, which a master must not
        // share: take a new one above every epoch it has seen (a soft reset keeps them).
        peers[i].cmd(&["CLUSTER", "BUMPEPOCH"]).await?;
        let (ip, port) = peers[i].ip_port()?;
        let (ip, port) = (ip.to_owned(), port.to_owned());
        peers[0].cmd(&["CLUSTER", "MEET", &ip, &port]).await?;
    }
    if stranded.is_empty() {
        return Ok(0);
    }
    let wait = Settle::new(opts);
    for p in peers.iter_mut() {
        loop {
            let view = p.view().await?;
            let seen = |id: &str| view.iter().any(|n| n.id == id && !n.failed);
            let masters = stranded
                .iter()
                .all(|i| view.iter().any(|n| n.id == ids[*i] && n.primary && !n.failed));
            if ids.iter().all(|id| seen(id)) && masters {
                break;
            }
            wait.until(|| format!("{} to see the reset nodes as masters", p.node.name))
                .await?;
        }
    }
    Ok(stranded.len())
}

/// Gives each node that has never been in a cluster (it knows only itself, epoch 0) its own
/// configuration epoch above every epoch the others use, before anyone meets it
/// ([`plan::fresh_epochs`]).
async fn set_fresh_epochs(peers: &mut [Peer]) -> Result<(), ClusterError> {
    let mut fresh = Vec::new();
    let mut highest = 0;
    for (i, p) in peers.iter_mut().enumerate() {
        let view = p.view().await?;
        let me_fresh = view.len() == 1 && view.iter().all(|n| n.config_epoch == 0 && n.slots.is_empty());
        if me_fresh {
            fresh.push(i);
        } else {
            let current = p.text(&["CLUSTER", "INFO"]).await?;
            let current = plan::info_field(&current, "cluster_current_epoch")
                .and_then(|e| e.parse::<u64>().ok())
                .unwrap_or(0);
            let most = view.iter().map(|n| n.config_epoch).max().unwrap_or(0);
            highest = highest.max(current).max(most);
        }
    }
    for (i, epoch) in fresh.iter().zip(plan::fresh_epochs(highest, fresh.len())) {
        peers[*i]
            .cmd(&["CLUSTER", "SET-CONFIG-EPOCH", &epoch.to_string()])
            .await?;
    }
    Ok(())
}

/// Waits until [`plan::epochs_unsettled`] finds nothing: every node agrees on each primary's
/// configuration epoch and none is shared, so the epoch a slot's new owner takes is the highest.
async fn wait_epochs_settled(peers: &mut [Peer], opts: Options) -> Result<(), ClusterError> {
    let wait = Settle::new(opts);
    loop {
        let mut views = Vec::with_capacity(peers.len());
        for p in peers.iter_mut() {
            views.push(p.view().await?);
        }
        let Some(why) = plan::epochs_unsettled(&views) else {
            return Ok(());
        };
        wait.until(|| format!("configuration epochs to settle before moving slots ({why})"))
            .await?;
    }
}

async fn assign_slots(
    peers: &mut [Peer],
    replicas_per_primary: usize,
    opts: Options,
) -> Result<(usize, usize), ClusterError> {
    let roles = plan::roles(peers.len(), replicas_per_primary);
    let wanted_primaries = peers.len() / (replicas_per_primary + 1);
    let view = peers[0].view().await?;
    let by_id: BTreeMap<&str, &plan::ObservedNode> = view.iter().map(|n| (n.id.as_str(), n)).collect();
    let index_of = |id: &str| peers.iter().position(|p| p.id == id);

    // Current owners, ordered by their lowest slot; then planned primaries that are still empty masters.
    let mut owners: Vec<(usize, Vec<u16>)> = view
        .iter()
        .filter(|n| n.primary && !n.slots.is_empty())
        .filter_map(|n| Some((index_of(&n.id)?, n.slots.clone())))
        .collect();
    owners.sort_by_key(|(_, slots)| slots.iter().min().copied());
    let fresh = owners.is_empty();
    for (i, role) in roles.iter().enumerate() {
        if owners.len() >= wanted_primaries {
            break;
        }
        let empty_master = by_id
            .get(peers[i].id.as_str())
            .is_some_and(|n| n.primary && n.slots.is_empty());
        if matches!(role, plan::Role::Primary { .. }) && empty_master && !owners.iter().any(|(o, _)| *o == i)
        {
            owners.push((i, Vec::new()));
        }
    }

    let mut added = 0;
    if fresh {
        for ((i, _), (a, b)) in owners.iter().zip(plan::slot_plan(owners.len())) {
            peers[*i]
                .cmd(&["CLUSTER", "ADDSLOTSRANGE", &a.to_string(), &b.to_string()])
                .await?;
            added += usize::from(b - a) + 1;
        }
        return Ok((added, 0));
    }

    let owned: Vec<Vec<u16>> = owners.iter().map(|(_, s)| s.clone()).collect();
    let free = plan::unassigned(&owned);
    if !free.is_empty()
        && let Some(smallest) = (0..owners.len()).min_by_key(|k| owners[*k].1.len())
    {
        for (a, b) in plan::ranges(&free) {
            peers[owners[smallest].0]
                .cmd(&["CLUSTER", "ADDSLOTSRANGE", &a.to_string(), &b.to_string()])
                .await?;
        }
        added = free.len();
        owners[smallest].1.extend(free);
    }

    let owned: Vec<Vec<u16>> = owners.iter().map(|(_, s)| s.clone()).collect();
    let moves = plan::rebalance(&owned);
    if !moves.is_empty() {
        wait_epochs_settled(peers, opts).await?;
    }
    let primary_peers: Vec<usize> = owners.iter().map(|(i, _)| *i).collect();
    for m in &moves {
        move_slot(
            peers,
            &primary_peers,
            primary_peers[m.from],
            primary_peers[m.to],
            m.slot,
        )
        .await?;
    }
    Ok((added, moves.len()))
}

async fn move_slot(
    peers: &mut [Peer],
    primaries: &[usize],
    from: usize,
    to: usize,
    slot: u16,
) -> Result<(), ClusterError> {
    let s = slot.to_string();
    let (from_id, to_id) = (peers[from].id.clone(), peers[to].id.clone());
    let (to_ip, to_port) = peers[to].ip_port()?;
    let (to_ip, to_port) = (to_ip.to_owned(), to_port.to_owned());
    peers[to]
        .cmd(&["CLUSTER", "SETSLOT", &s, "IMPORTING", &from_id])
        .await?;
    peers[from]
        .cmd(&["CLUSTER", "SETSLOT", &s, "MIGRATING", &to_id])
        .await?;
    loop {
        let keys = match peers[from].cmd(&["CLUSTER", "GETKEYSINSLOT", &s, "100"]).await? {
            Reply::Array(Some(items)) => items
                .into_iter()
                .filter_map(|k| match k {
                    Reply::Bulk(Some(b)) => String::from_utf8(b).ok(),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        if keys.is_empty() {
            break;
        }
        let mut args = vec![
            "MIGRATE",
            to_ip.as_str(),
            to_port.as_str(),
            "",
            "0",
            "5000",
            "KEYS",
        ];
        args.extend(keys.iter().map(String::as_str));
        peers[from].cmd(&args).await?;
    }
    // Target first, then source, then the rest (the order the cluster specification recommends).
    peers[to].cmd(&["CLUSTER", "SETSLOT", &s, "NODE", &to_id]).await?;
    match peers[from].cmd(&["CLUSTER", "SETSLOT", &s, "NODE", &to_id]).await {
        Ok(_) => {}
        // A source that gave away its last slot may already have learnt so from the target's gossip
        // and turned itself into a replica (Redis 7's replica migration), which refuses SETSLOT: it
        // knows the new owner already.
        Err(ClusterError::Node {
            source: RespError::Command { message, .. },
            ..
        }) if message.contains("only with masters") => {}
        Err(e) => return Err(e),
    }
    for &p in primaries {
        if p != from && p != to {
            peers[p].cmd(&["CLUSTER", "SETSLOT", &s, "NODE", &to_id]).await?;
        }
    }
    Ok(())
}

async fn attach_replicas(
    peers: &mut [Peer],
    replicas_per_primary: usize,
    opts: Options,
) -> Result<usize, ClusterError> {
    let roles = plan::roles(peers.len(), replicas_per_primary);
    let view = peers[0].view().await?;
    let by_id: BTreeMap<String, plan::ObservedNode> = view.into_iter().map(|n| (n.id.clone(), n)).collect();
    let mut attached = 0;
    for (i, role) in roles.iter().enumerate() {
        let plan::Role::Replica { primary } = role else {
            continue;
        };
        let Some(me) = by_id.get(&peers[i].id) else {
            continue;
        };
        if !me.primary || !me.slots.is_empty() {
            continue;
        }
        // After a failover the planned primary may itself be a replica: follow it to its primary.
        let planned = &peers[*primary].id;
        let target = match by_id.get(planned) {
            Some(n) if !n.primary => n.replica_of.clone().unwrap_or_else(|| planned.clone()),
            _ => planned.clone(),
        };
        // The replica must know the target as a master before REPLICATE is accepted.
        let wait = Settle::new(opts);
        loop {
            match peers[i].cmd(&["CLUSTER", "REPLICATE", &target]).await {
                Ok(_) => break,
                Err(e) => {
                    let node = &peers[i].node.name;
                    wait.until(|| format!("{node} to accept CLUSTER REPLICATE {target} ({e})"))
                        .await?;
                }
            }
        }
        attached += 1;
    }
    Ok(attached)
}

/// Waits until every node's view shows the planned number of replicas (gossip is asynchronous).
async fn wait_replicas_visible(
    peers: &mut [Peer],
    replicas_per_primary: usize,
    opts: Options,
) -> Result<(), ClusterError> {
    let want = peers.len() - peers.len() / (replicas_per_primary + 1);
    let wait = Settle::new(opts);
    for p in peers.iter_mut() {
        loop {
            let replicas = p
                .view()
                .await?
                .iter()
                .filter(|n| n.replica_of.is_some() && !n.failed)
                .count();
            if replicas >= want {
                break;
            }
            wait.until(|| format!("{} to see {want} replicas (sees {replicas})", p.node.name))
                .await?;
        }
    }
    Ok(())
}

async fn wait_state_ok(peers: &mut [Peer], opts: Options) -> Result<(), ClusterError> {
    let wait = Settle::new(opts);
    for p in peers.iter_mut() {
        loop {
            let info = p.text(&["CLUSTER", "INFO"]).await?;
            if plan::info_field(&info, "cluster_state") == Some("ok") {
                break;
            }
            wait.until(|| format!("cluster_state:ok on {}", p.node.name))
                .await?;
        }
    }
    Ok(())
}
