use std::borrow::Cow;
use std::fmt;

use idconsent_kernel::id::{ApplicationId, DeliveryId, EventId};
use idconsent_kernel::{Environment, IdGenerator, Timestamp};
use serde::Serialize;
use serde_json::Value;

/// The type of an event (`consent.approved`, `mandate.signed`, …), declared by the domain that
/// emits it as a constant (`idconsent_consent::events::CONSENT_APPROVED`): the webhook crate
/// knows none of them, so a new domain brings its events without touching this crate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventType(Cow<'static, str>);

/// A stored event type that is not of the form `domain.happening`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an event type: {0:?}")]
pub struct InvalidEventType(pub String);

impl EventType {
    /// A domain's event type: `domain.happening`, lower case.
    pub const fn declared(name: &'static str) -> Self {
        Self(Cow::Borrowed(name))
    }

    /// An event type read back from storage: lower-case ASCII words, at least two, joined by
    /// dots (`underscore_words` allowed), at most 64 characters.
    pub fn stored(name: String) -> Result<Self, InvalidEventType> {
        let well_formed = name.len() <= 64
            && name.split('.').count() >= 2
            && name.split('.').all(|word| {
                !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            });
        if well_formed {
            Ok(Self(Cow::Owned(name)))
        } else {
            Err(InvalidEventType(name))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something that happened, for one application in one environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: EventId,
    pub event_type: EventType,
    pub application_id: ApplicationId,
    pub environment: Environment,
    pub created_at: Timestamp,
    pub data: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    event_type: &'a str,
    created_at: String,
    data: &'a Value,
}

impl Event {
    /// The webhook body, `{"id","type","createdAt","data"}`, exactly as delivered.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&Body {
            id: self.id.as_str(),
            event_type: self.event_type.as_str(),
            created_at: self.created_at.to_rfc3339(),
            data: &self.data,
        })
        .unwrap_or_default()
    }
}

/// One delivery to make: the event to one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub delivery_id: DeliveryId,
    pub url: String,
}

/// An event with its serialised body and its deliveries, to be written by the store in the same
/// transaction as the state change it reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Outbox {
    pub event: Event,
    pub body: Vec<u8>,
    pub destinations: Vec<Destination>,
}

impl Outbox {
    /// An event delivered to `urls` (usually one callback URL). `data` is the event's payload:
    /// a `Serialize` struct of the domain that emits it (`consent.*` data lives in the consent
    /// crate, `device.*` in the end-user crate, …), so its fields are named in one place.
    pub fn new(
        ids: &dyn IdGenerator,
        event_type: EventType,
        application_id: ApplicationId,
        environment: Environment,
        created_at: Timestamp,
        data: impl Serialize,
        urls: &[&str],
    ) -> Self {
        let event = Event {
            id: ids.next(),
            event_type,
            application_id,
            environment,
            created_at,
            // A payload is a plain struct with string keys, which always converts; one that
            // could not (a map with non-string keys) would go out as `null`, and the contract
            // snapshot of its event would show it.
            data: serde_json::to_value(data).unwrap_or(Value::Null),
        };
        let body = event.body();
        let destinations = urls
            .iter()
            .map(|url| Destination {
                delivery_id: ids.next(),
                url: (*url).to_owned(),
            })
            .collect();
        Self {
            event,
            body,
            destinations,
        }
    }
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryStatus {
    /// Waiting for its (next) attempt.
    Pending,
    /// A 2xx arrived.
    Succeeded,
    /// Every scheduled attempt failed.
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Succeeded => "succeeded",
            DeliveryStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            DeliveryStatus::Pending,
            DeliveryStatus::Succeeded,
            DeliveryStatus::Failed,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// One try at delivering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub at: Timestamp,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<u16>,
    /// Why there was no answer (timeout, connection refused, refused target).
    pub error: Option<String>,
    pub duration_ms: u64,
}

/// An event on its way to one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: DeliveryId,
    pub event_id: EventId,
    pub event_type: EventType,
    pub application_id: ApplicationId,
    pub environment: Environment,
    pub url: String,
    pub body: Vec<u8>,
    pub status: DeliveryStatus,
    /// Oldest first.
    pub attempts: Vec<Attempt>,
    /// When the next attempt is due; `None` once finished.
    pub next_attempt_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;
    use idconsent_kernel::id::TypedId;

    #[test]
    fn the_body_is_the_contract_shape() {
        let event = Event {
            id: EventId::parse("evt_01JDKXB2C3D4E5F6G7H8J9K0LM").unwrap(),
            event_type: EventType::declared("consent.approved"),
            application_id: ApplicationId::parse("app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            environment: Environment::Sandbox,
            created_at: Timestamp::parse_rfc3339("2025-11-21T10:01:00Z").unwrap(),
            data: serde_json::json!({"sessionId": "cs_01JDKXA1B2C3D4E5F6G7H8J9K0", "status": "approved"}),
        };
        // The worked example of vectors.json, byte for byte.
        assert_eq!(
            String::from_utf8(event.body()).unwrap(),
            r#"{"id":"evt_01JDKXB2C3D4E5F6G7H8J9K0LM","type":"consent.approved","createdAt":"2025-11-21T10:01:00.000Z","data":{"sessionId":"cs_01JDKXA1B2C3D4E5F6G7H8J9K0","status":"approved"}}"#
        );
    }

    #[test]
    fn stored_event_types_are_checked_for_their_form() {
        for name in ["consent.approved", "device.recovery_started", "a.b.c"] {
            assert_eq!(
                EventType::stored(name.into()).unwrap(),
                EventType::declared(name)
            );
        }
        for name in [
            "",
            "consent",
            "consent.",
            ".approved",
            "Consent.Approved",
            "a b.c",
        ] {
            assert!(EventType::stored(name.into()).is_err(), "{name:?}");
        }
        assert!(EventType::stored(format!("a.{}", "b".repeat(63))).is_err());
    }
}
