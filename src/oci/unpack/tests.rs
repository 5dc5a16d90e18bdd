use super::*;

#[test]
fn entry_paths_are_normalized_and_whiteouts_recognised() {
    assert_eq!(
        parse_entry_path(b"./configs/a.json"),
        Ok(EntryPath::Path("configs/a.json".into()))
    );
    assert_eq!(
        parse_entry_path(b"configs//x/"),
        Ok(EntryPath::Path("configs/x".into()))
    );
    assert_eq!(parse_entry_path(b"./"), Ok(EntryPath::Root));
    assert_eq!(
        parse_entry_path(b"configs/.wh.old"),
        Ok(EntryPath::Whiteout("configs/old".into()))
    );
    assert_eq!(
        parse_entry_path(b".wh.configs"),
        Ok(EntryPath::Whiteout("configs".into()))
    );
    assert_eq!(
        parse_entry_path(b"configs/.wh..wh..opq"),
        Ok(EntryPath::Opaque("configs".into()))
    );
    assert_eq!(
        parse_entry_path(b".wh..wh..opq"),
        Ok(EntryPath::Opaque(String::new()))
    );
}

#[test]
fn absolute_climbing_and_non_utf8_paths_are_refused() {
    assert_eq!(parse_entry_path(b"/etc/passwd"), Err(PathProblem::Absolute));
    assert_eq!(parse_entry_path(b"configs/../../x"), Err(PathProblem::ParentDir));
    assert_eq!(parse_entry_path(b".."), Err(PathProblem::ParentDir));
    assert_eq!(parse_entry_path(b"configs/\xff"), Err(PathProblem::NotUtf8));
}

#[test]
fn link_targets_resolve_from_the_link_directory_or_the_image_root() {
    assert_eq!(
        resolve_link("configs/a/x.json", "../b/y.json").as_deref(),
        Some("configs/b/y.json")
    );
    assert_eq!(
        resolve_link("configs/x.json", "/etc/passwd").as_deref(),
        Some("etc/passwd")
    );
    assert_eq!(
        resolve_link("configs/x.json", "./y.json").as_deref(),
        Some("configs/y.json")
    );
    assert_eq!(resolve_link("configs/x.json", "../../../etc/passwd"), None);
}

#[test]
fn within_compares_whole_components() {
    assert!(is_within("configs/a", "configs"));
    assert!(is_within("configs", "configs"));
    assert!(!is_within("configs2/a", "configs"));
    assert!(is_within("anything", ""));
}

#[test]
fn layer_media_types_map_to_their_compression() {
    assert_eq!(
        compression_for("application/vnd.oci.image.layer.v1.tar+zstd"),
        Some(Compression::Zstd)
    );
    assert_eq!(
        compression_for("application/vnd.docker.image.rootfs.diff.tar.gzip"),
        Some(Compression::Gzip)
    );
    assert_eq!(
        compression_for("application/vnd.oci.image.layer.v1.tar"),
        Some(Compression::None)
    );
    assert_eq!(
        compression_for("application/vnd.wasm.content.layer.v1+wasm"),
        None
    );
}

// ---- whole layers, built with the tar crate ----

enum E<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    HardLink(&'a str, &'a str),
    /// A path written raw into the header (the tar crate refuses `..` through its API).
    RawFile(&'a [u8], &'a [u8]),
}

fn layer(entries: &[E<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        match e {
            E::File(p, data) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(data.len() as u64);
                b.append_data(&mut h, p, *data).unwrap();
            }
            E::Dir(p) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                b.append_data(&mut h, p, io::empty()).unwrap();
            }
            E::Symlink(p, t) | E::HardLink(p, t) => {
                let kind = if matches!(e, E::Symlink(..)) {
                    tar::EntryType::Symlink
                } else {
                    tar::EntryType::Link
                };
                h.set_entry_type(kind);
                h.set_size(0);
                b.append_link(&mut h, p, t).unwrap();
            }
            E::RawFile(p, data) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(data.len() as u64);
                let name = &mut h.as_old_mut().name;
                name[..p.len()].copy_from_slice(p);
                h.set_cksum();
                b.append(&h, *data).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

fn unpack(
    layers: &[Vec<u8>],
    selection: &[&str],
    limits: Limits,
) -> Result<BTreeMap<String, String>, UnpackError> {
    let tmp = tempfile::tempdir().unwrap();
    let staging = tmp.path().join("staging");
    let out = tmp.path().join("out");
    fs::create_dir_all(&staging).unwrap();
    fs::create_dir_all(&out).unwrap();
    let mut u = Unpacker::new(
        selection.iter().map(|s| (*s).to_owned()).collect(),
        limits,
        staging,
    );
    for (i, l) in layers.iter().enumerate() {
        u.apply_layer(&format!("sha256:layer{i}"), l.as_slice(), Compression::None)?;
    }
    u.finish(&out)?;
    let mut files = Vec::new();
    olm_files(&out, &out, &mut files);
    Ok(files.into_iter().collect())
}

fn olm_files(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.push((
                format!("{}/", p.strip_prefix(base).unwrap().display()),
                String::new(),
            ));
            olm_files(base, &p, out);
        } else {
            let rel = p.strip_prefix(base).unwrap().display().to_string();
            out.push((rel, fs::read_to_string(&p).unwrap()));
        }
    }
}

