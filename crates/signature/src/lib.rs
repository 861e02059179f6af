#![doc = include_str!("../README.md")]

mod approval;
mod error;
pub mod events;
pub mod model;
pub mod ports;
mod service;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;

pub use approval::{SignatureApprovals, SignatureContext, page_hash, purpose_id};
pub use error::SignatureError;
pub use events::StatusBody;
pub use model::{
    AuditAction, AuditEntry, Evidence, RequestStatus, SignatureRequest, Signer, SignerStatus,
};
pub use ports::{
    CertificateError, CertificateMaker, InspectError, PdfFacts, PdfInspector, PdfRejection,
    SignatureRepository, StoreError, TimestampAuthority, TimestampError,
};
pub use service::{
    Answer, CreateRequest, Requester, SignaturePorts, SignatureService, SignatureSettings,
    SignerInput,
};
