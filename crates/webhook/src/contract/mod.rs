//! The [`DeliveryStore`] contract. Every adapter runs it through
//! `delivery_store_contract!(make)`, where `make` is an `async fn() -> Option<(Arc<dyn
//! DeliveryStore>, G)>` giving a fresh store and a guard that keeps it alive.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use futures_util::future::join_all;
use idconsent_kernel::id::{ApplicationId, DeliveryId};
use idconsent_kernel::{
    Environment, IdGenerator, OsRandom, PageRequest, SystemClock, Timestamp, UlidGenerator,
};
use serde_json::json;

use crate::model::{Attempt, DeliveryStatus, EventType, Outbox};
use crate::ports::{AttemptRecord, DeliveryStore, NextStep, StoreError};
use crate::retries::{ManualRetry, RetryAllowance};

mod attempts;
pub use attempts::*;

const ALLOWANCE: RetryAllowance = RetryAllowance {
    per_window: 3,
    window: std::time::Duration::from_secs(3600),
};

#[macro_export]
macro_rules! delivery_store_contract {
    ($make:path) => {
        $crate::delivery_store_contract!(@cases $make;
            enqueued_deliveries_are_pending_and_listed_newest_first,
            listing_is_scoped_to_application_and_environment_and_filters_by_status,
            listing_pages,
            lease_returns_due_pending_deliveries_once,
            an_expired_lease_makes_the_delivery_due_again,
            two_workers_never_lease_the_same_delivery,
            attempts_are_recorded_in_order_and_steps_applied,
            recording_an_unknown_delivery_is_not_found,
            a_batch_of_attempts_is_recorded_in_one_write,
            retry_now_makes_any_delivery_due_again,
            leasing_skips_the_given_applications_and_released_deliveries_come_back,
            manual_retries_are_counted_per_window,
            concurrent_manual_retries_get_no_more_than_the_allowance,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _guard)) = $make().await else { return };
                $crate::contract::$case(store).await;
            }
        )*
    };
}

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

const T0: i64 = 1_763_719_200_000;

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + offset_ms)
}

fn app() -> ApplicationId {
    ids().next()
}

fn outbox(
    application: &ApplicationId,
    environment: Environment,
    created: Timestamp,
    urls: &[&str],
) -> Outbox {
    Outbox::new(
        ids().as_ref(),
        EventType::declared("consent.created"),
        application.clone(),
        environment,
        created,
        json!({"sessionId": "cs_x", "status": "pending"}),
        urls,
    )
}

/// One event with one destination (`https://a.example/`), created at 0 and enqueued; its
/// delivery's id.
async fn enqueued_delivery(
    store: &Arc<dyn DeliveryStore>,
    application: &ApplicationId,
    environment: Environment,
) -> DeliveryId {
    let event = outbox(application, environment, at(0), &["https://a.example/"]);
    let id = event.destinations[0].delivery_id.clone();
    store.enqueue(&[event]).await.unwrap();
    id
}

fn ok_attempt(at: Timestamp) -> Attempt {
    Attempt {
        at,
        status_code: Some(200),
        error: None,
        duration_ms: 12,
    }
}

pub async fn enqueued_deliveries_are_pending_and_listed_newest_first(
    store: Arc<dyn DeliveryStore>,
) {
    let application = app();
    let first = outbox(
        &application,
        Environment::Sandbox,
        at(0),
        &["https://a.example/hooks"],
    );
    let second = outbox(
        &application,
        Environment::Sandbox,
        at(10),
        &["https://a.example/hooks", "https://b.example/hooks"],
    );
    store
        .enqueue(&[first.clone(), second.clone()])
        .await
        .unwrap();
    let page = store
        .list(
            &application,
            Environment::Sandbox,
            None,
            PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.items[2].id, first.destinations[0].delivery_id);
    let delivery = &page.items[2];
    assert_eq!(delivery.status, DeliveryStatus::Pending);
    assert_eq!(delivery.event_id, first.event.id);
    assert_eq!(delivery.event_type, EventType::declared("consent.created"));
    assert_eq!(delivery.url, "https://a.example/hooks");
    assert_eq!(delivery.body, first.body);
    assert_eq!(delivery.next_attempt_at, Some(at(0)));
    assert!(delivery.attempts.is_empty());
    let found = store
        .find(
            &application,
            Environment::Sandbox,
            &second.destinations[1].delivery_id,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.url, "https://b.example/hooks");
    assert_eq!(found.event_id, second.event.id);
}

