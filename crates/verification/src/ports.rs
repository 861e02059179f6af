//! The verification store. Images live in the kernel's `BlobStore`.

use std::collections::BTreeSet;
use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::VerificationId;
use idconsent_kernel::{CalendarDate, QuotaExceeded, Timestamp};
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
    /// The application's cap for the day is reached: nothing was written.
    #[error("daily cap reached")]
    DailyCapReached,
    #[error("verification storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A cap on the verifications one application may create in one UTC day (sandbox keys: the
/// analysis costs the service CPU whoever pays, issue 31).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DailyCap {
    pub day: CalendarDate,
    pub limit: u32,
}

/// Verifications, the analysis jobs they are, and the outbox of their events.
///
/// Contract:
/// - `create` inserts the verification (processing, no lease) with its effects atomically
///   (`Duplicate` for a known id, `Quota` when a charge does not fit). With a `cap`, the same
///   transaction counts it against its application's count for `cap.day`: once `cap.limit`
///   creates of that application and day are stored, it writes nothing and answers
///   `DailyCapReached`. Concurrent creates never pass the limit together (the count is one
///   conditional write, not a read then a write); other applications and days count apart.
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
        cap: Option<DailyCap>,
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
