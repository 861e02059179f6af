use std::fmt;

use idconsent_kernel::id::{ApplicationId, DeliveryId, EventId};
use idconsent_kernel::{Environment, IdGenerator, Timestamp};
use serde::Serialize;
use serde_json::Value;

/// Every event type (spec §6 plus CONTRACT §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    ConsentCreated,
    ConsentApproved,
    ConsentRejected,
    ConsentExpired,
    AuthSuccess,
    AuthFailed,
    DeviceRegistered,
    DeviceActivated,
    DeviceRecoveryStarted,
    DeviceDeregistered,
    EnrollmentCompleted,
    MandateSigned,
    SignatureCompleted,
    VerificationCompleted,
}

impl EventType {
    pub const ALL: [EventType; 14] = [
        EventType::ConsentCreated,
        EventType::ConsentApproved,
        EventType::ConsentRejected,
        EventType::ConsentExpired,
        EventType::AuthSuccess,
        EventType::AuthFailed,
        EventType::DeviceRegistered,
        EventType::DeviceActivated,
        EventType::DeviceRecoveryStarted,
        EventType::DeviceDeregistered,
        EventType::EnrollmentCompleted,
        EventType::MandateSigned,
        EventType::SignatureCompleted,
        EventType::VerificationCompleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::ConsentCreated => "consent.created",
            EventType::ConsentApproved => "consent.approved",
            EventType::ConsentRejected => "consent.rejected",
            EventType::ConsentExpired => "consent.expired",
            EventType::AuthSuccess => "auth.success",
            EventType::AuthFailed => "auth.failed",
            EventType::DeviceRegistered => "device.registered",
            EventType::DeviceActivated => "device.activated",
            EventType::DeviceRecoveryStarted => "device.recovery_started",
            EventType::DeviceDeregistered => "device.deregistered",
            EventType::EnrollmentCompleted => "enrollment.completed",
            EventType::MandateSigned => "mandate.signed",
            EventType::SignatureCompleted => "signature.completed",
            EventType::VerificationCompleted => "verification.completed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
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
    event_type: &'static str,
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
            event_type: EventType::ConsentApproved,
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
    fn event_types_round_trip() {
        for event_type in EventType::ALL {
            assert_eq!(EventType::parse(event_type.as_str()), Some(event_type));
        }
    }
}
