//! Bundle rendering (registry+v1 directory → FBC properties): any set of files, named as a bundle's
//! are, is either refused with an error or rendered; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use olm_rs::bundle::{Bundle, FileTree};

const NAMES: &[&str] = &[
    "manifests/csv.yaml",
    "manifests/crd.yaml",
    "manifests/other.json",
    "metadata/annotations.yaml",
    "metadata/dependencies.yaml",
    "metadata/properties.yaml",
];

fuzz_target!(|files: Vec<(u8, &str)>| {
    let mut tree = FileTree::new();
    for (name, text) in files {
        tree.insert(NAMES[usize::from(name) % NAMES.len()], text.as_bytes().to_vec());
    }
    if let Ok(bundle) = Bundle::parse(&tree) {
        let _ = bundle.fbc_properties();
    }
});
