//! Catalog images pulled off the reconcile path (imperative shell).
//!
//! The rules: a reconcile never waits on a registry. It asks [`ImagePuller::start`] for a pull and
//! reads what the last pulls produced ([`ImagePuller::view`]); the pull itself (pull Secrets,
//! [`crate::oci`] pull into the digest cache, loading the FBC through the one catalog loader on a
//! blocking thread) runs as its own task. At most [`Config::max_concurrent_pulls`] run at once,
//! and a registry that failed is left alone for a growing while (5 s doubling up to 5 min), so a
//! broken registry is not hammered by every CatalogSource that names it. The last good catalog of
//! a CatalogSource is kept until a newer one loads: a failed re-poll never takes content away.
//!
//! [`Config::max_concurrent_pulls`]: super::Config::max_concurrent_pulls

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};

use super::lock;
use crate::{
    catalog::load::{self, LoadProblem, LoadedCatalog},
    oci,
    plan::catalog_source::ImagePlan,
};

/// (namespace, name) of a CatalogSource.
pub type Key = (String, String);

/// A catalog that was pulled and loaded.
#[derive(Clone)]
pub struct Served {
    /// The image reference pulled.
    pub image: String,
    /// The digest it resolved to.
    pub digest: String,
    /// The loaded catalog.
    pub catalog: Arc<LoadedCatalog>,
}

/// What the puller knows about one CatalogSource.
#[derive(Clone, Default)]
pub struct View {
    /// The last good catalog.
    pub served: Option<Served>,
    /// The error of the last attempt, when it failed.
    pub last_error: Option<String>,
    /// When the last attempt finished.
    pub last_attempt: Option<Instant>,
    /// The wall-clock time of that, for `status.latestImageRegistryPoll`.
    pub last_attempt_time: Option<k8s_openapi::jiff::Timestamp>,
    /// Whether a pull is running.
    pub pulling: bool,
    /// A digest change not yet reported: (old, new).
    pub changed: Option<(String, String)>,
    /// Failed attempts in a row.
    pub failures: u32,
}

struct Entry {
    image: String,
    secrets: Vec<String>,
    view: View,
}

/// Pulls catalog images for CatalogSources, in the background.
pub struct ImagePuller {
    options: oci::Options,
    permits: Arc<tokio::sync::Semaphore>,
    entries: Arc<Mutex<HashMap<Key, Entry>>>,
    backoff: Arc<Mutex<HashMap<String, (u32, Instant)>>>,
}

const BACKOFF_START: Duration = Duration::from_secs(5);
const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// The wait after `failures` failures in a row: 5 s, doubling, at most 5 min.
fn backoff_after(failures: u32) -> Duration {
    BACKOFF_START
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(BACKOFF_MAX)
}

impl ImagePuller {
    /// A puller writing to `options.cache_dir`, running at most `concurrency` pulls at once.
    #[must_use]
    pub fn new(options: oci::Options, concurrency: usize) -> Self {
        Self {
            options,
            permits: Arc::new(tokio::sync::Semaphore::new(concurrency.max(1))),
            entries: Arc::default(),
            backoff: Arc::default(),
        }
    }

    /// How registries are reached (the CA bundle and the plain-HTTP list also serve the catalogd
    /// HTTP client).
    #[must_use]
    pub fn options(&self) -> &oci::Options {
        &self.options
    }

    /// What is known for `key` under `plan`; a changed image or secret list starts afresh.
    /// Takes the pending digest change (it is reported once).
    pub fn view(&self, key: &Key, plan: &ImagePlan) -> View {
        let mut entries = lock(&self.entries);
        let entry = entries.entry(key.clone()).or_insert_with(|| Entry {
            image: plan.image.clone(),
            secrets: plan.secrets.clone(),
            view: View::default(),
        });
        if entry.image != plan.image || entry.secrets != plan.secrets {
            let pulling = entry.view.pulling;
            *entry = Entry {
                image: plan.image.clone(),
                secrets: plan.secrets.clone(),
                view: View {
                    pulling,
                    ..View::default()
                },
            };
        }
        let view = entry.view.clone();
        entry.view.changed = None;
        view
    }

    /// Forgets a deleted CatalogSource.
    pub fn forget(&self, key: &Key) {
        lock(&self.entries).remove(key);
    }

    /// How long the registry of `image` is left alone after failures (zero when it is not).
    #[must_use]
    pub fn backoff_left(&self, image: &str) -> Duration {
        let Ok(reference) = oci::ImageRef::parse(image) else {
            return Duration::ZERO;
        };
        lock(&self.backoff)
            .get(reference.registry_host())
            .map_or(Duration::ZERO, |(_, until)| {
                until.saturating_duration_since(Instant::now())
            })
    }

    /// How long before `key` may be pulled again: its registry's backoff, and its own after
    /// failed attempts (a missing tag is retried with the same growing wait, without holding up
    /// the other images of a healthy registry).
    #[must_use]
    pub fn wait_left(&self, key: &Key, image: &str) -> Duration {
        let own = lock(&self.entries).get(key).map_or(Duration::ZERO, |e| {
            match (e.view.failures, e.view.last_attempt) {
                (0, _) | (_, None) => Duration::ZERO,
                (n, Some(at)) => backoff_after(n).saturating_sub(at.elapsed()),
            }
        });
        own.max(self.backoff_left(image))
    }

