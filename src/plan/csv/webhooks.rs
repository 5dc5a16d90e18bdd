//! webhooks: what a CSV's `spec.webhookdefinitions` install, decided without I/O (upstream
//! `install/webhook.go`, `install/certresources.go`, `olm/apiservices.go`).
//!
//! The rule this module enforces: a CSV with webhooks is `Succeeded` only when every object
//! its webhooks need exists with the CA in effect, and that CA is rotated before it expires.
//!
//! For each Deployment a webhook description names (its *cert deployment*):
//! - a Service `<deployment>-service` (dots made dashes, as upstream's `DomainName`) selecting
//!   the Deployment's `matchLabels`, one port per distinct `containerPort` (default 443, named
//!   after it) forwarding to `targetPort` (default: the same port);
//! - a `kubernetes.io/tls` Secret `<deployment>-service-cert` with `tls.crt`, `tls.key` and the
//!   CA as `olmCAKey`, annotated `olmcahash` (SHA-256 of the CA PEM); a Role and RoleBinding of
//!   the same name letting the Deployment's ServiceAccount `get` it; the `system:auth-delegator`
//!   ClusterRoleBinding `<service>-system:auth-delegator` and the `kube-system` RoleBinding
//!   `<service>-auth-reader` to `extension-apiserver-authentication-reader`, as upstream makes
//!   for every cert deployment;
//! - the pod template mounts the Secret as volume `apiservice-cert` at
//!   `/apiserver.local.config/certificates` (`apiserver.crt`/`apiserver.key`) and as volume
//!   `webhook-cert` at `/tmp/k8s-webhook-server/serving-certs` (`tls.crt`/`tls.key`) in every
//!   container, and carries the `olmcahash` annotation, so a new CA rolls the pods.
//!
//! Per description: a Validating- or MutatingWebhookConfiguration holding one webhook named
//! `generateName`, calling the Service at `webhookPath` on `containerPort` with the CA bundle,
//! labelled `olm.owner`, `olm.owner.namespace`, `olm.owner.kind`,
//! `olm.webhook-description-generate-name` and `olm.webhook-description-hash`, and scoped to
//! the OperatorGroup's target namespaces; or, for a `ConversionWebhook`, `spec.conversion` of
//! each `conversionCRDs` CRD set to `Webhook` with that client config (path default `/`,
//! `conversionReviewVersions` = the description's `admissionReviewVersions`).
//!
//! **Owned APIServices** (`spec.apiservicedefinitions.owned`, upstream `install/apiservice.go`)
//! use the same machinery: their `deploymentName` is a cert deployment (Service port =
//! `containerPort`, default 443), and each gets an APIService `<version>.<group>` labelled
//! `olm.managed` and `olm.owner*`, `groupPriorityMinimum: 2000`, `versionPriority: 15`,
//! pointing at the Service with the CA bundle. The CSV waits in `Installing` until every one is
//! `Available` ([`WebhookPlan::unavailable`]); an APIService another CSV owns (not this one,
//! the one it replaces, or one `Replacing` or `Deleting`) fails it `OwnerConflict`; a
//! `Succeeded` CSV whose APIService, Secret or CA no longer match fails
//! `APIServiceResourceIssue` and is reinstalled (`APIServiceResourcesNeedReinstall`) unless
//! the APIService is not adoptable ([`WebhookPlan::api_service_issue`]).
//!
//! **Certificates** ([`rotation_due`], upstream `shouldRotateCerts`): a cert deployment's
//! Secret is reused unless it is missing, lacks a key, does not parse, is not signed by its
//! CA, does not name every host (`<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`),
//! is not valid now or expires within [`MIN_FRESH`] (one day), or the CSV's
//! `status.certsRotateAt` has passed. A due certificate is replaced by the fresh one the shell
//! issued ([`crate::certs`], 730 days) and the decision records `certsLastUpdated` = now and
//! `certsRotateAt` = expiry − [`MIN_FRESH`]. A `Succeeded` CSV whose certificates are due goes
//! `Pending` `NeedsCertRotation` and is installed again.
//!
//! **Invalid descriptions** ([`validate`]) fail the CSV `InvalidWebhookDescription`: a repeated
//! `generateName`; rules on all groups (`*`), on `operators.coreos.com`, or on the webhook
//! configuration kinds of `admissionregistration.k8s.io`; a `deploymentName` the install
//! strategy lacks; a `ConversionWebhook` without `conversionCRDs` or converting a CRD the CSV
//! does not own; a `type` none of the three; no `admissionReviewVersions`; an admission
//! webhook whose `sideEffects` is not `None`/`NoneOnDryRun`; one `containerPort` of a
//! Deployment forwarded to two `targetPort`s (the Service would repeat the port). A
//! `ConversionWebhook` in a CSV that supports more than `AllNamespaces` fails
//! `UnsupportedOperatorGroup` (upstream `isSingletonOperator`); an owned APIService naming a
//! Deployment the strategy lacks fails `APIServiceInstallFailed`. (Upstream checks none of the
//! last five: the API server refuses the objects, and the CSV waits for them forever.)
//!
//! # Where we differ from upstream, and why
//!
//! - *Stable names, not `generateName`.* Every write is a server-side apply, which needs a
//!   name: a configuration is named `<generateName>-<5 characters of a hash of the namespace,
//!   deployment and generateName>`. The next CSV of an upgrade applies the same names, so it
//!   takes the configurations, Service, Secret and RBAC over (labels and owner reference move
//!   to it) instead of creating second copies as upstream does.
//! - *Namespace scoping by name.* Upstream selects the OperatorGroup's
//!   `olm.operatorgroup.uid/<uid>` namespace label; olm-rs does not label namespaces, so the
//!   selector is `kubernetes.io/metadata.name In <target namespaces>` (the API server sets that
//!   label on every namespace). AllNamespaces groups get no selector, as upstream.
//! - *Forbidden rules* also match the lowercase plural resources
//!   (`validatingwebhookconfigurations`), which the API server actually uses; upstream's check
//!   compares the kind names only.
//! - *The hash label* `olm.webhook-description-hash` hashes the whole desired configuration
//!   (description, selector, CA), so any drift is re-applied.
//! - *APIServices*: the discovery check of upstream's `areAPIServicesAvailable` (the group
//!   version lists the kind) is not made; `Available=True` is. The Subscription's
//!   `spec.config.annotations` are not copied onto a new APIService.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::{
    ByteString,
    api::{
        admissionregistration::v1::{
            MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
            ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
        },
        core::v1::{
            KeyToPath, PodSpec, Secret, SecretVolumeSource, Service, ServicePort, ServiceSpec, Volume,
            VolumeMount,
        },
        rbac::v1::{ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1 as crdv1,
    apimachinery::pkg::{
        apis::meta::v1::{LabelSelector, LabelSelectorRequirement},
        util::intstr::IntOrString,
    },
};
use sha2::{Digest, Sha256};

#[allow(
    clippy::wildcard_imports,
    reason = "the parent module's observed types and imports"
)]
use super::*;
use crate::api::{
    labels::{CA_HASH, WEBHOOK_DESCRIPTION_GENERATE_NAME},
    v1alpha1::{ApiServiceDescription, InstallModeType, WebhookAdmissionType, WebhookDescription},
};

