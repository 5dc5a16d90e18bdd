//! Catalog and bundle images against a real registry: Debian's `docker-registry` (the CNCF
//! distribution registry), started on a loopback port by each test (plain HTTP, or TLS with a test
//! CA and htpasswd Basic authentication; `crates/test-support/src/registry.rs`).
//!
//! Images come from two independent builders: `buildah` (a `FROM scratch` Containerfile, pushed as
//! Docker v2s2 + gzip and OCI + zstd) and our own `catalog push` / `bundle push`.
//! Reading them must give exactly what the directories give. Bad images (a missing tag, a wrong
//! digest, a `../` entry, an absolute symlink leaving the catalog, a gzip bomb, an image without a
//! catalog, wrong credentials, an unknown CA) are each refused with a message naming the image and
//! the problem, and leave nothing behind in the cache. Without the registry, openssl, htpasswd or
//! buildah the tests are skipped, unless `CI=true`, where they fail.

// Test helpers outside #[test] functions: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use crate::support::{
    cluster::repo_root as repo,
    registry::{Registry, scratch},
};
use olm_rs::oci;

const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";

/// kubectl-olm with its own cache directory and no docker config of the user's.
struct Olm {
    home: tempfile::TempDir,
}

impl Olm {
    fn new() -> Self {
        Self { home: scratch() }
    }

    fn cache(&self) -> PathBuf {
        self.home.path().join("cache")
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
            .args(args)
            .arg("--cache-dir")
            .arg(self.cache())
            .current_dir(repo())
            .env("DOCKER_CONFIG", self.home.path().join("no-docker-config"))
            .env_remove("XDG_CACHE_HOME")
            .output()
            .expect("run kubectl-olm")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "kubectl-olm {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// Runs a command that must fail with exit code 1; returns its stderr.
    fn fails(&self, args: &[&str]) -> String {
        self.fails_with(1, args)
    }

    /// Runs a command that must fail with `code`; returns its stderr.
    fn fails_with(&self, code: i32, args: &[&str]) -> String {
        let out = self.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "kubectl-olm {args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        stderr
    }

    /// Cache entries (`sha256/<hex>/<kind>`) and leftovers in the cache's tmp/.
    fn cache_state(&self) -> (Vec<String>, usize) {
        let mut entries = Vec::new();
        if let Ok(hexes) = std::fs::read_dir(self.cache().join("sha256")) {
            for hex in hexes {
                let hex = hex.unwrap().path();
                for kind in std::fs::read_dir(&hex).unwrap() {
                    let kind = kind.unwrap().path();
                    entries.push(format!(
                        "{}/{}",
                        hex.file_name().unwrap().to_string_lossy(),
                        kind.file_name().unwrap().to_string_lossy()
                    ));
                }
            }
        }
        let leftovers = std::fs::read_dir(self.cache().join("tmp")).map_or(0, Iterator::count);
        (entries, leftovers)
    }
}

fn tools() -> bool {
    crate::support::registry::available() & crate::support::tool_available("buildah", "buildah")
}

fn catalog_dir() -> String {
    repo().join("catalog").display().to_string()
}

/// The digest printed by `push`: `pushed REF@sha256:...`.
fn pushed_digest(stdout: &str) -> String {
    let line = stdout.trim();
    let at = line.rfind('@').unwrap_or_else(|| panic!("no digest in {line:?}"));
    line[at + 1..].to_owned()
}

/// Every file below `dir`, by relative path.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = Vec::new();
    crate::support::image::collect(dir, dir, &mut out);
    out.into_iter().collect()
}

fn buildah(root: &Path, args: &[&str]) -> String {
    crate::support::image::buildah(root, args)
}

