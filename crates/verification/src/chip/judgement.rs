//! From what a chip proved, and what the merchant asked, to document authenticity (issue 33):
//! the only way that check passes.

use serde::{Deserialize, Serialize};

use super::evidence::DataGroup;
use super::report::{
    ActiveAuthentication, ChipReport, CscaAnchor, DocumentSigner, PassiveAuthentication, Portrait,
    PortraitFormat, Revocation,
};
use crate::model::{CheckResult, DocumentType, ExtractedData, Finding};
use crate::verdict::{mrz_data, mrz_mismatch};

/// `checks.details.chip` (CONTRACT §10): what each chip check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChipDetails {
    /// `passed`, `failed`, or `not_checked` when no verifier ran (no trust store).
    pub passive_authentication: String,
    /// Why passive authentication failed (a stable code, e.g. `data_group_hash_mismatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passive_failure: Option<String>,
    /// `passed`, `failed`, `not_supported` (no DG15), `not_attempted` (no answer sent) or
    /// `not_checked`.
    pub active_authentication: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_failure: Option<String>,
    /// `not_verified` (DG14 offers it; only the reader can run it) or `not_supported`.
    pub chip_authentication: String,
    /// The data groups whose hash matched the SOD's.
    pub data_groups_verified: Vec<DataGroup>,
    pub document_signer: Option<DocumentSigner>,
    pub csca: Option<CscaAnchor>,
    /// The request's `requireCloneDetection`.
    pub clone_detection_required: bool,
}

/// A chip's result, judged at submission and kept with the verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChipResult {
    pub details: ChipDetails,
    /// Document authenticity as the chip decides it.
    pub authenticity: CheckResult,
    pub findings: Vec<Finding>,
    /// DG1's identity, only when passive authentication passed.
    pub data: Option<ExtractedData>,
}

const CHECK: &str = "documentAuthenticity";

/// What `report` proves under the request's policy. The authentic portrait is returned apart:
/// its bytes are kept as an image, not in the result.
pub fn judge_chip(
    report: &ChipReport,
    document_type: DocumentType,
    require_clone_detection: bool,
) -> (ChipResult, Option<Portrait>) {
    let mut findings = Vec::new();
    let mut note = |reason: String| findings.push(Finding::new(CHECK, reason));
    let passive = &report.passive_authentication;
    let active = &report.active_authentication;
    let mut authenticity = match (passive, active) {
        (PassiveAuthentication::Failed(failure), _) => {
            note(format!("chip: passive authentication failed: {failure}"));
            CheckResult::Failed
        }
        (PassiveAuthentication::Passed, ActiveAuthentication::Failed(failure)) => {
            note(format!(
                "chip: active authentication failed ({failure}): the chip may be a copy"
            ));
            CheckResult::Failed
        }
        (PassiveAuthentication::Passed, ActiveAuthentication::Passed) => {
            note("chip: the issuing state's signature over the data groups verifies, and the chip signed this server's fresh challenge with the key of its DG15 (not a copy)".into());
            CheckResult::Passed
        }
        (PassiveAuthentication::Passed, other) => {
            let why = match other {
                ActiveAuthentication::NotSupported => "the chip has no DG15",
                _ => "no active-authentication answer was sent",
            };
            if require_clone_detection {
                note(format!(
                    "chip: the data is the issuing state's, but the chip did not prove it is not a copy ({why}) and this request requires clone detection"
                ));
                CheckResult::Inconclusive
            } else {
                note(format!(
                    "chip: passive authentication only ({why}): the data is the issuing state's, but a copy of the chip would pass too; this request does not require clone detection"
                ));
                CheckResult::Passed
            }
        }
    };
    match report.revocation {
        Revocation::NotChecked if passive.passed() => note(
            "chip: no CRL of the issuing CSCA is configured; the document signer's revocation was not checked".into(),
        ),
        Revocation::NotRevoked { stale: true } => {
            note("chip: the CSCA's CRL is past its next update".into());
        }
        _ => {}
    }
    let data = report.authentic_mrz().map(|mrz| {
        if let Some(problem) = mrz_mismatch(document_type, mrz) {
            note(format!("chip: DG1: {problem}"));
            authenticity = CheckResult::Failed;
        }
        mrz_data(mrz)
    });
    for problem in &report.content_problems {
        findings.push(Finding::new(
            "dataExtraction",
            format!(
                "chip: {} could not be read: {}",
                problem.data_group, problem.reason
            ),
        ));
    }
    let details = ChipDetails {
        passive_authentication: passive.as_str().into(),
        passive_failure: match passive {
            PassiveAuthentication::Failed(failure) => Some(failure.code().into()),
            PassiveAuthentication::Passed => None,
        },
        active_authentication: active.as_str().into(),
        active_failure: match active {
            ActiveAuthentication::Failed(failure) => Some(failure.code().into()),
            _ => None,
        },
        chip_authentication: report.chip_authentication.as_str().into(),
        data_groups_verified: report.data_groups_verified.clone(),
        document_signer: report.document_signer.clone(),
        csca: report.csca.clone(),
        clone_detection_required: require_clone_detection,
    };
    let result = ChipResult {
        details,
        authenticity,
        findings,
        data,
    };
    (result, report.authentic_portrait().cloned())
}

/// The result when no verifier could run (`reason`: e.g. no CSCA is trusted on this server):
/// nothing is claimed either way.
pub fn unverified_chip(reason: &str, require_clone_detection: bool) -> ChipResult {
    const NOT_CHECKED: &str = "not_checked";
    ChipResult {
        details: ChipDetails {
            passive_authentication: NOT_CHECKED.into(),
            passive_failure: None,
            active_authentication: NOT_CHECKED.into(),
            active_failure: None,
            chip_authentication: NOT_CHECKED.into(),
            data_groups_verified: Vec::new(),
            document_signer: None,
            csca: None,
            clone_detection_required: require_clone_detection,
        },
        authenticity: CheckResult::Inconclusive,
        findings: vec![Finding::new(CHECK, format!("chip: not verified: {reason}"))],
        data: None,
    }
}

/// Whether the face matcher can read a portrait of `format`.
pub fn portrait_readable(format: PortraitFormat) -> bool {
    // The image decoders here read JPEG; JPEG 2000 has no decoder in this build (ADR 0041).
    format == PortraitFormat::Jpeg
}
