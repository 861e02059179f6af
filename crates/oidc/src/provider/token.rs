//! The back channel: `/oauth2/token` (authorization code), `/oauth2/userinfo`,
//! `/oauth2/revoke` (RFC 7009) and `/oauth2/introspect` (RFC 7662).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_oauth::{ExchangeOptions, OAuthError, TokenGrant};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::claims::standard_claims;
use super::refresh::family_of;
use super::{ACR, AMR, OidcProvider, ProtocolError, requester};
use crate::ports::ClientApplication;
use crate::service::{AuthenticatedClient, ClientAuthError, PresentedCredentials};

/// A token (or revocation, introspection) request as received: the form's fields and the
/// `Authorization: Basic` credentials, already decoded.
#[derive(Debug, Clone, Default)]
pub struct TokenRequest {
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    /// CIBA: the request to poll for.
    pub auth_req_id: Option<String>,
    /// CIBA's authentication request (`/oauth2/bc-authorize`).
    pub scope: Option<String>,
    pub login_hint: Option<String>,
    pub login_hint_token: Option<String>,
    pub id_token_hint: Option<String>,
    pub binding_message: Option<String>,
    pub requested_expiry: Option<String>,
    /// The token to revoke or introspect.
    pub token: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub basic: Option<(String, String)>,
}

/// A successful token response (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenResponse {
    pub access_token: String,
    pub expires_in: u64,
    /// With the code exchange; not with a refresh.
    pub id_token: Option<String>,
    pub refresh_token: Option<String>,
    pub scope: String,
}

/// The userinfo response: `sub` and the approved claims as standard claims.
pub type UserInfoResponse = Map<String, Value>;

fn invalid_grant() -> ProtocolError {
    ProtocolError::new(
        "invalid_grant",
        "The authorization code is invalid, expired, already used, or was issued for another redirect_uri or client",
    )
}

/// `at_hash` / `c_hash` (Core §3.1.3.6): the left half of the SHA-256 of the ASCII value.
pub(crate) fn half_hash(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    URL_SAFE_NO_PAD.encode(&digest[..16])
}

impl OidcProvider {
    /// Authenticates the client by exactly one method (RFC 6749 §2.3).
    pub(crate) async fn client_of(
        &self,
        request: &TokenRequest,
    ) -> Result<AuthenticatedClient, ProtocolError> {
        let presented = match (&request.basic, &request.client_secret) {
            (Some(_), Some(_)) => {
                return Err(ProtocolError::new(
                    "invalid_request",
                    "Use one client authentication method, not two",
                ));
            }
            (Some((client_id, secret)), None) => {
                if request.client_id.as_ref().is_some_and(|id| id != client_id) {
                    return Err(ProtocolError::new(
                        "invalid_request",
                        "client_id differs from the authenticated client",
                    ));
                }
                PresentedCredentials::Basic {
                    client_id: client_id.clone(),
                    secret: secret.clone(),
                }
            }
            (None, Some(secret)) => PresentedCredentials::Post {
                client_id: request.client_id.clone().unwrap_or_default(),
                secret: secret.clone(),
            },
            (None, None) => {
                return Err(ProtocolError::new(
                    "invalid_client",
                    "Client authentication is required",
                ));
            }
        };
        self.clients
            .authenticate(&presented)
            .await
            .map_err(|error| match error {
                ClientAuthError::InvalidClient => {
                    ProtocolError::new("invalid_client", "Client authentication failed")
                }
                ClientAuthError::Unavailable(source) => ProtocolError::server(&*source),
            })
    }

    /// `grant_type=authorization_code`: the code, its verifier and the redirect URI it was
    /// issued for, by its client → an access token and an ID token. Any attempt by the client
    /// spends the code; using it again revokes the token it gave.
    pub async fn token(&self, request: TokenRequest) -> Result<TokenResponse, ProtocolError> {
        let client = self.client_of(&request).await?;
        match request.grant_type.as_deref() {
            Some("authorization_code") => {}
            Some("refresh_token") => {
                return self
                    .refresh_grant(&client, request.refresh_token.as_deref())
                    .await;
            }
            Some(super::ciba::CIBA_GRANT) => {
                return self
                    .ciba_grant(&client, request.auth_req_id.as_deref())
                    .await;
            }
            None => {
                return Err(ProtocolError::new(
                    "invalid_request",
                    "grant_type is missing",
                ));
            }
            Some(_) => {
                return Err(ProtocolError::new(
                    "unsupported_grant_type",
                    "Supported: authorization_code, refresh_token, urn:openid:params:grant-type:ciba",
                ));
            }
        }
        let (Some(code), Some(verifier), Some(redirect_uri)) =
            (&request.code, &request.code_verifier, &request.redirect_uri)
        else {
            return Err(ProtocolError::new(
                "invalid_request",
                "code, code_verifier and redirect_uri are required",
            ));
        };
        let application = &client.application;
        let granted = self
            .oauth
            .exchange_with(
                &requester(application),
                code,
                verifier,
                &ExchangeOptions {
                    redirect_uri: Some(redirect_uri.clone()),
                    pairwise_sector: Some(application.merchant_id.as_str().to_owned()),
                },
            )
            .await
            .map_err(|error| match error {
                OAuthError::Unavailable(source) => ProtocolError::server(&*source),
                _ => invalid_grant(),
            })?;
        let nonce = self
            .authorizations
            .find(&granted.session_id)
            .await
            .map_err(|error| ProtocolError::server(&error))?
            .and_then(|authorization| authorization.nonce);
        self.issue(application, granted, nonce).await
    }

