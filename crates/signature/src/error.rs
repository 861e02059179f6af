use idconsent_kernel::{ErrorCategory, ValidationErrors};

use idconsent_notification::InvitationError;

use crate::model::TransitionError;

#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    /// The decoded document is larger than the limit (bytes).
    #[error("The document is larger than {0} bytes")]
    TooLarge(usize),
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0}")]
    NotFound(&'static str),
    #[error("{0}")]
    Conflict(String),
    /// Over the application's send allowance for invitations (sandbox, CONTRACT §9).
    #[error("{message}")]
    Limited {
        message: &'static str,
        retry_after_secs: u64,
    },
    /// The request exists but the file store has no document under its key: lost from the
    /// store (deleted, or a store other than the one it was written to). Never a fault of the
    /// caller's, never to be retried; the HTTP layer answers 410 and logs it for the operator.
    #[error(
        "The document of this signature request is no longer stored: it cannot be shown or \
         certified. The request and its audit trail remain readable."
    )]
    DocumentMissing,
    /// Every document parser stayed busy: nothing was read or written (503, `Retry-After`).
    #[error("Every document parser is busy; retry later")]
    Busy { retry_after_secs: u64 },
    /// The operator requires trusted time and the time-stamping authority did not give it:
    /// the certificate waits (503, `Retry-After`); the request itself is complete.
    #[error(
        "The certificate waits for the time-stamping authority (trusted time is required); \
         retry later"
    )]
    CertificatePending { retry_after_secs: u64 },
    #[error("internal error")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl SignatureError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            SignatureError::Invalid(_) | SignatureError::TooLarge(_) => ErrorCategory::Validation,
            SignatureError::Forbidden(_) => ErrorCategory::Forbidden,
            SignatureError::NotFound(_) => ErrorCategory::NotFound,
            SignatureError::Conflict(_) => ErrorCategory::Conflict,
            SignatureError::Limited { .. } => ErrorCategory::RateLimited,
            // DocumentMissing is 410 in HTTP and Busy 503 (not categories of spec §7): the
            // service's own conditions, never the caller's fault.
            SignatureError::DocumentMissing
            | SignatureError::Busy { .. }
            | SignatureError::CertificatePending { .. }
            | SignatureError::Unavailable(_) => ErrorCategory::Internal,
        }
    }

    pub(crate) fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        SignatureError::Unavailable(Box::new(error))
    }
}

impl From<InvitationError> for SignatureError {
    fn from(error: InvitationError) -> Self {
        match error {
            InvitationError::Refused(errors) => SignatureError::Invalid(errors),
            InvitationError::Limited {
                message,
                retry_after_secs,
            } => SignatureError::Limited {
                message,
                retry_after_secs,
            },
            InvitationError::Unavailable(source) => SignatureError::Unavailable(source),
        }
    }
}

impl From<ValidationErrors> for SignatureError {
    fn from(errors: ValidationErrors) -> Self {
        SignatureError::Invalid(errors)
    }
}

impl From<crate::ports::StoreError> for SignatureError {
    fn from(error: crate::ports::StoreError) -> Self {
        SignatureError::unavailable(error)
    }
}

impl From<TransitionError> for SignatureError {
    fn from(error: TransitionError) -> Self {
        match error {
            TransitionError::UnknownSigner => {
                SignatureError::NotFound("No such signer on this request")
            }
            other => SignatureError::Conflict(other.to_string()),
        }
    }
}
