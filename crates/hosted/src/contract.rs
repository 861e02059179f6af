//! The [`ConfirmationStore`] contract. Adapters run it through
//! `confirmation_store_contract!(make)`, `make` being an
//! `async fn() -> Option<(Arc<dyn ConfirmationStore>, G)>` giving a fresh store.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use idconsent_kernel::Timestamp;

use crate::guesses::{GuessPolicy, Taken};
use crate::ports::{CeremonyStep, ConfirmationStore, Issued, NewCode};

#[macro_export]
macro_rules! confirmation_store_contract {
    ($make:path) => {
        $crate::confirmation_store_contract!(@cases $make;
            a_code_is_issued_at_most_once_a_minute,
            concurrent_issuers_store_once,
            attempts_are_taken_before_comparing_and_the_last_one_locks,
            concurrent_guesses_never_exceed_the_attempts,
            wrong_guesses_are_counted_across_resends,
            concurrent_guesses_never_exceed_the_window,
            a_right_guess_is_given_back,
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
const DAY: Duration = Duration::from_secs(24 * 3600);
const POLICY: GuessPolicy = GuessPolicy {
    lock: Duration::from_secs(15 * 60),
    per_window: 10,
    window: DAY,
};

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

async fn take(store: &Arc<dyn ConfirmationStore>, subject: &str, now: Timestamp) -> Taken {
    store.take_attempt(subject, &POLICY, now).await.unwrap()
}

fn taken_at(taken: &Taken) -> Timestamp {
    match taken {
        Taken::Code { taken_at, .. } => *taken_at,
        other => panic!("no guess taken: {other:?}"),
    }
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
    assert_eq!(take(&store, &subject, at(0)).await, Taken::NoCode);
    issue(&store, &code(&subject, "h", at(0))).await;
    let lock_until = at(1_000).plus(15 * MINUTE);
    for left in (0..5).rev() {
        assert_eq!(
            take(&store, &subject, at(1_000)).await,
            Taken::Code {
                code_hash: "h".into(),
                attempts_left: left,
                locked_until: (left == 0).then_some(lock_until),
                taken_at: at(1_000),
            }
        );
    }
    assert_eq!(
        take(&store, &subject, at(2_000)).await,
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
    // The new code has five attempts; the window has four guesses left.
    assert!(matches!(
        take(&store, &subject, after).await,
        Taken::Code {
            attempts_left: 4,
            ..
        }
    ));
    assert_eq!(
        store.find(&subject).await.unwrap().unwrap().guesses.len(),
        6
    );
    // An expired code takes nothing.
    let expired = after.plus(11 * MINUTE);
    assert_eq!(take(&store, &subject, expired).await, Taken::NoCode);
}

pub async fn concurrent_guesses_never_exceed_the_attempts(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    issue(&store, &code(&subject, "h", at(0))).await;
    let guesses = (0..20).map(|_| {
        let store = store.clone();
        let subject = subject.clone();
        async move { take(&store, &subject, at(1)).await }
    });
    let taken = join_all(guesses)
        .await
        .into_iter()
        .filter(|taken| matches!(taken, Taken::Code { .. }))
        .count();
    assert_eq!(taken, 5);
}

/// A resend gives a code new attempts, never the subject new guesses: ten in any day.
pub async fn wrong_guesses_are_counted_across_resends(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    let mut sent = at(0);
    for (round, guesses) in [4, 4, 2].into_iter().enumerate() {
        assert_eq!(
            issue(&store, &code(&subject, &format!("h{round}"), sent)).await,
            Issued::Stored
        );
        for _ in 0..guesses {
            assert!(matches!(
                take(&store, &subject, sent.plus(MINUTE / 2)).await,
                Taken::Code { .. }
            ));
        }
        sent = sent.plus(2 * MINUTE);
    }
    // The tenth guess locked the subject until the first is a day old, though the code has
    // attempts left: no guess, no new code.
    let first = at(0).plus(MINUTE / 2);
    let record = store.find(&subject).await.unwrap().unwrap();
    assert_eq!(record.guesses.len(), 10);
    assert_eq!(record.attempts_left, 3);
    assert_eq!(record.locked_until, Some(first.plus(DAY)));
    assert_eq!(
        take(&store, &subject, sent).await,
        Taken::Locked {
            until: first.plus(DAY)
        }
    );
    assert_eq!(
        issue(&store, &code(&subject, "h3", sent)).await,
        Issued::Locked {
            until: first.plus(DAY)
        }
    );
    // A day later the first guesses have left the window.
    let later = first.plus(DAY);
    assert_eq!(
        issue(&store, &code(&subject, "h4", later)).await,
        Issued::Stored
    );
    // Six of the ten still count (taken a minute or more after the first): three left.
    assert!(matches!(
        take(&store, &subject, later.plus(MINUTE)).await,
        Taken::Code {
            attempts_left: 3,
            ..
        }
    ));
}

/// Twenty concurrent guesses on a code with more attempts than the window: exactly the
/// window's ten are taken.
pub async fn concurrent_guesses_never_exceed_the_window(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    let mut generous = code(&subject, "h", at(0));
    generous.attempts = 50;
    issue(&store, &generous).await;
    let guesses = (0..20).map(|n| {
        let store = store.clone();
        let subject = subject.clone();
        async move { take(&store, &subject, at(1 + n)).await }
    });
    let taken = join_all(guesses).await;
    let counted = taken
        .iter()
        .filter(|taken| matches!(taken, Taken::Code { .. }))
        .count();
    assert_eq!(counted, 10, "{taken:?}");
    let record = store.find(&subject).await.unwrap().unwrap();
    assert_eq!(record.guesses.len(), 10);
    assert_eq!(record.attempts_left, 40);
    assert!(matches!(
        take(&store, &subject, at(100)).await,
        Taken::Locked { .. }
    ));
}

/// Only wrong codes count: the guess of a right code is given back when it confirms, with the
/// lock it set.
pub async fn a_right_guess_is_given_back(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    issue(&store, &code(&subject, "h1", at(0))).await;
    for _ in 0..4 {
        take(&store, &subject, at(1)).await;
    }
    issue(&store, &code(&subject, "h2", at(120_000))).await;
    for _ in 0..5 {
        take(&store, &subject, at(120_001)).await;
    }
    // The code's fifth attempt and the window's tenth guess: locked, and right.
    let lock_until = at(120_001).plus(15 * MINUTE);
    let tenth = take(&store, &subject, at(120_002)).await;
    assert_eq!(tenth, Taken::Locked { until: lock_until });
    let record = store.find(&subject).await.unwrap().unwrap();
    assert_eq!(record.guesses.len(), 9);
    issue(&store, &code(&subject, "h3", lock_until)).await;
    let tenth = take(&store, &subject, lock_until.plus(MINUTE)).await;
    assert!(matches!(
        tenth,
        Taken::Code {
            attempts_left: 0,
            locked_until: Some(_),
            ..
        }
    ));
    assert!(
        store
            .confirm(
                &subject,
                "h3",
                taken_at(&tenth),
                "t",
                lock_until.plus(20 * MINUTE)
            )
            .await
            .unwrap()
    );
    let record = store.find(&subject).await.unwrap().unwrap();
    assert_eq!(record.guesses.len(), 9);
    assert_eq!(record.locked_until, None);
}

pub async fn a_code_confirms_once_and_buys_a_token(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    issue(&store, &code(&subject, "h", at(0))).await;
    // The right code on the last attempt: the lock that attempt set is lifted.
    let mut last = Taken::NoCode;
    for n in 0..5 {
        last = take(&store, &subject, at(1 + n)).await;
    }
    assert!(
        store
            .confirm(&subject, "h", taken_at(&last), "t", at(0).plus(15 * MINUTE))
            .await
            .unwrap()
    );
    assert!(
        !store
            .confirm(&subject, "h", at(1), "t2", at(5))
            .await
            .unwrap()
    );
    assert!(
        !store
            .confirm(&subject, "other", at(1), "t3", at(5))
            .await
            .unwrap()
    );
    let record = store.find(&subject).await.unwrap().unwrap();
    assert_eq!(record.code_hash, None);
    assert_eq!(record.locked_until, None);
    assert_eq!(record.guesses, (1..5).map(at).collect::<Vec<_>>());
    assert_eq!(record.token_hash, Some("t".into()));
    assert_eq!(record.token_expires_at, Some(at(0).plus(15 * MINUTE)));
}

pub async fn ceremony_steps_and_consumption_need_the_live_token(store: Arc<dyn ConfirmationStore>) {
    let subject = subject();
    issue(&store, &code(&subject, "h", at(0))).await;
    take(&store, &subject, at(1)).await;
    store
        .confirm(&subject, "h", at(0), "t", at(0).plus(15 * MINUTE))
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
    // The token, the code and the ceremony are gone; the guess stays counted.
    let record = store.find(&subject).await.unwrap().unwrap();
    assert_eq!(
        (record.token_hash, record.code_hash, record.ceremony),
        (None, None, None)
    );
    assert_eq!(record.passkey, None);
    assert_eq!(record.context_hash, None);
    assert_eq!(record.guesses, vec![at(1)]);
    assert!(!store.consume(&subject, "t").await.unwrap());
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
