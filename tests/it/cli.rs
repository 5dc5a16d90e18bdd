//! Runs the built `kubectl-olm` binary and snapshots what a user sees: the command, the exit code,
//! stdout and stderr. Catalog verbs run against `./catalog` (the shipped Redis operator catalog) and
//! the small fixture catalogs under `tests/fixtures/cli/`.
//!
//! Accept new or changed snapshots with `INSTA_UPDATE=always cargo test --test it cli::`, then review
//! the `.snap` files under `tests/it/snapshots/` before committing.

use std::{path::Path, process::Command};

const TINY: &str = "tests/fixtures/cli/catalogs/tiny";
const INVALID: &str = "tests/fixtures/cli/catalogs/invalid";
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

/// Snapshots `kubectl-olm ARGS -o FORMAT` for every format, named `{name}_{format}`; returns the
/// transcripts.
fn snap_formats(name: &str, args: &[&str]) -> Vec<String> {
    FORMATS
        .iter()
        .map(|format| {
            let mut all = args.to_vec();
            all.extend(["-o", format]);
            let transcript = run(&all);
            insta::assert_snapshot!(format!("{name}_{format}"), transcript);
            transcript
        })
        .collect()
}

fn all_succeed(transcripts: &[String]) {
    for t in transcripts {
        assert_eq!(exit_code(t), "0", "{t}");
    }
}

// ------------------------------------------------------------------- the shipped catalog, ./catalog

#[test]
fn packages_lists_the_shipped_catalog_in_every_format() {
    all_succeed(&snap_formats("packages", &["catalog", "packages"]));
}