/// How long before expiry a certificate is replaced (upstream `DefaultCertMinFresh`).
pub const MIN_FRESH: Duration = Duration::from_secs(24 * 3600);
/// The Secret key holding the CA certificate (upstream `OLMCAPEMKey`).
pub const CA_PEM_KEY: &str = "olmCAKey";
/// The label holding a hash of the desired webhook configuration.
pub const WEBHOOK_HASH: &str = "olm.webhook-description-hash";
/// The volume and mount path of the serving certificate for aggregated API servers.
pub const APISERVICE_CERT_VOLUME: &str = "apiservice-cert";
/// Where [`APISERVICE_CERT_VOLUME`] is mounted.
pub const APISERVICE_CERT_PATH: &str = "/apiserver.local.config/certificates";
/// The volume of the serving certificate for webhook servers (controller-runtime's default).
pub const WEBHOOK_CERT_VOLUME: &str = "webhook-cert";
/// Where [`WEBHOOK_CERT_VOLUME`] is mounted.
pub const WEBHOOK_CERT_PATH: &str = "/tmp/k8s-webhook-server/serving-certs";
/// The namespace label the API server sets on every namespace.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Port of a description without `containerPort`.
const DEFAULT_PORT: i32 = 443;

/// The Service port of a description's `containerPort`: 443 unless positive (upstream
/// `getServicePort`); the webhook, conversion and APIService client configs call it too.
fn port_of(container_port: Option<i32>) -> i32 {
    container_port.filter(|p| *p > 0).unwrap_or(DEFAULT_PORT)
}

/// A deployment name as a DNS-1035 label (upstream `DomainName`: dots become dashes).
pub fn domain_name(deployment: &str) -> String {
    deployment.replace('.', "-")
}

/// The Service of a cert deployment: `<deployment>-service`.
pub fn service_name(deployment: &str) -> String {
    format!("{}-service", domain_name(deployment))
}

/// The Secret (and Role, RoleBinding) of a cert deployment: `<deployment>-service-cert`.
pub fn secret_name(deployment: &str) -> String {
    format!("{}-cert", service_name(deployment))
}

/// The host names the serving certificate of `deployment` in `namespace` is for.
pub fn hosts(deployment: &str, namespace: &str) -> Vec<String> {
    let service = service_name(deployment);
    vec![
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// The deployments the CSV's webhook descriptions name, in order.
pub fn cert_deployments(csv: &ClusterServiceVersion) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let names = csv
        .spec
        .webhook_definitions
        .iter()
        .map(|d| d.deployment_name.clone().unwrap_or_default())
        .chain(
            owned_api_services(csv)
                .iter()
                .map(|d| d.deployment_name.clone().unwrap_or_default()),
        );
    for name in names {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Whether the CSV has webhook descriptions or owned APIServices: without either, nothing
/// here is observed, planned or applied.
pub fn has_cert_resources(csv: &ClusterServiceVersion) -> bool {
    !csv.spec.webhook_definitions.is_empty() || !owned_api_services(csv).is_empty()
}

/// The CSV's owned APIServices (`spec.apiservicedefinitions.owned`).
pub fn owned_api_services(csv: &ClusterServiceVersion) -> &[ApiServiceDescription] {
    csv.spec
        .api_service_definitions
        .as_ref()
        .map(|d| d.owned.as_slice())
        .unwrap_or_default()
}

/// The name of an owned APIService: `<version>.<group>`.
pub fn api_service_name(desc: &ApiServiceDescription) -> String {
    format!("{}.{}", desc.version, desc.group)
}

/// What a cert deployment's Service must forward, per description naming it:
/// `(description, port, targetPort)` (webhooks: `targetPort`, default the port; owned
/// APIServices: the port).
fn port_uses<'a>(
    csv: &'a ClusterServiceVersion,
    deployment: &'a str,
) -> impl Iterator<Item = (String, i32, IntOrString)> + 'a {
    let webhooks = csv
        .spec
        .webhook_definitions
        .iter()
        .filter(move |d| d.deployment_name.as_deref() == Some(deployment))
        .map(|d| {
            let port = port_of(d.container_port);
            let target = d.target_port.clone().unwrap_or(IntOrString::Int(port));
            (format!("WebhookDescription {}", d.generate_name), port, target)
        });
    let api_services = owned_api_services(csv)
        .iter()
        .filter(move |d| d.deployment_name.as_deref() == Some(deployment))
        .map(|d| {
            let port = port_of(d.container_port);
            (
                format!("APIService {}", api_service_name(d)),
                port,
                IntOrString::Int(port),
            )
        });
    webhooks.chain(api_services)
}

/// The Service ports of a cert deployment: one per distinct `containerPort` of its webhook
/// descriptions and owned APIServices ([`validate`] refuses one port forwarded to two
/// target ports).
fn service_ports(csv: &ClusterServiceVersion, deployment: &str) -> Vec<ServicePort> {
    let mut out: Vec<ServicePort> = Vec::new();
    for (_, port, target) in port_uses(csv, deployment) {
        if !out.iter().any(|p| p.port == port) {
            out.push(ServicePort {
                name: Some(port.to_string()),
                port,
                target_port: Some(target),
                ..Default::default()
            });
        }
    }
    out
}

/// The Secret of a cert deployment, as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertSecret {
    /// `olmCAKey`.
    pub ca_pem: Option<Vec<u8>>,
    /// `tls.crt`.
    pub cert_pem: Option<Vec<u8>>,
    /// `tls.key`.
    pub key_pem: Option<Vec<u8>>,
}

impl CertSecret {
    /// Reads the certificate keys of a Secret.
    pub fn from_secret(secret: &Secret) -> Self {
        let get = |k: &str| secret.data.as_ref().and_then(|d| d.get(k)).map(|b| b.0.clone());
        Self {
            ca_pem: get(CA_PEM_KEY),
            cert_pem: get("tls.crt"),
            key_pem: get("tls.key"),
        }
    }
}

/// Certificates the shell issued for a cert deployment ([`crate::certs::issue`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedCerts {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    /// The serving certificate, PEM.
    pub cert_pem: String,
    /// Its private key, PEM.
    pub key_pem: String,
    /// When both expire.
    pub not_after: Time,
}

/// Which kind of webhook configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConfigKind {
    /// `ValidatingWebhookConfiguration`.
    Validating,
    /// `MutatingWebhookConfiguration`.
    Mutating,
}

