//! testing: the controllers' reconciles against a mock API server, without a cluster.
//!
//! The rule: a reconcile test states every request the controller sends, in order (method,
//! path and query, so the server-side-apply field manager and `force` are part of it), and
//! fails on any other; Events are answered whenever they come (they are published in the
//! background) and kept for the test to look at. The shape follows kube-rs/controller-rs's
//! `fixtures.rs`: a [`tower_test`] mock service behind a real [`kube::Client`], an
//! [`ApiServerVerifier`] holding the other end, and one [`Scenario`] per behaviour. The
//! reflector stores are filled by hand ([`Fixture::store`]), as the watches would.
//!
//! The end-to-end suite stays for what needs a real API server (admission, garbage
//! collection, watches); these tests pin what the controller asks of it.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use futures::FutureExt as _;
use http::{Method, Request, Response, StatusCode};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::ServiceAccount};
use kube::{
    Client, Resource,
    client::Body,
    core::PartialObjectMeta,
    runtime::{reflector, reflector::store::Writer, watcher},
};
use serde_json::{Value, json};

use super::{Config, Context, EVENT_PUBLISHERS, Shared, Stores, cache::CatalogCache};
use crate::{
    api::{
        v1::OperatorGroup,
        v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription},
    },
    metrics::Metrics,
};

/// The mock API server's end of the client.
type ApiServerHandle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// How long the server waits, once the reconcile is done, for the Events it published in
/// the background (they are on their way within microseconds: same runtime, no I/O).
const SETTLE: Duration = Duration::from_millis(200);

/// How long a reconcile may take against the mock server before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// One request the mock API server received.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    /// The HTTP method.
    pub method: Method,
    /// Path and query, as sent.
    pub uri: String,
    /// The JSON body (`Null` when empty).
    pub body: Value,
}

impl Received {
    async fn read(request: Request<Body>) -> Self {
        let (parts, body) = request.into_parts();
        let bytes = body.collect_bytes().await.expect("the request body is readable");
        Self {
            method: parts.method,
            uri: parts.uri.to_string(),
            body: if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).expect("the request body is JSON")
            },
        }
    }

    fn is_event(&self) -> bool {
        let path = self.uri.split('?').next().unwrap_or_default();
        let segments: Vec<&str> = path.split('/').collect();
        matches!(
            segments.as_slice(),
            ["", "api", "v1", "namespaces", _, "events", ..]
        )
    }
}

/// One request a [`Scenario`] expects, and how the server answers it.
pub(crate) struct Expected {
    method: Method,
    uri: String,
    /// The object the server holds: the answer is it with the request's fields written over
    /// it (a status write answers the whole object with the new status). `Null`: the
    /// request's own object.
    holds: Value,
}

impl Expected {
    fn new(method: Method, uri: impl Into<String>, holds: Value) -> Self {
        Self {
            method,
            uri: uri.into(),
            holds,
        }
    }

    /// The server's answer to `request`: the object it holds, with the request's top-level
    /// fields (and metadata keys) written over it and a new resourceVersion.
    fn answer(&self, request: &Received, version: u64) -> Value {
        let mut object = match &self.holds {
            Value::Null => json!({}),
            held => held.clone(),
        };
        if let Value::Object(fields) = &request.body {
            for (key, value) in fields {
                match (key.as_str(), value, object.get_mut("metadata")) {
                    ("metadata", Value::Object(meta), Some(Value::Object(held))) => {
                        held.extend(meta.clone());
                    }
                    _ => {
                        object[key] = value.clone();
                    }
                }
            }
        }
        object["metadata"]["resourceVersion"] = json!(version.to_string());
        if object["metadata"]["uid"].is_null() {
            object["metadata"]["uid"] = json!(format!("uid-{version}"));
        }
        object
    }
}

