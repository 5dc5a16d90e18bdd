//! Pulling an image: tag → digest → manifest (→ platform manifest) → config → layers, each
//! verified against its digest, then unpacked into the cache.

use std::path::{Path, PathBuf};

use futures::StreamExt as _;
use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageIndex, OciImageManifest,
};
use sha2::Digest as _;
use tokio::io::AsyncWriteExt as _;

use super::{
    CONFIGS_LABEL, DEFAULT_CONFIGS_DIR, Error, ImageRef, Pulled, Registry, Result, cache, classify, platform,
    reference::sha256_hex,
    unpack::{self, EntryPath, Unpacker},
    verify_digest,
};

/// The manifest media types we ask for.
const ACCEPT: &[&str] = &[
    OCI_IMAGE_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE,
    OCI_IMAGE_INDEX_MEDIA_TYPE,
    IMAGE_MANIFEST_LIST_MEDIA_TYPE,
];

/// Config blobs are small JSON documents; anything larger is not one.
const MAX_CONFIG_SIZE: u64 = 4 << 20;

/// What a manifest document is.
#[derive(Debug, PartialEq, Eq)]
enum ManifestKind {
    Image,
    Index,
}

/// Reads the media type (or, when absent, the shape) of a manifest document.
fn manifest_kind(image: &str, bytes: &[u8]) -> Result<ManifestKind> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| Error::BadDocument {
        image: image.to_owned(),
        what: "manifest",
        message: e.to_string(),
    })?;
    let media_type = value.get("mediaType").and_then(serde_json::Value::as_str);
    match media_type {
        Some(OCI_IMAGE_MEDIA_TYPE | IMAGE_MANIFEST_MEDIA_TYPE) => Ok(ManifestKind::Image),
        Some(OCI_IMAGE_INDEX_MEDIA_TYPE | IMAGE_MANIFEST_LIST_MEDIA_TYPE) => Ok(ManifestKind::Index),
        None if value.get("schemaVersion").and_then(serde_json::Value::as_u64) == Some(2) => {
            if value.get("manifests").is_some() {
                Ok(ManifestKind::Index)
            } else {
                Ok(ManifestKind::Image)
            }
        }
        other => Err(Error::UnsupportedManifest {
            image: image.to_owned(),
            media_type: other.map_or_else(
                || {
                    format!(
                        "schemaVersion {}",
                        value.get("schemaVersion").unwrap_or(&serde_json::Value::Null)
                    )
                },
                str::to_owned,
            ),
        }),
    }
}

/// The platform entries of an index, for [`platform::choose`].
fn index_entries(index: &OciImageIndex) -> Vec<platform::Entry> {
    index
        .manifests
        .iter()
        .map(|m| platform::Entry {
            digest: m.digest.clone(),
            platform: m.platform.as_ref().map(|p| {
                let mut s = format!("{}/{}", p.os, p.architecture);
                if let Some(v) = &p.variant {
                    s.push('/');
                    s.push_str(v);
                }
                s
            }),
            artifact: m
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("vnd.docker.reference.type"))
                || m.artifact_type.is_some(),
        })
        .collect()
}

/// The catalog directory a config's label names, root-relative (`configs`).
fn configs_dir(image: &str, config: &serde_json::Value) -> Result<String> {
    let value = config
        .pointer("/config/Labels")
        .and_then(|labels| labels.get(CONFIGS_LABEL))
        .and_then(serde_json::Value::as_str)
        .unwrap_or(DEFAULT_CONFIGS_DIR);
    match unpack::parse_entry_path(value.trim_start_matches('/').as_bytes()) {
        Ok(EntryPath::Path(p)) => Ok(p),
        _ => Err(Error::BadConfigsLabel {
            image: image.to_owned(),
            value: value.to_owned(),
        }),
    }
}

impl Registry {
    /// The digest `image` names now: its own digest, or what its tag points at.
    ///
    /// # Errors
    /// [`Error::NotFound`], [`Error::Unauthorized`] or [`Error::Registry`].
    pub async fn resolve(&self, image: &ImageRef) -> Result<String> {
        if let Some(digest) = image.digest() {
            return Ok(digest.to_owned());
        }
        let auth = self.credentials(image)?;
        self.client
            .fetch_manifest_digest(image.as_oci(), &auth)
            .await
            .map_err(|e| classify(image, "resolve the tag", e))
    }

