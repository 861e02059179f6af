//! The OIDC client ports.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::{ApplicationId, ClientId, MerchantId};
use idconsent_kernel::{Environment, Intent};

use crate::model::ClientConfig;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The application already has a client configuration.
    #[error("already exists")]
    Duplicate,
    #[error("oidc client storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Client configurations, one per application.
///
/// Contract:
/// - `insert` stores a new configuration with its secret hash; a second one for the same
///   application is `Duplicate` and changes nothing.
/// - `update` replaces every setting of an existing configuration but its secret hash and
///   `created_at`; `false` (nothing written) when there is none.
/// - `set_secret` replaces the secret hash (`None` removes it) and `updated_at`; `false` when
///   there is no configuration.
/// - `find` returns the configuration as last written, `None` for an unknown application.
#[async_trait]
pub trait ClientStore: Send + Sync + fmt::Debug {
    async fn insert(&self, config: &ClientConfig) -> Result<(), StoreError>;
    async fn update(&self, config: &ClientConfig) -> Result<bool, StoreError>;
    async fn set_secret(
        &self,
        application: &ApplicationId,
        secret_hash: Option<&str>,
        at: idconsent_kernel::Timestamp,
    ) -> Result<bool, StoreError>;
    async fn find(&self, application: &ApplicationId) -> Result<Option<ClientConfig>, StoreError>;
}

/// What the OIDC side needs to know of an application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientApplication {
    pub id: ApplicationId,
    pub merchant_id: MerchantId,
    /// Sandbox until the application has live credentials, then live (CONTRACT §10).
    pub environment: Environment,
    /// The application's `cli_` id of the proprietary API (its consent sessions carry it).
    pub client_key: ClientId,
    /// The request types the application enables (OIDC needs `OAUTH`).
    pub allowed_intents: Vec<Intent>,
    /// Where the application's consent events go.
    pub callback_url: String,
}

/// The applications, answered from the merchant domain.
///
/// Contract: `find` returns an existing application's owner and environment, `None` for an
/// unknown one.
#[async_trait]
pub trait ClientApplications: Send + Sync + fmt::Debug {
    async fn find(&self, id: &ApplicationId) -> Result<Option<ClientApplication>, StoreError>;
}

#[derive(Debug, thiserror::Error)]
#[error("id token could not be signed: {0}")]
pub struct SignError(pub String);

/// Signs ID tokens with the provider's current key, the one `/.well-known/jwks.json` publishes.
///
/// Contract: the result is a compact JWS, header `{"alg":"ES256","typ":"JWT","kid":…}` with
/// `kid` a key of the published set, over exactly `claims` serialised as JSON.
pub trait IdTokenSigner: Send + Sync + fmt::Debug {
    fn sign_id_token(&self, claims: &serde_json::Value) -> Result<String, SignError>;
}

/// What an authorization request adds to its consent session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    pub session_id: idconsent_kernel::id::SessionId,
    pub application_id: ApplicationId,
    /// Echoed in the ID token (OpenID Connect Core §3.1.2.1).
    pub nonce: Option<String>,
    /// A CIBA request (its session id is the `auth_req_id`), not a redirect flow's.
    pub backchannel: bool,
    /// When a CIBA client last polled the token endpoint for it.
    pub last_polled_at: Option<idconsent_kernel::Timestamp>,
    pub created_at: idconsent_kernel::Timestamp,
}

/// Authorization requests' additions, one per consent session.
///
/// Contract: `insert` stores one per session (`Duplicate` for a second, which changes
/// nothing); `find` returns it as last written, `None` for an unknown session. `poll` records
/// a poll at `at` unless the previous one was less than `interval` before it: `true` when
/// recorded, `false` (nothing written) when too soon or there is no such authorization; of
/// concurrent polls at one instant at most one is recorded.
#[async_trait]
pub trait AuthorizationStore: Send + Sync + fmt::Debug {
    async fn insert(&self, authorization: &Authorization) -> Result<(), StoreError>;
    async fn poll(
        &self,
        session: &idconsent_kernel::id::SessionId,
        at: idconsent_kernel::Timestamp,
        interval: std::time::Duration,
    ) -> Result<bool, StoreError>;
    async fn find(
        &self,
        session: &idconsent_kernel::id::SessionId,
    ) -> Result<Option<Authorization>, StoreError>;
}

/// A refresh token as stored: its keyed hash, never the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshToken {
    pub hash: String,
    /// The consent session of the first code: every token rotated from it shares it.
    pub family: String,
    pub application_id: ApplicationId,
    /// The access token the code exchange issued; refreshes copy its grant.
    pub root_token_id: String,
    pub issued_at: idconsent_kernel::Timestamp,
    pub expires_at: idconsent_kernel::Timestamp,
    pub used_at: Option<idconsent_kernel::Timestamp>,
    pub revoked_at: Option<idconsent_kernel::Timestamp>,
}

/// What presenting a refresh token did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshUse {
    /// Unused and unrevoked until now: now used (as read before).
    Fresh(RefreshToken),
    /// Used or revoked before: its whole family is now revoked.
    Replayed,
    /// No such token of this application: nothing changed.
    Unknown,
}

/// Refresh tokens, rotated on every use.
///
/// Contract:
/// - `insert_refresh` stores a token (`Duplicate` for a hash that exists; nothing changes).
/// - `use_refresh` is one transaction on the token with `hash` of `application`: unused and
///   unrevoked → marked used at `at`, `Fresh`; used or revoked → every token of its family not
///   yet revoked is revoked at `at`, `Replayed`; another application's or no token → `Unknown`.
///   Of concurrent uses of one token exactly one is `Fresh`.
/// - `revoke_family` revokes every unrevoked token of `family` of `application` at `at`;
///   whether any was.
#[async_trait]
pub trait RefreshStore: Send + Sync + fmt::Debug {
    async fn insert_refresh(&self, token: &RefreshToken) -> Result<(), StoreError>;
    async fn use_refresh(
        &self,
        hash: &str,
        application: &ApplicationId,
        at: idconsent_kernel::Timestamp,
    ) -> Result<RefreshUse, StoreError>;
    async fn revoke_family(
        &self,
        family: &str,
        application: &ApplicationId,
        at: idconsent_kernel::Timestamp,
    ) -> Result<bool, StoreError>;
    /// The token with `hash`, as stored.
    async fn find_refresh(&self, hash: &str) -> Result<Option<RefreshToken>, StoreError>;
}
