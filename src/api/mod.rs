//! api: the `operators.coreos.com` custom resources, wire-compatible with upstream OLM v0.
//!
//! # The rule this module enforces
//!
//! A manifest that works with upstream OLM must work with olm-rs unchanged, and a
//! `kubectl get sub,ip,csv,og,catsrc` must look the same. So the five kinds OLM users write
//! by hand — Subscription, InstallPlan, ClusterServiceVersion and CatalogSource
//! (`operators.coreos.com/v1alpha1`) and OperatorGroup (`operators.coreos.com/v1`, with the
//! legacy `v1alpha2` still served) — are declared here with the same JSON field names,
//! the same plurals, short names (`sub`/`subs`, `ip`, `csv`/`csvs`, `catsrc`, `og`), the
//! `olm` category, the same printer columns, the same required fields and a status
//! subresource, as in operator-framework/api's `crds/operators.coreos.com_*.yaml`.
//!
//! The Rust types are written for this crate (nothing is generated from or copied out of
//! the Go sources); only the observable contract is shared:
//!
//! - **Field names and requiredness.** A field that upstream's schema requires is a plain
//!   value here (`String`, `bool`, a struct); an optional field is an `Option` or an empty
//!   collection that is skipped when serialising, so a server-side apply never claims
//!   fields the controller did not mean to set.
//! - **Go's zero values.** Upstream decodes its objects with Go's `encoding/json`, which reads
//!   a missing field as its zero value and writes it back (`""`, `false`, an empty list). So
//!   every object upstream accepts must decode here too: a required field of the
//!   ClusterServiceVersion is `#[serde(default)]` (a bundle's CRD description often has no
//!   `resources[].name`) and serialised even when empty, while the schema keeps upstream's
//!   `required` list (the `GoRequired` schema transform).
//! - **Open string sets.** Phases, reasons, approval modes and source types are Rust enums
//!   with one variant per upstream spelling plus `Other(String)`. Upstream's CRDs put no
//!   `enum` on most of these fields (the controllers validate them), so a cluster may hold
//!   any string; a watcher must never fail to decode an object because someone wrote
//!   `installPlanApproval: manual`. Unknown values round-trip verbatim and the controller
//!   decides what they mean (for approval, unlike upstream's `GetInstallPlanApproval`, an
//!   unknown value is `Manual` and reported; the Subscription CRD also restricts it to
//!   `Automatic` / `Manual`).
//! - **Core Kubernetes shapes** (DeploymentSpec, PolicyRule, LabelSelector, EnvVar,
//!   Toleration, ResourceRequirements, ObjectReference, metav1.Condition) are the
//!   `k8s-openapi` types, so their schemas and serialisation match the API server's.
//! - **Free-form JSON** (descriptor values) is kept as `serde_json::Value` and marked
//!   `x-kubernetes-preserve-unknown-fields` in the schema.
//!
//! `operators.coreos.com/v1` Operator, the cluster-scoped read-only view of one installed
//! operator that OLM itself writes ([`v1::Operator`]), is served the same way, and so is
//! OperatorCondition (`v2` stored, `v1` still served; [`v2::OperatorCondition`]), through which
//! an operator says "do not upgrade me now", and so is the cluster-scoped singleton `cluster` of
//! OLM's global switches ([`v1::OLMConfig`]).
//!
//! The CRDs are generated from these types by [`crds`], post-processed to the few upstream
//! details kube's derive cannot express (the multi-version OperatorGroup and OperatorCondition,
//! descriptions), and checked in under `manifests/crds/` by
//! `olm-controller crds --dir manifests/crds`; `tests/it/crds.rs` fails when the checked-in files
//! drift.
//!
//! Well-known condition types and reasons live in [`reasons`]; label and annotation keys
//! OLM reads and writes live in [`labels`].

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::{CustomResourceExt, crd::merge_crds};
use thiserror::Error;

pub mod labels;
pub mod reasons;
pub mod v1;
pub mod v1alpha1;
pub mod v1alpha2;
pub mod v2;

/// The API group of every OLM custom resource.
pub const GROUP: &str = "operators.coreos.com";

