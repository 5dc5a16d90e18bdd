//! graph: one channel's upgrade graph, and the rules OLM v0 applies to it.
//!
//! # What a channel is
//!
//! A channel of a package is a list of entries. Each entry names a bundle (its CSV name, such as
//! `redis-operator.v0.2.1`) and may carry three kinds of upgrade edges, all pointing from the newer
//! entry to older ones:
//!
//! - `replaces: X`: this entry is the next step after `X`;
//! - `skips: [X, Y]`: this entry may be installed directly over `X` or `Y`, and `X` and `Y` are
//!   considered withdrawn: OLM never installs them from this channel;
//! - `skipRange: ">=1.0.0 <1.3.0"`: this entry may be installed directly over any installed
//!   version inside the range, whatever its name (blang/semver range grammar, see
//!   [`crate::version_range`]).
//!
//! [`ChannelGraph`] holds one channel's entries (input order kept, duplicates dropped and
//! reported) and answers the questions OLM asks of a channel: which entry is the head, is the
//! channel well formed, in which order does the resolver rank entries, and which entry replaces an
//! installed version. It is pure: no I/O, and every input, however broken, yields an answer or a
//! [`GraphError`], never a panic or an endless loop.
//!
//! # The head (in-degree rule)
//!
//! The head is the entry nothing else in the channel replaces or skips. OLM finds it by counting
//! incoming edges: an entry `y` with `replaces: x` or with `x` in its `skips` gives `x` an incoming
//! edge. Only edges whose target is an entry of the same channel count (a `replaces` naming a
//! bundle that is not in the channel is allowed and simply dangles). `skipRange` edges never count:
//! they match versions, not entries. Exactly one entry must have no incoming edge. Zero heads
//! ([`GraphError::NoHead`]) means the replaces/skips edges loop back on themselves; several heads
//! ([`GraphError::MultipleHeads`]) means the channel splits into independent chains and OLM cannot
//! tell which one is newest. Sources: operator-registry `alpha/model/model.go` (`Channel.Head`) for
//! `opm validate` and the gRPC `GetPackage` head, and operator-lifecycle-manager
//! `pkg/controller/registry/resolver/resolver.go` (`sortChannel`) for the resolver; both use the
//! same in-degree rule.
//!
//! # `opm validate`'s chain rules ([`ChannelGraph::problems`])
//!
//! operator-registry's `validateReplacesChain` checks, for a non-empty channel:
//!
//! 1. there is exactly one head;
//! 2. following `replaces` from the head reaches every entry that no entry `skips`; the walk stops
//!    when the next `replaces` target is itself skipped by some entry (a skipped entry "cuts" the
//!    chain, and whatever hangs below it needs no reaching). Entries neither reached nor skipped
//!    are *stranded* ([`GraphError::Stranded`], names sorted like opm sorts them);
//! 3. the `replaces` walk never revisits an entry ([`GraphError::Cycle`], the path printed from the
//!    first revisited entry, `a -> b -> a`, exactly as opm prints it);
//! 4. the tail may replace an entry that does not exist in the channel.
//!
//! opm stops at the first rule that fails; [`ChannelGraph::problems`] reports every problem at once
//! (duplicates, the head problem, every cycle, the stranded entries), so a user fixes the channel
//! in one go. The set of channels with at least one problem is exactly the set opm rejects: a
//! cycle is only reported when it goes through `replaces` edges whose targets no entry skips,
//! which is the graph opm's walk follows, so a loop made harmless by a `skips` (opm accepts it)
//! is not reported either. Stranded entries are only computed when the head is unique (with no
//! head, or several, "reachable from the head" has no meaning). An empty channel has no graph
//! problems: "a channel must contain at least one bundle" is the catalog model's rule.
//!
//! # The resolver's channel order ([`ChannelGraph::ordered`])
//!
//! OLM's resolver (`sortChannel`) ranks a channel's entries before choosing: find the head by the
//! in-degree rule, then walk `replaces` from the head to the tail, keeping every entry that no entry
//! skips and dropping the skipped ones (the walk goes *through* skipped entries; only the entries
//! themselves are omitted). No head, several heads, or a walk that revisits an entry make the
//! channel unusable for resolution; these are plain errors in OLM (`ErrorPreventedResolution`),
//! not "no candidate". Unlike opm, the resolver does not care about stranded entries: they are
//! silently left out of the order. Note the two walks differ on one corner: opm stops at a skipped
//! `replaces` target, the resolver walks on, so a cycle hidden behind a skipped entry passes
//! `opm validate` but fails [`ChannelGraph::ordered`] (as it fails OLM's resolution). Because
//! skipped entries are absent from the order, they are never chosen, neither as an upgrade target
//! nor as the entry a fresh Subscription installs (upstream test
//! `TestSolveOperatorsWithSkipsPreventingSelection`).
//!
//! # The next hop ([`ChannelGraph::next_hop`])
//!
//! For a Subscription with an installed CSV, OLM's `getSubscriptionVariables` keeps only the
//! channel entries that can replace the installed one *in one step* (`cache/predicates.go`): the
//! entry `replaces` the installed name, or lists it in `skips`, or has a `skipRange` containing the
//! installed version. There is no transitive walk. The candidates keep the channel order, head
//! first, and the SAT solver prefers earlier candidates, so the newest eligible entry wins. The
//! next hop is therefore: the first entry of [`ChannelGraph::ordered`] that is eligible and is not
//! the installed entry itself (same name; or, when the installed name is unknown, same version).
//! When several edges make an entry eligible, the hop reports the most specific one, in the order
//! `replaces`, `skips`, `skipRange`: an explicit edge naming the installed entry explains the hop
//! better than a range that happens to contain its version. If the channel order cannot be
//! computed (no head, several heads, cycle) there is no hop, as OLM would not resolve.
//!
//! # The upgrade path ([`ChannelGraph::upgrade_path`])
//!
//! OLM installs one hop per InstallPlan; once the new CSV succeeds, the next resolution starts from
//! it. The upgrade path is that hop repeated until the head is installed, one [`Hop`] per
//! InstallPlan. It is empty when the installed entry is already the head. It fails with
//! [`GraphError::NoUpgradePath`] when, before the head, no entry can replace the current one (the
//! Subscription would sit at `AtLatestKnown` forever), and with [`GraphError::Cycle`] if the hops
//! would come back to an entry already installed on the way (possible only with crossing
//! `skipRange`s); the walk is bounded by the channel size, so it always ends.
//!
//! # Worked example (reference §2.4)
//!
//! `a.v1 ← a.v2 ← a.v3` by `replaces`, and `a.v3` has `skipRange: ">=1.0.0 <1.3.0"`. From `a.v1`
//! (1.1.0) the eligible entries in order are `a.v3` (range) and `a.v2` (replaces), so the path is one
//! hop `a.v3` by `skipRange`. Without the range it is `a.v2` then `a.v3`. If `a.v3` instead
//! `skips: [a.v2]`, `a.v2` leaves the order, and `a.v1` reaches `a.v3` only if `a.v3` replaces or
//! skips it.
//!
//! # Cost
//!
//! Building a graph is linear in the channel's edges plus one `skipRange` test per pair of entries
//! (quadratic within one channel, never across channels). The next hop from every entry of the
//! channel is computed once at construction, so an upgrade path costs one scan for its first hop
//! and constant time per further hop.

