//! CIBA, poll mode (OpenID Connect Client-Initiated Backchannel Authentication 1.0; ADR 0043):
//! `/oauth2/bc-authorize` starts an OAUTH consent session addressed to the `login_hint` phone,
//! with the `binding_message` as what the app shows; the client polls the token endpoint with
//! `urn:openid:params:grant-type:ciba` until the user decided in the app.

use std::time::Duration;

use idconsent_consent::SessionStatus;
use idconsent_kernel::id::SessionId;
use idconsent_kernel::{PhoneNumber, TypedId};
use idconsent_oauth::{CreateAccessRequest, ExchangeOptions, OAuthError};

use super::claims::claims_of_scopes;
use super::token::{TokenRequest, TokenResponse};
use super::{OidcProvider, ProtocolError, requester};
use crate::model::DeliveryMode;
use crate::ports::Authorization;
use crate::service::AuthenticatedClient;

pub const CIBA_GRANT: &str = "urn:openid:params:grant-type:ciba";

/// What the consent session of a CIBA request names as its redirect URI: there is none (no
/// browser takes part), and no registered URI can equal it.
pub const CIBA_REDIRECT: &str = "urn:openid:params:ciba:no-redirect";

/// The minimum wait between two polls (CIBA §7.3 `interval`).
pub const POLL_INTERVAL: Duration = Duration::from_secs(5);

/// The keyed-hash purpose of the PKCE verifier a CIBA request's code is bound to: derived from
/// the session id, so nothing is stored and only this service can compute it.
const VERIFIER_PURPOSE: &str = "oidc.ciba-verifier";

/// `/oauth2/bc-authorize`'s answer (CIBA §7.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackchannelStarted {
    pub auth_req_id: String,
    pub expires_in: u64,
    pub interval: u64,
}

impl OidcProvider {
    fn ciba_verifier(&self, session: &SessionId) -> String {
        self.hasher
            .hex(VERIFIER_PURPOSE, session.as_str().as_bytes())
    }

    /// Starts a backchannel request for a client registered for poll delivery.
    pub async fn backchannel_authorize(
        &self,
        request: TokenRequest,
    ) -> Result<BackchannelStarted, ProtocolError> {
        let client = self.client_of(&request).await?;
        let application = &client.application;
        if client.config.delivery_mode != DeliveryMode::Poll {
            return Err(ProtocolError::new(
                "unauthorized_client",
                "The client is not registered for CIBA poll delivery",
            ));
        }
        let scopes: Vec<String> = request
            .scope
            .as_deref()
            .unwrap_or_default()
            .split(' ')
            .filter(|scope| !scope.is_empty())
            .map(str::to_owned)
            .collect();
        if !scopes.iter().any(|scope| scope == "openid") {
            return Err(ProtocolError::new(
                "invalid_scope",
                "scope must include openid",
            ));
        }
        if request.login_hint_token.is_some() || request.id_token_hint.is_some() {
            return Err(ProtocolError::new(
                "invalid_request",
                "Only login_hint (a phone number) identifies the user",
            ));
        }
        let Some(phone) = request.login_hint.clone() else {
            return Err(ProtocolError::new(
                "invalid_request",
                "login_hint is missing",
            ));
        };
        if PhoneNumber::parse(&phone).is_err() {
            return Err(ProtocolError::new(
                "invalid_request",
                "login_hint must be a phone number in E.164 form, such as +15551234567",
            ));
        }
        if request.requested_expiry.is_some() {
            return Err(ProtocolError::new(
                "invalid_request",
                "requested_expiry is not supported: requests live as long as consent sessions",
            ));
        }
        let binding = request.binding_message.clone();
        if binding
            .as_ref()
            .is_some_and(|text| text.chars().count() > 64)
        {
            return Err(ProtocolError::new(
                "invalid_binding_message",
                "binding_message is limited to 64 characters",
            ));
        }
        let claims = claims_of_scopes(&scopes)
            .into_iter()
            .map(|key| key.as_str().to_owned())
            .collect();
        // The session id is made first so the PKCE challenge can be derived from it.
        let created = self
            .oauth
            .create_with_verifier(
                &requester(application),
                &application.callback_url,
                CreateAccessRequest {
                    recipient: phone,
                    redirect_uri: CIBA_REDIRECT.to_owned(),
                    code_challenge: String::new(),
                    code_challenge_method: Some("S256".into()),
                    claims,
                    scopes,
                    callback_url: None,
                    state: None,
                    description: binding,
                },
                |session| self.ciba_verifier(session),
            )
            .await;
        let (session, _) = created.map_err(|error| {
            use idconsent_kernel::ErrorCategory as C;
            let description = error.to_string();
            match (error.category(), &error) {
                (_, OAuthError::Invalid(errors))
                    if errors.fields().iter().any(|f| f.field == "description") =>
                {
                    ProtocolError::new("invalid_binding_message", description)
                }
                (C::Validation | C::BadRequest, _) => {
                    ProtocolError::new("invalid_request", description)
                }
                (C::NotFound, _) => ProtocolError::new("unknown_user_id", description),
                (C::Forbidden, _) => ProtocolError::new("unauthorized_client", description),
                (C::RateLimited, _) => ProtocolError::new("slow_down", description),
                _ => ProtocolError::new("server_error", "The request could not be completed"),
            }
        })?;
        let now = self.clock.now();
        self.authorizations
            .insert(&Authorization {
                session_id: session.id.clone(),
                application_id: application.id.clone(),
                nonce: None,
                backchannel: true,
                last_polled_at: None,
                created_at: now,
            })
            .await
            .map_err(|error| ProtocolError::server(&error))?;
        Ok(BackchannelStarted {
            auth_req_id: session.id.as_str().to_owned(),
            expires_in: session.expires_at.since(session.created_at).as_secs(),
            interval: POLL_INTERVAL.as_secs(),
        })
    }

