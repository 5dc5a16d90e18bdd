//! Unit tests of the channel graph, written with a small entry builder:
//! `entry("a.v2").version("2.0.0").replaces("a.v1")`.

use semver::Version;

use super::{ChannelGraph, Edge, EdgeKind, Entry, GraphError, Hop, Installed, RenderOptions, render};
use crate::version_range::Range;

/// Builder for one channel entry.
struct B(Entry);

fn entry(name: &str) -> B {
    B(Entry {
        name: name.to_string(),
        version: None,
        replaces: None,
        skips: Vec::new(),
        skip_range: None,
    })
}

impl B {
    fn version(mut self, v: &str) -> B {
        self.0.version = Some(Version::parse(v).expect("test version parses"));
        self
    }
    fn replaces(mut self, name: &str) -> B {
        self.0.replaces = Some(name.to_string());
        self
    }
    fn skips(mut self, names: &[&str]) -> B {
        self.0.skips = names.iter().map(|s| s.to_string()).collect();
        self
    }
    fn skip_range(mut self, range: &str) -> B {
        self.0.skip_range = Some(Range::parse(range).expect("test range parses"));
        self
    }
}

fn graph(entries: Vec<B>) -> ChannelGraph {
    ChannelGraph::new(entries.into_iter().map(|b| b.0).collect())
}

fn installed(name: &str, version: &str) -> Installed {
    Installed {
        name: Some(name.to_string()),
        version: Version::parse(version).expect("test version parses"),
    }
}

fn version_only(version: &str) -> Installed {
    Installed {
        name: None,
        version: Version::parse(version).expect("test version parses"),
    }
}

/// The path as (name, edge) pairs, for short assertions.
fn path(g: &ChannelGraph, from: &Installed) -> Result<Vec<(String, EdgeKind)>, GraphError> {
    g.upgrade_path(from)
        .map(|hops| hops.into_iter().map(|h| (h.name, h.edge)).collect())
}

fn hop(name: &str, edge: EdgeKind) -> (String, EdgeKind) {
    (name.to_string(), edge)
}

