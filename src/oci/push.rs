//! Pushing catalog and bundle images without a container engine.
//!
//! A catalog image is what `opm generate dockerfile` and a build make of a catalog directory,
//! minus the opm base layers: one layer holding the directory's files under `/configs`, and the
//! config label `operators.operatorframework.io.index.configs.v1=/configs`. A bundle image is one
//! layer with `manifests/` and `metadata/`, labelled with every annotation of
//! `metadata/annotations.yaml`, as `operator-sdk bundle` builds it. Both are OCI images for
//! `linux/amd64`. Layers are deterministic (sorted entries, zero times and owners, fixed modes),
//! so pushing the same directory twice gives the same digest. What is pushed is checked first: a
//! catalog must decode and hold a package; a bundle must parse as registry+v1.

use std::{
    collections::BTreeMap,
    fs,
    path::{Path, PathBuf},
};

use oci_client::{
    RegistryOperation,
    manifest::{IMAGE_CONFIG_MEDIA_TYPE, IMAGE_LAYER_GZIP_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE},
};
use serde_json::json;

use super::{CONFIGS_LABEL, DEFAULT_CONFIGS_DIR, Error, ImageRef, Registry, Result, classify, sha256_digest};

/// A layer to push: its media type and bytes.
#[derive(Debug, Clone)]
pub struct Blob {
    /// The media type of the layer.
    pub media_type: String,
    /// The bytes (compressed as the media type says).
    pub data: Vec<u8>,
}

/// A layer built from files: the gzip blob and the digest of the uncompressed tar (the diff id).
#[derive(Debug, Clone)]
pub struct Layer {
    /// The tar+gzip blob.
    pub blob: Blob,
    /// `sha256:` of the uncompressed tar.
    pub diff_id: String,
}

/// Where a layer file's contents come from.
#[derive(Debug, Clone)]
pub enum Contents {
    /// Bytes in memory.
    Bytes(Vec<u8>),
    /// A file read while the layer is written (so a large catalog is never held whole).
    File(PathBuf),
}

/// Hashes what passes through it (the uncompressed tar, for the diff id).
struct Hashing<W> {
    inner: W,
    hasher: sha2::Sha256,
}

impl<W: std::io::Write> std::io::Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        sha2::Digest::update(&mut self.hasher, &buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Builds a deterministic tar+gzip layer from `path → contents`; every parent directory gets an
/// entry of its own. The tar is compressed as it is written, one file in memory at a time.
///
/// # Errors
/// The I/O error reading a file.
pub fn build_layer(files: &BTreeMap<String, Contents>) -> std::io::Result<Layer> {
    let mut dirs = std::collections::BTreeSet::new();
    for path in files.keys() {
        let mut parts: Vec<&str> = path.split('/').collect();
        parts.pop();
        for i in 1..=parts.len() {
            dirs.insert(parts[..i].join("/"));
        }
    }
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(Hashing {
        inner: gz,
        hasher: sha2::Digest::new(),
    });
    let header = |kind: tar::EntryType, mode: u32, size: u64| {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_size(size);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h
    };
    for dir in &dirs {
        let mut h = header(tar::EntryType::Directory, 0o755, 0);
        builder.append_data(&mut h, format!("{dir}/"), std::io::empty())?;
    }
    for (path, contents) in files {
        let read;
        let data = match contents {
            Contents::Bytes(b) => b.as_slice(),
            Contents::File(f) => {
                read = fs::read(f)?;
                read.as_slice()
            }
        };
        let mut h = header(tar::EntryType::Regular, 0o644, data.len() as u64);
        builder.append_data(&mut h, path, data)?;
    }
    let hashing = builder.into_inner()?;
    let diff_id = format!("sha256:{}", hex::encode(sha2::Digest::finalize(hashing.hasher)));
    Ok(Layer {
        blob: Blob {
            media_type: IMAGE_LAYER_GZIP_MEDIA_TYPE.to_owned(),
            data: hashing.inner.finish()?,
        },
        diff_id,
    })
}

/// The image config of a single-platform image with `labels` and these layers.
#[must_use]
pub fn image_config(labels: &BTreeMap<String, String>, diff_ids: &[String], created_by: &str) -> Vec<u8> {
    let config = json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created_by": created_by}],
    });
    serde_json::to_vec(&config).unwrap_or_default()
}

