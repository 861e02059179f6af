//! The port an approvable domain implements.

use std::fmt;

use async_trait::async_trait;

use idconsent_webhook::Effects;

use crate::model::{Approver, Audience, Decision, PurposeKind, Target};

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// No such object (or one the asker may not see).
    #[error("not found")]
    NotFound,
    /// The object can no longer be decided; the message says what it is now.
    #[error("{0}")]
    NotPending(String),
    /// A monthly quota would be exceeded by the caller's effects; nothing was written.
    #[error(transparent)]
    Quota(#[from] idconsent_kernel::QuotaExceeded),
    #[error("approval target failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Builds the caller's effects once the target knows its audience.
pub type AlsoFn<'a> = dyn Fn(&Audience) -> Effects + Send + Sync + 'a;

/// Objects of one [`PurposeKind`] that a recipient decides with a passkey.
///
/// Contract:
/// - `describe` returns the object as its recipient must see it; `NotFound` for an unknown or
///   malformed id — an object's id in another case or with padding is not its id —, `NotPending`
///   when it can no longer be decided (decided, cancelled, expired). `Target::canonical_id` is
///   the id as the object spells it: the same for every spelling `describe` accepts (a
///   signature signer's address in any case), so limits counted under it are counted once.
/// - `decide` with `by.context_hash` refuses (`NotPending`, nothing written) when the object's
///   context no longer hashes to it.
/// - `audience` names who hears about assertions for the object whatever its state (`None`
///   when nobody does); `NotFound` for an unknown id.
/// - `decide` applies `decision` and writes the object's own events together with
///   `also(audience)` in one transaction, returning the object's new status (`approved`,
///   `active`, …). `NotPending` when it was no longer pending (nothing written), `NotFound` for
///   an unknown id, `Quota` when a charge of `also` is over its limit (nothing written). Of two
///   concurrent decisions exactly one succeeds.
#[async_trait]
pub trait ApprovalTarget: Send + Sync + fmt::Debug {
    /// The purpose kind this target serves; the registry's key.
    fn kind(&self) -> PurposeKind;
    async fn describe(&self, id: &str) -> Result<Target, TargetError>;
    async fn audience(&self, id: &str) -> Result<Option<Audience>, TargetError>;
    async fn decide(
        &self,
        id: &str,
        decision: Decision,
        by: &Approver,
        also: &AlsoFn<'_>,
    ) -> Result<String, TargetError>;
}
