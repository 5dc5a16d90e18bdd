//! Drawings of a channel graph: a terminal tree ([`text`]), Graphviz ([`dot`]) and Mermaid
//! ([`mermaid`]).
//!
//! The text tree follows the upgrade direction: the head at the top, and under every entry the
//! edges it carries, each arrow labelled with its kind (`skips→`, `skipRange R→`, `replaces→`).
//! `replaces` is always an entry's last branch, so the replaces chain forms the trunk of the tree
//! and an entry's shortcuts sit right under it. An entry's own branches are drawn once, where the
//! chain reaches it (or, for a skipped entry off the chain, where it is skipped); any other
//! mention is a reference marked `(see above)` or `(see below)`. `skipRange` targets are listed on
//! one line, newest first (long lists abbreviated with their count), because a range usually
//! covers most of the channel. The chain is cut every few levels (`(continued below)`) so the
//! drawing stays narrow for channels of a hundred entries. Entries the head does not reach
//! (stranded, or all of them when there is no head) follow under their own heading, and the
//! channel's problems close the drawing, one `!` line each. The output is deterministic: it
//! depends only on the entries and their input order.
//!
//! [`dot`] and [`mermaid`] draw every edge of [`ChannelGraph::edges`], one `skipRange` edge per
//! matched entry, with the head emphasised, skipped entries dashed and edge targets outside the
//! channel dotted.

use std::{
    cmp::Ordering,
    collections::{HashMap, VecDeque},
    fmt::Write as _,
};

use super::{ChannelGraph, EdgeKind};
use crate::version_range;

/// What the renderers print around the graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// Channel name, shown in the title.
    pub channel: String,
    /// Package name, shown in the dot and mermaid titles.
    pub package: String,
    /// Whether this channel is the package's default channel (marked `(default)`).
    pub is_default_channel: bool,
}

impl RenderOptions {
    fn title(&self) -> String {
        let default = if self.is_default_channel { " (default)" } else { "" };
        format!("{}{default}", self.channel)
    }

    fn long_title(&self) -> String {
        let default = if self.is_default_channel { " (default)" } else { "" };
        format!("{}, channel {}{default}", self.package, self.channel)
    }
}

/// Deepest level of the text tree before the chain continues as a new block below.
const MAX_DEPTH: usize = 10;

/// Longest `skipRange` target list printed in full.
const MAX_LISTED: usize = 5;

/// The channel as a tree for a terminal (see the module docs for the layout).
pub fn text(g: &ChannelGraph, opts: &RenderOptions) -> String {
    let mut t = TextTree::new(g);
    t.out.push_str(&opts.title());
    t.out.push('\n');
    if g.entries.is_empty() {
        t.out.push_str("(no entries)\n");
    }
    for &h in &g.heads {
        t.block(h, false);
    }
    let leftovers: Vec<usize> = (0..g.entries.len()).filter(|&i| !t.claimed[i]).collect();
    if !leftovers.is_empty() {
        let heading = match g.heads.len() {
            0 => "no head (every entry is replaced or skipped by another entry):",
            1 => "not reachable from the head:",
            _ => "not reachable from any head candidate:",
        };
        t.out.push_str(heading);
        t.out.push('\n');
        // Prefer entries nothing unclaimed points at, so a detached chain starts at its top.
        for pass in 0..2 {
            for &i in &leftovers {
                if t.claimed[i] {
                    continue;
                }
                let pointed_at = g
                    .graph
                    .edges_directed(petgraph::graph::NodeIndex::new(i), petgraph::Direction::Incoming)
                    .any(|e| {
                        use petgraph::visit::EdgeRef;
                        *e.weight() != EdgeKind::SkipRange && !t.claimed[e.source().index()]
                    });
                if pass == 1 || !pointed_at {
                    t.block(i, false);
                }
            }
        }
    }
    for problem in g.problems() {
        let _ = writeln!(t.out, "! {problem}");
    }
    t.out
}

/// State of one text rendering.
struct TextTree<'g> {
    g: &'g ChannelGraph,
    out: String,
    /// The entry's branches are drawn, or will be (queued continuation).
    claimed: Vec<bool>,
    /// The entry's own line has been printed.
    printed: Vec<bool>,
    /// Reachable along `replaces` from a head: its branches are drawn on the trunk.
    on_trunk: Vec<bool>,
    /// Chain continuations waiting for their own block.
    pending: VecDeque<usize>,
}

/// One branch under an entry.
struct Branch {
    label: String,
    target: Target,
}

enum Target {
    /// An entry of the channel, by index.
    Entry(usize),
    /// A name that is not in the channel.
    Absent(String),
    /// A pre-formatted list (skipRange).
    List(String),
}

impl<'g> TextTree<'g> {
    fn new(g: &'g ChannelGraph) -> Self {
        let n = g.entries.len();
        let mut on_trunk = vec![false; n];
        for &h in &g.heads {
            let mut cur = Some(h);
            while let Some(i) = cur {
                if on_trunk[i] {
                    break;
                }
                on_trunk[i] = true;
                cur = g.replaces_index(i);
            }
        }
        TextTree {
            g,
            out: String::new(),
            claimed: vec![false; n],
            printed: vec![false; n],
            on_trunk,
            pending: VecDeque::new(),
        }
    }

