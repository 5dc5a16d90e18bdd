//! Runs the built `kubectl-olm` binary and snapshots what a user sees: the command, the exit code,
//! stdout and stderr. Catalog verbs run against `./catalog` (the shipped Redis operator catalog) and
//! the small fixture catalogs under `tests/fixtures/cli/`.
//!
//! Accept new or changed snapshots with `INSTA_UPDATE=always cargo test --test cli`, then review
//! the `.snap` files under `tests/snapshots/` before committing.

use std::{path::Path, process::Command};

const DEMO_BUNDLE: &str = "tests/fixtures/cli/bundles/demo-operator/0.1.0";

/// Runs `kubectl-olm ARGS` from the repository root and returns a transcript.
fn run(args: &[&str]) -> String {
    run_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

fn run_in(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("the binary runs");
    let code = output
        .status
        .code()
        .map_or_else(|| "killed by a signal".to_string(), |c| c.to_string());
    format!(
        "$ kubectl-olm {}\nexit code: {code}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    )
}

fn exit_code(transcript: &str) -> &str {
    transcript
        .lines()
        .nth(1)
        .and_then(|l| l.strip_prefix("exit code: "))
        .unwrap_or("?")
}

/// Snapshot of `kubectl-olm ARGS`, named after the arguments.
macro_rules! snap {
    ($name:literal, [$($arg:expr),* $(,)?]) => {{
        let transcript = run(&[$($arg),*]);
        insta::assert_snapshot!($name, transcript);
        transcript
    }};
}

const FORMATS: [&str; 5] = ["table", "wide", "json", "yaml", "name"];

// ---------------------------------------------------------------------------------------- render

#[test]
fn render_prints_an_olm_bundle_yaml_document_per_bundle_directory() {
    let t = snap!("render_yaml", ["catalog", "render", DEMO_BUNDLE]);
    assert_eq!(exit_code(&t), "0");
}

#[test]
fn render_prints_a_json_stream_with_output_json() {
    let t = snap!("render_json", ["catalog", "render", DEMO_BUNDLE, "-o", "json"]);
    assert_eq!(exit_code(&t), "0");
}

#[test]
fn render_prints_bundle_names_with_output_name() {
    let t = snap!("render_name", ["catalog", "render", DEMO_BUNDLE, "-o", "name"]);
    assert_eq!(exit_code(&t), "0");
}

#[test]
fn render_rejects_a_bundle_with_an_unsupported_kind_naming_the_file() {
    let t = snap!(
        "render_bad_kind",
        [
            "catalog",
            "render",
            "tests/fixtures/cli/bundles/demo-operator/bad-kind"
        ]
    );
    assert_eq!(exit_code(&t), "1");
}

#[test]
fn render_of_a_missing_directory_fails_with_the_fix() {
    let t = snap!(
        "render_missing_dir",
        ["catalog", "render", "tests/fixtures/cli/bundles/nope"]
    );
    assert_eq!(exit_code(&t), "1");
}

// ------------------------------------------------------------------------------ usage, completion

#[test]
fn an_unknown_verb_is_bad_usage_with_exit_code_2() {
    let t = snap!("usage_unknown_verb", ["catalog", "pakages"]);
    assert_eq!(exit_code(&t), "2");
}

#[test]
fn an_unknown_output_format_is_bad_usage_with_exit_code_2() {
    let t = snap!("usage_unknown_output", ["catalog", "packages", "-o", "xml"]);
    assert_eq!(exit_code(&t), "2");
}

#[test]
fn upgrade_path_without_from_is_bad_usage() {
    let t = snap!(
        "usage_upgrade_path_without_from",
        ["catalog", "upgrade-path", "redis-operator"]
    );
    assert_eq!(exit_code(&t), "2");
}

#[test]
fn every_verb_has_help_with_examples() {
    for verb in [
        "packages",
        "channels",
        "bundles",
        "describe",
        "graph",
        "upgrade-path",
        "validate",
        "render",
    ] {
        let t = run(&["catalog", verb, "--help"]);
        assert_eq!(exit_code(&t), "0", "{t}");
        assert!(
            t.contains("Examples:"),
            "catalog {verb} --help has no examples:\n{t}"
        );
    }
    for verb in ["completion", "version"] {
        let t = run(&[verb, "--help"]);
        assert!(t.contains("Examples:"), "{verb} --help has no examples:\n{t}");
    }
}

#[test]
fn completion_bash_prints_a_completion_function() {
    let t = run(&["completion", "bash"]);
    assert_eq!(exit_code(&t), "0");
    assert!(
        t.contains("_kubectl-olm()") || t.contains("_kubectl__olm()"),
        "{t}"
    );
    assert!(
        t.contains("upgrade-path"),
        "the script completes the catalog verbs"
    );
    for shell in ["zsh", "fish"] {
        let t = run(&["completion", shell]);
        assert_eq!(exit_code(&t), "0");
        assert!(t.contains("upgrade-path"));
    }
}

#[test]
fn version_prints_the_crate_version_in_every_format() {
    for format in FORMATS {
        let t = run(&["version", "-o", format]);
        assert_eq!(exit_code(&t), "0");
        assert!(t.contains(env!("CARGO_PKG_VERSION")), "{t}");
    }
}
