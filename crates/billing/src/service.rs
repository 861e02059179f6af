//! The billing service: plans (operator), usage and invoices (merchant), closing months.

use std::sync::Arc;

use idconsent_kernel::id::{IdGenerator, InvoiceId, MerchantId, TypedId};
use idconsent_kernel::{
    Clock, ErrorCategory, Metric, Page, PageRequest, Timestamp, UsagePeriod, ValidationErrors,
};

use crate::invoice::{self, Invoice, InvoiceStatus};
use crate::limiter::RateLimitGate;
use crate::plan::{CustomLimits, PlanTerms, choose_plan};
use crate::plans::PlanCache;
use crate::ports::{BillingStore, InvoiceQuery, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum BillingError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("internal error")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl BillingError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            BillingError::Invalid(_) => ErrorCategory::Validation,
            BillingError::NotFound(_) => ErrorCategory::NotFound,
            BillingError::Unavailable(_) => ErrorCategory::Internal,
        }
    }
}

impl From<ValidationErrors> for BillingError {
    fn from(errors: ValidationErrors) -> Self {
        BillingError::Invalid(errors)
    }
}

fn store_error(what: &'static str) -> impl Fn(StoreError) -> BillingError {
    move |error| match error {
        StoreError::NotFound => BillingError::NotFound(what),
        StoreError::Unavailable(source) => BillingError::Unavailable(source),
    }
}

/// One metered action's use against its quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricUsage {
    pub metric: Metric,
    pub used: u64,
    /// `None`: unlimited.
    pub limit: Option<u64>,
}

/// The usage summary of spec §2.8.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageSummary {
    pub period: UsagePeriod,
    pub terms: PlanTerms,
    pub metrics: Vec<MetricUsage>,
    pub api_calls: u64,
    /// API calls per day elapsed in the period so far (two decimals).
    pub daily_average: f64,
}

/// What closing a period did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosedPeriod {
    pub period: UsagePeriod,
    /// Invoices written now.
    pub issued: u64,
    /// Merchants that already had an invoice for the period.
    pub already_invoiced: u64,
}

#[derive(Debug)]
pub struct BillingService {
    store: Arc<dyn BillingStore>,
    plans: Arc<PlanCache>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    /// The last month the scheduler closed in this process: closing it again could issue
    /// nothing (no merchant can sign up in the past), so the scheduler skips it.
    scheduled: std::sync::Mutex<Option<UsagePeriod>>,
    /// The gate whose counted calls a usage summary reports first.
    calls: Option<Arc<RateLimitGate>>,
}

