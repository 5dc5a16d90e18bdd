//! Image references as users write them: `oci://REGISTRY/REPO:TAG`, `REGISTRY/REPO@sha256:...`,
//! or a bare `host:port/repo:tag`.
//!
//! The rule: a reference names its registry. A catalog flag that takes a directory *or* an image
//! must never guess that `catalog` (a directory that happens not to exist) is the Docker Hub image
//! `docker.io/library/catalog:latest`. So [`is_image_reference`] answers yes only for an `oci://`
//! prefix, a digest, or a first path component that is a host (`a.b`, `host:port`,
//! `localhost`); everything else is a path. Parsing itself is the distribution grammar of the
//! `oci-client` crate (the Docker reference grammar); a reference without a tag or digest means
//! `:latest`, as `docker pull` and opm read it.

use std::fmt;

/// The `oci://` scheme users may put in front of a reference.
pub const SCHEME: &str = "oci://";

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageRef {
    inner: oci_client::Reference,
}

/// Why a reference could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid image reference {reference:?}: {reason}; write REGISTRY/REPOSITORY:TAG or \
     REGISTRY/REPOSITORY@sha256:DIGEST (optionally prefixed with oci://)"
)]
pub struct ParseError {
    /// The text given.
    pub reference: String,
    /// What is wrong with it.
    pub reason: String,
}

impl ImageRef {
    /// Parses a reference, with or without the `oci://` scheme.
    ///
    /// # Errors
    /// [`ParseError`] naming the reference and what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let bare = text.strip_prefix(SCHEME).unwrap_or(text);
        let err = |reason: String| ParseError {
            reference: text.to_owned(),
            reason,
        };
        if bare.is_empty() {
            return Err(err("it is empty".to_owned()));
        }
        let inner: oci_client::Reference = bare
            .parse()
            .map_err(|e: oci_client::ParseError| err(e.to_string()))?;
        if let Some(digest) = inner.digest()
            && !digest.starts_with("sha256:")
        {
            return Err(err(format!("digest {digest} is not sha256")));
        }
        Ok(Self { inner })
    }

    /// The registry host (with port), as written (`docker.io` for Docker Hub).
    #[must_use]
    pub fn registry(&self) -> &str {
        self.inner.registry()
    }

    /// The host the requests go to (`index.docker.io` for Docker Hub): the key for credentials and
    /// for the insecure-registry list.
    #[must_use]
    pub fn registry_host(&self) -> &str {
        self.inner.resolve_registry()
    }

    /// The repository path.
    #[must_use]
    pub fn repository(&self) -> &str {
        self.inner.repository()
    }

    /// The tag, when the reference has one (and no digest was given with it).
    #[must_use]
    pub fn tag(&self) -> Option<&str> {
        self.inner.tag()
    }

    /// The digest (`sha256:<hex>`) when the reference pins one.
    #[must_use]
    pub fn digest(&self) -> Option<&str> {
        self.inner.digest()
    }

    /// The same repository at `digest`.
    #[must_use]
    pub fn with_digest(&self, digest: &str) -> Self {
        Self {
            inner: self.inner.clone_with_digest(digest.to_owned()),
        }
    }

    /// The same repository with `tag` (pushes).
    #[must_use]
    pub fn with_tag(&self, tag: &str) -> Self {
        Self {
            inner: oci_client::Reference::with_tag(
                self.inner.registry().to_owned(),
                self.inner.repository().to_owned(),
                tag.to_owned(),
            ),
        }
    }

    pub(super) fn as_oci(&self) -> &oci_client::Reference {
        &self.inner
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

impl std::str::FromStr for ImageRef {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Whether a `--catalog` argument names an image rather than a path. `path_exists` is whether a
/// file or directory of that name exists: an existing path always wins over a bare reference.
#[must_use]
pub fn is_image_reference(arg: &str, path_exists: bool) -> bool {
    if arg.starts_with(SCHEME) || arg.contains("@sha256:") {
        return true;
    }
    if path_exists || arg.starts_with('/') || arg.starts_with('.') || arg.starts_with('~') {
        return false;
    }
    match arg.split_once('/') {
        Some((host, rest)) => {
            !rest.is_empty() && (host.contains('.') || host.contains(':') || host == "localhost")
        }
        None => false,
    }
}

/// `sha256:<64 hex>`, lowercase: the only digests this module produces or accepts as cache keys.
#[must_use]
pub fn sha256_hex(digest: &str) -> Option<&str> {
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then_some(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn the_oci_scheme_is_optional_and_a_missing_tag_means_latest() {
        let a = ImageRef::parse("oci://127.0.0.1:5000/catalogs/redis:v1").unwrap();
        assert_eq!(a.registry(), "127.0.0.1:5000");
        assert_eq!(a.registry_host(), "127.0.0.1:5000");
        assert_eq!(a.repository(), "catalogs/redis");
        assert_eq!(a.tag(), Some("v1"));
        assert_eq!(a.digest(), None);
        let b = ImageRef::parse("quay.io/operatorhubio/catalog").unwrap();
        assert_eq!(b.tag(), Some("latest"));
        assert_eq!(b.to_string(), "quay.io/operatorhubio/catalog:latest");
    }

    #[test]
    fn a_digest_reference_pins_the_digest() {
        let r = ImageRef::parse(&format!("localhost:5000/c@{DIGEST}")).unwrap();
        assert_eq!(r.digest(), Some(DIGEST));
        assert_eq!(r.tag(), None);
        assert_eq!(sha256_hex(DIGEST).map(str::len), Some(64));
    }

    #[test]
    fn docker_hub_references_resolve_to_the_index_host() {
        let r = ImageRef::parse("docker.io/library/busybox:1").unwrap();
        assert_eq!(r.registry_host(), "index.docker.io");
    }

    #[test]
    fn bad_references_are_refused_naming_the_text_and_the_reason() {
        for bad in [
            "oci://",
            "Registry.io/UPPER:tag",
            "host:5000/repo@sha256:abc",
            "a/b:bad tag",
        ] {
            let err = ImageRef::parse(bad).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(&format!("{bad:?}")), "{msg}");
            assert!(msg.contains("REGISTRY/REPOSITORY:TAG"), "{msg}");
        }
    }

    #[test]
    fn only_references_with_a_registry_host_are_taken_for_images() {
        assert!(is_image_reference("oci://anything", false));
        assert!(is_image_reference(&format!("repo@{DIGEST}"), true));
        assert!(is_image_reference("127.0.0.1:5000/catalog:v1", false));
        assert!(is_image_reference("quay.io/org/catalog:latest", false));
        assert!(is_image_reference("localhost/catalog", false));
        // An existing path wins; relative and absolute paths are paths.
        assert!(!is_image_reference("quay.io/org/catalog", true));
        assert!(!is_image_reference("./catalog", false));
        assert!(!is_image_reference("../x.y/z", false));
        assert!(!is_image_reference("/abs/dir", false));
        assert!(!is_image_reference("catalog", false));
        assert!(!is_image_reference("my/catalog", false));
        assert!(!is_image_reference("x.y/", false));
    }

    #[test]
    fn only_lowercase_sha256_digests_are_cache_keys() {
        assert!(sha256_hex("sha512:00").is_none());
        assert!(sha256_hex(&DIGEST.to_uppercase()).is_none());
        assert!(sha256_hex("sha256:../../etc").is_none());
    }
}
