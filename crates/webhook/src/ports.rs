//! The webhook ports.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use idconsent_kernel::id::{ApplicationId, DeliveryId};
use idconsent_kernel::{Environment, Page, PageRequest, Timestamp};

use crate::model::{Attempt, Delivery, DeliveryStatus, Outbox};
use crate::retries::{ManualRetry, RetryAllowance};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("webhook storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What happens to a delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    Succeeded,
    RetryAt(Timestamp),
    Failed,
}

/// One attempt of a delivery, and what follows it.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub delivery: DeliveryId,
    pub attempt: Attempt,
    pub next: NextStep,
}

/// Durable deliveries (the outbox's read side and the dispatcher's work queue).
///
/// Contract:
/// - `enqueue` writes events and their deliveries atomically; new deliveries are pending and
///   due at their event's `created_at`.
/// - `list` returns one application's deliveries in one environment, newest first, optionally
///   by status, with attempts oldest first; `find` is scoped the same way (another
///   application's or environment's delivery is `None`).
/// - `lease_due` returns pending deliveries due at `now`, oldest first, at most `limit`, none of
///   an application in `skip`, and moves their next attempt to `lease_until`; concurrent callers
///   (other processes too) never receive the same delivery while its lease lasts, and a
///   delivery whose lessee died is due again when the lease ends.
/// - `release` makes leased, still pending deliveries due again at `at` (a lease handed back).
/// - `record_attempts` appends each attempt to its delivery and applies its `next`, all in one
///   write, and answers in order whether each delivery exists (an unknown one changes nothing);
///   `record_attempt` does the same for one, and an unknown id is `NotFound`.
/// - `retry_now` makes any delivery of that application and environment pending and due at
///   `now` (keeping its attempts), unless `allowance` refuses it for the delivery's manual
///   retries so far — judged and counted atomically, so concurrent retries get no more than the
///   allowance. Another application's or environment's delivery is `NotFound`.
#[async_trait]
pub trait DeliveryStore: Send + Sync + fmt::Debug {
    async fn enqueue(&self, outbox: &[Outbox]) -> Result<(), StoreError>;
    async fn list(
        &self,
        application: &ApplicationId,
        environment: Environment,
        status: Option<DeliveryStatus>,
        page: PageRequest,
    ) -> Result<Page<Delivery>, StoreError>;
    async fn find(
        &self,
        application: &ApplicationId,
        environment: Environment,
        id: &DeliveryId,
    ) -> Result<Option<Delivery>, StoreError>;
    async fn lease_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
        skip: &[ApplicationId],
    ) -> Result<Vec<Delivery>, StoreError>;
    async fn release(&self, ids: &[DeliveryId], at: Timestamp) -> Result<(), StoreError>;
    async fn record_attempts(&self, records: &[AttemptRecord]) -> Result<Vec<bool>, StoreError>;
    async fn record_attempt(
        &self,
        id: &DeliveryId,
        attempt: &Attempt,
        next: NextStep,
    ) -> Result<(), StoreError> {
        let record = AttemptRecord {
            delivery: id.clone(),
            attempt: attempt.clone(),
            next,
        };
        match self.record_attempts(std::slice::from_ref(&record)).await?[..] {
            [true] => Ok(()),
            _ => Err(StoreError::NotFound),
        }
    }
    async fn retry_now(
        &self,
        application: &ApplicationId,
        environment: Environment,
        id: &DeliveryId,
        now: Timestamp,
        allowance: RetryAllowance,
    ) -> Result<ManualRetry, StoreError>;
}

/// A signed webhook request.
#[derive(Debug, Clone)]
pub struct WebhookRequest {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    pub timeout: Duration,
}

/// What came of one POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostOutcome {
    /// The receiver answered with this status.
    Answered { status: u16, duration: Duration },
    /// No answer: timeout, connection failure, or a target refused by the SSRF guard.
    NoAnswer { error: String, duration: Duration },
}

/// Posts webhooks. Implementations refuse private targets unless configured to allow them.
#[async_trait]
pub trait WebhookTransport: Send + Sync + fmt::Debug {
    async fn post(&self, request: WebhookRequest) -> PostOutcome;
}

/// Standard Webhooks signatures.
pub trait WebhookSigner: Send + Sync + fmt::Debug {
    /// The `webhook-signature` header: one `v1,<base64>` per secret, space-separated.
    fn signature_header(
        &self,
        secrets: &[String],
        id: &str,
        timestamp_secs: i64,
        body: &[u8],
    ) -> String;
}

/// The webhook secrets an application currently signs with (current first, then the previous
/// one while it is still valid).
#[async_trait]
pub trait SigningSecrets: Send + Sync + fmt::Debug {
    async fn for_application(&self, application: &ApplicationId)
    -> Result<Vec<String>, StoreError>;
}