    /// Pulls a catalog image (or takes it from the cache) and returns its catalog directory.
    ///
    /// # Errors
    /// Any [`Error`]; [`Error::NotACatalog`] when the image has no catalog directory.
    pub async fn pull_catalog(&self, image: &ImageRef) -> Result<Pulled> {
        self.pull(image, cache::Kind::Catalog).await
    }

    /// Pulls a bundle image (or takes it from the cache) and returns its bundle directory.
    ///
    /// # Errors
    /// Any [`Error`]; [`Error::NotABundle`] when the image has no `manifests/`.
    pub async fn pull_bundle(&self, image: &ImageRef) -> Result<Pulled> {
        self.pull(image, cache::Kind::Bundle).await
    }

    async fn pull(&self, image: &ImageRef, kind: cache::Kind) -> Result<Pulled> {
        let name = image.to_string();
        let digest = self.resolve(image).await?;
        if sha256_hex(&digest).is_none() {
            return Err(Error::BadDocument {
                image: name,
                what: "manifest",
                message: format!("the registry named it by {digest:?}, not a sha256 digest"),
            });
        }
        let cache_dir = self.options.cache_dir.clone();
        if let Some((_, dir)) = cache::lookup(&cache_dir, &digest, kind) {
            tracing::debug!(image = %name, %digest, "using the cached content");
            return Ok(Pulled {
                image: name,
                digest,
                dir,
                cached: true,
            });
        }
        let auth = self.credentials(image)?;
        let pinned = image.with_digest(&digest);
        let (top, _) = self
            .client
            .pull_manifest_raw(pinned.as_oci(), &auth, ACCEPT)
            .await
            .map_err(|e| classify(image, "pull the manifest", e))?;
        verify_digest(&name, "manifest", &top, &digest)?;
        let (manifest_bytes, manifest_digest) = match manifest_kind(&name, &top)? {
            ManifestKind::Image => (top.clone(), digest.clone()),
            ManifestKind::Index => {
                let index: OciImageIndex = serde_json::from_slice(&top).map_err(|e| Error::BadDocument {
                    image: name.clone(),
                    what: "image index",
                    message: e.to_string(),
                })?;
                let entries = index_entries(&index);
                let chosen = platform::choose(&entries)
                    .map_err(|platforms| Error::NoPlatform {
                        image: name.clone(),
                        platforms,
                    })?
                    .to_owned();
                let (bytes, _) = self
                    .client
                    .pull_manifest_raw(image.with_digest(&chosen).as_oci(), &auth, ACCEPT)
                    .await
                    .map_err(|e| classify(image, "pull the platform manifest", e))?;
                verify_digest(&name, "platform manifest", &bytes, &chosen)?;
                if manifest_kind(&name, &bytes)? != ManifestKind::Image {
                    return Err(Error::BadDocument {
                        image: name,
                        what: "image index",
                        message: format!("entry {chosen} is another index, not an image manifest"),
                    });
                }
                (bytes, chosen)
            }
        };
        let manifest: OciImageManifest =
            serde_json::from_slice(&manifest_bytes).map_err(|e| Error::BadDocument {
                image: name.clone(),
                what: "manifest",
                message: e.to_string(),
            })?;

        let config_bytes = self.fetch_small(&pinned, &manifest.config, &name).await?;
        let config: serde_json::Value =
            serde_json::from_slice(&config_bytes).map_err(|e| Error::BadDocument {
                image: name.clone(),
                what: "config",
                message: e.to_string(),
            })?;
        let (selection, content) = match kind {
            cache::Kind::Catalog => {
                let dir = configs_dir(&name, &config)?;
                (vec![dir.clone()], dir)
            }
            cache::Kind::Bundle => (vec!["manifests".to_owned(), "metadata".to_owned()], String::new()),
        };
        let mut layers = Vec::with_capacity(manifest.layers.len());
        for layer in &manifest.layers {
            let compression =
                unpack::compression_for(&layer.media_type).ok_or_else(|| Error::UnsupportedLayer {
                    image: name.clone(),
                    layer: layer.digest.clone(),
                    media_type: layer.media_type.clone(),
                })?;
            layers.push((layer, compression));
        }

        let work = cache::workspace(&cache_dir).map_err(|source| Error::Io {
            action: "create a directory in the cache",
            path: cache_dir.join("tmp"),
            source,
        })?;
        let blobs = work.path().join("blobs");
        mkdir(&blobs)?;
        let mut files = Vec::with_capacity(layers.len());
        for (i, (layer, compression)) in layers.iter().enumerate() {
            let path = blobs.join(i.to_string());
            self.download(&pinned, layer, &path, &name).await?;
            files.push((layer.digest.clone(), path, *compression));
        }

        let limits = self.options.limits;
        let work_path = work.path().to_owned();
        let meta = cache::Meta {
            image: name.clone(),
            digest: digest.clone(),
            manifest_digest,
            content,
        };
        let unpack_name = name.clone();
        let dir = tokio::task::spawn_blocking(move || {
            unpack_into_cache(
                &unpack_name,
                kind,
                selection,
                limits,
                &work_path,
                files,
                &top,
                &meta,
                &cache_dir,
            )
        })
        .await
        .map_err(|e| Error::Io {
            action: "unpack (the unpacking task failed) into",
            path: work.path().to_owned(),
            source: std::io::Error::other(e.to_string()),
        })??;
        drop(work);
        Ok(Pulled {
            image: name,
            digest,
            dir,
            cached: false,
        })
    }

