//! The analysis ports (CONTRACT §7: document analyzer, face matcher, liveness detector). They
//! read pixels and return measurements; what the measurements mean is decided in this crate
//! ([`crate::verdict`], [`crate::liveness`]).

use std::fmt;

use async_trait::async_trait;

use crate::model::{LivenessSignals, ModelUsed};

/// Why an analysis gave no measurement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalysisError {
    /// The analyzer is not part of this build or its model files are missing: the check is
    /// `inconclusive` with this reason, never guessed.
    #[error("{0}")]
    Unavailable(String),
    /// The analyzer ran and could not process this image.
    #[error("{0}")]
    Failed(String),
}

/// An image format the service accepts (CONTRACT §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Jpeg,
    Png,
    Webp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageFacts {
    pub format: ImageFormat,
    pub width: u32,
    pub height: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageRejection {
    #[error("must be a JPEG, PNG or WebP image")]
    NotAnImage,
    #[error("must be at most {max} pixels on each side")]
    TooLarge { max: u32 },
    #[error("must be at least {min} pixels on each side")]
    TooSmall { min: u32 },
    #[error("must have at most {max} pixels")]
    TooManyPixels { max: u64 },
    /// A strip, not a photo of a document or a face (issue 31: such shapes cost the OCR
    /// clean-up most).
    #[error("must be at most {max_ratio} times as long as it is wide, either way")]
    ExtremeShape { max_ratio: u32 },
}

/// Decodes uploads and measures liveness signals.
///
/// Contract: `inspect` decodes the whole image and accepts exactly the JPEG, PNG and WebP
/// images within the size bounds; `liveness_signals` succeeds on every image `inspect`
/// accepts and is deterministic for the same bytes.
#[async_trait]
pub trait ImageAnalyzer: Send + Sync + fmt::Debug {
    async fn inspect(&self, bytes: &[u8]) -> Result<ImageFacts, ImageRejection>;
    async fn liveness_signals(&self, image: &[u8]) -> Result<LivenessSignals, AnalysisError>;
}

/// Reads the machine-readable zone of a passport or ID card as text.
///
/// Contract: returns the OCR text of the image's MRZ lines (other text may surround them; the
/// parser finds the zone), or `Unavailable` when no OCR engine or model is installed.
#[async_trait]
pub trait MrzReader: Send + Sync + fmt::Debug {
    async fn read_mrz(&self, image: &[u8]) -> Result<String, AnalysisError>;
    fn models(&self) -> Vec<ModelUsed>;
}

/// Reads a PDF417 barcode (the back of a North American driver's licence).
///
/// Contract: the decoded payload of the first PDF417 symbol, `Ok(None)` when the image has none.
#[async_trait]
pub trait BarcodeReader: Send + Sync + fmt::Debug {
    async fn read_pdf417(&self, image: &[u8]) -> Result<Option<String>, AnalysisError>;
}

/// Which image a face was missing from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaceSource {
    Document,
    Selfie,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaceComparison {
    /// Euclidean distance between the two faces' embeddings.
    Distance(f64),
    NoFace(FaceSource),
}

/// Compares the face on a document with a selfie, and finds whether a frame holds a face.
///
/// Contract: `find_face` is true exactly when `compare` would find a face in that image as a
/// selfie (the same detector), false when it would answer `NoFace`; `Unavailable` when no
/// detector is installed, or when it stays busy past the adapter's wait limit (the caller then
/// says the face was not checked).
#[async_trait]
pub trait FaceMatcher: Send + Sync + fmt::Debug {
    async fn compare(
        &self,
        document: &[u8],
        selfie: &[u8],
    ) -> Result<FaceComparison, AnalysisError>;
    async fn find_face(&self, image: &[u8]) -> Result<bool, AnalysisError>;
    fn models(&self) -> Vec<ModelUsed>;
}

/// An analyzer this build does not have: every call says so, with how to get it.
#[derive(Debug, Clone)]
pub struct NotInstalled {
    reason: String,
}

impl NotInstalled {
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

#[async_trait]
impl MrzReader for NotInstalled {
    async fn read_mrz(&self, _image: &[u8]) -> Result<String, AnalysisError> {
        Err(AnalysisError::Unavailable(self.reason.clone()))
    }
    fn models(&self) -> Vec<ModelUsed> {
        Vec::new()
    }
}

#[async_trait]
impl BarcodeReader for NotInstalled {
    async fn read_pdf417(&self, _image: &[u8]) -> Result<Option<String>, AnalysisError> {
        Err(AnalysisError::Unavailable(self.reason.clone()))
    }
}

#[async_trait]
impl FaceMatcher for NotInstalled {
    async fn compare(
        &self,
        _document: &[u8],
        _selfie: &[u8],
    ) -> Result<FaceComparison, AnalysisError> {
        Err(AnalysisError::Unavailable(self.reason.clone()))
    }
    async fn find_face(&self, _image: &[u8]) -> Result<bool, AnalysisError> {
        Err(AnalysisError::Unavailable(self.reason.clone()))
    }
    fn models(&self) -> Vec<ModelUsed> {
        Vec::new()
    }
}