pub mod render;

pub use render::RenderOptions;

use std::{
    cmp::Ordering,
    collections::{HashMap, HashSet},
    fmt,
};

use petgraph::{
    Direction,
    graph::{DiGraph, NodeIndex},
    visit::EdgeRef,
};
use semver::Version;
use serde::{Deserialize, Serialize};

use crate::version_range::{self, Range};

/// One entry of a channel, as the catalog model hands it over (FBC `olm.channel` entry plus the
/// bundle's version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Bundle (CSV) name, unique within the channel.
    pub name: String,
    /// The bundle's version (`olm.package` property); `None` when unknown or unparsable, in which
    /// case no `skipRange` can match it.
    pub version: Option<Version>,
    /// The entry this one replaces, if any; it may be absent from the channel (the tail's replaces
    /// often names a release that was removed).
    pub replaces: Option<String>,
    /// Entries this one skips; they are never installed from this channel.
    pub skips: Vec<String>,
    /// Versions this entry may be installed over directly, whatever their name.
    pub skip_range: Option<Range>,
}

/// The kind of an upgrade edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EdgeKind {
    /// `replaces: X`.
    #[serde(rename = "replaces")]
    Replaces,
    /// `X` in `skips`.
    #[serde(rename = "skips")]
    Skips,
    /// `skipRange` contains the version of `X`.
    #[serde(rename = "skipRange")]
    SkipRange,
}

