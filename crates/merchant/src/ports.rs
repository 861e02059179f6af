//! The ports of the merchant domain. Each states its contract; `crate::contract` tests it.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::{ApplicationId, MerchantId, MerchantUserId};
use idconsent_kernel::{
    CalendarDate, EmailAddress, Environment, Page, PageRequest, Sealed, Timestamp,
};

use crate::login::{LoginAdmission, LoginPolicy};
use crate::model::{
    Application, BusinessProfile, Document, Merchant, MerchantStatus, MerchantUser, Role,
};

/// The failure vocabulary of every merchant repository.
#[derive(Debug, thiserror::Error)]
pub enum RepositoryError {
    /// A unique value (an email, an id) is already taken.
    #[error("already exists")]
    Duplicate,
    #[error("not found")]
    NotFound,
    /// The current state forbids the change; the tag says which rule.
    #[error("conflict: {0}")]
    Conflict(&'static str),
    #[error("storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Conflict tags the repositories use.
pub mod conflicts {
    pub const WRONG_STATUS: &str = "the merchant is not in a status that allows this";
    pub const APPLICATIONS_CHANGED: &str = "applications changed during approval";
    pub const LAST_OWNER: &str = "the last owner cannot be removed";
    pub const NOT_INVITED: &str = "the member is not awaiting an invitation";
    pub const NO_LIVE_CREDENTIALS: &str = "live credentials do not exist yet";
}

/// A freshly minted API key: its lookup hash and its sealed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewKey {
    pub environment: Environment,
    /// `KeyedHash` of the key under the `api-key` purpose, lowercase hex.
    pub hash: String,
    pub sealed: Sealed,
    pub generated_at: Timestamp,
}

/// Merchant accounts and their documents.
///
/// Contract:
/// - `create` stores the merchant and its owner together, or neither; an email already used
///   by any team member of any merchant is `Duplicate`.
/// - `list` is newest first, optionally filtered by status.
/// - `transition` changes the status only when the current one is in `from` (else
///   `Conflict(WRONG_STATUS)`), and records `at` as submission time when moving to
///   `InReview`, or as decision time (with the reason) when moving to `Live`/`Rejected`.
/// - `approve` is atomic: `InReview` → `Live`, every document verified, and the given live key
///   stored for each application; if any application of the merchant would be left without a
///   live key, nothing changes and it is `Conflict(APPLICATIONS_CHANGED)`.
/// - Updates of an unknown merchant are `NotFound`.
#[async_trait]
pub trait MerchantRepository: Send + Sync + fmt::Debug {
    async fn create(
        &self,
        merchant: &Merchant,
        owner: &MerchantUser,
    ) -> Result<(), RepositoryError>;
    async fn find(&self, id: &MerchantId) -> Result<Option<Merchant>, RepositoryError>;
    async fn list(
        &self,
        status: Option<MerchantStatus>,
        page: PageRequest,
    ) -> Result<Page<Merchant>, RepositoryError>;
    async fn mark_email_verified(
        &self,
        id: &MerchantId,
        at: Timestamp,
    ) -> Result<(), RepositoryError>;
    async fn mark_phone_verified(
        &self,
        id: &MerchantId,
        at: Timestamp,
    ) -> Result<(), RepositoryError>;
    async fn save_profile(
        &self,
        id: &MerchantId,
        profile: &BusinessProfile,
        at: Timestamp,
    ) -> Result<(), RepositoryError>;
    async fn transition(
        &self,
        id: &MerchantId,
        from: &[MerchantStatus],
        to: MerchantStatus,
        at: Timestamp,
        reason: Option<&str>,
    ) -> Result<(), RepositoryError>;
    async fn approve(
        &self,
        id: &MerchantId,
        live_keys: &[(ApplicationId, NewKey)],
        at: Timestamp,
    ) -> Result<(), RepositoryError>;
    async fn add_document(&self, document: &Document) -> Result<(), RepositoryError>;
    /// Oldest first.
    async fn list_documents(&self, merchant: &MerchantId)
    -> Result<Vec<Document>, RepositoryError>;
}

/// Team members.
///
/// Contract:
/// - Emails are unique across every merchant's team: `add` of a taken email is `Duplicate`.
/// - `find_by_email` ignores removed members.
/// - `activate` sets the password of an `Invited` member and makes it `Active`
///   (`Conflict(NOT_INVITED)` otherwise).
/// - `remove` marks a member `Removed`; removing the last active owner is
///   `Conflict(LAST_OWNER)` and changes nothing. A member of another merchant is `NotFound`.
/// - `take_login_attempt` judges one attempt with `LoginPolicy::judge` against the member's
///   stored attempts and keeps the admitted state, atomically: of concurrent attempts each sees
///   the one before it. A refused attempt changes nothing. Unknown member: `NotFound`.
/// - `clear_failed_logins` resets the count and the lock.
#[async_trait]
pub trait TeamRepository: Send + Sync + fmt::Debug {
    async fn add(&self, user: &MerchantUser) -> Result<(), RepositoryError>;
    async fn find(&self, id: &MerchantUserId) -> Result<Option<MerchantUser>, RepositoryError>;
    async fn find_by_email(
        &self,
        email: &EmailAddress,
    ) -> Result<Option<MerchantUser>, RepositoryError>;
    /// Everyone not removed, oldest first.
    async fn list(&self, merchant: &MerchantId) -> Result<Vec<MerchantUser>, RepositoryError>;
    async fn activate(
        &self,
        id: &MerchantUserId,
        password_hash: &str,
        at: Timestamp,
    ) -> Result<(), RepositoryError>;
    async fn remove(
        &self,
        merchant: &MerchantId,
        id: &MerchantUserId,
        at: Timestamp,
    ) -> Result<(), RepositoryError>;
    async fn take_login_attempt(
        &self,
        id: &MerchantUserId,
        policy: LoginPolicy,
        now: Timestamp,
    ) -> Result<LoginAdmission, RepositoryError>;
    async fn clear_failed_logins(&self, id: &MerchantUserId) -> Result<(), RepositoryError>;
}

/// What a one-time code proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodePurpose {
    /// The emailed link token; subject: the merchant id.
    EmailVerification,
    /// The SMS code; subject: the merchant id.
    PhoneVerification,
    /// The invitation link token; subject: the invited member's id.
    Invitation,
}

