use base64::Engine as _;

use super::*;

fn manifest() -> String {
    let mut text = String::from("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n");
    for i in 0..200 {
        text.push_str(&format!(
            "  field{i}:\n    type: string\n    description: the {i}th field of the spec\n"
        ));
    }
    text
}

/// Bytes that do not deflate (xorshift).
fn noise_bytes() -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[3]
        })
        .collect()
}

#[test]
fn every_kind_of_text_reads_back_exactly() {
    let long = manifest();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&long);
    // Padding of every length: canonical base64 of 0, 1 and 2 bytes past a multiple of three.
    let padded: Vec<String> = (0..3)
        .map(|extra| base64::engine::general_purpose::STANDARD.encode(&long.as_bytes()[..long.len() - extra]))
        .collect();
    // Random-looking bytes do not deflate: kept as decoded bytes.
    let noise: Vec<u8> = noise_bytes();
    let noisy = base64::engine::general_purpose::STANDARD.encode(&noise);
    let cases = [
        String::new(),
        "short".to_owned(),
        long.clone(),
        b64.clone(),
        noisy.clone(),
        // Not canonical: a line break, trailing bits, no padding. Kept as text.
        format!("{}\n{}", &b64[..76], &b64[76..]),
        format!("{}B", &b64[..b64.len() - 4]),
        b64.trim_end_matches('=').to_owned(),
        "é".repeat(600),
    ];
    for text in cases.iter().chain(&padded) {
        let packed = PackedText::new(text);
        assert_eq!(packed.text(), text.as_str(), "{} bytes", text.len());
        assert_eq!(packed.len(), text.len());
        let mut out = String::from(">");
        packed.push_to(&mut out);
        assert_eq!(&out[1..], text.as_str());
    }
}

#[test]
fn large_texts_are_kept_smaller_and_base64_as_its_bytes() {
    let long = manifest();
    let packed = PackedText::new(&long);
    assert!(!packed.is_base64());
    assert!(
        packed.kept_bytes() * 4 < long.len(),
        "{} of {}",
        packed.kept_bytes(),
        long.len()
    );

    let b64 = base64::engine::general_purpose::STANDARD.encode(&long);
    let packed = PackedText::new(&b64);
    assert!(packed.is_base64());
    assert!(
        packed.kept_bytes() * 4 < long.len(),
        "{} of {}",
        packed.kept_bytes(),
        long.len()
    );
    assert_eq!(packed.base64_bytes().as_deref(), Some(long.as_bytes()));

    // Bytes that do not deflate are kept decoded: three quarters of the text.
    let noise: Vec<u8> = noise_bytes();
    let packed = PackedText::new(&base64::engine::general_purpose::STANDARD.encode(&noise));
    assert!(packed.is_base64());
    assert_eq!(packed.kept_bytes(), noise.len());

    // Short texts are left alone.
    assert_eq!(PackedText::new("{\"a\":1}").kept_bytes(), 7);
    assert_eq!(PackedText::new("short").base64_bytes(), None);
}

#[test]
fn equality_and_hash_follow_the_text() {
    use std::hash::{BuildHasher, RandomState};
    let long = manifest();
    let a = PackedText::new(&long);
    let b = PackedText::plain(long.as_str());
    assert_eq!(a, b);
    let state = RandomState::new();
    assert_eq!(state.hash_one(&a), state.hash_one(&b));
    assert_ne!(a, PackedText::new(&long[1..]));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&long).unwrap()
    );
}
