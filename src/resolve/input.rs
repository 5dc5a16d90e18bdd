//! input: what resolution looks at — the request (one Subscription), the catalogs the namespace
//! can see, and what is already installed in the namespace.

use std::fmt;

use kube::ResourceExt;
use semver::Version;

use crate::{
    api::{
        labels,
        v1alpha1::{Approval, ClusterServiceVersion, CsvPhase, Subscription},
    },
    catalog::{Model, property::Gvk},
    version_range,
};

/// Identifies a CatalogSource by namespace and name; displayed `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CatalogKey {
    /// Namespace of the CatalogSource.
    pub namespace: String,
    /// Name of the CatalogSource.
    pub name: String,
}

impl CatalogKey {
    /// A key from namespace and name.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        CatalogKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for CatalogKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What one Subscription asks for (its spec, plus the installed CSV from its status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Namespace of the Subscription (and of everything it installs).
    pub namespace: String,
    /// Name of the Subscription.
    pub name: String,
    /// `spec.name`: the package.
    pub package: String,
    /// `spec.channel`; `None` (or empty) follows the package's default channel.
    pub channel: Option<String>,
    /// `spec.startingCSV`: the exact bundle of a first install.
    pub starting_csv: Option<String>,
    /// `spec.source` / `spec.sourceNamespace`: the catalog the package comes from.
    pub catalog: CatalogKey,
    /// `status.installedCSV`: the CSV upgrades start from.
    pub installed_csv: Option<String>,
    /// `spec.installPlanApproval`; not used by resolution, carried for the caller.
    pub approval: Approval,
    /// The highest version this Subscription may install (olm-rs's `olm-rs.io/version-ceiling`
    /// annotation, read by [`crate::plan::subscription::pin`]): bundles above it are neither
    /// installed first nor upgraded to. `None` (the default) puts no ceiling.
    pub version_ceiling: Option<Version>,
}

impl Request {
    /// The request of a Subscription object (namespace from its metadata; empty strings in
    /// optional fields count as unset).
    pub fn from_subscription(sub: &Subscription) -> Request {
        let nonempty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
        Request {
            namespace: sub.namespace().unwrap_or_default(),
            name: sub.name_any(),
            package: sub.spec.name.clone(),
            channel: nonempty(&sub.spec.channel),
            starting_csv: nonempty(&sub.spec.starting_csv),
            catalog: CatalogKey::new(&sub.spec.source_namespace, &sub.spec.source),
            installed_csv: sub.status.as_ref().and_then(|s| nonempty(&s.installed_csv)),
            approval: sub.spec.approval(),
            version_ceiling: None,
        }
    }

    pub(crate) fn channel(&self) -> Option<&str> {
        self.channel.as_deref().filter(|c| !c.is_empty())
    }

    pub(crate) fn starting_csv(&self) -> Option<&str> {
        self.starting_csv.as_deref().filter(|c| !c.is_empty())
    }

    /// Whether `version` is at or below the version ceiling (always, without one).
    pub fn within_ceiling(&self, version: &Version) -> bool {
        self.version_ceiling
            .as_ref()
            .is_none_or(|c| version_range::compare(version, c) != std::cmp::Ordering::Greater)
    }
}

/// One CatalogSource visible to the Subscription's namespace.
#[derive(Debug, Clone)]
pub struct Catalog<'a> {
    /// Which CatalogSource.
    pub key: CatalogKey,
    /// `spec.priority`: higher is preferred when several catalogs offer a dependency.
    pub priority: i32,
    /// The catalog's content; `None` when it could not be read (then `problem` says why).
    pub model: Option<&'a Model>,
    /// Why the catalog is unhealthy (`status.message`), if it is.
    pub problem: Option<String>,
}

