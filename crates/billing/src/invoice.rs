//! Invoices: one per merchant and calendar month, priced from a documented price list in exact
//! integer arithmetic (cents, unit prices in millionths of a dollar).

use std::time::Duration;

use idconsent_kernel::id::{InvoiceId, MerchantId};
use idconsent_kernel::{Metric, Timestamp, UsagePeriod};

use crate::plan::{Plan, PlanTerms};
use crate::ports::Usage;

/// An invoice is due this long after it is issued; unpaid after that it is `overdue`.
pub const PAYMENT_TERM: Duration = Duration::from_secs(14 * 24 * 3600);

/// Invoices are in US dollars.
pub const CURRENCY: &str = "USD";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InvoiceStatus {
    Pending,
    Paid,
    Overdue,
}

impl InvoiceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            InvoiceStatus::Pending => "pending",
            InvoiceStatus::Paid => "paid",
            InvoiceStatus::Overdue => "overdue",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Pending, Self::Paid, Self::Overdue]
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InvoiceItem {
    pub description: String,
    /// Cents.
    pub amount_cents: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invoice {
    pub id: InvoiceId,
    pub merchant_id: MerchantId,
    pub period: UsagePeriod,
    pub plan: Plan,
    pub items: Vec<InvoiceItem>,
    /// The sum of the items, in cents.
    pub amount_cents: i64,
    /// As stored; read [`Invoice::status_at`] for what it is now.
    pub status: InvoiceStatus,
    pub issued_at: Timestamp,
    pub due_at: Timestamp,
    pub paid_at: Option<Timestamp>,
}

impl Invoice {
    /// The status as of `now`: a pending invoice past its due date is overdue, before the
    /// sweeper has stored it.
    pub fn status_at(&self, now: Timestamp) -> InvoiceStatus {
        match self.status {
            InvoiceStatus::Pending if now >= self.due_at => InvoiceStatus::Overdue,
            status => status,
        }
    }
}

/// What one unit of a metered action costs beyond the plan fee, in millionths of a dollar.
///
/// The plan fee includes the plan's quotas of consents, authentications and mandates (a quota
/// is a hard limit, so there is no overage); identity verifications are paid per result on
/// every plan, cheaper on larger plans; enterprise pays every action at volume prices.
/// `docs/billing.md` shows this table.
pub fn unit_price_micros(plan: Plan, metric: Metric) -> i64 {
    match (plan, metric) {
        (Plan::Free | Plan::Basic, Metric::Verifications) => 500_000,
        (Plan::Growth, Metric::Verifications) => 400_000,
        (Plan::Enterprise, Metric::Verifications) => 300_000,
        (Plan::Enterprise, Metric::Consents) => 2_000,
        (Plan::Enterprise, Metric::Authentications) => 1_000,
        (Plan::Enterprise, Metric::Mandates) => 20_000,
        _ => 0,
    }
}

/// `quantity × unit` in cents, rounded half up.
fn line_cents(quantity: u64, unit_micros: i64) -> i64 {
    let micros = i128::from(quantity) * i128::from(unit_micros);
    i64::try_from((micros + 5_000) / 10_000).unwrap_or(i64::MAX)
}

fn dollars(micros: i64) -> String {
    let cents = micros / 10_000;
    let rest = micros % 10_000;
    if rest == 0 {
        format!("{}.{:02}", cents / 100, cents % 100)
    } else {
        let text = format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000);
        text.trim_end_matches('0').to_owned()
    }
}