impl CodePurpose {
    pub fn as_str(self) -> &'static str {
        match self {
            CodePurpose::EmailVerification => "email_verification",
            CodePurpose::PhoneVerification => "phone_verification",
            CodePurpose::Invitation => "invitation",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            CodePurpose::EmailVerification,
            CodePurpose::PhoneVerification,
            CodePurpose::Invitation,
        ]
        .into_iter()
        .find(|p| p.as_str() == text)
    }
}

/// A one-time code or link token, stored only as a keyed hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneTimeCode {
    pub purpose: CodePurpose,
    pub subject: String,
    pub code_hash: String,
    pub expires_at: Timestamp,
    pub attempts_left: u32,
    pub created_at: Timestamp,
}

/// One-time codes: at most one live code per purpose and subject.
///
/// Contract:
/// - `put` replaces any code of the same purpose and subject.
/// - `put_unless_newer` does the same only when no code exists or the existing one was created at
///   or before `cutoff`, and says whether it stored: of concurrent resends exactly one wins.
/// - `find` / `find_by_hash` return the code whatever its expiry (the caller judges).
/// - `take_attempt` takes one attempt from a code that is unexpired at `now` and has attempts
///   left, and returns the code as it is after the take (`None`: no such code, so no attempt);
///   of concurrent takers no more succeed than there were attempts left.
/// - `consume` deletes the code and says whether this call deleted it, so of two concurrent
///   consumers exactly one wins.
#[async_trait]
pub trait CodeRepository: Send + Sync + fmt::Debug {
    async fn put(&self, code: &OneTimeCode) -> Result<(), RepositoryError>;
    async fn find(
        &self,
        purpose: CodePurpose,
        subject: &str,
    ) -> Result<Option<OneTimeCode>, RepositoryError>;
    async fn find_by_hash(
        &self,
        purpose: CodePurpose,
        code_hash: &str,
    ) -> Result<Option<OneTimeCode>, RepositoryError>;
    async fn put_unless_newer(
        &self,
        code: &OneTimeCode,
        cutoff: Timestamp,
    ) -> Result<bool, RepositoryError>;
    async fn take_attempt(
        &self,
        purpose: CodePurpose,
        subject: &str,
        now: Timestamp,
    ) -> Result<Option<OneTimeCode>, RepositoryError>;
    async fn consume(&self, purpose: CodePurpose, subject: &str) -> Result<bool, RepositoryError>;
}

