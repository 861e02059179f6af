//! The keys that sign access tokens: kept in the database, sealed under the master key, so
//! every server process signs and verifies with the same keys and none needs a key file.
//!
//! A rotation publishes the new key at once and lets it sign only after an activation delay
//! longer than the interval at which processes reload their keys: by the time any process signs
//! with the new key, every process already verifies it. The key it replaces keeps signing until
//! then and is published until every token it signed has expired.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use idconsent_kernel::{Clock, Sealed, SealedFor, SecretVault, Timestamp};

/// The sealed-value kind of signing keys.
pub const SIGNING_KEY_SEALED_KIND: &str = "oauth.signing-key";

/// What a signing key's sealed PEM is bound to (ADR 0026): its kid.
pub fn sealed_signing_key(kid: &str) -> SealedFor<'_> {
    SealedFor::new(SIGNING_KEY_SEALED_KIND, kid)
}

/// A signing key as stored: the private key sealed under the master key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningKeyRecord {
    /// The key's RFC 7638 thumbprint.
    pub kid: String,
    /// The PKCS#8 PEM of the private key, sealed.
    pub sealed_key: Sealed,
    pub created_at: Timestamp,
    /// When it starts signing.
    pub activates_at: Timestamp,
    /// When it stopped (or stops) signing; published until `retired_at + token lifetime`.
    pub retired_at: Option<Timestamp>,
}

/// A signing key opened for use.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey {
    pub kid: String,
    pub pem: Vec<u8>,
    pub created_at: Timestamp,
    pub activates_at: Timestamp,
    pub retired_at: Option<Timestamp>,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("activates_at", &self.activates_at)
            .field("retired_at", &self.retired_at)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SigningKeyError {
    #[error("a key with this kid already exists")]
    Duplicate,
    #[error("signing keys are unavailable")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The stored signing keys.
///
/// Contract:
/// - `list` returns every key, oldest first.
/// - `add_first` inserts `key` only when no key is unretired, and says whether it did; of
///   processes starting together on an empty table exactly one inserts.
/// - `rotate` inserts `key` and sets `retired_at = key.activates_at` on every unretired key, in
///   one transaction; `Duplicate` (nothing written) when the kid exists.
/// - `insert_if_absent` inserts `key` unless its kid exists (imports), and says whether it did.
/// - `forget_retired_before` deletes keys retired before `before`, returning how many.
#[async_trait]
pub trait SigningKeyStore: Send + Sync + fmt::Debug {
    async fn list(&self) -> Result<Vec<SigningKeyRecord>, SigningKeyError>;
    async fn add_first(&self, key: &SigningKeyRecord) -> Result<bool, SigningKeyError>;
    async fn rotate(&self, key: &SigningKeyRecord) -> Result<(), SigningKeyError>;
    async fn insert_if_absent(&self, key: &SigningKeyRecord) -> Result<bool, SigningKeyError>;
    async fn forget_retired_before(&self, before: Timestamp) -> Result<u64, SigningKeyError>;
}

/// Makes new private keys (the JOSE adapter).
pub trait KeyGenerator: Send + Sync + fmt::Debug {
    /// A new P-256 key: its kid and its PKCS#8 PEM.
    fn generate(&self) -> Result<(String, Vec<u8>), SigningKeyError>;
}

/// Delays of a rotation shared by several processes.
#[derive(Debug, Clone, Copy)]
pub struct SigningKeySettings {
    /// How long a new key is published before it signs: longer than `reload_interval`.
    pub activation_delay: Duration,
    /// How often each process reloads the keys.
    pub reload_interval: Duration,
    /// The longest access token lifetime: a retired key is published that long.
    pub token_lifetime: Duration,
}

impl Default for SigningKeySettings {
    fn default() -> Self {
        Self {
            activation_delay: Duration::from_secs(60),
            reload_interval: Duration::from_secs(15),
            token_lifetime: Duration::from_secs(3600),
        }
    }
}

/// A rotation's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rotated {
    pub kid: String,
    pub activates_at: Timestamp,
}

/// Creates, rotates, imports and opens the signing keys.
#[derive(Debug, Clone)]
pub struct SigningKeys {
    store: Arc<dyn SigningKeyStore>,
    generator: Arc<dyn KeyGenerator>,
    vault: Arc<dyn SecretVault>,
    clock: Arc<dyn Clock>,
    settings: SigningKeySettings,
}

impl SigningKeys {
    pub fn new(
        store: Arc<dyn SigningKeyStore>,
        generator: Arc<dyn KeyGenerator>,
        vault: Arc<dyn SecretVault>,
        clock: Arc<dyn Clock>,
        settings: SigningKeySettings,
    ) -> Self {
        Self {
            store,
            generator,
            vault,
            clock,
            settings,
        }
    }

