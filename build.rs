//! Embeds the shipped catalog (`catalog/`) into the crate, for `olm-controller run` without
//! `--builtin-catalog`, and compiles the registry gRPC API (`proto/registry.proto`) for
//! `crate::grpc`.
//!
//! The files are chosen by the crate's own directory walker (`src/source/walk.rs`, included
//! below), so `.indexignore` means the same thing here as in `kubectl-olm` and in
//! `--builtin-catalog DIR`. The generated `$OUT_DIR/builtin_catalog.rs` is one
//! `&[(path, include_str!(file))]` constant, loaded at start-up by `crate::catalog::load`.

use std::{env, fmt::Write as _, fs, path::Path};

#[allow(dead_code)]
#[path = "src/source/walk.rs"]
mod walk;

fn main() {
    compile_protos();
    let manifest = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out_dir = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let root = Path::new(&manifest).join("catalog");
    println!("cargo::rerun-if-changed=catalog");
    println!("cargo::rerun-if-changed=src/source/walk.rs");
    let files = walk::list_files(&root).unwrap_or_else(|err| panic!("cannot list {}: {err}", root.display()));
    let mut code = String::from("&[\n");
    for rel in &files {
        let path = root.join(rel);
        writeln!(
            code,
            "    ({:?}, include_str!({:?})),",
            format!("catalog/{rel}"),
            path.display().to_string()
        )
        .expect("writing to a String cannot fail");
    }
    code.push(']');
    let target = Path::new(&out_dir).join("builtin_catalog.rs");
    fs::write(&target, code).unwrap_or_else(|err| panic!("cannot write {}: {err}", target.display()));
}

/// `proto/registry.proto` to Rust (prost messages, tonic client and server). The descriptors come
/// from `protox`, a protobuf compiler written in Rust, so no `protoc` has to be installed.
fn compile_protos() {
    println!("cargo::rerun-if-changed=proto");
    let descriptors = protox::compile(["registry.proto"], ["proto"])
        .unwrap_or_else(|err| panic!("cannot compile proto/registry.proto: {err}"));
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)
        .unwrap_or_else(|err| panic!("cannot generate the registry gRPC code: {err}"));
}
