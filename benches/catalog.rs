//! Catalog benchmark: load, validate, every channel head and every upgrade path, for (a) a generated
//! catalog of 1,000 packages × 20 bundles and (b) the real public catalogs of `../shared/corpus`
//! (large-fbc, v4.16, v4.20), unpacked into `target/corpus` on first use.
//!
//! Run: `cargo bench --bench catalog` (a few minutes on 2 cores). Besides criterion's own report it
//! prints one line per catalog with the figures next to the targets of issue 2: the largest real
//! catalog loads and validates in under 1 s, and every upgrade path of it is computed in under 1 s.
//! Peak memory is measured by the separate `peak_mem` bench (its own process, so VmHWM is honest).
//! Dropping the large results is kept out of the timings (criterion drops them after measuring).
//! For the real catalogs, `load from disk + validate, YAML by serde-saphyr only` repeats the load with
//! serde-saphyr alone (`codec::YamlDecoder::Reference`), to show what the fast YAML decoder saves.

use std::{
    hint::black_box,
    path::Path,
    time::{Duration, Instant},
};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use olm_rs::{
    catalog::{Model, declcfg::DeclarativeConfig, validate},
    graph::Installed,
};

#[path = "support.rs"]
mod support;

use support::{corpus_dir, generated_catalog, read_files};

/// Decodes in-memory files into one config (the load step minus the disk).
fn decode(files: &[(String, String)]) -> DeclarativeConfig {
    let mut cfg = DeclarativeConfig::default();
    for (path, text) in files {
        let problems = cfg.decode_str(path, text);
        black_box(problems);
    }
    cfg
}

/// Every channel head and every upgrade path (from every entry with a version) of every channel;
/// returns how many heads were found and how many paths were computed.
fn heads_and_paths(model: &Model) -> (usize, usize) {
    let mut heads = 0;
    let mut paths = 0;
    for pkg in model.packages() {
        for ch in pkg.channels() {
            let g = ch.graph();
            if g.head().is_ok() {
                heads += 1;
            }
            for e in g.entries() {
                if let Some(v) = &e.version {
                    let from = Installed {
                        name: Some(e.name.clone()),
                        version: v.clone(),
                    };
                    black_box(g.upgrade_path(&from).ok());
                    paths += 1;
                }
            }
        }
    }
    (heads, paths)
}

fn report(name: &str, files: &[(String, String)], dir: Option<&Path>, real: bool) {
    let start = Instant::now();
    let cfg = decode(files);
    let decoding = start.elapsed();
    let counts = (cfg.packages.len(), cfg.channels.len(), cfg.bundles.len());
    let fresh = Model::from_config(cfg.clone());
    let start = Instant::now();
    let (model, report) = validate(cfg);
    let validating = start.elapsed();
    drop(model);
    // Validation builds and caches every channel graph; time the graphs on a model that has none yet.
    let start = Instant::now();
    let (heads, paths) = heads_and_paths(&fresh);
    let graphs = start.elapsed();
    drop(fresh);
    let from_disk = dir.map(|d| {
        let start = Instant::now();
        let loaded = olm_rs::source::load_path(d)
            .ok()
            .map(olm_rs::source::Loaded::validate);
        black_box(loaded);
        start.elapsed()
    });
    let target = if real {
        "  [targets, largest real catalog: load+validate < 1 s; all upgrade paths < 1 s]"
    } else {
        ""
    };
    println!(
        "figures {name}: {} packages, {} channels, {} bundles, {} validation problems",
        counts.0,
        counts.1,
        counts.2,
        report.len()
    );
    println!(
        "figures {name}: decode {:.3} s + validate {:.3} s = {:.3} s in memory; load from disk + validate {}; \
         {heads} heads and {paths} upgrade paths in {:.3} s{target}",
        decoding.as_secs_f64(),
        validating.as_secs_f64(),
        (decoding + validating).as_secs_f64(),
        from_disk.map_or_else(|| "n/a".to_string(), |d| format!("{:.3} s", d.as_secs_f64())),
        graphs.as_secs_f64(),
    );
}

fn bench_catalog(c: &mut Criterion, name: &str, files: &[(String, String)], dir: Option<&Path>, real: bool) {
    report(name, files, dir, real);
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    if let Some(dir) = dir {
        group.bench_function("load from disk + validate", |b| {
            b.iter_with_large_drop(|| {
                black_box(
                    olm_rs::source::load_path(dir)
                        .ok()
                        .map(olm_rs::source::Loaded::validate),
                )
            });
        });
        // The same with every YAML file decoded by serde-saphyr: what the fast YAML decoder saves.
        group.bench_function("load from disk + validate, YAML by serde-saphyr only", |b| {
            b.iter_with_large_drop(|| {
                black_box(
                    olm_rs::source::load_path_with(olm_rs::codec::YamlDecoder::Reference, dir)
                        .ok()
                        .map(olm_rs::source::Loaded::validate),
                )
            });
        });
    }
    group.bench_function("decode", |b| b.iter_with_large_drop(|| black_box(decode(files))));
    let cfg = decode(files);
    group.bench_function("validate", |b| {
        b.iter_batched(
            || cfg.clone(),
            |cfg| black_box(validate(cfg)),
            BatchSize::PerIteration,
        )
    });
    // A model caches each channel graph once built: give every run a fresh model so that it
    // builds the graphs it walks.
    group.bench_function("heads and upgrade paths", |b| {
        b.iter_batched(
            || Model::from_config(cfg.clone()),
            |m| {
                black_box(heads_and_paths(&m));
                // Returned, so that dropping the model is not timed.
                m
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn generated(c: &mut Criterion) {
    let files = generated_catalog(1_000, 20);
    bench_catalog(c, "generated-1000x20", &files, None, false);
}

fn corpus(c: &mut Criterion) {
    for name in ["v4.20", "v4.16", "large-fbc"] {
        let Some(dir) = corpus_dir(name) else {
            println!(
                "skipping corpus catalog {name}: /work/shared/corpus (or ../shared/corpus) is not present"
            );
            continue;
        };
        let files: Vec<(String, String)> = read_files(&dir);
        bench_catalog(c, name, &files, Some(&dir), true);
    }
}

criterion_group!(benches, generated, corpus);
criterion_main!(benches);