/// A webhook configuration labelled as owned by the CSV, as observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedConfig {
    /// Its kind.
    pub kind: ConfigKind,
    /// Its name.
    pub name: String,
    /// Its `olm.webhook-description-generate-name` label.
    pub generate_name: Option<String>,
    /// Its `olm.webhook-description-hash` label.
    pub hash: Option<String>,
}

/// The conversion settings of a CRD a conversion webhook names, as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedConversion {
    /// `spec.conversion.strategy`.
    pub strategy: Option<String>,
    /// `spec.conversion.webhook.clientConfig.caBundle`.
    pub ca_bundle: Option<Vec<u8>>,
    /// `spec.conversion.webhook.clientConfig.service` as `(namespace, name)`.
    pub service: Option<(String, String)>,
}

/// The Service of a cert deployment, as observed: what of it the install sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedService {
    /// `spec.selector`.
    pub selector: BTreeMap<String, String>,
    /// `spec.ports` as `(port, targetPort)` (`targetPort` as text, the port when unset).
    pub ports: Vec<(i32, String)>,
}

impl ObservedService {
    /// Reads what the plan compares from a Service.
    pub fn from_service(service: &Service) -> Self {
        let spec = service.spec.as_ref();
        Self {
            selector: spec.and_then(|s| s.selector.clone()).unwrap_or_default(),
            ports: spec
                .and_then(|s| s.ports.as_ref())
                .map(|ports| ports.iter().map(port_pair).collect())
                .unwrap_or_default(),
        }
    }
}

/// A Service port as `(port, targetPort)`, the target port as text (the port when unset).
fn port_pair(p: &ServicePort) -> (i32, String) {
    let target = match &p.target_port {
        Some(IntOrString::Int(n)) => n.to_string(),
        Some(IntOrString::String(s)) => s.clone(),
        None => p.port.to_string(),
    };
    (p.port, target)
}

/// What the state machine knows about a CSV's webhook objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedWebhooks {
    /// The cert Secrets by deployment name (a missing entry: no Secret).
    pub secrets: BTreeMap<String, CertSecret>,
    /// The Services of the cert deployments by deployment name (a missing entry: no Service).
    pub services: BTreeMap<String, ObservedService>,
    /// Fresh certificates by deployment name, issued by the shell for every deployment whose
    /// certificates are due ([`certs_due`]).
    pub issued: BTreeMap<String, IssuedCerts>,
    /// The webhook configurations labelled as owned by this CSV.
    pub configs: Vec<ObservedConfig>,
    /// The CRDs of conversion webhooks by name (a missing entry: no such CRD).
    pub conversions: BTreeMap<String, ObservedConversion>,
    /// The owned APIServices by name (a missing entry: no such APIService).
    pub api_services: BTreeMap<String, ObservedApiService>,
}

/// An owned APIService, as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedApiService {
    /// Its `olm.owner.kind`, `olm.owner.namespace` and `olm.owner` labels.
    pub owner: Option<(String, String, String)>,
    /// That owner is a CSV in phase `Replacing` or `Deleting` (it may be adopted).
    pub owner_retiring: bool,
    /// `spec.caBundle`.
    pub ca_bundle: Option<Vec<u8>>,
    /// `spec.service` as `(namespace, name)`.
    pub service: Option<(String, String)>,
    /// Condition `Available=True`.
    pub available: bool,
}

/// Why a CSV's webhook descriptions cannot be installed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WebhookInvalid {
    /// Two descriptions share a `generateName`.
    #[error(
        "CSV contains repeated WebhookDescription name {0}: each spec.webhookdefinitions[].generateName must be unique"
    )]
    Repeated(String),
    /// A rule intercepts what OLM protects: upstream's message alone (its e2e suite compares
    /// `status.message` exactly).
    #[error("{why}")]
    ForbiddenRule {
        /// The description.
        name: String,
        /// The upstream message.
        why: &'static str,
    },
    /// The description names a Deployment the install strategy does not have.
    #[error(
        "WebhookDescription {name}: deploymentName {deployment:?} is not a deployment of spec.install.spec.deployments"
    )]
    UnknownDeployment {
        /// The description.
        name: String,
        /// Its deploymentName.
        deployment: String,
    },
    /// A conversion webhook without CRDs.
    #[error("WebhookDescription {0}: a ConversionWebhook must name at least one CRD in conversionCRDs")]
    NoConversionCrds(String),
    /// A conversion webhook for a CRD the CSV does not own.
    #[error(
        "WebhookDescription {name}: conversionCRDs names {crd}, which is not in spec.customresourcedefinitions.owned"
    )]
    ConversionCrdNotOwned {
        /// The description.
        name: String,
        /// The CRD.
        crd: String,
    },
    /// A conversion webhook in a CSV that supports more than AllNamespaces.
    #[error(
        "WebhookDescription {0}: CSVs with conversion webhooks must support only AllNamespaces (spec.installModes)"
    )]
    ConversionNotAllNamespaces(String),
    /// A `type` that is none of the three OLM installs.
    #[error(
        "WebhookDescription {name}: type {type_:?} is not ValidatingAdmissionWebhook, MutatingAdmissionWebhook or ConversionWebhook"
    )]
    UnknownType {
        /// The description.
        name: String,
        /// Its type.
        type_: String,
    },
    /// An admission webhook whose `sideEffects` admissionregistration.k8s.io/v1 refuses.
    #[error(
        "WebhookDescription {name}: sideEffects {value:?} is not allowed by admissionregistration.k8s.io/v1; use None or NoneOnDryRun"
    )]
    SideEffects {
        /// The description.
        name: String,
        /// Its sideEffects.
        value: String,
    },
    /// No `admissionReviewVersions` (the API server requires at least one).
    #[error("WebhookDescription {0}: admissionReviewVersions must name at least one version (e.g. v1)")]
    NoReviewVersions(String),
    /// One `containerPort` of a Deployment's Service forwarded to two target ports.
    #[error(
        "deployment {deployment}: {first} and {second} both use containerPort {port} but forward it to different targetPorts; give them the same targetPort or different containerPorts"
    )]
    PortConflict {
        /// The cert deployment.
        deployment: String,
        /// The Service port.
        port: i32,
        /// The first description using it.
        first: String,
        /// The description forwarding it elsewhere.
        second: String,
    },
    /// An owned APIService names a Deployment the install strategy does not have.
    #[error(
        "APIService {name}: deploymentName {deployment:?} of spec.apiservicedefinitions.owned is not a deployment of spec.install.spec.deployments"
    )]
    ApiServiceUnknownDeployment {
        /// The APIService (`<version>.<group>`).
        name: String,
        /// Its deploymentName.
        deployment: String,
    },
}

impl WebhookInvalid {
    /// The CSV reason this failure is reported with.
    pub fn reason(&self) -> CsvReason {
        match self {
            Self::ConversionNotAllNamespaces(_) => CsvReason::UnsupportedOperatorGroup,
            Self::ApiServiceUnknownDeployment { .. } => CsvReason::ApiServiceInstallFailed,
            _ => CsvReason::InvalidWebhookDescription,
        }
    }
}

