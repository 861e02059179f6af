//! The status body (spec §2.7): what `GET /v1/identity/verify/:id` returns and what
//! `verification.completed` carries (CONTRACT §8).

use idconsent_kernel::id::VerificationId;
use idconsent_kernel::{Environment, Timestamp};
use serde::Serialize;

use crate::chip::ChipDetails;
use crate::model::{
    CheckName, Checks, ExtractedData, Finding, LivenessSignals, ModelUsed, Verification,
};
use idconsent_webhook::EventType;

// The event types this domain emits (the webhook crate knows none by name).
/// `verification.completed`: An identity verification reached its result.
pub const VERIFICATION_COMPLETED: EventType = EventType::declared("verification.completed");

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusBody<'a> {
    pub verification_id: &'a VerificationId,
    /// `processing`, `verified`, `rejected` or `needs_review`.
    pub status: &'static str,
    pub document_type: &'static str,
    pub country: &'a str,
    /// `None` while processing.
    pub confidence: Option<f64>,
    pub checks: Option<ChecksBody<'a>>,
    pub extracted_data: Option<&'a ExtractedData>,
    /// Why each check came out as it did.
    pub findings: &'a [Finding],
    pub face_distance: Option<f64>,
    pub liveness_signals: Option<&'a LivenessSignals>,
    /// The models the result depended on.
    pub models: &'a [ModelUsed],
    /// Made with a sandbox key: analysed the same way, never billed.
    pub sandbox: bool,
    pub created_at: Timestamp,
    pub completed_at: Option<Timestamp>,
}

impl<'a> StatusBody<'a> {
    pub fn of(verification: &'a Verification) -> Self {
        let outcome = verification.outcome.as_ref();
        Self {
            verification_id: &verification.id,
            status: verification.status().as_str(),
            document_type: verification.document_type.as_str(),
            country: &verification.country,
            confidence: outcome.map(|outcome| outcome.confidence),
            checks: outcome.map(|outcome| ChecksBody {
                results: &outcome.checks,
                required: &verification.policy.required_checks,
                details: CheckDetails {
                    chip: verification.chip.as_ref().map(|chip| &chip.details),
                },
            }),
            extracted_data: outcome.and_then(|outcome| outcome.extracted_data.as_ref()),
            findings: outcome.map_or(&[], |outcome| outcome.findings.as_slice()),
            face_distance: outcome.and_then(|outcome| outcome.face_distance),
            liveness_signals: outcome.and_then(|outcome| outcome.liveness_signals.as_ref()),
            models: outcome.map_or(&[], |outcome| outcome.models.as_slice()),
            sandbox: verification.environment == Environment::Sandbox,
            created_at: verification.created_at,
            completed_at: outcome.map(|outcome| outcome.completed_at),
        }
    }
}

/// The checks' results, which of them the request required, and what the chip proved.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChecksBody<'a> {
    #[serde(flatten)]
    pub results: &'a Checks,
    /// Every one must pass for `verified`.
    pub required: &'a [CheckName],
    pub details: CheckDetails<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckDetails<'a> {
    /// `None` when no chip was sent.
    pub chip: Option<&'a ChipDetails>,
}
