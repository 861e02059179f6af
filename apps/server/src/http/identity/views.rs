//! The status body as documented API types; built from the domain's `StatusBody`, which the
//! `verification.completed` event carries, so the two agree field for field.

use idconsent_kernel::Timestamp;
use idconsent_verification::chip::ChipDetails;
use idconsent_verification::{CheckResult, Extraction, LivenessSignals, StatusBody, Verification};
use serde::Serialize;
use utoipa::ToSchema;

/// A verification (spec §2.7).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationStatus {
    /// `idv_…`
    verification_id: String,
    /// `processing`, `verified`, `rejected` or `needs_review`.
    status: &'static str,
    /// `passport`, `national_id` or `drivers_license`.
    document_type: &'static str,
    country: String,
    /// 0 to 1: the mean of the checks' scores (docs/identity.md); `null` while processing.
    #[schema(required = true)]
    confidence: Option<f64>,
    #[schema(required = true)]
    checks: Option<VerificationChecks>,
    #[schema(required = true)]
    extracted_data: Option<ExtractedDataBody>,
    /// Why each check came out as it did.
    findings: Vec<FindingBody>,
    /// The distance between the document's face and the selfie's, when both were compared.
    #[schema(required = true)]
    face_distance: Option<f64>,
    #[schema(required = true)]
    liveness_signals: Option<LivenessSignalsBody>,
    /// The models the result depended on.
    models: Vec<ModelBody>,
    /// Made with a sandbox key: analysed the same way, never billed.
    sandbox: bool,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    completed_at: Option<Timestamp>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationChecks {
    /// `passed` only through a chip whose data the issuing state signed (a CSCA this server
    /// trusts), and, unless `requireCloneDetection` was `false`, whose active authentication
    /// passed; `failed` on a failed chip check or inconsistent data; else `inconclusive` (no
    /// security-feature model runs on photos).
    document_authenticity: &'static str,
    /// `passed`, `failed` or `inconclusive`.
    face_match: &'static str,
    /// `failed` when a replay or print cue is found, else `inconclusive` (heuristics never pass).
    liveness_detection: &'static str,
    /// `completed` (every check digit or the barcode's structure holds) or `failed`.
    data_extraction: &'static str,
    /// The checks that had to pass for `verified` (the request's `requiredChecks`).
    required: Vec<&'static str>,
    details: CheckDetailsBody,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CheckDetailsBody {
    /// What the chip proved; `null` when no chip was sent.
    #[schema(required = true)]
    chip: Option<ChipDetailsBody>,
}

/// CONTRACT §10.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChipDetailsBody {
    /// `passed`, `failed`, or `not_checked` (no CSCA is trusted on this server).
    passive_authentication: String,
    /// Why it failed: `signature_invalid`, `untrusted_document_signer`,
    /// `document_signer_expired`, `data_group_hash_mismatch`, `data_group_not_signed`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    passive_failure: Option<String>,
    /// `passed`, `failed`, `not_supported` (no DG15), `not_attempted` (no answer) or
    /// `not_checked`.
    active_authentication: String,
    /// Why it failed: `signature_invalid`, `key_not_authenticated`, `bad_key`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    active_failure: Option<String>,
    /// `not_verified` (DG14 offers it; only the reader can run it), `not_supported` or
    /// `not_checked`.
    chip_authentication: String,
    /// The data groups whose hash equals the SOD's, e.g. `["DG1", "DG2"]`.
    data_groups_verified: Vec<String>,
    #[schema(required = true)]
    document_signer: Option<DocumentSignerBody>,
    #[schema(required = true)]
    csca: Option<CscaBody>,
    /// The request's `requireCloneDetection`.
    clone_detection_required: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentSignerBody {
    /// RFC 4514.
    subject: String,
    issuer: String,
    /// Lowercase hex.
    serial_number: String,
    #[schema(value_type = String, format = DateTime)]
    not_before: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    not_after: Timestamp,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CscaBody {
    subject: String,
    /// Lowercase hex of its subject key identifier.
    #[schema(required = true)]
    key_id: Option<String>,
}

impl ChipDetailsBody {
    fn of(details: &ChipDetails) -> Self {
        Self {
            passive_authentication: details.passive_authentication.clone(),
            passive_failure: details.passive_failure.clone(),
            active_authentication: details.active_authentication.clone(),
            active_failure: details.active_failure.clone(),
            chip_authentication: details.chip_authentication.clone(),
            data_groups_verified: details
                .data_groups_verified
                .iter()
                .map(ToString::to_string)
                .collect(),
            document_signer: details
                .document_signer
                .as_ref()
                .map(|signer| DocumentSignerBody {
                    subject: signer.subject.clone(),
                    issuer: signer.issuer.clone(),
                    serial_number: signer.serial_number.clone(),
                    not_before: signer.not_before,
                    not_after: signer.not_after,
                }),
            csca: details.csca.as_ref().map(|csca| CscaBody {
                subject: csca.subject.clone(),
                key_id: csca.key_id.clone(),
            }),
            clone_detection_required: details.clone_detection_required,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtractedDataBody {
    first_name: String,
    last_name: String,
    /// `YYYY-MM-DD`
    date_of_birth: String,
    document_number: String,
    /// `YYYY-MM-DD`
    expiry_date: String,
    /// ISO 3166-1 alpha-3 as printed.
    nationality: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FindingBody {
    /// `documentAuthenticity`, `faceMatch`, `livenessDetection` or `dataExtraction`.
    check: String,
    reason: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LivenessSignalsBody {
    /// The strongest spectral peak as a multiple of the power around it (screen moiré).
    moire: f64,
    /// The weaker of that peak and its perpendicular twin (a print's dot grid).
    halftone: f64,
    /// Variance of the Laplacian (blur).
    sharpness: f64,
    pixels: u64,
    screen_sized: bool,
    #[schema(required = true)]
    jpeg_quality: Option<u8>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ModelBody {
    name: String,
    version: String,
    sha256: String,
}

pub fn check(result: CheckResult) -> &'static str {
    match result {
        CheckResult::Passed => "passed",
        CheckResult::Failed => "failed",
        CheckResult::Inconclusive => "inconclusive",
    }
}

impl LivenessSignalsBody {
    pub fn of(signals: &LivenessSignals) -> Self {
        Self {
            moire: signals.moire,
            halftone: signals.halftone,
            sharpness: signals.sharpness,
            pixels: signals.pixels,
            screen_sized: signals.screen_sized,
            jpeg_quality: signals.jpeg_quality,
        }
    }
}

impl VerificationStatus {
    pub fn of(verification: &Verification) -> Self {
        let body = StatusBody::of(verification);
        Self {
            verification_id: body.verification_id.to_string(),
            status: body.status,
            document_type: body.document_type,
            country: body.country.to_owned(),
            confidence: body.confidence,
            checks: body.checks.map(|checks| VerificationChecks {
                document_authenticity: check(checks.results.document_authenticity),
                face_match: check(checks.results.face_match),
                liveness_detection: check(checks.results.liveness_detection),
                data_extraction: match checks.results.data_extraction {
                    Extraction::Completed => "completed",
                    Extraction::Failed => "failed",
                },
                required: checks.required.iter().map(|name| name.as_str()).collect(),
                details: CheckDetailsBody {
                    chip: checks.details.chip.map(ChipDetailsBody::of),
                },
            }),
            extracted_data: body.extracted_data.map(|data| ExtractedDataBody {
                first_name: data.first_name.clone(),
                last_name: data.last_name.clone(),
                date_of_birth: data.date_of_birth.to_string(),
                document_number: data.document_number.clone(),
                expiry_date: data.expiry_date.to_string(),
                nationality: data.nationality.clone(),
            }),
            findings: body
                .findings
                .iter()
                .map(|finding| FindingBody {
                    check: finding.check.clone(),
                    reason: finding.reason.clone(),
                })
                .collect(),
            face_distance: body.face_distance,
            liveness_signals: body.liveness_signals.map(LivenessSignalsBody::of),
            models: body
                .models
                .iter()
                .map(|model| ModelBody {
                    name: model.name.clone(),
                    version: model.version.clone(),
                    sha256: model.sha256.clone(),
                })
                .collect(),
            sandbox: body.sandbox,
            created_at: body.created_at,
            completed_at: body.completed_at,
        }
    }
}
