use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use idconsent_kernel::Clock;

use crate::model::{Attempt, Delivery};
use crate::ports::{
    DeliveryStore, NextStep, PostOutcome, SigningSecrets, StoreError, WebhookRequest,
    WebhookSigner, WebhookTransport,
};
use crate::schedule::RetrySchedule;

/// What one round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    pub succeeded: usize,
    pub retrying: usize,
    pub failed: usize,
}

impl DeliveryReport {
    pub fn handled(&self) -> usize {
        self.succeeded + self.retrying + self.failed
    }
}

fn unposted(reason: &str) -> PostOutcome {
    PostOutcome::NoAnswer {
        error: reason.to_owned(),
        duration: std::time::Duration::ZERO,
    }
}

impl Dispatcher {
    /// Signs and posts one delivery.
    async fn post(&self, delivery: &Delivery, secrets: &[String], timestamp: i64) -> PostOutcome {
        let event_id = delivery.event_id.as_str().to_owned();
        let signature = self
            .signer
            .signature_header(secrets, &event_id, timestamp, &delivery.body);
        self.transport
            .post(WebhookRequest {
                url: delivery.url.clone(),
                headers: vec![
                    ("content-type", "application/json".to_owned()),
                    ("webhook-id", event_id),
                    ("webhook-timestamp", timestamp.to_string()),
                    ("webhook-signature", signature),
                ],
                body: delivery.body.clone(),
                timeout: self.timeout,
            })
            .await
    }
}

/// Delivers due webhooks.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    store: Arc<dyn DeliveryStore>,
    transport: Arc<dyn WebhookTransport>,
    signer: Arc<dyn WebhookSigner>,
    secrets: Arc<dyn SigningSecrets>,
    clock: Arc<dyn Clock>,
    schedule: RetrySchedule,
    /// Deliveries posted at once per round.
    batch: u32,
    /// The receiver's deadline (CONTRACT §8: 5 seconds).
    timeout: Duration,
}

impl Dispatcher {
    pub fn new(
        store: Arc<dyn DeliveryStore>,
        transport: Arc<dyn WebhookTransport>,
        signer: Arc<dyn WebhookSigner>,
        secrets: Arc<dyn SigningSecrets>,
        clock: Arc<dyn Clock>,
        schedule: RetrySchedule,
    ) -> Self {
        Self {
            store,
            transport,
            signer,
            secrets,
            clock,
            schedule,
            batch: 32,
            timeout: Duration::from_secs(5),
        }
    }

    /// Leases due deliveries and attempts them concurrently.
    pub async fn deliver_due(&self) -> Result<DeliveryReport, StoreError> {
        let now = self.clock.now();
        // The lease outlives the slowest attempt (the timeout) with room to record it.
        let lease_until = now.plus(self.timeout * 6);
        let due = self.store.lease_due(now, lease_until, self.batch).await?;
        let outcomes = join_all(due.into_iter().map(|delivery| self.attempt(delivery))).await;
        let mut report = DeliveryReport::default();
        for outcome in outcomes {
            match outcome? {
                NextStep::Succeeded => report.succeeded += 1,
                NextStep::RetryAt(_) => report.retrying += 1,
                NextStep::Failed => report.failed += 1,
            }
        }
        Ok(report)
    }

    async fn attempt(&self, delivery: Delivery) -> Result<NextStep, StoreError> {
        let started = self.clock.now();
        // Unsigned webhooks are never sent: without secrets the attempt is recorded unposted,
        // and retried unless the application no longer exists.
        let (outcome, retryable) =
            match self.secrets.for_application(&delivery.application_id).await {
                Ok(secrets) => (
                    self.post(&delivery, &secrets, started.as_secs()).await,
                    true,
                ),
                Err(StoreError::NotFound) => (unposted("the application no longer exists"), false),
                Err(StoreError::Unavailable(_)) => (unposted("signing secrets unavailable"), true),
            };
        let now = self.clock.now();
        let (attempt, success) = match outcome {
            PostOutcome::Answered { status, duration } => (
                Attempt {
                    at: started,
                    status_code: Some(status),
                    error: None,
                    duration_ms: duration.as_millis() as u64,
                },
                (200..300).contains(&status),
            ),
            PostOutcome::NoAnswer { error, duration } => (
                Attempt {
                    at: started,
                    status_code: None,
                    error: Some(error),
                    duration_ms: duration.as_millis() as u64,
                },
                false,
            ),
        };
        let next = if success {
            NextStep::Succeeded
        } else if !retryable {
            NextStep::Failed
        } else {
            match self.schedule.next_attempt(now, delivery.attempts.len() + 1) {
                Some(at) => NextStep::RetryAt(at),
                None => NextStep::Failed,
            }
        };
        self.store
            .record_attempt(&delivery.id, &attempt, next)
            .await?;
        Ok(next)
    }
}
