//! The signature ports. Documents themselves go to the kernel's `BlobStore`.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::SignatureRequestId;
use idconsent_webhook::Effects;

use crate::model::SignatureRequest;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `create` with an id that exists.
    #[error("duplicate signature request")]
    Duplicate,
    #[error("signature storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Signature requests and the outbox of their events.
///
/// Contract:
/// - `create` inserts the request with its effects atomically (`Duplicate` for a known id).
/// - `find` returns the request as stored, `None` for an unknown id.
/// - `replace` stores `request` (whose `version` is one more than `expected_version`) with its
///   effects, atomically, if the stored version is still `expected_version`, and says whether it
///   did; otherwise nothing is written. Of two concurrent replaces from the same version exactly
///   one succeeds, so a transition computed from a stale read is never stored.
/// - `due_for_expiry` lists requests stored as `pending` whose `expires_at` is at or before
///   `now`, oldest expiry first, at most `limit`.
#[async_trait]
pub trait SignatureRepository: Send + Sync + fmt::Debug {
    async fn create(&self, request: &SignatureRequest, effects: &Effects)
    -> Result<(), StoreError>;
    async fn find(&self, id: &SignatureRequestId) -> Result<Option<SignatureRequest>, StoreError>;
    async fn replace(
        &self,
        request: &SignatureRequest,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError>;
    async fn due_for_expiry(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<SignatureRequest>, StoreError>;
}

/// What a PDF that parses says about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PdfFacts {
    pub pages: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfRejection {
    #[error("must be a PDF document")]
    NotPdf,
    #[error("must not be encrypted or password-protected")]
    Encrypted,
    #[error("must have at least one page")]
    NoPages,
    /// Reading it went past the parser's bounds (docs/security.md, "PDF parsing"); which
    /// bound is logged, not told.
    #[error("must be a PDF this service can read within its limits on size and structure")]
    Unreadable,
}

/// Why an upload got no verdict.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// The upload is refused (422 naming `document`).
    #[error("{0}")]
    Rejected(PdfRejection),
    /// Every parser stayed busy for the queue wait: the upload was not read; try again later.
    #[error("every document parser is busy")]
    Busy { retry_after_secs: u64 },
    /// The parser could not be run (a deployment fault, not the upload's).
    #[error("the document parser could not be run")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Reads an uploaded document.
///
/// Contract: `inspect` accepts exactly the documents the certificate maker can extend: a PDF
/// that parses, is not encrypted and has at least one page; a document that cannot be read
/// within the parser's memory and time bounds is `Rejected(Unreadable)`. Never blocks the
/// calling thread on the parse.
#[async_trait]
pub trait PdfInspector: Send + Sync + fmt::Debug {
    async fn inspect(&self, bytes: &[u8]) -> Result<PdfFacts, InspectError>;
}

#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// Every parser stayed busy for the queue wait; try again later.
    #[error("every document parser is busy")]
    Busy { retry_after_secs: u64 },
    /// Trusted time is required and the time-stamping authority did not give it: the
    /// certificate waits (nothing was stored); try again later.
    #[error("the certificate waits for the time-stamping authority: {reason}")]
    TimestampPending {
        retry_after_secs: u64,
        reason: String,
    },
    #[error("the certificate could not be made")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Makes the certificate of a completed request.
///
/// Contract: the result starts with `original` byte for byte, adds a page with the request's
/// audit trail, and carries a signature over the whole file that PDF validators accept.
#[async_trait]
pub trait CertificateMaker: Send + Sync + fmt::Debug {
    async fn certify(
        &self,
        original: &[u8],
        request: &SignatureRequest,
    ) -> Result<Vec<u8>, CertificateError>;
}

/// Trusted time for a signature (RFC 3161, PAdES B-T): a time-stamp token over a digest.
///
/// Contract: `timestamp` returns the DER of a TimeStampToken (a CMS ContentInfo whose
/// SignedData encapsulates a TSTInfo) whose message imprint is SHA-256 with `digest` as the
/// hashed message, signed by the authority the operator configured (checked, not assumed);
/// `Unavailable` when the authority could not be reached or did not grant the request,
/// `Refused` when it answered with a token that fails those checks. Never returns a token it
/// did not check.
#[async_trait]
pub trait TimestampAuthority: Send + Sync + fmt::Debug {
    async fn timestamp(&self, digest: &[u8; 32]) -> Result<Vec<u8>, TimestampError>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    #[error("the time-stamping authority is unavailable: {0}")]
    Unavailable(String),
    #[error("the time-stamping authority's token was refused: {0}")]
    Refused(String),
}