impl EdgeKind {
    /// The FBC field name of this edge kind (`replaces`, `skips`, `skipRange`).
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Replaces => "replaces",
            EdgeKind::Skips => "skips",
            EdgeKind::SkipRange => "skipRange",
        }
    }
}

impl fmt::Display for EdgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One upgrade edge, from the newer entry to an older one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// The newer entry (always in the channel).
    pub from: String,
    /// The older entry; for `replaces` and `skips` it may be absent from the channel.
    pub to: String,
    /// Which field of `from` creates the edge.
    pub kind: EdgeKind,
}

/// What is installed: the CSV name (if known) and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// Installed CSV name; `None` when only the version is known (then only `skipRange` can match).
    pub name: Option<String>,
    /// Installed CSV version (`spec.version`).
    pub version: Version,
}

impl fmt::Display for Installed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{name} (version {})", self.version),
            None => write!(f, "version {}", self.version),
        }
    }
}

/// One step of an upgrade: the entry OLM installs next and the edge that allows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hop {
    /// Entry (CSV) name installed by this step.
    pub name: String,
    /// Its version, if known.
    pub version: Option<Version>,
    /// The edge of `name` that makes it a valid replacement of the previous step.
    pub edge: EdgeKind,
}

/// A broken channel-graph rule, or an upgrade that cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// Every entry is replaced or skipped by another entry.
    #[error(
        "no channel head found in graph: every entry is replaced or skipped by another entry \
         (exactly one entry, the newest, must not be replaced or skipped; break the loop of \
         replaces/skips edges)"
    )]
    NoHead,
    /// Several entries are replaced or skipped by no other entry.
    #[error(
        "multiple channel heads found in graph: {} (exactly one entry must not be replaced or \
         skipped by another; make one of them replace the other)",
        .heads.join(", ")
    )]
    MultipleHeads {
        /// The head candidates, sorted by name.
        heads: Vec<String>,
    },
    /// Following `replaces` comes back to an entry already visited.
    #[error(
        "detected cycle in replaces chain of upgrade graph: {} (an entry cannot replace one of its \
         own successors; remove one of these replaces edges)",
        .path.join(" -> ")
    )]
    Cycle {
        /// The loop, starting and ending with the same entry.
        path: Vec<String>,
    },
    /// Entries not reachable from the head along `replaces`, and skipped by nobody.
    #[error(
        "channel contains one or more stranded bundles: {} (they cannot be reached from the head \
         by following replaces and no entry skips them; make an entry of the chain replace or \
         skip them, or remove them from the channel)",
        .names.join(", ")
    )]
    Stranded {
        /// The stranded entries, sorted by name.
        names: Vec<String>,
    },
    /// The same entry name appears more than once in the channel.
    #[error(
        "duplicate channel entry {name} (entry names must be unique within a channel; the first \
         occurrence is used; remove the others)"
    )]
    DuplicateEntry {
        /// The repeated entry name.
        name: String,
    },
    /// Nothing in the channel can replace the installed (or reached) entry, and it is not the head.
    #[error(
        "no upgrade path from {from}: no entry of the channel replaces it, skips it, or has a \
         skipRange containing its version (make a newer entry replace or skip it, or widen a \
         skipRange to include its version)"
    )]
    NoUpgradePath {
        /// The entry (name and version) the upgrade is stuck at.
        from: String,
    },
}

