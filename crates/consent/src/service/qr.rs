//! The sessions' QR codes: what they encode and their images, drawn by the QR port.

use idconsent_kernel::id::SessionId;
use idconsent_kernel::{QrFormat, QrOptions, ValidationErrors};

use super::ConsentService;
use crate::error::ConsentError;
use crate::model::{Session, SessionStatus};

/// A created session with its QR code.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub session: Session,
    /// PNG of the QR code encoding [`ConsentService::qr_payload`], the default size.
    pub qr_png: Vec<u8>,
}

impl ConsentService {
    /// What the session's QR code encodes: `<scheme>://auth/<sessionId>`.
    pub fn qr_payload(&self, id: &SessionId) -> String {
        format!("{}://auth/{}", self.settings.app_scheme, id)
    }

    /// The QR code of a session just created, as PNG of the default size.
    pub fn qr_png(&self, id: &SessionId) -> Result<Vec<u8>, ConsentError> {
        // The payload is short and fixed in shape: a failure here is ours, not the caller's.
        self.qr
            .render(&self.qr_payload(id), QrFormat::Png, &QrOptions::default())
            .map_err(|error| ConsentError::Unavailable(Box::new(error)))
    }

    /// The QR code of a pending session, for anyone who has its id (the image only encodes the
    /// id). Unknown → not found; decided or expired → gone; a size the image cannot have →
    /// invalid (`size`).
    pub async fn pending_qr(
        &self,
        id: &str,
        format: QrFormat,
        options: &QrOptions,
    ) -> Result<Vec<u8>, ConsentError> {
        let session = self.load(id).await?;
        if session.status_at(self.now()) != SessionStatus::Pending {
            return Err(ConsentError::Gone("The session is no longer pending"));
        }
        self.qr
            .render(&self.qr_payload(&session.id), format, options)
            .map_err(|error| {
                ConsentError::Invalid(ValidationErrors::single("size", error.to_string()))
            })
    }
}
