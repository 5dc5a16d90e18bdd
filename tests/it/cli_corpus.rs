//! Runs every catalog verb of the built `kubectl-olm` against the real public catalogs of the shared
//! corpus (large-fbc, v4.16, v4.20), in every output format, asserting exit codes, non-empty and
//! well-formed output, and no panic; and checks that `validate` reports the problems the real
//! catalogs contain.
//!
//! The archives are unpacked into `<repo>/target/corpus` on first use. Without the corpus the tests
//! print why they skip, unless `CI=true`, where a missing corpus fails them.
//!
//! Loading a whole corpus catalog with a debug binary takes tens of seconds, so the verb × format
//! matrix runs on a sub-catalog of three real packages per corpus catalog (the first, middle and
//! last package directory by name: one package per directory, as opm lays catalogs out), and the
//! whole catalogs are loaded once each by `packages` and `validate`.

// Test helpers outside #[test] functions: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::Value;

const FORMATS: [&str; 5] = ["table", "wide", "json", "yaml", "name"];

fn corpus(name: &str) -> Option<PathBuf> {
    crate::corpus::corpus_dir_for_test(name)
}

fn kubectl_olm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(args)
        .output()
        .expect("the binary runs")
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    line: String,
}

fn run(args: &[&str]) -> Run {
    let out = kubectl_olm(args);
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        line: format!("kubectl-olm {}", args.join(" ")),
    };
    assert!(
        !run.stderr.contains("panicked"),
        "{} panicked:\n{}",
        run.line,
        run.stderr
    );
    assert!(out.status.code().is_some(), "{} was killed by a signal", run.line);
    run
}

fn ok(args: &[&str]) -> Run {
    let r = run(args);
    assert_eq!(r.code, 0, "{} failed:\n{}", r.line, r.stderr);
    assert!(!r.stdout.trim().is_empty(), "{} printed nothing", r.line);
    r
}

