//! Unpacking image layers into a directory: only the files asked for, and nothing that could
//! write outside it.
//!
//! The rules, each a refusal with its own [`UnpackError`] variant naming the layer, the entry and
//! the fix:
//! - **Paths.** Every entry path of every layer is checked: not UTF-8, absolute (`/etc/passwd`),
//!   or climbing (`..`) is refused, whether or not the entry is one we keep. `./` and empty
//!   components are dropped, as tar writers add them.
//! - **Selection.** Only entries under the selected directories (`configs` for a catalog image,
//!   `manifests` and `metadata` for a bundle) are kept; everything else is read past. A selected
//!   directory (or one above it) that is itself a link is refused: we would have to follow it.
//! - **Layers in order, with OCI whiteouts.** `.wh.NAME` deletes `NAME` from the layers below,
//!   `.wh..wh..opq` empties its directory of what the layers below put there; both apply before
//!   the layer's own entries (the image-spec rule), and an entry replacing a directory with a
//!   file hides the directory's children.
//! - **Links never leave.** Nothing is ever written as a link: a symbolic or hard link inside the
//!   selection is resolved inside the image's own tree (absolute targets from the image root, as
//!   a container sees them) and its file is copied. A target above the image root, outside the
//!   selection, missing, or a directory is refused.
//! - **Caps.** [`Limits`] bounds the bytes unpacked from all layers together (a gzip bomb stops at
//!   the cap, counted on the decompressed stream, skipped entries included), one file's size, the
//!   number of entries, and (checked while downloading, by the caller) one blob's size.
//!
//! Contents are staged as plain files while the layers stream (memory stays flat whatever the
//! image size), then hard-linked (or copied) into the output once every layer is applied.

use std::{
    cell::Cell,
    collections::BTreeMap,
    fs,
    io::{self, Read},
    path::{Path, PathBuf},
    rc::Rc,
};

/// Size and count caps for one image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes unpacked from all layers together (decompressed tar streams, skipped entries included).
    pub max_total_size: u64,
    /// Bytes of one file we keep.
    pub max_file_size: u64,
    /// Entries in all layers together.
    pub max_entries: u64,
    /// Bytes of one blob as downloaded (compressed).
    pub max_blob_size: u64,
}

impl Default for Limits {
    /// 2 GiB unpacked, 256 MiB per file, 500,000 entries, 1 GiB per blob: ten times the largest
    /// public catalog image (`large-fbc`: 205 MiB of FBC, 7.4 MB largest file) on an opm base.
    fn default() -> Self {
        Self {
            max_total_size: 2 << 30,
            max_file_size: 256 << 20,
            max_entries: 500_000,
            max_blob_size: 1 << 30,
        }
    }
}

/// How a layer is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// A plain tar stream.
    None,
    /// tar+gzip.
    Gzip,
    /// tar+zstd.
    Zstd,
}

/// The compression of a layer media type we can unpack, `None` for any other media type.
#[must_use]
pub fn compression_for(media_type: &str) -> Option<Compression> {
    match media_type {
        "application/vnd.oci.image.layer.v1.tar"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar"
        | "application/vnd.docker.image.rootfs.diff.tar" => Some(Compression::None),
        "application/vnd.oci.image.layer.v1.tar+gzip"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
        | "application/vnd.docker.image.rootfs.diff.tar.gzip"
        | "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" => Some(Compression::Gzip),
        "application/vnd.oci.image.layer.v1.tar+zstd"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd" => Some(Compression::Zstd),
        _ => None,
    }
}

