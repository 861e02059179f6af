//! Idempotency keys of signed POSTs (CONTRACT §1).

use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::{Clock, KeyedHash};

use crate::ports::{IdempotencyState, IdempotencyStore, StoredResponse};
use crate::signed::{AccessError, Caller};

/// What to do with a request that carries an `Idempotency-Key`.
#[derive(Debug)]
pub enum IdempotencyDecision {
    /// Run it, then `finish` the ticket with the response.
    Proceed(IdempotencyTicket),
    /// Already done: answer with this response (and `Idempotent-Replayed: true`).
    Replay(StoredResponse),
    /// The key was used with another request body.
    KeyReused,
    /// The first request with this key is still running.
    InProgress,
}

/// A claimed idempotency key.
#[derive(Debug)]
pub struct IdempotencyTicket {
    scope: String,
    key: String,
}

/// Idempotency keys for signed POSTs: kept 24 hours per application and environment.
#[derive(Debug, Clone)]
pub struct Idempotency {
    store: Arc<dyn IdempotencyStore>,
    hasher: Arc<dyn KeyedHash>,
    clock: Arc<dyn Clock>,
}

impl Idempotency {
    /// How long a completed response is replayed.
    pub const RETENTION: Duration = Duration::from_secs(24 * 3600);
    /// How long a running request holds its key; longer than any request may take.
    pub const CLAIM_LEASE: Duration = Duration::from_secs(60);

    pub fn new(
        store: Arc<dyn IdempotencyStore>,
        hasher: Arc<dyn KeyedHash>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            hasher,
            clock,
        }
    }

    /// Claims `key` for this request (`operation` names the endpoint, e.g. `POST /v1/consents/auth`).
    pub async fn begin(
        &self,
        caller: &Caller,
        key: &str,
        operation: &str,
        body: &[u8],
    ) -> Result<IdempotencyDecision, AccessError> {
        if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AccessError::InvalidIdempotencyKey);
        }
        let mut fingerprint = Vec::with_capacity(operation.len() + 1 + body.len());
        fingerprint.extend_from_slice(operation.as_bytes());
        fingerprint.push(0);
        fingerprint.extend_from_slice(body);
        let request_hash = self.hasher.hex("idempotency-request", &fingerprint);
        let now = self.clock.now();
        let scope = caller.scope();
        let state = self
            .store
            .claim(&scope, key, &request_hash, now, now.plus(Self::CLAIM_LEASE))
            .await?;
        Ok(match state {
            IdempotencyState::Claimed => IdempotencyDecision::Proceed(IdempotencyTicket {
                scope,
                key: key.to_owned(),
            }),
            IdempotencyState::Completed {
                request_hash: stored,
                response,
            } if stored == request_hash => IdempotencyDecision::Replay(response),
            IdempotencyState::InProgress {
                request_hash: stored,
            } if stored == request_hash => IdempotencyDecision::InProgress,
            _ => IdempotencyDecision::KeyReused,
        })
    }

    /// Forgets keys whose responses are past their retention (and claims past their lease).
    pub async fn forget_expired(&self) -> Result<u64, AccessError> {
        Ok(self.store.forget_expired(self.clock.now()).await?)
    }

    /// Stores a response worth replaying (`Some`), or releases the key so the request can be
    /// retried (`None`: the request failed before doing anything lasting).
    pub async fn finish(
        &self,
        ticket: IdempotencyTicket,
        response: Option<StoredResponse>,
    ) -> Result<(), AccessError> {
        match response {
            Some(response) => {
                let expires_at = self.clock.now().plus(Self::RETENTION);
                self.store
                    .complete(&ticket.scope, &ticket.key, &response, expires_at)
                    .await?
            }
            None => self.store.release(&ticket.scope, &ticket.key).await?,
        }
        Ok(())
    }
}
