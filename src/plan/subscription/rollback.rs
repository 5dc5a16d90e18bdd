//! rollback: whether a Subscription can go back to the CSV it had installed before, and what
//! that takes. `kubectl olm rollback` reads the cluster (as the user) and acts; everything it
//! decides is here.
//!
//! Upstream OLM has no rollback. Its users downgrade by hand: delete the Subscription and the
//! CSV (CRDs and custom resources stay), then create the Subscription again with
//! `startingCSV` set to the older bundle. That is safe only when the older bundle is still in
//! the catalog and its CRDs can take the objects the cluster holds now; nothing checks it, and
//! the Subscription upgrades again at once. A rollback here does the same steps, after these
//! checks, in order:
//!
//! 1. **There is an earlier CSV**: the entry before the installed CSV in the Subscription's
//!    history ([`super::pin::INSTALLED_CSVS`], kept by the controller).
//! 2. **It can be installed again**: its bundle is in the Subscription's catalog, in its
//!    channel, and does not carry `olm.deprecated`; and it is older than the installed CSV (after
//!    a rollback the entry before is the newer CSV left behind: a rollback never goes forward).
//! 3. **No CRD loses data** (per CRD the installed CSV owns and the older bundle ships, see
//!    [`crd_rollback`]): a version served now but not by the older CRD is dropped. A dropped
//!    version listed in `status.storedVersions` is refused while any object of the CRD exists
//!    (it may be stored in that version, and the older operator could not read it); once none
//!    exists, it is taken out of `status.storedVersions`, as the Kubernetes documentation
//!    prescribes before a stored version is removed. A dropped version that was only served is
//!    refused while an object is written through it (its `metadata.managedFields` name that
//!    API version: `kubectl apply` or GitOps would fail on it next time). A version both serve whose older schema rejects an existing
//!    object is refused, naming the object ([`crate::plan::crd_safety`], the checks the
//!    InstallPlan runs).
//!
//! Then the new Subscription ([`rollback_subscription`]) is the old one with `startingCSV` set
//! to the earlier CSV and a version ceiling at its version ([`super::pin::VERSION_CEILING`]), so
//! it does not upgrade again until the annotation is removed; its history is kept.
//!
//! **The preview says what really happens** ([`reinstalled_by`]): the rollback deletes the
//! installed CSV, and the earlier one too when the upgrade left it (`Replacing`), before the new
//! plan runs. What goes with them is created again by the plan, whatever it looks like now: the
//! CSVs themselves, the objects whose every owner reference is one of them (the garbage
//! collector deletes those), and the objects labelled `olm.owner` with one of them (the CSV's
//! finalizer deletes those). Such a step reads [`REINSTALLED`], never `unchanged`.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use semver::Version;
use serde_json::Value;

use crate::{
    api::v1alpha1::Subscription,
    catalog::model::{Bundle, Package},
    plan::crd_safety,
    resolve::{self, Catalogs, Dependency, Installed, Request},
};

/// Why a rollback is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Nothing is installed.
    #[error("subscription {subscription} has no installed CSV; there is nothing to roll back")]
    NothingInstalled {
        /// `namespace/name`.
        subscription: String,
    },
    /// The history has no CSV before the installed one.
    #[error(
        "subscription {subscription} has no CSV recorded before {installed} (annotation \
         olm-rs.io/installed-csvs: {history}); to install an older version, delete the \
         Subscription and the CSV and subscribe again with spec.startingCSV"
    )]
    NoEarlierCsv {
        /// `namespace/name`.
        subscription: String,
        /// The installed CSV.
        installed: String,
        /// The history, as recorded.
        history: String,
    },
    /// The earlier bundle is not in the catalog (or its channel) any more.
    #[error(
        "bundle {bundle} is no longer in channel '{channel}' of package {package} in catalog \
         {catalog}, so it cannot be installed again; add it back to the catalog, or pass \
         --catalog with one that has it"
    )]
    NotInCatalog {
        /// The earlier CSV.
        bundle: String,
        /// The channel.
        channel: String,
        /// The package.
        package: String,
        /// The catalog.
        catalog: String,
    },
    /// The CSV before the installed one is not older (the installed CSV was itself a rollback).
    #[error(
        "the CSV before {installed} in the history is {bundle} ({version}), which is not older than \
         {installed} ({installed_version}); rollback only goes back: to upgrade, raise or remove the \
         annotation olm-rs.io/version-ceiling"
    )]
    NotOlder {
        /// The installed CSV.
        installed: String,
        /// Its version.
        installed_version: String,
        /// The CSV before it.
        bundle: String,
        /// Its version.
        version: String,
    },
    /// The earlier bundle carries `olm.deprecated`.
    #[error("bundle {bundle} carries olm.deprecated and can never be installed again")]
    Prohibited {
        /// The earlier CSV.
        bundle: String,
    },
    /// A CRD version would be dropped while objects of the CRD exist.
    #[error("{0}")]
    VersionDropped(Box<Dropped>),
    /// The new Subscription would not resolve to the earlier bundle (a dependency no catalog
    /// has, a conflict).
    #[error("the Subscription made again at {to} would not install it: {reason}")]
    Unresolvable {
        /// The earlier CSV.
        to: String,
        /// Resolution's message.
        reason: String,
    },
    /// The older schema rejects an existing object.
    #[error("{to}'s CRD would reject an existing object: {reason}")]
    SchemaNarrowed {
        /// The earlier CSV.
        to: String,
        /// The crd_safety message.
        reason: String,
    },
}