/// Every regular file below `dir` (links to files followed), keyed by `prefix/relative path`.
fn read_dir_files(dir: &Path, prefix: &str) -> Result<BTreeMap<String, Contents>> {
    fn walk(base: &Path, dir: &Path, prefix: &str, out: &mut BTreeMap<String, Contents>) -> Result<()> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| Error::Io {
                action: "read",
                path,
                source,
            }
        };
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .map_err(io(dir))?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()
            .map_err(io(dir))?;
        entries.sort();
        for path in entries {
            let link = fs::symlink_metadata(&path)
                .map_err(io(&path))?
                .file_type()
                .is_symlink();
            let meta = fs::metadata(&path).map_err(io(&path))?;
            let rel = path
                .strip_prefix(base)
                .map_err(|_| Error::BadContent {
                    path: path.clone(),
                    message: "outside the directory being pushed".to_owned(),
                })?
                .to_str()
                .ok_or_else(|| Error::BadContent {
                    path: path.clone(),
                    message: "the file name is not UTF-8; rename it".to_owned(),
                })?
                .replace('\\', "/");
            if meta.is_dir() {
                if link {
                    return Err(Error::BadContent {
                        path,
                        message: "a link to a directory; copy the directory instead".to_owned(),
                    });
                }
                walk(base, &path, prefix, out)?;
            } else if meta.is_file() {
                out.insert(format!("{prefix}/{rel}"), Contents::File(path));
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, prefix, &mut out)?;
    Ok(out)
}

impl Registry {
    /// Pushes `layers` and `config` as an OCI image manifest tagged as `image`; returns the
    /// manifest digest. Blobs the repository already has are not uploaded again.
    ///
    /// # Errors
    /// [`Error::Unauthorized`] or [`Error::Registry`].
    pub async fn push_image(&self, image: &ImageRef, layers: &[Blob], config: &[u8]) -> Result<String> {
        let auth = self.credentials(image)?;
        let oci = image.as_oci();
        self.client
            .auth(oci, &auth, RegistryOperation::Push)
            .await
            .map_err(|e| classify(image, "log in to push", e))?;
        let config_digest = sha256_digest(config);
        let mut descriptors = Vec::with_capacity(layers.len());
        for layer in layers {
            let digest = sha256_digest(&layer.data);
            self.upload(image, layer.data.clone(), &digest).await?;
            descriptors
                .push(json!({"mediaType": layer.media_type, "digest": digest, "size": layer.data.len()}));
        }
        self.upload(image, config.to_vec(), &config_digest).await?;
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "config": {"mediaType": IMAGE_CONFIG_MEDIA_TYPE, "digest": config_digest, "size": config.len()},
            "layers": descriptors,
        });
        let body = serde_json::to_vec(&manifest).unwrap_or_default();
        let digest = sha256_digest(&body);
        self.client
            .push_manifest_raw(oci, body, http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE))
            .await
            .map_err(|e| classify(image, "push the manifest", e))?;
        Ok(digest)
    }

    async fn upload(&self, image: &ImageRef, data: Vec<u8>, digest: &str) -> Result<()> {
        let oci = image.as_oci();
        if self.client.blob_exists(oci, digest).await.unwrap_or(false) {
            return Ok(());
        }
        self.client
            .push_blob(oci, data, digest)
            .await
            .map(drop)
            .map_err(|e| classify(image, "push a blob", e))
    }

    /// Pushes the file-based catalog in `dir` as a catalog image; returns the manifest digest.
    ///
    /// # Errors
    /// [`Error::BadContent`] when `dir` is not a loadable catalog, else as [`Registry::push_image`].
    pub async fn push_catalog(&self, dir: &Path, image: &ImageRef) -> Result<String> {
        let loaded = crate::source::load_path(dir).map_err(|e| Error::BadContent {
            path: dir.to_owned(),
            message: operator_runtime::error_chain(&e),
        })?;
        if let Some(problem) = loaded.problems.first() {
            return Err(Error::BadContent {
                path: dir.to_owned(),
                message: format!(
                    "{} document(s) cannot be decoded, the first: {problem}; fix them (see `kubectl-olm catalog \
                     validate {}`)",
                    loaded.problems.len(),
                    dir.display()
                ),
            });
        }
        if loaded.config.packages.is_empty() {
            return Err(Error::BadContent {
                path: dir.to_owned(),
                message: "it holds no olm.package; pass a file-based catalog directory".to_owned(),
            });
        }
        // The parsed catalog is only a check; free it before packing.
        drop(loaded);
        let files = read_dir_files(dir, DEFAULT_CONFIGS_DIR.trim_start_matches('/'))?;
        let layer = build_layer(&files).map_err(|source| Error::Io {
            action: "pack",
            path: dir.to_owned(),
            source,
        })?;
        let labels = BTreeMap::from([(CONFIGS_LABEL.to_owned(), DEFAULT_CONFIGS_DIR.to_owned())]);
        let config = image_config(
            &labels,
            std::slice::from_ref(&layer.diff_id),
            "kubectl-olm catalog push",
        );
        self.push_image(image, &[layer.blob], &config).await
    }

    /// Pushes the registry+v1 bundle in `dir` as a bundle image; returns the manifest digest.
    ///
    /// # Errors
    /// [`Error::BadContent`] when `dir` is not a valid bundle, else as [`Registry::push_image`].
    pub async fn push_bundle(&self, dir: &Path, image: &ImageRef) -> Result<String> {
        let bad = |message: String| Error::BadContent {
            path: dir.to_owned(),
            message,
        };
        let tree = crate::source::bundle::read_tree(dir).map_err(|e| {
            bad(format!(
                "{e}; pass a registry+v1 bundle directory holding manifests/ and metadata/"
            ))
        })?;
        crate::bundle::Bundle::parse(&tree)
            .map_err(|e| bad(format!("not a valid registry+v1 bundle: {e}")))?;
        let labels = bundle_labels(&tree).map_err(bad)?;
        let mut files = BTreeMap::new();
        for sub in ["manifests", "metadata"] {
            for (path, data) in tree.files_in(sub) {
                files.insert(path.to_owned(), Contents::Bytes(data.to_vec()));
            }
        }
        let layer = build_layer(&files).map_err(|source| Error::Io {
            action: "pack",
            path: dir.to_owned(),
            source,
        })?;
        let config = image_config(
            &labels,
            std::slice::from_ref(&layer.diff_id),
            "kubectl-olm bundle push",
        );
        self.push_image(image, &[layer.blob], &config).await
    }
}

