//! Signing keys shared by every process: the in-memory store passes the store contract, and
//! the service creates, rotates, imports and opens keys with a manual clock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idconsent_kernel::{Clock, ManualClock, Timestamp};
use idconsent_oauth::signing_keys::testing::InMemorySigningKeyStore;
use idconsent_oauth::{
    KeyGenerator, SigningKey, SigningKeyError, SigningKeySettings, SigningKeyStore, SigningKeys,
};
use idconsent_vault_ring::{AesGcmVault, MasterKey};

mod contract {
    use super::*;

    async fn store() -> Option<(Arc<dyn SigningKeyStore>, ())> {
        Some((Arc::new(InMemorySigningKeyStore::default()), ()))
    }

    idconsent_oauth::signing_key_store_contract!(store);
}

/// Keys `k1`, `k2`, … with a recognisable PEM.
#[derive(Debug, Default)]
struct Numbered(AtomicUsize);

impl KeyGenerator for Numbered {
    fn generate(&self) -> Result<(String, Vec<u8>), SigningKeyError> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        Ok((format!("k{n}"), format!("pem of k{n}").into_bytes()))
    }
}

const T0: i64 = 1_763_719_200_000;

fn service() -> (SigningKeys, Arc<ManualClock>, Arc<InMemorySigningKeyStore>) {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(T0)));
    let store = Arc::new(InMemorySigningKeyStore::default());
    let keys = SigningKeys::new(
        store.clone(),
        Arc::new(Numbered::default()),
        Arc::new(AesGcmVault::new(&MasterKey::new([3; 32]))),
        clock.clone(),
        SigningKeySettings {
            activation_delay: Duration::from_secs(60),
            reload_interval: Duration::from_secs(15),
            token_lifetime: Duration::from_secs(3600),
        },
    );
    (keys, clock, store)
}

fn kids(keys: &[SigningKey]) -> Vec<&str> {
    keys.iter().map(|key| key.kid.as_str()).collect()
}

#[tokio::test]
async fn the_first_start_creates_one_key_that_signs_at_once() {
    let (keys, clock, store) = service();
    let first = keys.ensure().await.unwrap();
    assert_eq!(kids(&first), ["k1"]);
    assert_eq!(first[0].activates_at, clock.now());
    assert_eq!(first[0].pem, b"pem of k1");
    // Stored sealed, never in the clear.
    let stored = store.list().await.unwrap();
    assert!(!stored[0].sealed_key.as_str().contains("pem of"));
    // A second start finds it.
    assert_eq!(kids(&keys.ensure().await.unwrap()), ["k1"]);
}

#[tokio::test]
async fn a_rotation_publishes_first_and_signs_after_the_delay() {
    let (keys, clock, _) = service();
    keys.ensure().await.unwrap();
    clock.advance(Duration::from_secs(10));
    let rotated = keys.rotate().await.unwrap();
    assert_eq!(rotated.kid, "k2");
    assert_eq!(
        rotated.activates_at,
        clock.now().plus(Duration::from_secs(60))
    );
    let loaded = keys.load().await.unwrap();
    assert_eq!(kids(&loaded), ["k1", "k2"]);
    assert_eq!(loaded[0].retired_at, Some(rotated.activates_at));

    // The retired key stays published for a token lifetime after it stopped signing.
    clock.advance(Duration::from_secs(60 + 3599));
    assert_eq!(kids(&keys.load().await.unwrap()), ["k1", "k2"]);
    clock.advance(Duration::from_secs(2));
    assert_eq!(kids(&keys.load().await.unwrap()), ["k2"]);
    // The next rotation deletes it for good.
    keys.rotate().await.unwrap();
    assert_eq!(kids(&keys.load().await.unwrap()), ["k2", "k3"]);
}

#[tokio::test]
async fn imports_keep_history_and_skip_known_keys() {
    let (keys, clock, _) = service();
    let now = clock.now();
    let imported = vec![
        SigningKey {
            kid: "old".into(),
            pem: b"old pem".to_vec(),
            created_at: now,
            activates_at: now,
            retired_at: Some(now),
        },
        SigningKey {
            kid: "current".into(),
            pem: b"current pem".to_vec(),
            created_at: now.plus(Duration::from_secs(1)),
            activates_at: now.plus(Duration::from_secs(1)),
            retired_at: None,
        },
    ];
    assert_eq!(keys.import(imported.clone()).await.unwrap(), 2);
    assert_eq!(keys.import(imported).await.unwrap(), 0);
    // An imported active key means no new first key.
    let loaded = keys.ensure().await.unwrap();
    assert_eq!(kids(&loaded), ["old", "current"]);
    assert_eq!(loaded[1].pem, b"current pem");
}
