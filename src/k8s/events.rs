//! events: core/v1 Events as upstream OLM's recorder (client-go `tools/record`) writes them,
//! the only module that writes Events.
//!
//! Each Event has `source.component` and `reportingComponent` `operator-lifecycle-manager`,
//! `count`, `firstTimestamp` and `lastTimestamp`, so `kubectl get events` and `kubectl
//! describe` show the time, the source and the count. An Event repeating one already written
//! (same object, type, reason and message: client-go's correlator key) is not written again:
//! the existing Event gets `count + 1` and a new `lastTimestamp` (a merge patch), and is
//! created again, count kept, when it has expired in the meantime. The decision is pure
//! ([`key`], [`Aggregator::record`], [`repeat_patch`]); [`Events`] only sends.
//!
//! Reasons are PascalCase and are emitted on transitions only (callers compare the old and
//! new phase or reason). A failed publish is logged and never fails a reconcile: an Event is a
//! courtesy, the status is the record.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
};

use k8s_openapi::{
    api::core::v1::{Event, EventSource, ObjectReference},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::Timestamp,
};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// The source component of every Event, as upstream OLM's recorder names itself.
pub const COMPONENT: &str = "operator-lifecycle-manager";

/// How many distinct Events are remembered for aggregation (client-go's LRU holds 4096).
pub const REMEMBERED: usize = 4096;

/// Notes are cut to this many bytes (the events.k8s.io limit; long notes are unreadable).
pub const MAX_MESSAGE: usize = 1000;

/// Normal or Warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something needs attention.
    Warning,
}

impl EventType {
    /// The `type` field's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// What makes two Events the same Event (client-go's `getEventKey`): the object, the type, the
/// reason and the message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventKey {
    api_version: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    type_: EventType,
    reason: String,
    message: String,
}

/// The aggregation key of an Event about `regarding`.
pub fn key(regarding: &ObjectReference, type_: EventType, reason: &str, message: &str) -> EventKey {
    let field = |f: &Option<String>| f.clone().unwrap_or_default();
    EventKey {
        api_version: field(&regarding.api_version),
        kind: field(&regarding.kind),
        namespace: field(&regarding.namespace),
        name: field(&regarding.name),
        uid: field(&regarding.uid),
        type_,
        reason: reason.to_owned(),
        message: message.to_owned(),
    }
}

/// What is remembered of an Event written: where it is, its count and when it was first seen.
#[derive(Clone, Debug, PartialEq)]
struct Recorded {
    name: String,
    count: i32,
    first: Time,
}

/// One Event to send: a new one to create, or a repeat to patch (created again if gone).
#[derive(Clone, Debug, PartialEq)]
pub struct Send {
    /// The whole Event (what is created; its count and timestamps are the patch's).
    pub event: Event,
    /// A repeat of an Event already written under the same name.
    pub repeat: bool,
}

/// The Events remembered for aggregation, the oldest forgotten first past `capacity`.
#[derive(Debug)]
pub struct Aggregator {
    capacity: usize,
    seen: HashMap<EventKey, Recorded>,
    order: VecDeque<EventKey>,
}

impl Aggregator {
    /// An aggregator remembering at most `capacity` Events.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            seen: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// The Event to send for `regarding` at `now`, remembered as sent: a new Event (count 1,
    /// named `<object>.<now in hex nanoseconds>` as client-go names them), or the Event
    /// already sent for the same key with `count + 1` and `lastTimestamp` `now`.
    pub fn record(
        &mut self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        message: String,
        now: Timestamp,
        instance: Option<&str>,
    ) -> Send {
        let message = truncate(message, MAX_MESSAGE);
        let key = key(regarding, type_, reason, &message);
        let object = regarding.name.clone().unwrap_or_default();
        let recorded = match self.seen.get(&key) {
            Some(previous) => Recorded {
                name: previous.name.clone(),
                count: previous.count.saturating_add(1),
                first: previous.first.clone(),
            },
            None => Recorded {
                name: format!("{object}.{:x}", now.as_nanosecond()),
                count: 1,
                first: Time(now),
            },
        };
        let repeat = recorded.count > 1;
        let event = Event {
            metadata: ObjectMeta {
                name: Some(recorded.name.clone()),
                // Events about cluster-scoped objects go to `default`, as client-go puts them.
                namespace: Some(
                    regarding
                        .namespace
                        .clone()
                        .filter(|n| !n.is_empty())
                        .unwrap_or_else(|| "default".to_owned()),
                ),
                ..ObjectMeta::default()
            },
            involved_object: regarding.clone(),
            reason: Some(reason.to_owned()),
            message: Some(message),
            type_: Some(type_.as_str().to_owned()),
            count: Some(recorded.count),
            first_timestamp: Some(recorded.first.clone()),
            last_timestamp: Some(Time(now)),
            source: Some(EventSource {
                component: Some(COMPONENT.to_owned()),
                host: None,
            }),
            reporting_component: Some(COMPONENT.to_owned()),
            reporting_instance: instance.map(str::to_owned),
            ..Event::default()
        };
        if !self.seen.contains_key(&key) {
            self.order.push_back(key.clone());
            while self.order.len() > self.capacity {
                if let Some(oldest) = self.order.pop_front() {
                    self.seen.remove(&oldest);
                }
            }
        }
        self.seen.insert(key, recorded);
        Send { event, repeat }
    }
}