/// Applications and their credentials.
///
/// Contract:
/// - `create` stores the application with its sandbox key (hash `sandbox_key_hash`) and, when
///   `application.live_key` is set, its live key (`live_key_hash`); client ids and key hashes
///   are unique (`Duplicate`).
/// - `create` is atomic with respect to `MerchantRepository::approve`: it checks, in the same
///   transaction, that the merchant is live exactly when the application carries a live key
///   (else `Conflict(WRONG_STATUS)`), so no application is left without a live key.
/// - `find` returns the application with its current (not rotated-out) keys; `list` is oldest
///   first.
/// - `rotate_key` replaces the environment's key; the old hash stops matching at once. Rotating
///   `live` without a live key is `Conflict(NO_LIVE_CREDENTIALS)`.
/// - `rotate_webhook_secret` makes `new` the current secret and keeps the former one signing
///   until `previous_expires_at`; `rotate_secret` does the same for the request-signing secret
///   (the former one keeps verifying). Unknown application: `NotFound`.
/// - `find_by_key_hash` finds the application whose current key has that hash, with the key's
///   environment; rotated-out keys find nothing.
#[async_trait]
pub trait ApplicationRepository: Send + Sync + fmt::Debug {
    async fn create(
        &self,
        application: &Application,
        sandbox_key_hash: &str,
        live_key_hash: Option<&str>,
    ) -> Result<(), RepositoryError>;
    async fn find(&self, id: &ApplicationId) -> Result<Option<Application>, RepositoryError>;
    async fn list(
        &self,
        merchant: &MerchantId,
        page: PageRequest,
    ) -> Result<Page<Application>, RepositoryError>;
    /// Saves name, callback URL, redirect URIs, request types and `updated_at`.
    async fn update(&self, application: &Application) -> Result<(), RepositoryError>;
    async fn rotate_key(&self, id: &ApplicationId, key: &NewKey) -> Result<(), RepositoryError>;
    async fn rotate_webhook_secret(
        &self,
        id: &ApplicationId,
        new: &Sealed,
        previous_expires_at: Timestamp,
        at: Timestamp,
    ) -> Result<(), RepositoryError>;
    async fn rotate_secret(
        &self,
        id: &ApplicationId,
        new: &Sealed,
        previous_expires_at: Timestamp,
        at: Timestamp,
    ) -> Result<(), RepositoryError>;
    async fn find_by_key_hash(
        &self,
        hash: &str,
    ) -> Result<Option<(Application, Environment)>, RepositoryError>;
}

/// What the corporate registry is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryQuery {
    pub registration_number: String,
    pub registered_name: String,
    pub date_registered: CalendarDate,
}

/// The registry's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryAnswer {
    Matched,
    NotFound,
    /// Known, but under another name or date.
    Mismatch,
}

/// An external corporate registry.
#[async_trait]
pub trait BusinessRegistry: Send + Sync + fmt::Debug {
    async fn check(&self, query: &RegistryQuery) -> Result<RegistryAnswer, RegistryUnavailable>;
}

#[derive(Debug, thiserror::Error)]
#[error("the business registry is unavailable: {0}")]
pub struct RegistryUnavailable(pub String);

/// Password hashing (Argon2id in production). Slow and memory-hungry by design: adapters do
/// the work off the async executor and bound how many run at once; a caller beyond the bound
/// is told to come back (`PasswordError::Busy`) rather than queued without limit.
#[async_trait]
pub trait PasswordHasher: Send + Sync + fmt::Debug {
    async fn hash(&self, password: &str) -> Result<String, PasswordError>;
    /// `Ok(false)` for a wrong password or an unreadable hash.
    async fn verify(&self, password: &str, hash: &str) -> Result<bool, PasswordError>;
    /// Spends as much time as `verify` without a stored hash, so an unknown account cannot
    /// be told from a wrong password by timing.
    async fn verify_dummy(&self, password: &str) -> Result<(), PasswordError>;
}

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("password hashing failed: {0}")]
    Failed(String),
    /// Every hashing slot stayed taken for the adapter's queue wait.
    #[error("password hashing is at capacity")]
    Busy { retry_after_secs: u64 },
}

/// Who a merchant session token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionClaims {
    pub user: MerchantUserId,
    pub merchant: MerchantId,
    pub role: Role,
    pub issued_at: Timestamp,
    pub expires_at: Timestamp,
}

/// Merchant dashboard session tokens (JWS).
///
/// Contract: `verify(issue(c), now)` returns `c` while `now < c.expires_at`; an expired,
/// altered or foreign token is an error.
pub trait SessionTokens: Send + Sync + fmt::Debug {
    fn issue(&self, claims: &SessionClaims) -> Result<String, TokenError>;
    fn verify(&self, token: &str, now: Timestamp) -> Result<SessionClaims, TokenError>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token has expired")]
    Expired,
    #[error("the token is invalid")]
    Invalid,
    #[error("the token could not be issued: {0}")]
    Issue(String),
}
