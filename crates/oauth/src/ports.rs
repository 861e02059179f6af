//! The OAuth ports.

use std::fmt;

use idconsent_kernel::Timestamp;
use serde_json::Value;

/// What an access token says (CONTRACT §5): issuer, audience (the client ID), subject (the
/// user's phone), scope, a unique id for revocation, and its lifetime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessTokenClaims {
    pub issuer: String,
    /// The application's client ID.
    pub audience: String,
    /// The user's phone number (E.164).
    pub subject: String,
    pub scopes: Vec<String>,
    /// Unique token id (`jti`), the handle for introspection and revocation.
    pub token_id: String,
    pub issued_at: Timestamp,
    pub expires_at: Timestamp,
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Bad signature, unknown key, wrong algorithm or type, malformed, or expired.
    #[error("invalid or expired token")]
    Invalid,
    #[error("token could not be signed: {0}")]
    Sign(String),
}

/// Signs and verifies access tokens and publishes the verification keys.
///
/// Contract: `verify(sign(c), now) == c` while `now < c.expires_at`; a token signed by a key no
/// longer in the key set, altered, unsigned (`alg: none`), of another type, or expired is
/// `Invalid`. `jwks()` is an RFC 7517 key set containing the current signing key and every
/// retired key whose tokens may still be unexpired; every token's header `kid` names one of them.
pub trait TokenSigner: Send + Sync + fmt::Debug {
    fn sign(&self, claims: &AccessTokenClaims) -> Result<String, TokenError>;
    fn verify(&self, token: &str, now: Timestamp) -> Result<AccessTokenClaims, TokenError>;
    fn jwks(&self) -> Value;
}

use async_trait::async_trait;
use idconsent_kernel::PhoneNumber;
use idconsent_kernel::id::{ApplicationId, SessionId};

use crate::model::{AccessRequest, ClaimKey, Grant, GrantWithSession, IssuedToken, VerifiedValue};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The session already has an access request or a grant.
    #[error("already exists")]
    Duplicate,
    #[error("oauth storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What the domain decides about a grant found by its code, inside the exchange's transaction.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Not the caller's code: nothing changes.
    Ignore,
    /// Spend the code without issuing a token (wrong verifier, expired code, session not
    /// approved, or already spent).
    Spend,
    /// Spend the code and record this token as issued from it.
    Issue(Box<IssuedToken>),
}

/// The domain's decision over a found grant: quick, non-blocking, called at most once.
pub type Decide = Box<dyn FnOnce(&GrantWithSession) -> Verdict + Send>;

/// What an exchange attempt did.
#[derive(Debug, Clone, PartialEq)]
pub enum Redemption {
    /// No grant has this code, or the verdict was [`Verdict::Ignore`]: nothing changed.
    Untouched,
    /// The code was unspent and is now spent at `at`; `issued` is the recorded token when the
    /// verdict was [`Verdict::Issue`]. `found` is the grant as it was read.
    Spent {
        found: Box<GrantWithSession>,
        issued: Option<Box<IssuedToken>>,
    },
    /// The code had been spent before: the token issued from it is now revoked at `at` and
    /// nothing else was stored.
    Reused,
}

/// Access requests, grants and issued tokens.
///
/// Contract:
/// - `insert_request` / `insert_grant` are one per session (`Duplicate` otherwise).
/// - `redeem` is one transaction: it reads the grant of `code_id` with its session's current
///   status and environment (`session: None` when there is no such session), asks `decide`,
///   and applies the verdict. `Ignore`, or no such grant:
///   `Untouched`. `Spend` or `Issue` on an unspent grant: the grant is marked consumed at `at`
///   and the issued token stored and linked to it (`Spent`). On a grant spent before, whatever
///   the verdict but `Ignore`: the token it produced is revoked at `at` and nothing is stored
///   (`Reused`). Of concurrent redemptions of one code exactly one is `Spent`.
/// - `revoke_token` revokes an unrevoked token of `application`; `false` otherwise.
/// - `insert_token` stores a token issued without a code (a refresh); `Duplicate` for a token
///   id that exists, which changes nothing.
#[async_trait]
pub trait OAuthRepository: Send + Sync + fmt::Debug {
    async fn insert_request(&self, request: &AccessRequest) -> Result<(), StoreError>;
    async fn find_request(&self, session: &SessionId) -> Result<Option<AccessRequest>, StoreError>;
    async fn insert_grant(&self, grant: &Grant) -> Result<(), StoreError>;
    async fn grant_of_session(&self, session: &SessionId) -> Result<Option<Grant>, StoreError>;
    async fn redeem(
        &self,
        code_id: &str,
        at: Timestamp,
        decide: Decide,
    ) -> Result<Redemption, StoreError>;
    async fn find_token(&self, token_id: &str) -> Result<Option<IssuedToken>, StoreError>;
    async fn insert_token(&self, token: &IssuedToken) -> Result<(), StoreError>;
    async fn revoke_token(
        &self,
        token_id: &str,
        application: &ApplicationId,
        at: Timestamp,
    ) -> Result<bool, StoreError>;
}

/// The user's verified data (phone by SMS code now; document data once identity verification
/// exists).
#[async_trait]
pub trait ClaimSource: Send + Sync + fmt::Debug {
    async fn verified(
        &self,
        phone: &PhoneNumber,
    ) -> Result<Vec<(ClaimKey, VerifiedValue)>, StoreError>;
}
