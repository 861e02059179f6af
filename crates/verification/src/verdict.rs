//! From measurements to checks, status and confidence — the documented rule of
//! docs/identity.md, as pure functions.

use idconsent_kernel::{CalendarDate, Timestamp};

use crate::aamva::{AamvaError, parse_aamva};
use crate::analysis::{AnalysisError, FaceComparison, FaceSource};
use crate::liveness::{self, FacePresence, LivenessVerdict};
use crate::model::{
    CheckResult, Checks, DocumentType, ExtractedData, Extraction, Finding, LivenessSignals,
    ModelUsed, Outcome, VerificationStatus,
};
use crate::mrz::{MrzData, MrzError, MrzFormat, parse_mrz};

/// At or below this embedding distance the selfie is the document's holder (dlib's ResNet
/// model: 0.6 separates people with 99.38% accuracy on LFW; we ask for a margin).
pub const FACE_MATCH: f64 = 0.5;
/// At or above this distance they are different people.
pub const FACE_MISMATCH: f64 = 0.65;

/// What the document gave.
#[derive(Debug, Clone)]
pub enum DocumentRead {
    /// OCR text of the MRZ (passports, ID cards).
    Mrz(Result<String, AnalysisError>),
    /// The PDF417 payload of a licence back.
    Barcode(Result<Option<String>, AnalysisError>),
}

/// Every measurement of one verification.
#[derive(Debug, Clone)]
pub struct Readings {
    pub document: DocumentRead,
    pub face: Result<FaceComparison, AnalysisError>,
    pub liveness: Result<LivenessSignals, AnalysisError>,
    pub models: Vec<ModelUsed>,
}

struct DocumentVerdict {
    extraction: Extraction,
    authenticity: CheckResult,
    data: Option<ExtractedData>,
    expired: bool,
}

/// The outcome of a verification of `document_type` analysed at `now`.
pub fn conclude(document_type: DocumentType, readings: Readings, now: Timestamp) -> Outcome {
    let mut findings = Vec::new();
    let document = judge_document(document_type, &readings.document, now, &mut findings);
    let (face_match, face_distance) = judge_face(&readings.face, &mut findings);
    let (liveness_detection, liveness_signals) = match &readings.liveness {
        Ok(signals) => {
            let verdict: LivenessVerdict =
                liveness::judge(signals, &face_in_selfie(&readings.face));
            for note in verdict.notes {
                findings.push(Finding::new("livenessDetection", note));
            }
            (verdict.check, Some(*signals))
        }
        Err(error) => {
            findings.push(Finding::new("livenessDetection", error.to_string()));
            (CheckResult::Inconclusive, None)
        }
    };
    let checks = Checks {
        document_authenticity: document.authenticity,
        face_match,
        liveness_detection,
        data_extraction: document.extraction,
    };
    let status = status_of(&checks, document.expired);
    Outcome {
        status,
        confidence: confidence_of(&checks, face_distance),
        checks,
        extracted_data: document.data,
        findings,
        face_distance,
        liveness_signals,
        models: readings.models,
        completed_at: now,
    }
}

/// What the face comparison showed about the selfie: a distance needs a face in it; a comparison
/// that stopped at the document never looked at the selfie.
fn face_in_selfie(face: &Result<FaceComparison, AnalysisError>) -> FacePresence {
    match face {
        Ok(FaceComparison::Distance(_)) => FacePresence::Found,
        Ok(FaceComparison::NoFace(FaceSource::Selfie)) => FacePresence::NotFound,
        Ok(FaceComparison::NoFace(FaceSource::Document)) => {
            FacePresence::NotChecked("the document shows no face to compare with".into())
        }
        Err(error) => FacePresence::NotChecked(error.to_string()),
    }
}

/// `rejected` when the document is inconsistent or expired or the faces differ; `verified` only
/// when the data was read and every check passed; otherwise `needs_review` (a heuristic alone
/// never rejects: a liveness cue sends the case to a person).
pub fn status_of(checks: &Checks, expired: bool) -> VerificationStatus {
    if expired
        || checks.document_authenticity == CheckResult::Failed
        || checks.face_match == CheckResult::Failed
    {
        return VerificationStatus::Rejected;
    }
    let all_passed = [
        checks.document_authenticity,
        checks.face_match,
        checks.liveness_detection,
    ]
    .iter()
    .all(|check| *check == CheckResult::Passed);
    if all_passed && checks.data_extraction == Extraction::Completed {
        VerificationStatus::Verified
    } else {
        VerificationStatus::NeedsReview
    }
}

/// The mean of the four checks' scores: passed 1 (a face match scores `1 − distance`),
/// inconclusive 0.5, failed 0; data extraction completed 1, failed 0. Two decimals.
pub fn confidence_of(checks: &Checks, face_distance: Option<f64>) -> f64 {
    let score = |check: CheckResult| match check {
        CheckResult::Passed => 1.0,
        CheckResult::Inconclusive => 0.5,
        CheckResult::Failed => 0.0,
    };
    let face = match (checks.face_match, face_distance) {
        (CheckResult::Passed, Some(distance)) => (1.0 - distance).clamp(0.5, 1.0),
        (check, _) => score(check),
    };
    let extraction = match checks.data_extraction {
        Extraction::Completed => 1.0,
        Extraction::Failed => 0.0,
    };
    let mean = (score(checks.document_authenticity)
        + face
        + score(checks.liveness_detection)
        + extraction)
        / 4.0;
    (mean * 100.0).round() / 100.0
}