/// The category every OLM CRD is listed under (`kubectl get olm`).
pub const CATEGORY: &str = "olm";

/// The metadata fields the API server fills in, which differ between any two copies of an
/// object: a step's manifest leaves them out (and the tests' comparison with upstream drops them).
pub const SERVER_POPULATED_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
];

/// Errors from turning the API types into CRD manifests.
#[derive(Debug, Error)]
pub enum ApiError {
    /// Two versions of one kind could not be merged into one CRD.
    #[error("failed to merge the versions of CRD {crd}: {source}")]
    MergeVersions {
        /// The CRD name, e.g. `operatorgroups.operators.coreos.com`.
        crd: String,
        /// What kube reported.
        #[source]
        source: kube::core::crd::MergeError,
    },
    /// A CRD could not be rendered as YAML.
    #[error("failed to render CRD {crd} as YAML: {message}")]
    RenderYaml {
        /// The CRD name.
        crd: String,
        /// What the YAML serialiser reported.
        message: String,
    },
    /// A YAML document could not be read into an API type.
    #[error("failed to parse {what} from YAML: {message}")]
    ParseYaml {
        /// What was being parsed (a kind or a file name).
        what: String,
        /// What the YAML deserialiser reported.
        message: String,
    },
}

/// The OLM CRDs, in a stable order (alphabetical by plural, like upstream's file names):
/// catalogsources, clusterserviceversions, installplans, operatorconditions, operatorgroups,
/// operators, subscriptions.
///
/// # Errors
/// [`ApiError::MergeVersions`] if the OperatorGroup versions cannot be merged (a bug in
/// this module, never caused by input).
pub fn crds() -> Result<Vec<CustomResourceDefinition>, ApiError> {
    let og_name = v1::OperatorGroup::crd_name().to_owned();
    let operator_group = merge_crds(
        vec![v1::OperatorGroup::crd(), v1alpha2::OperatorGroup::crd()],
        "v1",
    )
    .map_err(|source| ApiError::MergeVersions { crd: og_name, source })?;
    // OperatorCondition: v1 served, v2 stored, as upstream.
    let oc_name = v2::OperatorCondition::crd_name().to_owned();
    let operator_condition = merge_crds(
        vec![v1::OperatorCondition::crd(), v2::OperatorCondition::crd()],
        "v2",
    )
    .map_err(|source| ApiError::MergeVersions { crd: oc_name, source })?;
    let mut crds = vec![
        v1alpha1::CatalogSource::crd(),
        v1alpha1::ClusterServiceVersion::crd(),
        v1alpha1::InstallPlan::crd(),
        v1::OLMConfig::crd(),
        operator_condition,
        operator_group,
        v1::Operator::crd(),
        v1alpha1::Subscription::crd(),
    ];
    for crd in &mut crds {
        // Upstream CRDs name their list kind explicitly; kube leaves it to the server default.
        crd.spec.names.list_kind = Some(format!("{}List", crd.spec.names.kind));
    }
    // Upstream's Operator, OperatorCondition and OLMConfig do not require their spec; kube's
    // derive always does.
    for crd in crds.iter_mut().filter(|c| {
        matches!(
            c.spec.names.kind.as_str(),
            "Operator" | "OperatorCondition" | "OLMConfig"
        )
    }) {
        for version in &mut crd.spec.versions {
            if let Some(schema) = version
                .schema
                .as_mut()
                .and_then(|s| s.open_api_v3_schema.as_mut())
            {
                schema.required = schema
                    .required
                    .take()
                    .map(|r| r.into_iter().filter(|f| f != "spec").collect::<Vec<_>>())
                    .filter(|r| !r.is_empty());
            }
        }
    }
    Ok(crds)
}

/// The file name upstream uses for a CRD: `<group>_<plural>.yaml`.
pub fn crd_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural)
}

/// The comment heading every generated CRD file.
pub const GENERATED_HEADER: &str =
    "# Generated by `olm-controller crds --dir manifests/crds` from src/api; do not edit.\n";

