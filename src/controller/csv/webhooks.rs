//! The CSV controller's webhook I/O: reads what [`plan_csv::webhooks`] decides on (the cert
//! Secrets, the CSV's webhook configurations, the conversion CRDs), issues the certificates it
//! says are due ([`crate::certs`]), applies the objects of a decision under the CSV
//! controller's field manager, and on CSV deletion removes the configurations and strips the
//! conversion webhook from CRDs the deleted CSV set it on (unless a CSV replaces it).
//!
//! Only CSVs with `spec.webhookdefinitions` or owned APIServices cost anything here, and no
//! stores: per reconcile, one GET per owned APIService and per cert Secret, and, when the CSV
//! has admission webhooks, one label-selected metadata LIST per configuration kind (which
//! also finds the stale ones). On deletion, every CSV costs two label-selected deletions (its
//! configurations, should its spec have lost the descriptions).

use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        core::v1::{Secret, Service},
        rbac::v1::{ClusterRoleBinding, Role, RoleBinding},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    apimachinery::pkg::apis::meta::v1::Time,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams},
    runtime::reflector::ObjectRef,
};
use serde_json::json;

use super::{Context, Error, Result};
use crate::{
    api::{
        labels,
        v1alpha1::{ClusterServiceVersion, CsvPhase, WebhookAdmissionType},
    },
    k8s::apply,
    plan::csv::{
        Observed,
        webhooks::{
            self as plan, CertSecret, ConfigKind, IssuedCerts, ObservedApiService, ObservedConfig,
            ObservedConversion, ObservedService, WebhookObjects,
        },
    },
};

/// The `olm.owner*` label selector of a CSV's cluster-scoped objects.
fn owner_selector(csv: &ClusterServiceVersion) -> String {
    format!(
        "{}={},{}={},{}=ClusterServiceVersion",
        labels::OWNER,
        csv.name_any(),
        labels::OWNER_NAMESPACE,
        csv.namespace().unwrap_or_default(),
        labels::OWNER_KIND,
    )
}

fn observed_config<K: Resource>(kind: ConfigKind, object: &K) -> ObservedConfig {
    let labels = object.meta().labels.clone().unwrap_or_default();
    ObservedConfig {
        kind,
        name: object.meta().name.clone().unwrap_or_default(),
        generate_name: labels.get(labels::WEBHOOK_DESCRIPTION_GENERATE_NAME).cloned(),
        hash: labels.get(plan::WEBHOOK_HASH).cloned(),
    }
}

/// The conversion settings of a CRD, as the plan reads them.
pub fn observed_conversion(crd: &CustomResourceDefinition) -> ObservedConversion {
    let conversion = crd.spec.conversion.as_ref();
    let client = conversion
        .and_then(|c| c.webhook.as_ref())
        .and_then(|w| w.client_config.as_ref());
    ObservedConversion {
        strategy: conversion.map(|c| c.strategy.clone()),
        ca_bundle: client.and_then(|c| c.ca_bundle.as_ref()).map(|b| b.0.clone()),
        service: client
            .and_then(|c| c.service.as_ref())
            .map(|s| (s.namespace.clone(), s.name.clone())),
    }
}

/// The `apiregistration.k8s.io/v1` APIService API (k8s-openapi has no type for it).
fn api_services(ctx: &Context) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
    ));
    Api::all_with(ctx.client(), &resource)
}

/// A required APIService (`<version>.<group>`) as the requirement check reads it; `None` when
/// there is none.
pub(super) async fn required_api_service(
    ctx: &Context,
    name: &str,
) -> Result<Option<crate::plan::csv::RequiredApiService>> {
    let found = api_services(ctx)
        .get_opt(name)
        .await
        .map_err(Error::observe(format!("APIService {name}")))?;
    Ok(found.map(|o| crate::plan::csv::RequiredApiService {
        available: is_available(&o),
        uid: o.metadata.uid.clone(),
    }))
}

/// Condition `Available=True` of an APIService.
fn is_available(object: &DynamicObject) -> bool {
    object.data["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True")
    })
}

