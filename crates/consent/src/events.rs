//! The `data` of consent events, as merchants receive it in webhooks (CONTRACT §8).
//!
//! Its own types, on purpose: the API's read body (in the server) and the FIDO context the
//! user approves (`approval.rs`) have the same fields today, but each may change without the
//! others — a new field in the webhook must never change what a passkey commits to.

use idconsent_kernel::Timestamp;
use idconsent_kernel::id::{ClientId, SessionId};
use serde::Serialize;

use crate::model::Session;
use idconsent_webhook::EventType;

// The event types this domain emits (the webhook crate knows none by name).
/// `consent.created`: A consent session (or OAuth request) was created.
pub const CONSENT_CREATED: EventType = EventType::declared("consent.created");
/// `consent.approved`: The recipient approved a consent session; an OAuth approval adds its code and claims.
pub const CONSENT_APPROVED: EventType = EventType::declared("consent.approved");
/// `consent.rejected`: The recipient rejected a consent session.
pub const CONSENT_REJECTED: EventType = EventType::declared("consent.rejected");
/// `consent.expired`: A consent session ended undecided at its expiry.
pub const CONSENT_EXPIRED: EventType = EventType::declared("consent.expired");

/// `data` of `consent.created`, `consent.approved`, `consent.rejected` and `consent.expired`:
/// the session as its application reads it, then the fields its intent adds (an OAuth
/// request's redirect, code and claims; [`NothingAdded`] for the others).
#[derive(Debug, Serialize)]
pub struct ConsentEventData<'a, X: Serialize> {
    #[serde(flatten)]
    pub session: SessionData<'a>,
    #[serde(flatten)]
    pub added: &'a X,
}

/// What consent events of every intent but OAuth's decisions carry besides the session.
#[derive(Debug, Serialize)]
pub struct NothingAdded {}

/// The session as of the event.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionData<'a> {
    pub session_id: &'a SessionId,
    pub client_id: &'a ClientId,
    pub recipient: &'a str,
    /// `LOGIN`, `TRANSACTION`, `SIGNATURE` or `OAUTH`.
    pub intent: &'static str,
    /// `pending`, `approved`, `rejected` or `expired`.
    pub status: &'static str,
    pub transaction: TransactionData<'a>,
    pub callback_url: &'a str,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    /// `null` while pending; the expiry for an expired session.
    pub decided_at: Option<Timestamp>,
}

/// The transaction the user was shown.
#[derive(Debug, Serialize)]
pub struct TransactionData<'a> {
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub description: &'a str,
    /// Major units: `19.99`.
    pub amount: f64,
    /// ISO 4217.
    pub currency: String,
    pub payee: &'a str,
}

impl<'a> SessionData<'a> {
    /// `session` as of `now` (a pending session past its expiry reads as expired).
    pub fn of(session: &'a Session, now: Timestamp) -> Self {
        let transaction = &session.transaction;
        Self {
            session_id: &session.id,
            client_id: &session.client_id,
            recipient: session.recipient.as_str(),
            intent: session.intent.as_str(),
            status: session.status_at(now).as_str(),
            transaction: TransactionData {
                kind: &transaction.kind,
                description: &transaction.description,
                amount: transaction.amount.major_f64(),
                currency: transaction.amount.currency().code().to_owned(),
                payee: &transaction.payee,
            },
            callback_url: &session.callback_url,
            created_at: session.created_at,
            expires_at: session.expires_at,
            decided_at: session.decided_at_as_of(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use idconsent_kernel::id::{ApplicationId, TypedId};
    use idconsent_kernel::{Currency, Environment, Intent, Money, PhoneNumber};

    use super::*;
    use crate::model::{SessionStatus, Transaction};

    fn session() -> Session {
        Session {
            id: SessionId::parse("cs_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN").unwrap(),
            application_id: ApplicationId::parse("app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            client_id: ClientId::parse("cli_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            environment: Environment::Sandbox,
            recipient: PhoneNumber::parse("+15551234567").unwrap(),
            intent: Intent::Transaction,
            transaction: Transaction {
                kind: "payment".into(),
                description: "Order 42".into(),
                amount: Money::from_minor(1999, Currency::parse("USD").unwrap()).unwrap(),
                payee: "Example Shop".into(),
            },
            callback_url: "https://shop.example/hooks".into(),
            status: SessionStatus::Pending,
            created_at: Timestamp::from_millis(1_000),
            expires_at: Timestamp::from_millis(301_000),
            decided_at: None,
        }
    }

    #[test]
    fn the_data_is_the_session_in_major_units_then_what_the_intent_adds() {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Added {
            redirect_uri: &'static str,
        }
        let session = session();
        let data = ConsentEventData {
            session: SessionData::of(&session, Timestamp::from_millis(2_000)),
            added: &Added {
                redirect_uri: "https://shop.example/cb",
            },
        };
        assert_eq!(
            serde_json::to_string(&data).unwrap(),
            r#"{"sessionId":"cs_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN","clientId":"cli_01JDKX9Q6N8V3T5R7W2Y4Z6B8C","recipient":"+15551234567","intent":"TRANSACTION","status":"pending","transaction":{"type":"payment","description":"Order 42","amount":19.99,"currency":"USD","payee":"Example Shop"},"callbackUrl":"https://shop.example/hooks","createdAt":"1970-01-01T00:00:01.000Z","expiresAt":"1970-01-01T00:05:01.000Z","decidedAt":null,"redirectUri":"https://shop.example/cb"}"#
        );
        let expired = ConsentEventData {
            session: SessionData::of(&session, Timestamp::from_millis(400_000)),
            added: &NothingAdded {},
        };
        let expired = serde_json::to_value(&expired).unwrap();
        assert_eq!(expired["status"], "expired");
        assert_eq!(expired["decidedAt"], "1970-01-01T00:05:01.000Z");
    }
}
