//! A verification: what the merchant sent, and once analysed, what each check found.

use idconsent_kernel::id::{ApplicationId, VerificationId};
use idconsent_kernel::{CalendarDate, Environment, Timestamp};
use serde::{Deserialize, Serialize};

/// Documents the service reads (spec §2.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentType {
    Passport,
    NationalId,
    DriversLicense,
}

impl DocumentType {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "passport" => Some(Self::Passport),
            "national_id" => Some(Self::NationalId),
            "drivers_license" => Some(Self::DriversLicense),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passport => "passport",
            Self::NationalId => "national_id",
            Self::DriversLicense => "drivers_license",
        }
    }

    /// ID cards carry their MRZ and licences their barcode on the back (CONTRACT §7).
    pub fn needs_back(self) -> bool {
        !matches!(self, Self::Passport)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerificationStatus {
    Processing,
    Verified,
    Rejected,
    NeedsReview,
}

impl VerificationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Processing => "processing",
            Self::Verified => "verified",
            Self::Rejected => "rejected",
            Self::NeedsReview => "needs_review",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Processing,
            Self::Verified,
            Self::Rejected,
            Self::NeedsReview,
        ]
        .into_iter()
        .find(|status| status.as_str() == text)
    }
}

/// A check's result (CONTRACT §7): `inconclusive` whenever the service could not really check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckResult {
    Passed,
    Failed,
    Inconclusive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Extraction {
    /// Every field was read and every check digit (or the barcode's structure) holds.
    Completed,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checks {
    pub document_authenticity: CheckResult,
    pub face_match: CheckResult,
    pub liveness_detection: CheckResult,
    pub data_extraction: Extraction,
}

/// The identity read off the document (spec §2.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtractedData {
    pub first_name: String,
    pub last_name: String,
    pub date_of_birth: CalendarDate,
    pub document_number: String,
    pub expiry_date: CalendarDate,
    /// ISO 3166-1 alpha-3 as printed (`UTO`, `USA`).
    pub nationality: String,
}

/// Why a check came out as it did, in words an operator can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// `documentAuthenticity`, `faceMatch`, `livenessDetection` or `dataExtraction`.
    pub check: String,
    pub reason: String,
}

impl Finding {
    pub fn new(check: &str, reason: impl Into<String>) -> Self {
        Self {
            check: check.into(),
            reason: reason.into(),
        }
    }
}

/// A model a result depended on, so a result can be traced to the exact file that made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsed {
    pub name: String,
    pub version: String,
    pub sha256: String,
}

/// Model-free signals measured on an image for liveness (see [`crate::liveness`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LivenessSignals {
    /// The strongest spectral peak outside the low frequencies, as a multiple of the power
    /// around it (the moiré of a photographed screen).
    pub moire: f64,
    /// The weaker of that peak and its perpendicular twin (the dot grid of a halftone print).
    pub halftone: f64,
    /// Variance of the Laplacian: low for a blurred re-photograph.
    pub sharpness: f64,
    /// Width × height in pixels.
    pub pixels: u64,
    /// Whether the image has exactly a common screen resolution (a screenshot).
    pub screen_sized: bool,
    /// JPEG quality estimated from its quantisation tables (`None` for other formats);
    /// very low quality suggests repeated re-encoding.
    pub jpeg_quality: Option<u8>,
}

/// What the analysis concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub status: VerificationStatus,
    pub confidence: f64,
    pub checks: Checks,
    pub extracted_data: Option<ExtractedData>,
    pub findings: Vec<Finding>,
    /// Distance between the document's face and the selfie's embeddings, when both were found.
    pub face_distance: Option<f64>,
    pub liveness_signals: Option<LivenessSignals>,
    pub models: Vec<ModelUsed>,
    pub completed_at: Timestamp,
}

/// Where the uploaded images are kept (keys of the kernel's `BlobStore`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Images {
    pub front: String,
    pub back: Option<String>,
    pub selfie: String,
    /// DG2's portrait, when the chip's passed passive authentication in a format the face
    /// matcher reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub portrait: Option<String>,
}

impl Images {
    /// Every key, the back's when there is one.
    pub fn keys(&self) -> impl Iterator<Item = String> + '_ {
        [
            Some(&self.front),
            self.back.as_ref(),
            Some(&self.selfie),
            self.portrait.as_ref(),
        ]
        .into_iter()
        .flatten()
        .cloned()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    pub id: VerificationId,
    pub application_id: ApplicationId,
    pub environment: Environment,
    pub document_type: DocumentType,
    /// ISO 3166-1 alpha-2, upper case.
    pub country: String,
    pub images: Images,
    pub callback_url: Option<String>,
    /// What the merchant asked for (`requiredChecks`, `requireCloneDetection`).
    pub policy: Policy,
    /// What the chip proved, judged at submission; `None` without a chip.
    pub chip: Option<crate::chip::ChipResult>,
    pub created_at: Timestamp,
    /// `None` while processing.
    pub outcome: Option<Outcome>,
    /// Analyses started; a job whose process died is taken again after its lease.
    pub attempts: u32,
    /// A worker's claim: no other process analyses it before this.
    pub leased_until: Option<Timestamp>,
    /// Compare-and-swap version (claims and completion).
    pub version: i64,
}

impl Verification {
    pub fn status(&self) -> VerificationStatus {
        self.outcome
            .as_ref()
            .map_or(VerificationStatus::Processing, |outcome| outcome.status)
    }
}

/// A check a merchant can require for `verified` (`requiredChecks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CheckName {
    DocumentAuthenticity,
    FaceMatch,
    LivenessDetection,
    DataExtraction,
}

impl CheckName {
    pub const ALL: [CheckName; 4] = [
        Self::DocumentAuthenticity,
        Self::FaceMatch,
        Self::LivenessDetection,
        Self::DataExtraction,
    ];

    /// What `verified` requires unless the request names its own list (issue 33): liveness
    /// only when asked, since no detector here can pass it.
    pub const DEFAULT_REQUIRED: [CheckName; 3] = [
        Self::DocumentAuthenticity,
        Self::FaceMatch,
        Self::DataExtraction,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::DocumentAuthenticity => "documentAuthenticity",
            Self::FaceMatch => "faceMatch",
            Self::LivenessDetection => "livenessDetection",
            Self::DataExtraction => "dataExtraction",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|name| name.as_str() == text)
    }

    /// Whether this check passed in `checks` (data extraction passes when completed).
    pub fn passed_in(self, checks: &Checks) -> bool {
        match self {
            Self::DocumentAuthenticity => checks.document_authenticity == CheckResult::Passed,
            Self::FaceMatch => checks.face_match == CheckResult::Passed,
            Self::LivenessDetection => checks.liveness_detection == CheckResult::Passed,
            Self::DataExtraction => checks.data_extraction == Extraction::Completed,
        }
    }
}

/// What the merchant's request asked of this verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// Sorted, without duplicates, never empty: every one must pass for `verified`.
    pub required_checks: Vec<CheckName>,
    /// `requireCloneDetection` (default `true`): document authenticity from a chip passes only
    /// when the chip also proved it is not a copy (active authentication). `false` accepts
    /// passive authentication alone, which proves the data but not the chip.
    pub require_clone_detection: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            required_checks: CheckName::DEFAULT_REQUIRED.to_vec(),
            require_clone_detection: true,
        }
    }
}