/// An APIService as the plan reads it; `ctx` tells whether its owner CSV is `Replacing` or
/// `Deleting` (from the CSV store).
fn observed_api_service(ctx: &Context, object: &DynamicObject) -> ObservedApiService {
    let labels = object.labels();
    let owner = match (
        labels.get(labels::OWNER_KIND),
        labels.get(labels::OWNER_NAMESPACE),
        labels.get(labels::OWNER),
    ) {
        (Some(kind), Some(ns), Some(name)) => Some((kind.clone(), ns.clone(), name.clone())),
        _ => None,
    };
    let spec = &object.data["spec"];
    let ca_bundle = spec["caBundle"]
        .as_str()
        .and_then(|b| base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b).ok());
    let service = spec["service"]["name"].as_str().map(|name| {
        (
            spec["service"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            name.to_owned(),
        )
    });
    let available = is_available(object);
    let owner_retiring = owner.as_ref().is_some_and(|(kind, ns, name)| {
        kind == "ClusterServiceVersion"
            && ctx
                .shared
                .stores
                .csvs
                .get(&ObjectRef::new(name).within(ns))
                .and_then(|c| c.status.as_ref().and_then(|s| s.phase.clone()))
                .is_some_and(|p| matches!(p, CsvPhase::Replacing | CsvPhase::Deleting))
    });
    ObservedApiService {
        owner,
        owner_retiring,
        ca_bundle,
        service,
        available,
    }
}

/// Fills `observed.webhooks` (client): the cert Secrets, the CSV's webhook configurations and
/// its owned APIServices; the conversion CRDs are read with the owned CRDs (`observe` in the
/// parent).
pub async fn observe(csv: &ClusterServiceVersion, ctx: &Context, observed: &mut Observed) -> Result<()> {
    if !plan::has_cert_resources(csv) {
        return Ok(());
    }
    let api = api_services(ctx);
    for desc in plan::owned_api_services(csv) {
        let name = plan::api_service_name(desc);
        if let Some(found) = api
            .get_opt(&name)
            .await
            .map_err(Error::observe(format!("APIService {name}")))?
        {
            observed
                .webhooks
                .api_services
                .insert(name, observed_api_service(ctx, &found));
        }
    }
    let ns = csv.namespace().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(ctx.client(), &ns);
    let services: Api<Service> = Api::namespaced(ctx.client(), &ns);
    for deployment in plan::cert_deployments(csv) {
        let name = plan::service_name(&deployment);
        if let Some(service) = services
            .get_opt(&name)
            .await
            .map_err(Error::observe(format!("Service {ns}/{name}")))?
        {
            observed
                .webhooks
                .services
                .insert(deployment.clone(), ObservedService::from_service(&service));
        }
        let name = plan::secret_name(&deployment);
        if let Some(secret) = secrets
            .get_opt(&name)
            .await
            .map_err(Error::observe(format!("Secret {ns}/{name}")))?
        {
            observed
                .webhooks
                .secrets
                .insert(deployment, CertSecret::from_secret(&secret));
        }
    }
    // Configurations are only ever made for admission webhooks: a CSV with none (conversion
    // webhooks or APIServices only) has nothing to list.
    let admission = csv
        .spec
        .webhook_definitions
        .iter()
        .any(|d| d.type_ != WebhookAdmissionType::ConversionWebhook);
    if !admission {
        return Ok(());
    }
    let lp = ListParams::default().labels(&owner_selector(csv));
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(ctx.client());
    for c in validating
        .list_metadata(&lp)
        .await
        .map_err(Error::observe("ValidatingWebhookConfigurations"))?
    {
        observed
            .webhooks
            .configs
            .push(observed_config(ConfigKind::Validating, &c));
    }
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(ctx.client());
    for c in mutating
        .list_metadata(&lp)
        .await
        .map_err(Error::observe("MutatingWebhookConfigurations"))?
    {
        observed
            .webhooks
            .configs
            .push(observed_config(ConfigKind::Mutating, &c));
    }
    Ok(())
}

