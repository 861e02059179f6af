//! An in-memory [`DeliveryStore`] for service tests and for other domains' in-memory fakes
//! (their state changes write outbox entries here). It passes the same contract suite as the
//! diesel adapter: every operation runs under one lock, which makes the atomicity the contract
//! asks for trivially true.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use idconsent_kernel::id::{ApplicationId, DeliveryId};
use idconsent_kernel::{Environment, Page, PageRequest, Timestamp};

use crate::model::{Delivery, DeliveryStatus, Outbox};
use crate::ports::{AttemptRecord, DeliveryStore, NextStep, StoreError};
use crate::retries::{ManualRetries, ManualRetry, RetryAllowance};

#[derive(Debug, Clone)]
struct Stored {
    delivery: Delivery,
    manual: ManualRetries,
}

#[derive(Debug, Default)]
pub struct InMemoryDeliveries {
    deliveries: Mutex<BTreeMap<DeliveryId, Stored>>,
}

impl InMemoryDeliveries {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<DeliveryId, Stored>> {
        self.deliveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `enqueue` for other in-memory fakes, inside their own lock: the outbox is written
    /// together with their state change, as a store's transaction would.
    pub fn enqueue_now(&self, outbox: &[Outbox]) {
        let mut deliveries = self.lock();
        for entry in outbox {
            let event = &entry.event;
            for destination in &entry.destinations {
                let delivery = Delivery {
                    id: destination.delivery_id.clone(),
                    event_id: event.id.clone(),
                    event_type: event.event_type.clone(),
                    application_id: event.application_id.clone(),
                    environment: event.environment,
                    url: destination.url.clone(),
                    body: entry.body.clone(),
                    status: DeliveryStatus::Pending,
                    attempts: Vec::new(),
                    next_attempt_at: Some(event.created_at),
                    created_at: event.created_at,
                };
                deliveries.insert(
                    delivery.id.clone(),
                    Stored {
                        delivery,
                        manual: ManualRetries::default(),
                    },
                );
            }
        }
    }

    /// Every delivery, oldest first (for tests that look at what was written).
    pub fn all(&self) -> Vec<Delivery> {
        let mut all: Vec<Delivery> = self.lock().values().map(|s| s.delivery.clone()).collect();
        all.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        all
    }
}

fn scoped(stored: &Stored, application: &ApplicationId, environment: Environment) -> bool {
    stored.delivery.application_id == *application && stored.delivery.environment == environment
}

#[async_trait]
impl DeliveryStore for InMemoryDeliveries {
    async fn enqueue(&self, outbox: &[Outbox]) -> Result<(), StoreError> {
        self.enqueue_now(outbox);
        Ok(())
    }

    async fn list(
        &self,
        application: &ApplicationId,
        environment: Environment,
        status: Option<DeliveryStatus>,
        page: PageRequest,
    ) -> Result<Page<Delivery>, StoreError> {
        let mut matching: Vec<Delivery> = self
            .lock()
            .values()
            .filter(|s| scoped(s, application, environment))
            .filter(|s| status.is_none_or(|status| s.delivery.status == status))
            .map(|s| s.delivery.clone())
            .collect();
        // Newest first.
        matching.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        let total = matching.len() as u64;
        let items = matching
            .into_iter()
            .skip(usize::try_from(page.offset()).unwrap_or(usize::MAX))
            .take(page.limit() as usize)
            .collect();
        Ok(Page {
            items,
            request: page,
            total,
        })
    }

    async fn find(
        &self,
        application: &ApplicationId,
        environment: Environment,
        id: &DeliveryId,
    ) -> Result<Option<Delivery>, StoreError> {
        Ok(self
            .lock()
            .get(id)
            .filter(|s| scoped(s, application, environment))
            .map(|s| s.delivery.clone()))
    }

    async fn lease_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
        skip: &[ApplicationId],
    ) -> Result<Vec<Delivery>, StoreError> {
        let mut deliveries = self.lock();
        let mut due: Vec<(Timestamp, DeliveryId)> = deliveries
            .values()
            .filter(|s| s.delivery.status == DeliveryStatus::Pending)
            .filter(|s| !skip.contains(&s.delivery.application_id))
            .filter_map(|s| {
                s.delivery
                    .next_attempt_at
                    .filter(|at| *at <= now)
                    .map(|at| (at, s.delivery.id.clone()))
            })
            .collect();
        due.sort();
        let mut leased = Vec::new();
        for (_, id) in due.into_iter().take(limit as usize) {
            if let Some(stored) = deliveries.get_mut(&id) {
                stored.delivery.next_attempt_at = Some(lease_until);
                leased.push(stored.delivery.clone());
            }
        }
        leased.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(leased)
    }

    async fn release(&self, ids: &[DeliveryId], at: Timestamp) -> Result<(), StoreError> {
        let mut deliveries = self.lock();
        for id in ids {
            if let Some(stored) = deliveries.get_mut(id)
                && stored.delivery.status == DeliveryStatus::Pending
            {
                stored.delivery.next_attempt_at = Some(at);
            }
        }
        Ok(())
    }

    async fn record_attempts(&self, records: &[AttemptRecord]) -> Result<Vec<bool>, StoreError> {
        let mut deliveries = self.lock();
        Ok(records
            .iter()
            .map(|record| {
                let Some(stored) = deliveries.get_mut(&record.delivery) else {
                    return false;
                };
                let delivery = &mut stored.delivery;
                delivery.attempts.push(record.attempt.clone());
                (delivery.status, delivery.next_attempt_at) = match record.next {
                    NextStep::Succeeded => (DeliveryStatus::Succeeded, None),
                    NextStep::RetryAt(at) => (DeliveryStatus::Pending, Some(at)),
                    NextStep::Failed => (DeliveryStatus::Failed, None),
                };
                true
            })
            .collect())
    }

    async fn retry_now(
        &self,
        application: &ApplicationId,
        environment: Environment,
        id: &DeliveryId,
        now: Timestamp,
        allowance: RetryAllowance,
    ) -> Result<ManualRetry, StoreError> {
        let mut deliveries = self.lock();
        let Some(stored) = deliveries
            .get_mut(id)
            .filter(|s| scoped(s, application, environment))
        else {
            return Ok(ManualRetry::NotFound);
        };
        match allowance.judge(stored.manual, now) {
            Err(retry_at) => Ok(ManualRetry::Refused { retry_at }),
            Ok(counted) => {
                stored.manual = counted;
                stored.delivery.status = DeliveryStatus::Pending;
                stored.delivery.next_attempt_at = Some(now);
                Ok(ManualRetry::Retried(stored.delivery.clone()))
            }
        }
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use super::InMemoryDeliveries;
    use crate::ports::DeliveryStore;

    async fn store() -> Option<(Arc<dyn DeliveryStore>, ())> {
        Some((Arc::new(InMemoryDeliveries::default()), ()))
    }

    crate::delivery_store_contract!(store);
}
