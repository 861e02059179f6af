#![doc = include_str!("../README.md")]

mod model;
pub mod negotiation;
pub mod ports;
mod service;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;

pub use model::{QrStatus, StoredQr};
pub use negotiation::{FormatError, choose_format};
pub use ports::{QrCodeRepository, StoreError};
pub use service::{GenerateQr, Generated, QrCodeError, QrCodeService, QrImage, QrRequester};
