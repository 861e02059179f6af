use idconsent_kernel::{ErrorCategory, QuotaExceeded, ValidationErrors};

#[derive(Debug, thiserror::Error)]
pub enum ConsentError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0}")]
    NotFound(&'static str),
    #[error("{0}")]
    Conflict(String),
    /// The session is no longer what was asked for (its QR code once decided or expired).
    #[error("{0}")]
    Gone(&'static str),
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

impl ConsentError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            ConsentError::Invalid(_) => ErrorCategory::Validation,
            ConsentError::Forbidden(_) => ErrorCategory::Forbidden,
            ConsentError::NotFound(_) => ErrorCategory::NotFound,
            // HTTP answers 410; the nearest category is a conflict with the session's state.
            ConsentError::Conflict(_) | ConsentError::Gone(_) => ErrorCategory::Conflict,
            ConsentError::RateLimited { .. } | ConsentError::QuotaExceeded { .. } => {
                ErrorCategory::RateLimited
            }
            ConsentError::Unavailable(_) => ErrorCategory::Internal,
        }
    }
}

impl From<ValidationErrors> for ConsentError {
    fn from(errors: ValidationErrors) -> Self {
        ConsentError::Invalid(errors)
    }
}

impl From<crate::ports::StoreError> for ConsentError {
    fn from(error: crate::ports::StoreError) -> Self {
        match error {
            crate::ports::StoreError::NotFound => ConsentError::NotFound("Session not found"),
            crate::ports::StoreError::NotPending => {
                ConsentError::Conflict("The session is no longer pending".into())
            }
            // Services map quotas with the time (`ConsentService::quota`); this is a fallback.
            crate::ports::StoreError::Quota(quota) => ConsentError::QuotaExceeded {
                quota,
                retry_after_secs: 1,
            },
            crate::ports::StoreError::Unavailable(source) => ConsentError::Unavailable(source),
        }
    }
}