/// The labels of a bundle image: every string annotation of `metadata/annotations.yaml`.
fn bundle_labels(tree: &crate::bundle::FileTree) -> std::result::Result<BTreeMap<String, String>, String> {
    let (path, data) = ["yaml", "yml", "json"]
        .iter()
        .find_map(|ext| {
            let path = format!("metadata/annotations.{ext}");
            tree.get(&path).map(|d| (path, d))
        })
        .ok_or_else(|| "metadata/annotations.yaml not found".to_owned())?;
    let text = std::str::from_utf8(data).map_err(|e| format!("{path} is not UTF-8: {e}"))?;
    let doc: serde_json::Value = crate::codec::from_yaml_str(&path, text).map_err(|e| e.to_string())?;
    let map = doc
        .get("annotations")
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| format!("{path} has no `annotations:` map"))?;
    Ok(map
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_deterministic_and_carry_their_parent_directories() {
        let files = BTreeMap::from([
            (
                "configs/p/catalog.yaml".to_owned(),
                Contents::Bytes(b"x".to_vec()),
            ),
            ("configs/q.json".to_owned(), Contents::Bytes(b"{}".to_vec())),
        ]);
        let a = build_layer(&files).unwrap();
        let b = build_layer(&files).unwrap();
        assert_eq!(sha256_digest(&a.blob.data), sha256_digest(&b.blob.data));
        let mut tar = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(a.blob.data.as_slice()),
            &mut tar,
        )
        .unwrap();
        assert_eq!(a.diff_id, sha256_digest(&tar));
        let tar = flate2::read::GzDecoder::new(a.blob.data.as_slice());
        let mut archive = tar::Archive::new(tar);
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "configs/",
                "configs/p/",
                "configs/p/catalog.yaml",
                "configs/q.json"
            ]
        );
    }

    #[test]
    fn a_bundle_is_labelled_with_its_annotations() {
        let tree: crate::bundle::FileTree = [(
            "metadata/annotations.yaml",
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: redis-operator\n  \
             operators.operatorframework.io.bundle.channels.v1: alpha\n",
        )]
        .into_iter()
        .collect();
        let labels = bundle_labels(&tree).unwrap();
        assert_eq!(
            labels["operators.operatorframework.io.bundle.package.v1"],
            "redis-operator"
        );
        assert_eq!(labels.len(), 2);
        let config: serde_json::Value =
            serde_json::from_slice(&image_config(&labels, &["sha256:x".into()], "t")).unwrap();
        assert_eq!(
            config["config"]["Labels"]["operators.operatorframework.io.bundle.channels.v1"],
            "alpha"
        );
        assert_eq!(config["rootfs"]["diff_ids"][0], "sha256:x");
    }
}
