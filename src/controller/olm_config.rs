//! OLMConfig, the shell: creates the singleton `cluster` at startup when it is missing (as
//! upstream's olm operator does), tells the copy pipeline whether copied CSVs are disabled
//! ([`copies_disabled`]), sends the CSVs of AllNamespaces groups back through the CSV
//! controller when the switch flips ([`SwitchChanges`], [`csvs_of_all_namespaces_groups`])
//! and those whose copies a reconcile finds out of line ([`csv_requeues`]), and keeps the
//! OLMConfig status that [`crate::plan::olm_config::decide`] computes.
//!
//! The OLMConfig CRD is optional (an install that predates it): its watch is supervised but
//! never a readiness gate, and without it copies are on unless `--disable-copied-csvs` says
//! otherwise. Efficiency: the store answers [`copies_disabled`]; a GET only while the store
//! does not hold `cluster` (not synced yet, or no such object). A reconcile reads groups and
//! CSVs from the stores and lists namespaces and copies (metadata) only when an AllNamespaces
//! group has a copiable CSV; it runs on changes of the OLMConfig and of copies, every 5 s while
//! copies are out of line, and every 5 min otherwise.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Duration,
};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DynamicObject, ListParams, ObjectMeta, PostParams},
    runtime::{controller::Action, reflector::ObjectRef},
};

use super::wiring::{self, Wiring};
use super::{Context, Error, Result};
use crate::{
    api::{
        labels,
        v1::{OLM_CONFIG_NAME, OLMConfig, OperatorGroup},
        v1alpha1::ClusterServiceVersion,
    },
    k8s::apply,
    plan::{
        copied_csv::{is_copy, is_uncopiable},
        olm_config::{self as plan, Observed, Original},
    },
};

/// How soon a reconcile looks again while copies are out of line (upstream requeues its
/// OLMConfig 5 s after each copy sync).
pub const OUT_OF_LINE_RECHECK: Duration = Duration::from_secs(5);
/// How often a settled OLMConfig is looked at again.
pub const RESYNC: Duration = Duration::from_secs(300);

/// Creates the OLMConfig `cluster` (empty spec) when it does not exist. A cluster without the
/// CRD is logged and left alone.
pub async fn ensure_exists(client: Client) {
    let api: Api<OLMConfig> = Api::all(client);
    match api.get_opt(OLM_CONFIG_NAME).await {
        Ok(Some(_)) => return,
        Ok(None) => {}
        Err(err) => {
            tracing::warn!(error = %err, "could not read OLMConfig {OLM_CONFIG_NAME}");
            return;
        }
    }
    let config = OLMConfig {
        metadata: ObjectMeta {
            name: Some(OLM_CONFIG_NAME.to_owned()),
            ..ObjectMeta::default()
        },
        ..OLMConfig::default()
    };
    match api.create(&PostParams::default(), &config).await {
        Ok(_) => tracing::info!("created OLMConfig {OLM_CONFIG_NAME}"),
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {
            tracing::info!(
                "the OLMConfig CRD is not installed: copied CSVs follow --disable-copied-csvs alone"
            );
        }
        Err(err) => tracing::warn!(error = %err, "could not create OLMConfig {OLM_CONFIG_NAME}"),
    }
}

/// True when copied CSVs are disabled: `--disable-copied-csvs`, or the OLMConfig `cluster`
/// (from the store; read from the API while the store does not hold it).
///
/// # Errors
/// [`Error::Observe`] when the OLMConfig could not be read (other than not found).
pub async fn copies_disabled(ctx: &Context) -> Result<bool> {
    let flag = ctx.shared.config.disable_copied_csvs;
    if flag {
        return Ok(true);
    }
    if let Some(config) = ctx
        .shared
        .stores
        .olm_configs
        .get(&ObjectRef::new(OLM_CONFIG_NAME))
    {
        return Ok(plan::copies_disabled(flag, Some(&config)));
    }
    // A synced store that lacks it: there is none (an object it cannot decode would have kept
    // the store from syncing).
    if ctx
        .shared
        .stores
        .olm_configs_synced
        .load(std::sync::atomic::Ordering::Acquire)
    {
        return Ok(plan::copies_disabled(flag, None));
    }
    // Read untyped: an object stored under upstream's CRD may lack `spec`.
    let api: Api<DynamicObject> = Api::all_with(ctx.client(), &ApiResource::erase::<OLMConfig>(&()));
    let config = match api.get_opt(OLM_CONFIG_NAME).await {
        Ok(config) => config,
        // No CRD: the group/version is unknown to the server.
        Err(kube::Error::Api(s)) if s.code == 404 => None,
        Err(source) => return Err(Error::observe(format!("OLMConfig {OLM_CONFIG_NAME}"))(source)),
    };
    Ok(flag
        || config.is_some_and(|c| c.data.pointer("/spec/features/disableCopiedCSVs") == Some(&true.into())))
}

/// Remembers the copied-CSV switch of the OLMConfig `cluster` as the reflector passes it on,
/// and says when it flipped (then the CSVs of AllNamespaces groups are reconciled again).
#[derive(Debug, Default)]
pub struct SwitchChanges {
    last: Option<bool>,
}

