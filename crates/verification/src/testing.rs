//! An in-memory [`VerificationStore`] for service tests; it passes the same contract suite as
//! the diesel adapter. One lock around everything makes each operation atomic; outbox entries
//! go to an [`InMemoryDeliveries`]. Charges are not judged here (no plans in memory).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::VerificationId;
use idconsent_webhook::Effects;
use idconsent_webhook::testing::InMemoryDeliveries;

use crate::model::Verification;
use crate::ports::{StoreError, VerificationStore};

#[derive(Debug)]
pub struct InMemoryVerifications {
    verifications: Mutex<BTreeMap<VerificationId, Verification>>,
    deliveries: Arc<InMemoryDeliveries>,
}

impl InMemoryVerifications {
    /// Verifications whose events land in `deliveries`.
    pub fn new(deliveries: Arc<InMemoryDeliveries>) -> Self {
        Self {
            verifications: Mutex::new(BTreeMap::new()),
            deliveries,
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<VerificationId, Verification>> {
        self.verifications
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl VerificationStore for InMemoryVerifications {
    async fn create(
        &self,
        verification: &Verification,
        effects: &Effects,
    ) -> Result<(), StoreError> {
        let mut verifications = self.lock();
        if verifications.contains_key(&verification.id) {
            return Err(StoreError::Duplicate);
        }
        verifications.insert(verification.id.clone(), verification.clone());
        self.deliveries.enqueue_now(&effects.outbox);
        Ok(())
    }

    async fn find(&self, id: &VerificationId) -> Result<Option<Verification>, StoreError> {
        Ok(self.lock().get(id).cloned())
    }

    async fn claim_due(
        &self,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Verification>, StoreError> {
        let mut verifications = self.lock();
        let mut due: Vec<&mut Verification> = verifications
            .values_mut()
            .filter(|job| job.outcome.is_none() && job.leased_until.is_none_or(|end| end <= now))
            .collect();
        due.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(due
            .into_iter()
            .take(limit as usize)
            .map(|job| {
                job.leased_until = Some(until);
                job.attempts += 1;
                job.version += 1;
                job.clone()
            })
            .collect())
    }

    async fn complete(
        &self,
        verification: &Verification,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        let mut verifications = self.lock();
        match verifications.get(&verification.id) {
            Some(stored) if stored.version == expected_version => {
                verifications.insert(verification.id.clone(), verification.clone());
                self.deliveries.enqueue_now(&effects.outbox);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use idconsent_webhook::testing::InMemoryDeliveries;

    use super::InMemoryVerifications;
    use crate::contract::Stores;

    async fn stores() -> Option<(Stores, ())> {
        let deliveries = Arc::new(InMemoryDeliveries::default());
        Some((
            Stores {
                verifications: Arc::new(InMemoryVerifications::new(deliveries.clone())),
                deliveries,
            },
            (),
        ))
    }

    crate::verification_store_contract!(stores);
}