/// The requests one behaviour makes, in order (Events aside).
pub(crate) enum Scenario {
    /// A Subscription that resolves: it creates its InstallPlan (a `POST`, so an existing
    /// plan is never overwritten, under the Subscription controller's field manager), writes
    /// the plan's first status (server-side apply on `/status`, forced), then its own status.
    InstallPlanCreated {
        /// The Subscription, as the server holds it.
        subscription: Value,
        /// The name the plan gets.
        plan: String,
    },
    /// One status write of `object` (server-side apply on `/status` under `manager`, forced).
    StatusWritten {
        /// The object's collection path (`/apis/<group>/<version>/namespaces/<ns>/<plural>`).
        collection: String,
        /// The object, as the server holds it.
        object: Value,
        /// The field manager.
        manager: &'static str,
    },
    /// A new CSV whose requirements are met: its OperatorGroup annotations are stamped and
    /// its Deployment applied (server-side apply under `olm-rs/csv`, forced), then its status
    /// is written once, whatever number of phases it went through.
    CsvInstalling {
        /// The CSV, as the server holds it.
        csv: Value,
        /// The Deployment's name.
        deployment: String,
    },
    /// A Subscription without its Operator component label gets it (server-side apply under
    /// `olm-rs/subscription`, forced), then its status is written.
    SubscriptionLabelled {
        /// The Subscription, as the server holds it.
        subscription: Value,
    },
    /// Server-side applies (forced, under `manager`) in order, each to an object's path (or
    /// its `/status`) with the object the server holds there (`Null`: what was sent).
    Applied {
        /// `(/apis/<group>/<version>/namespaces/<ns>/<plural>/<name>[/status], held object)`.
        requests: Vec<(String, Value)>,
        /// The field manager.
        manager: &'static str,
    },
    /// An InstallPlan's CRD step reads the existing CRD (a `GET`, answered with `existing`) and
    /// is refused before any apply; then the plan's status is written (under
    /// `olm-rs/installplan`, forced).
    CrdUpdateRefused {
        /// The CRD on the server.
        existing: Value,
        /// The InstallPlan, as the server holds it.
        plan: Value,
    },
    /// An InstallPlan's CRD step reads the existing CRD (a `GET`, answered with `existing`),
    /// lists the existing objects of `version` a page at a time (`GET`s with `limit=500`, then
    /// the `continue` token of the page before, answered with `pages` in order), is refused
    /// before any apply; then the plan's status is written (under `olm-rs/installplan`, forced).
    CrdObjectsRefused {
        /// The CRD on the server.
        existing: Value,
        /// The version whose objects are listed.
        version: &'static str,
        /// The list answers, in order; each but the last carries `metadata.continue`.
        pages: Vec<Value>,
        /// The InstallPlan, as the server holds it.
        plan: Value,
    },
    /// Nothing is written (Events aside).
    NothingWritten,
}

/// `?&force=true&fieldManager=<manager>`, as kube encodes a forced server-side apply.
fn applied(manager: &str) -> String {
    format!("?&force=true&fieldManager={}", manager.replace('/', "%2F"))
}

fn name_and_namespace(object: &Value) -> (String, String) {
    let meta = &object["metadata"];
    (
        meta["name"].as_str().unwrap_or_default().to_owned(),
        meta["namespace"].as_str().unwrap_or_default().to_owned(),
    )
}

const OLM_V1ALPHA1: &str = "/apis/operators.coreos.com/v1alpha1";