/// Why a rule is forbidden (upstream `ValidWebhookRules`), or `None`.
pub fn forbidden_rule(rules: &[RuleWithOperations]) -> Option<&'static str> {
    for rule in rules {
        let groups = rule.api_groups.as_deref().unwrap_or_default();
        if groups.iter().any(|g| g == "*") {
            return Some("webhook rules cannot include all groups");
        }
        if groups.iter().any(|g| g == "operators.coreos.com") {
            return Some("webhook rules cannot include the OLM group");
        }
        if groups.iter().any(|g| g == "admissionregistration.k8s.io") {
            let resources = rule.resources.as_deref().unwrap_or_default();
            let protected = [
                "*",
                "MutatingWebhookConfiguration",
                "ValidatingWebhookConfiguration",
                "mutatingwebhookconfigurations",
                "validatingwebhookconfigurations",
                "mutatingwebhookconfigurations/*",
                "validatingwebhookconfigurations/*",
            ];
            if resources.iter().any(|r| protected.contains(&r.as_str())) {
                return Some(
                    "webhook rules cannot include MutatingWebhookConfiguration or ValidatingWebhookConfiguration resources",
                );
            }
        }
    }
    None
}

/// Checks the CSV's webhook descriptions (see the module doc).
///
/// # Errors
/// The first [`WebhookInvalid`] found, in description order.
pub fn validate(csv: &ClusterServiceVersion) -> Result<(), WebhookInvalid> {
    let deployments: BTreeSet<&str> = csv
        .spec
        .install
        .spec
        .deployments
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let mut seen = BTreeSet::new();
    for desc in &csv.spec.webhook_definitions {
        let name = desc.generate_name.clone();
        if !seen.insert(desc.generate_name.as_str()) {
            return Err(WebhookInvalid::Repeated(name));
        }
        if let Some(why) = forbidden_rule(&desc.rules) {
            return Err(WebhookInvalid::ForbiddenRule { name, why });
        }
        let deployment = desc.deployment_name.clone().unwrap_or_default();
        if !deployments.contains(deployment.as_str()) {
            return Err(WebhookInvalid::UnknownDeployment { name, deployment });
        }
        if let WebhookAdmissionType::Other(type_) = &desc.type_ {
            return Err(WebhookInvalid::UnknownType {
                name,
                type_: type_.clone(),
            });
        }
        if desc.admission_review_versions.is_empty() {
            return Err(WebhookInvalid::NoReviewVersions(name));
        }
        if desc.type_ != WebhookAdmissionType::ConversionWebhook
            && !matches!(desc.side_effects.as_str(), "None" | "NoneOnDryRun")
        {
            return Err(WebhookInvalid::SideEffects {
                name,
                value: desc.side_effects.clone(),
            });
        }
        if desc.type_ == WebhookAdmissionType::ConversionWebhook {
            if !only_all_namespaces(csv) {
                return Err(WebhookInvalid::ConversionNotAllNamespaces(name));
            }
            if desc.conversion_crds.is_empty() {
                return Err(WebhookInvalid::NoConversionCrds(name));
            }
            if let Some(crd) = desc.conversion_crds.iter().find(|c| !csv.spec.owns_crd(c)) {
                return Err(WebhookInvalid::ConversionCrdNotOwned {
                    name,
                    crd: crd.clone(),
                });
            }
        }
    }
    for desc in owned_api_services(csv) {
        let deployment = desc.deployment_name.clone().unwrap_or_default();
        if !deployments.contains(deployment.as_str()) {
            return Err(WebhookInvalid::ApiServiceUnknownDeployment {
                name: api_service_name(desc),
                deployment,
            });
        }
    }
    for deployment in cert_deployments(csv) {
        let mut targets: BTreeMap<i32, (String, IntOrString)> = BTreeMap::new();
        for (desc, port, target) in port_uses(csv, &deployment) {
            match targets.get(&port) {
                Some((first, seen)) if *seen != target => {
                    return Err(WebhookInvalid::PortConflict {
                        deployment: deployment.clone(),
                        port,
                        first: first.clone(),
                        second: desc,
                    });
                }
                Some(_) => {}
                None => {
                    targets.insert(port, (desc, target));
                }
            }
        }
    }
    Ok(())
}

/// Whether the CSV supports AllNamespaces and no other install mode (upstream
/// `isSingletonOperator`; no install modes at all reads as true, as upstream).
fn only_all_namespaces(csv: &ClusterServiceVersion) -> bool {
    csv.spec.install_modes.iter().all(|m| {
        if m.type_ == InstallModeType::AllNamespaces {
            m.supported
        } else {
            !m.supported
        }
    })
}

/// The namespaceSelector scoping admission webhooks to the group's resolved target
/// namespaces (`None`: all namespaces).
pub fn namespace_selector(targets: &[String]) -> Option<LabelSelector> {
    if targets.is_empty() || targets.iter().any(String::is_empty) {
        return None;
    }
    let mut values = targets.to_vec();
    values.sort();
    values.dedup();
    Some(LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: NAMESPACE_NAME_LABEL.to_owned(),
            operator: "In".to_owned(),
            values: Some(values),
        }]),
        match_labels: None,
    })
}

fn pem_certs(pem: &[u8]) -> Option<Vec<rustls_pki_types::CertificateDer<'static>>> {
    use rustls_pki_types::pem::PemObject;
    let certs: Result<Vec<_>, _> = rustls_pki_types::CertificateDer::pem_slice_iter(pem).collect();
    certs.ok().filter(|c| !c.is_empty())
}

