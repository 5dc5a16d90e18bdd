//! The fast YAML decoder (`olm_rs::codec::block_yaml`) against serde-saphyr, on every YAML file of
//! the real public catalogs of the shared corpus, of the shipped `catalog/` and of the fixture
//! catalogs:
//! - every file the fast decoder accepts decodes to exactly the documents serde-saphyr produces;
//! - every file loads into the same catalog, with the same problems, with the fast decoder on and
//!   off;
//! - the fast decoder accepts nearly all of the real catalogs' YAML (otherwise the load time the
//!   README states would not be the load time users get).
//!
//! The corpus is unpacked into `<repo>/target/corpus` on first use; without it these tests print
//! why they skip, unless `CI=true`, where a missing corpus fails them.

// Test helpers outside #[test] functions: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use olm_rs::{
    catalog::declcfg::DeclarativeConfig,
    codec::{self, Format, YamlDecoder},
};

/// Every catalog directory to check: the corpus catalogs (when present), `catalog/` and the
/// fixtures.
fn catalogs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for name in ["large-fbc", "v4.16", "v4.20"] {
        dirs.extend(crate::corpus::corpus_dir_for_test(name));
    }
    dirs.push(crate::corpus::repo_root().join("catalog"));
    dirs.push(crate::corpus::repo_root().join("tests/fixtures"));
    dirs
}

/// Every YAML text under the catalogs, as `(catalog index, path, text)`.
fn yaml_files() -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    for (i, dir) in catalogs().iter().enumerate() {
        for (path, text) in crate::corpus::read_files(dir) {
            if codec::detect_format(&text) == Format::Yaml {
                out.push((i, path, text));
            }
        }
    }
    out
}

#[test]
fn every_yaml_file_the_fast_decoder_accepts_decodes_exactly_as_serde_saphyr_does() {
    let catalogs = catalogs();
    // Per catalog: (files accepted, bytes accepted, files declined, bytes declined).
    let mut tally = vec![(0usize, 0usize, 0usize, 0usize); catalogs.len()];
    let mut declined = Vec::new();
    for (catalog, path, text) in yaml_files() {
        let reference = codec::decode_yaml_reference(&path, &text);
        let t = &mut tally[catalog];
        match codec::decode_yaml_fast(&text) {
            Some(fast) => {
                assert!(
                    reference.error.is_none(),
                    "{path}: the fast decoder accepted a text serde-saphyr rejects: {:?}",
                    reference.error
                );
                assert_eq!(fast.len(), reference.documents.len(), "{path}: document count");
                for (a, b) in fast.iter().zip(&reference.documents) {
                    assert_eq!(a.index, b.index, "{path}: document index");
                    assert!(
                        a.value == b.value,
                        "{path}: document {} differs from serde-saphyr's",
                        a.index
                    );
                }
                t.0 += 1;
                t.1 += text.len();
            }
            None => {
                t.2 += 1;
                t.3 += text.len();
                let why = match codec::block_yaml::decode::<serde::de::IgnoredAny>(&text) {
                    Err(err) => err.to_string(),
                    Ok(_) => "a value JSON cannot hold".to_owned(),
                };
                declined.push(format!("{path}: {why}"));
            }
        }
    }
    eprintln!("catalog: files accepted / declined, MB accepted / declined");
    for (dir, (files, bytes, dfiles, dbytes)) in catalogs.iter().zip(&tally) {
        eprintln!(
            "  {}: {files} / {dfiles}, {:.1} / {:.1}",
            dir.display(),
            mb(*bytes),
            mb(*dbytes)
        );
    }
    for path in &declined {
        eprintln!("  declined: {path}");
    }
    // The corpus catalogs (the first entries; the last two are ours) are what `opm render` writes:
    // nearly all of it must take the fast path.
    let corpus = &tally[..catalogs.len() - 2];
    let accepted: usize = corpus.iter().map(|t| t.1).sum();
    let rejected: usize = corpus.iter().map(|t| t.3).sum();
    assert!(
        rejected * 20 <= accepted + rejected,
        "the fast decoder declines {:.1} MB of {:.1} MB of the corpus YAML",
        mb(rejected),
        mb(accepted + rejected)
    );
    // The shipped catalog is rendered by our own `catalog render`: all of it.
    let ours = &tally[catalogs.len() - 2];
    assert_eq!(ours.2, 0, "the fast decoder declines part of catalog/");
}

#[test]
fn every_yaml_file_loads_into_the_same_catalog_with_the_fast_decoder_on_and_off() {
    for (_, path, text) in yaml_files() {
        let (fast, fast_problems) =
            DeclarativeConfig::from_str_with_problems_using(YamlDecoder::Fast, &path, &text);
        let (slow, slow_problems) =
            DeclarativeConfig::from_str_with_problems_using(YamlDecoder::Reference, &path, &text);
        let show = |problems: &[_]| -> Vec<String> {
            problems
                .iter()
                .map(|p: &olm_rs::catalog::declcfg::DecodeError| p.to_string())
                .collect()
        };
        assert_eq!(show(&fast_problems), show(&slow_problems), "{path}: problems");
        assert!(
            fast.to_json().unwrap() == slow.to_json().unwrap(),
            "{path}: the catalog differs with the fast decoder"
        );
    }
}

fn mb(bytes: usize) -> f64 {
    #[allow(clippy::cast_precision_loss, reason = "a figure to print")]
    let bytes = bytes as f64;
    bytes / 1e6
}
