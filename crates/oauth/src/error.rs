use idconsent_consent::ConsentError;
use idconsent_kernel::{ErrorCategory, ValidationErrors};

use crate::ports::StoreError;

/// The one message for every bad code (spec §7 rule 1).
pub const INVALID_GRANT: &str = "Invalid or expired authorization code";

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    #[error("{0}")]
    BadRequest(&'static str),
    #[error("{0}")]
    Unauthorized(&'static str),
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0}")]
    NotFound(&'static str),
    /// Errors of the consent session underneath (flood limits, conflicts).
    #[error(transparent)]
    Consent(#[from] ConsentError),
    #[error("internal error")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl OAuthError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            OAuthError::Invalid(_) => ErrorCategory::Validation,
            OAuthError::BadRequest(_) => ErrorCategory::BadRequest,
            OAuthError::Unauthorized(_) => ErrorCategory::Unauthorized,
            OAuthError::Forbidden(_) => ErrorCategory::Forbidden,
            OAuthError::NotFound(_) => ErrorCategory::NotFound,
            OAuthError::Consent(inner) => inner.category(),
            OAuthError::Unavailable(_) => ErrorCategory::Internal,
        }
    }
}

impl From<ValidationErrors> for OAuthError {
    fn from(errors: ValidationErrors) -> Self {
        OAuthError::Invalid(errors)
    }
}

impl From<StoreError> for OAuthError {
    fn from(error: StoreError) -> Self {
        OAuthError::Unavailable(Box::new(error))
    }
}
