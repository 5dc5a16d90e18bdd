//! catalog_source: the CatalogSource's own decisions (pure): which catalog its spec asks for, and
//! the status message of a catalog that is served.
//!
//! The shell ([`crate::controller::catalog_source`]) reads the ConfigMap, loads it through the
//! one catalog loader ([`crate::catalog::load`]) and writes what these functions return. Messages
//! say what is wrong and how to fix it; upstream's reasons are kept
//! ([`crate::api::reasons::catalog_source`]).

use kube::ResourceExt;

use crate::{
    api::{
        reasons::catalog_source as reason,
        v1alpha1::{CatalogSource, SourceType},
    },
    catalog::load::summarise,
};

/// Our `sourceType` for the catalog embedded in the controller.
pub const SOURCE_TYPE_BUILTIN: &str = "builtin";

/// What the spec asks for, once validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourcePlan {
    /// Read this ConfigMap (in the CatalogSource's namespace).
    ConfigMap(String),
    /// Serve the built-in catalog.
    Builtin,
    /// The spec is invalid or unsupported: (reason, message).
    Invalid(&'static str, String),
}

/// Validates the spec.
pub fn plan_source(cs: &CatalogSource) -> SourcePlan {
    let name = cs.name_any();
    match &cs.spec.source_type {
        t if t.is_config_map() => match cs.spec.config_map.as_deref().filter(|c| !c.is_empty()) {
            Some(cm) => SourcePlan::ConfigMap(cm.to_owned()),
            None => SourcePlan::Invalid(
                reason::SPEC_INVALID_ERROR,
                format!(
                    "CatalogSource {name} has sourceType {} but no spec.configMap; set spec.configMap to the name of a ConfigMap in this namespace holding the catalog",
                    t.as_str()
                ),
            ),
        },
        SourceType::Grpc => SourcePlan::Invalid(
            reason::REGISTRY_SERVER_ERROR,
            format!(
                "CatalogSource {name}: sourceType grpc (image or address) is not supported by olm-rs, which runs no registry pods; put the catalog's FBC documents in a ConfigMap and use sourceType: configmap, or use sourceType: builtin for the shipped catalog"
            ),
        ),
        SourceType::Other(t) if t == SOURCE_TYPE_BUILTIN => SourcePlan::Builtin,
        other => SourcePlan::Invalid(
            reason::SPEC_INVALID_ERROR,
            format!(
                "unknown sourcetype: {}; CatalogSource {name} must use sourceType configmap (with spec.configMap) or builtin",
                other.as_str()
            ),
        ),
    }
}

/// The status message of a catalog that is served: nothing when the whole catalog was usable,
/// otherwise what was left out of it and how to see every problem.
pub fn served_message(left_out: &[String]) -> Option<String> {
    (!left_out.is_empty()).then(|| {
        format!(
            "catalog served without the parts that have problems ({} in all): {}; fix them in the catalog (`kubectl-olm catalog validate DIR` lists every problem)",
            left_out.len(),
            summarise(left_out)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1alpha1::CatalogSourceSpec;

    fn cs(source_type: &str, config_map: Option<&str>) -> CatalogSource {
        let mut spec: CatalogSourceSpec =
            serde_json::from_value(serde_json::json!({"sourceType": source_type})).unwrap();
        spec.config_map = config_map.map(Into::into);
        CatalogSource::new("c", spec)
    }

    #[test]
    fn configmap_and_internal_need_a_config_map() {
        assert_eq!(
            plan_source(&cs("configmap", Some("cm"))),
            SourcePlan::ConfigMap("cm".into())
        );
        assert_eq!(
            plan_source(&cs("internal", Some("cm"))),
            SourcePlan::ConfigMap("cm".into())
        );
        let SourcePlan::Invalid(r, m) = plan_source(&cs("configmap", None)) else {
            panic!()
        };
        assert_eq!(r, "SpecInvalidError");
        assert!(m.contains("spec.configMap"), "{m}");
    }

    #[test]
    fn unknown_and_grpc_source_types_are_reported_with_the_fix() {
        let SourcePlan::Invalid(r, m) = plan_source(&cs("sqlite", None)) else {
            panic!()
        };
        assert_eq!(r, "SpecInvalidError");
        assert!(m.starts_with("unknown sourcetype: sqlite"), "{m}");
        let SourcePlan::Invalid(r, m) = plan_source(&cs("grpc", None)) else {
            panic!()
        };
        assert_eq!(r, "RegistryServerError");
        assert!(m.contains("sourceType: configmap"), "{m}");
        assert_eq!(plan_source(&cs("builtin", None)), SourcePlan::Builtin);
    }

    #[test]
    fn a_catalog_served_with_parts_left_out_says_so_and_a_whole_one_says_nothing() {
        assert_eq!(served_message(&[]), None);
        let message = served_message(&["package \"a\": channel \"s\": entry a.v2 has no bundle".into()])
            .expect("a message");
        assert!(
            message.contains("a.v2") && message.contains("1 in all"),
            "{message}"
        );
        assert!(message.contains("catalog validate"), "{message}");
    }
}
