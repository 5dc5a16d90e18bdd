//! The checked-in Redis operator bundles are exactly what the operator's code renders.
//!
//! Regenerate with `cargo run -p redis-operator -- bundles --out bundles/redis-operator`.

use std::path::Path;

use redis_operator::{bundle::release, crd};

fn bundles_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../bundles/redis-operator"))
}

const REGENERATE: &str =
    "regenerate with: cargo run -p redis-operator -- bundles --out bundles/redis-operator";

#[test]
fn the_latest_bundle_ships_the_crd_generated_from_the_rust_type() {
    let on_disk =
        std::fs::read_to_string(bundles_dir().join("1.2.0/manifests/cache.example.com_redisclusters.yaml"))
            .expect("read latest CRD");
    assert_eq!(on_disk, crd::crd_yaml(), "{REGENERATE}");
}

#[test]
fn every_bundle_file_matches_its_rendering() {
    for r in release::RELEASES {
        for (path, text) in r.files() {
            let file = bundles_dir().join(r.version).join(&path);
            let on_disk =
                std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert_eq!(on_disk, text, "{} is out of date; {REGENERATE}", file.display());
        }
    }
}

#[test]
fn the_channel_file_matches_its_rendering() {
    let on_disk = std::fs::read_to_string(bundles_dir().join("channels.yaml")).expect("read channels.yaml");
    assert_eq!(on_disk, release::channels_yaml(), "{REGENERATE}");
}

#[test]
fn there_is_one_bundle_directory_per_release_and_nothing_else() {
    let mut dirs: Vec<String> = std::fs::read_dir(bundles_dir())
        .expect("list bundles")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    let mut want: Vec<String> = release::RELEASES.iter().map(|r| r.version.to_owned()).collect();
    want.sort();
    assert_eq!(dirs, want);
}
