use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use idconsent_kernel::id::{ApplicationId, DeliveryId};
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

/// What a round started: the attempts to run, and the deliveries it leased but handed back.
#[must_use]
pub struct StartedRound {
    pub attempts: Vec<StartedAttempt>,
    pub handed_back: Option<HandedBack>,
}

impl std::fmt::Debug for StartedRound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartedRound")
            .field("attempts", &self.attempts.len())
            .field("handed_back", &self.handed_back)
            .finish()
    }
}

/// Deliveries a round leased but could not sign, because their application's signing secrets
/// could not be read (the database failed the read, or the vault could not open them). Nothing
/// was sent and nothing is recorded against them — a failed read is a retry of the round, not
/// an attempt — and they are due again at `due_again_at`, for this process or another.
#[derive(Debug)]
pub struct HandedBack {
    pub deliveries: usize,
    pub applications: usize,
    pub due_again_at: Timestamp,
    /// The first failed read's error.
    pub cause: StoreError,
}

/// How soon deliveries handed back for unreadable secrets are due again.
const HANDED_BACK_FOR: Duration = Duration::from_secs(1);

/// An application's signing secrets as read once for a round, shared by its attempts.
enum RoundSecrets {
    Signing(Vec<String>),
    /// The application no longer exists: its deliveries are not retried.
    Gone,
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
    /// whose lane is full) and returns their attempts, not yet run, with the deliveries it
    /// handed back unattempted (their application's secrets could not be read).
    pub async fn start_due(&self) -> Result<StartedRound, StoreError> {
        let limit = self.lanes.round_limit();
        let full = self.lanes.full();
        if limit == 0 || !self.quiet_pause_left(&full).is_zero() {
            return Ok(StartedRound {
                attempts: Vec::new(),
                handed_back: None,
            });
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
        let mut secrets: HashMap<ApplicationId, Arc<RoundSecrets>> = HashMap::new();
        let mut unreadable: Vec<StoreError> = Vec::new();
        for (application, read) in applications.into_iter().zip(reads) {
            match read {
                Ok(signing) => {
                    secrets.insert(
                        application.clone(),
                        Arc::new(RoundSecrets::Signing(signing)),
                    );
                }
                Err(StoreError::NotFound) => {
                    secrets.insert(application.clone(), Arc::new(RoundSecrets::Gone));
                }
                Err(error @ StoreError::Unavailable(_)) => unreadable.push(error),
            }
        }
        let mut attempts = Vec::with_capacity(leased.len());
        let mut handed_back = Vec::new();
        for delivery in leased {
            // Taken at the lease and freed however the attempt ends: done, failed, panicked, or
            // dropped before it ever ran (or at once, for a delivery handed back).
            let slot = LaneSlot {
                lanes: self.lanes.clone(),
                application: delivery.application_id.clone(),
                finished: self.finished.clone(),
            };
            let Some(secrets) = secrets.get(&delivery.application_id).cloned() else {
                handed_back.push(delivery.id);
                continue;
            };
            let dispatcher = self.clone();
            let attempt: StartedAttempt = Box::pin(async move {
                let _slot = slot;
                dispatcher.attempt(delivery, &secrets).await
            });
            attempts.push(attempt);
        }
        let applications_unreadable = unreadable.len();
        let handed_back = match unreadable.into_iter().next() {
            None => None,
            Some(cause) => Some(
                self.hand_back(&handed_back, applications_unreadable, cause, lease_until)
                    .await,
            ),
        };
        Ok(StartedRound {
            attempts,
            handed_back,
        })
    }

    /// Makes deliveries leased for nothing due again soon, recording nothing against them. If
    /// even that fails, their lease ends them the same way, later.
    async fn hand_back(
        &self,
        deliveries: &[DeliveryId],
        applications: usize,
        cause: StoreError,
        lease_until: Timestamp,
    ) -> HandedBack {
        let soon = self.clock.now().plus(HANDED_BACK_FOR);
        let due_again_at = match self.store.release(deliveries, soon).await {
            Ok(()) => soon,
            Err(_) => lease_until,
        };
        HandedBack {
            deliveries: deliveries.len(),
            applications,
            due_again_at,
            cause,
        }
    }

    /// Attempts every due delivery that fits the lanes and waits for them: one round, for
    /// callers without their own tasks (tests, a one-off command).
    pub async fn deliver_due(&self) -> Result<usize, StoreError> {
        let started = self.start_due().await?.attempts;
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
        // Unsigned webhooks are never sent. An application that no longer exists ends its
        // deliveries with one unposted attempt saying so (secrets that could not be read never
        // get here: the round handed those deliveries back).
        let (outcome, retryable) = match secrets {
            RoundSecrets::Signing(secrets) => {
                (self.post(&delivery, secrets, started.as_secs()).await, true)
            }
            RoundSecrets::Gone => (unposted("the application no longer exists"), false),
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
#[path = "dispatcher_tests.rs"]
mod tests;
