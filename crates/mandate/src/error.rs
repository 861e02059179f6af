use idconsent_kernel::{ErrorCategory, QuotaExceeded, ValidationErrors};

use idconsent_notification::InvitationError;

use crate::model::TransitionError;

#[derive(Debug, thiserror::Error)]
pub enum MandateError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0}")]
    NotFound(&'static str),
    #[error("{0}")]
    Conflict(String),
    /// The application's monthly mandate quota is used up.
    #[error("Monthly {} quota exceeded", .quota.metric.as_str())]
    QuotaExceeded {
        quota: QuotaExceeded,
        retry_after_secs: u64,
    },
    /// Over the application's send allowance for invitations (sandbox, CONTRACT §9).
    #[error("{message}")]
    Limited {
        message: &'static str,
        retry_after_secs: u64,
    },
    #[error("internal error")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl MandateError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            MandateError::Invalid(_) => ErrorCategory::Validation,
            MandateError::Forbidden(_) => ErrorCategory::Forbidden,
            MandateError::NotFound(_) => ErrorCategory::NotFound,
            MandateError::Conflict(_) => ErrorCategory::Conflict,
            MandateError::QuotaExceeded { .. } => ErrorCategory::RateLimited,
            MandateError::Limited { .. } => ErrorCategory::RateLimited,
            MandateError::Unavailable(_) => ErrorCategory::Internal,
        }
    }
}

impl From<InvitationError> for MandateError {
    fn from(error: InvitationError) -> Self {
        match error {
            InvitationError::Refused(errors) => MandateError::Invalid(errors),
            InvitationError::Limited {
                message,
                retry_after_secs,
            } => MandateError::Limited {
                message,
                retry_after_secs,
            },
            InvitationError::Unavailable(source) => MandateError::Unavailable(source),
        }
    }
}

impl From<ValidationErrors> for MandateError {
    fn from(errors: ValidationErrors) -> Self {
        MandateError::Invalid(errors)
    }
}

impl From<crate::ports::StoreError> for MandateError {
    fn from(error: crate::ports::StoreError) -> Self {
        MandateError::Unavailable(Box::new(error))
    }
}

impl From<TransitionError> for MandateError {
    fn from(error: TransitionError) -> Self {
        MandateError::Conflict(error.to_string())
    }
}
