//! The Dockerfiles build the images the manifests name, and the binaries run inside them.
//!
//! `scripts/build-image` builds each image with buildah (no Docker daemon) from its Dockerfile,
//! with the `build` stage replaced by the binary cargo built for this test run and, where gcr.io is
//! unreachable, distroless/cc replaced by the same Debian 12 libraries taken from the host. The
//! test then reads the image's configuration (entrypoint, command, user, port), mounts its root
//! file system and runs the binary in it with `chroot` as the image's user, so a missing library,
//! a wrong path or a file the image forgot fails here. Without buildah the test is skipped, unless
//! `CI=true`, where it fails.

use olm_test_support as support;

use std::process::Command;

use support::cluster::repo_root as repo;
use support::image::{Image, run, strings};

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
        csv.contains(&format!("image: {}\n", image.tag))
            || csv.contains(&format!("image: \"{}\"", image.tag)),
        "the CSV of {newest} deploys {}",
        image.tag
    );

    let config = image.config();
    assert_eq!(strings(&config["Entrypoint"]), ["/usr/local/bin/redis-operator"]);
    assert_eq!(strings(&config["Cmd"]), ["run"]);
    assert_eq!(config["User"], "65532:65532");
    assert!(config["ExposedPorts"].get("8080/tcp").is_some(), "{config}");
    // The TLS webhooks (/convert, /validate) of the CSVs with webhookdefinitions.
    assert!(config["ExposedPorts"].get("9443/tcp").is_some(), "{config}");

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
