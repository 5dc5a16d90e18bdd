//! reference: serde-saphyr, configured to read YAML the way this crate's fast decoder reads it and
//! the way Kubernetes tooling expects: YAML 1.2 booleans only (`true`/`false` in three casings,
//! not `yes`/`on`/`y`), integers with leading zeros or underscores kept as strings (as serde_yaml
//! did, so `007` and `1_000` stay text), a repeated key keeps its last value, and non-finite floats
//! passed on so that [`crate::json`] can refuse them with its own message.
//!
//! It is both the fallback for texts [`crate::decode`] declines and the oracle its tests compare
//! with; keeping the options in one place keeps the two in agreement.

use serde::de::DeserializeOwned;
use serde_saphyr::{DuplicateKeyPolicy, NonFiniteFloatPolicy, Options};

pub use serde_saphyr::Error;

/// The options both uses share; see the module docs.
#[must_use]
pub fn options() -> Options {
    serde_saphyr::options! {
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        underscored_numbers_as_strings: true,
        duplicate_keys: DuplicateKeyPolicy::PassThrough,
        non_finite_float_policy: NonFiniteFloatPolicy::PassThrough,
        with_snippet: false,
    }
}

/// Decodes the non-empty documents of `text` into `T`: every document read before the first
/// error, and that error (a syntax error, or a value `T` refused), if any.
pub fn documents<T: DeserializeOwned>(text: &str) -> (Vec<T>, Option<Error>) {
    // The whole text in one go when it is fine (the common case, and the quicker API) ...
    match serde_saphyr::from_multiple_with_options::<T>(text, options()) {
        Ok(documents) => (documents, None),
        // ... and document by document when it is not, to keep what came before the error.
        Err(_) => {
            let mut input = text.as_bytes();
            let mut documents = Vec::new();
            for item in serde_saphyr::read_with_options::<_, T>(&mut input, options()) {
                match item {
                    Ok(document) => documents.push(document),
                    Err(err) => return (documents, Some(err)),
                }
            }
            (documents, None)
        }
    }
}
