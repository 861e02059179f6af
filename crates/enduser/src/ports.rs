//! The end-user ports.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::{ChallengeId, DeviceId, EndUserId, EnrollmentId, RefreshFamilyId};
use idconsent_kernel::{PhoneNumber, Timestamp};
use idconsent_webhook::{Effects, Outbox};
use serde_json::Value;

use crate::model::{Challenge, Device, DeviceStatus, EndUser, Enrollment, RefreshToken};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    /// A unique value (a credential id) is taken.
    #[error("already exists")]
    Duplicate,
    /// What the write was decided on changed meanwhile (another device of the user was
    /// registered): read again and decide again.
    #[error("changed concurrently")]
    Changed,
    #[error("end-user storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Enrollments and end users.
///
/// Contract:
/// - `insert_within` inserts the enrollment unless its phone already has `max` enrollments created
///   in `window` before its `created_at` — counted under a per-phone lock, so a concurrent burst
///   gets no more than a sequential one; refused, it answers when the oldest leaves the window.
/// - `take_otp_attempt` takes one attempt from a `pending_otp` enrollment that has one left, in
///   one conditional update, and returns the enrollment as it now is; `None` when none is left,
///   it is not pending, or it is unknown. Of concurrent takers no more succeed than attempts were
///   left.
/// - `fail` moves a `pending_otp` enrollment to `failed`; `false` when it was not pending.
/// - `ensure_user` returns the user with this phone, inserting `candidate` if there is none; of
///   concurrent callers all get the same user.
/// - `complete` moves the enrollment from `passkey_registered` to `completed`, marks its user
///   enrolled (first time only) and writes the outbox, in one transaction; `false` if the
///   enrollment was not `passkey_registered`.
#[async_trait]
pub trait EnrollmentRepository: Send + Sync + fmt::Debug {
    async fn insert(&self, enrollment: &Enrollment) -> Result<(), StoreError>;
    async fn insert_within(
        &self,
        enrollment: &Enrollment,
        max: u32,
        window: std::time::Duration,
    ) -> Result<Admitted, StoreError>;
    async fn find(&self, id: &EnrollmentId) -> Result<Option<Enrollment>, StoreError>;
    async fn take_otp_attempt(
        &self,
        id: &EnrollmentId,
        at: Timestamp,
    ) -> Result<Option<Enrollment>, StoreError>;
    async fn fail(&self, id: &EnrollmentId, at: Timestamp) -> Result<bool, StoreError>;
    async fn ensure_user(&self, candidate: &EndUser) -> Result<EndUser, StoreError>;
    async fn user_by_phone(&self, phone: &PhoneNumber) -> Result<Option<EndUser>, StoreError>;
    async fn user(&self, id: &EndUserId) -> Result<Option<EndUser>, StoreError>;
    async fn complete(
        &self,
        id: &EnrollmentId,
        user: &EndUserId,
        at: Timestamp,
        outbox: &[Outbox],
    ) -> Result<bool, StoreError>;
}

/// What `insert_within` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    Inserted,
    /// The phone's limit is reached until `retry_at`; nothing was written.
    Refused {
        retry_at: Timestamp,
    },
}