/// One channel's upgrade graph. See the module documentation for the rules.
#[derive(Debug, Clone)]
pub struct ChannelGraph {
    /// Entries in input order, first occurrence of each name only.
    entries: Vec<Entry>,
    /// Name → index into `entries`.
    index: HashMap<String, usize>,
    /// Names that appeared more than once (reported once each, in order of first repetition).
    duplicates: Vec<String>,
    /// Node `i` is `entries[i]`; edges point from the newer entry to existing older ones
    /// (replaces, skips and every skipRange match).
    graph: DiGraph<usize, EdgeKind>,
    /// Every name listed in some entry's `skips`, present in the channel or not.
    skipped: HashSet<String>,
    /// Entries with no incoming replaces/skips edge, in input order.
    heads: Vec<usize>,
    /// The resolver's order (head first), or why it cannot be computed.
    order: Result<Vec<usize>, GraphError>,
    /// Next hop from each entry (by index), computed once.
    hop_from_entry: Vec<Option<(usize, EdgeKind)>>,
}

impl ChannelGraph {
    /// Builds the graph of one channel. Never fails: duplicate names keep their first occurrence and
    /// are reported by [`ChannelGraph::problems`]; every other defect is reported there too.
    pub fn new(entries: Vec<Entry>) -> ChannelGraph {
        let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
        let mut index: HashMap<String, usize> = HashMap::with_capacity(entries.len());
        let mut duplicates: Vec<String> = Vec::new();
        for entry in entries {
            if index.contains_key(&entry.name) {
                if !duplicates.contains(&entry.name) {
                    duplicates.push(entry.name.clone());
                }
                continue;
            }
            index.insert(entry.name.clone(), kept.len());
            kept.push(entry);
        }
        let entries = kept;

        let mut graph: DiGraph<usize, EdgeKind> = DiGraph::with_capacity(entries.len(), entries.len());
        for i in 0..entries.len() {
            graph.add_node(i);
        }
        let mut skipped = HashSet::new();
        for (i, entry) in entries.iter().enumerate() {
            let from = NodeIndex::new(i);
            if let Some(&to) = entry.replaces.as_ref().and_then(|r| index.get(r)) {
                graph.add_edge(from, NodeIndex::new(to), EdgeKind::Replaces);
            }
            let mut seen_skips: HashSet<&str> = HashSet::new();
            for skip in &entry.skips {
                skipped.insert(skip.clone());
                if !seen_skips.insert(skip.as_str()) {
                    continue;
                }
                if let Some(&to) = index.get(skip) {
                    graph.add_edge(from, NodeIndex::new(to), EdgeKind::Skips);
                }
            }
            if let Some(range) = &entry.skip_range {
                for (j, other) in entries.iter().enumerate() {
                    if j != i && other.version.as_ref().is_some_and(|v| range.contains(v)) {
                        graph.add_edge(from, NodeIndex::new(j), EdgeKind::SkipRange);
                    }
                }
            }
        }

        let heads: Vec<usize> = (0..entries.len())
            .filter(|&i| {
                !graph
                    .edges_directed(NodeIndex::new(i), Direction::Incoming)
                    .any(|e| *e.weight() != EdgeKind::SkipRange)
            })
            .collect();

        let mut g = ChannelGraph {
            entries,
            index,
            duplicates,
            graph,
            skipped,
            heads,
            order: Err(GraphError::NoHead),
            hop_from_entry: Vec::new(),
        };
        g.order = g.compute_order();
        g.hop_from_entry = match &g.order {
            Ok(order) => g
                .entries
                .iter()
                .map(|e| g.scan_hop(order, Some(&e.name), e.version.as_ref()))
                .collect(),
            Err(_) => vec![None; g.entries.len()],
        };
        g
    }

