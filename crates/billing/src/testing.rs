//! An in-memory [`BillingStore`] for service tests; it passes the same contract suite as the
//! diesel adapter.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use idconsent_kernel::id::{ApplicationId, InvoiceId, MerchantId};
use idconsent_kernel::{Metric, Page, PageRequest, Timestamp, UsagePeriod};

use crate::budget::{self, BudgetState, LeaseDecision, LeaseRequest};
use crate::invoice::{Invoice, InvoiceStatus};
use crate::plan::{Plan, PlanTerms};
use crate::ports::{BillingStore, CallReport, InvoiceQuery, StoreError, Usage};

#[derive(Debug, Default)]
struct State {
    plans: BTreeMap<MerchantId, PlanTerms>,
    owners: HashMap<ApplicationId, MerchantId>,
    budgets: HashMap<MerchantId, BudgetState>,
    metered: HashMap<(MerchantId, Metric, UsagePeriod), u64>,
    /// Calls per merchant and UTC day.
    calls: HashMap<(MerchantId, i64), u64>,
    invoices: Vec<Invoice>,
}

#[derive(Debug, Default)]
pub struct InMemoryBilling {
    state: Mutex<State>,
}

impl InMemoryBilling {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A merchant on the free plan owning `application`.
    pub fn add_merchant(&self, merchant: &MerchantId, application: &ApplicationId) {
        let mut state = self.state();
        state
            .plans
            .entry(merchant.clone())
            .or_insert_with(|| PlanTerms::standard(Plan::Free));
        state.owners.insert(application.clone(), merchant.clone());
    }

    /// Sets a metered counter, as a domain's store would have counted it.
    pub fn set_metered(
        &self,
        merchant: &MerchantId,
        metric: Metric,
        period: UsagePeriod,
        used: u64,
    ) {
        self.state()
            .metered
            .insert((merchant.clone(), metric, period), used);
    }
}

fn day_period(day: i64) -> UsagePeriod {
    UsagePeriod::of(Timestamp::from_millis(day.saturating_mul(86_400_000)))
}

#[async_trait]
impl BillingStore for InMemoryBilling {
    async fn plan(&self, merchant: &MerchantId) -> Result<PlanTerms, StoreError> {
        self.state()
            .plans
            .get(merchant)
            .copied()
            .ok_or(StoreError::NotFound)
    }

    async fn set_plan(&self, merchant: &MerchantId, terms: &PlanTerms) -> Result<(), StoreError> {
        match self.state().plans.get_mut(merchant) {
            Some(plan) => {
                *plan = *terms;
                Ok(())
            }
            None => Err(StoreError::NotFound),
        }
    }

    async fn merchant_of(&self, application: &ApplicationId) -> Result<MerchantId, StoreError> {
        self.state()
            .owners
            .get(application)
            .cloned()
            .ok_or(StoreError::NotFound)
    }

    async fn lease(
        &self,
        merchant: &MerchantId,
        request: &LeaseRequest,
        calls: CallReport,
    ) -> Result<LeaseDecision, StoreError> {
        let mut state = self.state();
        if !state.plans.contains_key(merchant) {
            return Err(StoreError::NotFound);
        }
        let current = state.budgets.get(merchant).copied().unwrap_or_default();
        let decision = budget::decide(current, request);
        state.budgets.insert(merchant.clone(), decision.state);
        if calls.calls > 0 {
            *state
                .calls
                .entry((merchant.clone(), calls.day))
                .or_default() += calls.calls;
        }
        Ok(decision)
    }

    async fn record_calls(
        &self,
        merchant: &MerchantId,
        calls: CallReport,
    ) -> Result<(), StoreError> {
        if calls.calls > 0 {
            *self
                .state()
                .calls
                .entry((merchant.clone(), calls.day))
                .or_default() += calls.calls;
        }
        Ok(())
    }

    async fn usage(&self, merchant: &MerchantId, period: UsagePeriod) -> Result<Usage, StoreError> {
        let state = self.state();
        let metered = Metric::ALL
            .into_iter()
            .filter_map(|metric| {
                let used = state.metered.get(&(merchant.clone(), metric, period))?;
                Some((metric, *used))
            })
            .collect();
        let api_calls = state
            .calls
            .iter()
            .filter(|((owner, day), _)| owner == merchant && day_period(*day) == period)
            .map(|(_, calls)| calls)
            .sum();
        Ok(Usage { metered, api_calls })
    }

    async fn merchants_after(
        &self,
        after: Option<&MerchantId>,
        created_before: Timestamp,
        limit: u32,
    ) -> Result<Vec<(MerchantId, PlanTerms)>, StoreError> {
        let state = self.state();
        // Merchants of the fake exist from the epoch on.
        if created_before <= Timestamp::from_millis(0) {
            return Ok(Vec::new());
        }
        Ok(state
            .plans
            .iter()
            .filter(|(id, _)| after.is_none_or(|after| *id > after))
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .map(|(id, terms)| (id.clone(), *terms))
            .collect())
    }

    async fn insert_invoice(&self, invoice: &Invoice) -> Result<bool, StoreError> {
        let mut state = self.state();
        if state
            .invoices
            .iter()
            .any(|known| known.merchant_id == invoice.merchant_id && known.period == invoice.period)
        {
            return Ok(false);
        }
        state.invoices.push(invoice.clone());
        Ok(true)
    }

    async fn invoice(&self, id: &InvoiceId) -> Result<Option<Invoice>, StoreError> {
        Ok(self.state().invoices.iter().find(|i| &i.id == id).cloned())
    }

    async fn invoices(
        &self,
        query: &InvoiceQuery,
        page: PageRequest,
    ) -> Result<Page<Invoice>, StoreError> {
        let state = self.state();
        let mut matching: Vec<Invoice> = state
            .invoices
            .iter()
            .filter(|invoice| invoice.merchant_id == query.merchant_id)
            .filter(|invoice| query.period.is_none_or(|period| invoice.period == period))
            .filter(|invoice| {
                query
                    .status
                    .is_none_or(|status| invoice.status_at(query.now) == status)
            })
            .cloned()
            .collect();
        matching.sort_by(|a, b| b.period.cmp(&a.period).then(b.id.cmp(&a.id)));
        let total = matching.len() as u64;
        let items = matching
            .into_iter()
            .skip(usize::try_from(page.offset()).unwrap_or(usize::MAX))
            .take(usize::try_from(page.limit()).unwrap_or(usize::MAX))
            .collect();
        Ok(Page {
            items,
            request: page,
            total,
        })
    }

    async fn mark_paid(&self, id: &InvoiceId, at: Timestamp) -> Result<Invoice, StoreError> {
        let mut state = self.state();
        let invoice = state
            .invoices
            .iter_mut()
            .find(|invoice| &invoice.id == id)
            .ok_or(StoreError::NotFound)?;
        if invoice.status != InvoiceStatus::Paid {
            invoice.status = InvoiceStatus::Paid;
            invoice.paid_at = Some(at);
        }
        Ok(invoice.clone())
    }

    async fn mark_overdue(&self, now: Timestamp) -> Result<u64, StoreError> {
        let mut state = self.state();
        let mut changed = 0;
        for invoice in &mut state.invoices {
            if invoice.status == InvoiceStatus::Pending && invoice.due_at <= now {
                invoice.status = InvoiceStatus::Overdue;
                changed += 1;
            }
        }
        Ok(changed)
    }
}
