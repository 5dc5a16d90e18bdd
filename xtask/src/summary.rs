//! summary: a bench's figures beside their targets (printed, and written as TSV and JSON under
//! target/), with targets read from an `--expect` file replacing the built-in ones.
//!
//! An expect file has one target per line, `<figure> <op> <number>` with `<op>` one of `<`,
//! `<=`, `=`, `>=`, `>`; `#` starts a comment. A figure it names that the bench does not print is
//! an error (a misspelt name would otherwise silently check nothing).

use std::{collections::BTreeMap, fmt::Write as _, path::Path};

use serde::Serialize;

/// How a figure is compared with its target.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Op {
    #[serde(rename = "<")]
    Below,
    #[serde(rename = "<=")]
    AtMost,
    #[serde(rename = "=")]
    Equal,
    #[serde(rename = ">=")]
    AtLeast,
    #[serde(rename = ">")]
    Above,
}

impl Op {
    /// `<`, `<=`, `=`, `>=` or `>`.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Below => "<",
            Op::AtMost => "<=",
            Op::Equal => "=",
            Op::AtLeast => ">=",
            Op::Above => ">",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "<" => Op::Below,
            "<=" => Op::AtMost,
            "=" => Op::Equal,
            ">=" => Op::AtLeast,
            ">" => Op::Above,
            _ => return None,
        })
    }

    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Below => value < limit,
            Op::AtMost => value <= limit,
            Op::Equal => (value - limit).abs() < f64::EPSILON,
            Op::AtLeast => value >= limit,
            Op::Above => value > limit,
        }
    }
}

/// A target: `op limit`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Target {
    pub op: Op,
    pub limit: f64,
}

impl Target {
    /// `op limit`, as the tables print it (`< 300`).
    pub fn show(&self) -> String {
        format!("{} {}", self.op.symbol(), self.limit)
    }
}

/// One measured figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    /// A stable name (what an expect file names).
    pub name: String,
    /// `None` when it could not be measured.
    pub value: Option<f64>,
    /// `s`, `ms`, `MiB`, `requests` ...
    pub unit: String,
    pub target: Option<Target>,
}

impl Figure {
    /// A figure without a target.
    pub fn new(name: &str, value: Option<f64>, unit: &str) -> Self {
        Self {
            name: name.to_owned(),
            value,
            unit: unit.to_owned(),
            target: None,
        }
    }

    /// The same figure with a built-in target.
    pub fn target(mut self, op: Op, limit: f64) -> Self {
        self.target = Some(Target { op, limit });
        self
    }

    /// `Some(true)` met, `Some(false)` missed (or not measured), `None` no target.
    pub fn met(&self) -> Option<bool> {
        let target = self.target?;
        Some(self.value.is_some_and(|v| target.op.holds(v, target.limit)))
    }
}

/// A bad expect file.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ExpectError {
    #[error("{source_name} line {line}: {text:?} is not `<figure> <op> <number>` (op one of < <= = >= >)")]
    Syntax {
        source_name: String,
        line: usize,
        text: String,
    },
    #[error("{source_name} line {line}: no figure {name:?} in this bench (its figures: {known})")]
    UnknownFigure {
        source_name: String,
        line: usize,
        name: String,
        known: String,
    },
}

/// The targets of an expect file, by figure name.
pub fn parse_expect(text: &str, source_name: &str) -> Result<BTreeMap<String, (usize, Target)>, ExpectError> {
    let mut out = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let syntax = || ExpectError::Syntax {
            source_name: source_name.to_owned(),
            line: index + 1,
            text: raw.to_owned(),
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        let [name, op, limit] = words.as_slice() else {
            return Err(syntax());
        };
        let op = Op::parse(op).ok_or_else(syntax)?;
        let limit: f64 = limit.parse().map_err(|_| syntax())?;
        out.insert((*name).to_owned(), (index + 1, Target { op, limit }));
    }
    Ok(out)
}

