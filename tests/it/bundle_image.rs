//! Bundle images as the controller pulls them for an InstallPlan, against a real registry
//! (Debian's `docker-registry` on a loopback port, `crates/test-support/src/registry.rs`), with
//! no cluster.
//!
//! Every Redis operator bundle of `bundles/redis-operator` is pushed as `bundle push` pushes it;
//! the controller's bundle puller (`controller::image_puller`, [`BundlePull`]) pulls it in the
//! background into the digest cache, and its manifests must be those the catalog inlines for the
//! same bundle directory (`olm.bundle.object`), so the InstallPlan steps are the same (steps are
//! a pure function of the manifests: `plan::subscription` unit tests check an image bundle's
//! plan against the inlined one's). A second
//! puller on the same cache reads the bundle without pulling layers. A missing tag stays a
//! retryable error naming the image; a catalog image is refused at once as no bundle (a content
//! error: the lookup fails without waiting for the unpack timeout). Without the registry the
//! tests are skipped, unless `CI=true`, where they fail.

// Test helpers outside #[test] functions: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use crate::support::{
    cluster::repo_root as repo,
    registry::{Registry, scratch},
};
use base64::Engine as _;
use olm_rs::{
    controller::image_puller::{BundlePull, ImagePlan, ImagePuller, PulledBundle, View},
    oci,
};
use serde_json::Value;

/// A plain registry, a scratch home and options reaching the registry with a cache in that home;
/// `None` when the registry is not installed.
fn setup() -> Option<(Registry, tempfile::TempDir, oci::Options)> {
    if !crate::support::registry::available() {
        return None;
    }
    let registry = Registry::plain();
    let home = scratch();
    let options = oci::Options {
        insecure: vec![registry.addr.clone()],
        cache_dir: home.path().join("cache"),
        ..oci::Options::default()
    };
    Some((registry, home, options))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A client that is never called: the bundles need no pull Secrets.
fn unused_client() -> kube::Client {
    let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

fn bundle_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(repo().join("bundles/redis-operator"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 4, "{dirs:?}");
    dirs
}

/// The manifests a catalog inlines for the bundle directory (`olm.bundle.object`, decoded).
fn inlined_objects(dir: &Path) -> Vec<Value> {
    let tree = olm_rs::source::bundle::read_tree(dir).unwrap();
    let rendered = olm_rs::bundle::Bundle::parse(&tree).unwrap().render();
    rendered["properties"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "olm.bundle.object")
        .map(|p| {
            let data = p["value"]["data"].as_str().unwrap();
            let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
            serde_json::from_slice(&bytes).unwrap()
        })
        .collect()
}

fn request(image: &str) -> ImagePlan {
    ImagePlan {
        image: image.to_owned(),
        secrets: Vec::new(),
        poll: None,
        interval_problem: None,
    }
}

/// Starts a pull of `image` and waits (at most 60 s) until it has finished.
async fn pull(puller: &ImagePuller<BundlePull>, image: &str) -> View<PulledBundle> {
    let key = ("olm".to_owned(), image.to_owned());
    let plan = request(image);
    let view = puller.view(&key, &plan);
    assert!(view.served.is_none() && view.first_attempt.is_none());
    assert!(puller.start(&key, &plan, unused_client()), "a first pull starts");
    for _ in 0..600 {
        let view = puller.view(&key, &plan);
        if !view.pulling {
            return view;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the pull of {image} did not finish in 60 s");
}

#[test]
fn a_pushed_bundle_image_is_pulled_in_the_background_into_the_steps_of_the_inlined_bundle() {
    let Some((registry, home, options)) = setup() else {
        return;
    };
    let pusher = oci::Registry::new(options.clone()).unwrap();
    let rt = runtime();
    let mut images = Vec::new();
    for dir in bundle_dirs() {
        let version = dir.file_name().unwrap().to_string_lossy().into_owned();
        let image = registry.image(&format!("olm/redis-operator-bundle:v{version}"));
        rt.block_on(pusher.push_bundle(&dir, &oci::ImageRef::parse(&image).unwrap()))
            .unwrap();
        images.push((dir, image));
    }

    let puller: ImagePuller<BundlePull> = ImagePuller::new(options.clone(), 2);
    for (dir, image) in &images {
        let view = rt.block_on(pull(&puller, image));
        assert_eq!(view.last_error, None, "{image}");
        let pulled = view.served.as_ref().expect("pulled");
        assert!(pulled.digest.starts_with("sha256:"), "{}", pulled.digest);
        let want = inlined_objects(dir);
        assert_eq!(
            *pulled.manifests, want,
            "{image}: the manifests the catalog would inline"
        );
        // The steps are a pure function of the manifests (the InstallPlan unit tests check
        // that pulled manifests give the inlined bundle's steps and a bundleLookups entry).
        assert!(
            view.first_attempt.is_none(),
            "a success closes the attempt window"
        );
    }

    // Another puller (a restarted controller) on the same cache: by digest, no layer pulled.
    let entries = std::fs::read_dir(home.path().join("cache/sha256"))
        .unwrap()
        .count();
    let again: ImagePuller<BundlePull> = ImagePuller::new(options, 1);
    let (dir, image) = &images[0];
    let view = rt.block_on(pull(&again, image));
    assert_eq!(*view.served.unwrap().manifests, inlined_objects(dir));
    assert_eq!(
        std::fs::read_dir(home.path().join("cache/sha256"))
            .unwrap()
            .count(),
        entries
    );
}

#[test]
fn a_missing_bundle_image_is_retried_and_a_catalog_image_fails_the_lookup_at_once() {
    let Some((registry, _home, options)) = setup() else {
        return;
    };
    let rt = runtime();
    let puller: ImagePuller<BundlePull> = ImagePuller::new(options.clone(), 1);

    let missing = registry.image("olm/nothing-here:v1");
    let view = rt.block_on(pull(&puller, &missing));
    let error = view.last_error.clone().expect("an error");
    assert!(error.contains(&format!("image {missing} not found")), "{error}");
    assert!(
        !view.last_error_fatal,
        "a missing tag is retried until the unpack timeout"
    );
    assert!(view.first_attempt.is_some(), "the attempt window stays open");

    // A catalog image is no bundle: a content error, failed at once.
    let catalog = registry.image("olm/catalog:v1");
    let pusher = oci::Registry::new(options).unwrap();
    rt.block_on(pusher.push_catalog(&repo().join("catalog"), &oci::ImageRef::parse(&catalog).unwrap()))
        .unwrap();
    let view = rt.block_on(pull(&puller, &catalog));
    let error = view.last_error.clone().expect("an error");
    assert!(
        error.contains(&format!("image {catalog} is not a registry+v1 bundle image")),
        "{error}"
    );
    assert!(view.last_error_fatal, "a content error fails the lookup at once");
}