impl SwitchChanges {
    /// True when `config` is `cluster` and its switch differs from the last one seen (the
    /// first one seen counts as a change only when it disables copies).
    pub fn changed(&mut self, config: &OLMConfig) -> bool {
        if config.name_any() != OLM_CONFIG_NAME {
            return false;
        }
        let disabled = config.copied_csvs_disabled();
        let flipped = self.last.map_or(disabled, |last| last != disabled);
        self.last = Some(disabled);
        flipped
    }
}

/// True when `group` targets all namespaces (`status.namespaces == [""]`).
fn all_namespaces(group: &OperatorGroup) -> bool {
    group
        .status
        .as_ref()
        .and_then(|s| s.namespaces.as_deref())
        .is_some_and(|n| n.len() == 1 && n[0].is_empty())
}

/// The original CSVs in the namespaces of AllNamespaces OperatorGroups.
fn originals_of_all_namespaces_groups<'a>(
    csvs: &'a [Arc<ClusterServiceVersion>],
    groups: &[Arc<OperatorGroup>],
) -> impl Iterator<Item = &'a Arc<ClusterServiceVersion>> {
    let namespaces: BTreeSet<String> = groups
        .iter()
        .filter(|g| all_namespaces(g))
        .filter_map(|g| g.namespace())
        .collect();
    csvs.iter()
        .filter(move |c| c.namespace().is_some_and(|ns| namespaces.contains(&ns)) && !is_copy(c))
}

/// References to the original CSVs in the namespaces of AllNamespaces OperatorGroups.
pub fn csvs_of_all_namespaces_groups(
    csvs: &[Arc<ClusterServiceVersion>],
    groups: &[Arc<OperatorGroup>],
) -> Vec<ObjectRef<ClusterServiceVersion>> {
    originals_of_all_namespaces_groups(csvs, groups)
        .map(|c| ObjectRef::from_obj(c.as_ref()))
        .collect()
}

/// Reconciles the OLMConfig `cluster`: its status conditions.
///
/// # Errors
/// Listing namespaces or copies, or writing the status, failed.
pub async fn reconcile(config: Arc<OLMConfig>, ctx: Arc<Context>) -> Result<Action> {
    if config.name_any() != OLM_CONFIG_NAME {
        return Ok(Action::await_change());
    }
    let stores = &ctx.shared.stores;
    let groups = stores.operator_groups.state();
    let csvs = stores.csvs.state();
    let mut originals: Vec<Original> = originals_of_all_namespaces_groups(&csvs, &groups)
        .filter(|c| !is_uncopiable(c))
        .map(|c| Original {
            namespace: c.namespace().unwrap_or_default(),
            name: c.name_any(),
            copies: BTreeSet::new(),
        })
        .collect();
    let mut active = BTreeSet::new();
    if !originals.is_empty() {
        active = super::operator_group::list_namespaces(&ctx)
            .await?
            .iter()
            .filter(|n| n.metadata.deletion_timestamp.is_none())
            .map(ResourceExt::name_any)
            .collect();
        let all: Api<ClusterServiceVersion> = Api::all(ctx.client());
        let copies = all
            .list_metadata(&ListParams::default().labels(labels::COPIED_FROM))
            .await
            .map_err(Error::observe("copied CSVs"))?;
        let mut by_original: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for copy in &copies.items {
            let from = copy
                .labels()
                .get(labels::COPIED_FROM)
                .cloned()
                .unwrap_or_default();
            by_original
                .entry((from, copy.name_any()))
                .or_default()
                .extend(copy.namespace());
        }
        for original in &mut originals {
            if let Some(found) = by_original.remove(&(original.namespace.clone(), original.name.clone())) {
                original.copies = found;
            }
        }
    }
    let now = Time(Timestamp::now());
    let decision = plan::decide(
        &Observed {
            config: &config,
            flag: ctx.shared.config.disable_copied_csvs,
            active_namespaces: &active,
            originals: &originals,
        },
        &now,
    );
    if decision.changed {
        let api: Api<OLMConfig> = Api::all(ctx.client());
        apply::apply_status(&api, OLM_CONFIG_NAME, &decision.status, &ctx.manager)
            .await
            .map_err(Error::status(format!("OLMConfig {OLM_CONFIG_NAME}")))?;
    }
    if decision.out_of_line.is_empty() {
        Ok(Action::requeue(RESYNC))
    } else {
        tracing::debug!(csvs = ?decision.out_of_line, "copied CSVs out of line");
        // To the CSV controller (the shared context's channel; upstream's `syncOLMConfig`
        // requeues them).
        for key in &decision.out_of_line {
            if let Some((ns, name)) = key.split_once('/') {
                // The CSV controller stopped: nothing left to tell.
                let _ = ctx
                    .shared
                    .csv_requeue
                    .unbounded_send(ObjectRef::new(name).within(ns));
            }
        }
        Ok(Action::requeue(OUT_OF_LINE_RECHECK))
    }
}