/// A CRD version the older CRD drops while objects of the CRD exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The CRD.
    pub crd: String,
    /// Its group.
    pub group: String,
    /// The versions dropped, comma separated.
    pub versions: String,
    /// Its kind.
    pub kind: String,
    /// How many objects exist.
    pub count: usize,
    /// Some of them, `namespace/name`.
    pub examples: String,
    /// The earlier CSV.
    pub to: String,
    /// Whether a dropped version is in `status.storedVersions` (objects may be stored in it),
    /// rather than only served (objects are written through it).
    pub stored: bool,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (which, fix) = if self.stored {
            (
                "exist that may be stored in it",
                "the older operator could not read them: delete or migrate them first",
            )
        } else {
            (
                "are written through it (metadata.managedFields)",
                "whoever writes them (kubectl apply, GitOps) could not any more: write them as another \
                 version, or delete them first",
            )
        };
        write!(
            f,
            "{} does not serve {}/{} of CRD {}, and {} {} object(s) {which} ({}); {fix}",
            self.to, self.group, self.versions, self.crd, self.count, self.kind, self.examples
        )
    }
}

/// The CSV to go back to: the one before the installed CSV in the history.
///
/// # Errors
/// [`Refusal::NothingInstalled`], [`Refusal::NoEarlierCsv`].
pub fn target(sub: &Subscription) -> Result<(String, String), Refusal> {
    let name = format!(
        "{}/{}",
        sub.metadata.namespace.as_deref().unwrap_or_default(),
        sub.metadata.name.as_deref().unwrap_or_default()
    );
    let installed = sub
        .status
        .as_ref()
        .and_then(|s| s.installed_csv.clone())
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Refusal::NothingInstalled {
            subscription: name.clone(),
        })?;
    let history = super::pin::history(sub);
    let earlier = history
        .iter()
        .rposition(|h| *h == installed)
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| history.get(i))
        .filter(|e| **e != installed)
        .cloned();
    match earlier {
        Some(e) => Ok((installed, e)),
        None => Err(Refusal::NoEarlierCsv {
            subscription: name,
            installed,
            history: if history.is_empty() {
                "none".to_owned()
            } else {
                history.join(",")
            },
        }),
    }
}

/// The earlier bundle in the Subscription's channel of `package`.
///
/// # Errors
/// [`Refusal::NotInCatalog`], [`Refusal::Prohibited`].
pub fn earlier_bundle<'m>(
    package: Option<&'m Package>,
    package_name: &str,
    channel: &str,
    catalog: &str,
    bundle: &str,
) -> Result<&'m Bundle, Refusal> {
    let missing = || Refusal::NotInCatalog {
        bundle: bundle.to_owned(),
        channel: channel.to_owned(),
        package: package_name.to_owned(),
        catalog: catalog.to_owned(),
    };
    let package = package.ok_or_else(missing)?;
    let in_channel = package
        .channel(channel)
        .is_some_and(|c| c.entry(bundle).is_some());
    let found = package
        .bundle(bundle)
        .filter(|_| in_channel)
        .ok_or_else(missing)?;
    if found.is_legacy_deprecated() {
        return Err(Refusal::Prohibited {
            bundle: bundle.to_owned(),
        });
    }
    Ok(found)
}

