//! The consent ports.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use idconsent_kernel::id::SessionId;
use idconsent_kernel::{PhoneNumber, QuotaExceeded, Timestamp};
use idconsent_webhook::{Effects, Outbox};

use crate::model::{Session, SessionStatus};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    /// The session is no longer pending (or its expiry has passed).
    #[error("the session is no longer pending")]
    NotPending,
    /// A charge of the write's effects is over its quota; nothing was written.
    #[error(transparent)]
    Quota(QuotaExceeded),
    #[error("consent storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The push-bombing limits (CONTRACT §4), per environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloodLimits {
    /// Sessions still pending (not expired) for one recipient from one application.
    pub pending_per_application: u32,
    /// Sessions created for one recipient within `window`, across applications.
    pub per_window: u32,
    pub window: Duration,
}

impl Default for FloodLimits {
    fn default() -> Self {
        Self {
            pending_per_application: 5,
            per_window: 30,
            window: Duration::from_secs(3600),
        }
    }
}

/// Why `create` refused: a limit is reached until `retry_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateRefused {
    /// `retry_at`: when the oldest of the recipient's pending sessions from this application expires.
    TooManyPending { retry_at: Timestamp },
    /// `retry_at`: when the oldest session of the window leaves it.
    TooManyInWindow { retry_at: Timestamp },
}

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("flood limit reached")]
    Refused(CreateRefused),
    /// A charge of the effects is over its quota; nothing was written.
    #[error(transparent)]
    Quota(QuotaExceeded),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Sessions and the outbox of their events.
///
/// Contract:
/// - `create` inserts the session and its effects (outbox entries, usage charges) atomically,
///   `Quota` when a charge is over its limit (nothing written), unless, counted in the
///   same transaction (and serialised per recipient and environment, so concurrent creates
///   cannot both pass): the recipient already has `pending_per_application` sessions from this
///   application that are pending and unexpired at `now`, or `per_window` sessions created in
///   this environment within `window` before `now` — then nothing is written and the refusal
///   says when to retry.
/// - `find` returns the session as stored (callers judge expiry with `Session::status_at`).
/// - `decide` moves a session from pending to `status` at `at`, with its effects (outbox,
///   charges), atomically; `Quota` when a charge is over its limit (nothing written);
///   `NotPending` when it is no longer pending or `at` is not before its expiry; `NotFound`
///   for an unknown id. Of two concurrent decisions exactly one succeeds.
/// - `due_for_expiry` lists sessions pending at `now` whose expiry has passed, oldest expiry
///   first; `expire` records the expiry with its outbox if the session is still pending, and
///   says whether it did (of two concurrent sweepers, one does).
#[async_trait]
pub trait SessionRepository: Send + Sync + fmt::Debug {
    async fn create(
        &self,
        session: &Session,
        effects: &Effects,
        limits: &FloodLimits,
        now: Timestamp,
    ) -> Result<(), CreateError>;
    async fn find(&self, id: &SessionId) -> Result<Option<Session>, StoreError>;
    async fn decide(
        &self,
        id: &SessionId,
        status: SessionStatus,
        at: Timestamp,
        effects: &Effects,
    ) -> Result<(), StoreError>;
    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Session>, StoreError>;
    async fn expire(
        &self,
        id: &SessionId,
        at: Timestamp,
        outbox: &[Outbox],
    ) -> Result<bool, StoreError>;
}

/// Who may be asked in live: users with a completed enrollment.
#[async_trait]
pub trait RecipientDirectory: Send + Sync + fmt::Debug {
    async fn is_enrolled(&self, phone: &PhoneNumber) -> Result<bool, StoreError>;
}