/// The OLMConfig controller: the `cluster` object's status follows the copied CSVs (debounced
/// by 1 s: a namespace's copies come in bursts).
pub(super) fn controller<S>(
    w: &Wiring<'_>,
    configs: S,
    store: kube::runtime::reflector::Store<OLMConfig>,
) -> impl std::future::Future<Output = ()> + Send + use<S>
where
    S: futures::Stream<Item = std::result::Result<OLMConfig, kube::runtime::watcher::Error>> + Send + 'static,
{
    let controller = kube::runtime::Controller::for_stream(configs, store)
        .with_config(wiring::settings().debounce(std::time::Duration::from_secs(1)))
        .watches_stream(
            w.metadata::<ClusterServiceVersion>(Wiring::watch().labels(crate::api::labels::COPIED_FROM)),
            |_| {
                Some(kube::runtime::reflector::ObjectRef::new(
                    crate::api::v1::OLM_CONFIG_NAME,
                ))
            },
        );
    wiring::run(controller, reconcile, w.context("olmconfig"), "olmconfig")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::v1::{Features, OLMConfigSpec, OperatorGroupStatus};

    fn config(name: &str, disabled: Option<bool>) -> OLMConfig {
        OLMConfig {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: OLMConfigSpec {
                features: Some(Features {
                    disable_copied_csvs: disabled,
                    package_server_sync_interval: None,
                }),
            },
            status: None,
        }
    }

    #[test]
    fn the_switch_changes_only_when_clusters_flag_flips() {
        let mut changes = SwitchChanges::default();
        assert!(
            !changes.changed(&config("cluster", None)),
            "first sight, copies on"
        );
        assert!(!changes.changed(&config("cluster", Some(false))));
        assert!(changes.changed(&config("cluster", Some(true))));
        assert!(!changes.changed(&config("cluster", Some(true))));
        assert!(!changes.changed(&config("other", Some(false))));
        assert!(changes.changed(&config("cluster", None)));
        let mut fresh = SwitchChanges::default();
        assert!(
            fresh.changed(&config("cluster", Some(true))),
            "first sight, copies off"
        );
    }

    fn group(ns: &str, targets: &[&str]) -> Arc<OperatorGroup> {
        let mut og = OperatorGroup::new("og", Default::default());
        og.metadata.namespace = Some(ns.into());
        og.status = Some(OperatorGroupStatus {
            namespaces: Some(targets.iter().map(|t| (*t).to_owned()).collect()),
            service_account_ref: None,
            last_updated: Time(Timestamp::UNIX_EPOCH),
            conditions: vec![],
        });
        Arc::new(og)
    }

    fn csv(ns: &str, name: &str, copied_from: Option<&str>) -> Arc<ClusterServiceVersion> {
        let labels = copied_from
            .map(|from| serde_json::json!({ labels::COPIED_FROM: from }))
            .unwrap_or_else(|| serde_json::json!({}));
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "ClusterServiceVersion",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {"displayName": "X", "version": "1.0.0", "install": {"strategy": "deployment"}},
            }))
            .expect("a valid CSV"),
        )
    }

    /// A reconcile on a mock API server: no AllNamespaces operator, so no list at all, and one
    /// status write (server-side apply on `/status` under `olm-rs/olmconfig`) with upstream's
    /// enabled condition and the ignored interval.
    #[tokio::test]
    async fn a_fresh_config_gets_its_conditions_in_one_status_write_and_nothing_else() {
        use super::super::testing::{Fixture, Scenario, bodies};
        let (fixture, mut server) = Fixture::new();
        let mut cluster = config("cluster", None);
        if let Some(f) = cluster.spec.features.as_mut() {
            f.package_server_sync_interval = Some("1h".into());
        }
        let object = serde_json::to_value(&cluster).unwrap();
        let (result, received) = server
            .run(
                Scenario::StatusWritten {
                    collection: "/apis/operators.coreos.com/v1/olmconfigs".into(),
                    object,
                    manager: "olm-rs/olmconfig",
                },
                reconcile(Arc::new(cluster), fixture.context("olmconfig")),
            )
            .await;
        result.unwrap();
        let written = bodies(
            &received,
            &http::Method::PATCH,
            "/apis/operators.coreos.com/v1/olmconfigs/cluster/status",
        );
        let conditions = &written[0]["status"]["conditions"];
        assert_eq!(conditions[0]["type"], "DisabledCopiedCSVs");
        assert_eq!(conditions[0]["reason"], "CopiedCSVsEnabled");
        assert_eq!(conditions[0]["status"], "False");
        assert_eq!(conditions[1]["type"], "PackageServerSyncIntervalIgnored");
    }

    #[test]
    fn only_originals_of_all_namespaces_groups_are_sent_back() {
        let groups = [group("operators", &[""]), group("team", &["team"])];
        let csvs = [
            csv("operators", "a.v1", None),
            csv("team", "b.v1", None),
            csv("operators", "c.v1", Some("elsewhere")),
        ];
        let refs = csvs_of_all_namespaces_groups(&csvs, &groups);
        let names: Vec<String> = refs.iter().map(|r| r.name.clone()).collect();
        assert_eq!(names, ["a.v1"]);
    }
}
