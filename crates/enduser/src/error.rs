use idconsent_kernel::{ErrorCategory, ValidationErrors};

use crate::ports::{PasskeyError, StoreError, TargetError};

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
            EndUserError::RateLimited { .. } => ErrorCategory::RateLimited,
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
            StoreError::Unavailable(source) => EndUserError::Unavailable(source),
        }
    }
}

impl From<TargetError> for EndUserError {
    fn from(error: TargetError) -> Self {
        match error {
            TargetError::NotFound => EndUserError::NotFound("Not found"),
            TargetError::NotPending(message) => EndUserError::Conflict(message),
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
