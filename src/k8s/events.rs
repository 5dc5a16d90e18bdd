//! Kubernetes Events for the controllers' transitions, through kube-runtime's `Recorder`.
//!
//! Reasons are PascalCase and are emitted on transitions only (callers compare the old and
//! new phase or reason). A failed publish is logged and never fails a reconcile: an Event is a
//! courtesy, the status is the record.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

/// Publishes Events as one controller (`reportingController` = `olm-rs/<controller>`).
#[derive(Clone)]
pub struct Events {
    recorder: Recorder,
}

impl Events {
    /// A publisher for `controller`, with the pod name (if known) as the instance.
    pub fn new(client: kube::Client, controller: &str) -> Self {
        let reporter = Reporter {
            controller: format!("olm-rs-{controller}"),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client, reporter),
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
        let event = Event {
            type_,
            reason: reason.to_owned(),
            note: Some(truncate(note, 1000)),
            action: action.to_owned(),
            secondary: None,
        };
        if let Err(err) = self.recorder.publish(&event, regarding).await {
            tracing::warn!(reason, error = %err, "failed to publish event");
        }
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary (Event notes are limited to 1 kB).
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
    fn long_notes_are_cut_on_a_character_boundary() {
        let text = "é".repeat(600);
        let cut = truncate(text, 1000);
        assert!(cut.len() <= 1000);
        assert!(cut.chars().all(|c| c == 'é'));
        assert_eq!(truncate("short".into(), 1000), "short");
    }
}
