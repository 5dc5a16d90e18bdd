//! Container images of the workspace's binaries, built the way `scripts/build-image` builds them
//! (buildah, no Docker daemon), mounted so a test can read their configuration and run the binary
//! inside as the image's user.
//!
//! The rule it enforces: an image test looks at the real image, file system and configuration, not
//! at the Dockerfile's text.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

use crate::cluster::repo_root as repo;

/// buildah with the test's own storage under `root`.
pub fn buildah_cmd(root: &Path) -> Command {
    let mut cmd = Command::new("buildah");
    cmd.arg("--root")
        .arg(root.join("storage"))
        .arg("--runroot")
        .arg(root.join("run"))
        .args(["--storage-driver", "vfs"]);
    cmd
}

/// Runs buildah against the test's own storage and returns its trimmed stdout.
pub fn buildah(root: &Path, args: &[&str]) -> String {
    run(buildah_cmd(root).args(args)).trim().to_owned()
}

/// Runs `cmd` and returns its stdout.
///
/// # Panics
/// When it fails, with its output.
pub fn run(cmd: &mut Command) -> String {
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
pub struct Image {
    /// buildah storage of this image alone.
    pub root: tempfile::TempDir,
    /// The image name it was tagged with.
    pub tag: String,
    /// The working container it is mounted in.
    pub container: String,
    /// The mounted root file system.
    pub rootfs: PathBuf,
}

impl Image {
    /// Builds image `name` (`redis-operator` or `olm-controller`) around `binary`.
    pub fn build(name: &str, binary: &str) -> Self {
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

    /// The image's OCI configuration.
    pub fn config(&self) -> Value {
        let json = buildah(self.root.path(), &["inspect", "--type", "image", &self.tag]);
        let v: Value = serde_json::from_str(&json).expect("inspect JSON");
        v["OCIv1"]["config"].clone()
    }

    /// Runs a command in the image's root file system as the image's user.
    pub fn exec(&self, user: &str, args: &[&str]) -> String {
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

/// The strings of a JSON array.
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// Every file below `dir`, with its path relative to `base`, sorted.
pub fn collect(base: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
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
