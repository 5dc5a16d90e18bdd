//! Catalog and bundle images pulled off the reconcile path (imperative shell).
//!
//! The rules: a reconcile never waits on a registry. It asks [`ImagePuller::start`] for a pull and
//! reads what the last pulls produced ([`ImagePuller::view`]); the pull itself (pull Secrets,
//! [`crate::oci`] pull into the digest cache, then reading what was unpacked on a blocking thread)
//! runs as its own task. At most [`Config::max_concurrent_pulls`] run at once, catalogs and
//! bundles together, and a registry that failed is left alone for a growing while (5 s doubling up
//! to 5 min), so a broken registry is not hammered by every CatalogSource or InstallPlan that
//! names it. The last good content of a key is kept until a newer one loads: a failed re-poll
//! never takes content away.
//!
//! What a pull produces is a [`Pull`]: a catalog image loads to a [`Served`] catalog through the
//! one catalog loader ([`CatalogPull`]); a bundle image to the manifests of its registry+v1
//! bundle, parsed and checked by [`crate::bundle::Bundle::parse`] ([`BundlePull`]). Both pullers
//! share the pull permits and the per-registry backoff ([`ImagePuller::sibling`]).
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
pub use crate::plan::catalog_source::ImagePlan;
use crate::{
    catalog::load::{self, LoadProblem, LoadedCatalog},
    oci,
};

/// What a puller's entries are keyed by: (namespace, name) of a CatalogSource for catalogs;
/// (namespace of the catalog, image) for bundles. The namespace is where pull Secrets are read.
pub type Key = (String, String);

/// Why a pull failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullError {
    /// The message, naming the image.
    pub message: String,
    /// The registry itself failed (unreachable, a server error): its host is backed off.
    pub registry_fault: bool,
    /// The content is wrong (not a bundle, an invalid bundle, an unsafe layer): pulling again
    /// gives the same answer.
    pub fatal: bool,
}

impl PullError {
    fn ours(message: String) -> Self {
        Self {
            message,
            registry_fault: false,
            fatal: false,
        }
    }

    fn oci(error: &oci::Error) -> Self {
        use oci::Error as E;
        Self {
            message: operator_runtime::error_chain(error),
            registry_fault: error.is_registry_fault(),
            fatal: matches!(
                error,
                E::NotABundle { .. }
                    | E::NotACatalog { .. }
                    | E::Unpack { .. }
                    | E::UnsupportedLayer { .. }
                    | E::UnsupportedManifest { .. }
                    | E::BlobTooLarge { .. }
                    | E::BadDocument { .. }
                    | E::NoPlatform { .. }
                    | E::BadConfigsLabel { .. }
            ),
        }
    }

    fn fatal(message: String) -> Self {
        Self {
            message,
            registry_fault: false,
            fatal: true,
        }
    }
}

/// What one kind of image becomes once pulled.
pub trait Pull: Send + Sync + 'static {
    /// The content kept for a key.
    type Output: Clone + Send + Sync + 'static;

    /// The digest `output` was pulled at.
    fn digest(output: &Self::Output) -> &str;

    /// Pulls `image` with `registry` (into the digest cache) and reads what it holds.
    fn pull(
        registry: oci::Registry,
        image: oci::ImageRef,
        plan: ImagePlan,
    ) -> impl std::future::Future<Output = Result<Self::Output, PullError>> + Send;
}

/// Catalog images: the catalog directory loaded into a [`Served`] catalog.
pub struct CatalogPull;

/// Bundle images: the manifests of the registry+v1 bundle.
pub struct BundlePull;

/// A bundle image that was pulled and parsed.
#[derive(Clone, Debug)]
pub struct PulledBundle {
    /// The image reference pulled.
    pub image: String,
    /// The digest it resolved to.
    pub digest: String,
    /// The bundle's manifests (`manifests/`), in file order, as a bundle directory gives them.
    pub manifests: Arc<Vec<serde_json::Value>>,
}

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

