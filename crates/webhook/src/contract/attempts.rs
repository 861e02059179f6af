//! The contract cases about attempts, retries and leases handed back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

pub async fn attempts_are_recorded_in_order_and_steps_applied(store: Arc<dyn DeliveryStore>) {
    let application = app();
    let id = enqueued_delivery(&store, &application, Environment::Sandbox).await;
    let failed = Attempt {
        at: at(1),
        status_code: Some(500),
        error: None,
        duration_ms: 7,
    };
    let timeout = Attempt {
        at: at(2),
        status_code: None,
        error: Some("timed out after 5 s".into()),
        duration_ms: 5_000,
    };
    store
        .record_attempt(&id, &failed, NextStep::RetryAt(at(5_000)))
        .await
        .unwrap();
    store
        .record_attempt(&id, &timeout, NextStep::RetryAt(at(300_000)))
        .await
        .unwrap();
    let delivery = store
        .find(&application, Environment::Sandbox, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delivery.attempts, vec![failed.clone(), timeout.clone()]);
    assert_eq!(delivery.status, DeliveryStatus::Pending);
    assert_eq!(delivery.next_attempt_at, Some(at(300_000)));
    assert!(
        store
            .lease_due(at(299_999), at(400_000), 100, &[])
            .await
            .unwrap()
            .iter()
            .all(|d| d.id != id)
    );
    store
        .record_attempt(&id, &ok_attempt(at(300_001)), NextStep::Succeeded)
        .await
        .unwrap();
    let delivery = store
        .find(&application, Environment::Sandbox, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delivery.status, DeliveryStatus::Succeeded);
    assert_eq!(delivery.next_attempt_at, None);
    assert_eq!(delivery.attempts.len(), 3);
    assert!(
        store
            .lease_due(at(999_999_999), at(999_999_999), 100, &[])
            .await
            .unwrap()
            .iter()
            .all(|d| d.id != id)
    );
}

pub async fn recording_an_unknown_delivery_is_not_found(store: Arc<dyn DeliveryStore>) {
    let unknown: DeliveryId = ids().next();
    let outcome = store
        .record_attempt(&unknown, &ok_attempt(at(0)), NextStep::Succeeded)
        .await;
    assert!(matches!(outcome, Err(StoreError::NotFound)), "{outcome:?}");
}

pub async fn a_batch_of_attempts_is_recorded_in_one_write(store: Arc<dyn DeliveryStore>) {
    let application = app();
    let event = outbox(
        &application,
        Environment::Sandbox,
        at(0),
        &["https://a.example/", "https://b.example/"],
    );
    let (a, b) = (
        event.destinations[0].delivery_id.clone(),
        event.destinations[1].delivery_id.clone(),
    );
    store.enqueue(&[event]).await.unwrap();
    let refused = Attempt {
        at: at(1),
        status_code: Some(503),
        error: None,
        duration_ms: 4,
    };
    let record = |delivery: &DeliveryId, attempt: &Attempt, next| AttemptRecord {
        delivery: delivery.clone(),
        attempt: attempt.clone(),
        next,
    };
    let found = store
        .record_attempts(&[
            record(&a, &refused, NextStep::RetryAt(at(5_000))),
            record(&ids().next(), &ok_attempt(at(1)), NextStep::Succeeded),
            record(&b, &ok_attempt(at(2)), NextStep::Succeeded),
            // The same delivery twice (a lease that lapsed): both attempts kept, in order, and
            // the last one decides.
            record(&a, &ok_attempt(at(3)), NextStep::Succeeded),
        ])
        .await
        .unwrap();
    assert_eq!(found, [true, false, true, true]);
    let find = |id: DeliveryId| {
        let (store, application) = (store.clone(), application.clone());
        async move {
            store
                .find(&application, Environment::Sandbox, &id)
                .await
                .unwrap()
                .unwrap()
        }
    };
    let first = find(a).await;
    assert_eq!(first.attempts, vec![refused, ok_attempt(at(3))]);
    assert_eq!(first.status, DeliveryStatus::Succeeded);
    assert_eq!(first.next_attempt_at, None);
    let second = find(b).await;
    assert_eq!(second.attempts, vec![ok_attempt(at(2))]);
    assert_eq!(second.status, DeliveryStatus::Succeeded);
    assert_eq!(
        store.record_attempts(&[]).await.unwrap(),
        Vec::<bool>::new()
    );
}

