//! The [`ConfirmationStore`] contract. Adapters run it through
//! `confirmation_store_contract!(make)`, `make` being an
//! `async fn() -> Option<(Arc<dyn ConfirmationStore>, G)>` giving a fresh store.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use idconsent_kernel::Timestamp;

use crate::ports::{CeremonyStep, ConfirmationStore, Issued, NewCode, Taken};

#[macro_export]
macro_rules! confirmation_store_contract {
    ($make:path) => {
        $crate::confirmation_store_contract!(@cases $make;
            a_code_is_issued_at_most_once_a_minute,
            concurrent_issuers_store_once,
            attempts_are_taken_before_comparing_and_the_last_one_locks,
            concurrent_guesses_never_exceed_the_attempts,
            a_code_confirms_once_and_buys_a_token,
            ceremony_steps_and_consumption_need_the_live_token,
            expired_subjects_are_forgotten,
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

const T0: i64 = 1_763_719_200_000;
const MINUTE: Duration = Duration::from_secs(60);

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + offset_ms)
}

fn subject() -> String {
    format!(
        "mandate:md_{}:ann@example.com",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

fn code(subject: &str, hash: &str, sent: Timestamp) -> NewCode {
    NewCode {
        subject: subject.to_owned(),
        code_hash: hash.to_owned(),
        expires_at: sent.plus(10 * MINUTE),
        attempts: 5,
        sent_at: sent,
    }
}

async fn issue(store: &Arc<dyn ConfirmationStore>, new: &NewCode) -> Issued {
    store
        .issue_code(new, new.sent_at.minus(MINUTE), new.sent_at)
        .await
        .unwrap()
}

pub async fn a_code_is_issued_at_most_once_a_minute(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    assert_eq!(
        issue(&store, &code(&subject, "a", at(0))).await,
        Issued::Stored
    );
    assert_eq!(
        issue(&store, &code(&subject, "b", at(59_999))).await,
        Issued::TooSoon {
            last_sent_at: at(0)
        }
    );
    assert_eq!(
        store.find(&subject).await.unwrap().unwrap().code_hash,
        Some("a".into())
    );
    assert_eq!(
        issue(&store, &code(&subject, "c", at(60_000))).await,
        Issued::Stored
    );
    let record = store.find(&subject).await.unwrap().unwrap();
    assert_eq!(record.code_hash, Some("c".into()));
    assert_eq!(record.attempts_left, 5);
    assert_eq!(record.code_sent_at, at(60_000));
    assert_eq!(store.find("nobody").await.unwrap(), None);
}

pub async fn concurrent_issuers_store_once(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    let issuers = (0..10).map(|n| {
        let store = store.clone();
        let new = code(&subject, &format!("h{n}"), at(n));
        async move { issue(&store, &new).await }
    });
    let stored = join_all(issuers)
        .await
        .into_iter()
        .filter(|issued| *issued == Issued::Stored)
        .count();
    assert_eq!(stored, 1);
}

pub async fn attempts_are_taken_before_comparing_and_the_last_one_locks(
    store: Arc<dyn ConfirmationStore>,
) {
    let subject = subject();
    assert_eq!(
        store.take_attempt(&subject, at(0), at(1)).await.unwrap(),
        Taken::NoCode
    );
    issue(&store, &code(&subject, "h", at(0))).await;
    let lock_until = at(1_000).plus(15 * MINUTE);
    for left in (0..5).rev() {
        assert_eq!(
            store
                .take_attempt(&subject, at(1_000), lock_until)
                .await
                .unwrap(),
            Taken::Code {
                code_hash: "h".into(),
                attempts_left: left
            }
        );
    }
    assert_eq!(
        store
            .take_attempt(&subject, at(2_000), lock_until)
            .await
            .unwrap(),
        Taken::Locked { until: lock_until }
    );
    // Locked: no new code until the lock ends, then one is issued as usual.
    assert_eq!(
        issue(&store, &code(&subject, "h2", at(120_000))).await,
        Issued::Locked { until: lock_until }
    );
    let after = lock_until.plus(Duration::from_millis(1));
    assert_eq!(
        issue(&store, &code(&subject, "h2", after)).await,
        Issued::Stored
    );
    assert!(matches!(
        store.take_attempt(&subject, after, after).await.unwrap(),
        Taken::Code {
            attempts_left: 4,
            ..
        }
    ));
    // An expired code takes nothing.
    let expired = after.plus(11 * MINUTE);
    assert_eq!(
        store
            .take_attempt(&subject, expired, expired)
            .await
            .unwrap(),
        Taken::NoCode
    );
}

pub async fn concurrent_guesses_never_exceed_the_attempts(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    issue(&store, &code(&subject, "h", at(0))).await;
    let guesses = (0..20).map(|_| {
        let store = store.clone();
        let subject = subject.clone();
        async move { store.take_attempt(&subject, at(1), at(2)).await.unwrap() }
    });
    let taken = join_all(guesses)
        .await
        .into_iter()
        .filter(|taken| matches!(taken, Taken::Code { .. }))
        .count();
    assert_eq!(taken, 5);
}

pub async fn a_code_confirms_once_and_buys_a_token(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    issue(&store, &code(&subject, "h", at(0))).await;
    // The right code on the last attempt: the lock that attempt set is lifted.
    for _ in 0..5 {
        store.take_attempt(&subject, at(1), at(2)).await.unwrap();
    }
    assert!(
        store
            .confirm(&subject, "h", "t", at(0).plus(15 * MINUTE))
            .await
            .unwrap()
    );
    assert!(!store.confirm(&subject, "h", "t2", at(5)).await.unwrap());
    assert!(!store.confirm(&subject, "other", "t3", at(5)).await.unwrap());
    let record = store.find(&subject).await.unwrap().unwrap();
    assert_eq!(record.code_hash, None);
    assert_eq!(record.locked_until, None);
    assert_eq!(record.token_hash, Some("t".into()));
    assert_eq!(record.token_expires_at, Some(at(0).plus(15 * MINUTE)));
}

pub async fn ceremony_steps_and_consumption_need_the_live_token(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    issue(&store, &code(&subject, "h", at(0))).await;
    store
        .confirm(&subject, "h", "t", at(0).plus(15 * MINUTE))
        .await
        .unwrap();
    let step = CeremonyStep {
        ceremony: "state".into(),
        passkey: Some("passkey".into()),
        passkey_counter: 7,
        context_hash: Some("ab".repeat(32)),
    };
    assert!(
        !store
            .save_ceremony(&subject, "x", at(1), &step)
            .await
            .unwrap()
    );
    let late = at(0).plus(15 * MINUTE);
    assert!(
        !store
            .save_ceremony(&subject, "t", late, &step)
            .await
            .unwrap()
    );
    assert!(
        store
            .save_ceremony(&subject, "t", at(1), &step)
            .await
            .unwrap()
    );
    let record = store.find(&subject).await.unwrap().unwrap();
    assert_eq!(record.ceremony, Some("state".into()));
    assert_eq!(record.passkey, Some("passkey".into()));
    assert_eq!(record.passkey_counter, 7);
    assert_eq!(record.context_hash, Some("ab".repeat(32)));

    assert!(!store.consume(&subject, "x").await.unwrap());
    let consumers = (0..5).map(|_| {
        let store = store.clone();
        let subject = subject.clone();
        async move { store.consume(&subject, "t").await.unwrap() }
    });
    let consumed = join_all(consumers).await.into_iter().filter(|c| *c).count();
    assert_eq!(consumed, 1);
    assert_eq!(store.find(&subject).await.unwrap(), None);
}

pub async fn expired_subjects_are_forgotten(store: Arc<dyn ConfirmationStore>) {
    let old = subject();
    issue(&store, &code(&old, "h", at(0))).await;
    let fresh = format!("{old}-fresh");
    issue(&store, &code(&fresh, "h", at(3_600_000))).await;
    let forgotten = store.forget_before(at(3_600_000)).await.unwrap();
    assert!(forgotten >= 1);
    assert_eq!(store.find(&old).await.unwrap(), None);
    assert!(store.find(&fresh).await.unwrap().is_some());
}