/// Replaces the targets of `figures` with those of the expect file `text`.
pub fn apply_expect(figures: &mut [Figure], text: &str, source_name: &str) -> Result<(), ExpectError> {
    for (name, (line, target)) in parse_expect(text, source_name)? {
        match figures.iter_mut().find(|f| f.name == name) {
            Some(figure) => figure.target = Some(target),
            None => {
                return Err(ExpectError::UnknownFigure {
                    source_name: source_name.to_owned(),
                    line,
                    name,
                    known: figures
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
    }
    Ok(())
}

/// The table of figures: name, value, unit, target, met.
pub fn table(title: &str, figures: &[Figure]) -> String {
    let width = figures.iter().map(|f| f.name.len()).max().unwrap_or(6).max(6);
    let mut out = format!("{title}\n");
    let _ = writeln!(
        out,
        "{:<width$} {:>10} {:<8} {:>10}  met",
        "figure", "value", "unit", "target"
    );
    for f in figures {
        let value = match f.value {
            Some(v) => format!("{v:.2}"),
            None => "-".to_owned(),
        };
        let target = f.target.map_or_else(|| "-".to_owned(), |t| t.show());
        let met = match f.met() {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        let _ = writeln!(
            out,
            "{:<width$} {value:>10} {:<8} {target:>10}  {met}",
            f.name, f.unit
        );
    }
    out
}

/// The figures as TSV (a header, then one line each).
pub fn tsv(figures: &[Figure]) -> String {
    let mut out = "figure\tvalue\tunit\ttarget\tmet\n".to_owned();
    for f in figures {
        let value = f.value.map(|v| v.to_string()).unwrap_or_default();
        let target = f.target.map(|t| t.show()).unwrap_or_default();
        let met = match f.met() {
            Some(true) => "yes",
            Some(false) => "no",
            None => "",
        };
        let _ = writeln!(out, "{}\t{value}\t{}\t{target}\t{met}", f.name, f.unit);
    }
    out
}

/// Writes `<dir>/figures.tsv` and `<dir>/figures.json`.
pub fn write(dir: &Path, figures: &[Figure]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("figures.tsv"), tsv(figures))?;
    let json = serde_json::to_string_pretty(figures).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("figures.json"), json + "\n")
}

/// The exit verdict of a bench: a missed target fails the run only when the targets came from
/// an expect file (`--expect`); without one the figures are reported, as the scripts did.
pub fn verdict(figures: &[Figure], expect_given: bool) -> bool {
    !expect_given || all_met(figures)
}

/// True when every figure with a target met it.
pub fn all_met(figures: &[Figure]) -> bool {
    figures.iter().all(|f| f.met() != Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures() -> Vec<Figure> {
        vec![
            Figure::new("cold-s", Some(2.5), "s").target(Op::Below, 3.0),
            Figure::new("rss-mib", Some(160.0), "MiB").target(Op::Below, 150.0),
            Figure::new("pushed-s", None, "s"),
        ]
    }

    #[test]
    fn figures_are_compared_with_their_targets() {
        let f = figures();
        assert_eq!(f[0].met(), Some(true));
        assert_eq!(f[1].met(), Some(false));
        assert_eq!(f[2].met(), None);
        assert!(!all_met(&f));
        let unmeasured = Figure::new("x", None, "s").target(Op::AtMost, 1.0);
        assert_eq!(
            unmeasured.met(),
            Some(false),
            "a figure not measured misses its target"
        );
    }

    #[test]
    fn an_expect_file_replaces_the_targets() {
        let mut f = figures();
        apply_expect(
            &mut f,
            "# slower machine\nrss-mib <= 200\ncold-s < 2 # tighter\n",
            "e.txt",
        )
        .expect("valid expect file");
        assert_eq!(f[1].met(), Some(true));
        assert_eq!(f[0].met(), Some(false));
        assert!(all_met(&f[1..]));
        assert!(!verdict(&f, true), "with an expect file a miss fails the run");
        assert!(verdict(&figures(), false), "without one the figures are reported");
    }

    #[test]
    fn a_bad_expect_file_names_the_line_and_the_fix() {
        let mut f = figures();
        let err = apply_expect(&mut f, "cold-s 3\n", "e.txt").expect_err("no op");
        assert!(matches!(err, ExpectError::Syntax { line: 1, .. }), "{err}");
        let err = apply_expect(&mut f, "\ncold < 3\n", "e.txt").expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "e.txt line 2: no figure \"cold\" in this bench (its figures: cold-s, rss-mib, pushed-s)"
        );
        assert!(apply_expect(&mut f, "cold-s ~ 3", "e.txt").is_err());
        assert!(apply_expect(&mut f, "cold-s < three", "e.txt").is_err());
    }

    #[test]
    fn the_table_and_tsv_show_each_figure_beside_its_target() {
        let f = figures();
        assert_eq!(
            table("bench", &f),
            "bench\n\
             figure        value unit         target  met\n\
             cold-s         2.50 s               < 3  yes\n\
             rss-mib      160.00 MiB           < 150  NO\n\
             pushed-s          - s                 -  -\n"
        );
        assert_eq!(
            tsv(&f),
            "figure\tvalue\tunit\ttarget\tmet\ncold-s\t2.5\ts\t< 3\tyes\nrss-mib\t160\tMiB\t< 150\tno\npushed-s\t\ts\t\t\n"
        );
    }
}
