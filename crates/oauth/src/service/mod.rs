//! The OAuth use cases: create an access request, read its status, decide it, exchange the code,
//! and answer for the tokens issued (userinfo, introspection, revocation).

mod requests;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

use idconsent_approval::{ApplicationDirectory, ApplicationNames};
use idconsent_consent::{ConsentService, Session, SessionStatus};
use idconsent_kernel::{Clock, IdGenerator, KeyedHash, RandomSource, SecretVault, Timestamp};
use serde_json::Value;

use crate::error::OAuthError;
use crate::model::{AccessRequest, Claims, Grant, IssuedToken};
use crate::ports::{ClaimSource, OAuthRepository, TokenSigner};

#[derive(Debug, Clone)]
pub struct OAuthSettings {
    /// `iss` of access tokens: the service's base URL.
    pub issuer: String,
    pub code_ttl: Duration,
    pub token_ttl: Duration,
}

impl OAuthSettings {
    pub fn new(issuer: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            code_ttl: Duration::from_secs(600),
            token_ttl: Duration::from_secs(3600),
        }
    }
}

#[derive(Debug, Clone)]
pub struct OAuthPorts {
    pub consents: Arc<ConsentService>,
    /// The names the hosted page shows.
    pub directory: Arc<dyn ApplicationDirectory>,
    pub store: Arc<dyn OAuthRepository>,
    pub claims: Arc<dyn ClaimSource>,
    pub signer: Arc<dyn TokenSigner>,
    pub vault: Arc<dyn SecretVault>,
    pub hasher: Arc<dyn KeyedHash>,
    pub clock: Arc<dyn Clock>,
    pub random: Arc<dyn RandomSource>,
    pub ids: Arc<dyn IdGenerator>,
}

/// `POST /v1/oauth/requests` as received (spec §2.2).
#[derive(Debug, Clone, Default)]
pub struct CreateAccessRequest {
    pub recipient: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub code_challenge_method: Option<String>,
    pub claims: Vec<String>,
    pub scopes: Vec<String>,
    pub callback_url: Option<String>,
    pub state: Option<String>,
    pub description: Option<String>,
}

/// A created access request: its consent session, its details, and the session's QR code
/// (PNG) for the application to show.
#[derive(Debug, Clone)]
pub struct NewAccessRequest {
    pub session: Session,
    pub request: AccessRequest,
    pub qr_png: Vec<u8>,
}

/// What the hosted authorization page shows.
#[derive(Debug, Clone)]
pub struct HostedPage {
    pub view: RequestStatus,
    pub names: Option<ApplicationNames>,
    /// What the session's QR code encodes, for the "open in the app" link.
    pub deep_link: String,
}

/// What the status endpoint shows.
#[derive(Debug, Clone)]
pub struct RequestStatus {
    pub session: Session,
    pub request: AccessRequest,
    pub grant: Option<Grant>,
    /// The grant's claims, read from their stored form.
    pub claims: Option<Claims>,
    /// The code, while it is unconsumed.
    pub code: Option<String>,
    pub now: Timestamp,
}

/// An approved request's grant as the status endpoint shows it.
#[derive(Debug, Clone, Copy)]
pub struct ApprovedRequest<'a> {
    pub grant: &'a Grant,
    pub claims: &'a Claims,
    /// Until the code is exchanged.
    pub code: Option<&'a str>,
}

impl RequestStatus {
    /// The session's status as of the read.
    pub fn status(&self) -> SessionStatus {
        self.session.status_at(self.now)
    }

    /// Who approved and what was shared (with the code until it is exchanged), once the
    /// request reads approved.
    pub fn approved(&self) -> Option<ApprovedRequest<'_>> {
        match (&self.grant, &self.claims, self.status()) {
            (Some(grant), Some(claims), SessionStatus::Approved) => Some(ApprovedRequest {
                grant,
                claims,
                code: self.code.as_deref(),
            }),
            _ => None,
        }
    }
}

/// A successful exchange: the token response of spec §2.2.
#[derive(Debug, Clone)]
pub struct TokenGrant {
    pub access_token: String,
    pub expires_in: u64,
    pub subject: String,
    pub scopes: Vec<String>,
    pub claims: Claims,
    pub state: Option<String>,
    /// The consent session the code was granted on.
    pub session_id: idconsent_kernel::id::SessionId,
    /// When the user approved (OpenID Connect's `auth_time`).
    pub approved_at: Timestamp,
    /// The access token's `jti`.
    pub token_id: String,
}

/// What the OpenID Connect token endpoint adds to an exchange (see
/// [`OAuthService::exchange_with`]).
#[derive(Debug, Clone, Default)]
pub struct ExchangeOptions {
    pub redirect_uri: Option<String>,
    /// The merchant whose pairwise subject the token carries.
    pub pairwise_sector: Option<String>,
}

/// The keyed-hash purpose of pairwise subjects (ADR 0042).
pub const PAIRWISE_SUBJECT_PURPOSE: &str = "oidc.pairwise-subject";

/// The user's subject identifier for one sector (a merchant): the keyed hash of the sector and
/// the phone, so two merchants see unrelated values and nobody without the master key can
/// recompute one from a phone number.
pub fn pairwise_subject(hasher: &dyn KeyedHash, sector: &str, phone: &str) -> String {
    let mut bound = Vec::with_capacity(sector.len() + 1 + phone.len());
    bound.extend_from_slice(sector.as_bytes());
    bound.push(0);
    bound.extend_from_slice(phone.as_bytes());
    hasher.hex(PAIRWISE_SUBJECT_PURPOSE, &bound)
}

/// What `GET /v1/oauth/userinfo` shows of a live access token.
#[derive(Debug, Clone)]
pub struct UserInfo {
    /// The application the token was issued to.
    pub application_id: idconsent_kernel::id::ApplicationId,
    pub subject: String,
    pub scopes: Vec<String>,
    pub claims: Claims,
}

/// A live access token of the asking application (RFC 7662 `active: true`).
#[derive(Debug, Clone)]
pub struct ActiveToken {
    pub token: IssuedToken,
    /// `iss`: the service's base URL.
    pub issuer: String,
}

/// Stored claims that no longer read as claims: a broken store, never the caller's fault.
fn stored_claims(stored: &Value) -> Result<Claims, OAuthError> {
    Claims::from_stored(stored).map_err(|error| OAuthError::Unavailable(Box::new(error)))
}

#[derive(Debug, Clone)]
pub struct OAuthService {
    ports: OAuthPorts,
    settings: OAuthSettings,
}

impl OAuthService {
    /// Our issuer identifier: `iss` of tokens and of authorization responses (RFC 9207).
    pub fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    pub fn new(ports: OAuthPorts, settings: OAuthSettings) -> Self {
        Self { ports, settings }
    }

    fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }
}
