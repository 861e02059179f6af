//! An in-memory [`QrCodeRepository`] for service tests; it passes the same contract suite as
//! the diesel adapter.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use idconsent_kernel::id::QrCodeId;

use crate::model::StoredQr;
use crate::ports::{QrCodeRepository, StoreError};

#[derive(Debug, Default)]
pub struct InMemoryQrCodes {
    codes: Mutex<HashMap<QrCodeId, StoredQr>>,
}

#[async_trait]
impl QrCodeRepository for InMemoryQrCodes {
    async fn insert(&self, code: &StoredQr) -> Result<(), StoreError> {
        let mut codes = self
            .codes
            .lock()
            .map_err(|_| StoreError::Unavailable("poisoned".into()))?;
        if codes.contains_key(&code.id) {
            return Err(StoreError::Duplicate);
        }
        codes.insert(code.id.clone(), code.clone());
        Ok(())
    }

    async fn find(&self, id: &QrCodeId) -> Result<Option<StoredQr>, StoreError> {
        let codes = self
            .codes
            .lock()
            .map_err(|_| StoreError::Unavailable("poisoned".into()))?;
        Ok(codes.get(id).cloned())
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use super::InMemoryQrCodes;
    use crate::ports::QrCodeRepository;

    async fn store() -> Option<(Arc<dyn QrCodeRepository>, ())> {
        Some((Arc::new(InMemoryQrCodes::default()), ()))
    }

    crate::qr_code_store_contract!(store);
}