fn names(entries: &[&Entry]) -> Vec<String> {
    entries.iter().map(|e| e.name.clone()).collect()
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// §2.4 of the reference: a.v1 ← a.v2 ← a.v3 by replaces.
fn worked_example(v3: B) -> ChannelGraph {
    graph(vec![
        entry("a.v1").version("1.1.0"),
        entry("a.v2").version("1.2.0").replaces("a.v1"),
        v3.version("1.3.0"),
    ])
}

// ---- head, order, validation -------------------------------------------------------------

#[test]
fn a_linear_chain_has_the_newest_entry_as_head_and_is_valid() {
    let g = graph(vec![
        entry("a.v1").version("1.0.0"),
        entry("a.v2").version("2.0.0").replaces("a.v1"),
        entry("a.v3").version("3.0.0").replaces("a.v2"),
    ]);
    assert_eq!(g.head().map(|e| e.name.as_str()), Ok("a.v3"));
    assert_eq!(
        g.ordered().map(|o| names(&o)),
        Ok(strings(&["a.v3", "a.v2", "a.v1"]))
    );
    assert_eq!(g.problems(), vec![]);
    assert_eq!(
        path(&g, &installed("a.v1", "1.0.0")),
        Ok(vec![
            hop("a.v2", EdgeKind::Replaces),
            hop("a.v3", EdgeKind::Replaces)
        ])
    );
}

#[test]
fn entries_keep_input_order_and_can_be_looked_up_by_name() {
    let g = graph(vec![entry("b").replaces("a"), entry("a")]);
    let order: Vec<&str> = g.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(order, vec!["b", "a"]);
    assert_eq!(g.entry("a").map(|e| e.name.as_str()), Some("a"));
    assert!(g.entry("c").is_none());
}

#[test]
fn a_channel_where_every_entry_is_replaced_has_no_head_and_reports_the_loop() {
    let g = graph(vec![entry("a").replaces("b"), entry("b").replaces("a")]);
    assert_eq!(g.head().err(), Some(GraphError::NoHead));
    assert_eq!(g.ordered().err(), Some(GraphError::NoHead));
    assert_eq!(
        g.problems(),
        vec![
            GraphError::NoHead,
            GraphError::Cycle {
                path: strings(&["a", "b", "a"])
            }
        ]
    );
    assert!(g.next_hop(&installed("a", "1.0.0")).is_none());
    assert_eq!(g.upgrade_path(&installed("a", "1.0.0")), Err(GraphError::NoHead));
}

#[test]
fn an_entry_replacing_itself_is_a_cycle_of_one() {
    let g = graph(vec![entry("a").replaces("a")]);
    assert_eq!(
        g.problems(),
        vec![
            GraphError::NoHead,
            GraphError::Cycle {
                path: strings(&["a", "a"])
            }
        ]
    );
}

#[test]
fn two_independent_chains_are_multiple_heads_listed_by_name() {
    let g = graph(vec![entry("b.v2").replaces("b.v1"), entry("b.v1"), entry("a.v1")]);
    let err = GraphError::MultipleHeads {
        heads: strings(&["a.v1", "b.v2"]),
    };
    assert_eq!(g.head().err(), Some(err.clone()));
    assert_eq!(g.ordered().err(), Some(err.clone()));
    assert_eq!(g.problems(), vec![err.clone()]);
    assert_eq!(
        err.to_string(),
        "multiple channel heads found in graph: a.v1, b.v2 (exactly one entry must not be replaced or \
         skipped by another; make one of them replace the other)"
    );
}

#[test]
fn skip_range_edges_do_not_make_an_entry_lose_its_head_status() {
    // b's range covers a, but only replaces/skips edges count for the head rule: two heads.
    let g = graph(vec![
        entry("a").version("1.0.0"),
        entry("b").version("2.0.0").skip_range(">=1.0.0 <2.0.0"),
    ]);
    assert_eq!(
        g.head().err(),
        Some(GraphError::MultipleHeads {
            heads: strings(&["a", "b"])
        })
    );
}

#[test]
fn a_cycle_below_the_head_is_reported_with_its_path_and_blocks_the_order() {
    let g = graph(vec![
        entry("h").replaces("a"),
        entry("a").replaces("b"),
        entry("b").replaces("a"),
    ]);
    assert_eq!(g.head().map(|e| e.name.as_str()), Ok("h"));
    let cycle = GraphError::Cycle {
        path: strings(&["a", "b", "a"]),
    };
    assert_eq!(g.problems(), vec![cycle.clone()]);
    assert_eq!(g.ordered().err(), Some(cycle.clone()));
    assert_eq!(
        cycle.to_string(),
        "detected cycle in replaces chain of upgrade graph: a -> b -> a (an entry cannot replace one \
         of its own successors; remove one of these replaces edges)"
    );
}

#[test]
fn a_loop_behind_a_skipped_entry_passes_validation_but_not_the_resolver_order() {
    // opm's walk stops at the skipped target b; OLM's sortChannel walks on and meets the loop.
    let g = graph(vec![
        entry("h").replaces("a"),
        entry("a").replaces("b"),
        entry("b").replaces("a"),
        entry("z").replaces("h").skips(&["b"]),
    ]);
    assert_eq!(g.problems(), vec![]);
    assert_eq!(
        g.ordered().err(),
        Some(GraphError::Cycle {
            path: strings(&["a", "b", "a"])
        })
    );
}

#[test]
fn entries_below_a_skipped_replaces_target_are_stranded() {
    // h skips s, so opm's walk stops before s; t is neither reached nor skipped.
    let g = graph(vec![
        entry("h").replaces("s").skips(&["s"]),
        entry("s").replaces("t"),
        entry("t"),
    ]);
    assert_eq!(
        g.problems(),
        vec![GraphError::Stranded {
            names: strings(&["t"])
        }]
    );
    // The resolver tolerates it: it walks through s (omitted) to t.
    assert_eq!(g.ordered().map(|o| names(&o)), Ok(strings(&["h", "t"])));
}

#[test]
fn a_detached_loop_is_both_stranded_and_a_cycle() {
    let g = graph(vec![
        entry("h"),
        entry("x").replaces("y"),
        entry("y").replaces("x"),
    ]);
    assert_eq!(
        g.problems(),
        vec![
            GraphError::Cycle {
                path: strings(&["x", "y", "x"])
            },
            GraphError::Stranded {
                names: strings(&["x", "y"])
            },
        ]
    );
    assert_eq!(g.ordered().map(|o| names(&o)), Ok(strings(&["h"])));
}

#[test]
fn the_tail_may_replace_an_entry_that_is_not_in_the_channel() {
    let g = graph(vec![
        entry("a.v2").replaces("a.v1"),
        entry("a.v3").replaces("a.v2"),
    ]);
    assert_eq!(g.problems(), vec![]);
    assert_eq!(g.ordered().map(|o| names(&o)), Ok(strings(&["a.v3", "a.v2"])));
    // The installed, since-removed a.v1 still upgrades by name.
    assert_eq!(
        path(&g, &installed("a.v1", "1.0.0")),
        Ok(vec![
            hop("a.v2", EdgeKind::Replaces),
            hop("a.v3", EdgeKind::Replaces)
        ])
    );
}

#[test]
fn duplicate_entries_keep_the_first_occurrence_and_are_reported_once() {
    let g = graph(vec![
        entry("a.v1").version("1.0.0"),
        entry("a.v2").replaces("a.v1"),
        entry("a.v1").version("9.9.9").replaces("zzz"),
        entry("a.v1"),
    ]);
    assert_eq!(g.entries().len(), 2);
    assert_eq!(
        g.entry("a.v1").and_then(|e| e.version.clone()),
        Version::parse("1.0.0").ok()
    );
    assert_eq!(
        g.problems(),
        vec![GraphError::DuplicateEntry { name: "a.v1".into() }]
    );
}

#[test]
fn an_empty_channel_has_no_graph_problems_but_no_head_either() {
    let g = graph(vec![]);
    assert_eq!(g.problems(), vec![]);
    assert_eq!(g.head().err(), Some(GraphError::NoHead));
    assert_eq!(g.upgrade_path(&version_only("1.0.0")), Err(GraphError::NoHead));
    assert!(g.edges().is_empty());
}

// ---- skips and the resolver order -------------------------------------------------------

#[test]
fn skipped_entries_are_left_out_of_the_order_but_the_walk_continues_past_them() {
    let g = graph(vec![
        entry("a.v3").replaces("a.v2").skips(&["a.v2"]),
        entry("a.v2").replaces("a.v1"),
        entry("a.v1"),
    ]);
    assert_eq!(g.ordered().map(|o| names(&o)), Ok(strings(&["a.v3", "a.v1"])));
    assert!(g.is_skipped("a.v2"));
    assert!(!g.is_skipped("a.v1"));
}

#[test]
fn names_skipped_but_absent_from_the_channel_still_count_as_skipped() {
    let g = graph(vec![entry("a.v2").skips(&["a.v1"])]);
    assert!(g.is_skipped("a.v1"));
    assert_eq!(g.problems(), vec![]);
}

#[test]
fn a_skipped_entry_is_never_chosen_even_when_it_replaces_the_installed_one() {
    let g = graph(vec![
        entry("c")
            .version("3.0.0")
            .replaces("b")
            .skips(&["b"])
            .skip_range(">=1.0.0 <3.0.0"),
        entry("b").version("2.0.0").replaces("a"),
        entry("a").version("1.0.0"),
    ]);
    // b replaces a, but b is skipped; c's range covers 1.0.0.
    assert_eq!(
        path(&g, &installed("a", "1.0.0")),
        Ok(vec![hop("c", EdgeKind::SkipRange)])
    );
    // From b itself, c replaces it (the most specific edge wins over skips and skipRange).
    assert_eq!(
        path(&g, &installed("b", "2.0.0")),
        Ok(vec![hop("c", EdgeKind::Replaces)])
    );
    // A fresh install takes the head of the order, never a skipped entry.
    assert!(
        g.ordered()
            .is_ok_and(|o| o.iter().all(|e| !g.is_skipped(&e.name)))
    );
}

// ---- the worked example of reference §2.4 -------------------------------------------------

#[test]
fn with_a_skip_range_the_upgrade_jumps_straight_to_the_newest_entry() {
    let g = worked_example(entry("a.v3").replaces("a.v2").skip_range(">=1.0.0 <1.3.0"));
    assert_eq!(
        path(&g, &installed("a.v1", "1.1.0")),
        Ok(vec![hop("a.v3", EdgeKind::SkipRange)])
    );
    assert_eq!(
        g.next_hop(&installed("a.v1", "1.1.0")),
        Some(Hop {
            name: "a.v3".into(),
            version: Version::parse("1.3.0").ok(),
            edge: EdgeKind::SkipRange
        })
    );
}

#[test]
fn without_a_skip_range_the_upgrade_takes_one_install_plan_per_replaces_step() {
    let g = worked_example(entry("a.v3").replaces("a.v2"));
    assert_eq!(
        path(&g, &installed("a.v1", "1.1.0")),
        Ok(vec![
            hop("a.v2", EdgeKind::Replaces),
            hop("a.v3", EdgeKind::Replaces)
        ])
    );
}

#[test]
fn when_the_head_skips_the_middle_entry_it_leaves_the_order_and_the_path() {
    let g = worked_example(entry("a.v3").replaces("a.v2").skips(&["a.v2"]));
    assert_eq!(g.ordered().map(|o| names(&o)), Ok(strings(&["a.v3", "a.v1"])));
    // a.v3 neither replaces nor skips a.v1: no way up (and opm calls a.v1 stranded).
    assert_eq!(
        g.upgrade_path(&installed("a.v1", "1.1.0")),
        Err(GraphError::NoUpgradePath {
            from: "a.v1 (version 1.1.0)".into()
        })
    );
    assert_eq!(
        g.problems(),
        vec![GraphError::Stranded {
            names: strings(&["a.v1"])
        }]
    );

    let g = worked_example(entry("a.v3").replaces("a.v2").skips(&["a.v2", "a.v1"]));
    assert_eq!(
        path(&g, &installed("a.v1", "1.1.0")),
        Ok(vec![hop("a.v3", EdgeKind::Skips)])
    );
}

// ---- next hop and upgrade path ----------------------------------------------------------

#[test]
fn the_newest_eligible_entry_is_preferred_over_nearer_replacements() {
    let g = graph(vec![
        entry("a.v1").version("1.0.0"),
        entry("a.v2").version("2.0.0").replaces("a.v1"),
        entry("a.v3").version("3.0.0").replaces("a.v2").skips(&["a.v1"]),
        entry("a.v4").version("4.0.0").replaces("a.v3"),
    ]);
    assert_eq!(
        path(&g, &installed("a.v1", "1.0.0")),
        Ok(vec![
            hop("a.v3", EdgeKind::Skips),
            hop("a.v4", EdgeKind::Replaces)
        ])
    );
}

#[test]
fn an_entry_allowed_by_several_edges_reports_replaces_then_skips_then_skip_range() {
    let both = graph(vec![
        entry("a").version("1.0.0"),
        entry("b")
            .version("2.0.0")
            .replaces("a")
            .skips(&["a"])
            .skip_range("<2.0.0"),
    ]);
    assert_eq!(
        both.next_hop(&installed("a", "1.0.0")).map(|h| h.edge),
        Some(EdgeKind::Replaces)
    );
    let skips_and_range = graph(vec![
        entry("a").version("1.0.0"),
        entry("b").version("2.0.0").skips(&["a"]).skip_range("<2.0.0"),
    ]);
    assert_eq!(
        skips_and_range.next_hop(&installed("a", "1.0.0")).map(|h| h.edge),
        Some(EdgeKind::Skips)
    );
}

#[test]
fn already_at_the_head_the_path_is_empty() {
    let g = graph(vec![
        entry("a.v1").version("1.0.0"),
        entry("a.v2").version("2.0.0").replaces("a.v1"),
    ]);
    assert_eq!(g.upgrade_path(&installed("a.v2", "2.0.0")), Ok(vec![]));
    assert_eq!(g.upgrade_path(&version_only("2.0.0")), Ok(vec![]));
    assert!(g.next_hop(&installed("a.v2", "2.0.0")).is_none());
}

#[test]
fn the_head_is_never_its_own_next_hop_even_if_its_range_contains_its_version() {
    let g = graph(vec![
        entry("a.v1").version("1.0.0"),
        entry("a.v2")
            .version("2.0.0")
            .replaces("a.v1")
            .skip_range("<=2.0.0"),
    ]);
    assert!(g.next_hop(&installed("a.v2", "2.0.0")).is_none());
    assert!(g.next_hop(&version_only("2.0.0")).is_none());
    assert_eq!(g.upgrade_path(&installed("a.v2", "2.0.0")), Ok(vec![]));
}

#[test]
fn a_version_outside_the_channel_upgrades_through_a_skip_range_that_contains_it() {
    let g = graph(vec![
        entry("a.v1.0.0").version("1.0.0").skip_range(">=0.5.0 <1.0.0"),
        entry("a.v1.1.0").version("1.1.0").replaces("a.v1.0.0"),
    ]);
    assert_eq!(
        path(&g, &installed("a.v0.9.0", "0.9.0")),
        Ok(vec![
            hop("a.v1.0.0", EdgeKind::SkipRange),
            hop("a.v1.1.0", EdgeKind::Replaces)
        ])
    );
    assert_eq!(
        path(&g, &version_only("0.7.3")),
        Ok(vec![
            hop("a.v1.0.0", EdgeKind::SkipRange),
            hop("a.v1.1.0", EdgeKind::Replaces)
        ])
    );
}

#[test]
fn prerelease_versions_fall_inside_a_skip_range_below_the_release() {
    let g = graph(vec![
        entry("a.v1.0.0")
            .version("1.0.0")
            .replaces("a.v0.9.0")
            .skip_range(">=0.1.0 <1.0.0"),
    ]);
    // blang/semver: 1.0.0-rc.1 < 1.0.0, so the range contains it (no npm-style exclusion).
    assert_eq!(
        path(&g, &installed("other", "1.0.0-rc.1")),
        Ok(vec![hop("a.v1.0.0", EdgeKind::SkipRange)])
    );
}

#[test]
fn with_no_replacement_the_path_fails_naming_the_installed_entry() {
    let g = graph(vec![
        entry("a.v1").version("1.0.0"),
        entry("a.v2").version("2.0.0").replaces("a.v1"),
    ]);
    let err = g.upgrade_path(&installed("b.v7", "7.0.0")).err();
    assert_eq!(
        err,
        Some(GraphError::NoUpgradePath {
            from: "b.v7 (version 7.0.0)".into()
        })
    );
    assert_eq!(
        err.map(|e| e.to_string()),
        Some(
            "no upgrade path from b.v7 (version 7.0.0): no entry of the channel replaces it, skips it, \
             or has a skipRange containing its version (make a newer entry replace or skip it, or \
             widen a skipRange to include its version)"
                .to_string()
        )
    );
    assert!(g.next_hop(&installed("b.v7", "7.0.0")).is_none());
}

#[test]
fn a_path_stuck_half_way_names_the_entry_it_is_stuck_at() {
    // h replaces s (skipped, so out of the order) which replaces m: nothing in the order replaces m.
    let g = graph(vec![
        entry("h").version("3.0.0").replaces("s").skips(&["s"]),
        entry("s").version("2.0.0").replaces("m"),
        entry("m").version("1.0.0").skip_range("<1.0.0"),
    ]);
    assert_eq!(
        g.upgrade_path(&version_only("0.5.0")),
        Err(GraphError::NoUpgradePath {
            from: "m (version 1.0.0)".into()
        })
    );
}

#[test]
fn crossing_skip_ranges_make_the_path_fail_as_a_cycle_instead_of_looping() {
    let g = graph(vec![
        entry("h").version("9.0.0").replaces("s").skips(&["s"]),
        entry("s").version("8.0.0").replaces("p"),
        entry("p").version("2.0.0").replaces("q").skip_range("=1.0.0"),
        entry("q").version("1.0.0").skip_range("=2.0.0"),
    ]);
    assert_eq!(g.ordered().map(|o| names(&o)), Ok(strings(&["h", "p", "q"])));
    assert_eq!(
        g.upgrade_path(&installed("p", "2.0.0")),
        Err(GraphError::Cycle {
            path: strings(&["q", "p", "q"])
        })
    );
}

#[test]
fn entries_without_a_version_are_reached_by_name_only() {
    let g = graph(vec![
        entry("a"),
        entry("b").replaces("a"),
        entry("c").skip_range(">=0.0.0").replaces("b"),
    ]);
    assert_eq!(
        path(&g, &installed("a", "1.0.0")),
        Ok(vec![hop("c", EdgeKind::SkipRange)])
    );
    // From b (no version) only c's replaces can apply.
    assert_eq!(
        g.next_hop(&installed("b", "1.0.0")).map(|h| h.edge),
        Some(EdgeKind::Replaces)
    );
    assert!(g.edges().iter().all(|e| e.kind != EdgeKind::SkipRange));
}

// ---- edges ------------------------------------------------------------------------------

#[test]
fn edges_list_every_kind_including_targets_outside_the_channel() {
    let g = graph(vec![
        entry("a.v1").version("1.0.0").replaces("a.v0"),
        entry("a.v2")
            .version("2.0.0")
            .replaces("a.v1")
            .skips(&["gone", "gone"]),
        entry("a.v3")
            .version("3.0.0")
            .replaces("a.v2")
            .skip_range(">=1.0.0 <3.0.0"),
    ]);
    let e = |from: &str, to: &str, kind| Edge {
        from: from.into(),
        to: to.into(),
        kind,
    };
    assert_eq!(
        g.edges(),
        vec![
            e("a.v1", "a.v0", EdgeKind::Replaces),
            e("a.v2", "a.v1", EdgeKind::Replaces),
            e("a.v2", "gone", EdgeKind::Skips),
            e("a.v3", "a.v2", EdgeKind::Replaces),
            e("a.v3", "a.v1", EdgeKind::SkipRange),
            e("a.v3", "a.v2", EdgeKind::SkipRange),
        ]
    );
}

#[test]
fn edge_kinds_print_and_serialize_as_their_fbc_field_names() {
    assert_eq!(EdgeKind::Replaces.to_string(), "replaces");
    assert_eq!(EdgeKind::Skips.to_string(), "skips");
    assert_eq!(EdgeKind::SkipRange.to_string(), "skipRange");
    let json = serde_json::to_string(&[EdgeKind::Replaces, EdgeKind::Skips, EdgeKind::SkipRange]).ok();
    assert_eq!(json.as_deref(), Some(r#"["replaces","skips","skipRange"]"#));
    let back: Result<EdgeKind, _> = serde_json::from_str("\"skipRange\"");
    assert_eq!(back.ok(), Some(EdgeKind::SkipRange));
    let hop = Hop {
        name: "a".into(),
        version: Version::parse("1.0.0").ok(),
        edge: EdgeKind::Skips,
    };
    assert_eq!(
        serde_json::to_string(&hop).ok().as_deref(),
        Some(r#"{"name":"a","version":"1.0.0","edge":"skips"}"#)
    );
}

// ---- robustness -------------------------------------------------------------------------

/// A tiny deterministic pseudo-random generator (no dependency, reproducible).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

#[test]
fn arbitrary_graphs_never_panic_or_loop_and_paths_end_at_the_head() {
    let mut rng = Lcg(42);
    let ranges = ["<3.0.0", ">=1.0.0 <5.0.0", ">=4.0.0", "=2.0.0"];
    for _ in 0..400 {
        let n = 1 + rng.below(8) as usize;
        let mut entries = Vec::new();
        for i in 0..n {
            let mut b = entry(&format!("e{i}"));
            if rng.below(4) != 0 {
                b = b.version(&format!("{}.0.0", rng.below(6)));
            }
            if rng.below(3) != 0 {
                b = b.replaces(&format!("e{}", rng.below(n as u64 + 1)));
            }
            if rng.below(4) == 0 {
                let s = format!("e{}", rng.below(n as u64 + 1));
                b = b.skips(&[s.as_str()]);
            }
            if rng.below(4) == 0 {
                b = b.skip_range(ranges[rng.below(ranges.len() as u64) as usize]);
            }
            entries.push(b);
        }
        let g = graph(entries);
        let _ = g.problems();
        let _ = g.edges();
        let opts = RenderOptions {
            channel: "c".into(),
            package: "p".into(),
            is_default_channel: false,
        };
        let text = render::text(&g, &opts);
        for e in g.entries() {
            assert!(text.contains(&e.name), "every entry is drawn: {text}");
        }
        let _ = render::dot(&g, &opts);
        let _ = render::mermaid(&g, &opts);
        for v in 0..6 {
            let from = version_only(&format!("{v}.0.0"));
            if let (Ok(hops), Ok(head)) = (g.upgrade_path(&from), g.head()) {
                if let Some(last) = hops.last() {
                    assert_eq!(last.name, head.name);
                }
                assert!(hops.len() <= g.entries().len());
            }
        }
        for e in g.entries() {
            let from = Installed {
                name: Some(e.name.clone()),
                version: Version::new(1, 0, 0),
            };
            if let (Ok(hops), Ok(head)) = (g.upgrade_path(&from), g.head()) {
                assert_eq!(
                    hops.last().map(|h| h.name.as_str()).unwrap_or(head.name.as_str()),
                    head.name
                );
            }
        }
    }
}

// ---- rendering --------------------------------------------------------------------------

fn redis_stable() -> ChannelGraph {
    graph(vec![
        entry("redis-operator.v0.1.0").version("0.1.0"),
        entry("redis-operator.v0.2.0")
            .version("0.2.0")
            .replaces("redis-operator.v0.1.0"),
        entry("redis-operator.v0.2.1")
            .version("0.2.1")
            .replaces("redis-operator.v0.1.0")
            .skips(&["redis-operator.v0.2.0"]),
        entry("redis-operator.v0.3.0")
            .version("0.3.0")
            .replaces("redis-operator.v0.2.1"),
        entry("redis-operator.v1.0.0")
            .version("1.0.0")
            .replaces("redis-operator.v0.3.0")
            .skip_range(">=0.1.0 <1.0.0"),
    ])
}

fn stable_opts() -> RenderOptions {
    RenderOptions {
        channel: "stable".into(),
        package: "redis-operator".into(),
        is_default_channel: true,
    }
}

#[test]
fn the_redis_stable_channel_is_valid_and_upgrades_in_one_hop_from_anywhere() {
    let g = redis_stable();
    assert_eq!(g.problems(), vec![]);
    for from in ["0.1.0", "0.2.0", "0.2.1", "0.3.0"] {
        let name = format!("redis-operator.v{from}");
        assert_eq!(
            g.upgrade_path(&installed(&name, from)).map(|p| p.len()),
            Ok(1),
            "from {name}"
        );
    }
}

#[test]
fn text_rendering_draws_the_channel_as_a_labelled_tree() {
    insta::assert_snapshot!(render::text(&redis_stable(), &stable_opts()));
}

#[test]
fn dot_rendering_labels_every_edge_and_styles_the_head() {
    insta::assert_snapshot!(render::dot(&redis_stable(), &stable_opts()));
}

#[test]
fn mermaid_rendering_labels_every_edge_and_styles_the_head() {
    insta::assert_snapshot!(render::mermaid(&redis_stable(), &stable_opts()));
}

#[test]
fn text_rendering_of_a_broken_channel_shows_detached_entries_and_problems() {
    let g = graph(vec![
        entry("a.v3").replaces("a.v2"),
        entry("a.v2").replaces("a.v1"),
        entry("a.v1"),
        entry("b.v1"),
        entry("x").replaces("y"),
        entry("y").replaces("x").skips(&["missing"]),
    ]);
    let opts = RenderOptions {
        channel: "alpha".into(),
        package: "a".into(),
        is_default_channel: false,
    };
    insta::assert_snapshot!(render::text(&g, &opts));
}

#[test]
fn text_rendering_of_a_long_channel_stays_narrow_and_abbreviates_ranges() {
    let mut entries = vec![entry("op.v1.0.0").version("1.0.0")];
    for i in 1..24 {
        entries.push(
            entry(&format!("op.v1.{i}.0"))
                .version(&format!("1.{i}.0"))
                .replaces(&format!("op.v1.{}.0", i - 1))
                .skip_range(&format!(">=1.0.0 <1.{i}.0")),
        );
    }
    let g = graph(entries);
    let opts = RenderOptions {
        channel: "fast".into(),
        package: "op".into(),
        is_default_channel: false,
    };
    let text = render::text(&g, &opts);
    assert!(text.lines().all(|l| l.chars().count() <= 110), "{text}");
    insta::assert_snapshot!(text);
}
