//! The status body as documented API types; built from the domain's `StatusBody`, which the
//! `verification.completed` event carries, so the two agree field for field.

use idconsent_kernel::Timestamp;
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
    /// `passed`, `failed` or `inconclusive` (no security-feature model runs offline: at best
    /// `inconclusive`; `failed` on inconsistent data).
    document_authenticity: &'static str,
    /// `passed`, `failed` or `inconclusive`.
    face_match: &'static str,
    /// `failed` when a replay or print cue is found, else `inconclusive` (heuristics never pass).
    liveness_detection: &'static str,
    /// `completed` (every check digit or the barcode's structure holds) or `failed`.
    data_extraction: &'static str,
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
                document_authenticity: check(checks.document_authenticity),
                face_match: check(checks.face_match),
                liveness_detection: check(checks.liveness_detection),
                data_extraction: match checks.data_extraction {
                    Extraction::Completed => "completed",
                    Extraction::Failed => "failed",
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
