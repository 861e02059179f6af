//! Identity from the chip (ICAO 9303 eMRTD; CONTRACT §10): the evidence a wallet read over NFC,
//! the challenge that makes active authentication fresh, and the [`ChipVerifier`] port that
//! proves the evidence with cryptography (adapter: `idconsent-emrtd`).

mod challenge;
mod evidence;
mod judgement;
mod report;
mod store;

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::Timestamp;

pub use challenge::{CHIP_CHALLENGE_LIFETIME, ChallengeRejection, ChipChallenge};
pub use evidence::{
    AaAnswer, ActiveAuthenticationAnswer, CHALLENGE_LEN, ChipEvidence, ChipEvidenceError,
    ChipFiles, DataGroup, MAX_AA_SIGNATURE, MAX_DG1, MAX_DG2, MAX_SMALL_DG, MAX_SOD, SOD_TAG,
};
pub use judgement::{ChipDetails, ChipResult, judge_chip, portrait_readable, unverified_chip};
pub use report::{
    AaKeyType, ActiveAuthentication, ActiveFailure, CertificateRole, ChipAuthentication,
    ChipReport, ContentProblem, CscaAnchor, DocumentSigner, PassiveAuthentication, PassiveFailure,
    PersonalDetails, Portrait, PortraitFormat, Revocation,
};
pub use store::{ChallengeStoreError, ChipChallengeStore};

/// One verification to run.
#[derive(Debug, Clone)]
pub struct ChipCheck {
    pub evidence: ChipEvidence,
    /// The challenge this server issued and has taken (single use) for this submission, when
    /// the evidence carries an active-authentication answer; `None` when no issued challenge
    /// was found (the answer then fails with [`ActiveFailure::ChallengeNotIssued`]).
    pub issued_challenge: Option<[u8; CHALLENGE_LEN]>,
    /// The time certificates and CRLs are judged at (the clock's now).
    pub at: Timestamp,
}

/// Why a verification could not run at all (not: why a chip failed — that is a
/// [`ChipReport`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChipVerifierError {
    /// The verifier is not configured in this build or deployment (no trust store), or its
    /// worker pool stopped.
    #[error("{0}")]
    Unavailable(String),
}

/// Proves a chip read.
///
/// Contract:
/// - Passive authentication `Passed` only when the SOD's CMS signature verifies with the
///   document signer certificate it carries, that certificate was issued (signature checked)
///   by a CSCA of the operator's trust store, both were valid at `at`, no CRL of that CSCA
///   lists it, and every data group sent has the hash the SOD gives it. The first failing
///   step is the [`PassiveFailure`]; nothing is trusted by default.
/// - Active authentication follows [`ActiveAuthentication`]'s variants: `NotSupported` without
///   DG15 (whatever else was sent), `NotAttempted` without an answer, otherwise `Passed` only
///   when DG15 passed its hash check, the answer's challenge equals `issued_challenge`, and the
///   signature verifies under DG15's key.
/// - Chip authentication is never claimed: `NotVerified` when DG14 offers it.
/// - Deterministic for the same check; never panics on any bytes a [`ChipEvidence`] admits.
/// - The work is CPU-bound parsing of untrusted ASN.1 and public-key arithmetic (about a
///   millisecond): an implementation runs it on a bounded blocking pool, never on the async
///   worker that awaits it (the adapter holds a permit and uses `spawn_blocking`).
#[async_trait]
pub trait ChipVerifier: Send + Sync + fmt::Debug {
    async fn verify(&self, check: ChipCheck) -> Result<ChipReport, ChipVerifierError>;
}

/// The verifier of a deployment without a trust store: every call says how to get one.
#[derive(Debug, Clone)]
pub struct NoChipVerifier {
    reason: String,
}

impl NoChipVerifier {
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

#[async_trait]
impl ChipVerifier for NoChipVerifier {
    async fn verify(&self, _check: ChipCheck) -> Result<ChipReport, ChipVerifierError> {
        Err(ChipVerifierError::Unavailable(self.reason.clone()))
    }
}
