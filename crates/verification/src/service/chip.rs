//! The chip on a verification (issue 33): challenges, the evidence's validation, and the proof
//! run at submission — where the challenge is taken (single use) and its freshness judged, so
//! the raw chip files never need to be kept.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::ValidationErrors;

use super::{Requester, VerificationService, unavailable};
use crate::chip::{
    ActiveAuthenticationAnswer, ChipChallenge, ChipCheck, ChipEvidence, ChipEvidenceError,
    ChipFiles, ChipResult, ChipVerifierError, MAX_AA_SIGNATURE, MAX_DG1, MAX_DG2, MAX_SMALL_DG,
    MAX_SOD, Portrait, judge_chip, portrait_readable, unverified_chip,
};
use crate::error::VerificationError;
use crate::model::{CheckName, DocumentType, Finding, Policy};

/// The `chip` object as received: base64 of each file's whole TLV.
#[derive(Clone, Default)]
pub struct ChipInput {
    pub dg1: String,
    pub dg2: String,
    pub dg11: Option<String>,
    pub dg14: Option<String>,
    pub dg15: Option<String>,
    pub sod: String,
    /// `(challenge, signature)`, base64.
    pub active_authentication: Option<(String, String)>,
}

impl fmt::Debug for ChipInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Personal data: sizes only.
        f.debug_struct("ChipInput")
            .field("dg1_len", &self.dg1.len())
            .field("dg2_len", &self.dg2.len())
            .field("sod_len", &self.sod.len())
            .finish_non_exhaustive()
    }
}

/// The field name of a file in the body, for errors.
fn field(name: &str) -> String {
    format!("chip.{name}")
}

/// Base64 → bytes, refusing text far over `max` before decoding it.
fn decode(errors: &mut ValidationErrors, name: &str, text: &str, max: usize) -> Option<Vec<u8>> {
    if text.len() / 4 * 3 > max + 2 {
        errors.push(field(name), format!("must be at most {max} bytes"));
        return None;
    }
    match BASE64.decode(text.trim()) {
        Ok(bytes) => Some(bytes),
        Err(_) => {
            errors.push(field(name), "must be base64 (standard alphabet, padded)");
            None
        }
    }
}

fn evidence_field(error: &ChipEvidenceError) -> &'static str {
    match error {
        ChipEvidenceError::Empty { field }
        | ChipEvidenceError::TooLarge { field, .. }
        | ChipEvidenceError::WrongTag { field, .. }
        | ChipEvidenceError::BadLength { field } => field,
        ChipEvidenceError::ChallengeLength => "activeAuthentication.challenge",
        ChipEvidenceError::SignatureLength => "activeAuthentication.signature",
    }
}

/// `requiredChecks` and `requireCloneDetection` of a request.
pub(super) fn policy(
    errors: &mut ValidationErrors,
    required: Option<&[String]>,
    require_clone_detection: Option<bool>,
) -> Policy {
    let mut policy = Policy::default();
    if let Some(require) = require_clone_detection {
        policy.require_clone_detection = require;
    }
    if let Some(names) = required {
        let mut checks = Vec::new();
        for name in names {
            match CheckName::parse(name) {
                Some(check) => checks.push(check),
                None => errors.push(
                    "requiredChecks",
                    format!(
                        "{name:?} is not a check; use documentAuthenticity, faceMatch, livenessDetection or dataExtraction"
                    ),
                ),
            }
        }
        if names.is_empty() {
            errors.push("requiredChecks", "must name at least one check");
        }
        checks.sort();
        checks.dedup();
        if !checks.is_empty() {
            policy.required_checks = checks;
        }
    }
    policy
}

impl VerificationService {
    /// A fresh challenge for `requester`'s application, kept five minutes for one answer.
    pub async fn issue_chip_challenge(
        &self,
        requester: &Requester,
    ) -> Result<ChipChallenge, VerificationError> {
        let challenge = ChipChallenge::issue(
            requester.application_id.clone(),
            self.ports.random.as_ref(),
            self.now(),
        );
        self.ports
            .chip_challenges
            .issue(&challenge)
            .await
            .map_err(unavailable)?;
        Ok(challenge)
    }

