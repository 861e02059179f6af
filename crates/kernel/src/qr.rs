//! QR code images as a port: sessions, OAuth requests and `/v1/qr` all draw them.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QrFormat {
    Png,
    Svg,
}

impl QrFormat {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "png" => Some(QrFormat::Png),
            "svg" => Some(QrFormat::Svg),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            QrFormat::Png => "png",
            QrFormat::Svg => "svg",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            QrFormat::Png => "image/png",
            QrFormat::Svg => "image/svg+xml",
        }
    }
}

/// How much of the code may be damaged and still read: L 7 %, M 15 %, Q 25 %, H 30 %.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCorrection {
    Low,
    Medium,
    Quartile,
    High,
}

impl ErrorCorrection {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "L" => Some(ErrorCorrection::Low),
            "M" => Some(ErrorCorrection::Medium),
            "Q" => Some(ErrorCorrection::Quartile),
            "H" => Some(ErrorCorrection::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCorrection::Low => "L",
            ErrorCorrection::Medium => "M",
            ErrorCorrection::Quartile => "Q",
            ErrorCorrection::High => "H",
        }
    }
}

/// The image asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QrOptions {
    /// Width and height in pixels (PNG) or user units (SVG); 64 to 2048.
    pub size: u32,
    pub error_correction: ErrorCorrection,
}

impl QrOptions {
    pub const MIN_SIZE: u32 = 64;
    pub const MAX_SIZE: u32 = 2048;
}

impl Default for QrOptions {
    fn default() -> Self {
        Self {
            size: 256,
            error_correction: ErrorCorrection::Medium,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QrError {
    #[error("the data does not fit in a QR code at this error-correction level")]
    TooLong,
    #[error("size must be between 64 and 2048")]
    Size,
}

/// Draws QR codes. Contract: the image decodes to exactly `data`; it is `size` pixels square
/// with a quiet zone of at least four modules; equal inputs give equal bytes.
pub trait QrRenderer: Send + Sync + fmt::Debug {
    fn render(&self, data: &str, format: QrFormat, options: &QrOptions)
    -> Result<Vec<u8>, QrError>;
}