/// The items of a merchant's invoice for `period`: the plan fee, then each priced action.
pub fn invoice_items(terms: &PlanTerms, period: UsagePeriod, usage: &Usage) -> Vec<InvoiceItem> {
    let plan = terms.plan;
    let mut items = vec![InvoiceItem {
        description: format!("{} plan, {period}", capitalised(plan.as_str())),
        amount_cents: plan.monthly_fee_cents(),
    }];
    for metric in Metric::ALL {
        let used = usage.metered.get(&metric).copied().unwrap_or(0);
        let unit = unit_price_micros(plan, metric);
        if used == 0 || unit == 0 {
            continue;
        }
        items.push(InvoiceItem {
            description: format!("{used} {} × {} USD", metric.as_str(), dollars(unit)),
            amount_cents: line_cents(used, unit),
        });
    }
    items
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A new pending invoice.
pub fn issue(
    id: InvoiceId,
    merchant_id: MerchantId,
    terms: &PlanTerms,
    period: UsagePeriod,
    usage: &Usage,
    now: Timestamp,
) -> Invoice {
    let items = invoice_items(terms, period, usage);
    Invoice {
        id,
        merchant_id,
        period,
        plan: terms.plan,
        amount_cents: items.iter().map(|item| item.amount_cents).sum(),
        items,
        status: InvoiceStatus::Pending,
        issued_at: now,
        due_at: now.plus(PAYMENT_TERM),
        paid_at: None,
    }
}

#[cfg(test)]
mod tests {
    use idconsent_kernel::id::TypedId;

    use super::*;

    fn usage(pairs: &[(Metric, u64)]) -> Usage {
        Usage {
            metered: pairs.iter().copied().collect(),
            api_calls: 0,
        }
    }

    #[test]
    fn enterprise_pays_each_action_exactly() {
        let terms = PlanTerms::standard(Plan::Enterprise);
        let period = UsagePeriod::parse("2026-10").unwrap();
        let items = invoice_items(
            &terms,
            period,
            &usage(&[
                (Metric::Consents, 1_234),
                (Metric::Authentications, 3),
                (Metric::Verifications, 7),
            ]),
        );
        let lines: Vec<(&str, i64)> = items
            .iter()
            .map(|item| (item.description.as_str(), item.amount_cents))
            .collect();
        assert_eq!(
            lines,
            [
                ("Enterprise plan, 2026-10", 49_900),
                ("1234 consents × 0.002 USD", 247),
                ("3 authentications × 0.001 USD", 0),
                ("7 verifications × 0.30 USD", 210),
            ]
        );
    }

    #[test]
    fn quota_plans_pay_the_fee_and_verifications() {
        let now = Timestamp::parse_rfc3339("2026-11-01T00:05:00.000Z").unwrap();
        let invoice = issue(
            InvoiceId::from_trusted("in_1".into()),
            MerchantId::from_trusted("mer_1".into()),
            &PlanTerms::standard(Plan::Basic),
            UsagePeriod::parse("2026-10").unwrap(),
            &usage(&[(Metric::Consents, 4_000), (Metric::Verifications, 3)]),
            now,
        );
        assert_eq!(invoice.amount_cents, 7_900 + 150);
        assert_eq!(invoice.items.len(), 2);
        assert_eq!(invoice.status_at(now), InvoiceStatus::Pending);
        assert_eq!(
            invoice.due_at.to_rfc3339(),
            "2026-11-15T00:05:00.000Z",
            "due 14 days after issue"
        );
        assert_eq!(invoice.status_at(invoice.due_at), InvoiceStatus::Overdue);
        let free = issue(
            InvoiceId::from_trusted("in_2".into()),
            MerchantId::from_trusted("mer_2".into()),
            &PlanTerms::standard(Plan::Free),
            UsagePeriod::parse("2026-10").unwrap(),
            &Usage::default(),
            now,
        );
        assert_eq!(free.amount_cents, 0);
    }

    #[test]
    fn rounding_is_half_up_on_cents() {
        assert_eq!(line_cents(5, 1_000), 1); // 0.005 USD
        assert_eq!(line_cents(4, 1_000), 0);
        assert_eq!(line_cents(u64::MAX, 1), 1_844_674_407_370_955);
        assert_eq!(dollars(500_000), "0.50");
        assert_eq!(dollars(2_000), "0.002");
    }
}
