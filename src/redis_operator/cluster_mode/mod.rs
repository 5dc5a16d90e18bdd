//! cluster_mode: forms and maintains a Redis Cluster over a set of nodes.
//!
//! The operator's reconcile knows the nodes as pods; the tests know them as `redis-server` processes
//! on loopback ports. Both hand this module a [`NodeSource`] (the nodes and their addresses, in
//! ordinal order) and call [`converge`], which talks to the nodes over RESP and brings the cluster to
//! the shape [`plan`] describes. Every step first observes and only acts on a difference, so calling
//! it again on a healthy cluster sends no writes, and a run interrupted half-way is finished by the
//! next one. The steps:
//!
//! 1. **Meet.** Ask each node for its id (`CLUSTER MYID`); the first node sends `CLUSTER MEET` to every
//!    node it does not know yet; wait until every node's `CLUSTER NODES` lists all ids, none in
//!    handshake.
//! 2. **Slots.** If no primary owns a slot, give the planned primaries the even split with
//!    `CLUSTER ADDSLOTSRANGE`. Otherwise keep the current owners (whatever failovers happened), add
//!    planned primaries that are still empty masters until there are `size / (replicasPerPrimary+1)`
//!    primaries, hand slots nobody owns to the smallest primary, and move slots along
//!    [`plan::rebalance`]. A move is the cluster's live re-sharding protocol: `SETSLOT IMPORTING` on the
//!    target, `SETSLOT MIGRATING` on the source, `MIGRATE` of the keys `GETKEYSINSLOT` returns until
//!    none are left, then `SETSLOT NODE` on the target, the source and every other primary. Slots
//!    holding keys therefore move with their data; empty slots cost four commands.
//! 3. **Replicas.** Each planned replica that is still an empty master runs `CLUSTER REPLICATE` to its
//!    group's primary (or whoever replaced it after a failover). Existing replicas are left alone.
//! 4. **Wait** until every node reports `cluster_state:ok`.
//!
//! Shrinking is not done: removing primaries would need their slots drained first, so the reconcile
//! refuses a smaller `size` in cluster mode while the pods above it exist
//! ([`super::desired::check_cluster_shrink`]: `Degraded` with reason `ShrinkNotSupported`, nothing applied).

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
    let met = meet(&mut peers, opts).await?;
    // A node that just joined answers CLUSTERDOWN (and refuses MIGRATE) until gossip has taught it
    // the slot map; when the cluster already serves slots, wait for every node to say so first.
    let serving = peers[0].view().await?.iter().any(|n| !n.slots.is_empty());
    if serving {
        wait_state_ok(&mut peers, opts).await?;
    }
    let (slots_added, slots_moved) = assign_slots(&mut peers, replicas_per_primary).await?;
    let replicas_attached = attach_replicas(&mut peers, replicas_per_primary, opts).await?;
    wait_replicas_visible(&mut peers, replicas_per_primary, opts).await?;
    wait_state_ok(&mut peers, opts).await?;
    let primaries = peers[0]
        .view()
        .await?
        .iter()
        .filter(|n| n.primary && !n.slots.is_empty())
        .count();
    Ok(Outcome {
        met,
        slots_added,
        slots_moved,
        replicas_attached,
        primaries,
    })
}

async fn meet(peers: &mut [Peer], opts: Options) -> Result<usize, ClusterError> {
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
    let deadline = tokio::time::Instant::now() + opts.settle_timeout;
    for p in peers.iter_mut() {
        loop {
            let view = p.view().await?;
            let seen: BTreeSet<String> = view.iter().filter(|n| !n.failed).map(|n| n.id.clone()).collect();
            if ids.is_subset(&seen) {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                return Err(ClusterError::NotConverged {
                    what: format!("{} to see all {} nodes", p.node.name, ids.len()),
                    timeout: opts.settle_timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(met)
}

async fn assign_slots(
    peers: &mut [Peer],
    replicas_per_primary: usize,
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
    peers[from]
        .cmd(&["CLUSTER", "SETSLOT", &s, "NODE", &to_id])
        .await?;
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
        let deadline = tokio::time::Instant::now() + opts.settle_timeout;
        loop {
            match peers[i].cmd(&["CLUSTER", "REPLICATE", &target]).await {
                Ok(_) => break,
                Err(e) if tokio::time::Instant::now() > deadline => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
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
    let deadline = tokio::time::Instant::now() + opts.settle_timeout;
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
            if tokio::time::Instant::now() > deadline {
                return Err(ClusterError::NotConverged {
                    what: format!("{} to see {want} replicas (sees {replicas})", p.node.name),
                    timeout: opts.settle_timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

async fn wait_state_ok(peers: &mut [Peer], opts: Options) -> Result<(), ClusterError> {
    let deadline = tokio::time::Instant::now() + opts.settle_timeout;
    for p in peers.iter_mut() {
        loop {
            let info = p.text(&["CLUSTER", "INFO"]).await?;
            if plan::info_field(&info, "cluster_state") == Some("ok") {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                return Err(ClusterError::NotConverged {
                    what: format!("cluster_state:ok on {}", p.node.name),
                    timeout: opts.settle_timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}
