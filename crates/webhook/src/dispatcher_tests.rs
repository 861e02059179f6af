//! The dispatcher's rules with in-memory ports: lanes, pauses, secrets read once a round and
//! rounds that hand back what they cannot sign.

use std::sync::atomic::Ordering;

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
fn due_deliveries(applications: &[&ApplicationId]) -> (Arc<ManualClock>, Arc<InMemoryDeliveries>) {
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
    let first = dispatcher.start_due().await.unwrap().attempts;
    assert_eq!(first.len(), 2, "two of five fit the application's lane");
    assert!(
        dispatcher.start_due().await.unwrap().attempts.is_empty(),
        "the lane is full"
    );
    // The attempts end without an answer (dropped, as on shutdown): their slots come back,
    // and the three deliveries handed back are due.
    drop(first);
    assert_eq!(dispatcher.start_due().await.unwrap().attempts.len(), 2);
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
    let running = dispatcher.start_due().await.unwrap().attempts;
    assert_eq!(running.len(), 2);
    assert_eq!(pause_left(&dispatcher), Duration::ZERO, "not yet skipped");
    // The lane is full and nobody else has anything due: this round finds nothing.
    assert!(dispatcher.start_due().await.unwrap().attempts.is_empty());
    assert_eq!(pause_left(&dispatcher), QUIET_SKIPPING_PAUSE);
    // Meanwhile rounds start nothing without asking the store (asking it would renew the
    // pause from the later time).
    clock.advance(Duration::from_millis(30));
    assert!(dispatcher.start_due().await.unwrap().attempts.is_empty());
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
    let started = dispatcher.start_due().await.unwrap().attempts;
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

/// Secrets that can be read only once `readable` is set (the database failing the read
/// meanwhile).
#[derive(Debug, Default)]
struct FlakySecrets {
    readable: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl SigningSecrets for FlakySecrets {
    async fn for_application(&self, app: &ApplicationId) -> Result<Vec<String>, StoreError> {
        if app.as_str() == "app_known" || self.readable.load(Ordering::SeqCst) {
            Ok(vec!["whsec_test".into()])
        } else {
            Err(StoreError::Unavailable("the read timed out".into()))
        }
    }
}

async fn deliveries_of(store: &InMemoryDeliveries, application: &ApplicationId) -> Vec<Delivery> {
    store
        .list(
            application,
            Environment::Sandbox,
            None,
            idconsent_kernel::PageRequest::new(None, None).unwrap(),
        )
        .await
        .unwrap()
        .items
}

#[tokio::test]
async fn a_round_hands_back_unattempted_what_it_cannot_sign() {
    let known = ApplicationId::from_trusted("app_known".into());
    let flaky = ApplicationId::from_trusted("app_flaky".into());
    let (clock, store) = due_deliveries(&[&known, &flaky, &flaky]);
    let secrets = Arc::new(FlakySecrets::default());
    let dispatcher = Dispatcher::new(
        store.clone(),
        Arc::new(Accepts),
        Arc::new(Unsigned),
        secrets.clone(),
        clock.clone(),
        RetrySchedule::default(),
    )
    .with_lanes(8, 4);
    let round = dispatcher.start_due().await.unwrap();
    assert_eq!(round.attempts.len(), 1, "the known application's one");
    let handed_back = round.handed_back.unwrap();
    assert_eq!((handed_back.deliveries, handed_back.applications), (2, 1));
    assert_eq!(
        handed_back.due_again_at,
        clock.now().plus(Duration::from_secs(1))
    );
    assert!(matches!(handed_back.cause, StoreError::Unavailable(_)));
    // Their lane is free at once; nothing was sent or recorded for them.
    assert!(dispatcher.lanes.full().is_empty());
    for attempt in round.attempts {
        assert_eq!(attempt.await.unwrap(), NextStep::Succeeded);
    }
    for delivery in deliveries_of(&store, &flaky).await {
        assert!(delivery.attempts.is_empty(), "{delivery:?}");
        assert_eq!(delivery.next_attempt_at, Some(handed_back.due_again_at));
    }
    // Not due before then; once the secrets can be read, each is delivered in one attempt.
    assert!(dispatcher.start_due().await.unwrap().attempts.is_empty());
    secrets.readable.store(true, Ordering::SeqCst);
    clock.advance(Duration::from_secs(1));
    assert_eq!(dispatcher.deliver_due().await.unwrap(), 2);
    for delivery in deliveries_of(&store, &flaky).await {
        assert_eq!(delivery.status, crate::DeliveryStatus::Succeeded);
        assert_eq!(delivery.attempts.len(), 1);
    }
}