/// The merge patch that turns the Event already written into `event`, a repeat of it (what
/// client-go's correlator patches: count, lastTimestamp and message).
pub fn repeat_patch(event: &Event) -> Value {
    json!({
        "count": event.count,
        "lastTimestamp": event.last_timestamp,
        "message": event.message,
    })
}

/// Publishes Events as `operator-lifecycle-manager`, with the pod name (if known) as the
/// reporting instance.
#[derive(Clone)]
pub struct Events {
    client: kube::Client,
    instance: Option<String>,
    aggregator: Arc<Mutex<Aggregator>>,
}

impl Events {
    /// A publisher (the source is OLM's, whichever controller sends).
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            instance: std::env::var("POD_NAME").ok(),
            aggregator: Arc::new(Mutex::new(Aggregator::new(REMEMBERED))),
        }
    }

    /// A Normal event.
    pub async fn normal(&self, regarding: &ObjectReference, reason: &str, action: &str, note: String) {
        self.publish(regarding, EventType::Normal, reason, action, note)
            .await;
    }

    /// A Warning event.
    pub async fn warning(&self, regarding: &ObjectReference, reason: &str, action: &str, note: String) {
        self.publish(regarding, EventType::Warning, reason, action, note)
            .await;
    }

    async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let send = {
            let mut aggregator = match self.aggregator.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            aggregator.record(
                regarding,
                type_,
                reason,
                note,
                Timestamp::now(),
                self.instance.as_deref(),
            )
        };
        let mut event = send.event;
        event.action = Some(action.to_owned());
        let namespace = event.metadata.namespace.clone().unwrap_or_default();
        let name = event.metadata.name.clone().unwrap_or_default();
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        if send.repeat {
            match api
                .patch(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(repeat_patch(&event)),
                )
                .await
            {
                Ok(_) => return,
                // Expired (Events live an hour): written again with its count.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(err) => {
                    tracing::warn!(reason, event = %name, error = %err, "failed to update a repeated event");
                    return;
                }
            }
        }
        if let Err(err) = api.create(&PostParams::default(), &event).await {
            tracing::warn!(reason, event = %name, error = %err, "failed to publish event");
        }
    }
}

/// The field selector of the Events about `regarding` (same name and uid) with `reason`
/// (upstream `getCopiedCSVDisabledEventsForCSV` matches namespace, name, uid and reason).
pub fn regarding_selector(regarding: &ObjectReference, reason: &str) -> String {
    let mut parts = vec![format!(
        "involvedObject.name={}",
        regarding.name.as_deref().unwrap_or_default()
    )];
    if let Some(uid) = regarding.uid.as_deref() {
        parts.push(format!("involvedObject.uid={uid}"));
    }
    parts.push(format!("reason={reason}"));
    parts.join(",")
}

/// How many Events about `regarding` with `reason` exist (in its namespace): a Warning that
/// must stand once per object, not once per process, is written only when there is not exactly
/// one already (upstream `createCSVCopyingDisabledEvent` counts them the same way).
///
/// # Errors
/// The list failed.
pub async fn count_regarding(
    client: kube::Client,
    regarding: &ObjectReference,
    reason: &str,
) -> kube::Result<usize> {
    let namespace = regarding.namespace.clone().unwrap_or_default();
    let api: Api<Event> = Api::namespaced(client, &namespace);
    let found = api
        .list_metadata(&ListParams::default().fields(&regarding_selector(regarding, reason)))
        .await?;
    Ok(found.items.len())
}

