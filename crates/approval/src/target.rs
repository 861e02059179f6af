//! The port an approvable domain implements.

use std::fmt;

use async_trait::async_trait;

use idconsent_webhook::Effects;

use crate::model::{Approver, Audience, Decision, PurposeKind, Recipient, Target};
use crate::shown::{Document, Page, PageVisitors};

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
/// - `page` (objects decided on a hosted page) shows the object at a page id: its `hash` is the
///   `Target::page_hash` and its `passkey_required` the `Target::passkey_required` of every
///   purpose `page_visitors` makes of that id; `NotFound` for an object decided in the app,
///   `NotPending` as `describe`. The default serves kinds whose objects name one email
///   recipient, from `describe`.
/// - `document` returns the object's document for a page that has one (`Ok(None)`: no longer
///   stored); `NotFound` when it has none.
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

    /// Who decides on a hosted page of this kind (no I/O: the page's steps name their purpose
    /// with it before anything is read).
    fn page_visitors(&self) -> PageVisitors {
        PageVisitors::Recipient
    }

    /// What a hosted page at `page_id` shows (see the contract above).
    async fn page(&self, page_id: &str) -> Result<Page, TargetError> {
        let target = self.describe(page_id).await?;
        let Recipient::Email(email) = &target.recipient else {
            return Err(TargetError::NotFound);
        };
        Ok(Page {
            hash: target.page_hash(),
            passkey_required: target.passkey_required,
            recipient: Some(email.clone()),
            has_document: false,
            shown: target.shown,
        })
    }

    /// The document a confirmed visitor of the page at `page_id` may read.
    async fn document(&self, page_id: &str) -> Result<Option<Document>, TargetError> {
        let _ = page_id;
        Err(TargetError::NotFound)
    }
}