/// Issues fresh certificates for every cert deployment whose certificates are due
/// ([`plan::certs_due`]); the decision picks them up from `observed.webhooks.issued`.
///
/// # Errors
/// [`Error::Certificates`] when generation fails.
pub fn issue_due(csv: &ClusterServiceVersion, observed: &mut Observed, now: &Time) -> Result<()> {
    for (deployment, hosts) in plan::certs_due(csv, &observed.webhooks, now) {
        let certs = crate::certs::issue(&hosts, now.0)?;
        observed.webhooks.issued.insert(
            deployment,
            IssuedCerts {
                ca_pem: certs.ca_pem,
                cert_pem: certs.cert_pem,
                key_pem: certs.key_pem,
                not_after: Time(certs.not_after),
            },
        );
    }
    Ok(())
}

/// Applies what the Deployments need first (client): Services, cert Secrets and their RBAC.
pub async fn apply_cert_objects(
    ctx: &Context,
    ns: &str,
    objects: &WebhookObjects,
    observed: &mut Observed,
) -> Result<()> {
    let client = ctx.client();
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    for s in &objects.services {
        let applied = apply::apply(&services, &s.name_any(), s, &ctx.manager)
            .await
            .map_err(Error::apply(format!("Service {ns}/{}", s.name_any())))?;
        // Its cert deployment: one with certificates in effect (issued now, or in a Secret).
        if let Some(deployment) = observed
            .webhooks
            .issued
            .keys()
            .chain(observed.webhooks.secrets.keys())
            .find(|d| plan::service_name(d) == s.name_any())
            .cloned()
        {
            observed
                .webhooks
                .services
                .insert(deployment, ObservedService::from_service(&applied));
        }
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    for s in &objects.secrets {
        let applied = apply::apply(&secrets, &s.name_any(), s, &ctx.manager)
            .await
            .map_err(Error::apply(format!("Secret {ns}/{}", s.name_any())))?;
        if let Some(deployment) = observed
            .webhooks
            .issued
            .keys()
            .chain(observed.webhooks.secrets.keys())
            .find(|d| plan::secret_name(d) == s.name_any())
            .cloned()
        {
            observed
                .webhooks
                .secrets
                .insert(deployment, CertSecret::from_secret(&applied));
        }
    }
    for r in &objects.roles {
        let api: Api<Role> = Api::namespaced(client.clone(), r.metadata.namespace.as_deref().unwrap_or(ns));
        apply::apply(&api, &r.name_any(), r, &ctx.manager)
            .await
            .map_err(Error::apply(format!("Role {ns}/{}", r.name_any())))?;
    }
    for b in &objects.role_bindings {
        let bns = b.metadata.namespace.as_deref().unwrap_or(ns);
        let api: Api<RoleBinding> = Api::namespaced(client.clone(), bns);
        apply::apply(&api, &b.name_any(), b, &ctx.manager)
            .await
            .map_err(Error::apply(format!("RoleBinding {bns}/{}", b.name_any())))?;
    }
    let crbs: Api<ClusterRoleBinding> = Api::all(client);
    for b in &objects.cluster_role_bindings {
        apply::apply(&crbs, &b.name_any(), b, &ctx.manager)
            .await
            .map_err(Error::apply(format!("ClusterRoleBinding {}", b.name_any())))?;
    }
    Ok(())
}

/// Applies the webhook configurations and CRD conversions and deletes stale configurations
/// (client), after the Deployments.
pub async fn apply_webhooks(ctx: &Context, objects: &WebhookObjects, observed: &mut Observed) -> Result<()> {
    let client = ctx.client();
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    for c in &objects.validating {
        let applied = apply::apply(&validating, &c.name_any(), c, &ctx.manager)
            .await
            .map_err(Error::apply(format!(
                "ValidatingWebhookConfiguration {}",
                c.name_any()
            )))?;
        remember(observed, ConfigKind::Validating, &applied);
    }
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    for c in &objects.mutating {
        let applied = apply::apply(&mutating, &c.name_any(), c, &ctx.manager)
            .await
            .map_err(Error::apply(format!(
                "MutatingWebhookConfiguration {}",
                c.name_any()
            )))?;
        remember(observed, ConfigKind::Mutating, &applied);
    }
    let apis = api_services(ctx);
    for a in &objects.api_services {
        let name = a["metadata"]["name"].as_str().unwrap_or_default();
        let applied = apply::apply_dynamic(&apis, name, a, &ctx.manager)
            .await
            .map_err(Error::apply(format!("APIService {name}")))?;
        observed
            .webhooks
            .api_services
            .insert(name.to_owned(), observed_api_service(ctx, &applied));
    }
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    for (crd, conversion) in &objects.conversions {
        let body = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": crd},
            "spec": {"conversion": conversion},
        });
        let applied = apply::apply(&crds, crd, &body, &ctx.manager)
            .await
            .map_err(Error::apply(format!("conversion webhook of CRD {crd}")))?;
        observed
            .webhooks
            .conversions
            .insert(crd.clone(), observed_conversion(&applied));
    }
    for (kind, name) in &objects.stale {
        let deleted = match kind {
            ConfigKind::Validating => apply::delete_if_present(&validating, name).await,
            ConfigKind::Mutating => apply::delete_if_present(&mutating, name).await,
        };
        deleted.map_err(|source| Error::Delete {
            what: format!("webhook configuration {name}"),
            source,
        })?;
        observed
            .webhooks
            .configs
            .retain(|c| !(c.kind == *kind && &c.name == name));
    }
    Ok(())
}

