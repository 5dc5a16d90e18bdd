//! catalog: file-based catalogs (FBC) as operator-registry defines them, from raw blobs to a
//! validated, linked model.
//!
//! The layers follow operator-registry's `alpha/declcfg`, `alpha/property` and `alpha/model`:
//!
//! 1. [`declcfg`]: the raw blobs (`olm.package`, `olm.channel`, `olm.bundle`, `olm.deprecations`,
//!    and any other schema kept verbatim), decoded from YAML/JSON documents by [`crate::codec`],
//!    each remembering the file and document it came from;
//! 2. [`property`]: typed bundle properties (`olm.package`, `olm.gvk`, `olm.package.required`,
//!    `olm.bundle.object`, `olm.csv.metadata`, ...);
//! 3. [`model`]: the linked catalog, package → channels → bundles, built without ever failing;
//! 4. [`validate`](mod@validate): every rule `opm validate` applies, collected into one [`ValidationReport`]
//!    of [`Problem`]s ([`problem`], shared by the model builder and the validator so that neither
//!    imports the other).
//!
//! Beside them, [`load`] is the one loader that turns texts (files, ConfigMap data, the catalog
//! embedded in the controller) into a servable model, and [`legacy`] converts upstream's legacy
//! ConfigMap catalog (`packages`, `clusterServiceVersions`, `customResourceDefinitions`) to FBC.
//!
//! Everything here is pure: files are read by [`crate::source`].
//!
//! ```
//! use olm_rs::catalog::{declcfg::DeclarativeConfig, validate};
//!
//! let text = r#"
//! schema: olm.package
//! name: redis-operator
//! defaultChannel: stable
//! ---
//! schema: olm.channel
//! package: redis-operator
//! name: stable
//! entries:
//!   - name: redis-operator.v0.1.0
//! ---
//! schema: olm.bundle
//! package: redis-operator
//! name: redis-operator.v0.1.0
//! image: quay.io/example/redis-operator-bundle:v0.1.0
//! properties:
//!   - type: olm.package
//!     value: {packageName: redis-operator, version: 0.1.0}
//! "#;
//! let (cfg, decode_problems) = DeclarativeConfig::from_str_with_problems("catalog.yaml", text);
//! let (model, report) = validate::validate_with(cfg, decode_problems);
//! assert!(report.passed(), "{report}");
//! let pkg = model.package("redis-operator").unwrap();
//! assert_eq!(pkg.default_channel().and_then(|c| c.head()), Some("redis-operator.v0.1.0"));
//! ```

pub mod csv_shape;
pub mod declcfg;
pub mod legacy;
pub mod load;
pub mod model;
pub mod packed;
pub mod problem;
pub mod property;
pub mod raw;
pub mod validate;

pub use declcfg::DeclarativeConfig;
pub use model::Model;
pub use problem::{Problem, Violation};
pub use validate::{ValidationReport, validate, validate_with};