/// Checks that `bundle` is older than the installed CSV (`installed`, at `installed_version`).
///
/// # Errors
/// [`Refusal::NotOlder`].
pub fn older_than_installed(
    bundle: &Bundle,
    installed: &str,
    installed_version: Option<&Version>,
) -> Result<(), Refusal> {
    match installed_version {
        Some(v) if crate::version_range::compare(&bundle.version, v) != std::cmp::Ordering::Less => {
            Err(Refusal::NotOlder {
                installed: installed.to_owned(),
                installed_version: v.to_string(),
                bundle: bundle.name.clone(),
                version: bundle.version.to_string(),
            })
        }
        _ => Ok(()),
    }
}

/// The CRDs a bundle ships (its inlined objects of kind `CustomResourceDefinition`).
pub fn bundle_crds(bundle: &Bundle) -> Vec<CustomResourceDefinition> {
    bundle
        .objects()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .filter_map(|o| serde_json::from_value(o).ok())
        .collect()
}

/// The versions `live` serves that `older` does not.
pub fn dropped_versions(live: &CustomResourceDefinition, older: &CustomResourceDefinition) -> Vec<String> {
    live.spec
        .versions
        .iter()
        .filter(|v| v.served)
        .filter(|v| !older.spec.versions.iter().any(|o| o.name == v.name && o.served))
        .map(|v| v.name.clone())
        .collect()
}

/// The versions whose objects [`crd_rollback`] needs: the storage version when a version is
/// dropped (any listing shows every object), and each version whose schema the older CRD
/// changes.
pub fn versions_to_read(live: &CustomResourceDefinition, older: &CustomResourceDefinition) -> Vec<String> {
    let mut versions: Vec<String> = live
        .spec
        .versions
        .iter()
        .find(|v| v.storage)
        .map(|v| v.name.clone())
        .filter(|_| !dropped_versions(live, older).is_empty())
        .into_iter()
        .collect();
    versions.extend(
        crd_safety::versions_to_validate(live, older)
            .into_iter()
            .map(|(v, _)| v),
    );
    versions.dedup();
    versions
}

/// Whether `live` can be replaced by `older` given the objects that exist (`objects`, read in
/// each version [`versions_to_read`] asked for): `Ok(Some(stored))` when the CRD's
/// `status.storedVersions` must become `stored` first (a dropped version, no object left),
/// `Ok(None)` when nothing needs doing.
///
/// # Errors
/// [`Refusal::VersionDropped`], [`Refusal::SchemaNarrowed`].
pub fn crd_rollback(
    live: &CustomResourceDefinition,
    older: &CustomResourceDefinition,
    objects: &BTreeMap<String, Vec<Value>>,
    to: &str,
) -> Result<Option<Vec<String>>, Refusal> {
    let dropped = dropped_versions(live, older);
    let stored = live
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default();
    let stored_dropped: Vec<String> = dropped.iter().filter(|v| stored.contains(v)).cloned().collect();
    let served_dropped: Vec<String> = dropped.iter().filter(|v| !stored.contains(v)).cloned().collect();
    let mut trim = None;
    // Written through a version only served: the API version its managers used.
    let written_through = |o: &Value| {
        o["metadata"]["managedFields"].as_array().is_some_and(|fields| {
            fields.iter().any(|f| {
                served_dropped
                    .iter()
                    .any(|v| f["apiVersion"] == format!("{}/{v}", live.spec.group))
            })
        })
    };
    for (versions, is_stored) in [(&stored_dropped, true), (&served_dropped, false)] {
        if versions.is_empty() {
            continue;
        }
        let existing: Vec<&Value> = objects
            .values()
            .flatten()
            .filter(|o| is_stored || written_through(o))
            .collect();
        let mut names: Vec<String> = existing
            .iter()
            .map(|o| {
                let name = o["metadata"]["name"].as_str().unwrap_or_default();
                match o["metadata"]["namespace"].as_str() {
                    Some(ns) => format!("{ns}/{name}"),
                    None => name.to_owned(),
                }
            })
            .collect();
        names.sort();
        names.dedup();
        if !names.is_empty() {
            let mut examples: Vec<String> = names.iter().take(3).cloned().collect();
            if names.len() > 3 {
                examples.push("...".to_owned());
            }
            return Err(Refusal::VersionDropped(Box::new(Dropped {
                crd: live.metadata.name.clone().unwrap_or_default(),
                group: live.spec.group.clone(),
                versions: versions.join(","),
                kind: live.spec.names.kind.clone(),
                count: names.len(),
                examples: examples.join(", "),
                to: to.to_owned(),
                stored: is_stored,
            })));
        }
    }
    if !stored_dropped.is_empty() {
        let mut kept: Vec<String> = stored
            .into_iter()
            .filter(|v| !stored_dropped.contains(v))
            .collect();
        if kept.is_empty()
            && let Some(storage) = older.spec.versions.iter().find(|v| v.storage)
        {
            kept.push(storage.name.clone());
        }
        trim = Some(kept);
    }
    for (version, schema) in crd_safety::versions_to_validate(live, older) {
        let read = objects.get(&version).map(Vec::as_slice).unwrap_or_default();
        crd_safety::existing_objects_valid(older, &version, &schema, read).map_err(|e| {
            Refusal::SchemaNarrowed {
                to: to.to_owned(),
                reason: e.to_string(),
            }
        })?;
    }
    Ok(trim)
}