/// Why a layer could not be unpacked. Every variant names the layer (its digest) and the entry.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    /// An entry's path is not UTF-8.
    #[error(
        "layer {layer}: entry {entry:?} has a path that is not UTF-8; rebuild the image with UTF-8 file names"
    )]
    NotUtf8 {
        /// The layer digest.
        layer: String,
        /// The path, lossily decoded.
        entry: String,
    },
    /// An entry's path is absolute.
    #[error(
        "layer {layer}: entry {entry:?} has an absolute path, which could write outside the unpack \
         directory; rebuild the image with relative paths (as docker, buildah and opm write them)"
    )]
    AbsolutePath {
        /// The layer digest.
        layer: String,
        /// The path.
        entry: String,
    },
    /// An entry's path climbs with `..`.
    #[error(
        "layer {layer}: entry {entry:?} contains `..`, which could write outside the unpack directory; \
         rebuild the image without `..` in paths"
    )]
    ParentDir {
        /// The layer digest.
        layer: String,
        /// The path.
        entry: String,
    },
    /// A link's target climbs above the image root.
    #[error(
        "layer {layer}: entry {entry:?} is a link to {target:?}, which leaves the image root; \
         links must stay inside the image"
    )]
    LinkLeavesRoot {
        /// The layer digest.
        layer: String,
        /// The link.
        entry: String,
        /// Its target, as written.
        target: String,
    },
    /// A link's target is outside the directories we unpack.
    #[error(
        "layer {layer}: entry {entry:?} is a link to {target:?}, outside {selection}; links in {selection} \
         may only point inside it: replace the link with the file"
    )]
    LinkOutsideSelection {
        /// The layer digest.
        layer: String,
        /// The link.
        entry: String,
        /// Its target, as written.
        target: String,
        /// The directories unpacked.
        selection: String,
    },
    /// A link's target does not exist, or is a directory.
    #[error(
        "layer {layer}: entry {entry:?} is a link to {target:?}, which {problem}; replace the link with the file"
    )]
    LinkTarget {
        /// The layer digest.
        layer: String,
        /// The link.
        entry: String,
        /// Its target, as written.
        target: String,
        /// `does not exist`, `is a directory`, `is a chain of more than 40 links`.
        problem: &'static str,
    },
    /// A selected directory (or one above it) is a link.
    #[error(
        "layer {layer}: entry {entry:?} is a link, but {selection} must be a real directory; rebuild the \
         image with the files in {selection}"
    )]
    SelectionIsLink {
        /// The layer digest.
        layer: String,
        /// The link.
        entry: String,
        /// The directories unpacked.
        selection: String,
    },
    /// An entry of a type we do not unpack (device, fifo, ...).
    #[error(
        "layer {layer}: entry {entry:?} is a {kind}, which a catalog or bundle never contains; \
         remove it from the image"
    )]
    UnsupportedEntry {
        /// The layer digest.
        layer: String,
        /// The entry.
        entry: String,
        /// The tar entry type.
        kind: String,
    },
    /// More entries than [`Limits::max_entries`].
    #[error(
        "layer {layer}: more than {limit} entries in the image (at {entry:?}); the image is refused as too \
         large"
    )]
    TooManyEntries {
        /// The layer digest.
        layer: String,
        /// The entry where the limit was crossed.
        entry: String,
        /// The limit.
        limit: u64,
    },
    /// A kept file is larger than [`Limits::max_file_size`].
    #[error(
        "layer {layer}: entry {entry:?} is {size} bytes, more than the {limit}-byte limit for one file; \
         split the file, or raise the limit (--max-file-size) if it is legitimate"
    )]
    FileTooLarge {
        /// The layer digest.
        layer: String,
        /// The entry.
        entry: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The layers unpack to more than [`Limits::max_total_size`] (a decompression bomb, or an
    /// image far larger than a catalog).
    #[error(
        "layer {layer}: the image unpacks to more than {limit} bytes (stopped at {entry:?}); it is refused \
         as a decompression bomb or an oversized image (raise --max-unpack-size if it is legitimate)"
    )]
    TotalTooLarge {
        /// The layer digest.
        layer: String,
        /// The entry being read when the limit was crossed (`<archive>` between entries).
        entry: String,
        /// The limit.
        limit: u64,
    },
    /// The layer is not a readable (compressed) tar stream.
    #[error(
        "layer {layer}: failed to read the layer as {compression} (at {entry:?}): {source}; the image is corrupt"
    )]
    Read {
        /// The layer digest.
        layer: String,
        /// The entry being read (`<archive>` between entries).
        entry: String,
        /// The compression expected.
        compression: &'static str,
        /// The read error.
        #[source]
        source: io::Error,
    },
    /// Writing the unpacked files failed.
    #[error("failed to write {path}: {source}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

/// What an entry path means once whiteouts are recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryPath {
    /// The root itself (`./`).
    Root,
    /// An ordinary path, `/`-joined components.
    Path(String),
    /// `.wh.NAME`: delete this path from the layers below.
    Whiteout(String),
    /// `DIR/.wh..wh..opq`: delete the children of this directory (`""` for the root) from below.
    Opaque(String),
}

/// Why a path was refused (the caller adds the layer and entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathProblem {
    /// Not UTF-8.
    NotUtf8,
    /// Starts with `/`.
    Absolute,
    /// Contains `..`.
    ParentDir,
}

const WHITEOUT: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";

