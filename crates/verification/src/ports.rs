//! The verification store. Images live in the kernel's `BlobStore`.

use std::collections::BTreeSet;
use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::VerificationId;
use idconsent_kernel::{QuotaExceeded, Timestamp};
use idconsent_webhook::Effects;

use crate::model::Verification;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `create` with an id that exists.
    #[error("duplicate verification")]
    Duplicate,
    /// A charge in the effects would pass the month's quota: nothing was written.
    #[error("quota exceeded")]
    Quota(QuotaExceeded),
    #[error("verification storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Verifications, the analysis jobs they are, and the outbox of their events.
///
/// Contract:
/// - `create` inserts the verification (processing, no lease) with its effects atomically
///   (`Duplicate` for a known id, `Quota` when a charge does not fit).
/// - `find` returns it as stored, `None` for an unknown id.
/// - `claim_due` takes up to `limit` processing verifications whose lease is absent or ended at
///   or before `now`, oldest first: each gets `leased_until = until`, one more attempt and one
///   more version, and is returned as stored. Concurrent claims never return the same
///   verification while its lease runs — with several processes each job is analysed by one.
/// - `complete` stores `verification` (its outcome set, version one more than
///   `expected_version`) with its effects atomically if the stored version is still
///   `expected_version`, and says whether it did; otherwise nothing is written.
/// - `images_in_use` returns the image keys (front, back, selfie) of those of `ids` that are
///   still processing; an unknown or finished verification names none (its images are no
///   longer needed). It reads what is committed; any number of ids up to a few hundred.
#[async_trait]
pub trait VerificationStore: Send + Sync + fmt::Debug {
    async fn create(
        &self,
        verification: &Verification,
        effects: &Effects,
    ) -> Result<(), StoreError>;
    async fn find(&self, id: &VerificationId) -> Result<Option<Verification>, StoreError>;
    async fn claim_due(
        &self,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Verification>, StoreError>;
    async fn complete(
        &self,
        verification: &Verification,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError>;
    async fn images_in_use(&self, ids: &[VerificationId]) -> Result<BTreeSet<String>, StoreError>;
}