    /// Starts a pull for `key` unless one is running or it must wait ([`Self::wait_left`]);
    /// returns whether one was started.
    pub fn start(&self, key: &Key, plan: &ImagePlan, client: Client) -> bool {
        if !self.wait_left(key, &plan.image).is_zero() {
            return false;
        }
        {
            let mut entries = lock(&self.entries);
            let Some(entry) = entries.get_mut(key) else {
                return false;
            };
            if entry.view.pulling {
                return false;
            }
            entry.view.pulling = true;
        }
        let (entries, backoff, permits) = (
            Arc::clone(&self.entries),
            Arc::clone(&self.backoff),
            Arc::clone(&self.permits),
        );
        let options = self.options.clone();
        let (key, plan) = (key.clone(), plan.clone());
        tokio::spawn(async move {
            let _permit = permits.acquire_owned().await;
            let result = pull(options, client, &key.0, &plan).await;
            let host = oci::ImageRef::parse(&plan.image)
                .map(|r| r.registry_host().to_owned())
                .unwrap_or_default();
            {
                let mut backoff = lock(&backoff);
                match &result {
                    Ok(_) => {
                        backoff.remove(&host);
                    }
                    Err((_, true)) if !host.is_empty() => {
                        let failures = backoff.get(&host).map_or(0, |(n, _)| *n) + 1;
                        backoff.insert(host, (failures, Instant::now() + backoff_after(failures)));
                    }
                    Err(_) => {}
                }
            }
            let mut entries = lock(&entries);
            let Some(entry) = entries.get_mut(&key) else {
                return;
            };
            entry.view.pulling = false;
            if entry.image != plan.image {
                // The spec changed while this pull ran; its result is for another image.
                return;
            }
            entry.view.last_attempt = Some(Instant::now());
            entry.view.last_attempt_time = Some(k8s_openapi::jiff::Timestamp::now());
            match result {
                Ok(served) => {
                    if let Some(old) = &entry.view.served
                        && old.digest != served.digest
                    {
                        entry.view.changed = Some((old.digest.clone(), served.digest.clone()));
                    }
                    entry.view.served = Some(served);
                    entry.view.last_error = None;
                    entry.view.failures = 0;
                }
                Err((message, _)) => {
                    tracing::warn!(catalogsource = %format!("{}/{}", key.0, key.1), image = %plan.image, %message, "catalog image pull failed");
                    entry.view.last_error = Some(message);
                    entry.view.failures += 1;
                }
            }
        });
        true
    }
}

/// Reads the pull Secrets of a CatalogSource.
async fn credentials(
    client: &Client,
    namespace: &str,
    names: &[String],
) -> Result<Vec<oci::DockerConfig>, String> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let secret = secrets
            .get_opt(name)
            .await
            .map_err(|e| format!("cannot read pull secret {namespace}/{name}: {e}"))?
            .ok_or_else(|| {
                format!(
                    "pull secret {name} not found in namespace {namespace}; create it (kubectl create secret \
                     docker-registry {name} ...) or remove it from spec.secrets"
                )
            })?;
        let data = secret.data.unwrap_or_default();
        let bytes = data
            .get(".dockerconfigjson")
            .or_else(|| data.get(".dockercfg"))
            .ok_or_else(|| {
                format!(
                    "pull secret {namespace}/{name} has no .dockerconfigjson key; use a secret of type \
                     kubernetes.io/dockerconfigjson"
                )
            })?;
        out.push(
            oci::DockerConfig::parse(&format!("pull secret {namespace}/{name}"), &bytes.0)
                .map_err(|e| e.to_string())?,
        );
    }
    Ok(out)
}

/// One pull: Secrets, image, catalog. The error says whether the registry itself failed.
async fn pull(
    options: oci::Options,
    client: Client,
    namespace: &str,
    plan: &ImagePlan,
) -> Result<Served, (String, bool)> {
    let ours = |message: String| (message, false);
    let image = oci::ImageRef::parse(&plan.image).map_err(|e| ours(e.to_string()))?;
    let credentials = credentials(&client, namespace, &plan.secrets)
        .await
        .map_err(ours)?;
    let registry = oci::Registry::new(oci::Options {
        credentials,
        ..options
    })
    .map_err(|e| ours(operator_runtime::error_chain(&e)))?;
    let pulled = registry
        .pull_catalog(&image)
        .await
        .map_err(|e| (operator_runtime::error_chain(&e), e.is_registry_fault()))?;
    let digest = pulled.digest.clone();
    let dir = pulled.dir.clone();
    let label = format!("{}@{}", pulled.image, pulled.digest);
    let loaded = tokio::task::spawn_blocking(move || -> Result<LoadedCatalog, String> {
        let loaded = crate::source::load_path(&dir).map_err(|e| operator_runtime::error_chain(&e))?;
        let problems = loaded.problems.into_iter().map(LoadProblem::from).collect();
        load::link(loaded.config, problems, &digest)
            .map_err(|refused| format!("image {label} does not hold a valid catalog: {refused}"))
    })
    .await
    .map_err(|e| ours(format!("loading the catalog failed: {e}")))?
    .map_err(ours)?;
    Ok(Served {
        image: plan.image.clone(),
        digest: pulled.digest,
        catalog: Arc::new(loaded),
    })
}
