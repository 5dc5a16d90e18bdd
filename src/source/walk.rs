//! walk: lists the files of a catalog directory, honouring `.indexignore` files, the one
//! directory walker of the catalog stack.
//!
//! opm (`alpha/declcfg/load.go`) walks the whole tree under the catalog root and decodes every
//! regular file except `.indexignore` files and paths matched by one. We list the same files, in
//! sorted order. [`super::dir`] decodes them for `kubectl-olm` and for `olm-controller run
//! --builtin-catalog DIR`, and the crate's `build.rs` includes this very file to choose the files
//! of `catalog/` it embeds into `olm-controller`, so `.indexignore` means the same thing in every
//! path. That is also why this module needs nothing but `std` and `thiserror`.
//!
//! # `.indexignore` (the gitignore subset we support)
//!
//! A `.indexignore` file in any directory applies to the paths below that directory. Each line is
//! one pattern:
//!
//! - blank lines and lines starting with `#` are ignored; trailing spaces are trimmed;
//! - `!pattern` re-includes what an earlier pattern excluded (the last matching pattern wins, and
//!   patterns of deeper `.indexignore` files come after those of shallower ones); as in git, a file
//!   inside an excluded directory cannot be re-included;
//! - a trailing `/` makes the pattern match directories only;
//! - a pattern with no `/` (other than a trailing one) matches a file or directory name at any
//!   depth; a pattern with a `/` at the start or in the middle is anchored to the directory of the
//!   `.indexignore` file;
//! - `*` matches anything but `/`, `?` one character but `/`, `[abc]`, `[a-z]` and `[!a]` one
//!   character of (or not of) a set; `**` as a whole path segment matches any number of segments
//!   (`**/x`, `a/**/x`, `a/**`).
//!
//! Not supported: backslash escapes and trailing-space escapes.
//!
//! Symbolic links to files are read; symbolic links to directories are not followed (opm's
//! `fs.WalkDir` does not descend into them either).

use std::{
    fs,
    path::{Path, PathBuf},
};

/// Listing failures. Every variant names the path.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// A directory could not be listed.
    #[error("failed to list directory {path}")]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// An `.indexignore` file could not be read.
    #[error("failed to read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Result alias for this module.
pub type Result<T, E = WalkError> = std::result::Result<T, E>;

/// Name of the ignore files.
pub const INDEX_IGNORE: &str = ".indexignore";

/// One pattern of a `.indexignore` file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    /// Path of the directory holding the `.indexignore`, relative to the root ("" for the root).
    base: String,
    /// Pattern segments (split on `/`).
    segments: Vec<String>,
    /// Matches only at the base (pattern had a `/` before its end).
    anchored: bool,
    /// Matches directories only (trailing `/`).
    dir_only: bool,
    /// `!pattern`.
    negated: bool,
}

/// Every `.indexignore` pattern seen so far, in the order they apply.
#[derive(Debug, Clone, Default)]
pub struct IgnoreRules {
    patterns: Vec<Pattern>,
}

impl IgnoreRules {
    /// Adds the patterns of a `.indexignore` located in directory `base` (relative to the root,
    /// `""` for the root itself, `/`-separated).
    pub fn add(&mut self, base: &str, text: &str) {
        for line in text.lines() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negated, line) = match line.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, line),
            };
            let (dir_only, line) = match line.strip_suffix('/') {
                Some(rest) => (true, rest),
                None => (false, line),
            };
            let anchored = line.contains('/');
            let line = line.strip_prefix('/').unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            self.patterns.push(Pattern {
                base: base.to_owned(),
                segments: line.split('/').map(str::to_owned).collect(),
                anchored,
                dir_only,
                negated,
            });
        }
    }

    /// True when `path` (relative to the root, `/`-separated) is ignored.
    #[must_use]
    pub fn is_ignored(&self, path: &str, is_dir: bool) -> bool {
        let mut ignored = false;
        for p in &self.patterns {
            if p.dir_only && !is_dir {
                continue;
            }
            let rel = if p.base.is_empty() {
                Some(path)
            } else {
                path.strip_prefix(p.base.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
            };
            let Some(rel) = rel else { continue };
            let parts: Vec<&str> = rel.split('/').collect();
            let matched = if p.anchored {
                match_segments(&p.segments, &parts)
            } else {
                parts
                    .last()
                    .is_some_and(|name| p.segments.len() == 1 && glob(&p.segments[0], name))
            };
            if matched {
                ignored = !p.negated;
            }
        }
        ignored
    }
}

