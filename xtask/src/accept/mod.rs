//! accept: `cargo xtask accept`: whole-catalog acceptance (issue 12, item 1). Installs every
//! package of a catalog on the local cluster and compares each outcome with the expected one.
//!
//! Default catalog: `certified-operators-v4.16.tar.zst` of the shared corpus (52 packages, every
//! bundle's manifests inlined as `olm.bundle.object`), compared with
//! tests/fixtures/accept-catalog/certified-v4.16.tsv. Any other catalog runs the same way:
//! `--catalog DIR|ARCHIVE|IMAGE`, with `--expect FILE` to compare (without it the outcomes of
//! another catalog are reported, not compared). A copied CSV (label olm.copiedFrom) in a
//! namespace is never counted as that namespace's install.
//!
//! How:
//!  1. An archive is unpacked under target/ (removed at exit).
//!  2. `kubectl-olm catalog serve` serves it on loopback gRPC and HTTP; the bench reads the
//!     catalog back from the catalogd HTTP API (`/api/v1/all`) and starts `olm-controller run`
//!     (binaries from --bin-dir, default target/debug), its log in target/accept-catalog/ (kept
//!     when the run fails).
//!  3. A CatalogSource `sourceType: http` (or `grpc` with `--source grpc`: its ListBundles leaves
//!     out the manifests of bundles with an image, so those installs pull bundle images) in the
//!     controller's namespace, awaited READY.
//!  4. Per package, all at once: namespace `acc-<package>`, an OperatorGroup from the default
//!     channel head CSV's installModes ([`plan::choose_operator_group`]), an Automatic
//!     Subscription to the default channel. Every 2 s (bounded by --timeout) each install is
//!     classified ([`plan::classify`]) until settled ([`plan::Settler`]); what is still in
//!     progress at the deadline is `Timeout`. A `RequirementsNotMet` outcome names what the API
//!     server shows of each CRD not Present.
//!  5. Webhook objects of each Succeeded package whose CSV declares webhookdefinitions are
//!     checked ([`webhooks::check_webhooks`]).
//!  6. One line per package, totals, a TSV (--out: package, outcome, why, seconds, webhooks), the
//!     outcomes compared with the expect file. Exit 0 when every package matches, 1 otherwise, 2
//!     on set-up errors.
//!  7. Clean-up (unless --keep): the namespaces (while the controller still runs: CSV
//!     finalizers), the CatalogSource, cluster-scoped objects labelled `olm.owner.namespace` of
//!     those namespaces, the CRDs the catalog's bundles own (awaited, 300 s; each CRD still there
//!     is printed with its state), the run's Operator objects; then both processes are stopped.
//!  8. --walks: per package that reached Succeeded (and none of whose CRDs is still there, else
//!     `CRDsTerminating`), a Subscription starting at the oldest entry of the default channel; the
//!     CSVs the namespace went through (every InstallPlan seen, watched for the whole phase) must
//!     equal the path `kubectl-olm catalog upgrade-path` prints, or stop where an install-mode
//!     change predicts (`InstallModeChange`). Results in <out>-walks.tsv.

mod cleanup;
mod client;
mod observe;
pub mod plan;
mod run;
mod setup;
pub mod upstream;
mod walks;
pub mod webhooks;

#[cfg(test)]
mod tests;

pub use run::run;