    /// A small blob (the config), verified, in memory.
    async fn fetch_small(&self, image: &ImageRef, desc: &OciDescriptor, name: &str) -> Result<Vec<u8>> {
        let size = u64::try_from(desc.size).unwrap_or(u64::MAX);
        if size > MAX_CONFIG_SIZE {
            return Err(Error::BlobTooLarge {
                image: name.to_owned(),
                blob: desc.digest.clone(),
                size,
                limit: MAX_CONFIG_SIZE,
            });
        }
        let mut stream = self
            .client
            .pull_blob_stream(image.as_oci(), desc.digest.as_str())
            .await
            .map_err(|e| classify(image, "pull the config", e))?;
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| classify(image, "pull the config", e.into()))?;
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > MAX_CONFIG_SIZE {
                return Err(Error::BlobTooLarge {
                    image: name.to_owned(),
                    blob: desc.digest.clone(),
                    size: bytes.len() as u64,
                    limit: MAX_CONFIG_SIZE,
                });
            }
        }
        verify_digest(name, "config", &bytes, &desc.digest)?;
        Ok(bytes)
    }

    /// Streams a layer blob to `path`, capped and hashed on the way.
    async fn download(&self, image: &ImageRef, desc: &OciDescriptor, path: &Path, name: &str) -> Result<()> {
        let limit = self.options.limits.max_blob_size;
        let too_large = |size: u64| Error::BlobTooLarge {
            image: name.to_owned(),
            blob: desc.digest.clone(),
            size,
            limit,
        };
        let declared = u64::try_from(desc.size).unwrap_or(u64::MAX);
        if declared > limit {
            return Err(too_large(declared));
        }
        let mut stream = self
            .client
            .pull_blob_stream(image.as_oci(), desc.digest.as_str())
            .await
            .map_err(|e| classify(image, "pull a blob", e))?;
        if let Some(length) = stream.content_length
            && length > limit
        {
            return Err(too_large(length));
        }
        let io_err = |source| Error::Io {
            action: "write",
            path: path.to_owned(),
            source,
        };
        let mut file = tokio::fs::File::create(path).await.map_err(io_err)?;
        let mut hasher = sha2::Sha256::new();
        let mut written: u64 = 0;
        let started = std::time::Instant::now();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| classify(image, "pull a blob", e.into()))?;
            written += chunk.len() as u64;
            if written > limit {
                return Err(too_large(written));
            }
            hasher.update(&chunk);
            file.write_all(&chunk).await.map_err(io_err)?;
        }
        file.flush().await.map_err(io_err)?;
        let actual = format!("sha256:{}", hex::encode(hasher.finalize()));
        if actual != desc.digest {
            return Err(Error::DigestMismatch {
                image: name.to_owned(),
                what: format!("layer {}", desc.digest),
                expected: desc.digest.clone(),
                actual,
            });
        }
        tracing::debug!(image = name, layer = %desc.digest, bytes = written, elapsed = ?started.elapsed(), "pulled layer");
        Ok(())
    }
}

