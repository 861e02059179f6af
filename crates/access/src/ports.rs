//! The ports of the request gate's first step: signatures, replay protection, idempotency.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::Timestamp;
use idconsent_merchant::ports::RepositoryError;

/// The signed-request algorithm (CONTRACT §2.1).
pub trait RequestSignatures: Send + Sync + fmt::Debug {
    /// Whether `signature` is the lowercase hex HMAC-SHA256, keyed by `secret`, of
    /// `api_key:timestamp:body`. Constant-time.
    fn verify(
        &self,
        secret: &[u8],
        api_key: &str,
        timestamp: &str,
        body: &[u8],
        signature: &str,
    ) -> bool;
}

/// Remembers signatures already accepted, across every server process on one database.
///
/// Contract: the first `first_use` of a fingerprint is `true`, every later one `false` (also
/// when two calls race); `forget_expired` may drop fingerprints whose `expires_at` has passed.
#[async_trait]
pub trait ReplayGuard: Send + Sync + fmt::Debug {
    async fn first_use(
        &self,
        fingerprint: &str,
        expires_at: Timestamp,
    ) -> Result<bool, RepositoryError>;
    async fn forget_expired(&self, now: Timestamp) -> Result<u64, RepositoryError>;
}

/// A response stored under an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Where an idempotency key stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotencyState {
    /// New: the caller now owns the key and must `complete` or `release` it.
    Claimed,
    /// Another request with this key is still running.
    InProgress { request_hash: String },
    /// Done: replay this response (if the request hash matches).
    Completed {
        request_hash: String,
        response: StoredResponse,
    },
}

/// Idempotency keys of signed POSTs (CONTRACT §1), scoped per application and environment.
///
/// Contract: `claim` of an unknown (or expired) key is `Claimed`, and of two racing claims
/// exactly one is; a claim holds the key only until its `expires_at` (a short lease, so a
/// request whose process died frees its key); after `complete` the key is `Completed` with that
/// response until the `expires_at` given to `complete`; `release` forgets a claim (never a
/// completed response) so the request can be retried.
#[async_trait]
pub trait IdempotencyStore: Send + Sync + fmt::Debug {
    async fn claim(
        &self,
        scope: &str,
        key: &str,
        request_hash: &str,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<IdempotencyState, RepositoryError>;
    async fn complete(
        &self,
        scope: &str,
        key: &str,
        response: &StoredResponse,
        expires_at: Timestamp,
    ) -> Result<(), RepositoryError>;
    async fn release(&self, scope: &str, key: &str) -> Result<(), RepositoryError>;
    async fn forget_expired(&self, now: Timestamp) -> Result<u64, RepositoryError>;
}
