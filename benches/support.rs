//! Shared by `benches/*.rs` and `tests/it/cli_corpus.rs`: finding (and unpacking) the real catalogs of
//! the shared corpus, reading a catalog directory into memory, generating a synthetic catalog, and
//! validating a config.
#![allow(dead_code)]

use std::{
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use olm_rs::catalog::declcfg::DeclarativeConfig;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where the corpus archives live: `$OLM_CORPUS` if set, else `../shared/corpus` next to the
/// repository, else `/work/shared/corpus`.
pub fn corpus_archives() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("OLM_CORPUS").map(PathBuf::from),
        Some(repo_root().join("../shared/corpus")),
        Some(PathBuf::from("/work/shared/corpus")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.join("large-fbc.tar.zst").is_file())
}

/// The unpacked corpus catalog `name` (`large-fbc`, `v4.16`, `v4.20`) under `<repo>/target/corpus`,
/// unpacking the archives there on first use. `None` when the archives are not available.
pub fn corpus_dir(name: &str) -> Option<PathBuf> {
    let root = repo_root().join("target/corpus");
    let dir = root.join(name);
    if dir.is_dir() {
        return Some(dir);
    }
    let archives = corpus_archives()?;
    fs::create_dir_all(&root).ok()?;
    for entry in fs::read_dir(&archives).ok()?.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "zst") {
            let status = Command::new("tar")
                .arg("--zstd")
                .arg("-xf")
                .arg(&path)
                .arg("-C")
                .arg(&root)
                .status()
                .ok()?;
            if !status.success() {
                return None;
            }
        }
    }
    dir.is_dir().then_some(dir)
}

/// [`corpus_dir`] for a test: `None` (the test says it skips the corpus) when the archives are
/// not available, except under `CI=true`, where a missing corpus fails the test.
pub fn corpus_dir_for_test(name: &str) -> Option<PathBuf> {
    let dir = corpus_dir(name);
    if dir.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "corpus catalog {name} is missing: the shared corpus must be available in CI"
        );
        eprintln!(
            "skipping corpus catalog {name}: not found (looked for $OLM_CORPUS, ../shared/corpus and /work/shared/corpus)"
        );
    }
    dir
}

/// Every file under `dir` (any depth), sorted by path, as `(display path, text)`.
pub fn read_files(dir: &Path) -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        if let Ok(entries) = fs::read_dir(dir) {
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() { walk(&p, out) } else { out.push(p) }
            }
        }
    }
    let mut paths = Vec::new();
    walk(dir, &mut paths);
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| fs::read_to_string(&p).ok().map(|t| (p.display().to_string(), t)))
        .collect()
}

/// A synthetic catalog: `packages` packages of `bundles` bundles each, one JSON file per package.
/// Channel `stable` holds every bundle (a replaces chain; every fifth entry replaces the one two
/// back and skips the withdrawn one in between; every tenth has a skipRange over the nine versions
/// before it); channel `fast` holds the newest half.
pub fn generated_catalog(packages: usize, bundles: usize) -> Vec<(String, String)> {
    (0..packages)
        .map(|p| {
            let pkg = format!("package-{p:04}");
            let version = |i: usize| format!("{}.{}.0", i / 10, i % 10);
            let name = |i: usize| format!("{pkg}.v{}", version(i));
            let mut text = String::new();
            let _ = writeln!(
                text,
                r#"{{"schema":"olm.package","name":"{pkg}","defaultChannel":"stable","description":"Generated package {p}"}}"#
            );
            let entry = |i: usize| {
                let mut e = format!(r#"{{"name":"{}""#, name(i));
                if i % 5 == 4 {
                    // Release i-1 was withdrawn: i replaces the one before it and skips it.
                    let _ = write!(e, r#","replaces":"{}","skips":["{}"]"#, name(i - 2), name(i - 1));
                } else if i > 0 {
                    let _ = write!(e, r#","replaces":"{}""#, name(i - 1));
                }
                if i % 10 == 9 {
                    let _ = write!(e, r#","skipRange":">={} <{}""#, version(i - 9), version(i));
                }
                e.push('}');
                e
            };
            let stable: Vec<String> = (0..bundles).map(entry).collect();
            let fast: Vec<String> = (bundles / 2..bundles)
                .map(|i| if i == bundles / 2 { format!(r#"{{"name":"{}"}}"#, name(i)) } else { entry(i) })
                .collect();
            let _ = writeln!(
                text,
                r#"{{"schema":"olm.channel","package":"{pkg}","name":"stable","entries":[{}]}}"#,
                stable.join(",")
            );
            let _ = writeln!(
                text,
                r#"{{"schema":"olm.channel","package":"{pkg}","name":"fast","entries":[{}]}}"#,
                fast.join(",")
            );
            for i in 0..bundles {
                let _ = writeln!(
                    text,
                    r#"{{"schema":"olm.bundle","name":"{n}","package":"{pkg}","image":"quay.io/generated/{pkg}-bundle:v{v}","properties":[{{"type":"olm.package","value":{{"packageName":"{pkg}","version":"{v}"}}}},{{"type":"olm.gvk","value":{{"group":"{pkg}.example.com","kind":"Thing","version":"v1"}}}}]}}"#,
                    n = name(i),
                    v = version(i)
                );
            }
            (format!("generated/{pkg}/catalog.json"), text)
        })
        .collect()
}

/// Validates `cfg` the way `catalog validate` does; returns a one-line summary.
pub fn validate(cfg: DeclarativeConfig) -> String {
    let (model, report) = olm_rs::catalog::validate(cfg);
    format!("{} packages, {} problems", model.len(), report.len())
}