/// Whether `cert_pem` is signed by `ca_pem`, names every host, and is valid at `at`.
fn serving_cert_valid_at(ca_pem: &[u8], cert_pem: &[u8], hosts: &[String], at: &Time) -> bool {
    let (Some(cas), Some(certs)) = (pem_certs(ca_pem), pem_certs(cert_pem)) else {
        return false;
    };
    let Some(anchors) = cas
        .iter()
        .map(|ca| webpki::anchor_from_trusted_cert(ca).map(|a| a.to_owned()))
        .collect::<Result<Vec<_>, _>>()
        .ok()
    else {
        return false;
    };
    let Ok(leaf) = webpki::EndEntityCert::try_from(&certs[0]) else {
        return false;
    };
    let Ok(secs) = u64::try_from(at.0.as_second()) else {
        return false;
    };
    let time = rustls_pki_types::UnixTime::since_unix_epoch(Duration::from_secs(secs));
    let algs = [
        webpki::ring::ECDSA_P256_SHA256,
        webpki::ring::ECDSA_P256_SHA384,
        webpki::ring::ECDSA_P384_SHA256,
        webpki::ring::ECDSA_P384_SHA384,
        webpki::ring::ED25519,
        webpki::ring::RSA_PKCS1_2048_8192_SHA256,
        webpki::ring::RSA_PKCS1_2048_8192_SHA384,
        webpki::ring::RSA_PKCS1_2048_8192_SHA512,
    ];
    if leaf
        .verify_for_usage(
            &algs,
            &anchors,
            &certs[1..],
            time,
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .is_err()
    {
        return false;
    }
    hosts.iter().all(|host| {
        rustls_pki_types::ServerName::try_from(host.as_str())
            .is_ok_and(|name| leaf.verify_is_valid_for_subject_name(&name).is_ok())
    })
}

/// Whether a cert deployment's certificates must be replaced (see the module doc):
/// `secret` is its observed Secret, `rotate_at` the CSV's `status.certsRotateAt`.
pub fn rotation_due(
    secret: Option<&CertSecret>,
    hosts: &[String],
    rotate_at: Option<&Time>,
    now: &Time,
) -> bool {
    let Some(secret) = secret else {
        return true;
    };
    let (Some(ca), Some(cert), Some(_key)) = (&secret.ca_pem, &secret.cert_pem, &secret.key_pem) else {
        return true;
    };
    if rotate_at.is_some_and(|at| at.0 <= now.0) {
        return true;
    }
    let Ok(fresh_until) = now.0.checked_add(MIN_FRESH) else {
        return true;
    };
    !(serving_cert_valid_at(ca, cert, hosts, now)
        && serving_cert_valid_at(ca, cert, hosts, &Time(fresh_until)))
}

/// The cert deployments whose certificates are due: the shell issues fresh ones for these
/// (host names included) before deciding.
pub fn certs_due(
    csv: &ClusterServiceVersion,
    observed: &ObservedWebhooks,
    now: &Time,
) -> Vec<(String, Vec<String>)> {
    let namespace = csv.namespace().unwrap_or_default();
    let rotate_at = csv.status.as_ref().and_then(|s| s.certs_rotate_at.as_ref());
    cert_deployments(csv)
        .into_iter()
        .map(|d| {
            let h = hosts(&d, &namespace);
            (d, h)
        })
        .filter(|(d, h)| rotation_due(observed.secrets.get(d), h, rotate_at, now))
        .collect()
}

/// The certificate a cert deployment uses.
#[derive(Clone, Debug, PartialEq, Eq)]
struct InEffect {
    ca_pem: Vec<u8>,
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

impl InEffect {
    fn ca_hash(&self) -> String {
        hex::encode(Sha256::digest(&self.ca_pem))
    }
}

/// Everything a CSV's webhooks need, built from the certificates in effect.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebhookObjects {
    /// Cert Secrets.
    pub secrets: Vec<Secret>,
    /// Services.
    pub services: Vec<Service>,
    /// Roles reading the Secrets.
    pub roles: Vec<Role>,
    /// RoleBindings (the Secret readers, and the `kube-system` auth readers).
    pub role_bindings: Vec<RoleBinding>,
    /// The `system:auth-delegator` bindings.
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
    /// Validating webhook configurations.
    pub validating: Vec<ValidatingWebhookConfiguration>,
    /// Mutating webhook configurations.
    pub mutating: Vec<MutatingWebhookConfiguration>,
    /// `spec.conversion` by CRD name.
    pub conversions: BTreeMap<String, crdv1::CustomResourceConversion>,
    /// Webhook configurations owned by this CSV that no description asks for any more.
    pub stale: Vec<(ConfigKind, String)>,
    /// Owned APIServices (`apiregistration.k8s.io/v1`, as JSON: k8s-openapi has no type).
    pub api_services: Vec<serde_json::Value>,
}

/// The webhook part of one decision: the objects, the certificates in effect, and whether
/// new ones are being installed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebhookPlan {
    /// The objects to apply.
    pub objects: WebhookObjects,
    /// CA hash by cert deployment (`olmcahash` of the pod template).
    ca_hashes: BTreeMap<String, String>,
    /// Cert deployments with no certificate in effect (due, none issued).
    pub missing: Vec<String>,
    /// Some certificate is due: the rotate-at time of the fresh ones.
    pub rotating: Option<Time>,
    /// Owned APIServices as they must be: name, CA bundle, `(namespace, service)`.
    api_expect: Vec<(String, Vec<u8>, (String, String))>,
}

