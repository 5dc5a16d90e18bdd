//! graph: an upgrade graph drawn as an SVG picture (pure: a [`GraphView`] in, SVG text out).
//!
//! The layout is an arc diagram, chosen because it stays readable from 2 entries to a few
//! hundred and needs no layout engine: every entry is one row, in the channel's order (head on
//! top, so upgrades point up), and every edge is an arc beside the column of entries, as wide as
//! the number of rows it spans. `replaces` arcs are drawn on the left, `skips` and `skipRange`
//! arcs on the right (dashed and dotted), so the replaces chain reads as one line down the left
//! side and the shortcuts as loops on the right. Arrows point in the upgrade direction, from the
//! older entry to the newer one.
//!
//! Marks: the head, the installed entry, and the path OLM would take from the installed entry to
//! the head (its entries and hops drawn thicker), each also said in the entry's tooltip and in the
//! picture's description, so the picture is not the only place they are told.

use std::{collections::HashMap, fmt::Write};

use crate::{
    escape::escape,
    view::{EdgeKind, GraphView},
};

/// Height of one row (one entry).
const ROW: u32 = 30;
/// Height of an entry's box.
const BOX_H: u32 = 22;
/// Width of one character of the labels (12px monospace, rounded up).
const CHAR_W: u32 = 8;
/// The widest arc, however many rows it spans.
const MAX_BULGE: u32 = 150;
/// Margin around the drawing.
const MARGIN: u32 = 8;

/// Where an edge is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Left of the entries (`replaces`).
    Left,
    /// Right of the entries (`skips`, `skipRange`).
    Right,
}

/// One drawn edge: the rows it joins (upgrade direction: `from_row` is the older entry) and how
/// far its arc bulges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arc {
    /// Row of the older entry (where the arrow starts).
    pub from_row: usize,
    /// Row of the newer entry (where the arrow points).
    pub to_row: usize,
    /// Side of the column.
    pub side: Side,
    /// Horizontal reach of the arc.
    pub bulge: u32,
    /// The edge's index in [`GraphView::edges`].
    pub edge: usize,
}

/// The computed positions of a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Width of the picture.
    pub width: u32,
    /// Height of the picture.
    pub height: u32,
    /// Left edge of the entries' boxes.
    pub box_x: u32,
    /// Width of the entries' boxes.
    pub box_w: u32,
    /// The arcs, in edge order.
    pub arcs: Vec<Arc>,
    /// Edges left out: naming an entry that is not a node, or an entry itself.
    pub dropped: usize,
}

/// How far an arc spanning `span` rows reaches sideways.
fn bulge(span: usize) -> u32 {
    let span = u32::try_from(span).unwrap_or(u32::MAX);
    12u32.saturating_add(span.saturating_mul(10)).min(MAX_BULGE)
}

/// Lays the graph out: one row per node, one arc per edge whose ends are both nodes.
pub fn layout(graph: &GraphView) -> Layout {
    let rows: HashMap<&str, usize> = graph
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut arcs = Vec::new();
    let mut dropped = 0;
    for (i, e) in graph.edges.iter().enumerate() {
        match (rows.get(e.to.as_str()), rows.get(e.from.as_str())) {
            (Some(&older), Some(&newer)) if older != newer => arcs.push(Arc {
                from_row: older,
                to_row: newer,
                side: if e.kind == EdgeKind::Replaces {
                    Side::Left
                } else {
                    Side::Right
                },
                bulge: bulge(older.abs_diff(newer)),
                edge: i,
            }),
            _ => dropped += 1,
        }
    }
    let reach = |side| {
        arcs.iter()
            .filter(|a| a.side == side)
            .map(|a| a.bulge)
            .max()
            .unwrap_or(0)
    };
    let longest = graph.nodes.iter().map(label_len).max().unwrap_or(0);
    let box_w = u32::try_from(longest)
        .unwrap_or(u32::MAX)
        .saturating_mul(CHAR_W)
        .saturating_add(16)
        .max(80);
    let box_x = MARGIN + reach(Side::Left) + 10;
    let rows = u32::try_from(graph.nodes.len()).unwrap_or(u32::MAX);
    Layout {
        width: box_x + box_w + reach(Side::Right) + 10 + MARGIN,
        height: MARGIN * 2 + rows.saturating_mul(ROW),
        box_x,
        box_w,
        arcs,
        dropped,
    }
}

