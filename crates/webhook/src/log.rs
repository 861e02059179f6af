//! The merchant's view of its webhook deliveries: list them, send one again.

use std::sync::Arc;

use idconsent_kernel::id::{ApplicationId, DeliveryId, TypedId};
use idconsent_kernel::{
    Clock, Environment, ErrorCategory, Nudge, Page, PageRequest, ValidationErrors,
};

use crate::model::{Delivery, DeliveryStatus};
use crate::ports::{DeliveryStore, StoreError};
use crate::retries::{ManualRetry, RetryAllowance};

#[derive(Debug, thiserror::Error)]
pub enum DeliveryLogError {
    #[error("{0}")]
    Invalid(#[from] ValidationErrors),
    #[error("Delivery not found")]
    NotFound,
    #[error("This delivery was retried 10 times in the last hour; try again later")]
    TooManyRetries { retry_after_secs: u64 },
    #[error("webhook storage failed")]
    Unavailable(#[source] StoreError),
}

impl DeliveryLogError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            DeliveryLogError::Invalid(_) => ErrorCategory::Validation,
            DeliveryLogError::NotFound => ErrorCategory::NotFound,
            DeliveryLogError::TooManyRetries { .. } => ErrorCategory::RateLimited,
            DeliveryLogError::Unavailable(_) => ErrorCategory::Internal,
        }
    }
}

/// An application's deliveries, in the environment of its key.
#[derive(Debug, Clone)]
pub struct DeliveryLog {
    store: Arc<dyn DeliveryStore>,
    clock: Arc<dyn Clock>,
    /// Wakes the dispatcher after a retry is queued.
    retried: Option<Arc<dyn Nudge>>,
}

impl DeliveryLog {
    pub fn new(
        store: Arc<dyn DeliveryStore>,
        clock: Arc<dyn Clock>,
        retried: Option<Arc<dyn Nudge>>,
    ) -> Self {
        Self {
            store,
            clock,
            retried,
        }
    }

    /// Newest first, optionally by status (`pending`, `succeeded`, `failed`; else 422).
    pub async fn list(
        &self,
        application: &ApplicationId,
        environment: Environment,
        status: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Delivery>, DeliveryLogError> {
        let status = status
            .map(|text| {
                DeliveryStatus::parse(text).ok_or_else(|| {
                    ValidationErrors::single("status", "must be pending, succeeded or failed")
                })
            })
            .transpose()?;
        self.store
            .list(application, environment, status, page)
            .await
            .map_err(DeliveryLogError::Unavailable)
    }

    /// Sends a delivery again now, whatever its status, with the same `webhook-id` and body —
    /// at most 10 times an hour per delivery. Another application's (or environment's)
    /// delivery is not found.
    pub async fn retry(
        &self,
        application: &ApplicationId,
        environment: Environment,
        id: &str,
    ) -> Result<Delivery, DeliveryLogError> {
        let id = DeliveryId::parse(id).map_err(|_| DeliveryLogError::NotFound)?;
        let now = self.clock.now();
        let delivery = match self
            .store
            .retry_now(
                application,
                environment,
                &id,
                now,
                RetryAllowance::default(),
            )
            .await
            .map_err(DeliveryLogError::Unavailable)?
        {
            ManualRetry::Retried(delivery) => delivery,
            ManualRetry::NotFound => return Err(DeliveryLogError::NotFound),
            ManualRetry::Refused { retry_at } => {
                return Err(DeliveryLogError::TooManyRetries {
                    retry_after_secs: retry_at.since(now).as_secs().max(1),
                });
            }
        };
        if let Some(nudge) = &self.retried {
            nudge.nudge();
        }
        Ok(delivery)
    }
}