/// Builds the webhook plan of `csv` with the group's resolved `targets` (see the module doc).
/// Deployments whose certificates are due use the shell's fresh ones.
pub fn plan(
    csv: &ClusterServiceVersion,
    targets: &[String],
    observed: &ObservedWebhooks,
    now: &Time,
) -> WebhookPlan {
    let mut out = WebhookPlan::default();
    if !has_cert_resources(csv) {
        return out;
    }
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let owner = csv_owner_reference(csv);
    let owner_labels = owner_labels(&name, &namespace);
    let due: BTreeMap<String, Vec<String>> = certs_due(csv, observed, now).into_iter().collect();
    let mut in_effect: BTreeMap<String, InEffect> = BTreeMap::new();
    for deployment in cert_deployments(csv) {
        let cert = if due.contains_key(&deployment) {
            observed.issued.get(&deployment).map(|issued| {
                let rotate_at = issued
                    .not_after
                    .0
                    .checked_sub(MIN_FRESH)
                    .unwrap_or(issued.not_after.0);
                if out.rotating.as_ref().is_none_or(|r| rotate_at < r.0) {
                    out.rotating = Some(Time(rotate_at));
                }
                InEffect {
                    ca_pem: issued.ca_pem.clone().into_bytes(),
                    cert_pem: issued.cert_pem.clone().into_bytes(),
                    key_pem: issued.key_pem.clone().into_bytes(),
                }
            })
        } else {
            observed.secrets.get(&deployment).and_then(|s| {
                Some(InEffect {
                    ca_pem: s.ca_pem.clone()?,
                    cert_pem: s.cert_pem.clone()?,
                    key_pem: s.key_pem.clone()?,
                })
            })
        };
        match cert {
            Some(cert) => {
                out.ca_hashes.insert(deployment.clone(), cert.ca_hash());
                in_effect.insert(deployment, cert);
            }
            None => out.missing.push(deployment),
        }
    }

    let strategy = &csv.spec.install.spec.deployments;
    for (deployment, cert) in &in_effect {
        let Some(entry) = strategy.iter().find(|d| &d.name == deployment) else {
            continue;
        };
        let service_account = entry
            .spec
            .template
            .spec
            .as_ref()
            .and_then(|p| p.service_account_name.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        cert_objects(
            &mut out.objects,
            &CertTarget {
                deployment,
                namespace: &namespace,
                service_account: &service_account,
                selector: entry.spec.selector.match_labels.clone().unwrap_or_default(),
                owner: owner.as_ref(),
                owner_labels: &owner_labels,
            },
            service_ports(csv, deployment),
            cert,
        );
    }
    for desc in owned_api_services(csv) {
        let deployment = desc.deployment_name.clone().unwrap_or_default();
        let Some(cert) = in_effect.get(&deployment) else {
            continue;
        };
        let mut labels = owner_labels.clone();
        labels.insert(MANAGED.to_owned(), "true".to_owned());
        out.api_expect.push((
            api_service_name(desc),
            cert.ca_pem.clone(),
            (namespace.clone(), service_name(&deployment)),
        ));
        out.objects.api_services.push(serde_json::json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": api_service_name(desc), "labels": labels},
            "spec": {
                "group": desc.group,
                "version": desc.version,
                "groupPriorityMinimum": 2000,
                "versionPriority": 15,
                "service": {
                    "namespace": namespace,
                    "name": service_name(&deployment),
                    "port": port_of(desc.container_port),
                },
                "caBundle": ByteString(cert.ca_pem.clone()),
            },
        }));
    }

    let selector = namespace_selector(targets);
    let mut wanted = BTreeSet::new();
    for desc in &csv.spec.webhook_definitions {
        let deployment = desc.deployment_name.clone().unwrap_or_default();
        let Some(cert) = in_effect.get(&deployment) else {
            continue;
        };
        let ca = ByteString(cert.ca_pem.clone());
        let port = port_of(desc.container_port);
        let service = ServiceReference {
            name: service_name(&deployment),
            namespace: namespace.clone(),
            path: desc.webhook_path.clone(),
            port: Some(port),
        };
        let client = WebhookClientConfig {
            ca_bundle: Some(ca.clone()),
            service: Some(service),
            url: None,
        };
        let kind = match &desc.type_ {
            WebhookAdmissionType::MutatingAdmissionWebhook => ConfigKind::Mutating,
            _ => ConfigKind::Validating,
        };
        let config_name = adopted_name(observed, kind, &namespace, &deployment, &desc.generate_name);
        match &desc.type_ {
            WebhookAdmissionType::ValidatingAdmissionWebhook => {
                wanted.insert((ConfigKind::Validating, config_name.clone()));
                let webhook = ValidatingWebhook {
                    name: desc.generate_name.clone(),
                    rules: non_empty(desc.rules.clone()),
                    failure_policy: desc.failure_policy.clone(),
                    match_policy: desc.match_policy.clone(),
                    namespace_selector: selector.clone(),
                    object_selector: desc.object_selector.clone(),
                    side_effects: desc.side_effects.clone(),
                    timeout_seconds: desc.timeout_seconds,
                    admission_review_versions: desc.admission_review_versions.clone(),
                    client_config: client,
                    match_conditions: None,
                };
                let hash = encode_hash(hash_json(&webhook), 13);
                out.objects.validating.push(ValidatingWebhookConfiguration {
                    metadata: config_meta(&config_name, &owner_labels, desc, hash),
                    webhooks: Some(vec![webhook]),
                });
            }
            WebhookAdmissionType::MutatingAdmissionWebhook => {
                wanted.insert((ConfigKind::Mutating, config_name.clone()));
                let webhook = MutatingWebhook {
                    name: desc.generate_name.clone(),
                    rules: non_empty(desc.rules.clone()),
                    failure_policy: desc.failure_policy.clone(),
                    match_policy: desc.match_policy.clone(),
                    namespace_selector: selector.clone(),
                    object_selector: desc.object_selector.clone(),
                    side_effects: desc.side_effects.clone(),
                    timeout_seconds: desc.timeout_seconds,
                    admission_review_versions: desc.admission_review_versions.clone(),
                    client_config: client,
                    reinvocation_policy: desc.reinvocation_policy.clone(),
                    match_conditions: None,
                };
                let hash = encode_hash(hash_json(&webhook), 13);
                out.objects.mutating.push(MutatingWebhookConfiguration {
                    metadata: config_meta(&config_name, &owner_labels, desc, hash),
                    webhooks: Some(vec![webhook]),
                });
            }
            WebhookAdmissionType::ConversionWebhook => {
                let conversion = crdv1::CustomResourceConversion {
                    strategy: "Webhook".to_owned(),
                    webhook: Some(crdv1::WebhookConversion {
                        client_config: Some(crdv1::WebhookClientConfig {
                            ca_bundle: Some(ca),
                            service: Some(crdv1::ServiceReference {
                                name: service_name(&deployment),
                                namespace: namespace.clone(),
                                path: Some(desc.webhook_path.clone().unwrap_or_else(|| "/".to_owned())),
                                port: Some(port),
                            }),
                            url: None,
                        }),
                        conversion_review_versions: desc.admission_review_versions.clone(),
                    }),
                };
                for crd in &desc.conversion_crds {
                    out.objects.conversions.insert(crd.clone(), conversion.clone());
                }
            }
            WebhookAdmissionType::Other(_) => {}
        }
    }
    out.objects.stale = observed
        .configs
        .iter()
        .filter(|c| !wanted.contains(&(c.kind, c.name.clone())))
        .map(|c| (c.kind, c.name.clone()))
        .collect();
    out
}

fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

/// The name of the configuration of `kind` for the description `generate_name`: the stable
/// [`config_name`], unless this CSV already owns configurations for that description (its
/// `olm.webhook-description-generate-name` label) and none has the stable name; then the first of
/// them by name, updated in place. Upstream OLM v0 names its configurations
/// `<generateName>-<random>`: a cluster taken over from it keeps them (no second configuration,
/// no moment without the webhook).
fn adopted_name(
    observed: &ObservedWebhooks,
    kind: ConfigKind,
    namespace: &str,
    deployment: &str,
    generate_name: &str,
) -> String {
    let stable = config_name(namespace, deployment, generate_name);
    observed
        .configs
        .iter()
        .filter(|c| c.kind == kind && c.generate_name.as_deref() == Some(generate_name))
        .map(|c| c.name.as_str())
        .min()
        .filter(|_| {
            !observed
                .configs
                .iter()
                .any(|c| c.kind == kind && c.name == stable)
        })
        .map_or(stable.clone(), str::to_owned)
}

/// The stable name of a description's configuration (see the module doc).
pub fn config_name(namespace: &str, deployment: &str, generate_name: &str) -> String {
    let suffix = encode_hash(hash_json(&[namespace, deployment, generate_name]), 5);
    let prefix: String = generate_name.chars().take(253 - 6).collect();
    format!("{prefix}-{suffix}")
}

fn config_meta(
    name: &str,
    owner_labels: &BTreeMap<String, String>,
    desc: &WebhookDescription,
    hash: String,
) -> ObjectMeta {
    let mut labels = owner_labels.clone();
    labels.insert(
        WEBHOOK_DESCRIPTION_GENERATE_NAME.to_owned(),
        desc.generate_name.clone(),
    );
    labels.insert(WEBHOOK_HASH.to_owned(), hash);
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some(labels),
        ..Default::default()
    }
}

struct CertTarget<'a> {
    deployment: &'a str,
    namespace: &'a str,
    service_account: &'a str,
    selector: BTreeMap<String, String>,
    owner: Option<&'a OwnerReference>,
    owner_labels: &'a BTreeMap<String, String>,
}

