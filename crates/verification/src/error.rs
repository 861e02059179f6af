use idconsent_kernel::{ErrorCategory, QuotaExceeded, ValidationErrors};

#[derive(Debug, thiserror::Error)]
pub enum VerificationError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    /// An image above the size limit in bytes (413).
    #[error("Each image must be at most {0} bytes")]
    TooLarge(usize),
    #[error("{0}")]
    NotFound(&'static str),
    /// The application's monthly verification quota is used up.
    #[error("Monthly {} quota exceeded", .quota.metric.as_str())]
    QuotaExceeded {
        quota: QuotaExceeded,
        retry_after_secs: u64,
    },
    /// The application's sandbox verifications for the UTC day are used up (429).
    #[error(
        "Sandbox keys may submit {limit} verifications per application per day (UTC); \
         retry after midnight UTC"
    )]
    SandboxCapReached { limit: u32, retry_after_secs: u64 },
    #[error("internal error")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl VerificationError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            Self::Invalid(_) | Self::TooLarge(_) => ErrorCategory::Validation,
            Self::NotFound(_) => ErrorCategory::NotFound,
            Self::QuotaExceeded { .. } | Self::SandboxCapReached { .. } => {
                ErrorCategory::RateLimited
            }
            Self::Unavailable(_) => ErrorCategory::Internal,
        }
    }
}

impl From<ValidationErrors> for VerificationError {
    fn from(errors: ValidationErrors) -> Self {
        Self::Invalid(errors)
    }
}

impl From<crate::ports::StoreError> for VerificationError {
    fn from(error: crate::ports::StoreError) -> Self {
        Self::Unavailable(Box::new(error))
    }
}