/// The dependencies the Subscription made again (`next`, from [`rollback_subscription`]) brings,
/// as the controller will resolve it against `catalogs` (every catalog the namespace sees) once
/// the rollback has deleted the installed CSV `from` and the earlier CSV `to` if it is left.
///
/// # Errors
/// [`Refusal::Unresolvable`] when resolution fails or picks another bundle than `to`.
pub fn resolve_again(
    next: &Subscription,
    catalogs: &Catalogs<'_>,
    installed: &Installed,
    from: &str,
    to: &str,
) -> Result<Vec<Dependency>, Refusal> {
    let mut request = Request::from_subscription(next);
    request.installed_csv = None;
    request.version_ceiling = super::pin::pins(next).ok().and_then(|p| p.ceiling);
    let mut after = installed.clone();
    after.csvs.retain(|c| c.name != from && c.name != to);
    after.subscriptions.retain(|s| s.name != request.name);
    let unresolvable = |reason: String| Refusal::Unresolvable {
        to: to.to_owned(),
        reason,
    };
    let resolution = resolve::resolve(&request, catalogs, &after).map_err(|e| unresolvable(e.to_string()))?;
    match resolution.install() {
        Some(s) if s.bundle == to => Ok(resolution.dependencies),
        Some(s) => Err(unresolvable(format!("resolution picks {} instead", s.bundle))),
        None => Err(unresolvable("resolution installs nothing".to_owned())),
    }
}

/// The change a preview step shows when the rollback deletes the object and the plan creates it
/// again ([`reinstalled_by`]).
pub const REINSTALLED: &str = "reinstalled";

/// The CSV the rollback deletes that takes the live object of a plan step with it, if any:
/// the CSV itself (a step of kind `ClusterServiceVersion` named like one), an object whose every
/// owner reference is one of them (garbage collected), or one labelled `olm.owner` with one of
/// them in `namespace` (deleted by the CSV's finalizer). `deleted` holds the name and uid of
/// each CSV the rollback deletes; `live` is the object on the cluster.
pub fn reinstalled_by<'d>(
    kind: &str,
    name: &str,
    live: &Value,
    namespace: &str,
    deleted: &'d [(String, String)],
) -> Option<&'d str> {
    use crate::api::labels::{OWNER, OWNER_NAMESPACE};
    let by_name = |csv: &str| deleted.iter().find(|(n, _)| n == csv).map(|(n, _)| n.as_str());
    if kind == crate::plan::steps::CSV_KIND {
        return by_name(name);
    }
    let meta = live.get("metadata");
    let owners: Vec<&str> = meta
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
        .collect();
    let owned = owners
        .iter()
        .map(|uid| deleted.iter().find(|(_, u)| !u.is_empty() && u == uid))
        .collect::<Option<Vec<_>>>()
        .and_then(|all| all.first().map(|(n, _)| n.as_str()));
    if owned.is_some() {
        return owned;
    }
    let label = |key: &str| {
        meta.and_then(|m| m.get("labels"))
            .and_then(|l| l.get(key))
            .and_then(Value::as_str)
    };
    match (label(OWNER), label(OWNER_NAMESPACE)) {
        (Some(owner), Some(ns)) if ns == namespace => by_name(owner),
        _ => None,
    }
}

