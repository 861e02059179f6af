use idconsent_kernel::{ErrorCategory, ValidationErrors};

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
    /// Every document parser stayed busy: nothing was read or written (503, `Retry-After`).
    #[error("Every document parser is busy; retry later")]
    Busy { retry_after_secs: u64 },
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
            SignatureError::Busy { .. } | SignatureError::Unavailable(_) => ErrorCategory::Internal,
        }
    }

    pub(crate) fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        SignatureError::Unavailable(Box::new(error))
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