/// Devices and their passkeys.
///
/// Contract:
/// - `register` inserts the device, moves its enrollment from `pending_otp` to
///   `passkey_registered` (recording the device) and writes the outbox, in one transaction —
///   only while its user has exactly `existing_devices` devices (of any status), counted under
///   a per-user lock so that two registrations for one user cannot both be judged "the first";
///   `Changed` otherwise, `Duplicate` when the credential id is already registered, `NotFound`
///   when the enrollment is no longer `pending_otp` (nothing written in any of these cases).
/// - `start_recovery` sets the recovery end of a `pending` device that has none yet, with the
///   outbox, in one transaction; `false` when the device is not pending or already recovering.
/// - `due_recoveries` lists pending devices whose recovery ended at or before `now`.
/// - `record_use` stores the signature counter and `last_used_at` of an active device whose
///   stored counter is below `counter` (or both are 0), in one conditional update; `false` when
///   the device is not active or the counter did not advance (nothing written). The passkey
///   itself is never rewritten.
/// - `set_status` moves a device from one of `from` to `to`, revokes every refresh token issued
///   for it and writes the effects (outbox, charges), in one transaction; `false` when it was not
///   in `from` (nothing written). Of concurrent moves of one device exactly one succeeds.
#[async_trait]
pub trait DeviceRepository: Send + Sync + fmt::Debug {
    async fn register(
        &self,
        device: &Device,
        enrollment: &EnrollmentId,
        at: Timestamp,
        outbox: &[Outbox],
        existing_devices: usize,
    ) -> Result<(), StoreError>;
    async fn start_recovery(
        &self,
        id: &DeviceId,
        ends_at: Timestamp,
        outbox: &[Outbox],
    ) -> Result<bool, StoreError>;
    async fn due_recoveries(&self, now: Timestamp, limit: u32) -> Result<Vec<Device>, StoreError>;
    async fn find(&self, id: &DeviceId) -> Result<Option<Device>, StoreError>;
    async fn of_user(&self, user: &EndUserId) -> Result<Vec<Device>, StoreError>;
    async fn by_credential(&self, credential_id: &str) -> Result<Option<Device>, StoreError>;
    async fn record_use(
        &self,
        id: &DeviceId,
        counter: u32,
        at: Timestamp,
    ) -> Result<bool, StoreError>;
    async fn set_status(
        &self,
        id: &DeviceId,
        from: &[DeviceStatus],
        to: DeviceStatus,
        at: Timestamp,
        effects: &Effects,
    ) -> Result<bool, StoreError>;
}

/// What an assertion needs from storage, read together by
/// [`ChallengeRepository::read_assertion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertionInputs {
    /// The challenge, whatever its state (used, expired, any purpose).
    pub challenge: Option<Challenge>,
    /// The device registered with the asserted credential id, whatever its status.
    pub device: Option<Device>,
    /// That device's user.
    pub user: Option<EndUser>,
}

/// What [`ChallengeRepository::spend_assertion`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    /// The challenge is now used and the device's counter and `last_used_at` are stored.
    Spent,
    /// The challenge was already used, expired or unknown: nothing written.
    ChallengeUnusable,
    /// The device is not active or its counter did not advance: nothing written.
    DeviceRefused,
}

/// FIDO challenges.
///
/// Contract:
/// - `consume` marks an unused, unexpired challenge used at `at` and says whether this call did
///   it; of concurrent consumers exactly one gets `true`.
/// - `forget_expired` deletes challenges that expired before `before` and returns how many.
/// - `read_assertion` reads the challenge and, when `credential_id` is given, the device with
///   that credential id and the device's user, in one read.
/// - `spend_assertion` does `consume` and `DeviceRepository::record_use` in one transaction:
///   both or neither. Of concurrent spenders of one challenge exactly one gets `Spent`.
#[async_trait]
pub trait ChallengeRepository: Send + Sync + fmt::Debug {
    async fn insert(&self, challenge: &Challenge) -> Result<(), StoreError>;
    async fn find(&self, id: &ChallengeId) -> Result<Option<Challenge>, StoreError>;
    async fn consume(&self, id: &ChallengeId, at: Timestamp) -> Result<bool, StoreError>;
    async fn forget_expired(&self, before: Timestamp) -> Result<usize, StoreError>;
    async fn read_assertion(
        &self,
        challenge: &ChallengeId,
        credential_id: Option<&str>,
    ) -> Result<AssertionInputs, StoreError>;
    async fn spend_assertion(
        &self,
        challenge: &ChallengeId,
        device: &DeviceId,
        counter: u32,
        at: Timestamp,
    ) -> Result<Spent, StoreError>;
}

/// What presenting a refresh token did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rotation {
    /// The token was live: it is now used and this successor is stored.
    Rotated(RefreshToken),
    /// The token was already used: its whole family is now revoked.
    Reused(RefreshFamilyId),
    /// Unknown, expired or revoked.
    Invalid,
}

/// The successor of a presented refresh token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextToken {
    pub hash: String,
    /// The `X-Device-ID` presenting the token; it must be the one the family was issued for.
    pub installation: String,
    pub expires_at: Timestamp,
}

