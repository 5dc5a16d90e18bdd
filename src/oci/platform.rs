//! Which manifest of an image index (a multi-platform image) to read.
//!
//! The rule: catalog and bundle images carry the same files on every platform (they are data,
//! not binaries), so any platform would do, but the choice must be predictable: `linux/amd64`
//! when the index has it (what opm and OLM's pods run on), otherwise the only platform there is.
//! Attestation and other non-image entries (`unknown/unknown`, or the Docker
//! `vnd.docker.reference.type` annotation) never count. An index with several platforms but no
//! `linux/amd64` is refused, listing what it has, rather than picking one at random.

/// One entry of an image index, as much as the choice needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The manifest's digest.
    pub digest: String,
    /// `os/arch[/variant]`, or `None` when the entry has no platform.
    pub platform: Option<String>,
    /// Whether the entry is an attestation or another non-image artifact.
    pub artifact: bool,
}

/// Picks the digest of the manifest to read, or returns the platforms on offer.
///
/// # Errors
/// The platforms the index has (`os/arch[/variant]`, `unknown` when absent) when none can be
/// chosen.
pub fn choose(entries: &[Entry]) -> Result<&str, Vec<String>> {
    let images: Vec<&Entry> = entries
        .iter()
        .filter(|e| !e.artifact && e.platform.as_deref() != Some("unknown/unknown"))
        .collect();
    let amd64 = images
        .iter()
        .filter(|e| {
            e.platform
                .as_deref()
                .is_some_and(|p| p == "linux/amd64" || p.starts_with("linux/amd64/"))
        })
        // `linux/amd64` without a variant first, then `v1` before higher micro-architectures.
        .min_by_key(|e| e.platform.as_deref().map_or(0, str::len));
    if let Some(entry) = amd64 {
        return Ok(&entry.digest);
    }
    match images.as_slice() {
        [only] => Ok(&only.digest),
        _ => Err(entries
            .iter()
            .map(|e| e.platform.clone().unwrap_or_else(|| "unknown".to_owned()))
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(digest: &str, platform: Option<&str>) -> Entry {
        Entry {
            digest: digest.to_owned(),
            platform: platform.map(str::to_owned),
            artifact: false,
        }
    }

    #[test]
    fn linux_amd64_is_chosen_among_several_platforms() {
        let entries = [
            entry("arm", Some("linux/arm64/v8")),
            entry("amd-v3", Some("linux/amd64/v3")),
            entry("amd", Some("linux/amd64")),
            entry("s390x", Some("linux/s390x")),
        ];
        assert_eq!(choose(&entries), Ok("amd"));
    }

    #[test]
    fn the_only_image_is_chosen_whatever_its_platform_and_attestations_do_not_count() {
        let mut attestation = entry("att", Some("unknown/unknown"));
        attestation.artifact = true;
        let entries = [entry("arm", Some("linux/arm64")), attestation];
        assert_eq!(choose(&entries), Ok("arm"));
        assert_eq!(choose(&[entry("x", None)]), Ok("x"));
    }

    #[test]
    fn several_platforms_without_linux_amd64_are_refused_listing_them() {
        let entries = [entry("a", Some("linux/arm64")), entry("b", None)];
        assert_eq!(
            choose(&entries),
            Err(vec!["linux/arm64".to_owned(), "unknown".to_owned()])
        );
        assert_eq!(choose(&[]), Err(vec![]));
    }
}
