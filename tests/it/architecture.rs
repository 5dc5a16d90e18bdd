//! Architecture test: the layering the crate documents (`src/lib.rs`) is checked, not only kept
//! by discipline.
//!
//! 1. **The core does no I/O.** The functional core (`codec`, `version_range`, `catalog`, `graph`,
//!    `bundle`, `resolve`, `plan`, `status`, `api`) must not mention `tokio`, `kube::Client`,
//!    `kube::Api`, `std::fs`, `reqwest`, `tonic` or `oci_client` outside comments and test code
//!    (`#[cfg(test)]` items and `tests.rs` files).
//! 2. **No import cycles between modules.** The graph of file modules of `src/` (an edge wherever a
//!    module names a path into another: `use crate::…`, `use super::…`, or a path in an expression,
//!    re-exports followed to the module that defines the item) has no cycle. Edges between a module
//!    and its own ancestors are the module tree (a child using its parent's context, a parent
//!    wiring its children), not layering, and are not counted. Nor has the graph of sibling
//!    trees (a module counts with its children: naming `plan::csv::deployments` from
//!    `plan::operator_condition` is an edge to `plan::csv`).
//!
//! Linkerd gets rule 1 from separate crates; in one package a test is the cheapest fence. The
//! scanner below is a small Rust lexer (comments, strings, chars, raw strings, lifetimes) plus a
//! `use`-tree expander: enough for these two rules, and tested against injected violations at the
//! end of this file. We keep our own rather than add `syn` (`full` + `visit`) as a
//! dev-dependency: syn sees the same tokens inside macro bodies (`format!`, `json!`) that we do,
//! so it would not be more exact for these rules, and the lexer costs no compile time.
//!
//! Rule 2 also holds for every other crate of the workspace (`redis-operator/src`, each
//! `crates/*/src`); rule 1 is about olm-rs's core only.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// Top-level modules of the functional core.
const CORE: &[&str] = &[
    "codec",
    "version_range",
    "catalog",
    "graph",
    "bundle",
    "resolve",
    "plan",
    "status",
    "api",
];

/// Identifiers the core may not mention at all.
const FORBIDDEN_CRATES: &[&str] = &["tokio", "reqwest", "tonic", "oci_client"];

/// Path prefixes the core may not name.
const FORBIDDEN_PATHS: &[&[&str]] = &[
    &["std", "fs"],
    &["kube", "Client"],
    &["kube", "Api"],
    &["kube", "client"],
    &["kube", "api", "Api"],
];

// ---------------------------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
    /// A string, char, number or lifetime: never a path.
    Lit,
}

/// Tokens of `src`, without comments; literals collapsed to [`Tok::Lit`].
fn lex(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(&c, i + 1);
            out.push(Tok::Lit);
        } else if (ch == 'r' || ch == 'b' || ch == 'c') && raw_string_start(&c, i).is_some() {
            let (hashes, body) = raw_string_start(&c, i).unwrap_or((0, i));
            i = skip_raw_string(&c, body, hashes);
            out.push(Tok::Lit);
        } else if (ch == 'b' || ch == 'c') && at(i + 1) == '"' {
            i = skip_string(&c, i + 2);
            out.push(Tok::Lit);
        } else if ch == 'b' && at(i + 1) == '\'' {
            i = skip_char(&c, i + 1);
            out.push(Tok::Lit);
        } else if ch == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
            if at(i + 1) == '\\' || at(i + 2) == '\'' {
                i = skip_char(&c, i);
            } else {
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
            out.push(Tok::Lit);
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                // `1..2` is a range, not a float.
                if c[i] == '.' && at(i + 1) == '.' {
                    break;
                }
                i += 1;
            }
            out.push(Tok::Lit);
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Tok::PathSep);
            i += 2;
        } else {
            out.push(Tok::Punct(ch));
            i += 1;
        }
    }
    out
}