    /// The token response for an exchanged code: the access token, an ID token (with `nonce`
    /// when the request had one) and the first refresh token of the code's family.
    pub(crate) async fn issue(
        &self,
        application: &ClientApplication,
        granted: TokenGrant,
        nonce: Option<String>,
    ) -> Result<TokenResponse, ProtocolError> {
        let now = self.clock.now();
        let mut claims = json!({
            "iss": self.settings.issuer,
            "sub": granted.subject,
            "aud": application.id.as_str(),
            "exp": now.plus(self.settings.id_token_ttl).as_secs(),
            "iat": now.as_secs(),
            "auth_time": granted.approved_at.as_secs(),
            "acr": ACR,
            "amr": AMR,
            "at_hash": half_hash(&granted.access_token),
        });
        if let (Some(nonce), Some(object)) = (nonce, claims.as_object_mut()) {
            object.insert("nonce".into(), Value::String(nonce));
        }
        if let Some(object) = claims.as_object_mut() {
            object.extend(standard_claims(&granted.claims));
        }
        let id_token = self
            .id_tokens
            .sign_id_token(&claims)
            .map_err(|error| ProtocolError::server(&error))?;
        let refresh_token = self
            .mint_refresh(
                application,
                &family_of(&granted.session_id),
                &granted.token_id,
            )
            .await?;
        Ok(TokenResponse {
            access_token: granted.access_token,
            expires_in: granted.expires_in,
            id_token: Some(id_token),
            refresh_token: Some(refresh_token),
            scope: granted.scopes.join(" "),
        })
    }

    /// `/oauth2/userinfo` (Core §5.3): `sub` and the claims approved with the access token.
    pub async fn userinfo(&self, access_token: &str) -> Result<UserInfoResponse, ProtocolError> {
        let info = self
            .oauth
            .userinfo(access_token)
            .await
            .map_err(|error| match error {
                OAuthError::Unavailable(source) => ProtocolError::server(&*source),
                _ => ProtocolError::new("invalid_token", "The access token is invalid or expired"),
            })?;
        let mut out = Map::new();
        out.insert("sub".into(), Value::String(info.subject));
        out.extend(standard_claims(&info.claims));
        Ok(out)
    }

    /// RFC 7009: revokes the client's own token; anything else is ignored alike.
    pub async fn revoke(&self, request: TokenRequest) -> Result<(), ProtocolError> {
        let client = self.client_of(&request).await?;
        let Some(token) = &request.token else {
            return Err(ProtocolError::new("invalid_request", "token is missing"));
        };
        if self.revoke_refresh(&client.application, token).await? {
            return Ok(());
        }
        self.oauth
            .revoke(&requester(&client.application), token)
            .await
            .map_err(|error| ProtocolError::server(&error))
    }

    /// RFC 7662: `{active: true, …}` for a live token of the client, `{active: false}` else.
    pub async fn introspect(&self, request: TokenRequest) -> Result<Value, ProtocolError> {
        let client = self.client_of(&request).await?;
        let Some(token) = &request.token else {
            return Err(ProtocolError::new("invalid_request", "token is missing"));
        };
        if let Some(refresh) = self.live_refresh(&client.application, token).await? {
            return Ok(json!({
                "active": true,
                "token_type": "refresh_token",
                "client_id": client.application.id.as_str(),
                "iss": self.settings.issuer,
                "iat": refresh.issued_at.as_secs(),
                "exp": refresh.expires_at.as_secs(),
            }));
        }
        let Some(active) = self
            .oauth
            .introspect(&requester(&client.application), token)
            .await
        else {
            return Ok(json!({"active": false}));
        };
        Ok(json!({
            "active": true,
            "token_type": "Bearer",
            "scope": active.token.scopes.join(" "),
            "client_id": client.application.id.as_str(),
            "sub": active.token.subject,
            "iss": active.issuer,
            "iat": active.token.issued_at.as_secs(),
            "exp": active.token.expires_at.as_secs(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::half_hash;

    #[test]
    fn at_hash_is_the_left_half_of_sha256() {
        // OpenID Connect Core, Appendix A.3: access token "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y".
        assert_eq!(
            half_hash("jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"),
            "77QmUPtjPfzWtF2AnpK9RQ"
        );
    }
}