fn json(args: &[&str]) -> Value {
    let r = ok(args);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{} printed invalid JSON: {e}", r.line))
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A catalog of the first, middle and last package directories of `dir`.
fn sub_catalog(dir: &Path) -> (tempfile::TempDir, Vec<String>) {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let picked: Vec<String> = [0, names.len() / 2, names.len() - 1]
        .iter()
        .map(|&i| names[i].clone())
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    for name in &picked {
        copy_dir(&dir.join(name), &tmp.path().join(name));
    }
    (tmp, picked)
}

/// Every verb in every format on every package of the sub-catalog of `name`.
fn every_verb_on(name: &str) {
    let Some(dir) = corpus(name) else { return };
    let (tmp, _) = sub_catalog(&dir);
    let cat = tmp.path().to_str().unwrap().to_string();
    let c = ["--catalog", cat.as_str()];

    let packages = json(&["catalog", "packages", "-o", "json", c[0], c[1]]);
    let items = packages["items"].as_array().expect("packages -o json is a List");
    assert!(!items.is_empty(), "{name}: the sub-catalog has packages");
    for format in FORMATS {
        ok(&["catalog", "packages", "-o", format, c[0], c[1]]);
    }

    for item in items {
        let pkg = item["name"].as_str().unwrap();
        let channels = json(&["catalog", "channels", pkg, "-o", "json", c[0], c[1]]);
        let channel_items = channels["items"].as_array().unwrap();
        assert!(!channel_items.is_empty(), "{name}/{pkg} has channels");
        for ch in channel_items {
            assert!(
                ch["name"].is_string() && ch.get("head").is_some() && ch["default"].is_boolean(),
                "{ch}"
            );
        }
        let first_channel = channel_items[0]["name"].as_str().unwrap();
        for format in FORMATS {
            ok(&["catalog", "channels", pkg, "-o", format, c[0], c[1]]);
            ok(&["catalog", "bundles", pkg, "-o", format, c[0], c[1]]);
            ok(&[
                "catalog",
                "bundles",
                pkg,
                "--channel",
                first_channel,
                "-o",
                format,
                c[0],
                c[1],
            ]);
            ok(&["catalog", "describe", pkg, "-o", format, c[0], c[1]]);
            ok(&[
                "catalog",
                "graph",
                pkg,
                "--channel",
                first_channel,
                "-o",
                format,
                c[0],
                c[1],
            ]);
        }
        for drawing in ["text", "dot", "mermaid"] {
            ok(&[
                "catalog",
                "graph",
                pkg,
                "--channel",
                first_channel,
                "--format",
                drawing,
                c[0],
                c[1],
            ]);
        }

        // Upgrade path from the tail of the channel's order (the oldest installable entry) to the head.
        let order = ok(&[
            "catalog",
            "graph",
            pkg,
            "--channel",
            first_channel,
            "-o",
            "name",
            c[0],
            c[1],
        ]);
        let tail = order
            .stdout
            .lines()
            .last()
            .unwrap()
            .trim_start_matches("bundle/")
            .to_string();
        let path = json(&[
            "catalog",
            "upgrade-path",
            pkg,
            "--from",
            &tail,
            "--channel",
            first_channel,
            "-o",
            "json",
            c[0],
            c[1],
        ]);
        assert_eq!(path["channel"], first_channel);
        for hop in path["hops"].as_array().unwrap() {
            assert!(hop["name"].is_string() && hop["version"].is_string(), "{hop}");
            assert!(
                ["replaces", "skips", "skipRange"].contains(&hop["edge"].as_str().unwrap()),
                "{hop}"
            );
        }
        for format in FORMATS {
            let r = run(&[
                "catalog",
                "upgrade-path",
                pkg,
                "--from",
                &tail,
                "--channel",
                first_channel,
                "-o",
                format,
                c[0],
                c[1],
            ]);
            assert_eq!(r.code, 0, "{}: {}", r.line, r.stderr);
        }
    }
}

#[test]
fn every_verb_answers_on_real_packages_of_community_operators_v4_20() {
    every_verb_on("v4.20");
}

#[test]
fn every_verb_answers_on_real_packages_of_certified_operators_v4_16() {
    every_verb_on("v4.16");
}

#[test]
fn every_verb_answers_on_real_packages_of_large_fbc() {
    every_verb_on("large-fbc");
}

#[test]
fn packages_lists_every_package_of_the_whole_real_catalogs() {
    for (name, count) in [("v4.20", 37), ("v4.16", 52)] {
        let Some(dir) = corpus(name) else { return };
        let list = json(&[
            "catalog",
            "packages",
            "-o",
            "json",
            "--catalog",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(list["kind"], "List");
        assert_eq!(
            list["items"].as_array().unwrap().len(),
            count,
            "{name} has {count} packages (corpus README)"
        );
    }
}

#[test]
fn validate_reports_the_problems_large_fbc_contains() {
    let Some(dir) = corpus("large-fbc") else { return };
    let r = run(&["catalog", "validate", dir.to_str().unwrap(), "-o", "json"]);
    assert_eq!(
        r.code, 1,
        "large-fbc is invalid, so validate exits 1:\n{}",
        r.stderr
    );
    assert!(r.stderr.starts_with("error: catalog "), "{}", r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["passed"], false);
    let errors = report["errors"].as_array().unwrap();
    let about = |pkg: &str, text: &str| {
        errors
            .iter()
            .any(|e| e["package"] == pkg && e["message"].as_str().unwrap().contains(text))
    };
    // Problems found by reading the catalog files, each of which `opm validate` rejects too.
    assert!(
        about("kuadrant-operator", "invalid image pull spec \"oci://"),
        "oci:// related image"
    );
    assert!(about("sosivio", "invalid digest"), "empty digest after @");
    assert!(about("planetscale", "invalid icon"), "icon that is not base64");
    // An icon whose base64 ends with a space: Go's decoder skips only line breaks.
    assert!(
        about("azure-service-operator", "invalid icon"),
        "base64 with a trailing space"
    );
    // lightbits-operator's properties carry an explicit `"value": null`, which opm accepts
    // (it refuses only a missing `value`; tests/it/opm_oracle.rs), so it is not a problem.
    assert!(
        !about("lightbits-operator", "value must be set"),
        "an explicit null value is accepted, as opm accepts it"
    );
    for e in errors {
        assert!(
            e["file"].as_str().unwrap().starts_with(dir.to_str().unwrap()),
            "every problem names its file: {e}"
        );
    }
}

#[test]
fn validate_passes_the_real_catalogs_without_problems() {
    for name in ["v4.20", "v4.16"] {
        let Some(dir) = corpus(name) else { return };
        let r = ok(&["catalog", "validate", dir.to_str().unwrap()]);
        assert!(r.stdout.contains("is valid"), "{}", r.stdout);
    }
}