    /// The entries, in input order (later duplicates removed).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry with this name, if it is in the channel.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).map(|&i| &self.entries[i])
    }

    /// Whether some entry of the channel lists `name` in its `skips` (whether or not `name` itself
    /// is in the channel). Skipped entries are never chosen as a hop or a fresh install.
    pub fn is_skipped(&self, name: &str) -> bool {
        self.skipped.contains(name)
    }

    /// The channel head: the single entry that no entry of the channel replaces or skips.
    pub fn head(&self) -> Result<&Entry, GraphError> {
        match self.heads.as_slice() {
            [] => Err(GraphError::NoHead),
            [one] => Ok(&self.entries[*one]),
            many => Err(GraphError::MultipleHeads {
                heads: self.sorted_names(many.iter().copied()),
            }),
        }
    }

    /// The resolver's order of the channel (OLM `sortChannel`): head first, then along `replaces`
    /// to the tail, skipped entries omitted; stranded entries are not included.
    pub fn ordered(&self) -> Result<Vec<&Entry>, GraphError> {
        match &self.order {
            Ok(order) => Ok(order.iter().map(|&i| &self.entries[i]).collect()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Every problem `opm validate`'s chain rules find in this channel (see the module docs):
    /// duplicate entries, then the head problem, then every replaces cycle, then stranded entries.
    /// Empty for a valid (or empty) channel.
    pub fn problems(&self) -> Vec<GraphError> {
        let mut problems: Vec<GraphError> = self
            .duplicates
            .iter()
            .map(|name| GraphError::DuplicateEntry { name: name.clone() })
            .collect();
        if self.entries.is_empty() {
            return problems;
        }
        let head = self.head();
        if let Err(e) = &head {
            problems.push(e.clone());
        }
        let head_index = head.ok().and_then(|h| self.index.get(&h.name).copied());
        for path in self.validate_cycles(head_index) {
            problems.push(GraphError::Cycle { path });
        }
        if let Some(h) = head_index {
            let mut reached = vec![false; self.entries.len()];
            let mut cur = Some(h);
            while let Some(i) = cur {
                if reached[i] {
                    break;
                }
                reached[i] = true;
                cur = self.validate_next(i);
            }
            let stranded: Vec<usize> = (0..self.entries.len())
                .filter(|&i| !reached[i] && !self.skipped.contains(&self.entries[i].name))
                .collect();
            if !stranded.is_empty() {
                problems.push(GraphError::Stranded {
                    names: self.sorted_names(stranded),
                });
            }
        }
        problems
    }

    /// Every upgrade edge, grouped by source entry in input order: its `replaces`, then its `skips`
    /// (in listed order, repeats removed), then one `skipRange` edge per channel entry (in input
    /// order) whose version the range contains. `replaces` and `skips` edges are listed even when
    /// their target is not in the channel.
    pub fn edges(&self) -> Vec<Edge> {
        let mut edges = Vec::new();
        for (i, entry) in self.entries.iter().enumerate() {
            if let Some(r) = &entry.replaces {
                edges.push(Edge {
                    from: entry.name.clone(),
                    to: r.clone(),
                    kind: EdgeKind::Replaces,
                });
            }
            let mut seen: HashSet<&str> = HashSet::new();
            for s in &entry.skips {
                if seen.insert(s.as_str()) {
                    edges.push(Edge {
                        from: entry.name.clone(),
                        to: s.clone(),
                        kind: EdgeKind::Skips,
                    });
                }
            }
            for j in self.skip_range_targets(i) {
                edges.push(Edge {
                    from: entry.name.clone(),
                    to: self.entries[j].name.clone(),
                    kind: EdgeKind::SkipRange,
                });
            }
        }
        edges
    }

    /// The entry OLM installs next over `from` (one InstallPlan), with the edge that allows it:
    /// the entry nearest the head, in [`ChannelGraph::ordered`] order, that replaces `from`'s name,
    /// skips it, or whose `skipRange` contains its version, other than `from` itself. `None` when
    /// nothing qualifies or when the channel order cannot be computed (see
    /// [`ChannelGraph::upgrade_path`] for the reason).
    pub fn next_hop(&self, from: &Installed) -> Option<Hop> {
        let order = self.order.as_ref().ok()?;
        self.scan_hop(order, from.name.as_deref(), Some(&from.version))
            .map(|(i, edge)| self.hop(i, edge))
    }

    /// The upgrade path from `from` to the head, one hop per InstallPlan, exactly as OLM would
    /// install it. Empty when `from` is the head already. Errors: the channel order's error (no
    /// head, several heads, cycle), [`GraphError::NoUpgradePath`] when some step before the head
    /// has no next hop, [`GraphError::Cycle`] when the hops would return to an entry already on
    /// the path.
    pub fn upgrade_path(&self, from: &Installed) -> Result<Vec<Hop>, GraphError> {
        let order = self.order.as_ref().map_err(Clone::clone)?;
        let Some(&head) = order.first() else {
            return Err(GraphError::NoHead);
        };
        let head_entry = &self.entries[head];
        let at_head = match &from.name {
            Some(name) => *name == head_entry.name,
            None => head_entry
                .version
                .as_ref()
                .is_some_and(|v| version_range::compare(v, &from.version) == Ordering::Equal),
        };
        if at_head {
            return Ok(Vec::new());
        }
        let Some(mut step) = self.scan_hop(order, from.name.as_deref(), Some(&from.version)) else {
            return Err(GraphError::NoUpgradePath {
                from: from.to_string(),
            });
        };
        let mut path: Vec<usize> = Vec::new();
        let mut hops = Vec::new();
        loop {
            let (i, edge) = step;
            if let Some(pos) = path.iter().position(|&p| p == i) {
                let mut cycle: Vec<String> = path[pos..]
                    .iter()
                    .map(|&p| self.entries[p].name.clone())
                    .collect();
                cycle.push(self.entries[i].name.clone());
                return Err(GraphError::Cycle { path: cycle });
            }
            path.push(i);
            hops.push(self.hop(i, edge));
            if i == head {
                return Ok(hops);
            }
            step = match self.hop_from_entry.get(i).copied().flatten() {
                Some(next) => next,
                None => {
                    return Err(GraphError::NoUpgradePath {
                        from: self.describe(i),
                    });
                }
            };
        }
    }

    /// Entries (by index) whose version this entry's `skipRange` contains, in input order.
    fn skip_range_targets(&self, i: usize) -> Vec<usize> {
        let mut targets: Vec<usize> = self
            .graph
            .edges_directed(NodeIndex::new(i), Direction::Outgoing)
            .filter(|e| *e.weight() == EdgeKind::SkipRange)
            .map(|e| e.target().index())
            .collect();
        targets.sort_unstable();
        targets.dedup();
        targets
    }

    /// The replaces target of `i` inside the channel, ignoring skipped status.
    fn replaces_index(&self, i: usize) -> Option<usize> {
        self.entries[i]
            .replaces
            .as_ref()
            .and_then(|r| self.index.get(r))
            .copied()
    }

    /// opm's walk step: the replaces target of `i`, unless it is absent or skipped by someone.
    fn validate_next(&self, i: usize) -> Option<usize> {
        let target = self.entries[i].replaces.as_ref()?;
        if self.skipped.contains(target) {
            return None;
        }
        self.index.get(target).copied()
    }

    /// Every cycle of opm's replaces walk graph, each reported once, as a path from the first
    /// entry of the loop reached back to itself. Walks start at the head (so the loop opm finds is
    /// reported the way opm reports it), then at every entry in input order.
    fn validate_cycles(&self, head: Option<usize>) -> Vec<Vec<String>> {
        // 0 = not visited, 1 = on the current walk, 2 = finished.
        let mut state = vec![0u8; self.entries.len()];
        let mut cycles = Vec::new();
        for start in head.into_iter().chain(0..self.entries.len()) {
            let mut walk: Vec<usize> = Vec::new();
            let mut cur = Some(start);
            while let Some(i) = cur {
                match state[i] {
                    0 => {
                        state[i] = 1;
                        walk.push(i);
                        cur = self.validate_next(i);
                    }
                    1 => {
                        if let Some(pos) = walk.iter().position(|&w| w == i) {
                            let mut path: Vec<String> = walk[pos..]
                                .iter()
                                .map(|&w| self.entries[w].name.clone())
                                .collect();
                            path.push(self.entries[i].name.clone());
                            cycles.push(path);
                        }
                        cur = None;
                    }
                    _ => cur = None,
                }
            }
            for w in walk {
                state[w] = 2;
            }
        }
        cycles
    }

    /// The resolver's order, following `sortChannel`.
    fn compute_order(&self) -> Result<Vec<usize>, GraphError> {
        let head = match self.heads.as_slice() {
            [] => return Err(GraphError::NoHead),
            [one] => *one,
            many => {
                return Err(GraphError::MultipleHeads {
                    heads: self.sorted_names(many.iter().copied()),
                });
            }
        };
        let mut visited = vec![false; self.entries.len()];
        let mut walk: Vec<usize> = Vec::new();
        let mut order = Vec::new();
        let mut cur = head;
        loop {
            visited[cur] = true;
            walk.push(cur);
            if !self.skipped.contains(&self.entries[cur].name) {
                order.push(cur);
            }
            let Some(next) = self.replaces_index(cur) else {
                break;
            };
            if visited[next] {
                let pos = walk.iter().position(|&w| w == next).unwrap_or(0);
                let mut path: Vec<String> = walk[pos..]
                    .iter()
                    .map(|&w| self.entries[w].name.clone())
                    .collect();
                path.push(self.entries[next].name.clone());
                return Err(GraphError::Cycle { path });
            }
            cur = next;
        }
        Ok(order)
    }

    /// The first entry of `order` that can replace (`name`, `version`) in one step, with the most
    /// specific edge allowing it.
    fn scan_hop(
        &self,
        order: &[usize],
        name: Option<&str>,
        version: Option<&Version>,
    ) -> Option<(usize, EdgeKind)> {
        order.iter().find_map(|&i| {
            let e = &self.entries[i];
            let is_self = match name {
                Some(n) => e.name == n,
                None => match (&e.version, version) {
                    (Some(a), Some(b)) => version_range::compare(a, b) == Ordering::Equal,
                    _ => false,
                },
            };
            if is_self {
                return None;
            }
            if let Some(n) = name {
                if e.replaces.as_deref() == Some(n) {
                    return Some((i, EdgeKind::Replaces));
                }
                if e.skips.iter().any(|s| s == n) {
                    return Some((i, EdgeKind::Skips));
                }
            }
            match (&e.skip_range, version) {
                (Some(range), Some(v)) if range.contains(v) => Some((i, EdgeKind::SkipRange)),
                _ => None,
            }
        })
    }

    fn hop(&self, i: usize, edge: EdgeKind) -> Hop {
        let e = &self.entries[i];
        Hop {
            name: e.name.clone(),
            version: e.version.clone(),
            edge,
        }
    }

    fn describe(&self, i: usize) -> String {
        let e = &self.entries[i];
        match &e.version {
            Some(v) => format!("{} (version {v})", e.name),
            None => format!("{} (no version)", e.name),
        }
    }

    fn sorted_names(&self, indices: impl IntoIterator<Item = usize>) -> Vec<String> {
        let mut names: Vec<String> = indices
            .into_iter()
            .map(|i| self.entries[i].name.clone())
            .collect();
        names.sort();
        names
    }
}

#[cfg(test)]
mod tests;