/// The Subscription that installs `earlier` (version `version`) in place of `sub`: the same
/// spec with `startingCSV: earlier`, the same labels and annotations plus a version ceiling at
/// `version` (so it stays there), and no status.
pub fn rollback_subscription(sub: &Subscription, earlier: &str, version: &Version) -> Subscription {
    let mut spec = sub.spec.clone();
    spec.starting_csv = Some(earlier.to_owned());
    let mut next = Subscription::new(sub.metadata.name.as_deref().unwrap_or_default(), spec);
    next.metadata.namespace = sub.metadata.namespace.clone();
    next.metadata.labels = sub.metadata.labels.clone();
    let mut annotations = sub.metadata.annotations.clone().unwrap_or_default();
    annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    annotations.insert(super::pin::VERSION_CEILING.to_owned(), version.to_string());
    next.metadata.annotations = Some(annotations);
    next
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crd(versions: &[(&str, bool, Value)], stored: &[&str]) -> CustomResourceDefinition {
        let versions: Vec<Value> = versions
            .iter()
            .map(|(name, storage, schema)| {
                json!({"name": name, "served": true, "storage": storage,
                       "schema": {"openAPIV3Schema": schema}})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "redisclusters.cache.example.com"},
            "spec": {"group": "cache.example.com", "scope": "Namespaced",
                     "names": {"plural": "redisclusters", "singular": "rediscluster",
                               "kind": "RedisCluster", "listKind": "RedisClusterList"},
                     "versions": versions},
            "status": {"storedVersions": stored},
        }))
        .unwrap()
    }

    fn object(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
               "metadata": {"name": name, "namespace": "redis"}, "spec": spec})
    }

    fn open() -> Value {
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    }

    #[test]
    fn what_the_deleted_csvs_take_with_them_is_reinstalled() {
        let deleted = [
            ("redis.v1.1.0".to_owned(), "uid-new".to_owned()),
            ("redis.v1.0.0".to_owned(), "uid-old".to_owned()),
        ];
        let live = |meta: Value| json!({"metadata": meta});
        let owned_by = |uids: &[&str]| {
            live(json!({"name": "x", "ownerReferences":
                uids.iter().map(|u| json!({"kind": "ClusterServiceVersion", "name": "n", "uid": u})).collect::<Vec<_>>()}))
        };
        // The CSV itself, when the upgrade left it.
        assert_eq!(
            reinstalled_by(
                "ClusterServiceVersion",
                "redis.v1.0.0",
                &live(json!({})),
                "redis",
                &deleted
            ),
            Some("redis.v1.0.0")
        );
        assert_eq!(
            reinstalled_by(
                "ClusterServiceVersion",
                "redis.v0.3.0",
                &live(json!({})),
                "redis",
                &deleted
            ),
            None
        );
        // Garbage collected: every owner is deleted.
        assert_eq!(
            reinstalled_by(
                "ServiceAccount",
                "redis",
                &owned_by(&["uid-new"]),
                "redis",
                &deleted
            ),
            Some("redis.v1.1.0")
        );
        assert_eq!(
            reinstalled_by(
                "Deployment",
                "redis",
                &owned_by(&["uid-old", "uid-new"]),
                "redis",
                &deleted
            ),
            Some("redis.v1.0.0")
        );
        // Another owner keeps it.
        assert_eq!(
            reinstalled_by(
                "ServiceAccount",
                "redis",
                &owned_by(&["uid-new", "uid-other"]),
                "redis",
                &deleted
            ),
            None
        );
        assert_eq!(
            reinstalled_by("ServiceAccount", "redis", &owned_by(&[]), "redis", &deleted),
            None
        );
        // Cluster-wide, by label: the CSV's finalizer deletes it, in its own namespace only.
        let labelled = |ns: &str| {
            live(json!({"name": "r", "labels": {"olm.owner": "redis.v1.1.0", "olm.owner.namespace": ns}}))
        };
        assert_eq!(
            reinstalled_by("ClusterRole", "r", &labelled("redis"), "redis", &deleted),
            Some("redis.v1.1.0")
        );
        assert_eq!(
            reinstalled_by("ClusterRole", "r", &labelled("other"), "redis", &deleted),
            None
        );
        // A CRD is no CSV's: it stays.
        assert_eq!(
            reinstalled_by(
                "CustomResourceDefinition",
                "redisclusters.cache.example.com",
                &live(json!({})),
                "redis",
                &deleted
            ),
            None
        );
    }

    #[test]
    fn a_dropped_version_is_refused_while_objects_exist_and_trimmed_once_they_are_gone() {
        let live = crd(
            &[("v1alpha1", false, open()), ("v1", true, open())],
            &["v1alpha1", "v1"],
        );
        let older = crd(&[("v1alpha1", true, open())], &["v1alpha1"]);
        assert_eq!(dropped_versions(&live, &older), ["v1"]);
        assert_eq!(versions_to_read(&live, &older), ["v1"]);
        let one = BTreeMap::from([("v1".to_owned(), vec![object("cache", json!({}))])]);
        let err = crd_rollback(&live, &older, &one, "redis-operator.v1.0.0").unwrap_err();
        assert_eq!(
            err.to_string(),
            "redis-operator.v1.0.0 does not serve cache.example.com/v1 of CRD \
             redisclusters.cache.example.com, and 1 RedisCluster object(s) exist that may be stored \
             in it (redis/cache); the older operator could not read them: delete or migrate them first"
        );
        let none = BTreeMap::from([("v1".to_owned(), Vec::new())]);
        assert_eq!(
            crd_rollback(&live, &older, &none, "redis-operator.v1.0.0"),
            Ok(Some(vec!["v1alpha1".to_owned()]))
        );
    }

    #[test]
    fn a_version_only_served_is_refused_while_objects_are_written_through_it() {
        // 1.1.0 of the Redis operator adds v1alpha1 (served, deprecated); v1 stays the storage.
        let live = crd(&[("v1alpha1", false, open()), ("v1", true, open())], &["v1"]);
        let older = crd(&[("v1", true, open())], &["v1"]);
        let mut through = object("old-style", json!({}));
        through["metadata"]["managedFields"] =
            json!([{"manager": "kubectl", "operation": "Apply", "apiVersion": "cache.example.com/v1alpha1"}]);
        let mut plain = object("new-style", json!({}));
        plain["metadata"]["managedFields"] =
            json!([{"manager": "kubectl", "operation": "Apply", "apiVersion": "cache.example.com/v1"}]);
        let objects = BTreeMap::from([("v1".to_owned(), vec![through, plain.clone()])]);
        let err = crd_rollback(&live, &older, &objects, "redis-operator.v1.0.0")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "redis-operator.v1.0.0 does not serve cache.example.com/v1alpha1 of CRD \
             redisclusters.cache.example.com, and 1 RedisCluster object(s) are written through it \
             (metadata.managedFields) (redis/old-style); whoever writes them (kubectl apply, GitOps) \
             could not any more: write them as another version, or delete them first"
        );
        // Only v1 writers left: nothing to trim, nothing refused.
        let objects = BTreeMap::from([("v1".to_owned(), vec![plain])]);
        assert_eq!(
            crd_rollback(&live, &older, &objects, "redis-operator.v1.0.0"),
            Ok(None)
        );
    }

    #[test]
    fn a_narrower_older_schema_is_refused_naming_the_object() {
        let wide = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"size": {"type": "integer"}}}}});
        let narrow = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"size": {"type": "integer", "maximum": 3}}}}});
        let live = crd(&[("v1", true, wide)], &["v1"]);
        let older = crd(&[("v1", true, narrow)], &["v1"]);
        assert_eq!(versions_to_read(&live, &older), ["v1"]);
        let objects = BTreeMap::from([("v1".to_owned(), vec![object("big", json!({"size": 5}))])]);
        let err = crd_rollback(&live, &older, &objects, "a.v1")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("a.v1's CRD would reject an existing object:"),
            "{err}"
        );
        assert!(err.contains("redis/big"), "{err}");
        let fits = BTreeMap::from([("v1".to_owned(), vec![object("small", json!({"size": 2}))])]);
        assert_eq!(crd_rollback(&live, &older, &fits, "a.v1"), Ok(None));
    }

    fn sub(history: Option<&str>, installed: Option<&str>) -> Subscription {
        let mut s: Subscription = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "redis", "namespace": "ns", "uid": "u",
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"name": "redis-operator", "source": "c", "sourceNamespace": "olm",
                     "channel": "stable", "installPlanApproval": "Manual"},
        }))
        .unwrap();
        if let Some(h) = history {
            s.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(super::super::pin::INSTALLED_CSVS.into(), h.into());
        }
        s.status = installed.map(|i| {
            serde_json::from_value(json!({"installedCSV": i, "lastUpdated": "2026-01-01T00:00:00Z"})).unwrap()
        });
        s
    }

    #[test]
    fn the_target_is_the_csv_before_the_installed_one() {
        let s = sub(Some("r.v1,r.v2"), Some("r.v2"));
        assert_eq!(target(&s), Ok(("r.v2".to_owned(), "r.v1".to_owned())));
        let err = target(&sub(Some("r.v2"), Some("r.v2"))).unwrap_err().to_string();
        assert!(
            err.starts_with("subscription ns/redis has no CSV recorded before r.v2 (annotation olm-rs.io/installed-csvs: r.v2)"),
            "{err}"
        );
        assert!(matches!(
            target(&sub(None, None)),
            Err(Refusal::NothingInstalled { .. })
        ));
    }

    #[test]
    fn a_rollback_never_goes_forward() {
        let doc = |name: &str, version: &str| {
            json!({"schema": "olm.bundle", "package": "r", "name": name, "image": "",
                   "properties": [{"type": "olm.package", "value": {"packageName": "r", "version": version}}]})
        };
        let mut cfg = crate::catalog::DeclarativeConfig::default();
        for (i, d) in [
            json!({"schema": "olm.package", "name": "r", "defaultChannel": "s"}),
            json!({"schema": "olm.channel", "package": "r", "name": "s",
                   "entries": [{"name": "r.v1"}, {"name": "r.v2", "replaces": "r.v1"}]}),
            doc("r.v1", "1.0.0"),
            doc("r.v2", "2.0.0"),
        ]
        .into_iter()
        .enumerate()
        {
            cfg.add_value(crate::catalog::declcfg::Origin::new("c.json", i), d)
                .unwrap();
        }
        let model = crate::catalog::Model::from_config(cfg);
        let package = model.package("r");
        let v1 = earlier_bundle(package, "r", "s", "olm/c", "r.v1").unwrap();
        let v2 = earlier_bundle(package, "r", "s", "olm/c", "r.v2").unwrap();
        assert_eq!(
            older_than_installed(v1, "r.v2", Some(&Version::new(2, 0, 0))),
            Ok(())
        );
        let err = older_than_installed(v2, "r.v1", Some(&Version::new(1, 0, 0))).unwrap_err();
        assert!(err.to_string().contains("rollback only goes back"), "{err}");
        assert!(matches!(
            earlier_bundle(package, "r", "s", "olm/c", "r.v3"),
            Err(Refusal::NotInCatalog { .. })
        ));
    }

    #[test]
    fn the_new_subscription_starts_at_the_earlier_csv_pinned_there() {
        let s = sub(Some("r.v1,r.v2"), Some("r.v2"));
        let next = rollback_subscription(&s, "r.v1", &Version::new(1, 0, 0));
        assert_eq!(next.spec.starting_csv.as_deref(), Some("r.v1"));
        assert!(next.status.is_none());
        let a = next.metadata.annotations.unwrap();
        assert_eq!(
            a.get(super::super::pin::VERSION_CEILING).map(String::as_str),
            Some("1.0.0")
        );
        assert_eq!(
            a.get(super::super::pin::INSTALLED_CSVS).map(String::as_str),
            Some("r.v1,r.v2")
        );
        assert!(!a.contains_key("kubectl.kubernetes.io/last-applied-configuration"));
        assert!(next.metadata.uid.is_none());
    }
}

