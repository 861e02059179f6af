//! The contracts of the request gate's stores ([`ReplayGuard`], [`IdempotencyStore`]): every
//! adapter runs these cases against a fresh store, through the macro:
//!
//! ```text
//! async fn stores() -> Option<(AccessStores, TestDatabase)> { /* fresh */ }
//! idconsent_access::access_store_contract!(stores);
//! ```

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use futures_util::future::join_all;
use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{
    Environment, IdGenerator, OsRandom, RandomSource, SystemClock, Timestamp, UlidGenerator,
};

use crate::ports::{IdempotencyState, IdempotencyStore, ReplayGuard, StoredResponse};

/// The ports of one store, as the cases use them.
#[derive(Debug, Clone)]
pub struct AccessStores {
    pub replay: Arc<dyn ReplayGuard>,
    pub idempotency: Arc<dyn IdempotencyStore>,
}

impl AccessStores {
    /// Both ports from one adapter that implements them.
    pub fn from_one<S>(store: Arc<S>) -> Self
    where
        S: ReplayGuard + IdempotencyStore + 'static,
    {
        Self {
            replay: store.clone(),
            idempotency: store,
        }
    }
}

/// Runs every case as its own test. `$make` is an `async fn() -> Option<(AccessStores, G)>`
/// giving fresh stores and a guard that keeps their backing resources alive.
#[macro_export]
macro_rules! access_store_contract {
    ($make:path) => {
        $crate::access_store_contract!(@cases $make;
            // ReplayGuard
            a_fingerprint_is_first_used_once,
            of_racing_first_uses_exactly_one_is_first,
            forgetting_expired_fingerprints_keeps_unexpired_ones,
            // IdempotencyStore
            claiming_an_unknown_key_claims_it_once,
            a_completed_key_replays_its_response_until_it_expires,
            releasing_a_claim_lets_the_request_be_retried,
            a_claim_whose_lease_ended_can_be_claimed_again,
            idempotency_keys_are_scoped,
            of_racing_claims_exactly_one_is_claimed,
            of_racing_claims_of_an_expired_key_exactly_one_is_claimed,
            forgetting_expired_keys_keeps_unexpired_ones,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((stores, _guard)) = $make().await else { return };
                $crate::contract::$case(stores).await;
            }
        )*
    };
}

const T0: Timestamp = Timestamp::from_millis(1_763_719_200_000);

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0.as_millis() + offset_ms)
}

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

/// Lowercase hex of `bytes` random bytes: unique fingerprints and keys.
fn random_hex(bytes: usize) -> String {
    let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
    random.hex(bytes)
}

// ---------------------------------------------------------------------------------------------
// ReplayGuard

pub async fn a_fingerprint_is_first_used_once(stores: AccessStores) {
    let fingerprint = random_hex(32);
    assert!(
        stores
            .replay
            .first_use(&fingerprint, at(300_000))
            .await
            .unwrap()
    );
    assert!(
        !stores
            .replay
            .first_use(&fingerprint, at(300_000))
            .await
            .unwrap()
    );
    assert!(
        !stores
            .replay
            .first_use(&fingerprint, at(600_000))
            .await
            .unwrap()
    );
    assert!(
        stores
            .replay
            .first_use(&random_hex(32), at(300_000))
            .await
            .unwrap()
    );
}

pub async fn of_racing_first_uses_exactly_one_is_first(stores: AccessStores) {
    for round in 0..3 {
        let fingerprint = random_hex(32);
        let uses = (0..6).map(|_| {
            let replay = stores.replay.clone();
            let fingerprint = fingerprint.clone();
            async move { replay.first_use(&fingerprint, at(300_000)).await.unwrap() }
        });
        let first = join_all(uses).await;
        assert_eq!(
            first.iter().filter(|f| **f).count(),
            1,
            "round {round}: {first:?}"
        );
    }
}