/// The catalogs visible to one namespace: every CatalogSource in the namespace itself and in the
/// global catalog namespace.
#[derive(Debug, Clone)]
pub struct Catalogs<'a> {
    /// The global catalog namespace (`olm` upstream), whose catalogs every namespace sees.
    pub global_namespace: String,
    /// The catalogs, in any order (resolution sorts them).
    pub catalogs: Vec<Catalog<'a>>,
}

impl<'a> Catalogs<'a> {
    /// The catalog with this key.
    pub fn get(&self, key: &CatalogKey) -> Option<&Catalog<'a>> {
        self.catalogs.iter().find(|c| &c.key == key)
    }
}

/// One (non-copied) CSV present in the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledCsv {
    /// CSV name.
    pub name: String,
    /// `spec.version`, when set and parsable.
    pub version: Option<Version>,
    /// The package, when known (from the `operatorframework.io/properties` annotation, or from the
    /// Subscription that installed it); otherwise inferred from the Subscriptions in
    /// [`Installed::subscriptions`].
    pub package: Option<String>,
    /// APIs the CSV provides (owned CRDs and API services).
    pub provided_gvks: Vec<Gvk>,
    /// `status.phase`; CSVs that are `Replacing` or `Deleting` are on their way out and neither
    /// satisfy dependencies nor conflict with new providers.
    pub phase: CsvPhase,
}

impl InstalledCsv {
    /// What resolution needs of a CSV object: its name, `spec.version` (read tolerantly, like
    /// upstream), its package from the `olm.package` entry of the
    /// `operatorframework.io/properties` annotation (which OLM writes on the CSVs it installs),
    /// the APIs it owns (CRDs, whose name is `<plural>.<group>`, and API services) and its phase.
    pub fn from_csv(csv: &ClusterServiceVersion) -> InstalledCsv {
        let spec = &csv.spec;
        let mut provided_gvks: Vec<Gvk> = Vec::new();
        if let Some(crds) = &spec.custom_resource_definitions {
            for crd in &crds.owned {
                let group = crd.name.split_once('.').map(|(_, g)| g).unwrap_or_default();
                provided_gvks.push(Gvk {
                    group: group.to_owned(),
                    version: crd.version.clone(),
                    kind: crd.kind.clone(),
                });
            }
        }
        if let Some(apis) = &spec.api_service_definitions {
            for api in &apis.owned {
                provided_gvks.push(Gvk {
                    group: api.group.clone(),
                    version: api.version.clone(),
                    kind: api.kind.clone(),
                });
            }
        }
        provided_gvks.sort();
        provided_gvks.dedup();
        InstalledCsv {
            name: csv.name_any(),
            version: spec
                .version
                .as_deref()
                .and_then(|v| version_range::parse_version_tolerant(v).ok()),
            package: csv
                .annotations()
                .get(labels::PROPERTIES)
                .and_then(|text| package_from_properties(text)),
            provided_gvks,
            phase: csv
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default(),
        }
    }

    pub(crate) fn leaving(&self) -> bool {
        matches!(self.phase, CsvPhase::Replacing | CsvPhase::Deleting)
    }
}

/// A Subscription present in the namespace (including, or not, the one being resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingSubscription {
    /// Subscription name.
    pub name: String,
    /// `spec.name`.
    pub package: String,
    /// `spec.source` / `spec.sourceNamespace`.
    pub catalog: CatalogKey,
    /// `status.currentCSV`.
    pub current_csv: Option<String>,
    /// `status.installedCSV`.
    pub installed_csv: Option<String>,
}

impl ExistingSubscription {
    /// The summary of a Subscription object.
    pub fn from_subscription(sub: &Subscription) -> Self {
        let status = sub.status.as_ref();
        let nonempty = |s: Option<&String>| s.filter(|s| !s.is_empty()).cloned();
        ExistingSubscription {
            name: sub.name_any(),
            package: sub.spec.name.clone(),
            catalog: CatalogKey::new(&sub.spec.source_namespace, &sub.spec.source),
            current_csv: nonempty(status.and_then(|s| s.current_csv.as_ref())),
            installed_csv: nonempty(status.and_then(|s| s.installed_csv.as_ref())),
        }
    }

