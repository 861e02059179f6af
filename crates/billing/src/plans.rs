//! Plans as the request path reads them: cached briefly per process, so a gate or a meter does
//! not read the database per request. A plan set in this process applies at once; one set in
//! another process within [`PLAN_CACHE_TTL`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use idconsent_kernel::id::{ApplicationId, MerchantId};
use idconsent_kernel::{
    Charge, Clock, Environment, Metering, MeteringError, Metric, Timestamp, UsagePeriod,
};

use crate::plan::PlanTerms;
use crate::ports::{BillingStore, StoreError};

/// How long a process trusts a plan it read.
pub const PLAN_CACHE_TTL: Duration = Duration::from_secs(5);

/// Cached plan look-ups.
#[derive(Debug)]
pub struct PlanCache {
    store: Arc<dyn BillingStore>,
    clock: Arc<dyn Clock>,
    plans: Mutex<HashMap<MerchantId, (PlanTerms, Timestamp)>>,
    /// An application never changes merchant, so this is never stale.
    owners: Mutex<HashMap<ApplicationId, MerchantId>>,
}

impl PlanCache {
    pub fn new(store: Arc<dyn BillingStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            plans: Mutex::default(),
            owners: Mutex::default(),
        }
    }

    pub async fn terms(&self, merchant: &MerchantId) -> Result<PlanTerms, StoreError> {
        let now = self.clock.now();
        if let Some((terms, read_at)) = lock(&self.plans).get(merchant).copied()
            && now.since(read_at) < PLAN_CACHE_TTL
            && now >= read_at
        {
            return Ok(terms);
        }
        let terms = self.store.plan(merchant).await?;
        let mut plans = lock(&self.plans);
        if plans.len() > 100_000 {
            plans.clear();
        }
        plans.insert(merchant.clone(), (terms, now));
        Ok(terms)
    }

    pub async fn merchant_of(&self, application: &ApplicationId) -> Result<MerchantId, StoreError> {
        if let Some(merchant) = lock(&self.owners).get(application) {
            return Ok(merchant.clone());
        }
        let merchant = self.store.merchant_of(application).await?;
        let mut owners = lock(&self.owners);
        if owners.len() > 100_000 {
            owners.clear();
        }
        owners.insert(application.clone(), merchant.clone());
        Ok(merchant)
    }

    /// Drops a cached plan after this process changed it.
    pub fn forget(&self, merchant: &MerchantId) {
        lock(&self.plans).remove(merchant);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Metering by plan: a live action counts against its merchant's monthly quota; sandbox
/// actions are never counted.
#[derive(Debug, Clone)]
pub struct PlanMetering {
    plans: Arc<PlanCache>,
}

impl PlanMetering {
    pub fn new(plans: Arc<PlanCache>) -> Self {
        Self { plans }
    }
}

#[async_trait]
impl Metering for PlanMetering {
    async fn charge(
        &self,
        application: &ApplicationId,
        environment: Environment,
        metric: Metric,
        at: Timestamp,
    ) -> Result<Option<Charge>, MeteringError> {
        if environment != Environment::Live {
            return Ok(None);
        }
        let failed = |error: StoreError| MeteringError(Box::new(error));
        let merchant_id = self.plans.merchant_of(application).await.map_err(failed)?;
        let terms = self.plans.terms(&merchant_id).await.map_err(failed)?;
        Ok(Some(Charge {
            limit: terms.quota(metric),
            merchant_id,
            metric,
            period: UsagePeriod::of(at),
        }))
    }
}