/// Every CRD as `(file name, YAML text)`, the content of `manifests/crds/`.
///
/// # Errors
/// [`ApiError`] if a CRD cannot be built or rendered.
pub fn crd_files() -> Result<Vec<(String, String)>, ApiError> {
    crds()?
        .iter()
        .map(|crd| {
            Ok((
                crd_file_name(crd),
                format!("{GENERATED_HEADER}{}", crd_yaml(crd)?),
            ))
        })
        .collect()
}

/// All CRDs as one multi-document YAML stream (`---` before each document), in [`crds`] order.
///
/// # Errors
/// [`ApiError`] if a CRD cannot be built or rendered.
pub fn crds_yaml_stream() -> Result<String, ApiError> {
    let mut out = String::new();
    for crd in crds()? {
        out.push_str("---\n");
        out.push_str(&crd_yaml(&crd)?);
    }
    Ok(out)
}

fn crd_yaml(crd: &CustomResourceDefinition) -> Result<String, ApiError> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    to_yaml_string(crd).map_err(|message| ApiError::RenderYaml { crd: name, message })
}

/// Renders a value as YAML text (through [`crate::codec`], the one place YAML is written).
///
/// # Errors
/// The encoder's message, if the value cannot be represented as YAML.
pub fn to_yaml_string<T: serde::Serialize>(value: &T) -> Result<String, String> {
    crate::codec::to_yaml_string(value).map_err(|e| e.to_string())
}

/// Parses one YAML document into a value; `what` names the input in the error.
///
/// # Errors
/// [`ApiError::ParseYaml`] naming `what` and the decoder's message (with line and column).
pub fn from_yaml_str<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T, ApiError> {
    crate::codec::from_yaml_str(what, text).map_err(|e| ApiError::ParseYaml {
        what: what.to_owned(),
        message: match e {
            crate::codec::Error::Deserialize { message, .. } => message,
            other => other.to_string(),
        },
    })
}

/// Schema for a field holding arbitrary JSON: any value, kept as written.
pub(crate) fn preserve_unknown_fields(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}

/// Schema transform for a struct whose fields Go declares without `omitempty`: Go's decoder
/// accepts them missing (the zero value) and its encoder always writes them, so the Rust
/// field is `#[serde(default)]` and always serialised, while the CRD keeps upstream's
/// `required` list and no `default` (serde's default would otherwise put both in the schema).
///
/// Use as `#[schemars(transform = GoRequired(&["name", "kind"]))]`, naming the fields in
/// declaration order.
pub(crate) struct GoRequired(pub &'static [&'static str]);

impl schemars::transform::Transform for GoRequired {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        if let Some(properties) = schema
            .get_mut("properties")
            .and_then(serde_json::Value::as_object_mut)
        {
            for name in self.0 {
                if let Some(property) = properties
                    .get_mut(*name)
                    .and_then(serde_json::Value::as_object_mut)
                {
                    property.remove("default");
                }
            }
        }
        schema.insert("required".to_owned(), serde_json::json!(self.0));
    }
}

/// Declares an open set of upstream string constants: one variant per known spelling plus
/// `Other(String)`, serialised as the bare string, schema `type: string`.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : default $default:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $value:literal, )+
        }
    ) => {
        $crate::api::string_enum! {
            $(#[$meta])*
            $vis enum $name {
                $( $(#[$vmeta])* $variant => $value, )+
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::$default
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $value:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A spelling this version does not know; kept verbatim so it round-trips.
            Other(String),
        }

        impl $name {
            /// Every known value, in declaration order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// The upstream spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $value, )+
                    Self::Other(s) => s,
                }
            }

            /// Reads a spelling; unknown ones become `Other` (never fails).
            pub fn parse(s: &str) -> Self {
                match s {
                    $( $value => Self::$variant, )+
                    other => Self::Other(other.to_owned()),
                }
            }

            /// True for a spelling this version knows.
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Other(_))
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self::parse(s)
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                ser.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(de)?;
                Ok(Self::parse(&s))
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({ "type": "string" })
            }
        }
    };
}
pub(crate) use string_enum;

string_enum! {
    /// `True`, `False` or `Unknown`, the status of a condition (`corev1.ConditionStatus`).
    pub enum ConditionStatus: default Unknown {
        /// The condition holds.
        True => "True",
        /// The condition does not hold.
        False => "False",
        /// The controller cannot tell.
        Unknown => "Unknown",
    }
}

