use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{Clock, Nudge, Timestamp};

use crate::lanes::Lanes;
use crate::model::{Attempt, Delivery};
use crate::ports::{
    AttemptRecord, DeliveryStore, NextStep, PostOutcome, SigningSecrets, StoreError,
    WebhookRequest, WebhookSigner, WebhookTransport,
};
use crate::recorder::Recorder;
use crate::schedule::RetrySchedule;

/// One attempt started by [`Dispatcher::start_due`], to be run to completion by the caller (on
/// its own task: a slow receiver holds only its own attempt). It records the outcome and frees
/// the application's lane slot, and fails only when the outcome could not be recorded (the
/// lease then ends and the delivery is attempted again).
pub type StartedAttempt = BoxFuture<'static, Result<NextStep, StoreError>>;

/// An application's signing secrets as read once for a round, shared by its attempts.
enum RoundSecrets {
    Signing(Vec<String>),
    /// The application no longer exists: its deliveries are not retried.
    Gone,
    /// The secrets could not be read now: the attempts are retried.
    Unavailable,
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

/// An attempt's place in its application's lane, given back when dropped.
struct LaneSlot {
    lanes: Arc<Lanes>,
    application: ApplicationId,
    finished: Option<Arc<dyn Nudge>>,
}

impl Drop for LaneSlot {
    fn drop(&mut self) {
        // Only a slot that was holding work back wakes the worker: otherwise the next outbox
        // write or poll starts the next round, and rounds stay batched.
        if self.lanes.finish(&self.application)
            && let Some(finished) = &self.finished
        {
            finished.nudge();
        }
    }
}

/// Delivers due webhooks, fairly: each attempt runs on its own, within lanes that bound how
/// many run at once in all (512) and per application (128 a round, fewer than 256 in flight), so
/// one application whose endpoint hangs fills only its own lane (ADR 0027).
#[derive(Debug, Clone)]
pub struct Dispatcher {
    store: Arc<dyn DeliveryStore>,
    /// Attempts that end together are recorded in one write.
    recorder: Arc<Recorder>,
    transport: Arc<dyn WebhookTransport>,
    signer: Arc<dyn WebhookSigner>,
    secrets: Arc<dyn SigningSecrets>,
    clock: Arc<dyn Clock>,
    schedule: RetrySchedule,
    lanes: Arc<Lanes>,
    /// Told when an attempt ends, so the caller leases again for the lane it freed.
    finished: Option<Arc<dyn Nudge>>,
    /// The receiver's deadline (CONTRACT §8: 5 seconds).
    timeout: Duration,
    /// When a round that skipped full lanes last found nothing else due (see
    /// [`QUIET_SKIPPING_PAUSE`]).
    quiet_skipping_round: Arc<std::sync::Mutex<Option<Timestamp>>>,
}

/// How long rounds that would skip full lanes start nothing after one that found nothing else
/// due: the lease scans past the skipped applications' due deliveries, so back-to-back rounds
/// behind a busy application's backlog (every outbox write nudges a round) would rescan it for
/// nothing. Another application's webhook waits at most this, or until the next round after
/// it (the next outbox write or poll), while a lane is full.
const QUIET_SKIPPING_PAUSE: Duration = Duration::from_millis(50);

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
            recorder: Arc::new(Recorder::new(store.clone())),
            store,
            transport,
            signer,
            secrets,
            clock,
            schedule,
            lanes: Arc::new(Lanes::new(512, 128)),
            finished: None,
            timeout: Duration::from_secs(5),
            quiet_skipping_round: Arc::default(),
        }
    }

    /// Lanes of other sizes: `total` attempts at once, `per_application` for one application.
    pub fn with_lanes(mut self, total: usize, per_application: usize) -> Self {
        self.lanes = Arc::new(Lanes::new(total, per_application));
        self
    }

    /// The most deliveries one round starts (one application's lane).
    pub fn round_size(&self) -> usize {
        self.lanes.per_application()
    }

    /// Nudged when an attempt ends and frees a full lane.
    pub fn on_finished(mut self, nudge: Arc<dyn Nudge>) -> Self {
        self.finished = Some(nudge);
        self
    }

    /// How much longer rounds start nothing without asking the store: while some lane is
    /// `full` and the last round that skipped full lanes found nothing else due, until
    /// [`QUIET_SKIPPING_PAUSE`] has passed since it; otherwise zero. A lane that frees ends it
    /// at once.
    fn quiet_pause_left(&self, full: &[ApplicationId]) -> Duration {
        if full.is_empty() {
            return Duration::ZERO;
        }
        let quiet_since = *self
            .quiet_skipping_round
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match quiet_since {
            Some(at) => QUIET_SKIPPING_PAUSE.saturating_sub(self.clock.now().since(at)),
            None => Duration::ZERO,
        }
    }

    /// Leases due deliveries for the free lanes (at most one lane's worth, skipping applications
    /// whose lane is full) and returns their attempts, not yet run.
    pub async fn start_due(&self) -> Result<Vec<StartedAttempt>, StoreError> {
        let limit = self.lanes.round_limit();
        let full = self.lanes.full();
        if limit == 0 || !self.quiet_pause_left(&full).is_zero() {
            return Ok(Vec::new());
        }
        let now = self.clock.now();
        // The lease outlives the slowest attempt (the timeout) with room to record it.
        let lease_until = now.plus(self.timeout * 6);
        let limit = u32::try_from(limit).unwrap_or(u32::MAX);
        let leased = self.store.lease_due(now, lease_until, limit, &full).await?;
        // Only a round that skipped lanes tells whether others have anything due.
        if !full.is_empty() {
            *self
                .quiet_skipping_round
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                leased.is_empty().then_some(now);
        }
        self.lanes.take(&leased);
        // Each application's secrets once a round, not once an attempt (a round is usually one
        // busy application's lane); the applications' reads run side by side.
        let mut applications: Vec<&ApplicationId> = leased
            .iter()
            .map(|delivery| &delivery.application_id)
            .collect();
        applications.sort_unstable();
        applications.dedup();
        let reads = futures_util::future::join_all(
            applications
                .iter()
                .map(|application| self.secrets.for_application(application)),
        )
        .await;
        let secrets: HashMap<ApplicationId, Arc<RoundSecrets>> = applications
            .into_iter()
            .zip(reads)
            .map(|(application, read)| {
                let read = match read {
                    Ok(signing) => RoundSecrets::Signing(signing),
                    Err(StoreError::NotFound) => RoundSecrets::Gone,
                    Err(StoreError::Unavailable(_)) => RoundSecrets::Unavailable,
                };
                (application.clone(), Arc::new(read))
            })
            .collect();
        Ok(leased
            .into_iter()
            .map(|delivery| {
                let dispatcher = self.clone();
                let secrets = secrets
                    .get(&delivery.application_id)
                    .cloned()
                    .unwrap_or_else(|| Arc::new(RoundSecrets::Unavailable));
                // Taken now and freed however the attempt ends: done, failed, panicked, or
                // dropped before it ever ran.
                let slot = LaneSlot {
                    lanes: dispatcher.lanes.clone(),
                    application: delivery.application_id.clone(),
                    finished: dispatcher.finished.clone(),
                };
                let attempt: StartedAttempt = Box::pin(async move {
                    let _slot = slot;
                    dispatcher.attempt(delivery, &secrets).await
                });
                attempt
            })
            .collect())
    }

    /// Attempts every due delivery that fits the lanes and waits for them: one round, for
    /// callers without their own tasks (tests, a one-off command).
    pub async fn deliver_due(&self) -> Result<usize, StoreError> {
        let started = self.start_due().await?;
        let count = started.len();
        for outcome in futures_util::future::join_all(started).await {
            outcome?;
        }
        Ok(count)
    }

    async fn attempt(
        &self,
        delivery: Delivery,
        secrets: &RoundSecrets,
    ) -> Result<NextStep, StoreError> {
        let started = self.clock.now();
        // Unsigned webhooks are never sent: without secrets the attempt is recorded unposted,
        // and retried unless the application no longer exists.
        let (outcome, retryable) = match secrets {
            RoundSecrets::Signing(secrets) => {
                (self.post(&delivery, secrets, started.as_secs()).await, true)
            }
            RoundSecrets::Gone => (unposted("the application no longer exists"), false),
            RoundSecrets::Unavailable => (unposted("signing secrets unavailable"), true),
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
        self.recorder
            .record(AttemptRecord {
                delivery: delivery.id,
                attempt,
                next,
            })
            .await?;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use idconsent_kernel::id::{ApplicationId, TypedId};
    use idconsent_kernel::{Environment, ManualClock, OsRandom, Timestamp, UlidGenerator};
    use serde_json::json;

    use super::*;
    use crate::model::{EventType, Outbox};
    use crate::testing::InMemoryDeliveries;

    /// A receiver that never answers.
    #[derive(Debug)]
    struct Hangs;

    #[async_trait]
    impl WebhookTransport for Hangs {
        async fn post(&self, _: WebhookRequest) -> PostOutcome {
            std::future::pending().await
        }
    }

    #[derive(Debug)]
    struct Unsigned;

    impl WebhookSigner for Unsigned {
        fn signature_header(&self, _: &[String], _: &str, _: i64, _: &[u8]) -> String {
            String::new()
        }
    }

    #[async_trait]
    impl SigningSecrets for Unsigned {
        async fn for_application(&self, _: &ApplicationId) -> Result<Vec<String>, StoreError> {
            Ok(vec!["whsec_test".into()])
        }
    }

    /// One event of each application given (repeats make several), due now, with one
    /// destination each.
    fn due_deliveries(
        applications: &[&ApplicationId],
    ) -> (Arc<ManualClock>, Arc<InMemoryDeliveries>) {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000)));
        let ids = UlidGenerator::new(clock.clone(), Arc::new(OsRandom));
        let store = Arc::new(InMemoryDeliveries::default());
        let outbox: Vec<Outbox> = applications
            .iter()
            .map(|application| {
                Outbox::new(
                    &ids,
                    EventType::declared("consent.created"),
                    (*application).clone(),
                    Environment::Sandbox,
                    clock.now(),
                    json!({}),
                    &["https://shop.example/hooks"],
                )
            })
            .collect();
        store.enqueue_now(&outbox);
        (clock, store)
    }

    #[tokio::test]
    async fn an_application_gets_its_lane_and_a_dropped_attempt_gives_its_slot_back() {
        let application = ApplicationId::from_trusted("app_slow".into());
        let (clock, store) = due_deliveries(&[&application; 5]);
        let dispatcher = Dispatcher::new(
            store.clone(),
            Arc::new(Hangs),
            Arc::new(Unsigned),
            Arc::new(Unsigned),
            clock,
            RetrySchedule::default(),
        )
        .with_lanes(8, 2);
        let first = dispatcher.start_due().await.unwrap();
        assert_eq!(first.len(), 2, "two of five fit the application's lane");
        assert!(
            dispatcher.start_due().await.unwrap().is_empty(),
            "the lane is full"
        );
        // The attempts end without an answer (dropped, as on shutdown): their slots come back,
        // and the three deliveries handed back are due.
        drop(first);
        assert_eq!(dispatcher.start_due().await.unwrap().len(), 2);
    }

    fn pause_left(dispatcher: &Dispatcher) -> Duration {
        dispatcher.quiet_pause_left(&dispatcher.lanes.full())
    }

    #[tokio::test]
    async fn behind_a_full_lane_a_round_that_found_nothing_else_pauses_the_next() {
        let application = ApplicationId::from_trusted("app_slow".into());
        let (clock, store) = due_deliveries(&[&application; 3]);
        let dispatcher = Dispatcher::new(
            store,
            Arc::new(Hangs),
            Arc::new(Unsigned),
            Arc::new(Unsigned),
            clock.clone(),
            RetrySchedule::default(),
        )
        .with_lanes(8, 2);
        let running = dispatcher.start_due().await.unwrap();
        assert_eq!(running.len(), 2);
        assert_eq!(pause_left(&dispatcher), Duration::ZERO, "not yet skipped");
        // The lane is full and nobody else has anything due: this round finds nothing.
        assert!(dispatcher.start_due().await.unwrap().is_empty());
        assert_eq!(pause_left(&dispatcher), QUIET_SKIPPING_PAUSE);
        // Meanwhile rounds start nothing without asking the store (asking it would renew the
        // pause from the later time).
        clock.advance(Duration::from_millis(30));
        assert!(dispatcher.start_due().await.unwrap().is_empty());
        assert_eq!(pause_left(&dispatcher), Duration::from_millis(20));
        clock.advance(Duration::from_millis(20));
        assert_eq!(pause_left(&dispatcher), Duration::ZERO);
        // A lane that frees ends the pause at once.
        drop(running);
        assert_eq!(pause_left(&dispatcher), Duration::ZERO);
    }

    /// A receiver that answers 204 at once.
    #[derive(Debug)]
    struct Accepts;

    #[async_trait]
    impl WebhookTransport for Accepts {
        async fn post(&self, _: WebhookRequest) -> PostOutcome {
            PostOutcome::Answered {
                status: 204,
                duration: Duration::ZERO,
            }
        }
    }

    /// Secrets for `app_known` only, counting the reads per application.
    #[derive(Debug, Default)]
    struct CountedSecrets {
        reads: std::sync::Mutex<Vec<ApplicationId>>,
    }

    #[async_trait]
    impl SigningSecrets for CountedSecrets {
        async fn for_application(&self, app: &ApplicationId) -> Result<Vec<String>, StoreError> {
            self.reads.lock().unwrap().push(app.clone());
            if app.as_str() == "app_known" {
                Ok(vec!["whsec_test".into()])
            } else {
                Err(StoreError::NotFound)
            }
        }
    }

    #[tokio::test]
    async fn a_round_reads_each_applications_secrets_once() {
        let known = ApplicationId::from_trusted("app_known".into());
        let gone = ApplicationId::from_trusted("app_gone".into());
        let (clock, store) = due_deliveries(&[&known, &known, &known, &gone, &gone]);
        let secrets = Arc::new(CountedSecrets::default());
        let dispatcher = Dispatcher::new(
            store.clone(),
            Arc::new(Accepts),
            Arc::new(Unsigned),
            secrets.clone(),
            clock,
            RetrySchedule::default(),
        );
        let started = dispatcher.start_due().await.unwrap();
        assert_eq!(started.len(), 5);
        let mut steps = Vec::new();
        for attempt in started {
            steps.push(attempt.await.unwrap());
        }
        let mut reads = secrets.reads.lock().unwrap().clone();
        reads.sort();
        assert_eq!(reads, [gone, known], "one read per application");
        // The known application's three were delivered; the gone one's two end for good.
        assert_eq!(
            steps.iter().filter(|s| **s == NextStep::Succeeded).count(),
            3
        );
        assert_eq!(steps.iter().filter(|s| **s == NextStep::Failed).count(), 2);
    }
}
