//! The Dockerfiles build the images the manifests name, and the binaries run inside them.
//!
//! `scripts/build-image` builds each image with buildah (no Docker daemon) from its Dockerfile,
//! with the `build` stage replaced by the binary cargo built for this test run and, where gcr.io is
//! unreachable, distroless/cc replaced by the same Debian 12 libraries taken from the host. The
//! test then reads the image's configuration (entrypoint, command, user, port), mounts its root
//! file system and runs the binary in it with `chroot` as the image's user, so a missing library,
//! a wrong path or a file the image forgot fails here. Without buildah the test is skipped, unless
//! `CI=true`, where it fails.

mod support;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// buildah with the test's own storage under `root`.
fn buildah_cmd(root: &Path) -> Command {
    let mut cmd = Command::new("buildah");
    cmd.arg("--root")
        .arg(root.join("storage"))
        .arg("--runroot")
        .arg(root.join("run"))
        .args(["--storage-driver", "vfs"]);
    cmd
}

/// Runs buildah against the test's own storage and returns its trimmed stdout.
fn buildah(root: &Path, args: &[&str]) -> String {
    run(buildah_cmd(root).args(args)).trim().to_owned()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("spawn");
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A built and mounted image; unmounted and removed when dropped.
struct Image {
    root: tempfile::TempDir,
    tag: String,
    container: String,
    rootfs: PathBuf,
}

impl Image {
    fn build(name: &str, binary: &str) -> Self {
        // Under target/: the vfs driver copies every layer, and /tmp may be small.
        let scratch = repo().join("target").join("tmp");
        std::fs::create_dir_all(&scratch).expect("target/tmp");
        let root = tempfile::tempdir_in(scratch).expect("tempdir");
        let out = run(Command::new(repo().join("scripts/build-image"))
            .args([name, "--binary", binary])
            .env("OLMRS_BUILDAH_ROOT", root.path()));
        let last = out.lines().last().expect("a last line");
        let mut words = last.split_whitespace();
        assert_eq!(words.next(), Some("built"), "{out}");
        let tag = words.next().expect("tag").to_owned();
        let container = buildah(root.path(), &["from", "--quiet", &tag]);
        let rootfs = PathBuf::from(buildah(root.path(), &["mount", &container]));
        Self {
            root,
            tag,
            container,
            rootfs,
        }
    }

    fn config(&self) -> Value {
        let json = buildah(self.root.path(), &["inspect", "--type", "image", &self.tag]);
        let v: Value = serde_json::from_str(&json).expect("inspect JSON");
        v["OCIv1"]["config"].clone()
    }

    /// Runs a command in the image's root file system as the image's user.
    fn exec(&self, user: &str, args: &[&str]) -> String {
        run(Command::new("/usr/sbin/chroot")
            .arg(format!("--userspec={user}"))
            .arg(&self.rootfs)
            .args(args)
            .env_clear()
            .env("HOME", "/home/nonroot"))
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let base = |args: &[&str]| {
            let _ = buildah_cmd(self.root.path()).args(args).output();
        };
        base(&["umount", &self.container]);
        base(&["rm", &self.container]);
        base(&["rmi", "--all", "--force"]);
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[test]
fn the_redis_operator_image_is_the_one_the_newest_csv_names_and_its_binary_runs_inside_as_nonroot() {
    if !support::tool_available("buildah", "buildah") {
        return;
    }
    let binary = env!("CARGO_BIN_EXE_redis-operator");
    let image = Image::build("redis-operator", binary);

    // The tag is the image the newest (non-prerelease) CSV deploys.
    let mut versions: Vec<semver::Version> = std::fs::read_dir(repo().join("bundles/redis-operator"))
        .expect("bundles")
        .filter_map(|e| semver::Version::parse(&e.ok()?.file_name().to_string_lossy()).ok())
        .filter(|v| v.pre.is_empty())
        .collect();
    versions.sort();
    let newest = versions.last().expect("a release");
    let csv = std::fs::read_to_string(
        repo()
            .join("bundles/redis-operator")
            .join(newest.to_string())
            .join("manifests/redis-operator.clusterserviceversion.yaml"),
    )
    .expect("newest CSV");
    assert_eq!(image.tag, format!("ghcr.io/olm-rs/redis-operator:{newest}"));
    assert!(
        csv.contains(&format!("image: \"{}\"", image.tag)),
        "the CSV of {newest} deploys {}",
        image.tag
    );

    let config = image.config();
    assert_eq!(strings(&config["Entrypoint"]), ["/usr/local/bin/redis-operator"]);
    assert_eq!(strings(&config["Cmd"]), ["run"]);
    assert_eq!(config["User"], "65532:65532");
    assert!(config["ExposedPorts"].get("8080/tcp").is_some(), "{config}");

    // Same binary, same answers, inside the image as its user (libraries, loader and paths present).
    let host = run(Command::new(binary).arg("--version"));
    assert_eq!(
        image.exec("65532:65532", &["/usr/local/bin/redis-operator", "--version"]),
        host
    );
    let host_crd = run(Command::new(binary).arg("crd"));
    assert_eq!(
        image.exec("65532:65532", &["/usr/local/bin/redis-operator", "crd"]),
        host_crd
    );
}

#[test]
fn the_olm_controller_image_is_the_one_the_deployment_names_and_carries_the_builtin_catalog() {
    if !support::tool_available("buildah", "buildah") {
        return;
    }
    let binary = env!("CARGO_BIN_EXE_olm-controller");
    let image = Image::build("olm-controller", binary);

    let deployment =
        std::fs::read_to_string(repo().join("manifests/deployment.yaml")).expect("deployment.yaml");
    assert!(
        deployment.contains(&format!("image: {}", image.tag)),
        "manifests/deployment.yaml runs {}",
        image.tag
    );

    let config = image.config();
    assert_eq!(strings(&config["Entrypoint"]), ["/usr/local/bin/olm-controller"]);
    let cmd = strings(&config["Cmd"]);
    assert_eq!(cmd.first().map(String::as_str), Some("run"));
    let catalog_flag = cmd
        .iter()
        .position(|a| a == "--builtin-catalog")
        .expect("--builtin-catalog");
    assert_eq!(cmd[catalog_flag + 1], "/catalog");
    assert_eq!(config["User"], "65532:65532");

    // The catalog the Deployment serves is in the image, file for file.
    let mut want: Vec<(String, Vec<u8>)> = Vec::new();
    collect(&repo().join("catalog"), &repo().join("catalog"), &mut want);
    let mut got: Vec<(String, Vec<u8>)> = Vec::new();
    collect(
        &image.rootfs.join("catalog"),
        &image.rootfs.join("catalog"),
        &mut got,
    );
    assert!(!want.is_empty());
    assert_eq!(got, want, "/catalog in the image matches catalog/");

    let host = run(Command::new(binary).arg("crds"));
    assert_eq!(
        image.exec("65532:65532", &["/usr/local/bin/olm-controller", "crds"]),
        host
    );
}

fn collect(base: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(base, &path, out);
        } else {
            let rel = path.strip_prefix(base).expect("prefix").display().to_string();
            out.push((rel, std::fs::read(&path).expect("read")));
        }
    }
}