impl Scenario {
    fn expected(self) -> VecDeque<Expected> {
        match self {
            Self::InstallPlanCreated { subscription, plan } => {
                let (name, ns) = name_and_namespace(&subscription);
                let plans = format!("{OLM_V1ALPHA1}/namespaces/{ns}/installplans");
                VecDeque::from([
                    Expected::new(
                        Method::POST,
                        format!("{plans}?&fieldManager=olm-rs%2Fsubscription"),
                        Value::Null,
                    ),
                    // Answered with the plan as created (the request carries only the status).
                    Expected::new(
                        Method::PATCH,
                        format!("{plans}/{plan}/status{}", applied("olm-rs/subscription")),
                        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
                               "metadata": {"name": plan, "namespace": ns}, "spec": {
                                   "clusterServiceVersionNames": [], "approval": "Automatic",
                                   "approved": true}}),
                    ),
                    Expected::new(
                        Method::PATCH,
                        format!(
                            "{OLM_V1ALPHA1}/namespaces/{ns}/subscriptions/{name}/status{}",
                            applied("olm-rs/subscription")
                        ),
                        subscription,
                    ),
                ])
            }
            Self::SubscriptionLabelled { subscription } => {
                let (name, ns) = name_and_namespace(&subscription);
                let sub = format!("{OLM_V1ALPHA1}/namespaces/{ns}/subscriptions/{name}");
                VecDeque::from([
                    Expected::new(
                        Method::PATCH,
                        format!("{sub}{}", applied("olm-rs/subscription")),
                        subscription.clone(),
                    ),
                    Expected::new(
                        Method::PATCH,
                        format!("{sub}/status{}", applied("olm-rs/subscription")),
                        subscription,
                    ),
                ])
            }
            Self::CrdUpdateRefused { existing, plan } => {
                let (crd, _) = name_and_namespace(&existing);
                let (name, ns) = name_and_namespace(&plan);
                VecDeque::from([
                    Expected::new(
                        Method::GET,
                        format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}"),
                        existing,
                    ),
                    Expected::new(
                        Method::PATCH,
                        format!(
                            "{OLM_V1ALPHA1}/namespaces/{ns}/installplans/{name}/status{}",
                            applied("olm-rs/installplan")
                        ),
                        plan,
                    ),
                ])
            }
            Self::CrdObjectsRefused {
                existing,
                version,
                pages,
                plan,
            } => {
                let (crd, _) = name_and_namespace(&existing);
                let (name, ns) = name_and_namespace(&plan);
                let group = existing["spec"]["group"].as_str().unwrap_or_default().to_owned();
                let plural = existing["spec"]["names"]["plural"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let mut expected = VecDeque::from([Expected::new(
                    Method::GET,
                    format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}"),
                    existing,
                )]);
                let mut token: Option<String> = None;
                for page in pages {
                    let query = match &token {
                        None => "?&limit=500".to_owned(),
                        Some(t) => format!("?&limit=500&continue={t}"),
                    };
                    token = page["metadata"]["continue"].as_str().map(str::to_owned);
                    expected.push_back(Expected::new(
                        Method::GET,
                        format!("/apis/{group}/{version}/{plural}{query}"),
                        page,
                    ));
                }
                expected.push_back(Expected::new(
                    Method::PATCH,
                    format!(
                        "{OLM_V1ALPHA1}/namespaces/{ns}/installplans/{name}/status{}",
                        applied("olm-rs/installplan")
                    ),
                    plan,
                ));
                expected
            }
            Self::StatusWritten {
                collection,
                object,
                manager,
            } => {
                let (name, _) = name_and_namespace(&object);
                VecDeque::from([Expected::new(
                    Method::PATCH,
                    format!("{collection}/{name}/status{}", applied(manager)),
                    object,
                )])
            }
            Self::CsvInstalling { csv, deployment } => {
                let (name, ns) = name_and_namespace(&csv);
                let csvs = format!("{OLM_V1ALPHA1}/namespaces/{ns}/clusterserviceversions");
                VecDeque::from([
                    Expected::new(
                        Method::PATCH,
                        format!("{csvs}/{name}{}", applied("olm-rs/csv")),
                        csv.clone(),
                    ),
                    Expected::new(
                        Method::PATCH,
                        format!(
                            "/apis/apps/v1/namespaces/{ns}/deployments/{deployment}{}",
                            applied("olm-rs/csv")
                        ),
                        Value::Null,
                    ),
                    Expected::new(
                        Method::PATCH,
                        format!("{csvs}/{name}/status{}", applied("olm-rs/csv")),
                        csv,
                    ),
                ])
            }
            Self::Applied { requests, manager } => requests
                .into_iter()
                .map(|(path, holds)| {
                    Expected::new(Method::PATCH, format!("{path}{}", applied(manager)), holds)
                })
                .collect(),
            Self::NothingWritten => VecDeque::new(),
        }
    }
}

/// The mock API server: answers a reconcile's requests as a [`Scenario`] says.
pub(crate) struct ApiServerVerifier {
    handle: ApiServerHandle,
    version: u64,
    /// Every request answered, Events included, in the order they came.
    pub received: Vec<Received>,
}

impl ApiServerVerifier {
    /// The resourceVersion of the last object this server answered with: what a store that has
    /// seen every write shows (`metadata.resourceVersion` of an object fed back to a reconcile).
    pub fn last_version(&self) -> String {
        self.version.to_string()
    }