pub async fn listing_is_scoped_to_application_and_environment_and_filters_by_status(
    store: Arc<dyn DeliveryStore>,
) {
    let mine = app();
    let other = app();
    let sandbox = outbox(&mine, Environment::Sandbox, at(0), &["https://a.example/"]);
    let live = outbox(&mine, Environment::Live, at(1), &["https://a.example/"]);
    let foreign = outbox(&other, Environment::Sandbox, at(2), &["https://a.example/"]);
    store
        .enqueue(&[sandbox.clone(), live.clone(), foreign.clone()])
        .await
        .unwrap();
    let listed = store
        .list(&mine, Environment::Sandbox, None, PageRequest::default())
        .await
        .unwrap();
    assert_eq!(
        listed.items.iter().map(|d| &d.id).collect::<Vec<_>>(),
        vec![&sandbox.destinations[0].delivery_id]
    );
    assert!(
        store
            .find(
                &mine,
                Environment::Sandbox,
                &live.destinations[0].delivery_id
            )
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .find(
                &mine,
                Environment::Sandbox,
                &foreign.destinations[0].delivery_id
            )
            .await
            .unwrap()
            .is_none()
    );
    let delivered = &sandbox.destinations[0].delivery_id;
    store
        .record_attempt(delivered, &ok_attempt(at(5)), NextStep::Succeeded)
        .await
        .unwrap();
    let succeeded = store
        .list(
            &mine,
            Environment::Sandbox,
            Some(DeliveryStatus::Succeeded),
            PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(succeeded.total, 1);
    let pending = store
        .list(
            &mine,
            Environment::Sandbox,
            Some(DeliveryStatus::Pending),
            PageRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!(pending.total, 0);
}

pub async fn listing_pages(store: Arc<dyn DeliveryStore>) {
    let application = app();
    let batch: Vec<Outbox> = (0..5)
        .map(|i| {
            outbox(
                &application,
                Environment::Live,
                at(i),
                &["https://a.example/"],
            )
        })
        .collect();
    store.enqueue(&batch).await.unwrap();
    let page = store
        .list(
            &application,
            Environment::Live,
            None,
            PageRequest::new(Some(2), Some(2)).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(page.total, 5);
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.items[0].id, batch[2].destinations[0].delivery_id);
}

pub async fn lease_returns_due_pending_deliveries_once(store: Arc<dyn DeliveryStore>) {
    let application = app();
    let due = outbox(
        &application,
        Environment::Sandbox,
        at(0),
        &["https://a.example/"],
    );
    let later = outbox(
        &application,
        Environment::Sandbox,
        at(60_000),
        &["https://a.example/"],
    );
    store.enqueue(&[due.clone(), later]).await.unwrap();
    let leased = store
        .lease_due(at(1_000), at(31_000), 10, &[])
        .await
        .unwrap();
    let mine: Vec<_> = leased
        .iter()
        .filter(|d| d.application_id == application)
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].id, due.destinations[0].delivery_id);
    assert_eq!(mine[0].body, due.body);
    let again = store
        .lease_due(at(2_000), at(32_000), 10, &[])
        .await
        .unwrap();
    assert!(
        again
            .iter()
            .all(|d| d.id != due.destinations[0].delivery_id)
    );
}

pub async fn an_expired_lease_makes_the_delivery_due_again(store: Arc<dyn DeliveryStore>) {
    let application = app();
    let id = enqueued_delivery(&store, &application, Environment::Sandbox).await;
    assert!(
        store
            .lease_due(at(0), at(30_000), 10, &[])
            .await
            .unwrap()
            .iter()
            .any(|d| d.id == id)
    );
    // The lessee died without recording anything: at-least-once means it comes back.
    let again = store
        .lease_due(at(30_000), at(60_000), 10, &[])
        .await
        .unwrap();
    assert!(again.iter().any(|d| d.id == id));
}

pub async fn two_workers_never_lease_the_same_delivery(store: Arc<dyn DeliveryStore>) {
    let application = app();
    let batch: Vec<Outbox> = (0..30)
        .map(|i| {
            outbox(
                &application,
                Environment::Sandbox,
                at(i),
                &["https://a.example/"],
            )
        })
        .collect();
    store.enqueue(&batch).await.unwrap();
    let workers = (0..3).map(|_| {
        let store = store.clone();
        let application = application.clone();
        async move {
            let mut mine: Vec<DeliveryId> = Vec::new();
            loop {
                let leased = store
                    .lease_due(at(1_000), at(600_000), 4, &[])
                    .await
                    .unwrap();
                let leased: Vec<DeliveryId> = leased
                    .into_iter()
                    .filter(|d| d.application_id == application)
                    .map(|d| d.id)
                    .collect();
                if leased.is_empty() {
                    return mine;
                }
                mine.extend(leased);
            }
        }
    });
    let mut leased: Vec<DeliveryId> = join_all(workers).await.into_iter().flatten().collect();
    let mut expected: Vec<DeliveryId> = batch
        .iter()
        .map(|o| o.destinations[0].delivery_id.clone())
        .collect();
    leased.sort();
    expected.sort();
    assert_eq!(leased, expected, "every delivery leased exactly once");
}