#[test]
fn channels_lists_heads_entries_and_the_default_in_every_format() {
    let t = snap_formats("channels", &["catalog", "channels", "redis-operator"]);
    all_succeed(&t);
    let json: serde_json::Value = serde_json::from_str(
        t[2].split("--- stdout\n")
            .nth(1)
            .unwrap()
            .split("--- stderr")
            .next()
            .unwrap(),
    )
    .unwrap();
    let stable = json["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "stable")
        .unwrap();
    assert_eq!(stable["default"], true);
    assert_eq!(stable["head"], "redis-operator.v1.0.0");
}

#[test]
fn bundles_lists_every_bundle_with_its_edges_in_every_format() {
    all_succeed(&snap_formats(
        "bundles",
        &["catalog", "bundles", "redis-operator"],
    ));
}

#[test]
fn bundles_of_one_channel_show_that_channels_edges() {
    all_succeed(&snap_formats(
        "bundles_channel_stable",
        &["catalog", "bundles", "redis-operator", "--channel", "stable"],
    ));
}

#[test]
fn describe_shows_channels_install_modes_crds_maintainers_and_links_in_every_format() {
    all_succeed(&snap_formats(
        "describe",
        &["catalog", "describe", "redis-operator"],
    ));
}

#[test]
fn graph_draws_the_default_channel_in_every_format() {
    all_succeed(&snap_formats("graph", &["catalog", "graph", "redis-operator"]));
}

#[test]
fn graph_draws_dot_and_mermaid() {
    for drawing in ["dot", "mermaid"] {
        let t = run(&[
            "catalog",
            "graph",
            "redis-operator",
            "--channel",
            "alpha",
            "--format",
            drawing,
        ]);
        assert_eq!(exit_code(&t), "0");
        insta::assert_snapshot!(format!("graph_alpha_{drawing}"), t);
    }
}

#[test]
fn upgrade_path_from_the_tail_lists_every_hop_with_its_edge_in_every_format() {
    all_succeed(&snap_formats(
        "upgrade_path_from_tail",
        &[
            "catalog",
            "upgrade-path",
            "redis-operator",
            "--from",
            "0.1.0",
            "--channel",
            "alpha",
        ],
    ));
}

#[test]
fn upgrade_path_from_the_middle_of_the_default_channel() {
    let t = snap!(
        "upgrade_path_from_middle",
        ["catalog", "upgrade-path", "redis-operator", "--from", "0.3.0"]
    );
    assert_eq!(exit_code(&t), "0");
    let t = snap!(
        "upgrade_path_from_middle_json",
        [
            "catalog",
            "upgrade-path",
            "redis-operator",
            "--from",
            "redis-operator.v0.3.0",
            "-o",
            "json"
        ]
    );
    assert!(
        t.contains("\"edge\": \"replaces\""),
        "the explicit edge explains the hop: {t}"
    );
}

#[test]
fn upgrade_path_at_the_head_says_already_up_to_date() {
    let t = snap!(
        "upgrade_path_at_head",
        ["catalog", "upgrade-path", "redis-operator", "--from", "1.0.0"]
    );
    assert!(t.contains("already up to date"));
    let t = snap!(
        "upgrade_path_at_head_json",
        [
            "catalog",
            "upgrade-path",
            "redis-operator",
            "--from",
            "1.0.0",
            "-o",
            "json"
        ]
    );
    assert!(t.contains("\"hops\": []"), "{t}");
}

#[test]
fn upgrade_path_from_an_unknown_version_fails_naming_the_versions() {
    let t = snap!(
        "upgrade_path_unknown_version",
        ["catalog", "upgrade-path", "redis-operator", "--from", "9.9.9"]
    );
    assert_eq!(exit_code(&t), "1");
}

#[test]
fn upgrade_path_from_a_removed_version_inside_a_skip_range_takes_the_range() {
    let t = snap!(
        "upgrade_path_skip_range_only",
        [
            "catalog",
            "upgrade-path",
            "memcached-operator",
            "--from",
            "0.3.5",
            "--catalog",
            TINY
        ]
    );
    assert_eq!(exit_code(&t), "0");
    assert!(t.contains("skipRange"));
}

#[test]
fn validate_passes_the_shipped_catalog_in_every_format() {
    all_succeed(&snap_formats("validate", &["catalog", "validate"]));
}

// ------------------------------------------------------------------------------- failing lookups

#[test]
fn an_unknown_package_fails_listing_the_packages() {
    let t = snap!("unknown_package", ["catalog", "channels", "redis"]);
    assert_eq!(exit_code(&t), "1");
    assert!(t.contains("error: package \"redis\" not found in catalog ./catalog; packages: redis-operator"));
}

#[test]
fn an_unknown_channel_fails_listing_the_channels_and_the_default() {
    let t = snap!(
        "unknown_channel",
        ["catalog", "bundles", "redis-operator", "--channel", "stabel"]
    );
    assert_eq!(exit_code(&t), "1");
    assert!(t.contains("error: channel \"stabel\" not found in package redis-operator; channels: alpha, candidate, stable (default)"));
}

#[test]
fn a_missing_catalog_directory_fails_with_the_fix() {
    let t = snap!(
        "missing_catalog",
        ["catalog", "packages", "--catalog", "no/such/dir"]
    );
    assert_eq!(exit_code(&t), "1");
}

// --------------------------------------------------------------------------- fixture catalogs

#[test]
fn packages_of_a_catalog_mixing_yaml_and_json_files() {
    all_succeed(&snap_formats(
        "tiny_packages",
        &["catalog", "packages", "--catalog", TINY],
    ));
}

#[test]
fn validate_reports_every_problem_of_an_invalid_catalog_as_a_tree_and_exits_1() {
    for t in snap_formats("validate_invalid", &["catalog", "validate", INVALID]) {
        assert_eq!(exit_code(&t), "1", "{t}");
    }
}

#[test]
fn an_empty_catalog_says_no_resources_found_on_stderr() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().to_str().unwrap();
    let t = run(&["catalog", "packages", "--catalog", dir]);
    assert_eq!(exit_code(&t), "0");
    assert!(t.ends_with("--- stdout\n--- stderr\nNo resources found\n"), "{t}");
    let t = run(&["catalog", "packages", "--catalog", dir, "-o", "json"]);
    assert!(t.contains("\"items\": []"), "an empty List in JSON: {t}");
    let t = run(&["catalog", "packages", "--catalog", dir, "-o", "name"]);
    assert!(t.ends_with("No resources found\n"), "{t}");
}

#[test]
fn output_piped_into_a_closed_pipe_exits_quietly() {
    use std::{io::Read, process::Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-olm"))
        .args(["completion", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "exit status {status}, stderr {err}");
    assert!(err.is_empty(), "nothing on stderr: {err}");
}

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