/// Normalizes a tar entry path and recognises whiteouts.
///
/// # Errors
/// The [`PathProblem`] when the path is not UTF-8, absolute or climbing.
pub fn parse_entry_path(raw: &[u8]) -> Result<EntryPath, PathProblem> {
    let text = std::str::from_utf8(raw).map_err(|_| PathProblem::NotUtf8)?;
    if text.starts_with('/') {
        return Err(PathProblem::Absolute);
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(PathProblem::ParentDir),
            p => parts.push(p),
        }
    }
    let Some((last, dir)) = parts.split_last() else {
        return Ok(EntryPath::Root);
    };
    if *last == OPAQUE {
        return Ok(EntryPath::Opaque(dir.join("/")));
    }
    if let Some(name) = last.strip_prefix(WHITEOUT) {
        let mut path = dir.to_vec();
        path.push(name);
        return Ok(EntryPath::Whiteout(path.join("/")));
    }
    Ok(EntryPath::Path(parts.join("/")))
}

/// Resolves a symbolic link's target to a root-relative path: absolute targets from the image
/// root, relative ones from the link's directory. `None` when it climbs above the root.
#[must_use]
pub fn resolve_link(link: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        let mut dir: Vec<&str> = link.split('/').collect();
        dir.pop();
        dir
    };
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// Whether `path` is `dir` or below it (`dir` `""` is the root).
#[must_use]
pub fn is_within(path: &str, dir: &str) -> bool {
    dir.is_empty() || path == dir || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

/// The target a link entry was written with (lossy UTF-8, for checks and messages).
fn link_text<R: io::Read>(entry: &tar::Entry<'_, R>) -> String {
    entry
        .link_name_bytes()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

#[derive(Debug, Clone)]
enum Node {
    Dir,
    File(PathBuf),
    Symlink {
        target: String,
        written: String,
        layer: String,
    },
}

/// What one layer does, collected before it is applied.
#[derive(Default)]
struct LayerDelta {
    deletions: Vec<String>,
    opaques: Vec<String>,
    additions: Vec<(String, Node)>,
}

/// Unpacks layers one after the other, then writes the selected files.
pub struct Unpacker {
    selection: Vec<String>,
    limits: Limits,
    staging: PathBuf,
    tree: BTreeMap<String, Node>,
    entries: u64,
    unpacked: Rc<Cell<u64>>,
    staged: u64,
}

struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
    limit: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.count.get() > self.limit {
            return Err(io::Error::other("unpack size limit exceeded"));
        }
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get().saturating_add(n as u64));
        if self.count.get() > self.limit {
            return Err(io::Error::other("unpack size limit exceeded"));
        }
        Ok(n)
    }
}

impl Unpacker {
    /// An unpacker keeping the entries below `selection` (root-relative directories without
    /// slashes at either end), staging file contents in `staging` (an empty directory on the
    /// file system the output will be on).
    #[must_use]
    pub fn new(selection: Vec<String>, limits: Limits, staging: PathBuf) -> Self {
        Self {
            selection,
            limits,
            staging,
            tree: BTreeMap::new(),
            entries: 0,
            unpacked: Rc::new(Cell::new(0)),
            staged: 0,
        }
    }

    fn selection_text(&self) -> String {
        self.selection
            .iter()
            .map(|s| format!("/{s}"))
            .collect::<Vec<_>>()
            .join(" and ")
    }

    fn selected(&self, path: &str) -> bool {
        self.selection.iter().any(|s| is_within(path, s))
    }

    fn above_selection(&self, path: &str) -> bool {
        self.selection.iter().any(|s| is_within(s, path))
    }

