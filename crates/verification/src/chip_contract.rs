//! The [`ChipChallengeStore`] contract. Adapters run it through
//! `chip_challenge_store_contract!(make)`, `make` being an `async fn() -> Option<(Arc<dyn
//! ChipChallengeStore>, G)>`.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use futures_util::future::join_all;
use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{
    IdGenerator, OsRandom, RandomSource, SystemClock, Timestamp, UlidGenerator,
};

use crate::chip::{
    CHIP_CHALLENGE_LIFETIME, ChallengeStoreError, ChipChallenge, ChipChallengeStore,
};

#[macro_export]
macro_rules! chip_challenge_store_contract {
    ($make:path) => {
        $crate::chip_challenge_store_contract!(@cases $make;
            an_issued_challenge_is_taken_once_and_whole,
            another_application_neither_takes_nor_spends_a_challenge,
            an_expired_challenge_is_not_taken_and_issuing_clears_expired_ones,
            concurrent_takes_of_one_challenge_have_exactly_one_winner,
            issuing_the_same_bytes_twice_is_a_duplicate,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let Some((store, _guard)) = $make().await else { return };
                $crate::chip_contract::$case(store).await;
            }
        )*
    };
}

const T0: i64 = 1_763_719_200_000;

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + offset_ms)
}

/// A fresh application id per case, so cases never see each other's rows.
fn application() -> ApplicationId {
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ));
    ids.next()
}

fn issue(application: &ApplicationId, now: Timestamp) -> ChipChallenge {
    let random: &dyn RandomSource = &OsRandom;
    ChipChallenge::issue(application.clone(), random, now)
}

pub async fn an_issued_challenge_is_taken_once_and_whole(store: Arc<dyn ChipChallengeStore>) {
    let app = application();
    let challenge = issue(&app, at(0));
    store.issue(&challenge).await.unwrap();
    let taken = store
        .take(&app, challenge.bytes(), at(1_000))
        .await
        .unwrap();
    assert_eq!(taken.as_ref(), Some(&challenge));
    let again = store
        .take(&app, challenge.bytes(), at(1_001))
        .await
        .unwrap();
    assert_eq!(again, None, "a challenge is single use");
    let mut other = *challenge.bytes();
    other[0] ^= 0xFF;
    assert_eq!(store.take(&app, &other, at(1_002)).await.unwrap(), None);
}

pub async fn another_application_neither_takes_nor_spends_a_challenge(
    store: Arc<dyn ChipChallengeStore>,
) {
    let (owner, stranger) = (application(), application());
    let challenge = issue(&owner, at(0));
    store.issue(&challenge).await.unwrap();
    assert_eq!(
        store
            .take(&stranger, challenge.bytes(), at(10))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store.take(&owner, challenge.bytes(), at(20)).await.unwrap(),
        Some(challenge)
    );
}

pub async fn an_expired_challenge_is_not_taken_and_issuing_clears_expired_ones(
    store: Arc<dyn ChipChallengeStore>,
) {
    let app = application();
    let lifetime = i64::try_from(CHIP_CHALLENGE_LIFETIME.as_millis()).unwrap();
    let expired = issue(&app, at(0));
    store.issue(&expired).await.unwrap();
    assert_eq!(
        store
            .take(&app, expired.bytes(), at(lifetime))
            .await
            .unwrap(),
        None,
        "not answerable at its expiry"
    );
    // Issuing at or after another's expiry removes it: a take before expiry would then miss it,
    // which proves the row is gone (a take judges time only for rows that exist).
    let left = issue(&app, at(0));
    store.issue(&left).await.unwrap();
    let later = issue(&app, at(lifetime));
    store.issue(&later).await.unwrap();
    assert_eq!(store.take(&app, left.bytes(), at(1)).await.unwrap(), None);
    assert_eq!(
        store
            .take(&app, later.bytes(), at(lifetime + 1))
            .await
            .unwrap(),
        Some(later)
    );
}

pub async fn concurrent_takes_of_one_challenge_have_exactly_one_winner(
    store: Arc<dyn ChipChallengeStore>,
) {
    let app = application();
    let challenge = issue(&app, at(0));
    store.issue(&challenge).await.unwrap();
    // The adapters run each call on their own threads, so these overlap in the database.
    let takes = (0..20).map(|_| store.take(&app, challenge.bytes(), at(5)));
    let won = join_all(takes)
        .await
        .into_iter()
        .map(Result::unwrap)
        .filter(Option::is_some)
        .count();
    assert_eq!(won, 1);
}

pub async fn issuing_the_same_bytes_twice_is_a_duplicate(store: Arc<dyn ChipChallengeStore>) {
    let app = application();
    let challenge = issue(&app, at(0));
    store.issue(&challenge).await.unwrap();
    let twin = ChipChallenge::restore(
        app.clone(),
        *challenge.bytes(),
        at(100),
        at(100).plus(CHIP_CHALLENGE_LIFETIME),
    );
    assert!(matches!(
        store.issue(&twin).await,
        Err(ChallengeStoreError::Duplicate)
    ));
    // The first is still there, unchanged.
    assert_eq!(
        store.take(&app, challenge.bytes(), at(200)).await.unwrap(),
        Some(challenge)
    );
}