/// Refresh tokens, stored by keyed hash.
///
/// Contract: `rotate` is atomic: a live token (unused, unrevoked, unexpired at `at`, issued for
/// `next.installation`) is marked used and its successor stored in the same family, for the
/// same user and device, and returned as `Rotated`; an already used one revokes every token of
/// its family (`Reused`); anything else changes nothing (`Invalid`). Of concurrent rotations of
/// one token exactly one gets `Rotated`. `family_revoked` says whether a family was revoked
/// (an unknown family is not).
#[async_trait]
pub trait RefreshTokenRepository: Send + Sync + fmt::Debug {
    async fn insert(&self, token: &RefreshToken) -> Result<(), StoreError>;
    async fn rotate(
        &self,
        presented_hash: &str,
        next: &NextToken,
        at: Timestamp,
    ) -> Result<Rotation, StoreError>;
    async fn family_revoked(&self, family: &RefreshFamilyId) -> Result<bool, StoreError>;
}

/// A passkey ceremony failure. `Refused` is the user's (or an attacker's) fault and maps to 401;
/// `Malformed` is a credential that is not even well-formed JSON of the right shape (400).
#[derive(Debug, thiserror::Error)]
pub enum PasskeyError {
    #[error("the credential is malformed: {0}")]
    Malformed(String),
    #[error("the credential was refused: {0}")]
    Refused(String),
    #[error("passkey ceremony failed: {0}")]
    Internal(String),
}

/// The options to send to the authenticator and the state to keep until it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct CeremonyStart {
    /// `{"publicKey": {...}}` as the WebAuthn JSON API expects it.
    pub options: Value,
    /// Opaque state for `finish_*`; stored with the challenge.
    pub state: String,
}

/// A newly registered passkey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPasskey {
    /// base64url credential id.
    pub credential_id: String,
    /// The adapter's serialisation (public key, flags), written once at registration.
    pub passkey: String,
    /// The signature counter the authenticator reported at registration.
    pub counter: u32,
}

/// A stored passkey an assertion may use, with its current signature counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredPasskey<'a> {
    pub passkey: &'a str,
    pub counter: u32,
}

/// A verified assertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedAssertion {
    pub credential_id: String,
    /// The authenticator's signature counter in this assertion, to store.
    pub counter: u32,
}

/// WebAuthn, with user verification required and the relying party from configuration.
///
/// Contract:
/// - `start_registration` excludes `existing` credential ids.
/// - `start_authentication` uses exactly `challenge` as the WebAuthn challenge and allows only
///   `passkeys`; their counters as given are what `finish_authentication` compares against.
/// - `finish_authentication` verifies signature, challenge, origin, RP ID, the UP and UV flags
///   and that the counter advanced; anything else is `Refused`.
pub trait PasskeyCeremony: Send + Sync + fmt::Debug {
    fn start_registration(
        &self,
        user_handle: &str,
        name: &str,
        display_name: &str,
        existing: &[String],
    ) -> Result<CeremonyStart, PasskeyError>;
    fn finish_registration(
        &self,
        state: &str,
        credential: &Value,
    ) -> Result<NewPasskey, PasskeyError>;
    fn start_authentication(
        &self,
        passkeys: &[StoredPasskey<'_>],
        challenge: [u8; 32],
    ) -> Result<CeremonyStart, PasskeyError>;
    fn finish_authentication(
        &self,
        state: &str,
        credential: &Value,
    ) -> Result<VerifiedAssertion, PasskeyError>;
    /// The credential id an assertion claims to come from (before verifying anything).
    fn asserted_credential_id(&self, credential: &Value) -> Result<String, PasskeyError>;
}

/// Claims of an end-user access token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessClaims {
    pub user: EndUserId,
    pub device: DeviceId,
    /// The refresh-token family of the sign-in: revoking the family stops the access token too.
    pub family: RefreshFamilyId,
    /// The `X-Device-ID` the token was issued for.
    pub installation: String,
    pub issued_at: Timestamp,
    pub expires_at: Timestamp,
}

#[derive(Debug, thiserror::Error)]
pub enum AccessTokenError {
    #[error("invalid or expired token")]
    Invalid,
    #[error("token could not be issued: {0}")]
    Issue(String),
}

/// Short-lived signed access tokens for the app.
pub trait AccessTokens: Send + Sync + fmt::Debug {
    fn issue(&self, claims: &AccessClaims) -> Result<String, AccessTokenError>;
    fn verify(&self, token: &str, now: Timestamp) -> Result<AccessClaims, AccessTokenError>;
}
