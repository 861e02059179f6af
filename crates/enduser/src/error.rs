use idconsent_approval::TargetError;
use idconsent_kernel::{ErrorCategory, QuotaExceeded, ValidationErrors};

use crate::ports::{PasskeyError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum EndUserError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    #[error("{0}")]
    BadRequest(&'static str),
    /// Credentials, tokens or assertions that do not verify.
    #[error("{0}")]
    Unauthorized(&'static str),
    #[error("{0}")]
    NotFound(&'static str),
    #[error("{0}")]
    Conflict(String),
    #[error("{message}")]
    RateLimited {
        message: &'static str,
        retry_after_secs: u64,
    },
    /// A monthly quota of the merchant's plan is used up; nothing was written.
    #[error("{quota}")]
    QuotaExceeded {
        quota: QuotaExceeded,
        retry_after_secs: u64,
    },
    #[error("internal error")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl EndUserError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            EndUserError::Invalid(_) => ErrorCategory::Validation,
            EndUserError::BadRequest(_) => ErrorCategory::BadRequest,
            EndUserError::Unauthorized(_) => ErrorCategory::Unauthorized,
            EndUserError::NotFound(_) => ErrorCategory::NotFound,
            EndUserError::Conflict(_) => ErrorCategory::Conflict,
            EndUserError::RateLimited { .. } | EndUserError::QuotaExceeded { .. } => {
                ErrorCategory::RateLimited
            }
            EndUserError::Unavailable(_) => ErrorCategory::Internal,
        }
    }
}

impl From<ValidationErrors> for EndUserError {
    fn from(errors: ValidationErrors) -> Self {
        EndUserError::Invalid(errors)
    }
}

impl From<StoreError> for EndUserError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound => EndUserError::NotFound("Not found"),
            StoreError::Duplicate => {
                EndUserError::Conflict("This passkey is already registered".into())
            }
            StoreError::Changed => {
                EndUserError::Conflict("The account changed meanwhile; try again".into())
            }
            StoreError::Unavailable(source) => EndUserError::Unavailable(source),
        }
    }
}

impl From<TargetError> for EndUserError {
    fn from(error: TargetError) -> Self {
        match error {
            TargetError::NotFound => EndUserError::NotFound("Not found"),
            TargetError::NotPending(message) => EndUserError::Conflict(message),
            // Mapped with the time by the service; a bare conversion has no clock.
            TargetError::Quota(quota) => EndUserError::QuotaExceeded {
                quota,
                retry_after_secs: 1,
            },
            TargetError::Unavailable(source) => EndUserError::Unavailable(source),
        }
    }
}

impl From<PasskeyError> for EndUserError {
    fn from(error: PasskeyError) -> Self {
        match error {
            PasskeyError::Malformed(_) => EndUserError::BadRequest("The credential is malformed"),
            PasskeyError::Refused(_) => EndUserError::Unauthorized("Passkey verification failed"),
            PasskeyError::Internal(message) => EndUserError::Unavailable(message.into()),
        }
    }
}