fn mkdir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|source| Error::Io {
        action: "create",
        path: path.to_owned(),
        source,
    })
}

/// Applies the downloaded layers in order and moves the result into the cache.
#[allow(clippy::too_many_arguments)]
fn unpack_into_cache(
    name: &str,
    kind: cache::Kind,
    selection: Vec<String>,
    limits: unpack::Limits,
    work: &Path,
    layers: Vec<(String, PathBuf, unpack::Compression)>,
    manifest: &[u8],
    meta: &cache::Meta,
    cache_dir: &Path,
) -> Result<PathBuf> {
    let staging = work.join("staging");
    let entry = work.join("entry");
    let root = entry.join("root");
    mkdir(&staging)?;
    mkdir(&root)?;
    let first = selection.first().cloned().unwrap_or_default();
    let mut unpacker = Unpacker::new(selection, limits, staging);
    let unpack_err = |source| Error::Unpack {
        image: name.to_owned(),
        source,
    };
    for (digest, path, compression) in layers {
        let file = std::fs::File::open(&path).map_err(|source| Error::Io {
            action: "read",
            path: path.clone(),
            source,
        })?;
        unpacker
            .apply_layer(&digest, std::io::BufReader::new(file), compression)
            .map_err(unpack_err)?;
        // The blob is no longer needed once applied.
        let _ = std::fs::remove_file(&path);
    }
    if !unpacker.has(&first) {
        return Err(match kind {
            cache::Kind::Catalog => Error::NotACatalog {
                image: name.to_owned(),
                dir: format!("/{first}"),
            },
            cache::Kind::Bundle => Error::NotABundle {
                image: name.to_owned(),
            },
        });
    }
    let (files, bytes) = unpacker.finish(&root).map_err(unpack_err)?;
    tracing::debug!(image = name, files, bytes, "unpacked");
    cache::commit(cache_dir, &entry, manifest, meta, kind).map_err(|source| Error::Io {
        action: "store the unpacked image in the cache at",
        path: cache_dir.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_are_told_apart_by_media_type_or_shape() {
        let oci =
            br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","layers":[]}"#;
        assert_eq!(manifest_kind("i", oci).unwrap(), ManifestKind::Image);
        let docker_list =
            br#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","manifests":[]}"#;
        assert_eq!(manifest_kind("i", docker_list).unwrap(), ManifestKind::Index);
        assert_eq!(
            manifest_kind("i", br#"{"schemaVersion":2,"manifests":[]}"#).unwrap(),
            ManifestKind::Index
        );
        let v1 = br#"{"schemaVersion":1,"name":"x"}"#;
        let err = manifest_kind("i", v1).unwrap_err().to_string();
        assert!(err.contains("schemaVersion 1"), "{err}");
    }

    #[test]
    fn the_configs_label_names_the_catalog_directory() {
        let with = serde_json::json!({"config": {"Labels": {CONFIGS_LABEL: "/catalog/fbc"}}});
        assert_eq!(configs_dir("i", &with).unwrap(), "catalog/fbc");
        assert_eq!(configs_dir("i", &serde_json::json!({})).unwrap(), "configs");
        for bad in ["/", "/../etc"] {
            let cfg = serde_json::json!({"config": {"Labels": {CONFIGS_LABEL: bad}}});
            assert!(
                matches!(configs_dir("i", &cfg), Err(Error::BadConfigsLabel { .. })),
                "{bad}"
            );
        }
    }
}