/// Deletes the Events about `regarding` with `reason` (in its namespace); returns how many
/// went. An Event already gone counts as deleted.
///
/// # Errors
/// The list or a delete failed.
pub async fn delete_regarding(
    client: kube::Client,
    regarding: &ObjectReference,
    reason: &str,
) -> kube::Result<usize> {
    let namespace = regarding.namespace.clone().unwrap_or_default();
    let api: Api<Event> = Api::namespaced(client, &namespace);
    let found = api
        .list_metadata(&ListParams::default().fields(&regarding_selector(regarding, reason)))
        .await?;
    let mut deleted = 0;
    for event in &found.items {
        let name = event.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => deleted += 1,
            Err(kube::Error::Api(status)) if status.code == 404 => deleted += 1,
            Err(err) => return Err(err),
        }
    }
    Ok(deleted)
}

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_names_the_object_its_uid_and_the_reason() {
        let mut regarding = csv("redis-operator.v1.0.0");
        regarding.uid = Some("u-1".into());
        assert_eq!(
            regarding_selector(&regarding, "DisabledCopiedCSVs"),
            "involvedObject.name=redis-operator.v1.0.0,involvedObject.uid=u-1,reason=DisabledCopiedCSVs"
        );
    }

    fn csv(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("operators.coreos.com/v1alpha1".into()),
            kind: Some("ClusterServiceVersion".into()),
            name: Some(name.into()),
            namespace: Some("operators".into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn long_notes_are_cut_on_a_character_boundary() {
        let text = "é".repeat(600);
        let cut = truncate(text, 1000);
        assert!(cut.len() <= 1000);
        assert!(cut.chars().all(|c| c == 'é'));
        assert_eq!(truncate("short".into(), 1000), "short");
    }

    #[test]
    fn a_new_event_is_a_core_event_with_the_source_count_and_times_upstream_writes() {
        let mut aggregator = Aggregator::new(10);
        let send = aggregator.record(
            &csv("a.v1"),
            EventType::Normal,
            "InstallSucceeded",
            "done".into(),
            at(1_800_000_000),
            Some("olm-0"),
        );
        assert!(!send.repeat);
        let value = serde_json::to_value(&send.event).unwrap();
        assert_eq!(
            value,
            json!({
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "a.v1.18fae27693b40000", "namespace": "operators"},
                "involvedObject": {"apiVersion": "operators.coreos.com/v1alpha1",
                    "kind": "ClusterServiceVersion", "name": "a.v1", "namespace": "operators",
                    "uid": "uid-a.v1"},
                "reason": "InstallSucceeded",
                "message": "done",
                "type": "Normal",
                "count": 1,
                "firstTimestamp": "2027-01-15T08:00:00Z",
                "lastTimestamp": "2027-01-15T08:00:00Z",
                "source": {"component": "operator-lifecycle-manager"},
                "reportingComponent": "operator-lifecycle-manager",
                "reportingInstance": "olm-0",
            })
        );
    }

    #[test]
    fn a_repeat_counts_on_the_same_event_and_a_different_message_is_a_new_event() {
        let mut aggregator = Aggregator::new(10);
        let mut record = |object: &str, type_, message: &str, second| {
            aggregator.record(
                &csv(object),
                type_,
                "InstallWaiting",
                message.into(),
                at(second),
                None,
            )
        };
        let first = record("a.v1", EventType::Normal, "waiting", 100);
        let again = record("a.v1", EventType::Normal, "waiting", 160);
        assert!(again.repeat);
        assert_eq!(again.event.metadata.name, first.event.metadata.name);
        assert_eq!(again.event.count, Some(2));
        assert_eq!(again.event.first_timestamp, Some(Time(at(100))));
        assert_eq!(again.event.last_timestamp, Some(Time(at(160))));
        assert_eq!(
            repeat_patch(&again.event),
            json!({"count": 2, "lastTimestamp": "1970-01-01T00:02:40Z", "message": "waiting"})
        );

        let other = record("a.v1", EventType::Normal, "still waiting", 170);
        assert!(!other.repeat);
        assert_ne!(other.event.metadata.name, first.event.metadata.name);
        let warning = record("a.v1", EventType::Warning, "waiting", 180);
        assert!(!warning.repeat, "the type is part of the key");
        let elsewhere = record("b.v1", EventType::Normal, "waiting", 190);
        assert!(!elsewhere.repeat, "the object is part of the key");
        let third = record("a.v1", EventType::Normal, "waiting", 200);
        assert_eq!(third.event.count, Some(3));
    }

    #[test]
    fn the_oldest_events_are_forgotten_past_the_capacity() {
        let mut aggregator = Aggregator::new(2);
        aggregator.record(&csv("a"), EventType::Normal, "R", "m".into(), at(1), None);
        aggregator.record(&csv("b"), EventType::Normal, "R", "m".into(), at(2), None);
        aggregator.record(&csv("c"), EventType::Normal, "R", "m".into(), at(3), None);
        assert!(
            !aggregator
                .record(&csv("a"), EventType::Normal, "R", "m".into(), at(4), None)
                .repeat
        );
        assert!(
            aggregator
                .record(&csv("c"), EventType::Normal, "R", "m".into(), at(5), None)
                .repeat
        );
    }

    #[test]
    fn events_about_cluster_scoped_objects_go_to_the_default_namespace() {
        let mut aggregator = Aggregator::new(2);
        let crd = ObjectReference {
            kind: Some("CustomResourceDefinition".into()),
            name: Some("widgets.example.com".into()),
            ..ObjectReference::default()
        };
        let send = aggregator.record(&crd, EventType::Normal, "R", "m".into(), at(1), None);
        assert_eq!(send.event.metadata.namespace.as_deref(), Some("default"));
    }

    #[test]
    fn the_message_is_cut_before_it_is_compared() {
        let mut aggregator = Aggregator::new(2);
        let long = "x".repeat(2000);
        aggregator.record(&csv("a"), EventType::Normal, "R", long.clone(), at(1), None);
        let again = aggregator.record(&csv("a"), EventType::Normal, "R", long + "y", at(2), None);
        assert!(again.repeat);
        assert_eq!(again.event.message.map(|m| m.len()), Some(MAX_MESSAGE));
    }
}
