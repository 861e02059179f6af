//! The status body (spec §2.6): what `GET /v1/signature/documents/:id` returns and what
//! `signature.completed` carries (CONTRACT §8).

use idconsent_kernel::Timestamp;
use idconsent_kernel::id::SignatureRequestId;
use serde::Serialize;

use crate::model::SignatureRequest;
use idconsent_webhook::EventType;

// The event types this domain emits (the webhook crate knows none by name).
/// `signature.completed`: The last signer signed a signature request.
pub const SIGNATURE_COMPLETED: EventType = EventType::declared("signature.completed");

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusBody<'a> {
    pub signature_request_id: &'a SignatureRequestId,
    /// `pending`, `completed`, `declined` or `expired`.
    pub status: &'static str,
    pub completed_at: Option<Timestamp>,
    pub signers: Vec<SignerStatusBody<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignerStatusBody<'a> {
    pub email: &'a str,
    pub name: &'a str,
    /// `awaiting_signature`, `signed` or `declined`.
    pub status: &'static str,
    pub signed_at: Option<Timestamp>,
    pub ip_address: Option<&'a str>,
    pub biometric_verified: bool,
}

impl<'a> StatusBody<'a> {
    /// The request as of `now` (a pending request past its expiry reads `expired`).
    pub fn of(request: &'a SignatureRequest, now: Timestamp) -> Self {
        Self {
            signature_request_id: &request.id,
            status: request.status_at(now).as_str(),
            completed_at: request.completed_at,
            signers: request
                .signers
                .iter()
                .map(|signer| SignerStatusBody {
                    email: signer.email.as_str(),
                    name: &signer.name,
                    status: signer.status.as_str(),
                    signed_at: signer
                        .decided_at
                        .filter(|_| signer.status == crate::model::SignerStatus::Signed),
                    ip_address: signer.ip_address.as_deref(),
                    biometric_verified: signer.biometric_verified,
                })
                .collect(),
        }
    }
}