fn cert_objects(out: &mut WebhookObjects, t: &CertTarget<'_>, ports: Vec<ServicePort>, cert: &InEffect) {
    let service = service_name(t.deployment);
    let secret = secret_name(t.deployment);
    let managed = BTreeMap::from([(MANAGED.to_owned(), "true".to_owned())]);
    let mut owned_labels = managed.clone();
    owned_labels.extend(t.owner_labels.clone());
    let meta = |name: &str, namespace: &str, labels: &BTreeMap<String, String>, owned: bool| ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels.clone()),
        owner_references: if owned {
            t.owner.map(|o| vec![o.clone()])
        } else {
            None
        },
        ..Default::default()
    };
    out.services.push(Service {
        metadata: meta(&service, t.namespace, &managed, true),
        spec: Some(ServiceSpec {
            ports: Some(ports),
            selector: Some(t.selector.clone()),
            ..Default::default()
        }),
        status: None,
    });
    let mut secret_meta = meta(&secret, t.namespace, &managed, true);
    secret_meta.annotations = Some(BTreeMap::from([(CA_HASH.to_owned(), cert.ca_hash())]));
    out.secrets.push(Secret {
        metadata: secret_meta,
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(BTreeMap::from([
            ("tls.crt".to_owned(), ByteString(cert.cert_pem.clone())),
            ("tls.key".to_owned(), ByteString(cert.key_pem.clone())),
            (CA_PEM_KEY.to_owned(), ByteString(cert.ca_pem.clone())),
        ])),
        ..Default::default()
    });
    out.roles.push(Role {
        metadata: meta(&secret, t.namespace, &managed, true),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["secrets".to_owned()]),
            resource_names: Some(vec![secret.clone()]),
            verbs: vec!["get".to_owned()],
            non_resource_urls: None,
        }]),
    });
    let subject = Subject {
        kind: "ServiceAccount".to_owned(),
        api_group: Some(String::new()),
        name: t.service_account.to_owned(),
        namespace: Some(t.namespace.to_owned()),
    };
    let role_ref = |kind: &str, name: &str| RoleRef {
        api_group: Some("rbac.authorization.k8s.io".to_owned()),
        kind: kind.to_owned(),
        name: name.to_owned(),
    };
    out.role_bindings.push(RoleBinding {
        metadata: meta(&secret, t.namespace, &managed, true),
        role_ref: role_ref("Role", &secret),
        subjects: Some(vec![subject.clone()]),
    });
    // Cross-namespace and cluster-scoped: owner labels (the finalizer deletes by them).
    out.role_bindings.push(RoleBinding {
        metadata: meta(
            &format!("{service}-auth-reader"),
            "kube-system",
            &owned_labels,
            false,
        ),
        role_ref: role_ref("Role", "extension-apiserver-authentication-reader"),
        subjects: Some(vec![subject.clone()]),
    });
    let mut crb_meta = meta(
        &format!("{service}-system:auth-delegator"),
        "",
        &owned_labels,
        false,
    );
    crb_meta.namespace = None;
    out.cluster_role_bindings.push(ClusterRoleBinding {
        metadata: crb_meta,
        role_ref: role_ref("ClusterRole", "system:auth-delegator"),
        subjects: Some(vec![subject]),
    });
}

impl WebhookPlan {
    /// Mounts the certificates in effect into the cert deployments' pod templates (volumes
    /// `apiservice-cert` and `webhook-cert`, the `olmcahash` annotation, ServiceAccount
    /// `default` when none is named) and renews their spec-hash label.
    pub fn mount_certs(&self, deployments: &mut [Deployment]) {
        for deployment in deployments {
            let name = deployment.name_any();
            let Some(ca_hash) = self.ca_hashes.get(&name) else {
                continue;
            };
            let template = &mut deployment.spec.template;
            template
                .metadata
                .get_or_insert_with(ObjectMeta::default)
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(CA_HASH.to_owned(), ca_hash.clone());
            let pod = template.spec.get_or_insert_with(PodSpec::default);
            if pod.service_account_name.as_deref().unwrap_or_default().is_empty() {
                pod.service_account_name = Some("default".to_owned());
            }
            let secret = secret_name(&name);
            mount(
                pod,
                &secret,
                APISERVICE_CERT_VOLUME,
                APISERVICE_CERT_PATH,
                "apiserver",
            );
            mount(pod, &secret, WEBHOOK_CERT_VOLUME, WEBHOOK_CERT_PATH, "tls");
            super::deployments::stamp_spec_hash(deployment);
        }
    }

    /// Why the webhook objects are not all in place as observed (`None`: they are).
    pub fn not_installed(&self, observed: &ObservedWebhooks) -> Option<String> {
        if let Some(d) = self.missing.first() {
            return Some(format!("waiting for the serving certificate of deployment {d}"));
        }
        let config_ok = |kind: ConfigKind, meta: &ObjectMeta| {
            let hash = meta.labels.as_ref().and_then(|l| l.get(WEBHOOK_HASH));
            observed
                .configs
                .iter()
                .any(|c| c.kind == kind && Some(&c.name) == meta.name.as_ref() && c.hash.as_ref() == hash)
        };
        for c in &self.objects.validating {
            if !config_ok(ConfigKind::Validating, &c.metadata) {
                return Some(format!(
                    "ValidatingWebhookConfiguration {} is not installed",
                    c.metadata.name.as_deref().unwrap_or_default()
                ));
            }
        }
        for c in &self.objects.mutating {
            if !config_ok(ConfigKind::Mutating, &c.metadata) {
                return Some(format!(
                    "MutatingWebhookConfiguration {} is not installed",
                    c.metadata.name.as_deref().unwrap_or_default()
                ));
            }
        }
        for (crd, conversion) in &self.objects.conversions {
            let want_ca = conversion
                .webhook
                .as_ref()
                .and_then(|w| w.client_config.as_ref())
                .and_then(|c| c.ca_bundle.as_ref())
                .map(|b| &b.0);
            let seen = observed.conversions.get(crd);
            if seen
                .is_none_or(|s| s.strategy.as_deref() != Some("Webhook") || s.ca_bundle.as_ref() != want_ca)
            {
                return Some(format!("the conversion webhook of CRD {crd} is not installed"));
            }
        }
        for (name, ca, service) in &self.api_expect {
            let seen = observed.api_services.get(name);
            if seen.is_none_or(|s| s.ca_bundle.as_ref() != Some(ca) || s.service.as_ref() != Some(service)) {
                return Some(format!("APIService {name} is not installed"));
            }
        }
        for secret in &self.objects.secrets {
            let deployment = secret
                .metadata
                .name
                .as_deref()
                .and_then(|n| self.ca_hashes.keys().find(|d| secret_name(d) == n))
                .cloned()
                .unwrap_or_default();
            let want = secret.data.as_ref().and_then(|d| d.get(CA_PEM_KEY)).map(|b| &b.0);
            if observed.secrets.get(&deployment).and_then(|s| s.ca_pem.as_ref()) != want {
                return Some(format!(
                    "Secret {} does not hold the current certificate",
                    secret.metadata.name.as_deref().unwrap_or_default()
                ));
            }
        }
        None
    }
}

