//! How `kubectl-olm` prints results: the `-o table|wide|json|yaml|name` formats, following kubectl.
//!
//! Every verb computes plain data first and hands it to one of the printers here, which write to a
//! `&mut dyn Write` so the output can be snapshot-tested.
//!
//! - `table` (the default) and `wide`: UPPERCASE headers, columns aligned with three spaces between
//!   them (kubectl's tabwriter padding), the last column unpadded, empty cells as `<none>`. `wide` adds
//!   columns.
//! - `json` and `yaml`: a list verb always prints `{"apiVersion": "v1", "kind": "List", "items": [...]}`
//!   (what `kubectl get pods -o json` prints, even for one item or none, so scripts can rely on
//!   `.items`); a verb about one thing (`describe`, `upgrade-path`, `validate`) prints that object.
//! - `name`: one `kind/name` line per item (`package/redis-operator`), like `kubectl get -o name`.
//! - An empty list prints `No resources found` on stderr and exits 0 in table, wide and name formats.

use std::{fmt, io};

use serde::Serialize;

use crate::codec;

/// The `-o/--output` value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns with UPPERCASE headers.
    #[default]
    Table,
    /// The table with extra columns.
    Wide,
    /// JSON: one object, or a `List` of items.
    Json,
    /// YAML: one object, or a `List` of items.
    Yaml,
    /// `kind/name` lines.
    Name,
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutputFormat::Table => "table",
            OutputFormat::Wide => "wide",
            OutputFormat::Json => "json",
            OutputFormat::Yaml => "yaml",
            OutputFormat::Name => "name",
        })
    }
}

/// The two streams a verb writes to.
pub struct Streams<'a> {
    /// Results.
    pub out: &'a mut dyn io::Write,
    /// Notes and warnings (`No resources found`).
    pub err: &'a mut dyn io::Write,
}

/// `apiVersion` of the `List` wrapper; kubectl uses `v1` for its own lists.
pub const LIST_API_VERSION: &str = "v1";

/// Text of the note printed on stderr when a list is empty.
pub const NO_RESOURCES: &str = "No resources found";

/// Placeholder kubectl prints for an empty cell.
pub const NONE: &str = "<none>";

/// One row of a list verb's result.
pub trait Row: Serialize {
    /// The kind used by `-o name` (`package`, `channel`, `bundle`).
    const KIND: &'static str;
    /// The name used by `-o name`.
    fn name(&self) -> &str;
    /// Column headers, UPPERCASE; `wide` adds columns.
    fn headers(wide: bool) -> Vec<&'static str>;
    /// The cells of this row, one per header.
    fn cells(&self, wide: bool) -> Vec<String>;
}

#[derive(Serialize)]
struct List<'a, T: Serialize> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    items: &'a [T],
}

/// Prints a list of rows in `format`.
pub fn print_list<T: Row>(streams: &mut Streams<'_>, format: OutputFormat, items: &[T]) -> io::Result<()> {
    match format {
        OutputFormat::Json | OutputFormat::Yaml => {
            let list = List {
                api_version: LIST_API_VERSION,
                kind: "List",
                items,
            };
            print_object(streams.out, format, &list)
        }
        _ if items.is_empty() => writeln!(streams.err, "{NO_RESOURCES}"),
        OutputFormat::Name => {
            for item in items {
                writeln!(streams.out, "{}/{}", T::KIND, item.name())?;
            }
            Ok(())
        }
        OutputFormat::Table | OutputFormat::Wide => {
            let wide = format == OutputFormat::Wide;
            let rows: Vec<Vec<String>> = items.iter().map(|item| item.cells(wide)).collect();
            streams.out.write_all(table(&T::headers(wide), &rows).as_bytes())
        }
    }
}

