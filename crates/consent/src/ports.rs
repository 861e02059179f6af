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

/// The rules, judged by the store inside the transaction that creates the session (read under
/// lock → these pure verdicts → write or refuse; ADR 0018), so the arithmetic is tested here and
/// every adapter applies the same one.
impl FloodLimits {
    /// Sessions created after this instant count toward `per_window`.
    pub fn window_start(&self, now: Timestamp) -> Timestamp {
        now.minus(self.window)
    }

    /// The refusal when the recipient already has `pending_per_application` pending sessions
    /// from the application (`expiries`: theirs); retry when the first of them expires.
    pub fn pending_refusal(&self, expiries: &[Timestamp], now: Timestamp) -> Option<CreateRefused> {
        if expiries.len() < self.pending_per_application as usize {
            return None;
        }
        let retry_at = expiries.iter().min().copied().unwrap_or(now);
        Some(CreateRefused::TooManyPending { retry_at })
    }

    /// The refusal when `per_window` sessions were created for the recipient since
    /// `window_start` (`created`: their creation times); retry when the oldest leaves the window.
    pub fn window_refusal(&self, created: &[Timestamp], now: Timestamp) -> Option<CreateRefused> {
        if created.len() < self.per_window as usize {
            return None;
        }
        let oldest = created.iter().min().copied().unwrap_or(now);
        Some(CreateRefused::TooManyInWindow {
            retry_at: oldest.plus(self.window),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: FloodLimits = FloodLimits {
        pending_per_application: 2,
        per_window: 3,
        window: Duration::from_secs(3600),
    };

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_millis(secs * 1000)
    }

    #[test]
    fn pending_sessions_refuse_at_the_limit_until_the_first_expires() {
        assert_eq!(LIMITS.pending_refusal(&[], at(0)), None);
        assert_eq!(LIMITS.pending_refusal(&[at(300)], at(0)), None);
        assert_eq!(
            LIMITS.pending_refusal(&[at(300), at(120)], at(0)),
            Some(CreateRefused::TooManyPending { retry_at: at(120) })
        );
    }

    #[test]
    fn the_window_refuses_at_the_limit_until_the_oldest_leaves_it() {
        assert_eq!(LIMITS.window_start(at(4000)), at(400));
        assert_eq!(LIMITS.window_refusal(&[at(500), at(900)], at(4000)), None);
        assert_eq!(
            LIMITS.window_refusal(&[at(900), at(500), at(700)], at(4000)),
            Some(CreateRefused::TooManyInWindow { retry_at: at(4100) })
        );
    }

    #[test]
    fn a_zero_limit_refuses_everything_from_now() {
        let closed = FloodLimits {
            pending_per_application: 0,
            per_window: 0,
            ..LIMITS
        };
        assert_eq!(
            closed.pending_refusal(&[], at(10)),
            Some(CreateRefused::TooManyPending { retry_at: at(10) })
        );
        assert_eq!(
            closed.window_refusal(&[], at(10)),
            Some(CreateRefused::TooManyInWindow { retry_at: at(3610) })
        );
    }
}
