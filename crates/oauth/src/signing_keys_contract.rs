//! The [`SigningKeyStore`] contract. Adapters run it through
//! `signing_key_store_contract!(make)`, `make` being an `async fn() -> Option<(Arc<dyn
//! SigningKeyStore>, G)>` giving an empty store.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use futures_util::future::join_all;
use idconsent_kernel::{Sealed, Timestamp};

use crate::signing_keys::{SigningKeyError, SigningKeyRecord, SigningKeyStore};

#[macro_export]
macro_rules! signing_key_store_contract {
    ($make:path) => {
        $crate::signing_key_store_contract!(@cases $make;
            of_processes_starting_together_one_adds_the_first_key,
            a_rotation_retires_the_current_key_when_the_new_one_activates,
            a_duplicate_kid_changes_nothing,
            imports_skip_known_kids,
            retired_keys_are_forgotten_only_once_past_the_cutoff,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _guard)) = $make().await else { return };
                $crate::signing_keys_contract::$case(store).await;
            }
        )*
    };
}

const T0: i64 = 1_763_719_200_000;

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + offset_ms)
}

fn key(kid: &str, created: i64) -> SigningKeyRecord {
    SigningKeyRecord {
        kid: kid.to_owned(),
        sealed_key: Sealed::from_stored(format!("sealed:{kid}")),
        created_at: at(created),
        activates_at: at(created),
        retired_at: None,
    }
}

pub async fn of_processes_starting_together_one_adds_the_first_key(
    store: Arc<dyn SigningKeyStore>,
) {
    let added = join_all((0..6).map(|n| {
        let store = store.clone();
        async move {
            store
                .add_first(&key(&format!("first-{n}"), 0))
                .await
                .unwrap()
        }
    }))
    .await;
    assert_eq!(added.iter().filter(|added| **added).count(), 1, "{added:?}");
    let keys = store.list().await.unwrap();
    assert_eq!(keys.len(), 1);
    // With an unretired key present, no other first key is added.
    assert!(!store.add_first(&key("late", 10)).await.unwrap());
    assert_eq!(store.list().await.unwrap(), keys);
}

pub async fn a_rotation_retires_the_current_key_when_the_new_one_activates(
    store: Arc<dyn SigningKeyStore>,
) {
    assert!(store.add_first(&key("one", 0)).await.unwrap());
    let two = SigningKeyRecord {
        activates_at: at(60_000),
        ..key("two", 1_000)
    };
    store.rotate(&two).await.unwrap();
    let keys = store.list().await.unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!((keys[0].kid.as_str(), keys[1].kid.as_str()), ("one", "two"));
    assert_eq!(keys[0].retired_at, Some(at(60_000)));
    assert_eq!(keys[1], two);
    assert_eq!(keys[0].sealed_key, key("one", 0).sealed_key);
    // A second rotation retires only what was still unretired.
    let three = SigningKeyRecord {
        activates_at: at(120_000),
        ..key("three", 2_000)
    };
    store.rotate(&three).await.unwrap();
    let keys = store.list().await.unwrap();
    let retired: Vec<Option<Timestamp>> = keys.iter().map(|k| k.retired_at).collect();
    assert_eq!(retired, [Some(at(60_000)), Some(at(120_000)), None]);
}

pub async fn a_duplicate_kid_changes_nothing(store: Arc<dyn SigningKeyStore>) {
    assert!(store.add_first(&key("one", 0)).await.unwrap());
    let before = store.list().await.unwrap();
    let again = store.rotate(&key("one", 5)).await;
    assert!(
        matches!(again, Err(SigningKeyError::Duplicate)),
        "{again:?}"
    );
    assert_eq!(store.list().await.unwrap(), before);
}

pub async fn imports_skip_known_kids(store: Arc<dyn SigningKeyStore>) {
    let old = SigningKeyRecord {
        retired_at: Some(at(500)),
        ..key("old", 0)
    };
    assert!(store.insert_if_absent(&old).await.unwrap());
    assert!(store.insert_if_absent(&key("current", 400)).await.unwrap());
    assert!(!store.insert_if_absent(&key("old", 900)).await.unwrap());
    let keys = store.list().await.unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], old);
}

pub async fn retired_keys_are_forgotten_only_once_past_the_cutoff(store: Arc<dyn SigningKeyStore>) {
    for (kid, retired) in [("a", Some(100)), ("b", Some(200)), ("c", None)] {
        let record = SigningKeyRecord {
            retired_at: retired.map(at),
            ..key(kid, 0)
        };
        assert!(store.insert_if_absent(&record).await.unwrap());
    }
    assert_eq!(store.forget_retired_before(at(150)).await.unwrap(), 1);
    let kids: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.kid)
        .collect();
    assert_eq!(kids, ["b", "c"]);
    assert_eq!(store.forget_retired_before(at(150)).await.unwrap(), 0);
}