pub async fn retry_now_makes_any_delivery_due_again(store: Arc<dyn DeliveryStore>) {
    let application = app();
    let id = enqueued_delivery(&store, &application, Environment::Live).await;
    store
        .record_attempt(
            &id,
            &Attempt {
                at: at(1),
                status_code: Some(410),
                error: None,
                duration_ms: 3,
            },
            NextStep::Failed,
        )
        .await
        .unwrap();
    assert!(
        store
            .retry_now(&application, Environment::Sandbox, &id, at(10), ALLOWANCE)
            .await
            .unwrap()
            == ManualRetry::NotFound
    );
    let ManualRetry::Retried(retried) = store
        .retry_now(&application, Environment::Live, &id, at(10), ALLOWANCE)
        .await
        .unwrap()
    else {
        panic!("the owner's delivery is retried");
    };
    assert_eq!(retried.status, DeliveryStatus::Pending);
    assert_eq!(retried.next_attempt_at, Some(at(10)));
    assert_eq!(retried.attempts.len(), 1);
    assert!(
        store
            .lease_due(at(10), at(100), 100, &[])
            .await
            .unwrap()
            .iter()
            .any(|d| d.id == id)
    );
}

pub async fn leasing_skips_the_given_applications_and_released_deliveries_come_back(
    store: Arc<dyn DeliveryStore>,
) {
    let (slow, fast) = (app(), app());
    let slow_events: Vec<Outbox> = (0..3)
        .map(|i| {
            outbox(
                &slow,
                Environment::Sandbox,
                at(i),
                &["https://slow.example/"],
            )
        })
        .collect();
    let fast_event = outbox(
        &fast,
        Environment::Sandbox,
        at(5),
        &["https://fast.example/"],
    );
    store.enqueue(&slow_events).await.unwrap();
    store
        .enqueue(std::slice::from_ref(&fast_event))
        .await
        .unwrap();
    let mine = |leased: &[crate::model::Delivery]| -> Vec<ApplicationId> {
        leased
            .iter()
            .filter(|d| d.application_id == slow || d.application_id == fast)
            .map(|d| d.application_id.clone())
            .collect()
    };
    // The slow application is skipped: only the fast one's delivery is leased.
    let leased = store
        .lease_due(at(100), at(30_000), 100, std::slice::from_ref(&slow))
        .await
        .unwrap();
    assert_eq!(mine(&leased), std::slice::from_ref(&fast));
    // Without the skip the slow ones are due; handed back, they are due again at once.
    let leased = store
        .lease_due(at(200), at(30_000), 100, &[])
        .await
        .unwrap();
    let slow_ids: Vec<DeliveryId> = leased
        .iter()
        .filter(|d| d.application_id == slow)
        .map(|d| d.id.clone())
        .collect();
    assert_eq!(slow_ids.len(), 3);
    store.release(&slow_ids, at(300)).await.unwrap();
    let again = store
        .lease_due(at(300), at(30_000), 100, &[])
        .await
        .unwrap();
    assert_eq!(mine(&again), [slow.clone(), slow.clone(), slow]);
}

async fn failed_delivery(
    store: &Arc<dyn DeliveryStore>,
    application: &ApplicationId,
) -> DeliveryId {
    let id = enqueued_delivery(store, application, Environment::Live).await;
    let failed = Attempt {
        at: at(1),
        status_code: Some(500),
        error: None,
        duration_ms: 3,
    };
    store
        .record_attempt(&id, &failed, NextStep::Failed)
        .await
        .unwrap();
    id
}

pub async fn manual_retries_are_counted_per_window(store: Arc<dyn DeliveryStore>) {
    let application = app();
    let id = failed_delivery(&store, &application).await;
    let retry = |offset: i64| {
        let (store, application, id) = (store.clone(), application.clone(), id.clone());
        async move {
            store
                .retry_now(&application, Environment::Live, &id, at(offset), ALLOWANCE)
                .await
                .unwrap()
        }
    };
    for offset in [10, 20, 30] {
        assert!(matches!(retry(offset).await, ManualRetry::Retried(_)));
    }
    // The fourth within the hour is refused until the window of the first ends.
    assert_eq!(
        retry(40).await,
        ManualRetry::Refused {
            retry_at: at(10 + 3_600_000)
        }
    );
    assert!(matches!(
        retry(10 + 3_600_000).await,
        ManualRetry::Retried(_)
    ));
}

pub async fn concurrent_manual_retries_get_no_more_than_the_allowance(
    store: Arc<dyn DeliveryStore>,
) {
    let application = app();
    let id = failed_delivery(&store, &application).await;
    let retries = (0..20).map(|_| {
        let (store, application, id) = (store.clone(), application.clone(), id.clone());
        async move {
            store
                .retry_now(&application, Environment::Live, &id, at(10), ALLOWANCE)
                .await
                .unwrap()
        }
    });
    let outcomes = join_all(retries).await;
    let retried = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, ManualRetry::Retried(_)))
        .count();
    assert_eq!(retried, ALLOWANCE.per_window as usize, "{outcomes:?}");
}