/// Prints one object as JSON (pretty, with a trailing newline) or YAML; other formats fall back to YAML
/// because a single structured object has no table form of its own.
pub fn print_object<T: Serialize + ?Sized>(
    out: &mut dyn io::Write,
    format: OutputFormat,
    object: &T,
) -> io::Result<()> {
    let text = match format {
        OutputFormat::Json => codec::to_json_pretty(object).map(|mut s| {
            s.push('\n');
            s
        }),
        _ => codec::to_yaml_string(object),
    }
    .map_err(io::Error::other)?;
    out.write_all(text.as_bytes())
}

/// Lays out `rows` under `headers` the way kubectl does: every column as wide as its widest cell plus
/// three spaces, the last column unpadded, empty cells shown as `<none>`.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let cell = |s: &str| {
        if s.is_empty() {
            NONE.to_string()
        } else {
            s.replace(['\n', '\t'], " ")
        }
    };
    let mut grid: Vec<Vec<String>> = Vec::with_capacity(rows.len() + 1);
    grid.push(headers.iter().map(|h| h.to_string()).collect());
    grid.extend(rows.iter().map(|r| r.iter().map(|c| cell(c)).collect()));
    let columns = grid.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; columns];
    for row in &grid {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut text = String::new();
    for row in &grid {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            line.push_str(c);
            if i + 1 < row.len() {
                let pad = widths[i] - c.chars().count() + 3;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// Cuts `text` to its first line and at most `max` characters, ending with `...` when shortened.
pub fn truncate(text: &str, max: usize) -> String {
    let first = text.trim().lines().next().unwrap_or("").trim();
    if first.chars().count() <= max {
        if text.trim().lines().nth(1).is_some() && first.chars().count() + 3 <= max {
            return format!("{first}...");
        }
        return first.to_string();
    }
    let cut: String = first.chars().take(max.saturating_sub(3)).collect();
    format!("{}...", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Fruit {
        name: String,
        colour: String,
    }

    impl Row for Fruit {
        const KIND: &'static str = "fruit";
        fn name(&self) -> &str {
            &self.name
        }
        fn headers(wide: bool) -> Vec<&'static str> {
            if wide {
                vec!["NAME", "COLOUR", "LENGTH"]
            } else {
                vec!["NAME", "COLOUR"]
            }
        }
        fn cells(&self, wide: bool) -> Vec<String> {
            let mut cells = vec![self.name.clone(), self.colour.clone()];
            if wide {
                cells.push(self.name.len().to_string());
            }
            cells
        }
    }

    fn fruits() -> Vec<Fruit> {
        vec![
            Fruit {
                name: "apple".into(),
                colour: "red".into(),
            },
            Fruit {
                name: "fig".into(),
                colour: String::new(),
            },
        ]
    }

    fn render(format: OutputFormat, items: &[Fruit]) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut streams = Streams {
            out: &mut out,
            err: &mut err,
        };
        print_list(&mut streams, format, items).unwrap();
        (String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    }

    #[test]
    fn table_aligns_columns_with_three_spaces_and_marks_empty_cells() {
        let (out, err) = render(OutputFormat::Table, &fruits());
        assert_eq!(out, "NAME    COLOUR\napple   red\nfig     <none>\n");
        assert!(err.is_empty());
    }

    #[test]
    fn wide_adds_the_extra_columns() {
        let (out, _) = render(OutputFormat::Wide, &fruits());
        assert_eq!(
            out,
            "NAME    COLOUR   LENGTH\napple   red      5\nfig     <none>   3\n"
        );
    }

    #[test]
    fn name_prints_kind_slash_name_lines() {
        let (out, _) = render(OutputFormat::Name, &fruits());
        assert_eq!(out, "fruit/apple\nfruit/fig\n");
    }

    #[test]
    fn an_empty_table_says_no_resources_found_on_stderr_only() {
        let (out, err) = render(OutputFormat::Table, &[]);
        assert_eq!(out, "");
        assert_eq!(err, "No resources found\n");
    }

    #[test]
    fn truncate_keeps_the_first_line_and_marks_what_was_cut() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("a very long description", 10), "a very...");
        assert_eq!(truncate("first\nsecond", 20), "first...");
    }
}
