//! An in-memory [`SignatureRepository`] for service tests; it passes the same contract suite as
//! the diesel adapter. One lock around everything makes each operation atomic; outbox entries go
//! to an [`InMemoryDeliveries`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::SignatureRequestId;
use idconsent_webhook::Effects;
use idconsent_webhook::testing::InMemoryDeliveries;

use crate::model::{RequestStatus, SignatureRequest};
use crate::ports::{SignatureRepository, StoreError};

#[derive(Debug)]
pub struct InMemorySignatureRequests {
    requests: Mutex<BTreeMap<SignatureRequestId, SignatureRequest>>,
    deliveries: Arc<InMemoryDeliveries>,
}

impl InMemorySignatureRequests {
    /// Requests whose events land in `deliveries`.
    pub fn new(deliveries: Arc<InMemoryDeliveries>) -> Self {
        Self {
            requests: Mutex::new(BTreeMap::new()),
            deliveries,
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<SignatureRequestId, SignatureRequest>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl SignatureRepository for InMemorySignatureRequests {
    async fn create(
        &self,
        request: &SignatureRequest,
        effects: &Effects,
    ) -> Result<(), StoreError> {
        let mut requests = self.lock();
        if requests.contains_key(&request.id) {
            return Err(StoreError::Duplicate);
        }
        requests.insert(request.id.clone(), request.clone());
        self.deliveries.enqueue_now(&effects.outbox);
        Ok(())
    }

    async fn find(&self, id: &SignatureRequestId) -> Result<Option<SignatureRequest>, StoreError> {
        Ok(self.lock().get(id).cloned())
    }

    async fn replace(
        &self,
        request: &SignatureRequest,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        let mut requests = self.lock();
        match requests.get(&request.id) {
            Some(stored) if stored.version == expected_version => {
                requests.insert(request.id.clone(), request.clone());
                self.deliveries.enqueue_now(&effects.outbox);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn due_for_expiry(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<SignatureRequest>, StoreError> {
        let mut due: Vec<SignatureRequest> = self
            .lock()
            .values()
            .filter(|r| r.status == RequestStatus::Pending && r.expires_at <= now)
            .cloned()
            .collect();
        due.sort_by(|a, b| (a.expires_at, &a.id).cmp(&(b.expires_at, &b.id)));
        due.truncate(limit as usize);
        Ok(due)
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use idconsent_webhook::testing::InMemoryDeliveries;

    use super::InMemorySignatureRequests;
    use crate::contract::Stores;

    async fn stores() -> Option<(Stores, ())> {
        let deliveries = Arc::new(InMemoryDeliveries::default());
        Some((
            Stores {
                requests: Arc::new(InMemorySignatureRequests::new(deliveries.clone())),
                deliveries,
            },
            (),
        ))
    }

    crate::signature_repository_contract!(stores);
}