fn remember<K: Resource>(observed: &mut Observed, kind: ConfigKind, applied: &K) {
    let seen = observed_config(kind, applied);
    observed
        .webhooks
        .configs
        .retain(|c| !(c.kind == kind && c.name == seen.name));
    observed.webhooks.configs.push(seen);
}

/// On CSV deletion (client): deletes the CSV's webhook configurations and, unless another CSV
/// of the namespace replaces it, sets the conversion of the CRDs whose conversion webhook
/// points at its Services back to `None`.
pub async fn cleanup(csv: &ClusterServiceVersion, ctx: &Context, replaced: bool) -> Result<()> {
    let lp = ListParams::default().labels(&owner_selector(csv));
    let cleanup_err = |what: &str| {
        let what = what.to_owned();
        move |source| Error::Cleanup { what, source }
    };
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(ctx.client());
    validating
        .delete_collection(&DeleteParams::default(), &lp)
        .await
        .map_err(cleanup_err("ValidatingWebhookConfigurations"))?;
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(ctx.client());
    mutating
        .delete_collection(&DeleteParams::default(), &lp)
        .await
        .map_err(cleanup_err("MutatingWebhookConfigurations"))?;
    // Owned APIServices labelled as this CSV's (an upgrade relabelled them for its successor).
    if !plan::owned_api_services(csv).is_empty() {
        api_services(ctx)
            .delete_collection(&DeleteParams::default(), &lp)
            .await
            .map_err(cleanup_err("APIServices"))?;
    }
    if replaced {
        return Ok(());
    }
    let ns = csv.namespace().unwrap_or_default();
    let services: Vec<String> = plan::cert_deployments(csv)
        .iter()
        .map(|d| plan::service_name(d))
        .collect();
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client());
    for desc in &csv.spec.webhook_definitions {
        for crd in &desc.conversion_crds {
            let Some(found) = crds
                .get_opt(crd)
                .await
                .map_err(cleanup_err(&format!("CRD {crd}")))?
            else {
                continue;
            };
            let ours = observed_conversion(&found)
                .service
                .is_some_and(|(sns, name)| sns == ns && services.contains(&name));
            if !ours {
                continue;
            }
            // A merge patch, not an apply: the webhook fields may be owned by the InstallPlan's
            // manager too (a bundle CRD shipping a placeholder), and must go either way.
            let patch = json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}});
            apply::merge_patch(&crds, crd, &patch, &ctx.manager)
                .await
                .map_err(cleanup_err(&format!("conversion webhook of CRD {crd}")))?;
        }
    }
    Ok(())
}
