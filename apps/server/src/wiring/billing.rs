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
    Billing {
        service: Arc::new(BillingService::new(
            store.clone(),
            plans.clone(),
            clock.clone(),
            ids.clone(),
        )),
        metering: Arc::new(PlanMetering::new(plans.clone())),
        rate_limits: {
            let gate = RateLimitGate::new(plans, store, clock.clone());
            Arc::new(if config.billing.rate_limits {
                gate
            } else {
                gate.counting_only()
            })
        },
    }
}