    pub(crate) fn owns(&self, csv: &str) -> bool {
        self.installed_csv.as_deref() == Some(csv) || self.current_csv.as_deref() == Some(csv)
    }
}

/// What the namespace already holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Installed {
    /// The CSVs in the namespace (copied CSVs excluded).
    pub csvs: Vec<InstalledCsv>,
    /// The Subscriptions in the namespace.
    pub subscriptions: Vec<ExistingSubscription>,
}

impl Installed {
    /// The CSV named `name`.
    pub fn csv(&self, name: &str) -> Option<&InstalledCsv> {
        self.csvs.iter().find(|c| c.name == name)
    }

    /// The package of a CSV: its own, else the package of a Subscription that owns it.
    pub fn package_of(&self, csv: &InstalledCsv) -> Option<String> {
        csv.package.clone().or_else(|| {
            self.subscriptions
                .iter()
                .find(|s| s.owns(&csv.name))
                .map(|s| s.package.clone())
        })
    }

    /// The Subscription owning the CSV named `csv` (its installed or current CSV), other than
    /// `except`.
    pub fn owner_of(&self, csv: &str, except: &str) -> Option<&ExistingSubscription> {
        self.subscriptions
            .iter()
            .find(|s| s.name != except && s.owns(csv))
    }
}

/// The `packageName` of the first `olm.package` property in a properties annotation
/// (`{"properties":[{"type":"olm.package","value":{"packageName":...}}]}`); `None` when the text
/// is not that shape.
fn package_from_properties(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    value
        .get("properties")?
        .as_array()?
        .iter()
        .find(|p| p.get("type").and_then(|t| t.as_str()) == Some("olm.package"))?
        .get("value")?
        .get("packageName")?
        .as_str()
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_installed_csv_is_read_from_its_object() {
        let csv: ClusterServiceVersion = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "redis-operator.v0.2.0", "namespace": "operators",
                "annotations": {"operatorframework.io/properties":
                    "{\"properties\":[{\"type\":\"olm.gvk\",\"value\":{}},{\"type\":\"olm.package\",\"value\":{\"packageName\":\"redis-operator\",\"version\":\"0.2.0\"}}]}"}},
            "spec": {
                "displayName": "Redis", "version": "v0.2",
                "install": {"strategy": "deployment", "spec": {"deployments": []}},
                "customresourcedefinitions": {"owned": [
                    {"name": "redisclusters.cache.example.com", "version": "v1alpha1", "kind": "RedisCluster"}
                ]},
                "apiservicedefinitions": {"owned": [
                    {"name": "v1.metrics.example.com", "group": "metrics.example.com", "version": "v1", "kind": "Metric"}
                ]}
            },
            "status": {"phase": "Succeeded"}
        }))
        .expect("test csv");
        let installed = InstalledCsv::from_csv(&csv);
        assert_eq!(installed.name, "redis-operator.v0.2.0");
        assert_eq!(installed.version, Some(Version::new(0, 2, 0)));
        assert_eq!(installed.package.as_deref(), Some("redis-operator"));
        let kinds: Vec<String> = installed.provided_gvks.iter().map(|g| g.to_string()).collect();
        assert_eq!(
            kinds,
            [
                "cache.example.com/v1alpha1/RedisCluster",
                "metrics.example.com/v1/Metric"
            ]
        );
        assert_eq!(installed.phase, CsvPhase::Succeeded);
    }

    #[test]
    fn a_csv_without_properties_has_no_known_package() {
        assert_eq!(package_from_properties("not json"), None);
        assert_eq!(package_from_properties(r#"{"properties":[]}"#), None);
        assert_eq!(
            package_from_properties(
                r#"{"properties":[{"type":"olm.package","value":{"packageName":"etcd"}}]}"#
            )
            .as_deref(),
            Some("etcd")
        );
    }
}
