//! A hosted page as its kind describes it: which purpose a visitor decides, what the page
//! shows, and the document a confirmed visitor may read. Nothing here knows a purpose: the
//! approval registry asks the kind's target (ADR 0040).

use idconsent_approval::{Document, Page, Purpose, PurposeKind};

use crate::service::{HostedApprovals, HostedError};

impl HostedApprovals {
    /// A fresh nonce for a page's Content-Security-Policy (hex of 16 random bytes).
    pub fn page_nonce(&self) -> String {
        self.ports.random.hex(16)
    }

    /// The purpose a step on the page of `kind` at `page_id` decides: the page's object, or —
    /// on a page whose visitors name themselves — the visitor's share of it (`address`).
    pub fn purpose(
        &self,
        kind: &PurposeKind,
        page_id: &str,
        address: Option<&str>,
    ) -> Result<Purpose, HostedError> {
        let visitors = self.ports.approvals.page_visitors(kind)?;
        let id = visitors
            .purpose_id(page_id, address)
            .ok_or(HostedError::NoAddress)?;
        Ok(Purpose::new(kind.clone(), id))
    }

    /// What the page of `kind` at `page_id` shows, with the hash it carries: `NotFound` for an
    /// object decided in the app, `NotPending` for one that can no longer be decided.
    pub async fn page(&self, kind: &PurposeKind, page_id: &str) -> Result<Page, HostedError> {
        Ok(self.ports.approvals.page(kind, page_id).await?)
    }

    /// The page's document, for the visitor whose live page token `token` is (`Gone` when it
    /// is no longer stored).
    pub async fn document(
        &self,
        purpose: &Purpose,
        page_id: &str,
        token: &str,
    ) -> Result<Document, HostedError> {
        self.confirmed_address(purpose, token).await?;
        self.ports
            .approvals
            .document(&purpose.kind, page_id)
            .await?
            .ok_or(HostedError::Gone)
    }
}