    /// Draws `root` at the left margin with its subtree, then any continuation it queued.
    fn block(&mut self, root: usize, continued: bool) {
        if self.claimed[root] {
            return;
        }
        self.claimed[root] = true;
        self.draw_root(root, continued);
        while let Some(next) = self.pending.pop_front() {
            self.draw_root(next, true);
        }
    }

    fn draw_root(&mut self, root: usize, continued: bool) {
        let line = format!(
            "{}{}",
            self.label(root),
            if continued { " (continued)" } else { "" }
        );
        self.out.push_str(&line);
        self.out.push('\n');
        self.printed[root] = true;
        self.branches(root, "", 1);
    }

    fn label(&self, i: usize) -> String {
        let g = self.g;
        let name = &g.entries[i].name;
        let mut marks: Vec<&str> = Vec::new();
        if g.heads.contains(&i) {
            marks.push(if g.heads.len() == 1 {
                "head"
            } else {
                "head candidate"
            });
        }
        if g.skipped.contains(name) {
            marks.push("skipped");
        }
        if marks.is_empty() {
            name.clone()
        } else {
            format!("{name} ({})", marks.join(", "))
        }
    }

    fn branch_list(&self, i: usize) -> Vec<Branch> {
        let g = self.g;
        let entry = &g.entries[i];
        let target = |name: &String| match g.index.get(name) {
            Some(&j) => Target::Entry(j),
            None => Target::Absent(name.clone()),
        };
        let mut branches = Vec::new();
        let mut seen: Vec<&String> = Vec::new();
        for s in &entry.skips {
            if seen.contains(&s) {
                continue;
            }
            seen.push(s);
            branches.push(Branch {
                label: EdgeKind::Skips.to_string(),
                target: target(s),
            });
        }
        if let Some(range) = &entry.skip_range {
            let mut targets = g.skip_range_targets(i);
            targets.sort_by(|&a, &b| {
                let (ea, eb) = (&g.entries[a], &g.entries[b]);
                match (&ea.version, &eb.version) {
                    (Some(va), Some(vb)) => version_range::compare(vb, va),
                    _ => Ordering::Equal,
                }
                .then_with(|| ea.name.cmp(&eb.name))
            });
            let names: Vec<&str> = targets.iter().map(|&j| g.entries[j].name.as_str()).collect();
            let list = match names.len() {
                0 => "(no entry of this channel)".to_string(),
                n if n <= MAX_LISTED => names.join(", "),
                n => format!("{}, {}, …, {} ({n} entries)", names[0], names[1], names[n - 1]),
            };
            branches.push(Branch {
                label: format!("skipRange {range}"),
                target: Target::List(list),
            });
        }
        if let Some(r) = &entry.replaces {
            branches.push(Branch {
                label: EdgeKind::Replaces.to_string(),
                target: target(r),
            });
        }
        branches
    }

    fn branches(&mut self, i: usize, prefix: &str, depth: usize) {
        let branches = self.branch_list(i);
        let count = branches.len();
        for (k, branch) in branches.into_iter().enumerate() {
            let last = k + 1 == count;
            let connector = if last { "└─" } else { "├─" };
            let child_prefix = format!("{prefix}{}", if last { "   " } else { "│  " });
            let head = format!("{prefix}{connector}{}→ ", branch.label);
            match branch.target {
                Target::List(list) => {
                    let _ = writeln!(self.out, "{head}{list}");
                }
                Target::Absent(name) => {
                    let _ = writeln!(self.out, "{head}{name} (not in channel)");
                }
                Target::Entry(j) => {
                    // Trunk entries are drawn only from the trunk's own replaces edges, so the
                    // chain never continues under a side branch.
                    let expand_here = !self.claimed[j]
                        && if self.on_trunk[j] {
                            branch.label == EdgeKind::Replaces.as_str() && self.on_trunk[i]
                        } else {
                            true
                        };
                    if expand_here && depth >= MAX_DEPTH {
                        self.claimed[j] = true;
                        self.pending.push_back(j);
                        let _ = writeln!(self.out, "{head}{} (continued below)", self.label(j));
                    } else if expand_here {
                        self.claimed[j] = true;
                        self.printed[j] = true;
                        let _ = writeln!(self.out, "{head}{}", self.label(j));
                        self.branches(j, &child_prefix, depth + 1);
                    } else {
                        let place = if self.printed[j] { "see above" } else { "see below" };
                        let _ = writeln!(self.out, "{head}{} ({place})", self.label(j));
                    }
                }
            }
        }
    }
}

