//! The billing bodies of spec §2.8.

use idconsent_billing::{ClosedPeriod, Invoice, PlanTerms, UsageSummary};
use idconsent_kernel::{Metric, Page, Timestamp};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::envelope::PaginationBody;

/// Dollars for the wire (the store keeps exact cents).
fn dollars(cents: i64) -> f64 {
    cents as f64 / 100.0
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvoiceItemView {
    description: String,
    /// USD.
    amount: f64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvoiceView {
    /// `in_…`
    id: String,
    /// `YYYY-MM`
    period: String,
    /// The sum of the items.
    amount: f64,
    currency: &'static str,
    /// `pending`, `paid` or `overdue` (a pending invoice reads overdue 14 days after issue).
    status: &'static str,
    /// The plan billed.
    plan: &'static str,
    issued_at: String,
    due_at: String,
    paid_at: Option<String>,
    items: Vec<InvoiceItemView>,
}

impl InvoiceView {
    pub fn of(invoice: &Invoice, now: Timestamp) -> Self {
        Self {
            id: invoice.id.as_str().to_owned(),
            period: invoice.period.to_string(),
            amount: dollars(invoice.amount_cents),
            currency: idconsent_billing::invoice::CURRENCY,
            status: invoice.status_at(now).as_str(),
            plan: invoice.plan.as_str(),
            issued_at: invoice.issued_at.to_rfc3339(),
            due_at: invoice.due_at.to_rfc3339(),
            paid_at: invoice.paid_at.map(Timestamp::to_rfc3339),
            items: invoice
                .items
                .iter()
                .map(|item| InvoiceItemView {
                    description: item.description.clone(),
                    amount: dollars(item.amount_cents),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvoiceList {
    invoices: Vec<InvoiceView>,
    pagination: PaginationBody,
}

impl InvoiceList {
    pub fn of(page: &Page<Invoice>, now: Timestamp) -> Self {
        Self {
            invoices: page
                .items
                .iter()
                .map(|invoice| InvoiceView::of(invoice, now))
                .collect(),
            pagination: page.pagination().into(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvoiceData {
    invoice: InvoiceView,
}

impl InvoiceData {
    pub fn of(invoice: &Invoice, now: Timestamp) -> Self {
        Self {
            invoice: InvoiceView::of(invoice, now),
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct InvoiceQuery {
    /// `YYYY-MM`
    pub period: Option<String>,
    /// `paid`, `pending` or `overdue`.
    pub status: Option<String>,
    /// From 1 (default 1).
    pub page: Option<i64>,
    /// 1–100 (default 20).
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct QuotaView {
    used: u64,
    /// `null`: unlimited.
    limit: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MeteredUsage {
    consents: QuotaView,
    authentications: QuotaView,
    verifications: QuotaView,
    mandates: QuotaView,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiCallsView {
    /// Live signed API calls this month.
    total: u64,
    /// Per day elapsed this month.
    daily_average: f64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitsView {
    requests_per_minute: u64,
    /// `null`: unlimited.
    requests_per_day: Option<u64>,
    concurrent: u64,
}

impl From<&PlanTerms> for LimitsView {
    fn from(terms: &PlanTerms) -> Self {
        Self {
            requests_per_minute: terms.limits.per_minute,
            requests_per_day: terms.limits.per_day,
            concurrent: terms.limits.concurrent,
        }
    }
}

/// The usage summary of spec §2.8, with the plan's request limits.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageView {
    /// The current calendar month (UTC), `YYYY-MM`.
    period: String,
    plan: &'static str,
    usage: MeteredUsage,
    api_calls: ApiCallsView,
    limits: LimitsView,
}

impl From<&UsageSummary> for UsageView {
    fn from(summary: &UsageSummary) -> Self {
        let quota = |metric: Metric| {
            let usage = summary.metrics.iter().find(|usage| usage.metric == metric);
            QuotaView {
                used: usage.map_or(0, |usage| usage.used),
                limit: usage.and_then(|usage| usage.limit),
            }
        };
        Self {
            period: summary.period.to_string(),
            plan: summary.terms.plan.as_str(),
            usage: MeteredUsage {
                consents: quota(Metric::Consents),
                authentications: quota(Metric::Authentications),
                verifications: quota(Metric::Verifications),
                mandates: quota(Metric::Mandates),
            },
            api_calls: ApiCallsView {
                total: summary.api_calls,
                daily_average: summary.daily_average,
            },
            limits: (&summary.terms).into(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanView {
    merchant_id: String,
    plan: &'static str,
    limits: LimitsView,
}

impl PlanView {
    pub fn of(merchant_id: &str, terms: &PlanTerms) -> Self {
        Self {
            merchant_id: merchant_id.to_owned(),
            plan: terms.plan.as_str(),
            limits: terms.into(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClosedPeriodView {
    period: String,
    /// Invoices issued by this call.
    issued: u64,
    /// Merchants already invoiced for the period (closing twice issues nothing new).
    already_invoiced: u64,
}

impl From<&ClosedPeriod> for ClosedPeriodView {
    fn from(closed: &ClosedPeriod) -> Self {
        Self {
            period: closed.period.to_string(),
            issued: closed.issued,
            already_invoiced: closed.already_invoiced,
        }
    }
}