impl WebhookPlan {
    /// The first Service of a cert deployment that is gone (`(true, message)`) or whose
    /// selector or ports differ from the install's (`(false, message)`). Ports others added
    /// are theirs; only the install's ports must be there.
    pub fn service_issue(&self, observed: &ObservedWebhooks) -> Option<(bool, String)> {
        for service in &self.objects.services {
            let name = service.metadata.name.as_deref().unwrap_or_default();
            let namespace = service.metadata.namespace.as_deref().unwrap_or_default();
            let deployment = self
                .ca_hashes
                .keys()
                .find(|d| service_name(d) == name)
                .cloned()
                .unwrap_or_default();
            let Some(seen) = observed.services.get(&deployment) else {
                return Some((true, format!("missing Service {namespace}/{name}")));
            };
            let spec = service.spec.as_ref();
            let selector = spec.and_then(|s| s.selector.clone()).unwrap_or_default();
            let ports_ok = spec
                .and_then(|s| s.ports.as_ref())
                .is_none_or(|ports| ports.iter().all(|p| seen.ports.contains(&port_pair(p))));
            if seen.selector != selector || !ports_ok {
                return Some((
                    false,
                    format!("Service {namespace}/{name} does not match the CSV's webhooks; updating it"),
                ));
            }
        }
        None
    }

    /// The Services of cert deployments that are gone, as `Service <namespace>/<name>`.
    pub fn missing_services(&self, observed: &ObservedWebhooks) -> Vec<String> {
        self.objects
            .services
            .iter()
            .filter(|service| {
                let name = service.metadata.name.as_deref().unwrap_or_default();
                !self
                    .ca_hashes
                    .keys()
                    .any(|d| service_name(d) == name && observed.services.contains_key(d))
            })
            .map(|service| {
                format!(
                    "Service {}/{}",
                    service.metadata.namespace.as_deref().unwrap_or_default(),
                    service.metadata.name.as_deref().unwrap_or_default()
                )
            })
            .collect()
    }

    /// The first owned APIService that is not `Available` (upstream
    /// `areAPIServicesAvailable`), as a waiting message.
    pub fn unavailable(&self, observed: &ObservedWebhooks) -> Option<String> {
        self.api_expect
            .iter()
            .find(|(name, ..)| !observed.api_services.get(name).is_some_and(|s| s.available))
            .map(|(name, ..)| format!("APIService {name} is not available"))
    }

    /// What is wrong with the generated resources of the owned APIServices of a CSV that
    /// was installed (upstream `checkAPIServiceResources`): `(adoptable, message)`, where an
    /// APIService another CSV owns is not adoptable.
    pub fn api_service_issue(
        &self,
        csv: &ClusterServiceVersion,
        observed: &ObservedWebhooks,
    ) -> Option<(bool, String)> {
        if let Some(conflict) = api_service_conflict(csv, observed) {
            return Some((false, conflict));
        }
        for desc in owned_api_services(csv) {
            let name = api_service_name(desc);
            let deployment = desc.deployment_name.clone().unwrap_or_default();
            let Some(seen) = observed.api_services.get(&name) else {
                return Some((true, format!("could not retrieve generated APIService {name}")));
            };
            let service = (csv.namespace().unwrap_or_default(), service_name(&deployment));
            if seen.service.as_ref() != Some(&service) {
                return Some((true, "found APIService and service reference mismatch".to_owned()));
            }
            let secret_ca = observed.secrets.get(&deployment).and_then(|s| s.ca_pem.as_ref());
            if secret_ca.is_none() {
                return Some((
                    true,
                    format!("could not retrieve generated Secret {}", secret_name(&deployment)),
                ));
            }
            if seen.ca_bundle.as_ref() != secret_ca {
                return Some((
                    true,
                    format!(
                        "secret {} CA cert hash does not match expected",
                        secret_name(&deployment)
                    ),
                ));
            }
        }
        None
    }
}

/// An owned APIService that exists and belongs to a CSV other than this one, the one it
/// replaces, or one being replaced or deleted (upstream `IsAPIServiceAdoptable`; one without
/// owner labels is not adoptable either), as a message.
pub fn api_service_conflict(csv: &ClusterServiceVersion, observed: &ObservedWebhooks) -> Option<String> {
    let namespace = csv.namespace().unwrap_or_default();
    let me = csv.name_any();
    let replaces = csv.spec.replaces.clone().unwrap_or_default();
    for desc in owned_api_services(csv) {
        let name = api_service_name(desc);
        let Some(seen) = observed.api_services.get(&name) else {
            continue;
        };
        let adoptable = seen.owner.as_ref().is_some_and(|(kind, ns, owner)| {
            kind == CSV_KIND
                && (seen.owner_retiring
                    || (ns == &namespace && (owner == &me || (!replaces.is_empty() && owner == &replaces))))
        });
        if !adoptable {
            let by = seen
                .owner
                .as_ref()
                .map_or_else(|| "nobody OLM knows".to_owned(), |(_, ns, n)| format!("{ns}/{n}"));
            return Some(format!(
                "pre-existing APIService {name} is not adoptable: it belongs to {by}; delete it or uninstall its operator"
            ));
        }
    }
    None
}

fn mount(pod: &mut PodSpec, secret: &str, volume: &str, path: &str, file: &str) {
    let (crt, key) = if file == "tls" {
        ("tls.crt".to_owned(), "tls.key".to_owned())
    } else {
        (format!("{file}.crt"), format!("{file}.key"))
    };
    let wanted = Volume {
        name: volume.to_owned(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.to_owned()),
            items: Some(vec![
                KeyToPath {
                    key: "tls.crt".to_owned(),
                    path: crt,
                    ..Default::default()
                },
                KeyToPath {
                    key: "tls.key".to_owned(),
                    path: key,
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let volumes = pod.volumes.get_or_insert_with(Vec::new);
    match volumes.iter_mut().find(|v| v.name == volume) {
        Some(v) => *v = wanted,
        None => volumes.push(wanted),
    }
    let wanted_mount = VolumeMount {
        name: volume.to_owned(),
        mount_path: path.to_owned(),
        ..Default::default()
    };
    for container in &mut pod.containers {
        let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
        if mounts.iter().any(|m| m.name == volume) {
            continue;
        }
        // Replace a mount at the same path (upstream `addCertVolumeAndVolumeMount`).
        match mounts.iter_mut().find(|m| m.mount_path == path) {
            Some(m) => *m = wanted_mount.clone(),
            None => mounts.push(wanted_mount.clone()),
        }
    }
}

#[cfg(test)]
mod tests;
