//! The Dockerfiles build the images the manifests name, and the binaries run inside them.
//!
//! `scripts/build-image` builds each image with buildah (no Docker daemon) from its Dockerfile,
//! with the `build` stage replaced by the binary cargo built for this test run and, where gcr.io is
//! unreachable, distroless/cc replaced by the same Debian 12 libraries taken from the host. The
//! test then reads the image's configuration (entrypoint, command, user, port), mounts its root
//! file system and runs the binary in it with `chroot` as the image's user, so a missing library,
//! a wrong path or a file the image forgot fails here. Without buildah the test is skipped, unless
//! `CI=true`, where it fails.

use std::process::Command;

use crate::support::cluster::repo_root as repo;

use crate::support::image::{Image, collect, run, strings};

#[test]
fn the_olm_controller_image_is_the_one_the_deployment_names_and_carries_the_builtin_catalog() {
    if !crate::support::tool_available("buildah", "buildah") {
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