/// Node ids for dot/mermaid: channel entries first (input order), then edge targets outside the
/// channel in order of first mention.
fn node_ids(g: &ChannelGraph) -> (Vec<String>, HashMap<String, usize>) {
    let mut names: Vec<String> = g.entries.iter().map(|e| e.name.clone()).collect();
    let mut ids: HashMap<String, usize> = names.iter().cloned().enumerate().map(|(i, n)| (n, i)).collect();
    for edge in g.edges() {
        if !ids.contains_key(&edge.to) {
            ids.insert(edge.to.clone(), names.len());
            names.push(edge.to);
        }
    }
    (names, ids)
}

fn dot_quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// Marks and style of a node, shared by dot and mermaid: (label suffix, class).
fn node_kind(g: &ChannelGraph, i: usize, name: &str) -> (&'static str, &'static str) {
    if i >= g.entries.len() {
        ("not in channel", "absent")
    } else if g.heads.contains(&i) {
        if g.heads.len() == 1 {
            ("head", "head")
        } else {
            ("head candidate", "head")
        }
    } else if g.skipped.contains(name) {
        ("skipped", "skipped")
    } else {
        ("", "")
    }
}

fn edge_label(g: &ChannelGraph, from: &str, kind: EdgeKind) -> String {
    match kind {
        EdgeKind::SkipRange => match g.entry(from).and_then(|e| e.skip_range.as_ref()) {
            Some(range) => format!("skipRange {range}"),
            None => kind.to_string(),
        },
        _ => kind.to_string(),
    }
}

/// The channel as a Graphviz `digraph`: edges labelled with their kind (and range), the head bold
/// with a double border, skipped entries dashed, targets outside the channel dotted.
pub fn dot(g: &ChannelGraph, opts: &RenderOptions) -> String {
    let (names, _) = node_ids(g);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "digraph {} {{",
        dot_quote(&format!("{}/{}", opts.package, opts.channel))
    );
    let _ = writeln!(out, "  label={};", dot_quote(&opts.long_title()));
    out.push_str("  labelloc=t;\n  node [shape=box];\n");
    for (i, name) in names.iter().enumerate() {
        let (mark, class) = node_kind(g, i, name);
        let style = match class {
            "head" => ", style=bold, peripheries=2",
            "skipped" => ", style=dashed",
            "absent" => ", style=dotted",
            _ => "",
        };
        let label = if mark.is_empty() {
            name.clone()
        } else {
            format!("{name}\n({mark})")
        };
        let _ = writeln!(out, "  {} [label={}{style}];", dot_quote(name), dot_quote(&label));
    }
    for edge in g.edges() {
        let style = match edge.kind {
            EdgeKind::Replaces => "",
            EdgeKind::Skips => ", style=dashed",
            EdgeKind::SkipRange => ", style=dotted",
        };
        let label = edge_label(g, &edge.from, edge.kind);
        let _ = writeln!(
            out,
            "  {} -> {} [label={}{style}];",
            dot_quote(&edge.from),
            dot_quote(&edge.to),
            dot_quote(&label)
        );
    }
    out.push_str("}\n");
    out
}

fn mermaid_text(s: &str) -> String {
    let mut q = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => q.push_str("#quot;"),
            '<' => q.push_str("#lt;"),
            '>' => q.push_str("#gt;"),
            '#' => q.push_str("#35;"),
            c => q.push(c),
        }
    }
    q
}

/// The channel as a Mermaid `flowchart TD`: edges labelled with their kind (and range), the head
/// emphasised, skipped entries dashed, targets outside the channel dotted and grey.
pub fn mermaid(g: &ChannelGraph, opts: &RenderOptions) -> String {
    let (names, ids) = node_ids(g);
    let mut out = String::new();
    let _ = writeln!(out, "---\ntitle: {}\n---", mermaid_text(&opts.long_title()));
    out.push_str("flowchart TD\n");
    let mut classes: Vec<(&str, Vec<String>)> =
        vec![("head", vec![]), ("skipped", vec![]), ("absent", vec![])];
    for (i, name) in names.iter().enumerate() {
        let (mark, class) = node_kind(g, i, name);
        let label = if mark.is_empty() {
            name.clone()
        } else {
            format!("{name} ({mark})")
        };
        let _ = writeln!(out, "  n{i}[\"{}\"]", mermaid_text(&label));
        if let Some((_, members)) = classes.iter_mut().find(|(c, _)| *c == class) {
            members.push(format!("n{i}"));
        }
    }
    for edge in g.edges() {
        let (Some(from), Some(to)) = (ids.get(&edge.from), ids.get(&edge.to)) else {
            continue;
        };
        let arrow = match edge.kind {
            EdgeKind::Replaces => "-->",
            EdgeKind::Skips | EdgeKind::SkipRange => "-.->",
        };
        let label = mermaid_text(&edge_label(g, &edge.from, edge.kind));
        let _ = writeln!(out, "  n{from} {arrow}|\"{label}\"| n{to}");
    }
    out.push_str("  classDef head stroke-width:3px\n");
    out.push_str("  classDef skipped stroke-dasharray:5 5\n");
    out.push_str("  classDef absent stroke-dasharray:2 2,color:#888\n");
    for (class, members) in classes {
        if !members.is_empty() {
            let _ = writeln!(out, "  class {} {class}", members.join(","));
        }
    }
    out
}
