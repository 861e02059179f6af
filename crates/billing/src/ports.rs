//! The billing store port: plans, the shared request budget, usage and invoices.

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::{ApplicationId, InvoiceId, MerchantId};
use idconsent_kernel::{Metric, Page, PageRequest, Timestamp, UsagePeriod};

use crate::budget::{LeaseDecision, LeaseRequest};
use crate::invoice::{Invoice, InvoiceStatus};
use crate::plan::PlanTerms;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The merchant (or invoice) named does not exist.
    #[error("not found")]
    NotFound,
    #[error("billing storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Live API calls a process admitted for a merchant on one UTC day and has not reported yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallReport {
    /// Days since the epoch.
    pub day: i64,
    pub calls: u64,
}

/// A merchant's usage in one period.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Usage {
    /// Metered actions (kernel `usage`), zero when absent.
    pub metered: BTreeMap<Metric, u64>,
    /// Live signed API calls reported by the server processes.
    pub api_calls: u64,
}

/// Filters of the invoice list; `now` decides which pending invoices read as overdue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvoiceQuery {
    pub merchant_id: MerchantId,
    pub period: Option<UsagePeriod>,
    pub status: Option<InvoiceStatus>,
    pub now: Timestamp,
}

/// Where billing keeps its state.
///
/// Contract:
/// - `plan` is the merchant's plan (`free` with standard limits until one is set), or
///   `NotFound`; `set_plan` replaces it, or `NotFound`.
/// - `lease` reads the merchant's budget, judges it with [`crate::budget::decide`] and stores
///   the result only if nobody changed the budget meanwhile (retrying from a fresh read
///   otherwise), adding `calls` to the merchant's API calls in the same transaction: of
///   concurrent leases from any number of processes, the grants never add up to more than
///   one `decide` over their sum would have allowed.
/// - `record_calls` adds calls to the merchant's day (idempotent only in the sense that
///   calls are never lost; each report is added once).
/// - `usage` sums the metered counters and API calls of a period.
/// - `merchants_after` pages, by id, through the merchants created before `created_before`,
///   with their plans.
/// - `insert_invoice` writes an invoice unless the merchant already has one for its period
///   (then `false`, nothing written), also when two callers race.
/// - `invoices` lists a merchant's invoices newest period first; a `pending` invoice past its
///   due date reads (and filters) as `overdue`.
/// - `mark_paid` sets `paid` and `paid_at` once; later calls change nothing and return the
///   invoice as it is. `mark_overdue` stores `overdue` on pending invoices due by `now`.
#[async_trait]
pub trait BillingStore: Send + Sync + fmt::Debug {
    async fn plan(&self, merchant: &MerchantId) -> Result<PlanTerms, StoreError>;
    async fn set_plan(&self, merchant: &MerchantId, terms: &PlanTerms) -> Result<(), StoreError>;
    async fn merchant_of(&self, application: &ApplicationId) -> Result<MerchantId, StoreError>;

    async fn lease(
        &self,
        merchant: &MerchantId,
        request: &LeaseRequest,
        calls: CallReport,
    ) -> Result<LeaseDecision, StoreError>;
    async fn record_calls(
        &self,
        merchant: &MerchantId,
        calls: CallReport,
    ) -> Result<(), StoreError>;
    async fn usage(&self, merchant: &MerchantId, period: UsagePeriod) -> Result<Usage, StoreError>;

    async fn merchants_after(
        &self,
        after: Option<&MerchantId>,
        created_before: Timestamp,
        limit: u32,
    ) -> Result<Vec<(MerchantId, PlanTerms)>, StoreError>;
    async fn insert_invoice(&self, invoice: &Invoice) -> Result<bool, StoreError>;
    async fn invoice(&self, id: &InvoiceId) -> Result<Option<Invoice>, StoreError>;
    async fn invoices(
        &self,
        query: &InvoiceQuery,
        page: PageRequest,
    ) -> Result<Page<Invoice>, StoreError>;
    async fn mark_paid(&self, id: &InvoiceId, at: Timestamp) -> Result<Invoice, StoreError>;
    async fn mark_overdue(&self, now: Timestamp) -> Result<u64, StoreError>;
}