/// The OCI config of an image in a registry, read by buildah (an independent reader).
fn inspect_with_buildah(root: &Path, image: &str) -> serde_json::Value {
    buildah(
        root,
        &[
            "pull",
            "--quiet",
            "--tls-verify=false",
            &format!("docker://{image}"),
        ],
    );
    let json = buildah(root, &["inspect", "--type", "image", image]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("inspect JSON");
    v["OCIv1"]["config"].clone()
}

/// Our registry client for the plain `registry`, caching in `cache`.
fn client(registry: &Registry, cache: &Path) -> oci::Registry {
    oci::Registry::new(oci::Options {
        insecure: vec![registry.addr.clone()],
        cache_dir: cache.to_owned(),
        ..oci::Options::default()
    })
    .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn a_catalog_image_built_and_pushed_by_buildah_loads_to_the_same_packages_as_the_directory() {
    if !tools() {
        return;
    }
    let registry = Registry::plain();
    let olm = Olm::new();
    let work = scratch();
    let context = work.path().join("context");
    std::fs::create_dir_all(&context).unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(repo().join("catalog"))
        .arg(context.join("catalog"))
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(
        context.join("Containerfile"),
        format!("FROM scratch\nADD catalog /configs\nLABEL {CONFIGS_LABEL}=/configs\n"),
    )
    .unwrap();
    let containerfile = context.join("Containerfile").display().to_string();
    let context_arg = context.display().to_string();
    // One buildah storage per variant: buildah reuses a blob it pushed before, whatever the
    // compression asked for.
    let variants: [(&str, &[&str]); 2] = [
        ("v2s2-gzip", &["--format", "v2s2"]),
        ("oci-zstd", &["--format", "oci", "--compression-format", "zstd"]),
    ];
    let want_packages = olm.ok(&["catalog", "packages", "-o", "json", "--catalog", &catalog_dir()]);
    let want_bundles = olm.ok(&[
        "catalog",
        "bundles",
        "redis-operator",
        "-o",
        "json",
        "--catalog",
        &catalog_dir(),
    ]);
    for (tag, flags) in variants {
        let root = work.path().join(format!("buildah-{tag}"));
        buildah(
            &root,
            &[
                "bud",
                "--quiet",
                "--format",
                "docker",
                "-f",
                &containerfile,
                "-t",
                "localhost/olm-test-catalog:v1",
                &context_arg,
            ],
        );
        let image = registry.image(&format!("olm/catalog-{tag}:v1"));
        let mut args = vec!["push", "--quiet", "--tls-verify=false"];
        args.extend_from_slice(flags);
        let dest = format!("docker://{image}");
        args.extend(["localhost/olm-test-catalog:v1", dest.as_str()]);
        buildah(&root, &args);
        let common = [
            "--catalog",
            image.as_str(),
            "--insecure-registry",
            registry.addr.as_str(),
        ];
        let mut packages = vec!["catalog", "packages", "-o", "json"];
        packages.extend_from_slice(&common);
        assert_eq!(olm.ok(&packages), want_packages, "{tag}");
        let mut bundles = vec!["catalog", "bundles", "redis-operator", "-o", "json"];
        bundles.extend_from_slice(&common);
        assert_eq!(olm.ok(&bundles), want_bundles, "{tag}");
    }
    // Two images, two cache entries, nothing left in tmp/.
    let (entries, leftovers) = olm.cache_state();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(leftovers, 0);
}

#[test]
fn our_catalog_push_round_trips_and_a_browse_by_digest_needs_no_registry() {
    if !tools() {
        return;
    }
    let mut registry = Registry::plain();
    let olm = Olm::new();
    let image = registry.image("olm/catalog:v1");
    let addr = registry.addr.clone();
    let insecure = ["--insecure-registry", addr.as_str()];
    let push = |olm: &Olm| {
        let mut args = vec!["catalog", "push", "catalog", image.as_str()];
        args.extend_from_slice(&insecure);
        pushed_digest(&olm.ok(&args))
    };
    let digest = push(&olm);
    assert_eq!(
        push(&olm),
        digest,
        "pushing the same directory twice gives the same image"
    );

    let want = olm.ok(&["catalog", "packages", "-o", "json", "--catalog", &catalog_dir()]);
    let mut browse = vec!["catalog", "packages", "-o", "json", "--catalog", image.as_str()];
    browse.extend_from_slice(&insecure);
    assert_eq!(olm.ok(&browse), want);
    let valid = {
        let mut args = vec!["catalog", "validate", image.as_str()];
        args.extend_from_slice(&insecure);
        olm.ok(&args)
    };
    assert!(valid.starts_with(&format!("catalog {image} is valid")), "{valid}");

    // The cache holds the catalog directory under the image digest, file for file.
    let entry = olm
        .cache()
        .join("sha256")
        .join(digest.trim_start_matches("sha256:"))
        .join("catalog");
    assert_eq!(files(&entry.join("root/configs")), files(&repo().join("catalog")));

    // An independent reader sees what opm would build: the configs label and /configs.
    let work = scratch();
    let config = inspect_with_buildah(&work.path().join("buildah"), &image);
    assert_eq!(config["Labels"][CONFIGS_LABEL], "/configs");

    // With the registry gone, the digest is served from the cache; a tag cannot be resolved.
    registry.stop();
    let pinned = registry.image(&format!("olm/catalog@{digest}"));
    assert_eq!(
        olm.ok(&["catalog", "packages", "-o", "json", "--catalog", &pinned]),
        want
    );
    let mut by_tag = vec!["catalog", "packages", "--catalog", image.as_str()];
    by_tag.extend_from_slice(&insecure);
    let err = olm.fails(&by_tag);
    assert!(
        err.contains(&format!("cannot talk to registry {}", registry.addr)),
        "{err}"
    );
}

#[test]
fn bundle_push_then_pull_gives_back_the_same_manifests_and_the_annotations_as_labels() {
    if !tools() {
        return;
    }
    let registry = Registry::plain();
    let olm = Olm::new();
    let client = client(&registry, &olm.cache());
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo().join("bundles/redis-operator"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 4, "{dirs:?}");
    let rt = runtime();
    let mut last = String::new();
    for dir in &dirs {
        let version = dir.file_name().unwrap().to_string_lossy().into_owned();
        let image = registry.image(&format!("olm/redis-operator-bundle:v{version}"));
        let dir_arg = dir.display().to_string();
        olm.ok(&[
            "bundle",
            "push",
            &dir_arg,
            &image,
            "--insecure-registry",
            &registry.addr,
        ]);
        let pulled = rt
            .block_on(client.pull_bundle(&oci::ImageRef::parse(&image).unwrap()))
            .unwrap();
        assert!(!pulled.cached);
        assert_eq!(files(&pulled.dir), files(dir), "{version}");
        last = image;
    }
    let work = scratch();
    let config = inspect_with_buildah(&work.path().join("buildah"), &last);
    let labels = &config["Labels"];
    assert_eq!(
        labels["operators.operatorframework.io.bundle.package.v1"],
        "redis-operator"
    );
    assert_eq!(
        labels["operators.operatorframework.io.bundle.mediatype.v1"],
        "registry+v1"
    );
    assert_eq!(
        labels["operators.operatorframework.io.bundle.manifests.v1"],
        "manifests/"
    );

    // A bundle is not a catalog.
    let err = olm.fails(&[
        "catalog",
        "packages",
        "--catalog",
        &last,
        "--insecure-registry",
        &registry.addr,
    ]);
    assert!(
        err.contains(&format!(
            "image {last} is not a catalog image: it has no /configs directory"
        )),
        "{err}"
    );
    // And a directory that is not a bundle is refused before anything is pushed.
    let err = olm.fails(&[
        "bundle",
        "push",
        "catalog",
        &registry.image("olm/x:v1"),
        "--insecure-registry",
        &registry.addr,
    ]);
    assert!(
        err.contains("refusing to push catalog: manifests/ directory missing"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------- hostile images

/// A gzip layer holding one tar entry, with its name written raw (the tar crate refuses `..`
/// through its API), and the end-of-archive blocks.
fn one_entry_layer(name: &str, kind: tar::EntryType, link: Option<&str>, data: &[u8]) -> Vec<u8> {
    let mut header = tar::Header::new_old();
    {
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(link) = link {
            old.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
    }
    header.set_entry_type(kind);
    header.set_mode(0o644);
    header.set_size(data.len() as u64);
    header.set_cksum();
    let mut out = header.as_bytes().to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512 + 1024, 0);
    gzip(&out)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, bytes).unwrap();
    gz.finish().unwrap()
}

/// Pushes one gzip layer as a catalog image (configs label set) with our library.
fn push_layer(registry: &Registry, cache: &Path, image: &str, layer: Vec<u8>) {
    let client = client(registry, cache);
    let labels = BTreeMap::from([(CONFIGS_LABEL.to_owned(), "/configs".to_owned())]);
    let config = oci::push::image_config(&labels, &[oci::sha256_digest(&layer)], "test");
    let blob = oci::push::Blob {
        media_type: "application/vnd.oci.image.layer.v1.tar+gzip".to_owned(),
        data: layer,
    };
    runtime()
        .block_on(client.push_image(&oci::ImageRef::parse(image).unwrap(), &[blob], &config))
        .unwrap();
}

#[test]
fn bad_images_are_each_refused_with_a_message_naming_the_image_and_the_problem() {
    if !tools() {
        return;
    }
    let registry = Registry::plain();
    let olm = Olm::new();
    let addr = registry.addr.as_str();
    let browse = |image: &str, extra: &[&str]| {
        let mut args = vec![
            "catalog",
            "packages",
            "--catalog",
            image,
            "--insecure-registry",
            addr,
        ];
        args.extend_from_slice(extra);
        olm.fails(&args)
    };
    let good = registry.image("olm/catalog:v1");
    olm.ok(&["catalog", "push", "catalog", &good, "--insecure-registry", addr]);

    // A tag that does not exist, a digest that does not exist.
    let err = browse(&registry.image("olm/catalog:nope"), &[]);
    assert!(
        err.contains(&format!(
            "image {addr}/olm/catalog:nope not found: the registry has no manifest for tag \"nope\""
        )),
        "{err}"
    );
    let zero = format!("sha256:{}", "0".repeat(64));
    let err = browse(&registry.image(&format!("olm/catalog@{zero}")), &[]);
    assert!(err.contains(&format!("no manifest with digest {zero}")), "{err}");
    // A malformed reference is bad usage (exit code 2).
    let err = olm.fails_with(
        2,
        &[
            "catalog",
            "packages",
            "--catalog",
            &format!("{addr}/olm/catalog@sha256:abc"),
        ],
    );
    assert!(err.contains("invalid image reference"), "{err}");

    // A layer with a `../` entry.
    let evil = registry.image("olm/evil:dotdot");
    let layer = one_entry_layer("configs/../../evil.json", tar::EntryType::Regular, None, b"{}");
    push_layer(&registry, &olm.cache(), &evil, layer);
    let err = browse(&evil, &[]);
    assert!(err.contains(&format!("failed to unpack image {evil}")), "{err}");
    assert!(
        err.contains("entry \"configs/../../evil.json\" contains `..`"),
        "{err}"
    );

    // An absolute symlink leaving the catalog directory.
    let link = registry.image("olm/evil:symlink");
    let layer = one_entry_layer(
        "configs/p/catalog.json",
        tar::EntryType::Symlink,
        Some("/etc/passwd"),
        b"",
    );
    push_layer(&registry, &olm.cache(), &link, layer);
    let err = browse(&link, &[]);
    assert!(err.contains(&format!("failed to unpack image {link}")), "{err}");
    assert!(
        err.contains("entry \"configs/p/catalog.json\" is a link to \"/etc/passwd\", outside /configs"),
        "{err}"
    );

    // A gzip bomb: 128 MiB of zeros in ~150 KiB (concatenated gzip members), against a 64 MiB cap.
    let bomb = registry.image("olm/evil:bomb");
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..4].copy_from_slice(b"junk");
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(0o644);
    header.set_size(128 << 20);
    header.set_cksum();
    let zeros = gzip(&vec![0u8; 1 << 20]);
    let mut layer = gzip(header.as_bytes());
    for _ in 0..128 {
        layer.extend_from_slice(&zeros);
    }
    layer.extend(gzip(&[0u8; 1024]));
    assert!(layer.len() < 400 << 10, "{}", layer.len());
    push_layer(&registry, &olm.cache(), &bomb, layer);
    let err = browse(&bomb, &["--max-unpack-size", "64Mi"]);
    assert!(err.contains(&format!("failed to unpack image {bomb}")), "{err}");
    assert!(
        err.contains("the image unpacks to more than 67108864 bytes"),
        "{err}"
    );
    assert!(err.contains("decompression bomb"), "{err}");

    // An image without a catalog directory.
    let empty = registry.image("olm/evil:no-configs");
    let layer = one_entry_layer("etc/motd", tar::EntryType::Regular, None, b"hi");
    push_layer(&registry, &olm.cache(), &empty, layer);
    let err = browse(&empty, &[]);
    assert!(
        err.contains(&format!("image {empty} is not a catalog image")),
        "{err}"
    );

    // Nothing of the refused images is cached or left behind; the good image still reads.
    let (entries, leftovers) = olm.cache_state();
    assert!(entries.is_empty(), "{entries:?}");
    assert_eq!(leftovers, 0);
    let out = olm.ok(&[
        "catalog",
        "packages",
        "-o",
        "name",
        "--catalog",
        &good,
        "--insecure-registry",
        addr,
    ]);
    assert_eq!(out, "package/redis-operator\n");
}

#[test]
fn a_tls_registry_with_basic_auth_needs_its_ca_and_the_right_credentials() {
    if !tools() {
        return;
    }
    let registry = Registry::tls_with_auth();
    let olm = Olm::new();
    let (user, password) = registry.credentials.clone().unwrap();
    let ca = registry.ca.clone().unwrap().display().to_string();
    let configs = scratch();
    let good_dir = configs.path().join("good");
    let bad_dir = configs.path().join("bad");
    std::fs::create_dir_all(&good_dir).unwrap();
    std::fs::create_dir_all(&bad_dir).unwrap();
    let good = registry
        .docker_config(&good_dir, &user, &password)
        .display()
        .to_string();
    let bad = registry
        .docker_config(&bad_dir, &user, "wrong")
        .display()
        .to_string();
    let image = registry.image("olm/catalog:v1");

    olm.ok(&[
        "catalog",
        "push",
        "catalog",
        &image,
        "--registry-config",
        &good,
        "--registry-ca",
        &ca,
    ]);
    let want = olm.ok(&["catalog", "packages", "-o", "json", "--catalog", &catalog_dir()]);
    let got = olm.ok(&[
        "catalog",
        "packages",
        "-o",
        "json",
        "--catalog",
        &image,
        "--registry-config",
        &good,
        "--registry-ca",
        &ca,
    ]);
    assert_eq!(got, want);

    let cold = Olm::new();
    for args in [
        vec!["--registry-config", bad.as_str(), "--registry-ca", ca.as_str()],
        vec!["--registry-ca", ca.as_str()],
    ] {
        let mut full = vec!["catalog", "packages", "--catalog", image.as_str()];
        full.extend_from_slice(&args);
        let err = cold.fails(&full);
        assert!(
            err.contains(&format!(
                "registry {} refused access to image {image}",
                registry.addr
            )),
            "{args:?}: {err}"
        );
        assert!(err.contains("--registry-config"), "{err}");
    }
    let err = olm.fails(&[
        "catalog",
        "push",
        "catalog",
        &registry.image("olm/other:v1"),
        "--registry-config",
        &bad,
        "--registry-ca",
        &ca,
    ]);
    assert!(err.contains("refused access"), "{err}");

    // TLS is verified: without the CA the registry's certificate is not trusted.
    let err = cold.fails(&[
        "catalog",
        "packages",
        "--catalog",
        &image,
        "--registry-config",
        &good,
    ]);
    assert!(
        err.contains(&format!("cannot talk to registry {}", registry.addr)),
        "{err}"
    );
    assert!(err.to_lowercase().contains("certificate"), "{err}");
}
