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

#[test]
fn the_webhook_csvs_decode_as_olm_reads_them_with_their_webhooks_and_only_all_namespaces() {
    use olm_rs::api::v1alpha1::{ClusterServiceVersion, WebhookAdmissionType};
    for version in ["1.1.0", "1.2.0"] {
        let path = bundles_dir()
            .join(version)
            .join("manifests/redis-operator.clusterserviceversion.yaml");
        let text = std::fs::read_to_string(&path).expect("read CSV");
        let csv: ClusterServiceVersion =
            olm_rs::api::from_yaml_str(&path.display().to_string(), &text).expect("a CSV OLM accepts");
        let hooks = &csv.spec.webhook_definitions;
        assert_eq!(hooks.len(), 2, "{version}");
        assert_eq!(hooks[0].type_, WebhookAdmissionType::ConversionWebhook);
        assert_eq!(hooks[0].conversion_crds, ["redisclusters.cache.example.com"]);
        assert_eq!(hooks[0].webhook_path.as_deref(), Some("/convert"));
        assert_eq!(hooks[1].type_, WebhookAdmissionType::ValidatingAdmissionWebhook);
        assert_eq!(hooks[1].webhook_path.as_deref(), Some("/validate"));
        assert!(
            hooks
                .iter()
                .all(|h| h.deployment_name.as_deref() == Some("redis-operator"))
        );
        // Upstream installs a CSV with a conversion webhook only when AllNamespaces is its only mode.
        let supported: Vec<String> = csv
            .spec
            .install_modes
            .iter()
            .filter(|m| m.supported)
            .map(|m| m.type_.to_string())
            .collect();
        assert_eq!(supported, ["AllNamespaces"], "{version}");
    }
}
