//! Billing: plans read through a short cache, metering by plan for every domain that counts
//! actions, the rate-limit gate (unless `IDC_RATE_LIMITS=false`), the billing service.

use std::sync::Arc;

use idconsent_billing::{BillingService, PlanCache, PlanMetering, RateLimitGate};
use idconsent_kernel::{Clock, IdGenerator};
use idconsent_store_diesel::{Db, DieselBillingStore};

use crate::config::Config;

pub struct Billing {
    pub service: Arc<BillingService>,
    pub metering: Arc<PlanMetering>,
    /// Enforces the plan limits, or with `IDC_RATE_LIMITS=false` only counts live calls.
    pub rate_limits: Arc<RateLimitGate>,
}

pub fn build(
    config: &Config,
    db: &Db,
    clock: &Arc<dyn Clock>,
    ids: &Arc<dyn IdGenerator>,
) -> Billing {
    let store = Arc::new(DieselBillingStore::new(db.clone()));
    let plans = Arc::new(PlanCache::new(store.clone(), clock.clone()));
    let gate = RateLimitGate::new(plans.clone(), store.clone(), clock.clone());
    let rate_limits = Arc::new(if config.billing.rate_limits {
        gate
    } else {
        gate.counting_only()
    });
    Billing {
        service: Arc::new(
            BillingService::new(store, plans.clone(), clock.clone(), ids.clone())
                .reporting_calls_of(rate_limits.clone()),
        ),
        metering: Arc::new(PlanMetering::new(plans)),
        rate_limits,
    }
}