fn skip_string(c: &[char], mut i: usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

fn skip_char(c: &[char], i: usize) -> usize {
    // c[i] is the opening quote.
    let mut j = i + 1;
    while j < c.len() {
        match c[j] {
            '\\' => j += 2,
            '\'' => return j + 1,
            _ => j += 1,
        }
    }
    j
}

/// `r"`, `r#"`, `br#"`, `cr"` ...: (number of hashes, index after the opening quote).
fn raw_string_start(c: &[char], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if c.get(j) == Some(&'b') || c.get(j) == Some(&'c') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some((hashes, j + 1))
}

fn skip_raw_string(c: &[char], mut i: usize, hashes: usize) -> usize {
    while i < c.len() {
        if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

// ---------------------------------------------------------------------------------------------
// Test code removal
// ---------------------------------------------------------------------------------------------

/// Index just past the attribute starting at `toks[i] == '#'`, and whether it marks test code
/// (`#[test]`, or a `cfg` that mentions `test` without `not`).
fn attribute(toks: &[Tok], i: usize) -> Option<(usize, bool, bool)> {
    let mut j = i + 1;
    let inner = toks.get(j) == Some(&Tok::Punct('!'));
    if inner {
        j += 1;
    }
    if toks.get(j) != Some(&Tok::Punct('[')) {
        return None;
    }
    let start = j;
    let mut depth = 0;
    while j < toks.len() {
        match toks[j] {
            Tok::Punct('[') => depth += 1,
            Tok::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        j += 1;
    }
    let body = &toks[start + 1..j];
    let ident = |t: &Tok, s: &str| matches!(t, Tok::Ident(w) if w == s);
    let is_test = match body.first() {
        Some(t) if ident(t, "test") => body.len() == 1,
        Some(t) if ident(t, "cfg") => {
            body.iter().any(|t| ident(t, "test")) && !body.iter().any(|t| ident(t, "not"))
        }
        _ => false,
    };
    Some((j + 1, is_test, inner))
}

/// End of the item starting at `i`: past its `;` or its balanced `{ … }`.
fn item_end(toks: &[Tok], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < toks.len() {
        match toks[i] {
            Tok::Punct(';') if depth == 0 => return i + 1,
            Tok::Punct('{' | '(' | '[') => depth += 1,
            Tok::Punct('}' | ')' | ']') => {
                depth -= 1;
                if depth == 0 && toks[i] == Tok::Punct('}') {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// The tokens of a file that are not test code.
fn non_test(toks: Vec<Tok>) -> Vec<Tok> {
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        if toks[i] == Tok::Punct('#')
            && let Some((end, is_test, inner)) = attribute(&toks, i)
        {
            if is_test && inner {
                return Vec::new();
            }
            if is_test {
                // Skip any further attributes, then the item.
                let mut j = end;
                while toks.get(j) == Some(&Tok::Punct('#')) {
                    match attribute(&toks, j) {
                        Some((next, _, _)) => j = next,
                        None => break,
                    }
                }
                i = item_end(&toks, j);
            } else {
                out.extend_from_slice(&toks[i..end]);
                i = end;
            }
            continue;
        }
        out.push(toks[i].clone());
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------------

/// A path named in the code, expanded from use trees (`a::{b, c::d}` → `a::b`, `a::c::d`),
/// with whether it was named by a `pub use` and the inline modules it was written in.
#[derive(Debug, Clone)]
struct Named {
    path: Vec<String>,
    pub_use: bool,
    /// Inline (non-test) `mod x { … }` blocks around the path, outermost first.
    inline: Vec<String>,
}

fn ident(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Ident(w)) => Some(w),
        _ => None,
    }
}

/// Expands the path (or use tree) starting at `i`; returns the leaf paths and the index after it.
fn expand(toks: &[Tok], mut i: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix.to_vec();
    loop {
        match toks.get(i) {
            Some(Tok::Ident(w)) if w == "as" => {
                // `x as y`: the alias is not a path.
                return (vec![path], i + 2);
            }
            Some(Tok::Ident(w)) => {
                if w != "self" || path.is_empty() {
                    path.push(w.clone());
                }
                i += 1;
            }
            Some(Tok::Punct('*')) => {
                path.push("*".into());
                i += 1;
            }
            Some(Tok::Punct('{')) => {
                let mut leaves = Vec::new();
                i += 1;
                while i < toks.len() && toks[i] != Tok::Punct('}') {
                    if toks[i] == Tok::Punct(',') {
                        i += 1;
                        continue;
                    }
                    let (more, next) = expand(toks, i, &path);
                    leaves.extend(more);
                    i = next.max(i + 1);
                }
                return (leaves, i + 1);
            }
            _ => return (vec![path], i),
        }
        if toks.get(i) == Some(&Tok::PathSep) {
            i += 1;
        } else {
            return (vec![path], i);
        }
    }
}

/// Every path of the non-test code that starts with an identifier followed by `::` (and every
/// `use` tree), with the inline module it is in.
fn named_paths(toks: &[Tok]) -> Vec<Named> {
    let mut out = Vec::new();
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(name) = ident(toks.get(i + 1))
                    && toks.get(i + 2) == Some(&Tok::Punct('{'))
                {
                    inline.push((name.to_owned(), depth));
                }
            }
            Tok::Ident(w) if w == "use" => {
                let pub_use = i > 0 && ident(toks.get(i - 1)) == Some("pub")
                    || (i > 3
                        && ident(toks.get(i - 4)) == Some("pub")
                        && toks.get(i - 3) == Some(&Tok::Punct('(')));
                let start = if toks.get(i + 1) == Some(&Tok::PathSep) {
                    i + 2
                } else {
                    i + 1
                };
                let (leaves, next) = expand(toks, start, &[]);
                for path in leaves {
                    out.push(Named {
                        path,
                        pub_use,
                        inline: inline.iter().map(|(n, _)| n.clone()).collect(),
                    });
                }
                i = next;
                continue;
            }
            Tok::Ident(_)
                if toks.get(i + 1) == Some(&Tok::PathSep)
                    && toks.get(i.wrapping_sub(1)) != Some(&Tok::PathSep) =>
            {
                let (leaves, next) = expand(toks, i, &[]);
                for path in leaves {
                    out.push(Named {
                        path,
                        pub_use: false,
                        inline: inline.iter().map(|(n, _)| n.clone()).collect(),
                    });
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The crate's files
// ---------------------------------------------------------------------------------------------

/// One file module of `src/`: its module path (`catalog::load`; empty for `lib.rs`) and tokens.
struct Module {
    path: Vec<String>,
    file: PathBuf,
    toks: Vec<Tok>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|e| {
            e.map(|e| e.path())
                .unwrap_or_else(|err| panic!("list {}: {err}", dir.display()))
        })
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file modules of the library in `src` (test files and binaries left out).
fn modules(src: &Path) -> Vec<Module> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap_or(&file);
        let mut parts: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.first().is_some_and(|p| p == "bin" || p == "main") {
            continue;
        }
        match parts.last().map(String::as_str) {
            Some("tests") => continue,
            Some("mod" | "lib") => {
                parts.pop();
            }
            _ => {}
        }
        let text = fs::read_to_string(&file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        out.push(Module {
            path: parts,
            file: rel.to_path_buf(),
            toks: non_test(lex(&text)),
        });
    }
    out
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

// ---------------------------------------------------------------------------------------------
// Rule 1: no I/O in the core
// ---------------------------------------------------------------------------------------------

/// What a module's non-test code mentions that the core may not.
fn io_mentions(toks: &[Tok]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for t in toks {
        if let Tok::Ident(w) = t
            && FORBIDDEN_CRATES.contains(&w.as_str())
        {
            found.insert(w.clone());
        }
    }
    for named in named_paths(toks) {
        let path: Vec<&str> = named.path.iter().map(String::as_str).collect();
        for forbidden in FORBIDDEN_PATHS {
            if path.starts_with(forbidden) {
                found.insert(forbidden.join("::"));
            }
        }
    }
    found
}

#[test]
fn the_core_does_no_io() {
    let mut violations = Vec::new();
    let mut scanned = 0;
    for module in modules(&src_dir()) {
        if !module
            .path
            .first()
            .is_some_and(|top| CORE.contains(&top.as_str()))
        {
            continue;
        }
        scanned += 1;
        let found = io_mentions(&module.toks);
        if !found.is_empty() {
            violations.push(format!(
                "src/{} mentions {}",
                module.file.display(),
                found.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    assert!(scanned > 25, "only {scanned} core files found");
    assert!(
        violations.is_empty(),
        "the functional core must not do I/O (move it to the shell: source, controller, k8s, cli):\n{}",
        violations.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Rule 2: no import cycles
// ---------------------------------------------------------------------------------------------

/// The module graph: module path → modules it names (ancestors and descendants left out).
fn module_graph(modules: &[Module]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let known: BTreeSet<Vec<String>> = modules.iter().map(|m| m.path.clone()).collect();
    // Items each module defines, and what its `pub use`s re-export (name → full path).
    let mut defines: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    let mut reexports: BTreeMap<Vec<String>, Vec<Vec<String>>> = BTreeMap::new();
    let mut named: BTreeMap<Vec<String>, Vec<Vec<String>>> = BTreeMap::new();
    for m in modules {
        let mut items = BTreeSet::new();
        for w in m.toks.windows(2) {
            if let (Tok::Ident(kw), Tok::Ident(name)) = (&w[0], &w[1])
                && matches!(
                    kw.as_str(),
                    "struct"
                        | "enum"
                        | "fn"
                        | "const"
                        | "type"
                        | "trait"
                        | "static"
                        | "mod"
                        | "union"
                        | "macro_rules"
                )
            {
                items.insert(name.clone());
            }
        }
        defines.insert(m.path.clone(), items);
        for n in named_paths(&m.toks) {
            let Some(abs) = absolute(&m.path, &n.inline, &n.path) else {
                continue;
            };
            if n.pub_use && n.inline.is_empty() {
                reexports.entry(m.path.clone()).or_default().push(abs.clone());
            }
            named.entry(m.path.clone()).or_default().push(abs);
        }
    }
    let resolve = |abs: &[String]| -> Option<Vec<String>> {
        let mut target = (0..=abs.len())
            .rev()
            .map(|k| abs[..k].to_vec())
            .find(|p| known.contains(p))?;
        // Follow re-exports (a facade `pub use child::Item`) to the module defining the item.
        for _ in 0..4 {
            let Some(item) = abs.get(target.len()) else { break };
            if defines.get(&target).is_some_and(|d| d.contains(item)) {
                break;
            }
            let via = reexports.get(&target).and_then(|list| {
                list.iter().find(|p| p.last() == Some(item)).or_else(|| {
                    list.iter().find(|p| {
                        p.last().is_some_and(|l| l == "*")
                            && defines.get(&p[..p.len() - 1]).is_some_and(|d| d.contains(item))
                    })
                })
            });
            let Some(via) = via else { break };
            let Some(next) = (0..via.len())
                .rev()
                .map(|k| via[..k].to_vec())
                .find(|p| known.contains(p))
            else {
                break;
            };
            if next == target {
                break;
            }
            target = next;
        }
        Some(target)
    };
    let mut graph: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, paths) in &named {
        for abs in paths {
            let Some(to) = resolve(abs) else { continue };
            if to.starts_with(from) || from.starts_with(&to) {
                continue;
            }
            graph.entry(from.clone()).or_default().insert(to);
        }
    }
    graph
}

/// `crate::a::b`, `super::x`, `self::y`, `child::z` made absolute (module path segments plus item
/// names).
fn absolute(module: &[String], inline: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut here: Vec<String> = module.iter().chain(inline).cloned().collect();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            here.clear();
            rest = &rest[1..];
        }
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                here.pop();
                rest = &rest[1..];
            }
        }
        Some("self") => rest = &rest[1..],
        // A child module (`use validate::Problem` in `catalog`), or another crate: resolving
        // keeps the longest prefix that is a module of ours, which for another crate is `module`
        // itself (no edge).
        Some(_) => {}
        None => return None,
    }
    here.extend(rest.iter().cloned());
    Some(here)
}

/// The graph between sibling subtrees: an edge `a::x::… → a::y::…` (their deepest common
/// ancestor `a`) is an edge `a::x → a::y`. A module and its children are one unit to the rest
/// of the tree (a child may use its parent's items, a parent its children's), so a module that
/// names `plan::csv::deployments` depends on `plan::csv`, and `plan::csv` naming it back is a
/// cycle the module graph alone misses (the edge into the child is not the edge into its
/// parent).
fn subtree_graph(
    graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut out: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, targets) in graph {
        for to in targets {
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            let (Some(a), Some(b)) = (from.get(..=common), to.get(..=common)) else {
                continue;
            };
            out.entry(a.to_vec()).or_default().insert(b.to_vec());
        }
    }
    out
}

/// One cycle of the graph, if any (depth-first search).
fn find_cycle(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        node: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        state.insert(node.clone(), 1);
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next) {
                Some(1) => {
                    let start = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(cycle) = visit(next, graph, state, stack) {
                        return Some(cycle);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node) {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(node, graph, &mut state, &mut stack) {
                return Some(cycle);
            }
        }
    }
    None
}

fn show(cycle: &[Vec<String>]) -> String {
    cycle
        .iter()
        .map(|m| format!("crate::{}", m.join("::")))
        .collect::<Vec<_>>()
        .join(" -> ")
}

fn assert_no_cycle(src: &Path, at_least: usize) {
    let modules = modules(src);
    let graph = module_graph(&modules);
    assert!(
        graph.len() >= at_least,
        "only {} modules with edges in {}",
        graph.len(),
        src.display()
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "import cycle in {}: {}\nbreak it by moving what both need into a third module",
            src.display(),
            show(&cycle)
        );
    }
    if let Some(cycle) = find_cycle(&subtree_graph(&graph)) {
        panic!(
            "import cycle between module trees in {}: {} (a module counts with its children)\n\
             break it by moving what both need into a third module",
            src.display(),
            show(&cycle)
        );
    }
}

#[test]
fn modules_do_not_import_each_other_in_a_cycle() {
    assert_no_cycle(&src_dir(), 30);
}

#[test]
fn the_redis_operator_modules_do_not_import_each_other_in_a_cycle() {
    assert_no_cycle(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("redis-operator/src"),
        5,
    );
}

#[test]
fn every_workspace_crate_is_free_of_import_cycles() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut checked = 0;
    for entry in fs::read_dir(&crates).expect("crates/ is readable").flatten() {
        let src = entry.path().join("src");
        if src.is_dir() {
            assert_no_cycle(&src, 0);
            checked += 1;
        }
    }
    assert!(checked >= 3, "only {checked} crates under crates/");
}

// ---------------------------------------------------------------------------------------------
// The checks catch what they should (injected violations)
// ---------------------------------------------------------------------------------------------

fn module(path: &str, text: &str) -> Module {
    Module {
        path: if path.is_empty() {
            Vec::new()
        } else {
            path.split("::").map(str::to_owned).collect()
        },
        file: PathBuf::from(path),
        toks: non_test(lex(text)),
    }
}

#[test]
fn io_in_code_is_found_but_not_in_comments_strings_or_tests() {
    let caught = |text: &str| io_mentions(&non_test(lex(text)));
    assert_eq!(caught("use std::fs;"), BTreeSet::from(["std::fs".to_owned()]));
    assert_eq!(
        caught("use std::{collections::HashMap, fs::{self, File}};"),
        BTreeSet::from(["std::fs".to_owned()])
    );
    assert_eq!(caught("fn f() { let _ = std::fs::read(\"x\"); }").len(), 1);
    assert_eq!(
        caught("use kube::{Api, ResourceExt};"),
        BTreeSet::from(["kube::Api".to_owned()])
    );
    assert_eq!(caught("async fn f(c: kube::Client) {}").len(), 1);
    assert_eq!(caught("fn f() { tokio::spawn(async {}); }").len(), 1);
    assert_eq!(caught("use oci_client::Reference;").len(), 1);
    // Allowed: comments, doc comments, strings, test code, other kube items.
    let clean = r####"
        //! Reads nothing: [`std::fs`] is the shell's, as is tokio.
        /// Not `kube::Api`.
        use kube::ResourceExt; /* tokio */
        const S: &str = "std::fs and tokio";
        const R: &str = r#"reqwest "quoted" tonic"#;
        const C: char = '"';
        fn f<'a>(x: &'a str) -> &'a str { x }
        #[cfg(test)]
        mod tests { use std::fs; fn t() { tokio::spawn(async {}); } }
        #[cfg(test)]
        mod more;
        #[test]
        fn t() { let _ = std::fs::read("x"); }
    "####;
    assert_eq!(caught(clean), BTreeSet::new());
    // `cfg(not(test))` is not test code.
    assert_eq!(caught("#[cfg(not(test))]\nuse std::fs;").len(), 1);
}

#[test]
fn a_cycle_is_found_through_use_super_expressions_and_facades() {
    let cycle = |modules: &[Module]| find_cycle(&module_graph(modules)).map(|c| show(&c));
    // catalog/model ↔ catalog/validate, as before issue 10, through the parent's re-export.
    let before = [
        module(
            "catalog",
            "pub mod model; pub mod validate; pub use validate::{Problem, Violation};",
        ),
        module(
            "catalog::model",
            "use crate::catalog::{Problem}; pub struct Model;",
        ),
        module(
            "catalog::validate",
            "use super::model::Model; pub struct Problem; pub enum Violation {}",
        ),
    ];
    assert_eq!(
        cycle(&before).as_deref(),
        Some("crate::catalog::model -> crate::catalog::validate -> crate::catalog::model")
    );
    // cache ↔ catalog_source through a path in an expression.
    let shell = [
        module(
            "controller",
            "mod cache; mod catalog_source; use cache::X; fn run() { catalog_source::reconcile(); }",
        ),
        module(
            "controller::cache",
            "pub struct X; fn f() { crate::controller::catalog_source::decode(); }",
        ),
        module(
            "controller::catalog_source",
            "use super::{Context, cache::X}; pub fn decode() {}",
        ),
    ];
    assert!(cycle(&shell).is_some_and(|c| c.contains("cache") && c.contains("catalog_source")));
    // A child using its parent and a parent wiring its children is not a cycle; neither is a
    // test module's import.
    let tree = [
        module(
            "controller",
            "pub struct Context; mod csv; fn run() { csv::reconcile(); }",
        ),
        module("controller::csv", "use super::Context; pub fn reconcile() {}"),
        module(
            "plan",
            "pub fn p() {} #[cfg(test)] mod tests { use crate::controller::Context; }",
        ),
        module("plan::csv", "use crate::plan::p;"),
        module("", "pub mod controller; pub mod plan;"),
    ];
    assert_eq!(cycle(&tree), None);
    // A path into another crate is not an edge; a glob re-export is followed.
    let glob = [
        module("api", "pub mod v1; pub use v1::*;"),
        module("api::v1", "pub struct Sub; fn f() { crate::status::g(); }"),
        module(
            "status",
            "use crate::api::Sub; use serde::Serialize; pub fn g() {}",
        ),
    ];
    assert_eq!(
        cycle(&glob).as_deref(),
        Some("crate::api::v1 -> crate::status -> crate::api::v1")
    );
    // plan::csv ↔ plan::operator_condition, as before issue 24: through a child of csv the
    // module graph has no cycle, the graph of sibling trees has.
    let trees = [
        module("plan", "pub mod csv; pub mod operator_condition;"),
        module(
            "plan::csv",
            "mod deployments; pub use deployments::labels; use super::operator_condition::Block;",
        ),
        module("plan::csv::deployments", "pub fn labels() {}"),
        module(
            "plan::operator_condition",
            "pub struct Block; fn f() { super::csv::labels(); }",
        ),
    ];
    let graph = module_graph(&trees);
    assert_eq!(find_cycle(&graph), None);
    assert_eq!(
        find_cycle(&subtree_graph(&graph)).map(|c| show(&c)).as_deref(),
        Some("crate::plan::csv -> crate::plan::operator_condition -> crate::plan::csv")
    );
}