    /// The chip's files as evidence, each error under its `chip.…` field.
    pub(super) fn check_chip(
        &self,
        errors: &mut ValidationErrors,
        input: &ChipInput,
        document_type: Option<DocumentType>,
    ) -> Option<ChipEvidence> {
        if document_type == Some(DocumentType::DriversLicense) {
            errors.push("chip", "is read from passports and ID cards, not licences");
            return None;
        }
        let mut ok = true;
        let mut file = |name: &str, text: &str, max: usize| {
            let bytes = decode(errors, name, text, max);
            ok &= bytes.is_some();
            bytes.unwrap_or_default()
        };
        let dg1 = file("dg1", &input.dg1, MAX_DG1);
        let dg2 = file("dg2", &input.dg2, MAX_DG2);
        let dg11 = input
            .dg11
            .as_deref()
            .map(|text| file("dg11", text, MAX_SMALL_DG));
        let dg14 = input
            .dg14
            .as_deref()
            .map(|text| file("dg14", text, MAX_SMALL_DG));
        let dg15 = input
            .dg15
            .as_deref()
            .map(|text| file("dg15", text, MAX_SMALL_DG));
        let sod = file("sod", &input.sod, MAX_SOD);
        let active_authentication =
            input
                .active_authentication
                .as_ref()
                .map(|(challenge, signature)| ActiveAuthenticationAnswer {
                    challenge: file("activeAuthentication.challenge", challenge, 64),
                    signature: file(
                        "activeAuthentication.signature",
                        signature,
                        MAX_AA_SIGNATURE,
                    ),
                });
        if !ok {
            return None;
        }
        let files = ChipFiles {
            dg1,
            dg2,
            dg11,
            dg14,
            dg15,
            sod,
            active_authentication,
        };
        match ChipEvidence::new(files) {
            Ok(evidence) => Some(evidence),
            Err(error) => {
                let message = error.to_string();
                let name = evidence_field(&error);
                // The message starts with the field's own name; keep only what follows.
                let message = message.strip_prefix(name).unwrap_or(&message).trim_start();
                errors.push(field(name), message.to_owned());
                None
            }
        }
    }

    /// Takes the answered challenge (refusing the request when this application has no such
    /// live challenge: never issued, expired, used, or another application's), then proves the
    /// chip. A verifier that cannot run leaves authenticity `inconclusive`, saying why.
    pub(super) async fn prove_chip(
        &self,
        requester: &Requester,
        evidence: ChipEvidence,
        document_type: DocumentType,
        policy: &Policy,
    ) -> Result<(ChipResult, Option<Portrait>), VerificationError> {
        let now = self.now();
        let issued_challenge = match evidence.active_authentication() {
            None => None,
            Some(answer) => {
                let taken = self
                    .ports
                    .chip_challenges
                    .take(&requester.application_id, answer.challenge(), now)
                    .await
                    .map_err(unavailable)?;
                match taken {
                    Some(challenge) => Some(*challenge.bytes()),
                    None => {
                        let mut errors = ValidationErrors::new();
                        errors.push(
                            "chip.activeAuthentication.challenge",
                            "was not issued to this application, has expired or was already used; ask POST /v1/identity/chip-challenge for a fresh one",
                        );
                        return Err(VerificationError::Invalid(errors));
                    }
                }
            }
        };
        let check = ChipCheck {
            evidence,
            issued_challenge,
            at: now,
        };
        let require = policy.require_clone_detection;
        let (mut result, portrait) = match self.ports.chip_verifier.verify(check).await {
            Ok(report) => judge_chip(&report, document_type, require),
            Err(ChipVerifierError::Unavailable(reason)) => {
                (unverified_chip(&reason, require), None)
            }
        };
        let portrait = match portrait {
            Some(portrait) if portrait_readable(portrait.format) => Some(portrait),
            Some(_) => {
                result.findings.push(Finding::new(
                    "faceMatch",
                    "the chip's portrait is JPEG 2000, which this build does not decode: the selfie is compared with the document photo",
                ));
                None
            }
            None => None,
        };
        Ok((result, portrait))
    }
}