pub async fn forgetting_expired_fingerprints_keeps_unexpired_ones(stores: AccessStores) {
    let expired = random_hex(32);
    let current = random_hex(32);
    assert!(
        stores
            .replay
            .first_use(&expired, at(-60_000))
            .await
            .unwrap()
    );
    assert!(
        stores
            .replay
            .first_use(&current, at(300_000))
            .await
            .unwrap()
    );
    let forgotten = stores.replay.forget_expired(T0).await.unwrap();
    assert!(forgotten <= 1, "{forgotten}");
    assert!(
        !stores
            .replay
            .first_use(&current, at(300_000))
            .await
            .unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// IdempotencyStore

const DAY_MS: i64 = 86_400_000;

fn scope() -> String {
    format!("{}:{}", ids().next::<ApplicationId>(), Environment::Live)
}

pub async fn claiming_an_unknown_key_claims_it_once(stores: AccessStores) {
    let scope = scope();
    let store = &stores.idempotency;
    assert_eq!(
        store
            .claim(&scope, "order-1", "hash-a", T0, at(DAY_MS))
            .await
            .unwrap(),
        IdempotencyState::Claimed
    );
    assert_eq!(
        store
            .claim(&scope, "order-1", "hash-b", at(1), at(DAY_MS + 1))
            .await
            .unwrap(),
        IdempotencyState::InProgress {
            request_hash: "hash-a".into()
        }
    );
}

pub async fn a_completed_key_replays_its_response_until_it_expires(stores: AccessStores) {
    let scope = scope();
    let store = &stores.idempotency;
    let response = StoredResponse {
        status: 201,
        body: b"{\"id\":\"cs_1\"}\xff\x00".to_vec(),
    };
    store
        .claim(&scope, "order-2", "hash-a", T0, at(DAY_MS))
        .await
        .unwrap();
    store
        .complete(&scope, "order-2", &response, at(DAY_MS))
        .await
        .unwrap();
    let completed = IdempotencyState::Completed {
        request_hash: "hash-a".into(),
        response: response.clone(),
    };
    for (hash, now) in [("hash-a", at(1_000)), ("hash-b", at(DAY_MS - 1))] {
        assert_eq!(
            store
                .claim(&scope, "order-2", hash, now, at(2 * DAY_MS))
                .await
                .unwrap(),
            completed
        );
    }
    assert_eq!(
        store
            .claim(
                &scope,
                "order-2",
                "hash-c",
                at(DAY_MS + 1),
                at(2 * DAY_MS + 1)
            )
            .await
            .unwrap(),
        IdempotencyState::Claimed
    );
    assert_eq!(
        store
            .claim(
                &scope,
                "order-2",
                "hash-d",
                at(DAY_MS + 2),
                at(2 * DAY_MS + 2)
            )
            .await
            .unwrap(),
        IdempotencyState::InProgress {
            request_hash: "hash-c".into()
        }
    );
}

pub async fn releasing_a_claim_lets_the_request_be_retried(stores: AccessStores) {
    let scope = scope();
    let store = &stores.idempotency;
    assert_eq!(
        store
            .claim(&scope, "order-3", "hash-a", T0, at(DAY_MS))
            .await
            .unwrap(),
        IdempotencyState::Claimed
    );
    store.release(&scope, "order-3").await.unwrap();
    assert_eq!(
        store
            .claim(&scope, "order-3", "hash-a", at(1), at(DAY_MS + 1))
            .await
            .unwrap(),
        IdempotencyState::Claimed
    );
}

pub async fn idempotency_keys_are_scoped(stores: AccessStores) {
    let store = &stores.idempotency;
    let (sandbox, live) = (scope(), scope());
    for scope in [&sandbox, &live] {
        assert_eq!(
            store
                .claim(scope, "order-4", "hash-a", T0, at(DAY_MS))
                .await
                .unwrap(),
            IdempotencyState::Claimed
        );
    }
}

pub async fn a_claim_whose_lease_ended_can_be_claimed_again(stores: AccessStores) {
    let scope = scope();
    let store = &stores.idempotency;
    // The first request's process died: it never completed nor released its claim.
    assert_eq!(
        store
            .claim(&scope, "order-lease", "hash-a", T0, at(60_000))
            .await
            .unwrap(),
        IdempotencyState::Claimed
    );
    assert!(matches!(
        store
            .claim(&scope, "order-lease", "hash-a", at(59_999), at(119_999))
            .await
            .unwrap(),
        IdempotencyState::InProgress { .. }
    ));
    assert_eq!(
        store
            .claim(&scope, "order-lease", "hash-a", at(60_000), at(120_000))
            .await
            .unwrap(),
        IdempotencyState::Claimed
    );
    // Completing extends the key's life beyond the claim's lease.
    let response = StoredResponse {
        status: 201,
        body: b"{}".to_vec(),
    };
    store
        .complete(&scope, "order-lease", &response, at(DAY_MS))
        .await
        .unwrap();
    assert!(matches!(
        store
            .claim(&scope, "order-lease", "hash-a", at(200_000), at(260_000))
            .await
            .unwrap(),
        IdempotencyState::Completed { .. }
    ));
}

pub async fn of_racing_claims_exactly_one_is_claimed(stores: AccessStores) {
    for round in 0..3 {
        let scope = scope();
        let claims = (0..6).map(|_| {
            let store = stores.idempotency.clone();
            let scope = scope.clone();
            async move {
                store
                    .claim(&scope, "order-5", "hash-a", T0, at(DAY_MS))
                    .await
                    .unwrap()
            }
        });
        let states = join_all(claims).await;
        assert_eq!(
            states
                .iter()
                .filter(|s| **s == IdempotencyState::Claimed)
                .count(),
            1,
            "round {round}: {states:?}"
        );
        assert!(
            states.iter().all(|s| matches!(
                s,
                IdempotencyState::Claimed | IdempotencyState::InProgress { .. }
            )),
            "round {round}: {states:?}"
        );
    }
}

pub async fn of_racing_claims_of_an_expired_key_exactly_one_is_claimed(stores: AccessStores) {
    for round in 0..3 {
        let scope = scope();
        stores
            .idempotency
            .claim(&scope, "order-6", "hash-a", T0, at(1_000))
            .await
            .unwrap();
        stores
            .idempotency
            .complete(
                &scope,
                "order-6",
                &StoredResponse {
                    status: 200,
                    body: vec![],
                },
                at(1_000),
            )
            .await
            .unwrap();
        let claims = (0..6).map(|_| {
            let store = stores.idempotency.clone();
            let scope = scope.clone();
            async move {
                store
                    .claim(&scope, "order-6", "hash-b", at(2_000), at(DAY_MS))
                    .await
                    .unwrap()
            }
        });
        let states = join_all(claims).await;
        assert_eq!(
            states
                .iter()
                .filter(|s| **s == IdempotencyState::Claimed)
                .count(),
            1,
            "round {round}: {states:?}"
        );
    }
}

pub async fn forgetting_expired_keys_keeps_unexpired_ones(stores: AccessStores) {
    let scope = scope();
    let store = &stores.idempotency;
    let response = StoredResponse {
        status: 202,
        body: b"accepted".to_vec(),
    };
    store
        .claim(&scope, "old", "hash-a", at(-2 * DAY_MS), at(-DAY_MS))
        .await
        .unwrap();
    store
        .claim(&scope, "current", "hash-b", T0, at(DAY_MS))
        .await
        .unwrap();
    store
        .complete(&scope, "current", &response, at(DAY_MS))
        .await
        .unwrap();
    let forgotten = store.forget_expired(at(1)).await.unwrap();
    assert!(forgotten <= 1, "{forgotten}");
    assert_eq!(
        store
            .claim(&scope, "current", "hash-b", at(2), at(DAY_MS + 2))
            .await
            .unwrap(),
        IdempotencyState::Completed {
            request_hash: "hash-b".into(),
            response,
        }
    );
    // Whether or not it was forgotten, an expired key can be claimed again.
    assert_eq!(
        store
            .claim(&scope, "old", "hash-c", at(3), at(DAY_MS + 3))
            .await
            .unwrap(),
        IdempotencyState::Claimed
    );
}