    /// Runs `reconcile` while serving `scenario`: each request must be the next one the
    /// scenario expects (Events excepted, answered whenever they come), none may be left
    /// when the reconcile ends, and the Events it published are collected before returning.
    /// Returns the reconcile's output and the requests of this run.
    pub async fn run<T>(
        &mut self,
        scenario: Scenario,
        reconcile: impl Future<Output = T>,
    ) -> (T, Vec<Received>) {
        let start = self.received.len();
        let mut expected = scenario.expected();
        let mut reconcile = std::pin::pin!(reconcile.fuse());
        let output = tokio::time::timeout(DEADLINE, async {
            loop {
                tokio::select! {
                    biased;
                    output = &mut reconcile => break output,
                    request = self.handle.next_request() => {
                        let (request, send) = request.expect("the client is alive while it reconciles");
                        let request = Received::read(request).await;
                        let answer = self.answer(&request, &mut expected);
                        send.send_response(answer);
                        self.received.push(request);
                    }
                }
            }
        })
        .await
        .expect("the reconcile finished (is it waiting for an answer the scenario does not give?)");
        if let Some(missing) = expected.front() {
            panic!(
                "the reconcile ended without {} {}; it sent: {:#?}",
                missing.method,
                missing.uri,
                &self.received[start..]
            );
        }
        // The Events published in the background, and nothing else.
        while let Ok(Some((request, send))) = tokio::time::timeout(SETTLE, self.handle.next_request()).await {
            let request = Received::read(request).await;
            let answer = self.answer(&request, &mut VecDeque::new());
            send.send_response(answer);
            self.received.push(request);
        }
        (output, self.received[start..].to_vec())
    }

    fn answer(&mut self, request: &Received, expected: &mut VecDeque<Expected>) -> Response<Body> {
        self.version += 1;
        let body = if request.is_event() {
            Expected::new(Method::POST, "", Value::Null).answer(request, self.version)
        } else {
            let Some(next) = expected.pop_front() else {
                panic!(
                    "unexpected request {} {} {:#}",
                    request.method, request.uri, request.body
                );
            };
            assert_eq!(
                (&request.method, request.uri.as_str()),
                (&next.method, next.uri.as_str()),
                "the next request (body: {:#})",
                request.body
            );
            next.answer(request, self.version)
        };
        Response::builder()
            .status(StatusCode::OK)
            .body(Body::from(
                serde_json::to_vec(&body).expect("an answer serialises"),
            ))
            .expect("a valid response")
    }
}

/// The request bodies of `received` sent as `method` to a URI starting with `prefix`.
pub(crate) fn bodies<'a>(received: &'a [Received], method: &Method, prefix: &str) -> Vec<&'a Value> {
    received
        .iter()
        .filter(|r| r.method == *method && r.uri.starts_with(prefix))
        .map(|r| &r.body)
        .collect()
}

/// The requests in `received` that are not Events.
pub(crate) fn writes(received: &[Received]) -> Vec<&Received> {
    received.iter().filter(|r| !r.is_event()).collect()
}

