//! The confirmation store: one record per object and recipient address ("subject").

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::Timestamp;

use crate::guesses::{GuessPolicy, Taken};

#[derive(Debug, thiserror::Error)]
#[error("confirmation storage failed")]
pub struct StoreError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// A subject's state, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    pub subject: String,
    /// The keyed hash of the live code; `None` once used (or never sent).
    pub code_hash: Option<String>,
    pub code_expires_at: Timestamp,
    pub attempts_left: u32,
    pub code_sent_at: Timestamp,
    /// Set by the guess that used the last attempt.
    pub locked_until: Option<Timestamp>,
    /// The keyed hash of the page token a right code bought.
    pub token_hash: Option<String>,
    pub token_expires_at: Option<Timestamp>,
    /// The WebAuthn state between the browser's two answers (registration, then assertion).
    pub ceremony: Option<String>,
    /// The passkey made in the browser for this confirmation, and its signature counter.
    pub passkey: Option<String>,
    pub passkey_counter: u32,
    /// Hex SHA-256 of the context the assertion's challenge commits to.
    pub context_hash: Option<String>,
    /// When the guesses still counted against the subject's window were taken, oldest first.
    pub guesses: Vec<Timestamp>,
}

/// A new code for a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCode {
    pub subject: String,
    pub code_hash: String,
    pub expires_at: Timestamp,
    pub attempts: u32,
    pub sent_at: Timestamp,
}

/// Why `issue_code` stored nothing, or that it stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issued {
    Stored,
    /// A code was sent less than the resend interval ago.
    TooSoon {
        last_sent_at: Timestamp,
    },
    Locked {
        until: Timestamp,
    },
}

/// What a ceremony step stores, guarded by the page token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CeremonyStep {
    pub ceremony: String,
    pub passkey: Option<String>,
    pub passkey_counter: u32,
    pub context_hash: Option<String>,
}

/// Codes, attempts, locks, page tokens and passkey ceremony state per subject.
///
/// Contract (every limit is one conditional write or one locked read-judge-write, so it holds
/// across processes):
/// - `issue_code` replaces the subject's code, token and ceremony with a fresh code unless a
///   code was sent after `resend_cutoff` (`TooSoon`) or the subject is locked at `now`
///   (`Locked`); of concurrent issuers at most one stores. The subject's guesses stay counted.
/// - `take_attempt` judges one guess with [`GuessPolicy::judge`] against the subject's stored
///   state and keeps what it decided, atomically: of concurrent takers each sees the one before
///   it, so no more succeed than the code's attempts and the window's guesses allow. A refused
///   guess changes nothing; an unknown subject is `NoCode`.
/// - `confirm` (after a right code) clears the code and the lock, gives back the guess taken at
///   `taken_at` and stores the token, if the code is still `code_hash`: a code confirms once.
/// - `save_ceremony` stores a ceremony step if the subject's token is `token_hash` and
///   unexpired at `now`.
/// - `consume` clears the subject's token, code and ceremony if its token is `token_hash` and
///   says whether this call did: a token decides once. Its guesses stay counted.
/// - `forget_before` deletes subjects whose code, token and lock all ended before `before`
///   (a guess is only taken on a live code, so such a subject's guesses are older too).
#[async_trait]
pub trait ConfirmationStore: Send + Sync + fmt::Debug {
    async fn issue_code(
        &self,
        code: &NewCode,
        resend_cutoff: Timestamp,
        now: Timestamp,
    ) -> Result<Issued, StoreError>;
    async fn take_attempt(
        &self,
        subject: &str,
        policy: &GuessPolicy,
        now: Timestamp,
    ) -> Result<Taken, StoreError>;
    async fn confirm(
        &self,
        subject: &str,
        code_hash: &str,
        taken_at: Timestamp,
        token_hash: &str,
        token_expires_at: Timestamp,
    ) -> Result<bool, StoreError>;
    async fn find(&self, subject: &str) -> Result<Option<Confirmation>, StoreError>;
    async fn save_ceremony(
        &self,
        subject: &str,
        token_hash: &str,
        now: Timestamp,
        step: &CeremonyStep,
    ) -> Result<bool, StoreError>;
    async fn consume(&self, subject: &str, token_hash: &str) -> Result<bool, StoreError>;
    async fn forget_before(&self, before: Timestamp) -> Result<u64, StoreError>;
}