/// Matches pattern segments against path segments; `**` matches any number of segments.
fn match_segments(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| path.get(skip..).is_some_and(|tail| match_segments(rest, tail)))
        }
        Some((first, rest)) => match path.split_first() {
            Some((name, tail)) => glob(first, name) && match_segments(rest, tail),
            None => false,
        },
    }
}

/// Matches one path segment against a glob (`*`, `?`, `[...]`).
fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    glob_at(&p, &n)
}

fn glob_at(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).any(|i| n.get(i..).is_some_and(|rest| glob_at(&p[1..], rest))),
        Some('?') => !n.is_empty() && glob_at(&p[1..], &n[1..]),
        Some('[') => match (class_end(p), n.first()) {
            (Some(end), Some(c)) => class_matches(&p[1..end], *c) && glob_at(&p[end + 1..], &n[1..]),
            (Some(_), None) => false,
            // An unclosed '[' is a literal.
            (None, Some('[')) => glob_at(&p[1..], &n[1..]),
            (None, _) => false,
        },
        Some(c) => n.first() == Some(c) && glob_at(&p[1..], &n[1..]),
    }
}

/// Index of the `]` closing the class that starts at `p[0] == '['`.
fn class_end(p: &[char]) -> Option<usize> {
    let mut i = 1;
    if matches!(p.get(i), Some('!' | '^')) {
        i += 1;
    }
    if p.get(i) == Some(&']') {
        i += 1;
    }
    while i < p.len() {
        if p[i] == ']' {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn class_matches(class: &[char], c: char) -> bool {
    let (negated, class) = match class.first() {
        Some('!' | '^') => (true, &class[1..]),
        _ => (false, class),
    };
    let mut found = false;
    let mut i = 0;
    while i < class.len() {
        if i + 2 < class.len() && class[i + 1] == '-' {
            if class[i] <= c && c <= class[i + 2] {
                found = true;
            }
            i += 3;
        } else {
            if class[i] == c {
                found = true;
            }
            i += 1;
        }
    }
    found != negated
}

/// Lists the files to decode under `root`, sorted, relative to `root` and `/`-separated.
///
/// # Errors
/// Listing or reading errors naming the path.
pub fn list_files(root: &Path) -> Result<Vec<String>> {
    let mut rules = IgnoreRules::default();
    let mut out = Vec::new();
    walk(root, "", &mut rules, &mut out)?;
    Ok(out)
}

fn walk(root: &Path, rel: &str, rules: &mut IgnoreRules, out: &mut Vec<String>) -> Result<()> {
    let dir = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    let read_dir = fs::read_dir(&dir).map_err(|source| WalkError::ReadDir {
        path: dir.clone(),
        source,
    })?;
    let mut entries: Vec<(String, bool)> = Vec::new();
    for entry in read_dir {
        let entry = entry.map_err(|source| WalkError::ReadDir {
            path: dir.clone(),
            source,
        })?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            // Non-UTF-8 names cannot be matched or displayed faithfully; keep the lossy name so the
            // read fails with an error naming the file rather than skipping it silently.
            entries.push((entry.file_name().to_string_lossy().into_owned(), false));
            continue;
        };
        let file_type = entry.file_type().map_err(|source| WalkError::ReadDir {
            path: dir.clone(),
            source,
        })?;
        let is_dir = if file_type.is_symlink() {
            // Follow links to files; never descend into linked directories.
            match fs::metadata(entry.path()) {
                Ok(meta) if meta.is_dir() => continue,
                _ => false,
            }
        } else {
            file_type.is_dir()
        };
        entries.push((name, is_dir));
    }
    entries.sort();
    if entries
        .iter()
        .any(|(name, is_dir)| !is_dir && name == INDEX_IGNORE)
    {
        let path = dir.join(INDEX_IGNORE);
        let text = fs::read_to_string(&path).map_err(|source| WalkError::Read { path, source })?;
        rules.add(rel, &text);
    }
    for (name, is_dir) in entries {
        let child = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if rules.is_ignored(&child, is_dir) {
            continue;
        }
        if is_dir {
            walk(root, &child, rules, out)?;
        } else if name != INDEX_IGNORE {
            out.push(child);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(base: &str, text: &str) -> IgnoreRules {
        let mut r = IgnoreRules::default();
        r.add(base, text);
        r
    }

    #[test]
    fn unanchored_patterns_match_names_at_any_depth() {
        let r = rules("", "# docs\n*.md\n\nREADME*\n");
        assert!(r.is_ignored("a/b/notes.md", false));
        assert!(r.is_ignored("README.txt", false));
        assert!(!r.is_ignored("a/catalog.yaml", false));
    }

    #[test]
    fn anchored_patterns_match_from_the_ignore_file_directory() {
        let r = rules("pkg", "/drafts\nsub/*.json\n");
        assert!(r.is_ignored("pkg/drafts", true));
        assert!(!r.is_ignored("drafts", true), "outside the base directory");
        assert!(!r.is_ignored("pkg/x/drafts", true), "anchored at the base only");
        assert!(r.is_ignored("pkg/sub/a.json", false));
        assert!(!r.is_ignored("pkg/sub/deeper/a.json", false));
    }

    #[test]
    fn directory_patterns_skip_directories_but_not_files_of_that_name() {
        let r = rules("", "tmp/\n");
        assert!(r.is_ignored("a/tmp", true));
        assert!(!r.is_ignored("a/tmp", false));
    }

    #[test]
    fn negation_re_includes_and_the_last_match_wins() {
        let r = rules("", "*.yaml\n!keep.yaml\n");
        assert!(r.is_ignored("x.yaml", false));
        assert!(!r.is_ignored("d/keep.yaml", false));
    }

    #[test]
    fn double_star_and_character_classes_work() {
        let r = rules("", "a/**/z.json\n[0-9]*.txt\nfile?.[!y]aml\n");
        assert!(r.is_ignored("a/z.json", false));
        assert!(r.is_ignored("a/b/c/z.json", false));
        assert!(r.is_ignored("d/7up.txt", false));
        assert!(!r.is_ignored("d/up.txt", false));
        assert!(r.is_ignored("file1.xaml", false));
        assert!(!r.is_ignored("file1.yaml", false));
    }

    #[test]
    fn a_directory_is_walked_sorted_with_ignored_paths_and_ignore_files_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fs::create_dir_all(root.join("b/skip")).unwrap();
        fs::create_dir_all(root.join("a")).unwrap();
        fs::write(root.join(".indexignore"), "*.md\n").unwrap();
        fs::write(root.join("b/.indexignore"), "skip/\n").unwrap();
        fs::write(root.join("b/skip/x.yaml"), "x").unwrap();
        fs::write(root.join("b/c.json"), "{}").unwrap();
        fs::write(root.join("a/z.yaml"), "").unwrap();
        fs::write(root.join("a/README.md"), "").unwrap();
        fs::write(root.join(".hidden.yaml"), "").unwrap();
        let files = list_files(root).unwrap();
        assert_eq!(files, vec![".hidden.yaml", "a/z.yaml", "b/c.json"]);
    }
}
