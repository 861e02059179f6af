//! The mandate ports.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::{ApplicationId, MandateId};
use idconsent_kernel::{Environment, Page, PageRequest, PhoneNumber, QuotaExceeded, Timestamp};
use idconsent_webhook::Effects;

use crate::model::{Mandate, MandateStatus, MandateType};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `create` with an id that exists.
    #[error("duplicate mandate")]
    Duplicate,
    /// A charge of the write's effects is over its quota; nothing was written.
    #[error(transparent)]
    Quota(QuotaExceeded),
    #[error("mandate storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Which of an application's mandates a list shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MandateQuery {
    pub application_id: ApplicationId,
    pub environment: Environment,
    /// The status as of `now` (a pending mandate past its deadline counts as `expired`).
    pub status: Option<MandateStatus>,
    pub kind: Option<MandateType>,
    pub now: Timestamp,
}

/// Mandates and the outbox of their events.
///
/// Contract:
/// - `create` inserts the mandate with its effects atomically (`Duplicate` for a known id,
///   `Quota` when a charge is over its limit; nothing written either way).
/// - `find` returns the mandate as stored, `None` for an unknown id.
/// - `replace` stores `mandate` (whose `version` is one more than `expected_version`) with its
///   effects, atomically, if the stored version is still `expected_version`, and says whether it
///   did; otherwise nothing is written. Of concurrent replaces from one version exactly one
///   succeeds. `Quota` as for `create`.
/// - `list` returns the query's page, newest first (creation time, then id), and the total of
///   matching mandates; only the query's application and environment.
/// - `due_for_expiry` lists mandates stored as `pending_authorization` whose deadline is at or
///   before `now`, earliest deadline first, at most `limit`.
#[async_trait]
pub trait MandateRepository: Send + Sync + fmt::Debug {
    async fn create(&self, mandate: &Mandate, effects: &Effects) -> Result<(), StoreError>;
    async fn find(&self, id: &MandateId) -> Result<Option<Mandate>, StoreError>;
    async fn replace(
        &self,
        mandate: &Mandate,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError>;
    async fn list(
        &self,
        query: &MandateQuery,
        page: PageRequest,
    ) -> Result<Page<Mandate>, StoreError>;
    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Mandate>, StoreError>;
}

/// Who may be asked in live: phones whose user completed an enrollment.
#[async_trait]
pub trait RecipientDirectory: Send + Sync + fmt::Debug {
    async fn is_enrolled(&self, phone: &PhoneNumber) -> Result<bool, StoreError>;
}