fn sel() -> &'static [&'static str] {
    &["configs"]
}

#[test]
fn only_the_selection_is_written_and_later_layers_win() {
    let l1 = layer(&[
        E::Dir("bin"),
        E::File("bin/opm", b"binary"),
        E::Dir("configs"),
        E::File("configs/a/catalog.json", b"v1"),
        E::File("configs/b.yaml", b"b"),
    ]);
    let l2 = layer(&[E::File("configs/a/catalog.json", b"v2")]);
    let files = unpack(&[l1, l2], sel(), Limits::default()).unwrap();
    let keys: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "configs/",
            "configs/a/",
            "configs/a/catalog.json",
            "configs/b.yaml"
        ]
    );
    assert_eq!(files["configs/a/catalog.json"], "v2");
}

#[test]
fn whiteouts_and_opaque_directories_hide_lower_layers_only() {
    let l1 = layer(&[
        E::File("configs/old/catalog.json", b"old"),
        E::File("configs/keep.json", b"k"),
        E::File("configs/d/x.json", b"x"),
    ]);
    // The opaque marker comes after the layer's own file: that file must survive.
    let l2 = layer(&[
        E::File("configs/d/new.json", b"n"),
        E::File("configs/d/.wh..wh..opq", b""),
        E::File("configs/.wh.old", b""),
    ]);
    let files = unpack(&[l1, l2], sel(), Limits::default()).unwrap();
    let keys: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "configs/",
            "configs/d/",
            "configs/d/new.json",
            "configs/keep.json"
        ]
    );
}

#[test]
fn a_file_replacing_a_directory_hides_its_children() {
    let l1 = layer(&[E::File("configs/p/catalog.json", b"x")]);
    let l2 = layer(&[E::File("configs/p", b"now a file")]);
    let files = unpack(&[l1, l2], sel(), Limits::default()).unwrap();
    assert_eq!(files["configs/p"], "now a file");
    assert!(!files.contains_key("configs/p/catalog.json"));
}

#[test]
fn links_inside_the_selection_become_copies() {
    let l = layer(&[
        E::File("configs/real.json", b"R"),
        E::Symlink("configs/rel.json", "real.json"),
        E::Symlink("configs/abs.json", "/configs/real.json"),
        E::Symlink("configs/chain.json", "rel.json"),
        E::HardLink("configs/hard.json", "configs/real.json"),
    ]);
    let files = unpack(&[l], sel(), Limits::default()).unwrap();
    for f in ["real", "rel", "abs", "chain", "hard"] {
        assert_eq!(files[&format!("configs/{f}.json")], "R", "{f}");
    }
}

#[test]
fn links_leaving_the_root_or_the_selection_are_refused() {
    let escape = layer(&[E::Symlink("configs/x.json", "../../../etc/passwd")]);
    let err = unpack(&[escape], sel(), Limits::default()).unwrap_err();
    assert!(matches!(err, UnpackError::LinkLeavesRoot { .. }), "{err}");
    assert!(err.to_string().contains("\"configs/x.json\""), "{err}");

    let absolute = layer(&[E::Symlink("configs/x.json", "/etc/passwd")]);
    let err = unpack(&[absolute], sel(), Limits::default()).unwrap_err();
    assert!(matches!(err, UnpackError::LinkOutsideSelection { .. }), "{err}");
    assert!(err.to_string().contains("outside /configs"), "{err}");

    let dangling = layer(&[E::Symlink("configs/x.json", "nope.json")]);
    let err = unpack(&[dangling], sel(), Limits::default()).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");

    let hard = layer(&[
        E::File("etc/passwd", b"p"),
        E::HardLink("configs/x", "etc/passwd"),
    ]);
    assert!(matches!(
        unpack(&[hard], sel(), Limits::default()).unwrap_err(),
        UnpackError::LinkOutsideSelection { .. }
    ));

    let dir_link = layer(&[E::Dir("catalog"), E::Symlink("configs", "catalog")]);
    assert!(matches!(
        unpack(&[dir_link], sel(), Limits::default()).unwrap_err(),
        UnpackError::SelectionIsLink { .. }
    ));
}