/// The reasons of the Events in `received`, in order.
pub(crate) fn event_reasons(received: &[Received]) -> Vec<String> {
    received
        .iter()
        .filter(|r| r.is_event())
        .map(|r| r.body["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The writers behind [`Stores`], for a test to fill.
#[allow(
    dead_code,
    reason = "every store has its writer, whether a test fills it yet or not"
)]
pub(crate) struct Writers {
    pub catalog_sources: Writer<CatalogSource>,
    pub subscriptions: Writer<Subscription>,
    pub install_plans: Writer<InstallPlan>,
    pub csvs: Writer<ClusterServiceVersion>,
    pub operator_groups: Writer<OperatorGroup>,
    pub deployments: Writer<Deployment>,
    pub service_accounts: Writer<PartialObjectMeta<ServiceAccount>>,
    pub cluster_roles: Writer<k8s_openapi::api::rbac::v1::ClusterRole>,
    pub olm_configs: Writer<crate::api::v1::OLMConfig>,
}

/// What the controllers share, on a mock API server, with stores a test fills.
pub(crate) struct Fixture {
    pub shared: Arc<Shared>,
    pub writers: Writers,
    _synced: tokio::sync::watch::Sender<bool>,
}

impl Fixture {
    /// A fixture and the server its client talks to. The stores count as synced.
    pub fn new() -> (Self, ApiServerVerifier) {
        let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let client = Client::new(service, "default");
        let (catalog_sources, catalog_sources_w) = reflector::store();
        let (subscriptions, subscriptions_w) = reflector::store();
        let (install_plans, install_plans_w) = reflector::store();
        let (csvs, csvs_w) = reflector::store();
        let (operator_groups, operator_groups_w) = reflector::store();
        let (deployments, deployments_w) = reflector::store();
        let (service_accounts, service_accounts_w) = reflector::store();
        let (cluster_roles, cluster_roles_w) = reflector::store();
        let (roles, _roles_w) = reflector::store();
        let (role_bindings, _role_bindings_w) = reflector::store();
        let (cluster_role_bindings, _cluster_role_bindings_w) = reflector::store();
        let (operator_conditions, _operator_conditions_w) = reflector::store();
        let (olm_configs, olm_configs_w) = reflector::store();
        let (synced_tx, synced_rx) = tokio::sync::watch::channel(true);
        let shared = Arc::new(Shared {
            csv_requeue: futures::channel::mpsc::unbounded().0,
            client,
            scoped: crate::k8s::scoped::ScopedClients::new(None),
            config: Config::default(),
            metrics: Arc::new(Metrics::new()),
            catalogs: Arc::new(CatalogCache::new(None).expect("the embedded catalog loads")),
            images: super::image_puller::ImagePuller::new(crate::oci::Options::default(), 1),
            bundles: super::image_puller::ImagePuller::new(crate::oci::Options::default(), 1),
            stores: Stores {
                catalog_sources,
                subscriptions,
                install_plans,
                csvs,
                operator_groups,
                deployments,
                service_accounts,
                cluster_roles,
                roles,
                role_bindings,
                cluster_role_bindings,
                operator_conditions,
                // The generator stays off: no scenario expects its writes.
                operator_conditions_synced: Arc::default(),
                olm_configs,
                olm_configs_synced: Arc::default(),
            },
            catalogd: std::sync::OnceLock::new(),
            backoff: operator_runtime::backoff::PerObject::new(operator_runtime::backoff::DEFAULT),
            discovery: std::sync::Mutex::default(),
            status_writes: std::sync::Mutex::default(),
            rbac_changes: std::sync::Mutex::default(),
            server_version: tokio::sync::OnceCell::new(),
            condition_rbac: std::sync::Mutex::default(),
            event_permits: Arc::new(tokio::sync::Semaphore::new(EVENT_PUBLISHERS)),
            synced: synced_rx,
            api_claims: std::sync::Mutex::default(),
            copies: super::copied_csv::Copies::default(),
        });
        let fixture = Self {
            shared,
            writers: Writers {
                catalog_sources: catalog_sources_w,
                subscriptions: subscriptions_w,
                install_plans: install_plans_w,
                csvs: csvs_w,
                operator_groups: operator_groups_w,
                deployments: deployments_w,
                service_accounts: service_accounts_w,
                cluster_roles: cluster_roles_w,
                olm_configs: olm_configs_w,
            },
            _synced: synced_tx,
        };
        let verifier = ApiServerVerifier {
            handle,
            version: 100,
            received: Vec::new(),
        };
        (fixture, verifier)
    }

    /// The context of the controller `name` (`subscription`, `csv`, ...).
    pub fn context(&self, name: &'static str) -> Arc<Context> {
        Context::new(&self.shared, name)
    }

    /// Puts `object` into the store behind `writer`, as its watch would.
    pub fn store<K>(writer: &mut Writer<K>, object: &K)
    where
        K: Resource + Clone + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone + Default,
    {
        writer.apply_watcher_event(&watcher::Event::Apply(object.clone()));
    }
}

/// Deserialises a JSON fixture into `K`.
pub(crate) fn object<K: serde::de::DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value).expect("a valid fixture object")
}

mod catalog_source;
mod install_plan;
mod tests;