/// What the puller knows about one key.
#[derive(Clone)]
pub struct View<T = Served> {
    /// The last good content.
    pub served: Option<T>,
    /// The error of the last attempt, when it failed.
    pub last_error: Option<String>,
    /// Whether that error is about the content (see [`PullError::fatal`]).
    pub last_error_fatal: bool,
    /// When the first attempt since the last success (or [`ImagePuller::restart`]) started.
    pub first_attempt: Option<Instant>,
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

impl<T> Default for View<T> {
    fn default() -> Self {
        Self {
            served: None,
            last_error: None,
            last_error_fatal: false,
            first_attempt: None,
            last_attempt: None,
            last_attempt_time: None,
            pulling: false,
            changed: None,
            failures: 0,
        }
    }
}

struct Entry<T> {
    image: String,
    secrets: Vec<String>,
    view: View<T>,
    /// The running pull's task ([`ImagePuller::cancel`]).
    task: Option<tokio::task::AbortHandle>,
}

type Entries<P> = Arc<Mutex<HashMap<Key, Entry<<P as Pull>::Output>>>>;

/// Pulls images in the background: catalog images for CatalogSources (the default), bundle
/// images for InstallPlans ([`BundlePull`]).
pub struct ImagePuller<P: Pull = CatalogPull> {
    options: oci::Options,
    permits: Arc<tokio::sync::Semaphore>,
    entries: Entries<P>,
    backoff: Arc<Mutex<HashMap<String, (u32, Instant)>>>,
    /// Announces each key whose pull finished ([`ImagePuller::finished`]).
    finished: tokio::sync::broadcast::Sender<Key>,
}

/// Finished pulls announced but not yet read; a reader this far behind skips the oldest (their
/// objects are reconciled again by their own requeue).
const FINISHED_ANNOUNCEMENTS: usize = 256;

/// The wait after failures of one image in a row: 5 s, doubling, at most 5 min (a registry is
/// asked less often than the API server, [`operator_runtime::backoff::DEFAULT`]).
const BACKOFF: operator_runtime::backoff::Policy = operator_runtime::backoff::Policy {
    first: Duration::from_secs(5),
    max: Duration::from_secs(300),
};

/// The wait after `failures` failures in a row ([`BACKOFF`]).
fn backoff_after(failures: u32) -> Duration {
    BACKOFF.delay(failures)
}

impl<P: Pull> ImagePuller<P> {
    /// A puller writing to `options.cache_dir`, running at most `concurrency` pulls at once.
    #[must_use]
    pub fn new(options: oci::Options, concurrency: usize) -> Self {
        Self {
            options,
            permits: Arc::new(tokio::sync::Semaphore::new(concurrency.max(1))),
            entries: Arc::default(),
            backoff: Arc::default(),
            finished: tokio::sync::broadcast::channel(FINISHED_ANNOUNCEMENTS).0,
        }
    }

