//! catalog: what `--catalog` names (a file-based catalog directory, an archive of one, or a
//! catalog image reference), and the archive unpacked where a bench needs a directory.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// A `--catalog` value.
#[derive(Clone, Debug, PartialEq)]
pub enum Catalog {
    /// A file-based catalog directory.
    Dir(PathBuf),
    /// A `.tar`, `.tar.gz`/`.tgz` or `.tar.zst` archive holding one.
    Archive(PathBuf),
    /// A catalog image reference (`host[:port]/repo[:tag|@digest]`).
    Image(String),
}

/// `--catalog` could not be understood.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CatalogError {
    #[error(
        "--catalog {0:?}: no such directory or archive, and not an image reference (host/repo[:tag]); pass a catalog directory, a .tar/.tar.gz/.tar.zst archive or an image"
    )]
    Unknown(String),
}

const ARCHIVE_SUFFIXES: [&str; 4] = [".tar", ".tar.gz", ".tgz", ".tar.zst"];

impl Catalog {
    /// Reads `--catalog`: an existing directory, an existing archive, else an image reference
    /// (a first path element that is a host: it has a `.` or `:`, or is `localhost`).
    pub fn parse(text: &str) -> Result<Self, CatalogError> {
        let path = Path::new(text);
        if path.is_dir() {
            return Ok(Self::Dir(path.to_owned()));
        }
        if path.is_file() && ARCHIVE_SUFFIXES.iter().any(|s| text.ends_with(s)) {
            return Ok(Self::Archive(path.to_owned()));
        }
        if let Some((host, rest)) = text.split_once('/')
            && !rest.is_empty()
            && (host.contains('.') || host.contains(':') || host == "localhost")
            && !path.exists()
        {
            return Ok(Self::Image(text.to_owned()));
        }
        Err(CatalogError::Unknown(text.to_owned()))
    }

    /// A short name for reports (the directory's or archive's file name, or the image).
    pub fn label(&self) -> String {
        match self {
            Self::Dir(p) | Self::Archive(p) => {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                ARCHIVE_SUFFIXES
                    .iter()
                    .find_map(|s| name.strip_suffix(s))
                    .map_or(name.clone(), str::to_owned)
            }
            Self::Image(image) => image.clone(),
        }
    }
}

/// The shared corpus archive `name` (../shared/corpus or /work/shared/corpus).
pub fn corpus_archive(repo: &Path, name: &str) -> anyhow::Result<PathBuf> {
    for dir in [
        repo.join("../shared/corpus"),
        PathBuf::from("/work/shared/corpus"),
    ] {
        let archive = dir.join(name);
        if archive.is_file() {
            return Ok(archive);
        }
    }
    bail!("{name} not found in ../shared/corpus; pass --catalog")
}

/// The catalog as a directory: a directory as it is, an archive unpacked under `work` (its one
/// top-level directory, or `work` itself). An image has no directory here.
pub fn as_dir(catalog: &Catalog, work: &Path) -> anyhow::Result<PathBuf> {
    match catalog {
        Catalog::Dir(dir) => Ok(dir.clone()),
        Catalog::Archive(archive) => {
            std::fs::create_dir_all(work)?;
            let mut tar = std::process::Command::new("tar");
            let name = archive.to_string_lossy();
            if name.ends_with(".zst") {
                tar.arg("--zstd");
            } else if name.ends_with("gz") {
                tar.arg("-z");
            }
            let status = tar
                .arg("-xf")
                .arg(archive)
                .arg("-C")
                .arg(work)
                .status()
                .context("failed to run tar")?;
            if !status.success() {
                bail!("tar could not unpack {}", archive.display());
            }
            let entries: Vec<PathBuf> = std::fs::read_dir(work)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            match entries.as_slice() {
                [one] if one.is_dir() => Ok(one.clone()),
                _ => Ok(work.to_owned()),
            }
        }
        Catalog::Image(image) => bail!("--catalog {image}: this bench needs a catalog directory or archive"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_is_a_directory_an_archive_or_an_image() {
        let dir = std::env::temp_dir().join(format!("xtask-catalog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let archive = dir.join("c.tar.zst");
        std::fs::write(&archive, b"").expect("write");
        let text = |p: &Path| p.to_string_lossy().into_owned();
        assert_eq!(Catalog::parse(&text(&dir)), Ok(Catalog::Dir(dir.clone())));
        assert_eq!(
            Catalog::parse(&text(&archive)),
            Ok(Catalog::Archive(archive.clone()))
        );
        assert_eq!(Catalog::Archive(archive.clone()).label(), "c");
        assert_eq!(
            Catalog::parse("127.0.0.1:5000/bench/large-fbc:v1"),
            Ok(Catalog::Image("127.0.0.1:5000/bench/large-fbc:v1".into()))
        );
        assert_eq!(
            Catalog::parse("quay.io/org/catalog@sha256:00"),
            Ok(Catalog::Image("quay.io/org/catalog@sha256:00".into()))
        );
        assert_eq!(
            Catalog::parse("missing-dir"),
            Err(CatalogError::Unknown("missing-dir".into()))
        );
        let not_archive = dir.join("notes.txt");
        std::fs::write(&not_archive, b"").expect("write");
        assert!(
            Catalog::parse(&text(&not_archive)).is_err(),
            "a file that is no archive"
        );
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
