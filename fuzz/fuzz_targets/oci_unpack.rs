//! The OCI layer unpacker (`olm_rs::oci::unpack`) on arbitrary tar streams: it never panics,
//! and whatever it accepts stays inside the output directory: no links written, nothing outside
//! the selection, no file over the per-file cap, no more bytes than the total cap.
//!
//! Input: the first byte picks the selection (catalog `configs`, or bundle `manifests` and
//! `metadata`) and whether the data is one layer or two (split at the byte the second one names,
//! so whiteouts of the upper layer meet entries of the lower one); the rest is raw tar.
#![no_main]

use std::{fs, path::Path};

use libfuzzer_sys::fuzz_target;
use olm_rs::oci::unpack::{Compression, Limits, Unpacker};

const TOTAL: u64 = 1 << 20;
const FILE: u64 = 64 << 10;

fn check(dir: &Path, root: &Path, selection: &[String], total: &mut u64) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).expect("an unpacked entry can be read");
        assert!(!meta.file_type().is_symlink(), "a link was written: {}", path.display());
        let relative = path.strip_prefix(root).expect("inside the output");
        let first = relative.components().next().expect("a component");
        let first = first.as_os_str().to_string_lossy();
        assert!(
            selection.iter().any(|s| s.split('/').next() == Some(first.as_ref())),
            "{} is outside the selection {selection:?}",
            relative.display()
        );
        if meta.is_dir() {
            check(&path, root, selection, total);
        } else {
            assert!(meta.len() <= FILE, "{} is over the file cap", relative.display());
            *total += meta.len();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else { return };
    let selection: Vec<String> = if head & 1 == 0 {
        vec!["configs".into()]
    } else {
        vec!["manifests".into(), "metadata".into()]
    };
    let layers: Vec<&[u8]> = match rest.split_first() {
        Some((&at, tail)) if head & 2 != 0 && !tail.is_empty() => {
            let at = (usize::from(at) * 512).min(tail.len());
            vec![&tail[..at], &tail[at..]]
        }
        _ => vec![rest],
    };
    let Ok(work) = tempfile::tempdir() else { return };
    let staging = work.path().join("staging");
    let out = work.path().join("out");
    fs::create_dir_all(&staging).expect("staging");
    fs::create_dir_all(&out).expect("out");
    let limits = Limits {
        max_total_size: TOTAL,
        max_file_size: FILE,
        max_entries: 2_000,
        max_blob_size: TOTAL,
    };
    let mut unpacker = Unpacker::new(selection.clone(), limits, staging);
    for (i, layer) in layers.iter().enumerate() {
        if unpacker
            .apply_layer(&format!("layer{i}"), *layer, Compression::None)
            .is_err()
        {
            return;
        }
    }
    if let Ok((_, bytes)) = unpacker.finish(&out) {
        let mut total = 0;
        check(&out, &out, &selection, &mut total);
        assert!(bytes <= TOTAL && total <= TOTAL, "{bytes} / {total} bytes over the cap");
    }
});