    /// A poll of the token endpoint (CIBA §10.1): the tokens once approved, else
    /// `authorization_pending`, `slow_down` (polled within the interval), `access_denied` or
    /// `expired_token`.
    pub(crate) async fn ciba_grant(
        &self,
        client: &AuthenticatedClient,
        auth_req_id: Option<&str>,
    ) -> Result<TokenResponse, ProtocolError> {
        let unknown = || ProtocolError::new("invalid_grant", "Unknown auth_req_id");
        let Some(auth_req_id) = auth_req_id else {
            return Err(ProtocolError::new(
                "invalid_request",
                "auth_req_id is missing",
            ));
        };
        let Ok(session) = SessionId::parse(auth_req_id) else {
            return Err(unknown());
        };
        let application = &client.application;
        let found = self
            .authorizations
            .find(&session)
            .await
            .map_err(|error| ProtocolError::server(&error))?;
        if !found.is_some_and(|a| a.backchannel && a.application_id == application.id) {
            return Err(unknown());
        }
        let now = self.clock.now();
        let polled = self
            .authorizations
            .poll(&session, now, POLL_INTERVAL)
            .await
            .map_err(|error| ProtocolError::server(&error))?;
        if !polled {
            return Err(ProtocolError::new(
                "slow_down",
                "Poll at most every 5 seconds",
            ));
        }
        let requester = requester(application);
        let status =
            self.oauth
                .status(&requester, auth_req_id)
                .await
                .map_err(|error| match error {
                    OAuthError::Unavailable(source) => ProtocolError::server(&*source),
                    _ => unknown(),
                })?;
        match status.status() {
            SessionStatus::Pending => {
                return Err(ProtocolError::new(
                    "authorization_pending",
                    "The user has not decided yet",
                ));
            }
            SessionStatus::Rejected => {
                return Err(ProtocolError::new("access_denied", "The user declined"));
            }
            SessionStatus::Expired => {
                return Err(ProtocolError::new("expired_token", "The request expired"));
            }
            SessionStatus::Approved => {}
        }
        let Some(code) = status.code else {
            // Already exchanged by an earlier poll.
            return Err(ProtocolError::new(
                "invalid_grant",
                "The tokens of this request were already issued",
            ));
        };
        let granted = self
            .oauth
            .exchange_with(
                &requester,
                &code,
                &self.ciba_verifier(&session),
                &ExchangeOptions {
                    redirect_uri: None,
                    pairwise_sector: Some(application.merchant_id.as_str().to_owned()),
                },
            )
            .await
            .map_err(|error| match error {
                OAuthError::Unavailable(source) => ProtocolError::server(&*source),
                _ => ProtocolError::new("invalid_grant", "The request's grant is no longer valid"),
            })?;
        self.issue(application, granted, None).await
    }
}
