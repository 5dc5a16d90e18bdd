//! CatalogSource controller: validate the spec, load the catalog (a ConfigMap, or the built-in
//! catalog), cache it, and report `connectionState` / `reason` / `message` as upstream does.
//!
//! Pipeline: validate `sourceType` → read the ConfigMap → decode (FBC keys and the legacy
//! `packages`/`clusterServiceVersions`/`customResourceDefinitions` keys) → build the catalog
//! model (once per ConfigMap `resourceVersion`) → cache ([`super::cache`]) → status.
//! `grpc` sources are not served by olm-rs (no registry pods): they are reported, not ignored.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{Api, Resource, ResourceExt, runtime::controller::Action};
use serde_json::Value;

use super::{Context, Error, Result, cache::LoadedCatalog, instrumented};
use crate::{
    api::{
        reasons::catalog_source as reason,
        v1alpha1::{
            CatalogSource, CatalogSourceStatus, ConfigMapResourceReference, GrpcConnectionState, SourceType,
            connection_state,
        },
    },
    catalog::declcfg::Origin,
    configmap_catalog,
    k8s::apply,
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

/// Validates the spec (pure).
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

/// Decodes a stream of JSON or YAML documents (through [`crate::codec`]).
pub fn decode_documents(path: &str, text: &str) -> std::result::Result<Vec<Value>, String> {
    let decoded = crate::codec::decode_documents(path, text);
    match decoded.error {
        Some(err) => Err(format!("{path}: {err}")),
        None => Ok(decoded.documents.into_iter().map(|d| d.value).collect()),
    }
}

fn as_list(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        Value::Null => Vec::new(),
        other => vec![other],
    }
}

