//! dir: decodes every file of a catalog directory ([`super::walk`] lists them, honouring
//! `.indexignore` files) on all cores.
//!
//! Results are merged back in path order, so the outcome does not depend on thread timing.
//!
//! See [`super::walk`] for the ignore rules and how links are treated.

use std::{
    fs,
    path::{Path, PathBuf},
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

pub use super::walk::{INDEX_IGNORE, IgnoreRules, list_files};
use super::{Error, Loaded, Result};

/// Loads every catalog file under `root` (see the module docs), decoding on all cores.
///
/// Files are handed to the workers largest first (so that no large file is left to decode alone
/// at the end) and merged back in path order. Each worker reads into one buffer it reuses.
/// Messages name files as `root` joined with their relative path.
///
/// # Errors
/// Listing or reading errors naming the path; decode problems are returned in
/// [`Loaded::problems`] instead.
pub fn load_dir(root: &Path) -> Result<Loaded> {
    load_dir_with(crate::codec::YamlDecoder::Fast, root)
}

/// [`load_dir`] with the YAML decoder chosen.
///
/// # Errors
/// As [`load_dir`].
pub fn load_dir_with(yaml: crate::codec::YamlDecoder, root: &Path) -> Result<Loaded> {
    let files = list_files(root)?;
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, 8);
    let threads = threads.min(files.len().max(1));
    // Largest first; a file whose size cannot be read goes last (reading it reports the error).
    let mut order: Vec<(u64, usize)> = files
        .iter()
        .enumerate()
        .map(|(i, rel)| (fs::metadata(root.join(rel)).map_or(0, |m| m.len()), i))
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result<Loaded>>>> = files.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut buffer = Vec::new();
                while let Some(&(_, i)) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let Some(rel) = files.get(i) else { break };
                    let result = load_one(yaml, root, rel, &mut buffer);
                    if let Some(slot) = slots.get(i)
                        && let Ok(mut guard) = slot.lock()
                    {
                        *guard = Some(result);
                    }
                }
            });
        }
    });
    let mut loaded = Loaded {
        yaml,
        ..Loaded::default()
    };
    let mut buffer = Vec::new();
    for (slot, rel) in slots.into_iter().zip(&files) {
        match slot.into_inner().ok().flatten() {
            Some(result) => loaded.merge(result?),
            // Only reachable if a worker panicked; decode the file here instead.
            None => loaded.merge(load_one(yaml, root, rel, &mut buffer)?),
        }
    }
    Ok(loaded)
}

/// Reads and decodes one file, reading into `buffer` (cleared first, kept for the next file).
fn load_one(yaml: crate::codec::YamlDecoder, root: &Path, rel: &str, buffer: &mut Vec<u8>) -> Result<Loaded> {
    use std::io::Read as _;
    let path: PathBuf = root.join(rel);
    let read_error = |source| Error::Read {
        path: path.clone(),
        source,
    };
    buffer.clear();
    let mut file = fs::File::open(&path).map_err(read_error)?;
    file.read_to_end(buffer).map_err(read_error)?;
    let mut loaded = Loaded {
        yaml,
        ..Loaded::default()
    };
    loaded.add_bytes(&path.display().to_string(), buffer);
    // Keep the buffer for the next file, unless it grew far beyond the usual file size.
    if buffer.capacity() > 64 << 20 {
        *buffer = Vec::new();
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loading_merges_files_in_path_order_and_reports_bad_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for (i, name) in ["p1", "p2", "p3"].iter().enumerate() {
            fs::create_dir_all(root.join(name)).unwrap();
            let text = format!("schema: olm.package\nname: {name}\ndefaultChannel: c{i}\n");
            fs::write(root.join(name).join("catalog.yaml"), text).unwrap();
        }
        fs::write(root.join("p2/broken.yaml"), "a: [\n").unwrap();
        let loaded = load_dir(root).unwrap();
        let names: Vec<_> = loaded.config.packages.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, vec!["p1", "p2", "p3"]);
        assert_eq!(loaded.files, 4);
        assert_eq!(loaded.problems.len(), 1);
        assert!(loaded.problems[0].origin().path.ends_with("p2/broken.yaml"));
    }
}