impl BillingService {
    pub fn new(
        store: Arc<dyn BillingStore>,
        plans: Arc<PlanCache>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            store,
            plans,
            clock,
            ids,
            scheduled: std::sync::Mutex::new(None),
            calls: None,
        }
    }

    /// A usage summary first reports the live calls `gate` counted for its merchant in this
    /// process, so a merchant sees its own requests at once (other processes report theirs
    /// every few seconds).
    pub fn reporting_calls_of(mut self, gate: Arc<RateLimitGate>) -> Self {
        self.calls = Some(gate);
        self
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn merchant_id(id: &str) -> Result<MerchantId, BillingError> {
        MerchantId::parse(id).map_err(|_| BillingError::NotFound("Merchant"))
    }

    /// The operator sets a merchant's plan (`limits` only for enterprise).
    pub async fn set_plan(
        &self,
        merchant: &str,
        plan: &str,
        limits: Option<&CustomLimits>,
    ) -> Result<PlanTerms, BillingError> {
        let merchant = Self::merchant_id(merchant)?;
        let terms = choose_plan(plan, limits)?;
        self.store
            .set_plan(&merchant, &terms)
            .await
            .map_err(store_error("Merchant"))?;
        self.plans.forget(&merchant);
        Ok(terms)
    }

    pub async fn plan(&self, merchant: &MerchantId) -> Result<PlanTerms, BillingError> {
        self.store
            .plan(merchant)
            .await
            .map_err(store_error("Merchant"))
    }

    /// The merchant's usage in the current calendar month (UTC).
    pub async fn usage(&self, merchant: &MerchantId) -> Result<UsageSummary, BillingError> {
        if let Some(gate) = &self.calls {
            gate.report(merchant)
                .await
                .map_err(store_error("Merchant"))?;
        }
        let now = self.now();
        let period = UsagePeriod::of(now);
        let terms = self.plan(merchant).await?;
        let usage = self
            .store
            .usage(merchant, period)
            .await
            .map_err(store_error("Merchant"))?;
        let days = now.since(period.starts_at()).as_secs() / 86_400 + 1;
        let average = usage.api_calls as f64 / days as f64;
        Ok(UsageSummary {
            period,
            terms,
            metrics: Metric::ALL
                .into_iter()
                .map(|metric| MetricUsage {
                    metric,
                    used: usage.metered.get(&metric).copied().unwrap_or(0),
                    limit: terms.quota(metric),
                })
                .collect(),
            api_calls: usage.api_calls,
            daily_average: (average * 100.0).round() / 100.0,
        })
    }

    /// A merchant's invoices, newest period first; filters are validated (422).
    pub async fn invoices(
        &self,
        merchant: &MerchantId,
        period: Option<&str>,
        status: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Invoice>, BillingError> {
        let mut errors = ValidationErrors::new();
        let period = period.and_then(|text| {
            let parsed = UsagePeriod::parse(text);
            if parsed.is_none() {
                errors.push("period", "must be a month as YYYY-MM");
            }
            parsed
        });
        let status = status.and_then(|text| {
            let parsed = InvoiceStatus::parse(text);
            if parsed.is_none() {
                errors.push("status", "must be paid, pending or overdue");
            }
            parsed
        });
        errors.finish()?;
        let query = InvoiceQuery {
            merchant_id: merchant.clone(),
            period,
            status,
            now: self.now(),
        };
        self.store
            .invoices(&query, page)
            .await
            .map_err(store_error("Merchant"))
    }

    /// Issues one invoice per merchant for a month that has ended; closing it again issues
    /// nothing new (also when several processes close it at once).
    pub async fn close_period(&self, period: &str) -> Result<ClosedPeriod, BillingError> {
        let Some(period) = UsagePeriod::parse(period) else {
            return Err(ValidationErrors::single("period", "must be a month as YYYY-MM").into());
        };
        let now = self.now();
        if period.next().starts_at() > now {
            return Err(ValidationErrors::single(
                "period",
                "can be closed only once the month has ended",
            )
            .into());
        }
        let mut closed = ClosedPeriod {
            period,
            issued: 0,
            already_invoiced: 0,
        };
        let mut after: Option<MerchantId> = None;
        loop {
            // A merchant that signed up after the month is not invoiced for it.
            let merchants = self
                .store
                .merchants_after(after.as_ref(), period.next().starts_at(), 200)
                .await
                .map_err(store_error("Merchant"))?;
            let Some((last, _)) = merchants.last() else {
                break;
            };
            after = Some(last.clone());
            for (merchant, terms) in merchants {
                let usage = self
                    .store
                    .usage(&merchant, period)
                    .await
                    .map_err(store_error("Merchant"))?;
                let id: InvoiceId = self.ids.next();
                let invoice = invoice::issue(id, merchant, &terms, period, &usage, now);
                if self
                    .store
                    .insert_invoice(&invoice)
                    .await
                    .map_err(store_error("Merchant"))?
                {
                    closed.issued += 1;
                } else {
                    closed.already_invoiced += 1;
                }
            }
        }
        Ok(closed)
    }

    /// The scheduler's round: closes the previous month (a no-op once done) and stores
    /// overdue invoices.
    pub async fn run_schedule(&self) -> Result<ClosedPeriod, BillingError> {
        let now = self.now();
        let previous = UsagePeriod::of(now).previous();
        let scheduled = || {
            *self
                .scheduled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let closed = if scheduled() == Some(previous) {
            ClosedPeriod {
                period: previous,
                issued: 0,
                already_invoiced: 0,
            }
        } else {
            let closed = self.close_period(&previous.to_string()).await?;
            *self
                .scheduled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(previous);
            closed
        };
        self.store
            .mark_overdue(now)
            .await
            .map_err(store_error("Invoice"))?;
        Ok(closed)
    }

    pub async fn mark_paid(&self, invoice: &str) -> Result<Invoice, BillingError> {
        let id = InvoiceId::parse(invoice).map_err(|_| BillingError::NotFound("Invoice"))?;
        self.store
            .mark_paid(&id, self.now())
            .await
            .map_err(store_error("Invoice"))
    }
}
