//! Where issued active-authentication challenges wait for their answer.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::ApplicationId;

use super::challenge::ChipChallenge;
use super::evidence::CHALLENGE_LEN;

#[derive(Debug, thiserror::Error)]
pub enum ChallengeStoreError {
    /// `issue` of bytes the same application already holds.
    #[error("duplicate challenge")]
    Duplicate,
    #[error("challenge storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Issued chip challenges.
///
/// Contract:
/// - `issue` stores the challenge (`Duplicate` when its application already holds the same
///   bytes, nothing written) and, in the same call, deletes every challenge of any application
///   that expired at or before the new one's `issued_at`, so the table holds only live ones.
/// - `take(application, bytes, now)` removes and returns `application`'s challenge with `bytes`
///   when one is stored and `now` is before its `expires_at`. Removing and returning are one
///   operation: of any number of concurrent takes of one challenge exactly one gets it, and a
///   taken challenge is never returned again. An expired one is removed and `None`. Another
///   application's challenge with the same bytes is neither returned nor removed.
#[async_trait]
pub trait ChipChallengeStore: Send + Sync + fmt::Debug {
    async fn issue(&self, challenge: &ChipChallenge) -> Result<(), ChallengeStoreError>;
    async fn take(
        &self,
        application: &ApplicationId,
        bytes: &[u8; CHALLENGE_LEN],
        now: Timestamp,
    ) -> Result<Option<ChipChallenge>, ChallengeStoreError>;
}
