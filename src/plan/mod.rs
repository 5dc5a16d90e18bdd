//! plan: the pure core of installation — what to create for a resolved bundle, and what a
//! ClusterServiceVersion should do next.
//!
//! # The pipeline these modules serve
//!
//! Upstream OLM splits installation between two controllers: the catalog-operator turns a
//! resolved bundle into an InstallPlan whose `status.plan` lists every object to create
//! (`resolver/steps.go`, `resolver/rbac.go`) and executes it (`catalog/operator.go:ExecutePlan`);
//! the olm-operator drives each CSV through `Pending → InstallReady → Installing →
//! Succeeded` (`olm/operator.go:transitionCSVState`), creates the operator Deployments
//! (`install/deployment.go`) and keeps OperatorGroups and their members consistent
//! (`olm/operatorgroup.go`). olm-rs keeps the same split, but every *decision* lives here as
//! a synchronous function over plain values, and the shell (`src/controller`) only observes
//! the cluster, calls these functions and applies what they return:
//!
//! - [`operator_group`]: an OperatorGroup's target namespaces, the annotations it stamps on
//!   member CSVs, the install-mode support rule and "exactly one OperatorGroup per namespace".
//! - [`bundle_lookup`]: a bundle whose manifests live in its image: whether it must be pulled,
//!   the unpack timeout, and the lookup's state and conditions.
//! - [`decode`]: a bundle's manifests as upstream's typed decoding reads them (unknown fields
//!   dropped, nulls as absent, Go's zero values), before they become steps.
//! - [`steps`]: a bundle's manifests → the InstallPlan steps in apply order, with OLM's labels,
//!   generated RBAC and deterministic names; the RBAC that grants an operator its
//!   permissions in every target namespace; owner references added at apply time.
//! - [`preview`]: what approving an InstallPlan will change: each step new, changed (field by
//!   field) or unchanged, the RBAC it grants with the powers worth a second look, the images.
//! - [`user_roles`]: the ClusterRoles that let a namespace's people use its operators' APIs
//!   (per API and aggregated per OperatorGroup) and the group's `olm.providedAPIs`.
//! - [`crd_safety`]: whether an InstallPlan may update an existing CRD (no stored version
//!   dropped, existing objects valid under the new schema).
//! - [`olm_config`]: whether copied CSVs are on (the `cluster` OLMConfig and
//!   `--disable-copied-csvs`) and that OLMConfig's status conditions.
//! - [`csv`]: the CSV state machine: observed cluster state in, next phase, requirement
//!   status and desired Deployments out.
//! - [`operator_condition`]: each CSV's OperatorCondition, its Role and RoleBinding, and
//!   whether its `Upgradeable` condition holds an upgrade away from the CSV.
//!
//! Nothing here reads a clock, a file or the network: time is a parameter (`now`), and the
//! cluster is whatever the shell put into the input values. That makes every rule testable
//! with table tests and makes every decision reproducible from a log line.
//!
//! # Deterministic names
//!
//! Upstream names generated objects with a hash of their inputs (FNV-32a over a deep hash,
//! rendered with Kubernetes' "safe" alphabet) and InstallPlans with a random
//! `generateName`. olm-rs uses the same *shape* of name but a hash we define ourselves —
//! FNV-1a 64 over the JSON serialisation of the inputs, rendered with the same kind of
//! vowel-free alphabet ([`SAFE_ALPHABET`]) — so names are stable across restarts and
//! versions of olm-rs, and a controller killed mid-install recreates exactly the same
//! objects instead of duplicates. The names will not equal upstream's byte for byte; no
//! client relies on that.

use serde::Serialize;

pub mod api_service;
pub mod bundle_lookup;
pub mod catalog_source;
pub mod copied_csv;
pub mod crd_safety;
pub mod csv;
pub mod decode;
pub mod install_plan;
pub mod olm_config;
pub mod operator;
pub mod operator_condition;
pub mod operator_group;
pub mod package_manifest;
pub mod preview;
pub mod steps;
pub mod subscription;
pub mod user_roles;

/// Longest Kubernetes object name we generate (a DNS-1123 label; also the label-value limit).
pub const MAX_NAME_LENGTH: usize = 63;

/// Characters used to render hashes in names: lowercase consonants and digits without vowels
/// or look-alikes (0/1/3), so generated names never spell words (the same idea as
/// Kubernetes' `SafeEncodeString`).
pub const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// FNV-1a 64-bit hash of `bytes`.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(PRIME))
}

/// FNV-1a 64 of a value's JSON serialisation. Serialising the API types cannot fail; if a
/// foreign value ever did, it hashes as its debug-less empty form (still deterministic).
pub fn hash_json<T: Serialize + ?Sized>(value: &T) -> u64 {
    fnv1a_64(&serde_json::to_vec(value).unwrap_or_default())
}

/// Renders `hash` as `len` characters of [`SAFE_ALPHABET`] (least significant digit first).
pub fn encode_hash(hash: u64, len: usize) -> String {
    let base = SAFE_ALPHABET.len() as u64;
    let mut rest = hash;
    (0..len)
        .map(|_| {
            let digit = (rest % base) as usize;
            rest /= base;
            char::from(SAFE_ALPHABET[digit])
        })
        .collect()
}

/// `<base>-<hash>`, with `base` cut so the whole name fits in [`MAX_NAME_LENGTH`] and stripped
/// of trailing `-`/`.` so the name stays a valid DNS-1123 name (upstream's `generateName` in
/// `resolver/rbac.go` cuts the same way).
pub fn name_with_hash(base: &str, hash: &str) -> String {
    let room = MAX_NAME_LENGTH.saturating_sub(hash.len() + 1);
    let mut cut: String = base.chars().take(room).collect();
    while cut.ends_with(['-', '.']) {
        cut.pop();
    }
    if cut.is_empty() {
        hash.to_owned()
    } else {
        format!("{cut}-{hash}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a_64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn encoded_hashes_use_only_the_safe_alphabet_and_have_the_asked_length() {
        let s = encode_hash(u64::MAX, 10);
        assert_eq!(s.len(), 10);
        assert!(s.bytes().all(|b| SAFE_ALPHABET.contains(&b)));
        assert_ne!(encode_hash(1, 5), encode_hash(2, 5));
    }

    #[test]
    fn a_long_base_is_cut_so_the_name_fits_in_63_characters() {
        let name = name_with_hash(&"x".repeat(100), "abcde");
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("-abcde"));
        let name = name_with_hash(&format!("{}-yyy", "x".repeat(56)), "abcde");
        // the cut lands on the '-', which is dropped.
        assert_eq!(name, format!("{}-abcde", "x".repeat(56)));
        assert_eq!(name_with_hash("short", "h"), "short-h");
    }
}