#[cfg(test)]
mod resolve_again_tests {
    use serde_json::json;

    use super::*;
    use crate::{
        catalog::{DeclarativeConfig, Model, declcfg::Origin},
        resolve::{Catalog, CatalogKey, InstalledCsv},
    };

    fn model(docs: Vec<Value>) -> Model {
        let mut cfg = DeclarativeConfig::default();
        for (i, doc) in docs.into_iter().enumerate() {
            cfg.add_value(Origin::new("c.json", i), doc).unwrap();
        }
        Model::from_config(cfg)
    }

    fn bundle(package: &str, name: &str, version: &str, extra: Vec<Value>) -> Value {
        let mut properties =
            vec![json!({"type": "olm.package", "value": {"packageName": package, "version": version}})];
        properties.extend(extra);
        json!({"schema": "olm.bundle", "package": package, "name": name,
               "image": format!("quay.io/{package}:{version}"), "properties": properties})
    }

    /// Package `a`: a.v1 (requires package `b`) ← a.v2.
    fn own() -> Model {
        model(vec![
            json!({"schema": "olm.package", "name": "a", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "a", "name": "stable", "entries": [
                {"name": "a.v1"}, {"name": "a.v2", "replaces": "a.v1"}]}),
            bundle(
                "a",
                "a.v1",
                "1.0.0",
                vec![
                    json!({"type": "olm.package.required", "value": {"packageName": "b", "versionRange": ">=1.0.0"}}),
                ],
            ),
            bundle("a", "a.v2", "2.0.0", vec![]),
        ])
    }

