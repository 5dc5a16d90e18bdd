//! block-yaml: block-style YAML in and out, fast, with no knowledge of what the documents mean.
//!
//! - [`decode`]: a decoder for the block-style YAML that catalog tools write, which yields exactly
//!   what serde-saphyr yields for the same text or declines (then the caller decodes the text with
//!   serde-saphyr). It exists because it is several times faster than any general YAML parser on
//!   real catalogs (the large-catalog load bench: 45 MB of YAML in 0.18 s, against 0.78 s for
//!   serde_yaml and 1.16 s for serde-saphyr); no crate decodes this subset faster.
//! - [`reference`]: serde-saphyr with the options that make it read YAML as [`decode`] does: the
//!   fallback for what [`decode`] declines, and its oracle.
//! - [`json`]: YAML values converted to JSON values the way `sigs.k8s.io/yaml` does.
//! - [`write()`]: JSON values written as kubectl-style block YAML, deterministic and re-readable.
//!
//! serde-saphyr is the oracle: the tests beside each module compare with it, construct by
//! construct and on random texts.

mod decode;
pub mod json;
pub mod reference;
mod write;

pub use decode::{Error, decode};
pub use write::to_yaml as write;
