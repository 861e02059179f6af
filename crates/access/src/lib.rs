#![doc = include_str!("../README.md")]

mod gate;
mod idempotency;
pub mod ports;
mod signed;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;

pub use gate::{Admission, Gate, GateChain, GateRequest, Hold, Refusal, RefusalKind};
pub use idempotency::{Idempotency, IdempotencyDecision, IdempotencyTicket};
pub use signed::{AccessError, ApiAccess, Caller, Denied, Identified, SignedHeaders};

/// Everything a signed request passes, in the order it passes them: the HTTP layer's one door.
#[derive(Debug, Clone)]
pub struct RequestGate {
    pub access: ApiAccess,
    pub gates: GateChain,
    pub idempotency: Idempotency,
}

impl RequestGate {
    /// The time the gates judge a request at.
    pub fn now(&self) -> idconsent_kernel::Timestamp {
        self.access.now()
    }

    /// Forgets replay fingerprints and idempotency keys that no longer matter.
    pub async fn forget_expired(&self) -> Result<u64, AccessError> {
        let fingerprints = self.access.forget_expired().await?;
        let keys = self.idempotency.forget_expired().await?;
        Ok(fingerprints + keys)
    }
}