    /// Applies one layer (its blob already verified) on top of the layers before it.
    ///
    /// # Errors
    /// The [`UnpackError`] refusal, or a read or write failure.
    pub fn apply_layer(
        &mut self,
        layer: &str,
        blob: impl Read,
        compression: Compression,
    ) -> Result<(), UnpackError> {
        let (name, reader): (&'static str, Box<dyn Read + '_>) = match compression {
            Compression::None => ("tar", Box::new(blob)),
            Compression::Gzip => ("tar+gzip", Box::new(flate2::read::MultiGzDecoder::new(blob))),
            Compression::Zstd => (
                "tar+zstd",
                Box::new(
                    ruzstd::decoding::StreamingDecoder::new(blob).map_err(|e| UnpackError::Read {
                        layer: layer.to_owned(),
                        entry: "<archive>".to_owned(),
                        compression: "tar+zstd",
                        source: io::Error::other(e.to_string()),
                    })?,
                ),
            ),
        };
        let counting = Counting {
            inner: io::BufReader::with_capacity(256 << 10, reader),
            count: Rc::clone(&self.unpacked),
            limit: self.limits.max_total_size,
        };
        let mut archive = tar::Archive::new(counting);
        let mut delta = LayerDelta::default();
        let mut current = "<archive>".to_owned();
        let entries = archive
            .entries()
            .map_err(|source| self.read_error(layer, &current, name, source))?;
        for entry in entries {
            let mut entry = entry.map_err(|source| self.read_error(layer, &current, name, source))?;
            let raw = entry.path_bytes().into_owned();
            current = String::from_utf8_lossy(&raw).into_owned();
            self.entries += 1;
            if self.entries > self.limits.max_entries {
                return Err(UnpackError::TooManyEntries {
                    layer: layer.to_owned(),
                    entry: current,
                    limit: self.limits.max_entries,
                });
            }
            let path = match parse_entry_path(&raw) {
                Ok(EntryPath::Root) => continue,
                Ok(EntryPath::Whiteout(p)) => {
                    delta.deletions.push(p);
                    continue;
                }
                Ok(EntryPath::Opaque(p)) => {
                    delta.opaques.push(p);
                    continue;
                }
                Ok(EntryPath::Path(p)) => p,
                Err(problem) => {
                    let (layer, entry) = (layer.to_owned(), current);
                    return Err(match problem {
                        PathProblem::NotUtf8 => UnpackError::NotUtf8 { layer, entry },
                        PathProblem::Absolute => UnpackError::AbsolutePath { layer, entry },
                        PathProblem::ParentDir => UnpackError::ParentDir { layer, entry },
                    });
                }
            };
            let kind = entry.header().entry_type();
            let is_link = kind.is_symlink() || kind.is_hard_link();
            if !self.selected(&path) {
                if is_link && self.above_selection(&path) {
                    return Err(UnpackError::SelectionIsLink {
                        layer: layer.to_owned(),
                        entry: current,
                        selection: self.selection_text(),
                    });
                }
                continue;
            }
            let node = if kind.is_dir() {
                Node::Dir
            } else if kind.is_file() || kind == tar::EntryType::Continuous {
                let size = entry.header().size().unwrap_or(u64::MAX);
                if size > self.limits.max_file_size {
                    return Err(UnpackError::FileTooLarge {
                        layer: layer.to_owned(),
                        entry: current,
                        size,
                        limit: self.limits.max_file_size,
                    });
                }
                self.staged += 1;
                let staged = self.staging.join(self.staged.to_string());
                let mut out = fs::File::create(&staged).map_err(|source| UnpackError::Write {
                    path: staged.clone(),
                    source,
                })?;
                if let Err(source) = io::copy(&mut entry, &mut out) {
                    return Err(self.read_error(layer, &current, name, source));
                }
                Node::File(staged)
            } else if self.selection.contains(&path) && is_link {
                return Err(UnpackError::SelectionIsLink {
                    layer: layer.to_owned(),
                    entry: current,
                    selection: self.selection_text(),
                });
            } else if kind.is_symlink() {
                let written = link_text(&entry);
                let Some(target) = resolve_link(&path, &written) else {
                    return Err(UnpackError::LinkLeavesRoot {
                        layer: layer.to_owned(),
                        entry: current,
                        target: written,
                    });
                };
                Node::Symlink {
                    target,
                    written,
                    layer: layer.to_owned(),
                }
            } else if kind.is_hard_link() {
                let written = link_text(&entry);
                let target = match parse_entry_path(written.as_bytes()) {
                    Ok(EntryPath::Path(p)) => p,
                    _ => {
                        return Err(UnpackError::LinkLeavesRoot {
                            layer: layer.to_owned(),
                            entry: current,
                            target: written,
                        });
                    }
                };
                // A hard link names an earlier entry of the archive: this layer's, else below.
                let found = delta
                    .additions
                    .iter()
                    .rev()
                    .find(|(p, _)| *p == target)
                    .map(|(_, n)| n.clone())
                    .or_else(|| self.tree.get(&target).cloned());
                match found {
                    Some(Node::File(staged)) => Node::File(staged),
                    _ if !self.selected(&target) => {
                        return Err(UnpackError::LinkOutsideSelection {
                            layer: layer.to_owned(),
                            entry: current,
                            target: written,
                            selection: self.selection_text(),
                        });
                    }
                    _ => {
                        return Err(UnpackError::LinkTarget {
                            layer: layer.to_owned(),
                            entry: current,
                            target: written,
                            problem: "is not a regular file earlier in the image",
                        });
                    }
                }
            } else {
                return Err(UnpackError::UnsupportedEntry {
                    layer: layer.to_owned(),
                    entry: current,
                    kind: format!("{kind:?}").to_lowercase(),
                });
            };
            delta.additions.push((path, node));
        }
        self.apply(delta);
        Ok(())
    }

