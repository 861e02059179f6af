//! The mandate body (spec §2.5): what the API returns and what `mandate.signed` carries
//! (CONTRACT §8), so the two never disagree.

use idconsent_approval::Recipient;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::MandateId;
use serde::Serialize;

use crate::model::{Mandate, Terms};
use idconsent_webhook::EventType;

// The event types this domain emits (the webhook crate knows none by name).
/// `mandate.signed`: The recipient authorised a mandate.
pub const MANDATE_SIGNED: EventType = EventType::declared("mandate.signed");

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MandateBody<'a> {
    pub id: &'a MandateId,
    /// As of `now`: `pending_authorization`, `active`, `cancelled` or `expired`.
    pub status: &'static str,
    /// The phone (E.164) or the email address.
    pub recipient: &'a str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The maximum amount in major units, `null` when none.
    pub amount: Option<f64>,
    pub currency: &'a str,
    pub frequency: Option<&'static str>,
    pub description: &'a str,
    pub callback_url: Option<&'a str>,
    /// While new terms await re-authorisation: the terms authorised before.
    pub authorized_terms: Option<TermsBody<'a>>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub authorized_at: Option<Timestamp>,
    /// When the pending authorisation lapses; `null` unless pending.
    pub authorization_expires_at: Option<Timestamp>,
    pub cancelled_at: Option<Timestamp>,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct TermsBody<'a> {
    pub amount: Option<f64>,
    pub currency: &'a str,
    pub frequency: Option<&'static str>,
}

impl<'a> TermsBody<'a> {
    pub fn of(terms: &'a Terms) -> Self {
        Self {
            amount: terms.amount.map(|amount| amount.major_f64()),
            currency: terms.currency.code(),
            frequency: terms.frequency.map(|frequency| frequency.as_str()),
        }
    }
}

pub fn recipient_text(recipient: &Recipient) -> &str {
    match recipient {
        Recipient::Phone(phone) => phone.as_str(),
        Recipient::Email(email) => email.as_str(),
    }
}

impl<'a> MandateBody<'a> {
    pub fn of(mandate: &'a Mandate, now: Timestamp) -> Self {
        let terms = TermsBody::of(&mandate.terms);
        Self {
            id: &mandate.id,
            status: mandate.status_at(now).as_str(),
            recipient: recipient_text(&mandate.recipient),
            kind: mandate.kind.as_str(),
            amount: terms.amount,
            currency: terms.currency,
            frequency: terms.frequency,
            description: &mandate.description,
            callback_url: mandate.callback_url.as_deref(),
            authorized_terms: mandate.authorized_terms.as_ref().map(TermsBody::of),
            created_at: mandate.created_at,
            updated_at: mandate.updated_at,
            authorized_at: mandate.authorized_at,
            authorization_expires_at: mandate
                .authorization_deadline
                .filter(|deadline| *deadline > now),
            cancelled_at: mandate.cancelled_at,
        }
    }
}