fn judge_face(
    comparison: &Result<FaceComparison, AnalysisError>,
    findings: &mut Vec<Finding>,
) -> (CheckResult, Option<f64>) {
    let mut note = |reason: String| findings.push(Finding::new("faceMatch", reason));
    match comparison {
        Ok(FaceComparison::Distance(distance)) => {
            let distance = (distance * 1000.0).round() / 1000.0;
            let check = if distance <= FACE_MATCH {
                CheckResult::Passed
            } else if distance >= FACE_MISMATCH {
                CheckResult::Failed
            } else {
                CheckResult::Inconclusive
            };
            note(format!(
                "embedding distance {distance} (same person ≤ {FACE_MATCH}, different ≥ {FACE_MISMATCH})"
            ));
            (check, Some(distance))
        }
        Ok(FaceComparison::NoFace(source)) => {
            note(match source {
                FaceSource::Document => "no face found on the document's front".into(),
                FaceSource::Selfie => "no face found in the selfie".into(),
            });
            (CheckResult::Inconclusive, None)
        }
        Err(error) => {
            note(error.to_string());
            (CheckResult::Inconclusive, None)
        }
    }
}

fn judge_document(
    document_type: DocumentType,
    read: &DocumentRead,
    now: Timestamp,
    findings: &mut Vec<Finding>,
) -> DocumentVerdict {
    let unread = |authenticity| DocumentVerdict {
        extraction: Extraction::Failed,
        authenticity,
        data: None,
        expired: false,
    };
    let mut extraction_note =
        |reason: String| findings.push(Finding::new("dataExtraction", reason));
    let data = match read {
        DocumentRead::Mrz(Err(error)) | DocumentRead::Barcode(Err(error)) => {
            extraction_note(error.to_string());
            return unread(CheckResult::Inconclusive);
        }
        DocumentRead::Barcode(Ok(None)) => {
            extraction_note("no PDF417 barcode found on the back".into());
            return unread(CheckResult::Inconclusive);
        }
        DocumentRead::Mrz(Ok(text)) => match parse_mrz(text, CalendarDate::of(now).year()) {
            Ok(mrz) => {
                if let Some(problem) = mrz_mismatch(document_type, &mrz) {
                    extraction_note(problem);
                    let mut verdict = unread(CheckResult::Failed);
                    verdict.extraction = Extraction::Completed;
                    verdict.data = Some(mrz_data(&mrz));
                    return verdict;
                }
                mrz_data(&mrz)
            }
            Err(error) => {
                let inconsistent = matches!(error, MrzError::CheckDigit(_) | MrzError::BadDate(_));
                extraction_note(format!("machine-readable zone: {error}"));
                return unread(if inconsistent {
                    CheckResult::Failed
                } else {
                    CheckResult::Inconclusive
                });
            }
        },
        DocumentRead::Barcode(Ok(Some(payload))) => match parse_aamva(payload) {
            Ok(card) => ExtractedData {
                first_name: card.first_name,
                last_name: card.last_name,
                date_of_birth: card.date_of_birth,
                document_number: card.document_number,
                expiry_date: card.expiry_date,
                nationality: card.country,
            },
            Err(error) => {
                extraction_note(format!("PDF417 barcode: {error}"));
                return unread(if matches!(error, AamvaError::NotAamva) {
                    CheckResult::Inconclusive
                } else {
                    CheckResult::Failed
                });
            }
        },
    };

    let today = CalendarDate::of(now);
    let mut authenticity = CheckResult::Inconclusive;
    if data.date_of_birth > today {
        findings.push(Finding::new(
            "documentAuthenticity",
            "date of birth is in the future",
        ));
        authenticity = CheckResult::Failed;
    } else if data.date_of_birth >= data.expiry_date {
        findings.push(Finding::new(
            "documentAuthenticity",
            "document expires before its holder was born",
        ));
        authenticity = CheckResult::Failed;
    } else {
        findings.push(Finding::new(
            "documentAuthenticity",
            "data is consistent; security features (holograms, microprint) cannot be checked offline",
        ));
    }
    let expired = data.expiry_date < today;
    if expired {
        findings.push(Finding::new(
            "dataExtraction",
            format!("the document expired on {}", data.expiry_date),
        ));
    }
    DocumentVerdict {
        extraction: Extraction::Completed,
        authenticity,
        data: Some(data),
        expired,
    }
}

/// A passport's MRZ is TD3 with document code `P…`; an ID card's is TD1/TD2 with `I`, `A` or
/// `C`. A front that says otherwise is not the document claimed.
fn mrz_mismatch(document_type: DocumentType, mrz: &MrzData) -> Option<String> {
    let code = mrz.document_code.chars().next().unwrap_or('?');
    let fits = match document_type {
        DocumentType::Passport => mrz.format == MrzFormat::Td3 && code == 'P',
        DocumentType::NationalId => mrz.format != MrzFormat::Td3 && matches!(code, 'I' | 'A' | 'C'),
        DocumentType::DriversLicense => false,
    };
    (!fits).then(|| {
        format!(
            "the machine-readable zone is a {:?} document of type {}, not a {}",
            mrz.format,
            mrz.document_code,
            document_type.as_str()
        )
    })
}

fn mrz_data(mrz: &MrzData) -> ExtractedData {
    ExtractedData {
        first_name: mrz.given_names.clone(),
        last_name: mrz.surname.clone(),
        date_of_birth: mrz.birth_date,
        document_number: mrz.document_number.clone(),
        expiry_date: mrz.expiry_date,
        nationality: mrz.nationality.clone(),
    }
}