#[test]
fn unsafe_paths_are_refused_even_outside_the_selection() {
    let dotdot = layer(&[E::RawFile(b"../evil", b"x")]);
    let err = unpack(&[dotdot], sel(), Limits::default()).unwrap_err();
    assert!(matches!(err, UnpackError::ParentDir { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("layer sha256:layer0: entry \"../evil\""),
        "{err}"
    );
    let abs = layer(&[E::RawFile(b"/etc/cron.d/x", b"x")]);
    assert!(matches!(
        unpack(&[abs], sel(), Limits::default()).unwrap_err(),
        UnpackError::AbsolutePath { .. }
    ));
}

#[test]
fn caps_stop_large_files_many_entries_and_bombs() {
    let big = vec![b'a'; 4096];
    let l = layer(&[E::File("configs/big.json", &big)]);
    let limits = Limits {
        max_file_size: 1000,
        ..Limits::default()
    };
    assert!(matches!(
        unpack(&[l], sel(), limits).unwrap_err(),
        UnpackError::FileTooLarge { size: 4096, .. }
    ));

    let many = layer(&[E::File("a", b""), E::File("b", b""), E::File("c", b"")]);
    let limits = Limits {
        max_entries: 2,
        ..Limits::default()
    };
    assert!(matches!(
        unpack(&[many], sel(), limits).unwrap_err(),
        UnpackError::TooManyEntries { limit: 2, .. }
    ));

    // Outside the selection too: the bytes are read, so they count.
    let zeros = vec![0u8; 1 << 20];
    let bomb = layer(&[E::File("junk", &zeros)]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    io::Write::write_all(&mut gz, &bomb).unwrap();
    let gz = gz.finish().unwrap();
    assert!(gz.len() < 10_000);
    let tmp = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_total_size: 100_000,
        ..Limits::default()
    };
    let mut u = Unpacker::new(vec!["configs".into()], limits, tmp.path().to_owned());
    let err = u
        .apply_layer("sha256:bomb", gz.as_slice(), Compression::Gzip)
        .unwrap_err();
    assert!(
        matches!(err, UnpackError::TotalTooLarge { limit: 100_000, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("decompression bomb"), "{err}");
}

#[test]
fn gzip_and_zstd_layers_unpack_like_plain_tar() {
    let l = layer(&[E::File("configs/a.json", b"A")]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    io::Write::write_all(&mut gz, &l).unwrap();
    let gz = gz.finish().unwrap();
    let zst = ruzstd::encoding::compress_to_vec(l.as_slice(), ruzstd::encoding::CompressionLevel::Fastest);
    for (blob, compression) in [(gz, Compression::Gzip), (zst, Compression::Zstd)] {
        let tmp = tempfile::tempdir().unwrap();
        let (staging, out) = (tmp.path().join("s"), tmp.path().join("o"));
        fs::create_dir_all(&staging).unwrap();
        fs::create_dir_all(&out).unwrap();
        let mut u = Unpacker::new(vec!["configs".into()], Limits::default(), staging);
        u.apply_layer("sha256:l", blob.as_slice(), compression).unwrap();
        assert!(u.has("configs"));
        assert_eq!(u.finish(&out).unwrap(), (1, 1));
        assert_eq!(fs::read_to_string(out.join("configs/a.json")).unwrap(), "A");
    }
}

#[test]
fn a_corrupt_stream_is_a_read_error_naming_the_compression() {
    let tmp = tempfile::tempdir().unwrap();
    let mut u = Unpacker::new(vec!["configs".into()], Limits::default(), tmp.path().to_owned());
    let err = u
        .apply_layer("sha256:bad", &b"not gzip at all"[..], Compression::Gzip)
        .unwrap_err();
    assert!(err.to_string().contains("as tar+gzip"), "{err}");
}