impl ConditionStatus {
    /// `True` for `true`, `False` for `false`.
    pub fn from_bool(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    string_enum! {
        enum Colour {
            Red => "Red",
            Empty => "",
        }
    }

    #[test]
    fn open_string_enums_round_trip_known_and_unknown_spellings() {
        let known: Colour = serde_json::from_str("\"Red\"").unwrap();
        assert_eq!(known, Colour::Red);
        let empty: Colour = serde_json::from_str("\"\"").unwrap();
        assert_eq!(empty, Colour::Empty);
        let other: Colour = serde_json::from_str("\"red\"").unwrap();
        assert_eq!(other, Colour::Other("red".into()));
        assert!(!other.is_known());
        assert_eq!(serde_json::to_string(&other).unwrap(), "\"red\"");
        assert_eq!(Colour::KNOWN, &[Colour::Red, Colour::Empty]);
    }

    /// Parses a fixture into `T`, serialises it back and checks nothing was lost or changed.
    fn assert_round_trip<T>(name: &str, text: &str) -> T
    where
        T: serde::de::DeserializeOwned + serde::Serialize,
    {
        let original: serde_json::Value = from_yaml_str(name, text).unwrap();
        let typed: T = from_yaml_str(name, text).unwrap_or_else(|e| panic!("{e}"));
        let back = serde_json::to_value(&typed).unwrap();
        assert_eq!(back, original, "{name} changed in a round trip");
        typed
    }

    macro_rules! fixture {
        ($file:literal) => {
            (
                $file,
                include_str!(concat!("../../tests/fixtures/olm-yaml/", $file)),
            )
        };
    }

    #[test]
    fn the_docs_subscription_round_trips_with_its_config() {
        let (name, text) = fixture!("subscription.yaml");
        let sub: v1alpha1::Subscription = assert_round_trip(name, text);
        assert_eq!(sub.spec.approval(), v1alpha1::Approval::Manual);
        let config = sub.spec.config.unwrap();
        assert_eq!(config.env.unwrap()[0].name, "ARGS");
        assert!(config.affinity.unwrap().node_affinity.is_some());
    }

    #[test]
    fn a_subscription_status_written_by_upstream_round_trips() {
        let (name, text) = fixture!("subscription-with-status.yaml");
        let sub: v1alpha1::Subscription = assert_round_trip(name, text);
        let status = sub.status.unwrap();
        assert_eq!(status.state, Some(v1alpha1::SubscriptionState::AtLatestKnown));
        assert_eq!(
            status.install_plan.as_ref().map(|r| r.name.as_str()),
            Some("install-x7k2p")
        );
        let pending = status
            .condition(&v1alpha1::SubscriptionConditionType::InstallPlanPending)
            .unwrap();
        assert_eq!(pending.status, ConditionStatus::True);
        assert!(status.catalog_health[0].healthy);
    }

    #[test]
    fn operator_groups_round_trip_in_both_served_versions() {
        let (name, text) = fixture!("operatorgroup.yaml");
        let og: v1::OperatorGroup = assert_round_trip(name, text);
        assert_eq!(og.spec.target_namespaces, Some(vec!["my-namespace".to_owned()]));
        let (name, text) = fixture!("operatorgroup-selector.yaml");
        let og: v1::OperatorGroup = assert_round_trip(name, text);
        assert!(og.spec.fail_forward());
        let (name, text) = fixture!("operatorgroup-v1alpha2.yaml");
        let og: v1alpha2::OperatorGroup = assert_round_trip(name, text);
        assert_eq!(og.spec.static_provided_apis, Some(true));
    }

    #[test]
    fn grpc_and_configmap_catalog_sources_round_trip() {
        let (name, text) = fixture!("catalogsource-grpc.yaml");
        let grpc: v1alpha1::CatalogSource = assert_round_trip(name, text);
        assert_eq!(grpc.spec.source_type, v1alpha1::SourceType::Grpc);
        assert_eq!(grpc.spec.priority, Some(-100));
        let poll = grpc
            .spec
            .update_strategy
            .and_then(|u| u.registry_poll)
            .and_then(|p| p.interval);
        assert_eq!(poll.as_deref(), Some("60m"));
        let (name, text) = fixture!("catalogsource-configmap.yaml");
        let cm: v1alpha1::CatalogSource = assert_round_trip(name, text);
        assert!(cm.spec.source_type.is_config_map());
        assert_eq!(cm.spec.config_map.as_deref(), Some("my-catalog"));
    }

    #[test]
    fn an_install_plan_with_steps_and_bundle_lookups_round_trips() {
        let (name, text) = fixture!("installplan.yaml");
        let ip: v1alpha1::InstallPlan = assert_round_trip(name, text);
        assert_eq!(ip.spec.approval, v1alpha1::Approval::Manual);
        let status = ip.status.unwrap();
        assert_eq!(status.phase, v1alpha1::InstallPlanPhase::RequiresApproval);
        assert_eq!(status.plan.len(), 4);
        assert!(status.plan[2].optional);
        assert_eq!(status.plan[3].resource.group, "");
        assert_eq!(status.bundle_lookups[0].identifier, "etcdoperator.v0.9.4");
    }

    #[test]
    fn the_memcached_csv_round_trips_with_deployment_rbac_and_descriptors() {
        let (name, text) = fixture!("csv-memcached.yaml");
        let csv: v1alpha1::ClusterServiceVersion = assert_round_trip(name, text);
        let spec = &csv.spec;
        assert_eq!(spec.version.as_deref(), Some("0.0.2"));
        assert_eq!(spec.install.strategy, v1alpha1::INSTALL_STRATEGY_DEPLOYMENT);
        let deployment = &spec.install.spec.deployments[0];
        let containers = &deployment.spec.template.spec.as_ref().unwrap().containers;
        assert_eq!(containers[0].name, "manager");
        assert_eq!(spec.install.spec.cluster_permissions[0].rules.len(), 5);
        assert!(spec.owns_crd("memcacheds.cache.example.com"));
        let owned = &spec.custom_resource_definitions.as_ref().unwrap().owned[0];
        assert_eq!(owned.spec_descriptors[1].value, Some(serde_json::json!(11211)));
        assert!(spec.supports_install_mode(&v1alpha1::InstallModeType::AllNamespaces));
        assert_eq!(
            spec.webhook_definitions[0].type_,
            v1alpha1::WebhookAdmissionType::ValidatingAdmissionWebhook
        );
        let status = csv.status.unwrap();
        assert_eq!(status.phase, Some(v1alpha1::CsvPhase::Succeeded));
        assert_eq!(status.reason, Some(v1alpha1::CsvReason::InstallSucceeded));
        assert_eq!(
            status.requirement_status[1].dependents[0].status,
            v1alpha1::StatusReason::Satisfied
        );
    }

    #[test]
    fn a_bad_fixture_is_reported_with_its_name() {
        let err = from_yaml_str::<v1alpha1::Subscription>("sub.yaml", "kind: Subscription\nspec: {}\n")
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("failed to parse sub.yaml from YAML"),
            "{message}"
        );
    }

    #[test]
    fn crds_come_in_a_stable_alphabetical_order() {
        let names: Vec<String> = crds()
            .unwrap()
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "catalogsources.operators.coreos.com",
                "clusterserviceversions.operators.coreos.com",
                "installplans.operators.coreos.com",
                "olmconfigs.operators.coreos.com",
                "operatorconditions.operators.coreos.com",
                "operatorgroups.operators.coreos.com",
                "operators.operators.coreos.com",
                "subscriptions.operators.coreos.com",
            ]
        );
    }

    #[test]
    fn the_yaml_stream_holds_one_document_per_crd() {
        let stream = crds_yaml_stream().unwrap();
        assert_eq!(stream.lines().filter(|l| *l == "---").count(), 8);
        assert!(stream.contains("kind: CustomResourceDefinition"));
    }

    #[test]
    fn crd_files_are_named_like_upstream() {
        let files = crd_files().unwrap();
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"operators.coreos.com_subscriptions.yaml"));
        assert!(files.iter().all(|(_, text)| text.starts_with(GENERATED_HEADER)));
    }
}
