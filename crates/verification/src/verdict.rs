//! From measurements to checks, status and confidence — the documented rule of
//! docs/identity.md, as pure functions.

use idconsent_kernel::{CalendarDate, Timestamp};

use crate::aamva::{AamvaError, parse_aamva};
use crate::analysis::{AnalysisError, FaceComparison, FaceSource};
use crate::chip::ChipResult;
use crate::liveness::{self, FacePresence, LivenessVerdict};
use crate::model::{
    CheckName, CheckResult, Checks, DocumentType, ExtractedData, Extraction, Finding,
    LivenessSignals, ModelUsed, Outcome, Policy, VerificationStatus,
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
    /// What the chip proved, when one was sent.
    pub chip: Option<ChipResult>,
    /// The face was compared with the chip's portrait, not the document photo.
    pub face_from_chip: bool,
}

struct DocumentVerdict {
    extraction: Extraction,
    authenticity: CheckResult,
    data: Option<ExtractedData>,
    expired: bool,
}

/// The outcome of a verification of `document_type` analysed at `now`.
pub fn conclude(
    document_type: DocumentType,
    readings: Readings,
    policy: &Policy,
    now: Timestamp,
) -> Outcome {
    let mut findings = Vec::new();
    let document = match &readings.chip {
        None => judge_document(document_type, &readings.document, now, &mut findings),
        Some(chip) => {
            let mut photo_findings = Vec::new();
            let photo = judge_document(document_type, &readings.document, now, &mut photo_findings);
            with_chip(photo, photo_findings, chip, now, &mut findings)
        }
    };
    let (face_match, face_distance) =
        judge_face(&readings.face, readings.face_from_chip, &mut findings);
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
    let status = status_of(&checks, document.expired, &policy.required_checks);
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

/// `rejected` when the document is inconsistent or expired or the faces differ; `verified` when
/// every check in `required` passed (issue 33: the merchant says which were asked, and the
/// status body lists them); otherwise `needs_review` (a heuristic alone never rejects: a
/// liveness cue sends the case to a person).
pub fn status_of(checks: &Checks, expired: bool, required: &[CheckName]) -> VerificationStatus {
    if expired
        || checks.document_authenticity == CheckResult::Failed
        || checks.face_match == CheckResult::Failed
    {
        return VerificationStatus::Rejected;
    }
    // An empty list is refused at submission; never let one pass everything.
    if !required.is_empty() && required.iter().all(|check| check.passed_in(checks)) {
        VerificationStatus::Verified
    } else {
        VerificationStatus::NeedsReview
    }
}

/// The document verdict when a chip was sent: authenticity is the chip's; the identity is
/// DG1's when passive authentication passed (else the photo's); a photographed MRZ that
/// differs from DG1 in document number, dates or nationality fails authenticity.
fn with_chip(
    photo: DocumentVerdict,
    photo_findings: Vec<Finding>,
    chip: &ChipResult,
    now: Timestamp,
    findings: &mut Vec<Finding>,
) -> DocumentVerdict {
    findings.extend(chip.findings.iter().cloned());
    // What the photo showed about reading it; its offline "consistent" remark is moot here.
    let photo_failed = photo.authenticity == CheckResult::Failed;
    for finding in photo_findings {
        if finding.check != "documentAuthenticity" || photo_failed {
            findings.push(Finding::new(
                &finding.check,
                format!("photo: {}", finding.reason),
            ));
        }
    }
    let mut authenticity = chip.authenticity;
    if photo_failed {
        authenticity = CheckResult::Failed;
    }
    match (&chip.data, &photo.data) {
        (Some(chip_data), Some(photo_data)) => {
            let differing: Vec<&str> = [
                (
                    "document number",
                    chip_data.document_number == photo_data.document_number,
                ),
                (
                    "date of birth",
                    chip_data.date_of_birth == photo_data.date_of_birth,
                ),
                (
                    "expiry date",
                    chip_data.expiry_date == photo_data.expiry_date,
                ),
                (
                    "nationality",
                    chip_data.nationality == photo_data.nationality,
                ),
            ]
            .into_iter()
            .filter_map(|(field, same)| (!same).then_some(field))
            .collect();
            if differing.is_empty() {
                findings.push(Finding::new(
                    "documentAuthenticity",
                    "chip: DG1 equals the photographed MRZ",
                ));
            } else {
                findings.push(Finding::new(
                    "documentAuthenticity",
                    format!(
                        "chip: DG1 differs from the photographed MRZ in {}",
                        differing.join(", ")
                    ),
                ));
                authenticity = CheckResult::Failed;
            }
        }
        (Some(_), None) => findings.push(Finding::new(
            "documentAuthenticity",
            "chip: the photographed MRZ was not read, so DG1 was not compared with it",
        )),
        (None, _) => {}
    }
    let (data, extraction) = match &chip.data {
        Some(data) => (Some(data.clone()), Extraction::Completed),
        None => (photo.data, photo.extraction),
    };
    let expired = data
        .as_ref()
        .is_some_and(|data| data.expiry_date < CalendarDate::of(now));
    if expired && chip.data.is_some() {
        findings.push(Finding::new(
            "dataExtraction",
            format!(
                "the document expired on {}",
                data.as_ref()
                    .map(|data| data.expiry_date.to_string())
                    .unwrap_or_default()
            ),
        ));
    }
    DocumentVerdict {
        extraction,
        authenticity,
        data,
        expired,
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
    from_chip: bool,
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
            let reference = if from_chip {
                "the chip's portrait"
            } else {
                "the document photo"
            };
            note(format!(
                "embedding distance {distance} to {reference} (same person ≤ {FACE_MATCH}, different ≥ {FACE_MISMATCH})"
            ));
            (check, Some(distance))
        }
        Ok(FaceComparison::NoFace(source)) => {
            note(match source {
                FaceSource::Document if from_chip => "no face found in the chip's portrait".into(),
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
pub(crate) fn mrz_mismatch(document_type: DocumentType, mrz: &MrzData) -> Option<String> {
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

pub(crate) fn mrz_data(mrz: &MrzData) -> ExtractedData {
    ExtractedData {
        first_name: mrz.given_names.clone(),
        last_name: mrz.surname.clone(),
        date_of_birth: mrz.birth_date,
        document_number: mrz.document_number.clone(),
        expiry_date: mrz.expiry_date,
        nationality: mrz.nationality.clone(),
    }
}
