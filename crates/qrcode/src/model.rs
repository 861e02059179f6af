//! A stored QR code.

use idconsent_kernel::id::{ApplicationId, QrCodeId};
use idconsent_kernel::{Environment, QrFormat, QrOptions, Timestamp};

/// A QR code as the merchant asked for it; the image is drawn again on every read (the same
/// inputs always give the same bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredQr {
    /// `qr_` and at least 128 random bits: the id alone fetches the image.
    pub id: QrCodeId,
    pub application_id: ApplicationId,
    pub environment: Environment,
    pub data: String,
    pub format: QrFormat,
    pub options: QrOptions,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QrStatus {
    Active,
    Expired,
}

impl QrStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            QrStatus::Active => "active",
            QrStatus::Expired => "expired",
        }
    }
}

impl StoredQr {
    /// Expired from `expires_at` on.
    pub fn status_at(&self, now: Timestamp) -> QrStatus {
        if now < self.expires_at {
            QrStatus::Active
        } else {
            QrStatus::Expired
        }
    }
}