    fn read_error(
        &self,
        layer: &str,
        entry: &str,
        compression: &'static str,
        source: io::Error,
    ) -> UnpackError {
        if self.unpacked.get() > self.limits.max_total_size {
            UnpackError::TotalTooLarge {
                layer: layer.to_owned(),
                entry: entry.to_owned(),
                limit: self.limits.max_total_size,
            }
        } else {
            UnpackError::Read {
                layer: layer.to_owned(),
                entry: entry.to_owned(),
                compression,
                source,
            }
        }
    }

    fn remove_below(&mut self, dir: &str, keep_dir: bool) {
        let doomed: Vec<String> = self
            .tree
            .keys()
            .filter(|p| is_within(p, dir) && !(keep_dir && p.as_str() == dir))
            .cloned()
            .collect();
        for p in doomed {
            self.tree.remove(&p);
        }
    }

    fn apply(&mut self, delta: LayerDelta) {
        // Whiteouts and opaque markers hide what the layers below have; then the layer's own
        // entries land, a non-directory hiding whatever was below a directory of the same path.
        for path in &delta.deletions {
            self.remove_below(path, false);
        }
        for dir in &delta.opaques {
            self.remove_below(dir, true);
        }
        for (path, node) in delta.additions {
            if !matches!(node, Node::Dir) {
                self.remove_below(&path, false);
            }
            self.tree.insert(path, node);
        }
    }

    /// Whether anything was unpacked below `dir` (or `dir` itself exists).
    #[must_use]
    pub fn has(&self, dir: &str) -> bool {
        self.tree.keys().any(|p| is_within(p, dir))
    }

    /// Writes the selected files below `out` (which must exist), links resolved to copies.
    /// Returns the number of files and their total size.
    ///
    /// # Errors
    /// A link refusal, or a write failure.
    pub fn finish(self, out: &Path) -> Result<(usize, u64), UnpackError> {
        let mut files = 0;
        let mut bytes = 0;
        for (path, node) in &self.tree {
            let dest = out.join(path);
            let source = match node {
                Node::Dir => {
                    fs::create_dir_all(&dest).map_err(|source| UnpackError::Write {
                        path: dest.clone(),
                        source,
                    })?;
                    continue;
                }
                Node::File(staged) => staged,
                Node::Symlink {
                    target,
                    written,
                    layer,
                } => self.follow(path, target, written, layer)?,
            };
            if let Some(parent) = dest.parent() {
                fs::create_dir_all(parent).map_err(|source| UnpackError::Write {
                    path: parent.to_owned(),
                    source,
                })?;
            }
            if fs::hard_link(source, &dest).is_err() {
                fs::copy(source, &dest).map_err(|source| UnpackError::Write {
                    path: dest.clone(),
                    source,
                })?;
            }
            files += 1;
            bytes += fs::metadata(&dest).map(|m| m.len()).unwrap_or(0);
        }
        Ok((files, bytes))
    }

    /// The staged file a symbolic link ends at, following chains inside the tree.
    fn follow(&self, path: &str, target: &str, written: &str, layer: &str) -> Result<&PathBuf, UnpackError> {
        let refuse = |problem| UnpackError::LinkTarget {
            layer: layer.to_owned(),
            entry: path.to_owned(),
            target: written.to_owned(),
            problem,
        };
        let mut next = target;
        for _ in 0..40 {
            if !self.selected(next) {
                return Err(UnpackError::LinkOutsideSelection {
                    layer: layer.to_owned(),
                    entry: path.to_owned(),
                    target: written.to_owned(),
                    selection: self.selection_text(),
                });
            }
            match self.tree.get(next).ok_or_else(|| refuse("does not exist"))? {
                Node::File(staged) => return Ok(staged),
                Node::Dir => return Err(refuse("is a directory")),
                Node::Symlink { target, .. } => next = target,
            }
        }
        Err(refuse("is a chain of more than 40 links"))
    }
}

#[cfg(test)]
mod tests;