/// The text drawn in an entry's box.
fn label_len(node: &crate::view::Node) -> usize {
    node.name.chars().count()
}

/// Vertical centre of a row.
fn row_y(row: usize) -> u32 {
    MARGIN + u32::try_from(row).unwrap_or(u32::MAX).saturating_mul(ROW) + ROW / 2
}

/// Draws the graph. `id` makes the picture's element ids unique on the page; `title` is its
/// accessible name.
pub fn svg(graph: &GraphView, id: &str, title: &str) -> String {
    let l = layout(graph);
    let mut out = String::with_capacity(256 + graph.nodes.len() * 256 + graph.edges.len() * 160);
    let id = escape(id);
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-labelledby="{id}-t {id}-d"><title id="{id}-t">{t}</title><desc id="{id}-d">{d}</desc>"#,
        w = l.width,
        h = l.height,
        t = escape(title),
        d = escape(&describe(graph, &l)),
    );
    let _ = write!(
        out,
        r#"<defs><marker id="{id}-a" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" class="arrow"/></marker></defs>"#
    );
    for arc in &l.arcs {
        let Some(edge) = graph.edges.get(arc.edge) else {
            continue;
        };
        let (y1, y2) = (row_y(arc.from_row), row_y(arc.to_row));
        let (x, dx) = match arc.side {
            Side::Left => (i64::from(l.box_x), -i64::from(arc.bulge)),
            Side::Right => (i64::from(l.box_x + l.box_w), i64::from(arc.bulge)),
        };
        let class = format!(
            "edge {}{}",
            edge.kind.as_str(),
            if edge.on_path { " path" } else { "" }
        );
        let _ = write!(
            out,
            r#"<path class="{class}" d="M{x},{y1} C{cx},{y1} {cx},{y2} {x},{y2}" marker-end="url(#{id}-a)"><title>{t}</title></path>"#,
            cx = x + dx,
            t = escape(&format!("{} {} {}", edge.from, edge.kind.as_str(), edge.to)),
        );
    }
    for (row, node) in graph.nodes.iter().enumerate() {
        let y = row_y(row) - BOX_H / 2;
        let mut class = String::from("node");
        let mut says = Vec::new();
        for (flag, name, said) in [
            (node.head, " head", "channel head"),
            (node.installed, " installed", "installed"),
            (node.on_path, " path", "on the upgrade path to the head"),
            (node.missing, " missing", "not in this channel"),
            (node.deprecated, " deprecated", "deprecated"),
        ] {
            if flag {
                class.push_str(name);
                says.push(said);
            }
        }
        let tip = if says.is_empty() {
            format!("{} {}", node.name, node.version)
        } else {
            format!("{} {} ({})", node.name, node.version, says.join(", "))
        };
        let _ = write!(
            out,
            r#"<g class="{class}" data-name="{n}"><title>{tip}</title><rect x="{x}" y="{y}" width="{w}" height="{BOX_H}" rx="4"/><text x="{tx}" y="{ty}">{n}</text></g>"#,
            n = escape(&node.name),
            tip = escape(tip.trim_end()),
            x = l.box_x,
            w = l.box_w,
            tx = l.box_x + 8,
            ty = y + 15,
        );
    }
    out.push_str("</svg>");
    out
}