    /// Package `b`: b.v1.
    fn other() -> Model {
        model(vec![
            json!({"schema": "olm.package", "name": "b", "defaultChannel": "stable"}),
            json!({"schema": "olm.channel", "package": "b", "name": "stable", "entries": [{"name": "b.v1"}]}),
            bundle("b", "b.v1", "1.0.0", vec![]),
        ])
    }

    fn subscription() -> Subscription {
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "a", "namespace": "ops",
                         "annotations": {"olm-rs.io/installed-csvs": "a.v1,a.v2"}},
            "spec": {"source": "own", "sourceNamespace": "ops", "name": "a", "channel": "stable"},
            "status": {"installedCSV": "a.v2", "currentCSV": "a.v2", "state": "AtLatestKnown",
                       "lastUpdated": "2026-01-01T00:00:00Z"},
        }))
        .unwrap()
    }

    fn installed() -> Installed {
        let csv = |name: &str, version: u64| InstalledCsv {
            name: name.into(),
            version: Some(Version::new(version, 0, 0)),
            package: Some("a".into()),
            provided_gvks: Vec::new(),
            phase: crate::api::v1alpha1::CsvPhase::Succeeded,
        };
        Installed {
            csvs: vec![csv("a.v2", 2), csv("a.v1", 1)],
            subscriptions: vec![crate::resolve::ExistingSubscription::from_subscription(
                &subscription(),
            )],
        }
    }

    #[test]
    fn the_earlier_bundle_brings_its_dependency_from_another_catalog_or_the_rollback_is_refused() {
        let (own, other) = (own(), other());
        let next = rollback_subscription(&subscription(), "a.v1", &Version::new(1, 0, 0));
        fn catalog<'m>(ns: &str, name: &str, model: &'m Model) -> Catalog<'m> {
            Catalog {
                key: CatalogKey::new(ns, name),
                priority: 0,
                model: Some(model),
                problem: None,
            }
        }
        let both = Catalogs {
            global_namespace: "olm".into(),
            catalogs: vec![catalog("ops", "own", &own), catalog("olm", "other", &other)],
        };
        let deps = resolve_again(&next, &both, &installed(), "a.v2", "a.v1").unwrap();
        assert_eq!(deps.len(), 1, "{deps:?}");
        assert_eq!(deps[0].bundle.bundle, "b.v1");
        assert_eq!(deps[0].bundle.catalog, CatalogKey::new("olm", "other"));

        // The other catalog not read: resolution names it, and the rollback is refused.
        let unread = Catalogs {
            global_namespace: "olm".into(),
            catalogs: vec![
                catalog("ops", "own", &own),
                Catalog {
                    key: CatalogKey::new("olm", "other"),
                    priority: 0,
                    model: None,
                    problem: Some("you may not get configmap other".into()),
                },
            ],
        };
        let err = resolve_again(&next, &unread, &installed(), "a.v2", "a.v1").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("the Subscription made again at a.v1 would not install it: "),
            "{text}"
        );
        assert!(
            text.contains("olm/other (unreadable: you may not get configmap other)"),
            "{text}"
        );
    }
}
