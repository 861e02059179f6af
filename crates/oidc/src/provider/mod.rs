//! The OpenID Provider: the standard endpoints over the OAuth service's consent sessions,
//! grants and tokens. Errors are the protocol's (`error`, `error_description`).

mod authorize;
mod ciba;
mod claims;
mod refresh;
mod token;

use std::sync::Arc;
use std::time::Duration;

use idconsent_consent::Requester;
use idconsent_kernel::{Clock, KeyedHash, RandomSource};
use idconsent_oauth::OAuthService;

pub use authorize::{AuthorizeOutcome, AuthorizeParams, AuthorizeRefusal};
pub use ciba::{BackchannelStarted, CIBA_GRANT};
pub use claims::{SCOPE_CLAIMS, standard_claims};
pub use token::{TokenRequest, TokenResponse, UserInfoResponse};

use crate::ports::{AuthorizationStore, ClientApplication, IdTokenSigner, RefreshStore};
use crate::service::OidcClients;

/// The Authentication Context Class our approvals meet: phishing-resistant (a passkey bound to
/// our origin, with user verification), from the OpenID EAP ACR values.
pub const ACR: &str = "phr";

/// How the user authenticated: a hardware-bound key (`hwk`) with user verification (`user`),
/// RFC 8176.
pub const AMR: [&str; 2] = ["hwk", "user"];

/// An OAuth 2.0 / OpenID Connect error response (RFC 6749 §5.2, §4.1.2.1; RFC 6750 §3.1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {description}")]
pub struct ProtocolError {
    /// `invalid_request`, `invalid_client`, `invalid_grant`, …
    pub error: &'static str,
    pub description: String,
    /// 400, 401 (`invalid_client`, `invalid_token`) or 500/503 for our own failures.
    pub status: u16,
}

impl ProtocolError {
    pub fn new(error: &'static str, description: impl Into<String>) -> Self {
        let status = match error {
            "invalid_client" | "invalid_token" => 401,
            "server_error" => 500,
            "temporarily_unavailable" => 503,
            _ => 400,
        };
        Self {
            error,
            description: description.into(),
            status,
        }
    }

    pub(crate) fn server(source: &dyn std::error::Error) -> Self {
        let _ = source;
        Self::new("server_error", "The request could not be completed")
    }
}

#[derive(Debug, Clone)]
pub struct ProviderSettings {
    /// `iss`: the service's base URL, without trailing slash.
    pub issuer: String,
    /// Lifetime of ID tokens.
    pub id_token_ttl: Duration,
    /// Lifetime of each refresh token (each use gives a new one).
    pub refresh_ttl: Duration,
    /// Where the hosted page of a session is: `{issuer}/oauth/authorize/{sessionId}`.
    pub hosted_page_base: String,
}

/// What the provider works with besides its settings.
#[derive(Debug, Clone)]
pub struct ProviderPorts {
    pub clients: Arc<OidcClients>,
    pub oauth: Arc<OAuthService>,
    pub authorizations: Arc<dyn AuthorizationStore>,
    pub refresh: Arc<dyn RefreshStore>,
    pub id_tokens: Arc<dyn IdTokenSigner>,
    pub hasher: Arc<dyn KeyedHash>,
    pub random: Arc<dyn RandomSource>,
    pub clock: Arc<dyn Clock>,
}

#[derive(Debug, Clone)]
pub struct OidcProvider {
    clients: Arc<OidcClients>,
    oauth: Arc<OAuthService>,
    authorizations: Arc<dyn AuthorizationStore>,
    refresh: Arc<dyn RefreshStore>,
    id_tokens: Arc<dyn IdTokenSigner>,
    hasher: Arc<dyn KeyedHash>,
    random: Arc<dyn RandomSource>,
    clock: Arc<dyn Clock>,
    settings: ProviderSettings,
}

impl OidcProvider {
    pub fn new(ports: ProviderPorts, settings: ProviderSettings) -> Self {
        Self {
            clients: ports.clients,
            oauth: ports.oauth,
            authorizations: ports.authorizations,
            refresh: ports.refresh,
            id_tokens: ports.id_tokens,
            hasher: ports.hasher,
            random: ports.random,
            clock: ports.clock,
            settings,
        }
    }

    pub fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    /// The discovery document (`/.well-known/openid-configuration`).
    pub fn metadata(&self) -> serde_json::Value {
        crate::discovery::document(&self.settings.issuer)
    }
}

/// The proprietary API's requester for a client: its application, in its environment.
fn requester(application: &ClientApplication) -> Requester {
    Requester {
        application_id: application.id.clone(),
        client_id: application.client_key.clone(),
        environment: application.environment,
        allowed_intents: application.allowed_intents.clone(),
    }
}