/// The picture in words, for screen readers and for anyone who cannot see it.
fn describe(graph: &GraphView, l: &Layout) -> String {
    let count = |k| graph.edges.iter().filter(|e| e.kind == k).count();
    let mut text = format!(
        "{} entries; {} replaces, {} skips and {} skipRange edges.",
        graph.nodes.iter().filter(|n| !n.missing).count(),
        count(EdgeKind::Replaces),
        count(EdgeKind::Skips),
        count(EdgeKind::SkipRange),
    );
    if let Some(head) = graph.nodes.iter().find(|n| n.head) {
        let _ = write!(text, " Head: {}.", head.name);
    }
    if let Some(installed) = graph.nodes.iter().find(|n| n.installed) {
        let _ = write!(text, " Installed: {}.", installed.name);
        let path: Vec<&str> = graph
            .nodes
            .iter()
            .rev()
            .filter(|n| n.on_path && !n.installed)
            .map(|n| n.name.as_str())
            .collect();
        if !path.is_empty() {
            let _ = write!(text, " Upgrade path: {}.", path.join(" then "));
        }
    }
    if l.dropped > 0 {
        let _ = write!(text, " {} edges name no entry and are not drawn.", l.dropped);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{GraphEdge, Node};

    fn node(name: &str) -> Node {
        Node {
            name: name.into(),
            version: name.trim_start_matches("op.v").into(),
            ..Node::default()
        }
    }

    fn edge(from: &str, to: &str, kind: EdgeKind) -> GraphEdge {
        GraphEdge {
            from: from.into(),
            to: to.into(),
            kind,
            on_path: false,
        }
    }

    fn chain() -> GraphView {
        GraphView {
            nodes: vec![node("op.v3"), node("op.v2"), node("op.v1")],
            edges: vec![
                edge("op.v3", "op.v2", EdgeKind::Replaces),
                edge("op.v3", "op.v1", EdgeKind::Skips),
                edge("op.v2", "op.v1", EdgeKind::Replaces),
                edge("op.v1", "op.v0", EdgeKind::Replaces),
            ],
        }
    }

    #[test]
    fn replaces_arcs_go_left_shortcuts_right_and_edges_to_unknown_entries_are_dropped() {
        let l = layout(&chain());
        let sides: Vec<(usize, usize, Side)> =
            l.arcs.iter().map(|a| (a.from_row, a.to_row, a.side)).collect();
        assert_eq!(
            sides,
            [(1, 0, Side::Left), (2, 0, Side::Right), (2, 1, Side::Left)]
        );
        assert_eq!(l.dropped, 1);
    }

    #[test]
    fn an_arc_spanning_more_rows_reaches_further_up_to_a_limit() {
        assert!(bulge(2) > bulge(1));
        assert_eq!(bulge(1_000), MAX_BULGE);
        let l = layout(&chain());
        assert_eq!(l.box_x, MARGIN + bulge(1) + 10);
        assert_eq!(l.width, l.box_x + l.box_w + bulge(2) + 10 + MARGIN);
        assert_eq!(l.height, MARGIN * 2 + 3 * ROW);
    }

    #[test]
    fn the_picture_marks_head_installed_and_path_in_classes_tooltips_and_description() {
        let mut g = chain();
        g.nodes[0].head = true;
        g.nodes[0].on_path = true;
        g.nodes[2].installed = true;
        g.nodes[2].on_path = true;
        g.edges[1].on_path = true;
        let svg = svg(&g, "g0", "Channel stable");
        assert!(svg.starts_with("<svg "), "{svg}");
        assert!(
            svg.contains(r#"<g class="node head path" data-name="op.v3">"#),
            "{svg}"
        );
        assert!(
            svg.contains(r#"<g class="node installed path" data-name="op.v1">"#),
            "{svg}"
        );
        assert!(svg.contains(r#"class="edge skips path""#), "{svg}");
        assert!(
            svg.contains("<title>op.v1 1 (installed, on the upgrade path to the head)</title>"),
            "{svg}"
        );
        assert!(
            svg.contains("Head: op.v3. Installed: op.v1. Upgrade path: op.v3."),
            "{svg}"
        );
        assert!(svg.contains("1 edges name no entry"), "{svg}");
        assert!(svg.contains(r#"aria-labelledby="g0-t g0-d""#), "{svg}");
    }

    #[test]
    fn names_are_escaped() {
        let g = GraphView {
            nodes: vec![node("<script>")],
            edges: vec![],
        };
        let svg = svg(&g, "x\"y", "a&b");
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("&lt;script&gt;"), "{svg}");
        assert!(svg.contains("x&quot;y-t"), "{svg}");
        assert!(svg.contains("<title id=\"x&quot;y-t\">a&amp;b</title>"), "{svg}");
    }

    #[test]
    fn an_empty_graph_is_a_small_empty_picture() {
        let l = layout(&GraphView::default());
        assert_eq!(l.height, MARGIN * 2);
        assert!(l.arcs.is_empty());
    }
}
