use idconsent_kernel::{ErrorCategory, ValidationErrors};

use crate::golive::Requirement;
use crate::ports::{PasswordError, RepositoryError};

/// Why a merchant operation failed, in the words a client needs.
#[derive(Debug, thiserror::Error)]
pub enum MerchantError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    #[error("An account with this email already exists")]
    EmailTaken,
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0}")]
    Conflict(String),
    #[error("Please wait before asking for another one")]
    TooSoon { retry_after_secs: u64 },
    #[error("Invalid or expired code")]
    InvalidCode,
    #[error("Invalid or expired link")]
    InvalidLink,
    #[error("Invalid email or password")]
    InvalidCredentials,
    #[error("Too many failed sign-ins; try again later")]
    LockedOut { retry_after_secs: u64 },
    #[error("Too many sign-ins at once; try again shortly")]
    Busy { retry_after_secs: u64 },
    #[error("Invalid or expired session token")]
    InvalidSession,
    #[error("The account does not meet the go-live requirements")]
    GoLiveBlocked(Vec<Requirement>),
    #[error("internal error")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl MerchantError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            MerchantError::Invalid(_) | MerchantError::GoLiveBlocked(_) => {
                ErrorCategory::Validation
            }
            MerchantError::EmailTaken | MerchantError::Conflict(_) => ErrorCategory::Conflict,
            MerchantError::NotFound(_) => ErrorCategory::NotFound,
            MerchantError::Forbidden(_) => ErrorCategory::Forbidden,
            MerchantError::TooSoon { .. }
            | MerchantError::LockedOut { .. }
            | MerchantError::Busy { .. } => ErrorCategory::RateLimited,
            MerchantError::InvalidCode | MerchantError::InvalidLink => ErrorCategory::BadRequest,
            MerchantError::InvalidCredentials | MerchantError::InvalidSession => {
                ErrorCategory::Unauthorized
            }
            MerchantError::Unavailable(_) => ErrorCategory::Internal,
        }
    }

    pub(crate) fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        MerchantError::Unavailable(Box::new(error))
    }
}

impl From<ValidationErrors> for MerchantError {
    fn from(errors: ValidationErrors) -> Self {
        MerchantError::Invalid(errors)
    }
}

/// The default reading of a repository failure; services match the cases they expect first.
impl From<RepositoryError> for MerchantError {
    fn from(error: RepositoryError) -> Self {
        match error {
            RepositoryError::Duplicate => MerchantError::Conflict("It already exists".into()),
            RepositoryError::NotFound => MerchantError::NotFound("Resource"),
            RepositoryError::Conflict(rule) => MerchantError::Conflict(capitalise(rule)),
            RepositoryError::Unavailable(source) => MerchantError::Unavailable(source),
        }
    }
}

impl From<PasswordError> for MerchantError {
    fn from(error: PasswordError) -> Self {
        match error {
            PasswordError::Busy { retry_after_secs } => MerchantError::Busy { retry_after_secs },
            failed @ PasswordError::Failed(_) => MerchantError::unavailable(failed),
        }
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
