//! The QR code repository port.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::QrCodeId;

use crate::model::StoredQr;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The id is taken (ids are random: a second insert of the same record).
    #[error("already exists")]
    Duplicate,
    #[error("QR code storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Stored QR codes.
///
/// Contract: `insert` stores a code (`Duplicate` for a taken id, nothing changed); `find`
/// returns it exactly as inserted, whatever its expiry (the caller judges), or `None`.
#[async_trait]
pub trait QrCodeRepository: Send + Sync + fmt::Debug {
    async fn insert(&self, code: &StoredQr) -> Result<(), StoreError>;
    async fn find(&self, id: &QrCodeId) -> Result<Option<StoredQr>, StoreError>;
}
