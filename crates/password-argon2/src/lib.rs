#![doc = include_str!("../README.md")]

use std::sync::Arc;
use std::time::Duration;

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher as _, PasswordVerifier as _};
use async_trait::async_trait;
use idconsent_merchant::ports::{PasswordError, PasswordHasher};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How much Argon2 work may run at once. Each hash holds about 19 MiB for tens of
/// milliseconds, so a flood of sign-ins must queue briefly and then be turned away, not pile
/// up on the blocking pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashingLimits {
    /// Hashes running at once.
    pub concurrency: usize,
    /// How long a caller waits for a slot before `PasswordError::Busy`.
    pub queue_wait: Duration,
}

impl HashingLimits {
    /// `concurrency` slots, and a two-second wait for one.
    pub fn new(concurrency: usize) -> Self {
        Self {
            concurrency: concurrency.max(1),
            queue_wait: Duration::from_secs(2),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Argon2Passwords {
    dummy_hash: String,
    slots: Arc<Semaphore>,
    queue_wait: Duration,
}

impl Argon2Passwords {
    /// Blocking (one hash): call at start-up.
    pub fn new(limits: HashingLimits) -> Result<Self, PasswordError> {
        Ok(Self {
            dummy_hash: hash("idconsent timing equaliser")?,
            slots: Arc::new(Semaphore::new(limits.concurrency.max(1))),
            queue_wait: limits.queue_wait,
        })
    }

    /// Waits up to `queue_wait` for a slot; the permit travels into the blocking task so the
    /// slot stays taken until the hash is done, even if the caller has gone away.
    async fn slot(&self) -> Result<OwnedSemaphorePermit, PasswordError> {
        match tokio::time::timeout(self.queue_wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(closed)) => Err(PasswordError::Failed(closed.to_string())),
            Err(_) => Err(PasswordError::Busy {
                retry_after_secs: self.queue_wait.as_secs().max(1),
            }),
        }
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, PasswordError> {
        let permit = self.slot().await?;
        tokio::task::spawn_blocking(move || {
            let result = work();
            drop(permit);
            result
        })
        .await
        .map_err(|error| PasswordError::Failed(error.to_string()))
    }
}

fn hash(password: &str) -> Result<String, PasswordError> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|error| PasswordError::Failed(error.to_string()))
}

fn verify(password: &str, hash: &str) -> bool {
    Argon2::default()
        .verify_password(password.as_bytes(), hash)
        .is_ok()
}

#[async_trait]
impl PasswordHasher for Argon2Passwords {
    async fn hash(&self, password: &str) -> Result<String, PasswordError> {
        let password = password.to_owned();
        self.run(move || hash(&password)).await?
    }

    async fn verify(&self, password: &str, hash: &str) -> Result<bool, PasswordError> {
        let (password, hash) = (password.to_owned(), hash.to_owned());
        self.run(move || verify(&password, &hash)).await
    }

    async fn verify_dummy(&self, password: &str) -> Result<(), PasswordError> {
        self.verify(password, &self.dummy_hash.clone())
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_verify_and_never_repeat() {
        let passwords = Argon2Passwords::new(HashingLimits::new(2)).unwrap();
        let first = passwords.hash("correct horse battery").await.unwrap();
        let second = passwords.hash("correct horse battery").await.unwrap();
        assert!(first.starts_with("$argon2id$v=19$"), "{first}");
        assert_ne!(first, second);
        assert!(
            passwords
                .verify("correct horse battery", &first)
                .await
                .unwrap()
        );
        assert!(
            !passwords
                .verify("correct horse batterY", &first)
                .await
                .unwrap()
        );
        assert!(
            !passwords
                .verify("correct horse battery", "not a hash")
                .await
                .unwrap()
        );
        passwords.verify_dummy("anything").await.unwrap();
    }

    #[tokio::test]
    async fn beyond_the_bound_callers_are_told_to_come_back() {
        let passwords = Argon2Passwords::new(HashingLimits {
            concurrency: 1,
            queue_wait: Duration::from_millis(20),
        })
        .unwrap();
        let stored = passwords.hash("correct horse battery").await.unwrap();
        // Every slot taken (as by a hash in progress): the caller waits its queue time, then is
        // told to come back, and nothing was hashed for it.
        let held = passwords.slots.clone().acquire_owned().await.unwrap();
        let busy = passwords.verify("correct horse battery", &stored).await;
        assert!(
            matches!(
                busy,
                Err(PasswordError::Busy {
                    retry_after_secs: 1
                })
            ),
            "{busy:?}"
        );
        assert!(matches!(
            passwords.hash("another password").await,
            Err(PasswordError::Busy { .. })
        ));
        // A slot freed within the wait is taken.
        let verifying = tokio::spawn({
            let (passwords, stored) = (passwords.clone(), stored.clone());
            async move { passwords.verify("correct horse battery", &stored).await }
        });
        tokio::task::yield_now().await;
        drop(held);
        assert!(verifying.await.unwrap().unwrap());
    }
}