    /// The keys whose pulls finish from now on, success or failure, as they finish: the owner
    /// of a key is reconciled at once instead of at its next requeue.
    pub fn finished(&self) -> impl futures::Stream<Item = Key> + Send + 'static {
        futures::stream::unfold(self.finished.subscribe(), |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(key) => return Some((key, rx)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
    }

    /// A puller of another kind of image sharing this one's options, pull permits and
    /// per-registry backoff.
    #[must_use]
    pub fn sibling<Q: Pull>(&self) -> ImagePuller<Q> {
        ImagePuller {
            options: self.options.clone(),
            permits: Arc::clone(&self.permits),
            entries: Arc::default(),
            backoff: Arc::clone(&self.backoff),
            finished: tokio::sync::broadcast::channel(FINISHED_ANNOUNCEMENTS).0,
        }
    }

    /// Starts the attempts for `key` afresh: its failures are forgotten and a new attempt window
    /// opens ([`View::first_attempt`]): now when a pull is still running (so a pull that outlived
    /// one window is timed in the next), else with the next pull.
    pub fn restart(&self, key: &Key) {
        if let Some(entry) = lock(&self.entries).get_mut(key) {
            entry.view.failures = 0;
            entry.view.first_attempt = entry.view.pulling.then(Instant::now);
            entry.view.last_error = None;
            entry.view.last_error_fatal = false;
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
    pub fn view(&self, key: &Key, plan: &ImagePlan) -> View<P::Output> {
        let mut entries = lock(&self.entries);
        let entry = entries.entry(key.clone()).or_insert_with(|| Entry {
            image: plan.image.clone(),
            secrets: plan.secrets.clone(),
            view: View::default(),
            task: None,
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
                task: entry.task.take(),
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

    /// Stops the pull running for `key`, if one is, as upstream's unpack Job is killed at its
    /// deadline: a pull stopped before it finished leaves no result and no announcement. Returns
    /// whether one was running. The cache is never left half-written: entries are renamed into
    /// place whole ([`crate::oci::cache`]).
    pub fn cancel(&self, key: &Key) -> bool {
        let mut entries = lock(&self.entries);
        let Some(entry) = entries.get_mut(key) else {
            return false;
        };
        let task = entry.task.take();
        let was_pulling = std::mem::replace(&mut entry.view.pulling, false);
        if let Some(task) = task {
            task.abort();
        }
        was_pulling
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
            entry.view.first_attempt.get_or_insert_with(Instant::now);
        }
        let (entries, backoff, permits, finished) = (
            Arc::clone(&self.entries),
            Arc::clone(&self.backoff),
            Arc::clone(&self.permits),
            self.finished.clone(),
        );
        let options = self.options.clone();
        let (key, plan) = (key.clone(), plan.clone());
        let task_key = key.clone();
        let task = tokio::spawn(async move {
            let _permit = permits.acquire_owned().await;
            let result = pull::<P>(options, client, &key.0, &plan).await;
            let host = oci::ImageRef::parse(&plan.image)
                .map(|r| r.registry_host().to_owned())
                .unwrap_or_default();
            {
                let mut backoff = lock(&backoff);
                match &result {
                    Ok(_) => {
                        backoff.remove(&host);
                    }
                    Err(PullError {
                        registry_fault: true, ..
                    }) if !host.is_empty() => {
                        let failures = backoff.get(&host).map_or(0, |(n, _)| *n) + 1;
                        backoff.insert(host, (failures, Instant::now() + backoff_after(failures)));
                    }
                    Err(_) => {}
                }
            }
            record::<P>(&entries, &key, &plan, result);
            // No reader (none subscribed yet): the owner's own requeue finds the result.
            let _ = finished.send(key);
        });
        // Kept for `cancel` while the entry still waits for this pull (it may be over already:
        // aborting a finished task does nothing).
        if let Some(entry) = lock(&self.entries).get_mut(&task_key)
            && entry.view.pulling
        {
            entry.task = Some(task.abort_handle());
        }
        true
    }
}

/// Records the result of a pull of `plan` for `key` in its entry.
fn record<P: Pull>(entries: &Entries<P>, key: &Key, plan: &ImagePlan, result: Result<P::Output, PullError>) {
    let mut entries = lock(entries);
    let Some(entry) = entries.get_mut(key) else {
        return;
    };
    entry.view.pulling = false;
    entry.task = None;
    if entry.image != plan.image {
        // The spec changed while this pull ran; its result is for another image.
        return;
    }
    entry.view.last_attempt = Some(Instant::now());
    entry.view.last_attempt_time = Some(k8s_openapi::jiff::Timestamp::now());
    match result {
        Ok(served) => {
            if let Some(old) = &entry.view.served
                && P::digest(old) != P::digest(&served)
            {
                entry.view.changed = Some((P::digest(old).to_owned(), P::digest(&served).to_owned()));
            }
            entry.view.served = Some(served);
            entry.view.last_error = None;
            entry.view.last_error_fatal = false;
            entry.view.first_attempt = None;
            entry.view.failures = 0;
        }
        Err(error) => {
            tracing::warn!(key = %format!("{}/{}", key.0, key.1), image = %plan.image, message = %error.message, "image pull failed");
            entry.view.last_error = Some(error.message);
            entry.view.last_error_fatal = error.fatal;
            entry.view.failures += 1;
        }
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

/// One pull: Secrets, then the image, read by `P`.
async fn pull<P: Pull>(
    options: oci::Options,
    client: Client,
    namespace: &str,
    plan: &ImagePlan,
) -> Result<P::Output, PullError> {
    let image = oci::ImageRef::parse(&plan.image).map_err(|e| PullError::fatal(e.to_string()))?;
    let credentials = credentials(&client, namespace, &plan.secrets)
        .await
        .map_err(PullError::ours)?;
    let registry = oci::Registry::new(oci::Options {
        credentials,
        ..options
    })
    .map_err(|e| PullError::ours(operator_runtime::error_chain(&e)))?;
    P::pull(registry, image, plan.clone()).await
}

impl Pull for CatalogPull {
    type Output = Served;

    fn digest(output: &Served) -> &str {
        &output.digest
    }

    async fn pull(
        registry: oci::Registry,
        image: oci::ImageRef,
        plan: ImagePlan,
    ) -> Result<Served, PullError> {
        let pulled = registry
            .pull_catalog(&image)
            .await
            .map_err(|e| PullError::oci(&e))?;
        let digest = pulled.digest.clone();
        let dir = pulled.dir.clone();
        let label = format!("{}@{}", pulled.image, pulled.digest);
        let loaded = tokio::task::spawn_blocking(move || -> Result<LoadedCatalog, String> {
            let loaded = crate::source::load_path(&dir).map_err(|e| operator_runtime::error_chain(&e))?;
            let problems = loaded.problems.into_iter().map(LoadProblem::from).collect();
            load::link(
                loaded.config,
                problems,
                load::CatalogOrigin::Image {
                    digest: digest.clone(),
                },
            )
            .map_err(|refused| format!("image {label} does not hold a valid catalog: {refused}"))
        })
        .await
        .map_err(|e| PullError::ours(format!("loading the catalog failed: {e}")))?
        .map_err(PullError::ours)?;
        Ok(Served {
            image: plan.image,
            digest: pulled.digest,
            catalog: Arc::new(loaded),
        })
    }
}

impl Pull for BundlePull {
    type Output = PulledBundle;

    fn digest(output: &PulledBundle) -> &str {
        &output.digest
    }

    async fn pull(
        registry: oci::Registry,
        image: oci::ImageRef,
        plan: ImagePlan,
    ) -> Result<PulledBundle, PullError> {
        let pulled = registry
            .pull_bundle(&image)
            .await
            .map_err(|e| PullError::oci(&e))?;
        let dir = pulled.dir.clone();
        let label = format!("{}@{}", pulled.image, pulled.digest);
        let manifests = tokio::task::spawn_blocking(move || read_bundle(&dir, &label))
            .await
            .map_err(|e| PullError::ours(format!("reading the bundle failed: {e}")))??;
        Ok(PulledBundle {
            image: plan.image,
            digest: pulled.digest,
            manifests: Arc::new(manifests),
        })
    }
}

/// The manifests of the unpacked bundle in `dir`, checked as `kubectl-olm` checks a bundle
/// directory.
fn read_bundle(dir: &std::path::Path, label: &str) -> Result<Vec<serde_json::Value>, PullError> {
    let tree = crate::source::bundle::read_tree(dir)
        .map_err(|e| PullError::ours(format!("cannot read the unpacked bundle image {label}: {e}")))?;
    let bundle = crate::bundle::Bundle::parse(&tree).map_err(|e| {
        PullError::fatal(format!(
            "bundle image {label} does not hold a valid registry+v1 bundle: {e}"
        ))
    })?;
    Ok(bundle.manifests.into_iter().map(|m| m.object).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(image: &str) -> ImagePlan {
        ImagePlan {
            image: image.to_owned(),
            secrets: Vec::new(),
            poll: None,
            interval_problem: None,
        }
    }

    #[test]
    fn the_backoff_starts_at_5s_doubles_and_stops_at_5_minutes() {
        assert_eq!(backoff_after(1), Duration::from_secs(5));
        assert_eq!(backoff_after(2), Duration::from_secs(10));
        assert_eq!(backoff_after(4), Duration::from_secs(40));
        assert_eq!(backoff_after(7), BACKOFF.max);
        assert_eq!(backoff_after(u32::MAX), BACKOFF.max);
    }

    #[test]
    fn a_restart_forgets_failures_and_times_a_pull_still_running_in_the_new_window() {
        let puller: ImagePuller<BundlePull> = ImagePuller::new(oci::Options::default(), 1);
        let key = ("olm".to_owned(), "example.com/b:v1".to_owned());
        let request = plan(&key.1);
        puller.view(&key, &request);
        let long_ago = Instant::now().checked_sub(Duration::from_secs(900));
        let set = |pulling: bool| {
            let mut entries = lock(&puller.entries);
            let view = &mut entries.get_mut(&key).unwrap().view;
            view.pulling = pulling;
            view.first_attempt = long_ago;
            view.failures = 3;
            view.last_error = Some("image example.com/b:v1 not found".to_owned());
            view.last_error_fatal = true;
        };

        set(false);
        puller.restart(&key);
        let view = puller.view(&key, &request);
        assert_eq!((view.failures, view.first_attempt), (0, None));
        assert_eq!((view.last_error, view.last_error_fatal), (None, false));

        set(true);
        puller.restart(&key);
        let view = puller.view(&key, &request);
        let opened = view.first_attempt.expect("a running pull opens the new window");
        assert!(opened.elapsed() < Duration::from_secs(60), "{opened:?}");
        assert_eq!(view.failures, 0);
    }

    #[tokio::test]
    async fn a_finished_pull_is_announced_with_its_key_so_its_owner_is_reconciled_at_once() {
        use futures::StreamExt;
        let (fixture, _server) = crate::controller::testing::Fixture::new();
        let ctx = fixture.context("catalogsource");
        let cache = tempfile::tempdir().expect("tempdir");
        let puller: ImagePuller = ImagePuller::new(
            oci::Options {
                cache_dir: cache.path().to_owned(),
                insecure: vec!["127.0.0.1:1".into()],
                ..oci::Options::default()
            },
            1,
        );
        let mut finished = Box::pin(puller.finished());
        let key = ("catalogs".to_owned(), "cat".to_owned());
        let request = plan("127.0.0.1:1/catalog:v1");
        puller.view(&key, &request);
        assert!(puller.start(&key, &request, ctx.client()));
        let announced = tokio::time::timeout(Duration::from_secs(10), finished.next())
            .await
            .expect("announced within 10 s");
        assert_eq!(announced, Some(key.clone()));
        // Announced after the result is recorded: the reconcile it wakes sees it.
        let view = puller.view(&key, &request);
        assert!(!view.pulling);
        assert!(view.last_error.is_some(), "nothing listens on 127.0.0.1:1");
    }

    #[tokio::test]
    async fn a_cancelled_pull_stops_its_request_and_leaves_no_result() {
        use futures::StreamExt;
        use tokio::io::AsyncReadExt;
        let (fixture, _server) = crate::controller::testing::Fixture::new();
        let ctx = fixture.context("catalogsource");
        // A registry that accepts the connection and never answers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address").to_string();
        let cache = tempfile::tempdir().expect("tempdir");
        let puller: ImagePuller<BundlePull> = ImagePuller::new(
            oci::Options {
                cache_dir: cache.path().to_owned(),
                insecure: vec![addr.clone()],
                ..oci::Options::default()
            },
            1,
        );
        let mut finished = Box::pin(puller.finished());
        let key = ("olm".to_owned(), format!("{addr}/bundle:v1"));
        let request = plan(&key.1);
        puller.view(&key, &request);
        assert!(puller.start(&key, &request, ctx.client()));
        let (mut conn, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
            .await
            .expect("the pull connects within 10 s")
            .expect("accept");
        assert!(puller.view(&key, &request).pulling);

        assert!(puller.cancel(&key));
        assert!(!puller.view(&key, &request).pulling);
        // The request is dropped: the registry sees its connection closed.
        let mut buf = vec![0u8; 4096];
        loop {
            match tokio::time::timeout(Duration::from_secs(10), conn.read(&mut buf))
                .await
                .expect("the connection closes within 10 s")
            {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        // Nothing recorded, nothing announced; a second cancel finds nothing running.
        assert!(
            tokio::time::timeout(Duration::from_millis(500), finished.next())
                .await
                .is_err()
        );
        let view = puller.view(&key, &request);
        assert!(view.served.is_none() && view.last_error.is_none() && view.failures == 0);
        assert!(!puller.cancel(&key));
    }
}
