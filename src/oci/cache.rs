//! The on-disk cache of unpacked images, keyed by digest.
//!
//! Layout: `<cache>/sha256/<hex>/<kind>/` holds `manifest.json` (the bytes the digest names: the
//! image manifest, or the index of a multi-platform image), `image.json` (what was pulled, for
//! people and for [`lookup`]) and `root/` (the unpacked files). Entries are built in
//! `<cache>/tmp/` and renamed into place, so a half-written entry is never visible; an entry is
//! reused only when its `manifest.json` still hashes to `<hex>`, otherwise it is removed and the
//! image pulled again. The rule: the cache never serves content for a digest it cannot prove.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use super::{reference::sha256_hex, sha256_digest};

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A catalog image's catalog directory.
    Catalog,
    /// A bundle image's `manifests/` and `metadata/`.
    Bundle,
}

impl Kind {
    /// The entry directory's name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Catalog => "catalog",
            Kind::Bundle => "bundle",
        }
    }
}

/// `image.json`: what an entry holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// The reference it was first pulled as.
    pub image: String,
    /// The digest the entry is named by.
    pub digest: String,
    /// The digest of the platform manifest read (the same as `digest` unless an index).
    pub manifest_digest: String,
    /// The content directory inside `root/` (`configs`, or `""` for a bundle).
    pub content: String,
}

/// The entry directory of `digest`, `None` unless it is a lowercase sha256 digest.
#[must_use]
pub fn entry_dir(cache: &Path, digest: &str, kind: Kind) -> Option<PathBuf> {
    let hex = sha256_hex(digest)?;
    Some(cache.join("sha256").join(hex).join(kind.as_str()))
}

/// The content directory of a valid entry for `digest`, with its metadata. An entry that does not
/// verify is removed (best effort) and `None` returned.
#[must_use]
pub fn lookup(cache: &Path, digest: &str, kind: Kind) -> Option<(Meta, PathBuf)> {
    let dir = entry_dir(cache, digest, kind)?;
    if !dir.exists() {
        return None;
    }
    let valid = (|| {
        let manifest = fs::read(dir.join("manifest.json")).ok()?;
        if sha256_digest(&manifest) != digest {
            return None;
        }
        let meta: Meta = serde_json::from_slice(&fs::read(dir.join("image.json")).ok()?).ok()?;
        let content = dir.join("root").join(&meta.content);
        (meta.digest == digest && content.is_dir()).then_some((meta, content))
    })();
    if valid.is_none() {
        tracing::warn!(entry = %dir.display(), "cache entry does not verify against its digest; pulling again");
        let _ = fs::remove_dir_all(&dir);
    }
    valid
}

/// A fresh working directory under `<cache>/tmp/`, removed when dropped.
///
/// # Errors
/// The I/O error creating it.
pub fn workspace(cache: &Path) -> io::Result<tempfile::TempDir> {
    let tmp = cache.join("tmp");
    fs::create_dir_all(&tmp)?;
    tempfile::Builder::new().prefix("pull-").tempdir_in(tmp)
}

/// Writes `manifest.json` and `image.json` into `entry` (whose `root/` is filled) and moves it to
/// its place. When another pull put the same entry there first, that one is kept.
///
/// # Errors
/// The I/O error.
pub fn commit(cache: &Path, entry: &Path, manifest: &[u8], meta: &Meta, kind: Kind) -> io::Result<PathBuf> {
    let dest = entry_dir(cache, &meta.digest, kind)
        .ok_or_else(|| io::Error::other(format!("not a sha256 digest: {}", meta.digest)))?;
    fs::write(entry.join("manifest.json"), manifest)?;
    let json = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
    fs::write(entry.join("image.json"), json)?;
    if let Some(parent) = dest.parent() {
        fs::create_dir_all(parent)?;
    }
    match fs::rename(entry, &dest) {
        Ok(()) => {}
        Err(_) if lookup(cache, &meta.digest, kind).is_some() => {}
        Err(err) => return Err(err),
    }
    Ok(dest.join("root").join(&meta.content))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(manifest: &[u8]) -> Meta {
        Meta {
            image: "r/c:1".into(),
            digest: sha256_digest(manifest),
            manifest_digest: sha256_digest(manifest),
            content: "configs".into(),
        }
    }

    #[test]
    fn a_committed_entry_is_found_by_digest_and_a_tampered_one_is_dropped() {
        let cache = tempfile::tempdir().unwrap();
        let work = workspace(cache.path()).unwrap();
        let entry = work.path().join("entry");
        fs::create_dir_all(entry.join("root/configs")).unwrap();
        fs::write(entry.join("root/configs/c.json"), "{}").unwrap();
        let manifest = br#"{"schemaVersion":2}"#;
        let m = meta(manifest);
        let content = commit(cache.path(), &entry, manifest, &m, Kind::Catalog).unwrap();
        assert!(content.join("c.json").is_file());
        let (found, dir) = lookup(cache.path(), &m.digest, Kind::Catalog).unwrap();
        assert_eq!(found, m);
        assert_eq!(dir, content);
        assert!(lookup(cache.path(), &m.digest, Kind::Bundle).is_none());

        let stored = entry_dir(cache.path(), &m.digest, Kind::Catalog).unwrap();
        fs::write(stored.join("manifest.json"), b"tampered").unwrap();
        assert!(lookup(cache.path(), &m.digest, Kind::Catalog).is_none());
        assert!(!stored.exists());
    }

    #[test]
    fn only_sha256_digests_name_entries() {
        assert!(entry_dir(Path::new("/c"), "sha256:../../x", Kind::Catalog).is_none());
        let d = sha256_digest(b"x");
        let dir = entry_dir(Path::new("/c"), &d, Kind::Bundle).unwrap();
        assert!(dir.ends_with(format!("sha256/{}/bundle", &d[7..])));
    }
}
