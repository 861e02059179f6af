#![doc = include_str!("../README.md")]

mod aa;
mod algorithms;
mod certs;
mod curves;
mod lds;
mod oids;
mod signed;
mod sod;
mod tlv;
mod trust;
mod verify;

#[cfg(feature = "fixtures")]
pub mod fixtures;

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_verification::chip::{ChipCheck, ChipReport, ChipVerifier, ChipVerifierError};
use tokio::sync::Semaphore;

pub use aa::{Iso9796Error, check_block as check_iso9796_block};
pub use algorithms::HashAlgorithm;
pub use trust::{AnchorSource, MAX_TRUST_FILE, MAX_TRUST_FILES, Rejected, TrustError, TrustStore};
pub use verify::verify_blocking;

/// Verifications at once per verifier unless told otherwise: one per core on the machines we
/// run on; each holds at most the evidence's bounded bytes.
pub const DEFAULT_CONCURRENCY: usize = 2;

/// The [`ChipVerifier`] on RustCrypto. Each verification holds a permit of its own semaphore
/// and runs on tokio's blocking pool, so a flood of chips queues here instead of occupying the
/// async workers or every blocking thread.
#[derive(Debug, Clone)]
pub struct EmrtdVerifier {
    trust: Arc<TrustStore>,
    permits: Arc<Semaphore>,
}

impl EmrtdVerifier {
    pub fn new(trust: TrustStore, concurrency: usize) -> Self {
        Self {
            trust: Arc::new(trust),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
        }
    }

    pub fn trust(&self) -> &TrustStore {
        &self.trust
    }

    /// Runs `work` with a permit on the blocking pool: the helper for any other parsing of chip
    /// bytes a caller needs.
    pub async fn on_blocking_pool<T: Send + 'static>(
        &self,
        work: impl FnOnce(&TrustStore) -> T + Send + 'static,
    ) -> Result<T, ChipVerifierError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|error| ChipVerifierError::Unavailable(error.to_string()))?;
        let trust = Arc::clone(&self.trust);
        tokio::task::spawn_blocking(move || work(&trust))
            .await
            .map_err(|error| {
                ChipVerifierError::Unavailable(format!("chip verification stopped: {error}"))
            })
    }
}

#[async_trait]
impl ChipVerifier for EmrtdVerifier {
    async fn verify(&self, check: ChipCheck) -> Result<ChipReport, ChipVerifierError> {
        self.on_blocking_pool(move |trust| verify_blocking(trust, &check))
            .await
    }
}