/// Turns a ConfigMap's data into a catalog model (pure): FBC keys decoded as document streams,
/// the legacy keys converted through [`configmap_catalog`].
pub fn catalog_from_data(
    data: &BTreeMap<String, String>,
    resource_version: &str,
) -> std::result::Result<LoadedCatalog, Vec<String>> {
    let mut blobs = Vec::new();
    let mut problems = Vec::new();
    let mut legacy: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (key, text) in data {
        match decode_documents(key, text) {
            Ok(docs) if configmap_catalog::is_legacy_key(key) => {
                legacy
                    .entry(key.as_str())
                    .or_default()
                    .extend(docs.into_iter().flat_map(as_list));
            }
            Ok(docs) => blobs.extend(
                docs.into_iter()
                    .enumerate()
                    .map(|(i, doc)| (Origin::new(key, i + 1), doc)),
            ),
            Err(err) => problems.push(err),
        }
    }
    if !legacy.is_empty() {
        let get = |k: &str| legacy.get(k).cloned().unwrap_or_default();
        let converted = configmap_catalog::convert(
            &get(configmap_catalog::KEY_PACKAGES),
            &get(configmap_catalog::KEY_CSVS),
            &get(configmap_catalog::KEY_CRDS),
        );
        blobs.extend(
            converted
                .blobs
                .into_iter()
                .enumerate()
                .map(|(i, doc)| (Origin::new("packages/clusterServiceVersions", i + 1), doc)),
        );
        problems.extend(converted.problems);
    }
    super::cache::finish(blobs, problems, resource_version)
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

/// Summarises problems for a status message: the first three and a count of the rest.
pub fn summarise(problems: &[String]) -> String {
    let mut text = problems.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
    if problems.len() > 3 {
        text.push_str(&format!("; and {} more", problems.len() - 3));
    }
    text
}

fn now() -> Time {
    Time(Timestamp::now())
}

/// Reconciles one CatalogSource.
pub async fn reconcile(cs: Arc<CatalogSource>, ctx: Arc<Context>) -> Result<Action> {
    instrumented(Arc::clone(&cs), Arc::clone(&ctx), reconcile_inner(cs, ctx)).await
}

async fn reconcile_inner(cs: Arc<CatalogSource>, ctx: Arc<Context>) -> Result<Action> {
    let ns = cs
        .namespace()
        .ok_or_else(|| Error::InvalidObject("CatalogSource without namespace".into()))?;
    let name = cs.name_any();
    let cache = &ctx.shared.catalogs;
    let old = cs.status.clone().unwrap_or_default();
    let mut status = CatalogSourceStatus {
        registry_service: None,
        latest_image_registry_poll: None,
        ..old.clone()
    };
    // Served: the ConfigMap it came from and what the model builder left out of it.
    type Served = (Option<ConfigMapResourceReference>, Vec<String>);
    let outcome: std::result::Result<Served, (&'static str, String)> = match plan_source(&cs) {
        SourcePlan::Invalid(r, m) => Err((r, m)),
        SourcePlan::Builtin => match cache.builtin() {
            Ok(catalog) => {
                let left_out = catalog.problems.clone();
                cache.insert(&ns, &name, catalog);
                Ok((None, left_out))
            }
            Err(problems) => Err((
                reason::CONFIG_MAP_ERROR,
                format!("the built-in catalog is invalid: {}", summarise(&problems)),
            )),
        },
        SourcePlan::ConfigMap(cm_name) => {
            let cms: Api<ConfigMap> = Api::namespaced(ctx.client(), &ns);
            match cms
                .get_opt(&cm_name)
                .await
                .map_err(Error::observe(format!("ConfigMap {ns}/{cm_name}")))?
            {
                None => Err((
                    reason::CONFIG_MAP_ERROR,
                    format!(
                        "configmap {cm_name} not found in namespace {ns}; create it with the catalog's FBC documents, or fix spec.configMap"
                    ),
                )),
                Some(cm) => {
                    let rv = cm.resource_version().unwrap_or_default();
                    let reference = ConfigMapResourceReference {
                        name: cm_name.clone(),
                        namespace: ns.clone(),
                        uid: cm.uid(),
                        resource_version: Some(rv.clone()),
                        last_update_time: Some(now()),
                    };
                    let cached = cache.get(&ns, &name).filter(|c| c.resource_version == rv);
                    let loaded = match cached {
                        Some(c) => Ok(c),
                        None => catalog_from_data(&cm.data.clone().unwrap_or_default(), &rv).map(Arc::new),
                    };
                    match loaded {
                        Ok(catalog) => {
                            let left_out = catalog.problems.clone();
                            cache.insert(&ns, &name, catalog);
                            Ok((Some(reference), left_out))
                        }
                        Err(problems) => {
                            cache.remove(&ns, &name);
                            Err((
                                reason::CONFIG_MAP_ERROR,
                                format!(
                                    "configmap {cm_name} does not hold a valid catalog: {}",
                                    summarise(&problems)
                                ),
                            ))
                        }
                    }
                }
            }
        }
    };
    let ready = outcome.is_ok();
    match outcome {
        Ok((reference, left_out)) => {
            status.reason = None;
            status.message = served_message(&left_out);
            status.config_map_reference = reference;
            status.connection_state = Some(GrpcConnectionState {
                address: None,
                last_observed_state: connection_state::READY.into(),
                last_connect: Some(now()),
            });
        }
        Err((r, m)) => {
            if r == reason::SPEC_INVALID_ERROR || r == reason::REGISTRY_SERVER_ERROR {
                cache.remove(&ns, &name);
            }
            status.reason = Some(r.into());
            status.message = Some(m);
            status.connection_state = Some(GrpcConnectionState {
                address: None,
                last_observed_state: connection_state::TRANSIENT_FAILURE.into(),
                last_connect: Some(now()),
            });
        }
    }
    ctx.shared
        .metrics
        .catalogsource_ready
        .get_or_create(&crate::metrics::CatalogLabels {
            namespace: ns.clone(),
            name: name.clone(),
        })
        .set(i64::from(ready));

    // Keep the old configMapReference timestamp when the ConfigMap did not change.
    if let (Some(new), Some(prev)) = (
        status.config_map_reference.as_mut(),
        old.config_map_reference.as_ref(),
    ) && new.resource_version == prev.resource_version
    {
        new.last_update_time = prev.last_update_time.clone();
    }
    if !apply::same_ignoring_time(&apply::to_value(&old), &apply::to_value(&status)) {
        let api: Api<CatalogSource> = Api::namespaced(ctx.client(), &ns);
        apply::apply_status(&api, &name, &status, &ctx.manager)
            .await
            .map_err(Error::status(format!("CatalogSource {ns}/{name}")))?;
        let reference = cs.object_ref(&());
        let was_ready = old
            .connection_state
            .as_ref()
            .map(|c| c.last_observed_state.as_str())
            == Some(connection_state::READY);
        match (&status.reason, was_ready, ready) {
            (Some(r), _, false) if old.reason.as_ref() != Some(r) || old.message != status.message => {
                ctx.warning(&reference, r, "Sync", status.message.clone().unwrap_or_default());
            }
            (None, _, true) if status.message.is_some() && old.message != status.message => {
                ctx.warning(
                    &reference,
                    "CatalogProblems",
                    "Sync",
                    status.message.clone().unwrap_or_default(),
                );
            }
            (_, false, true) => {
                ctx.normal(
                    &reference,
                    "CatalogReady",
                    "Sync",
                    format!("catalog {ns}/{name} is ready"),
                );
            }
            _ => {}
        }
    }
    Ok(if ready {
        Action::requeue(Duration::from_secs(600))
    } else {
        Action::requeue(Duration::from_secs(60))
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
    fn a_config_map_with_fbc_and_legacy_keys_becomes_one_catalog() {
        let mut data = BTreeMap::new();
        data.insert(
            "catalog.json".to_owned(),
            r#"{"schema":"olm.package","name":"a"} {"schema":"olm.channel","package":"a","name":"s","entries":[]}"#.to_owned(),
        );
        data.insert(
            "packages".to_owned(),
            r#"[{"packageName":"b","channels":[]}]"#.to_owned(),
        );
        let catalog = catalog_from_data(&data, "7").unwrap();
        assert_eq!(catalog.resource_version, "7");
        let names: Vec<&str> = catalog.model.packages().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(catalog.model.package("a").map(|p| p.channels().len()), Some(1));
    }

    #[test]
    fn an_unparsable_config_map_names_the_key_and_the_problem() {
        let mut data = BTreeMap::new();
        data.insert("catalog.json".to_owned(), "{not json".to_owned());
        let problems = catalog_from_data(&data, "1").unwrap_err();
        assert!(problems[0].starts_with("catalog.json:"), "{problems:?}");
        assert!(summarise(&problems).contains("catalog.json"));
    }

    #[test]
    fn yaml_documents_are_decoded_too() {
        let docs = decode_documents(
            "c.yaml",
            "schema: olm.package\nname: a\n---\nschema: olm.package\nname: b\n",
        )
        .unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["name"], "b");
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

    #[test]
    fn long_problem_lists_are_summarised() {
        let problems: Vec<String> = (1..=5).map(|i| format!("p{i}")).collect();
        assert_eq!(summarise(&problems), "p1; p2; p3; and 2 more");
    }
}
