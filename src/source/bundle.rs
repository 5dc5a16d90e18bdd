//! bundle: reads a registry+v1 bundle directory into a [`FileTree`] for [`crate::bundle`].
//!
//! opm reads `manifests/` and `metadata/` one level deep, in name order, and nothing else of the
//! directory; so do we. `.indexignore` is a catalog-directory rule and does not apply here (opm
//! does not apply it to bundle directories either). Symbolic links to files are read.

use std::{fs, path::Path};

use crate::bundle::FileTree;

/// Reads `manifests/` and `metadata/` of a bundle directory (one level deep, as opm does) into a
/// [`FileTree`].
///
/// # Errors
/// The I/O error, with `NotFound` when the directory or its `manifests/` is missing.
pub fn read_tree(dir: &Path) -> std::io::Result<FileTree> {
    if !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such directory",
        ));
    }
    let mut tree = FileTree::new();
    for sub in ["manifests", "metadata"] {
        let path = dir.join(sub);
        if !path.is_dir() {
            if sub == "manifests" {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "manifests/ directory missing",
                ));
            }
            continue;
        }
        let mut entries: Vec<_> = fs::read_dir(&path)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            if entry.file_type()?.is_file() || (entry.file_type()?.is_symlink() && entry.path().is_file()) {
                let name = entry.file_name().to_string_lossy().into_owned();
                tree.insert(format!("{sub}/{name}"), fs::read(entry.path())?);
            }
        }
    }
    Ok(tree)
}
