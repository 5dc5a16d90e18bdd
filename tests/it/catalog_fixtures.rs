//! Fixture catalogs: every directory under `tests/fixtures/catalogs/valid/` must validate, and every
//! directory under `tests/fixtures/catalogs/invalid/` must fail with the report recorded in its
//! snapshot (`tests/it/snapshots/catalog_fixtures__invalid_<case>.snap`). Adding a case is adding a
//! directory (and accepting its snapshot).

#![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

use std::path::{Path, PathBuf};

use olm_rs::{
    catalog::{DeclarativeConfig, validate},
    source,
};

/// Case directories of `kind` (`valid` or `invalid`), sorted, as paths relative to the package
/// root so that messages (and snapshots) do not depend on where the repository is checked out.
fn cases(kind: &str) -> Vec<(String, PathBuf)> {
    let base = Path::new("tests/fixtures/catalogs").join(kind);
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                base.join(e.file_name()),
            )
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no fixture cases under {}", base.display());
    out
}

#[test]
fn every_valid_fixture_catalog_passes_validation() {
    for (case, dir) in cases("valid") {
        let loaded = source::load_path(&dir).unwrap();
        let (model, report) = loaded.validate();
        assert!(report.passed(), "valid/{case} should pass:\n{report}");
        assert!(!model.is_empty(), "valid/{case} has no package");
        for pkg in model.packages() {
            let default = pkg
                .default_channel()
                .unwrap_or_else(|| panic!("valid/{case}: {} has no default", pkg.name));
            assert!(
                default.head().is_some(),
                "valid/{case}: {} default channel has no head",
                pkg.name
            );
        }
    }
}

#[test]
fn every_invalid_fixture_catalog_fails_with_the_recorded_report() {
    for (case, dir) in cases("invalid") {
        let loaded = source::load_path(&dir).unwrap();
        let (_, report) = loaded.validate();
        assert!(!report.passed(), "invalid/{case} should fail validation");
        insta::assert_snapshot!(format!("invalid_{case}"), report.to_string());
    }
}

#[test]
fn invalid_reports_serialize_for_json_output_with_file_and_location() {
    for (case, dir) in cases("invalid") {
        let (_, report) = source::load_path(&dir).unwrap().validate();
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["passed"], false, "{case}");
        let errors = json["errors"].as_array().unwrap();
        assert_eq!(errors.len(), report.len(), "{case}");
        for e in errors {
            let file = e["file"]
                .as_str()
                .unwrap_or_else(|| panic!("{case}: error without file: {e}"));
            assert!(file.starts_with(dir.to_str().unwrap()), "{case}: {file}");
            assert!(
                e["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{case}: {e}"
            );
        }
    }
}

/// Blobs without their origins, as JSON, to compare catalogs read from different files.
fn blobs(cfg: &DeclarativeConfig) -> Vec<serde_json::Value> {
    cfg.blobs()
        .iter()
        .map(|b| serde_json::to_value(b).unwrap())
        .collect()
}

#[test]
fn valid_fixtures_render_to_yaml_and_json_and_read_back_unchanged() {
    for (case, dir) in cases("valid") {
        let loaded = source::load_path(&dir).unwrap();
        assert!(loaded.problems.is_empty(), "{case}: {:?}", loaded.problems);
        let original = blobs(&loaded.config);
        for (name, text) in [
            ("render.yaml", loaded.config.to_yaml().unwrap()),
            ("render.json", loaded.config.to_json().unwrap()),
        ] {
            let again = source::load_str(name, &text);
            assert!(again.problems.is_empty(), "{case} {name}: {:?}", again.problems);
            assert_eq!(blobs(&again.config), original, "{case}: {name} differs");
            let (_, report) = validate(again.config);
            assert!(report.passed(), "{case} {name}:\n{report}");
        }
    }
}

#[test]
fn custom_schemas_are_kept_verbatim() {
    let loaded = source::load_path(Path::new("tests/fixtures/catalogs/valid/unknown-schema-kept")).unwrap();
    let others = &loaded.config.others;
    assert_eq!(others.len(), 2);
    assert_eq!(others[0].schema, "example.com.release-notes");
    assert_eq!(others[0].package, "etcd");
    assert_eq!(others[0].blob["notes"][0]["text"], "first release");
    let yaml = loaded.config.to_yaml().unwrap();
    assert!(yaml.contains("schema: example.com.release-notes"), "{yaml}");
}

#[test]
fn indexignore_files_leave_out_ignored_files_at_every_depth() {
    let dir = Path::new("tests/fixtures/catalogs/valid/mixed-files-with-indexignore");
    let files = source::dir::list_files(dir).unwrap();
    assert_eq!(files, vec!["etcd/bundles/v0.9.0.json", "etcd/package.yaml"]);
}

#[test]
fn the_linked_model_answers_the_questions_the_cli_asks() {
    let (model, report) = source::load_path(Path::new("tests/fixtures/catalogs/valid/multi-package"))
        .unwrap()
        .validate();
    assert!(report.passed(), "{report}");
    let names: Vec<_> = model.packages().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["etcd", "redis"]);
    let redis = model.package("redis").unwrap();
    assert_eq!(redis.latest_version(), Some(&semver::Version::new(0, 2, 0)));
    assert_eq!(redis.channel("stable").unwrap().head(), Some("redis.v0.2.0"));
    let v020 = redis.bundle_by_version(&semver::Version::new(0, 2, 0)).unwrap();
    assert_eq!(v020.required_packages()[0].package_name, "etcd");
    assert_eq!(v020.provided_gvks()[0].kind, "RedisCluster");
    let v010 = redis.bundle("redis.v0.1.0").unwrap();
    assert_eq!(v010.channels, vec!["alpha", "stable"]);
    assert_eq!(
        redis.channel_deprecation("alpha"),
        Some("alpha is no longer updated; use stable")
    );
    assert!(redis.bundle_deprecation("redis.v0.1.0").is_some());
    assert!(redis.deprecation_message().is_none());

    let (model, _) = source::load_path(Path::new(
        "tests/fixtures/catalogs/valid/inline-objects-and-csv-metadata",
    ))
    .unwrap()
    .validate();
    let redis = model.package("redis").unwrap();
    let inlined = redis.bundle("redis.v0.1.0").unwrap();
    assert_eq!(inlined.csv().unwrap()["metadata"]["name"], "redis.v0.1.0");
    assert_eq!(
        inlined.install_modes().len(),
        2,
        "install modes come from the inlined CSV"
    );
    assert_eq!(inlined.objects().len(), 2);
    let with_metadata = redis.bundle("redis.v0.2.0").unwrap();
    assert_eq!(with_metadata.owned_crds()[0].kind, "RedisCluster");
    assert_eq!(with_metadata.maintainers()[0].email, "redis@example.com");
    assert!(with_metadata.csv().is_none());
}
