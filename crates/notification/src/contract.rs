//! The [`MessageStore`] contract: every adapter runs these cases against a fresh store.
//!
//! Use it through the macro, which makes one test per case:
//!
//! ```text
//! async fn sqlite_store() -> Option<(Arc<dyn MessageStore>, TestDatabase)> { /* fresh */ }
//! idconsent_notification::message_store_contract!(sqlite_store);
//! ```
//!
//! The factory returns `None` to skip (a backend that is not configured locally); it should
//! print why. Cases assert only what the port documents.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use futures_util::future::join_all;
use idconsent_kernel::id::MessageId;
use idconsent_kernel::{IdGenerator, OsRandom, SystemClock, Timestamp, UlidGenerator};

use crate::message::{Address, Channel, DeliveryStatus, Message};
use crate::ports::{MessageStore, MessageStoreError};

/// Runs every case of the contract as its own test. `$make` is an `async fn() ->
/// Option<(Arc<dyn MessageStore>, G)>` giving a fresh, empty store and a guard that keeps its
/// backing resources (a temporary database) alive until the case ends.
#[macro_export]
macro_rules! message_store_contract {
    ($make:path) => {
        $crate::message_store_contract!(@cases $make;
            inserted_messages_come_back_unchanged,
            inserting_an_id_twice_is_duplicate,
            listing_is_per_address_oldest_first_and_limited,
            lease_returns_only_due_queued_messages_of_the_channel,
            a_leased_message_is_not_leased_again_before_the_lease_ends,
            concurrent_leases_never_share_a_message,
            delivered_messages_can_have_their_content_erased,
            failures_reschedule_or_fail_for_good,
            updates_of_unknown_messages_are_not_found,
            count_queued_counts_per_channel,
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

const T0: Timestamp = Timestamp::from_millis(1_763_719_200_000);

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

fn message(to: &str, created_at: Timestamp) -> Message {
    Message {
        id: ids().next::<MessageId>(),
        to: Address::parse(to).expect("contract addresses are valid"),
        subject: "Your code".into(),
        body: "Your idconsent code is 123456. It expires in 10 minutes.".into(),
        code: Some("123456".into()),
        link: Some("https://dashboard.example/verify-email?token=abc".into()),
        status: DeliveryStatus::Queued,
        attempts: 0,
        last_error: None,
        next_attempt_at: created_at,
        created_at,
        delivered_at: None,
    }
}

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0.as_millis() + offset_ms)
}

pub async fn inserted_messages_come_back_unchanged(store: Arc<dyn MessageStore>) {
    let original = message("+15550000001", T0);
    store.insert(&original).await.unwrap();
    let listed = store.list_for("+15550000001", 10).await.unwrap();
    assert_eq!(listed, vec![original]);
}

pub async fn inserting_an_id_twice_is_duplicate(store: Arc<dyn MessageStore>) {
    let original = message("ops@example.com", T0);
    store.insert(&original).await.unwrap();
    let again = store.insert(&original).await;
    assert!(
        matches!(again, Err(MessageStoreError::Duplicate)),
        "{again:?}"
    );
}

pub async fn listing_is_per_address_oldest_first_and_limited(store: Arc<dyn MessageStore>) {
    let later = message("+15550000002", at(2_000));
    let earlier = message("+15550000002", at(1_000));
    let other = message("+15550000003", at(500));
    for m in [&later, &earlier, &other] {
        store.insert(m).await.unwrap();
    }
    let listed = store.list_for("+15550000002", 10).await.unwrap();
    assert_eq!(
        listed.iter().map(|m| &m.id).collect::<Vec<_>>(),
        vec![&earlier.id, &later.id]
    );
    assert_eq!(store.list_for("+15550000002", 1).await.unwrap().len(), 1);
    assert!(store.list_for("+15559999999", 10).await.unwrap().is_empty());
}

pub async fn lease_returns_only_due_queued_messages_of_the_channel(store: Arc<dyn MessageStore>) {
    let due_sms = message("+15550000004", at(0));
    let future_sms = message("+15550000004", at(60_000));
    let due_email = message("ops@example.com", at(0));
    for m in [&due_sms, &future_sms, &due_email] {
        store.insert(m).await.unwrap();
    }
    let leased = store
        .lease_due(Channel::Sms, at(1_000), at(121_000), 10)
        .await
        .unwrap();
    assert_eq!(
        leased.iter().map(|m| &m.id).collect::<Vec<_>>(),
        vec![&due_sms.id]
    );
}

pub async fn a_leased_message_is_not_leased_again_before_the_lease_ends(
    store: Arc<dyn MessageStore>,
) {
    let m = message("+15550000005", T0);
    store.insert(&m).await.unwrap();
    assert_eq!(
        store
            .lease_due(Channel::Sms, at(0), at(120_000), 10)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        store
            .lease_due(Channel::Sms, at(1), at(120_001), 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The lessee died: after the lease the message is due again (at-least-once).
    let again = store
        .lease_due(Channel::Sms, at(120_000), at(240_000), 10)
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, m.id);
}

pub async fn concurrent_leases_never_share_a_message(store: Arc<dyn MessageStore>) {
    let mut all = Vec::new();
    for i in 0..40 {
        let m = message("+15550000006", at(i));
        store.insert(&m).await.unwrap();
        all.push(m.id);
    }
    // Four lessees polled together: adapters that do blocking work on a thread pool really
    // run them at the same time.
    let lessees = (0..4).map(|_| {
        let store = store.clone();
        async move {
            let mut mine = Vec::new();
            loop {
                let batch = store
                    .lease_due(Channel::Sms, at(100), at(600_000), 3)
                    .await
                    .unwrap();
                if batch.is_empty() {
                    return mine;
                }
                mine.extend(batch.into_iter().map(|m| m.id));
            }
        }
    });
    let mut leased: Vec<MessageId> = join_all(lessees).await.into_iter().flatten().collect();
    leased.sort();
    all.sort();
    assert_eq!(leased, all, "every message leased exactly once");
}

pub async fn delivered_messages_can_have_their_content_erased(store: Arc<dyn MessageStore>) {
    let kept = message("+15550000007", at(0));
    let erased = message("+15550000007", at(1));
    store.insert(&kept).await.unwrap();
    store.insert(&erased).await.unwrap();
    store.mark_delivered(&kept.id, at(10), false).await.unwrap();
    store
        .mark_delivered(&erased.id, at(11), true)
        .await
        .unwrap();
    let listed = store.list_for("+15550000007", 10).await.unwrap();
    assert_eq!(listed[0].status, DeliveryStatus::Delivered);
    assert_eq!(listed[0].attempts, 1);
    assert_eq!(listed[0].delivered_at, Some(at(10)));
    assert_eq!(listed[0].code.as_deref(), Some("123456"));
    assert_eq!(listed[1].status, DeliveryStatus::Delivered);
    assert_eq!(
        (listed[1].body.as_str(), &listed[1].code, &listed[1].link),
        ("", &None, &None)
    );
    assert_eq!(store.count_queued(Channel::Sms).await.unwrap(), 0);
}

pub async fn failures_reschedule_or_fail_for_good(store: Arc<dyn MessageStore>) {
    let m = message("+15550000008", T0);
    store.insert(&m).await.unwrap();
    store
        .record_failure(&m.id, "gateway timeout", Some(at(5_000)))
        .await
        .unwrap();
    assert!(
        store
            .lease_due(Channel::Sms, at(4_999), at(9_999), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let retried = store
        .lease_due(Channel::Sms, at(5_000), at(9_999), 10)
        .await
        .unwrap();
    assert_eq!(retried[0].attempts, 1);
    assert_eq!(retried[0].last_error.as_deref(), Some("gateway timeout"));
    store.record_failure(&m.id, "rejected", None).await.unwrap();
    let listed = store.list_for("+15550000008", 10).await.unwrap();
    assert_eq!(listed[0].status, DeliveryStatus::Failed);
    assert_eq!(listed[0].attempts, 2);
    assert!(
        store
            .lease_due(Channel::Sms, at(999_999), at(999_999), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn updates_of_unknown_messages_are_not_found(store: Arc<dyn MessageStore>) {
    let unknown = ids().next::<MessageId>();
    assert!(matches!(
        store.mark_delivered(&unknown, T0, true).await,
        Err(MessageStoreError::NotFound)
    ));
    assert!(matches!(
        store.record_failure(&unknown, "x", None).await,
        Err(MessageStoreError::NotFound)
    ));
}

pub async fn count_queued_counts_per_channel(store: Arc<dyn MessageStore>) {
    for to in ["+15550000009", "+15550000010", "ops@example.com"] {
        store.insert(&message(to, T0)).await.unwrap();
    }
    assert_eq!(store.count_queued(Channel::Sms).await.unwrap(), 2);
    assert_eq!(store.count_queued(Channel::Email).await.unwrap(), 1);
}
