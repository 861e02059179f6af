#![doc = include_str!("../README.md")]

pub mod aamva;
pub mod analysis;
pub mod chip;
mod country;
mod error;
pub mod events;
pub mod liveness;
pub mod model;
pub mod mrz;
pub mod ports;
mod service;
pub mod verdict;

#[cfg(feature = "contract")]
pub mod analysis_contract;
#[cfg(feature = "contract")]
pub mod chip_contract;
#[cfg(feature = "contract")]
pub mod contract;
pub mod testing;

pub use analysis::{
    AnalysisError, BarcodeReader, FaceComparison, FaceMatcher, FaceSource, ImageAnalyzer,
    ImageFacts, ImageFormat, ImageRejection, MrzReader, NotInstalled,
};
pub use chip::{
    ChipCheck, ChipEvidence, ChipEvidenceError, ChipFiles, ChipReport, ChipVerifier,
    ChipVerifierError, DataGroup,
};
pub use country::is_country;
pub use error::VerificationError;
pub use events::StatusBody;
pub use model::{
    CheckName, CheckResult, Checks, DocumentType, ExtractedData, Extraction, Finding, Images,
    LivenessSignals, ModelUsed, Outcome, Policy, Verification, VerificationStatus,
};
pub use ports::{DailyCap, StoreError, VerificationStore};
pub use service::{
    ChipInput, DEFAULT_SANDBOX_DAILY_CAP, IMAGES_PREFIX, LivenessAnswer, Requester,
    SubmitVerification, VerificationPorts, VerificationService, VerificationSettings,
};