    pub fn settings(&self) -> SigningKeySettings {
        self.settings
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The keys, opened; a first key (signing at once) is created when there is none.
    pub async fn ensure(&self) -> Result<Vec<SigningKey>, SigningKeyError> {
        let keys = self.store.list().await?;
        if !keys.iter().any(|key| key.retired_at.is_none()) {
            let now = self.now();
            let first = self.new_record(now)?;
            // Another process starting at the same moment may win: then its key is used.
            self.store.add_first(&first).await?;
        }
        self.load().await
    }

    /// The keys as they are now, opened, without expired retired ones.
    pub async fn load(&self) -> Result<Vec<SigningKey>, SigningKeyError> {
        let now = self.now();
        self.store
            .list()
            .await?
            .into_iter()
            .filter(|key| {
                key.retired_at
                    .is_none_or(|at| now < at.plus(self.settings.token_lifetime))
            })
            .map(|key| {
                let pem = self
                    .vault
                    .open(&key.sealed_key, sealed_signing_key(&key.kid))
                    .map_err(|error| SigningKeyError::Unavailable(Box::new(error)))?;
                Ok(SigningKey {
                    kid: key.kid,
                    pem,
                    created_at: key.created_at,
                    activates_at: key.activates_at,
                    retired_at: key.retired_at,
                })
            })
            .collect()
    }

    /// A new key, published now and signing after the activation delay; the current key signs
    /// until then. Keys retired long enough ago for their tokens to have expired are deleted.
    pub async fn rotate(&self) -> Result<Rotated, SigningKeyError> {
        let now = self.now();
        let mut key = self.new_record(now)?;
        key.activates_at = now.plus(self.settings.activation_delay);
        self.store.rotate(&key).await?;
        self.store
            .forget_retired_before(now.minus(self.settings.token_lifetime))
            .await?;
        Ok(Rotated {
            kid: key.kid,
            activates_at: key.activates_at,
        })
    }

    /// Adds keys kept elsewhere before (a key directory), keeping their history; known kids
    /// are skipped. Returns how many were added.
    pub async fn import(&self, keys: Vec<SigningKey>) -> Result<usize, SigningKeyError> {
        let mut added = 0;
        for key in keys {
            let record = SigningKeyRecord {
                sealed_key: self.vault.seal(&key.pem, sealed_signing_key(&key.kid)),
                kid: key.kid,
                created_at: key.created_at,
                activates_at: key.activates_at,
                retired_at: key.retired_at,
            };
            if self.store.insert_if_absent(&record).await? {
                added += 1;
            }
        }
        Ok(added)
    }

    fn new_record(&self, now: Timestamp) -> Result<SigningKeyRecord, SigningKeyError> {
        let (kid, pem) = self.generator.generate()?;
        Ok(SigningKeyRecord {
            sealed_key: self.vault.seal(&pem, sealed_signing_key(&kid)),
            kid,
            created_at: now,
            activates_at: now,
            retired_at: None,
        })
    }
}

/// An in-memory [`SigningKeyStore`] that passes the contract suite: for service tests.
#[cfg(feature = "testing")]
pub mod testing {
    use std::sync::Mutex;

    use super::*;

    #[derive(Debug, Default)]
    pub struct InMemorySigningKeyStore {
        keys: Mutex<Vec<SigningKeyRecord>>,
    }

    impl InMemorySigningKeyStore {
        fn keys(&self) -> std::sync::MutexGuard<'_, Vec<SigningKeyRecord>> {
            self.keys
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }

    #[async_trait]
    impl SigningKeyStore for InMemorySigningKeyStore {
        async fn list(&self) -> Result<Vec<SigningKeyRecord>, SigningKeyError> {
            let mut keys = self.keys().clone();
            keys.sort_by(|a, b| (a.created_at, &a.kid).cmp(&(b.created_at, &b.kid)));
            Ok(keys)
        }

        async fn add_first(&self, key: &SigningKeyRecord) -> Result<bool, SigningKeyError> {
            let mut keys = self.keys();
            if keys.iter().any(|k| k.retired_at.is_none()) {
                return Ok(false);
            }
            keys.push(key.clone());
            Ok(true)
        }

        async fn rotate(&self, key: &SigningKeyRecord) -> Result<(), SigningKeyError> {
            let mut keys = self.keys();
            if keys.iter().any(|k| k.kid == key.kid) {
                return Err(SigningKeyError::Duplicate);
            }
            for current in keys.iter_mut().filter(|k| k.retired_at.is_none()) {
                current.retired_at = Some(key.activates_at);
            }
            keys.push(key.clone());
            Ok(())
        }

        async fn insert_if_absent(&self, key: &SigningKeyRecord) -> Result<bool, SigningKeyError> {
            let mut keys = self.keys();
            if keys.iter().any(|k| k.kid == key.kid) {
                return Ok(false);
            }
            keys.push(key.clone());
            Ok(true)
        }

        async fn forget_retired_before(&self, before: Timestamp) -> Result<u64, SigningKeyError> {
            let mut keys = self.keys();
            let count = keys.len();
            keys.retain(|k| k.retired_at.is_none_or(|at| at >= before));
            Ok((count - keys.len()) as u64)
        }
    }
}
